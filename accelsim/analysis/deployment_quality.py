"""The deployment report's quality section: the guardrail on the workload's quality figures and a numeric proxy.

Guardrail: the drop of the workload's quality metric for the run's pattern (``quality:`` block) against
a threshold (an argument, else ``quality.max_drop``): ``ok``, ``breach`` or ``missing``. Published
evidence from the quality registry (:mod:`accelsim.quality`) for the workload's model and the pattern is
looked up every time (:func:`registry_evidence`): without a figure of the workload's own for the pattern,
the guardrail checks the registry's drop (the smallest published one, its entry named); sources whose
drops for that model, task and format differ by more than the threshold are called out.

Numeric proxy: per sparse weight op, ``||(A - prune(A)) B||_F / ||A B||_F`` with A pruned by magnitude to the
op's format (:attr:`~accelsim.formats.base.SparsityFormat.pruning` says how: N:M along k, whole rows for channel,
anywhere for unstructured, ...), at most :data:`PROXY_MAX_ROWS` rows of A (a seeded sample) and
:data:`PROXY_COLS` seeded Gaussian columns of B; A from the user's ``.npz``/``.npy`` or seeded Gaussian
"synthetic weights" (labelled so everywhere).
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.errors import AccelsimError
from accelsim.formats import SparsityFormat, parse_format
from accelsim.quality import QualityEntry, normalize_name
from accelsim.records import Record, freeze
from accelsim.results import RunResult
from accelsim.workloads.model import WEIGHT_OPS, Workload
from accelsim.workloads.quality_evidence import (
    EVIDENCE_POLICY,
    EvidenceConflict,
    QualityEvidence,
    registry_evidence,
    registry_model,
)

__all__ = ["EVIDENCE_POLICY", "PROXY_COLS", "PROXY_MAX_ROWS", "SYNTHETIC_LABEL", "EvidenceConflict", "Guardrail",
           "LoadedWeights", "NumericProxy", "ProxyLayer", "QualityEvidence", "QualityGuard", "QualityReport",
           "WorkloadQuality", "load_weights", "numeric_proxy", "quality_guard", "registry_evidence", "registry_model"]

SYNTHETIC_LABEL = "synthetic weights"
PROXY_MAX_ROWS = 256   # rows of A sampled per layer for the numeric proxy
PROXY_COLS = 64        # random columns of B per layer
PROXY_SEED = 2024      # base seed of the proxy (combined with a CRC of the layer name)

LoadedWeights = tuple[dict[str, np.ndarray], list[str]]  # arrays by layer name, names of unused arrays
MAX_CONFLICTS_NAMED = 3  # conflicting pairs spelled out in the guardrail message (all are in the record)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Guardrail(Record):
    """The headline of the quality check (the top of report.json)."""

    status: str  # "ok", "breach" or "missing"
    message: str
    metric: str | None
    pattern: str | None
    delta: float | None
    drop: float | None
    threshold: float | None
    threshold_source: str | None
    drop_source: str | None  # "workload" (its quality: block), "registry" (a published entry) or None
    evidence: str | None  # the registry entry id the drop comes from (or the best published one shown alongside)
    conflicts: int  # pairs of sources that disagree by more than the threshold


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadQuality(Record):
    """The workload's own ``quality:`` figures as it declares them, in its own metric, from its own source."""

    metric: str
    higher_is_better: bool
    dense: float | None
    patterns: Mapping[str, float]
    kind: str  # its typed figures' label (illustrative / user); registry figures carry their own (entries)
    entries: tuple[str, ...]  # registry ids, when the section points at entries
    source: str | None
    max_drop: float | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityGuard(Record):
    """The quality figures for the run's pattern against the threshold. ``metric``, ``dense``, ``value``,
    ``patterns`` and ``source`` are the figures the drop is in (``drop_source``: the workload's, or the registry's
    published entry); ``workload``: the workload's own section, never relabelled with the registry's metric."""

    pattern: str | None
    metric: str | None
    higher_is_better: bool | None
    dense: float | None
    value: float | None
    delta: float | None
    drop: float | None
    threshold: float | None
    threshold_source: str | None
    source: str | None
    patterns: Mapping[str, float]
    missing: tuple[str, ...]
    status: str
    message: str
    drop_source: str | None
    evidence: QualityEvidence
    workload: WorkloadQuality | None = None

    def guardrail(self) -> Guardrail:
        return Guardrail(status=self.status, message=self.message, metric=self.metric, pattern=self.pattern,
                         delta=self.delta, drop=self.drop, threshold=self.threshold,
                         threshold_source=self.threshold_source, drop_source=self.drop_source,
                         evidence=self.evidence.chosen, conflicts=len(self.evidence.conflicts))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProxyLayer(Record):
    name: str
    op: str
    pattern: str
    weight_shape: tuple[int, int]
    rows_sampled: int
    b_columns: int
    relative_error: float
    kept_energy: float
    weights: str  # "user weights" or SYNTHETIC_LABEL
    macs: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class NumericProxy(Record):
    label: str | None
    weights_source: str | None
    layers: tuple[ProxyLayer, ...]
    user_layers: int
    synthetic_layers: int
    unused_arrays: tuple[str, ...]
    mac_weighted_error: float | None
    max_error: float | None
    max_error_layer: str | None
    method: str
    caveat: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityReport(QualityGuard):
    """The report's quality section: the guard and the numeric proxy."""

    proxy: NumericProxy


# ---------------------------------------------------------------------------------------------- guardrail

def _num(v: float) -> str:
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.1f}"


def _conflict_text(ev: QualityEvidence) -> str:
    if not ev.conflicts:
        return ""
    named = "; ".join(c.message for c in ev.conflicts[:MAX_CONFLICTS_NAMED])
    more = len(ev.conflicts) - MAX_CONFLICTS_NAMED
    return (f"; CONTRADICTORY EVIDENCE: {named}" + (f"; and {more} more pair{'s' if more > 1 else ''}" if more > 0
                                                    else ""))


def quality_guard(model: Workload, pattern: str | None, threshold: float | None,
                  entries: Iterable[QualityEntry] | None = None) -> QualityGuard:
    """Check the workload's quality figure for ``pattern`` against ``threshold`` (else ``quality.max_drop``); without
    a figure of its own, the quality registry's published drop for the workload's model (``entries``: the
    registry to use, the shipped one when None)."""
    q = model.quality
    value = delta = drop = dense = None
    metric: str | None = q.metric if q else None
    higher: bool | None = q.higher_is_better if q else None
    source: str | None = q.source if q else None
    drop_source: str | None = None
    thr: float | None = None
    thr_source: str | None = None
    missing: list[str] = []
    if threshold is not None:
        thr, thr_source = float(threshold), "argument"
    elif q is not None and q.max_drop is not None:
        thr, thr_source = float(q.max_drop), "workload quality.max_drop"
    ev = registry_evidence(model, pattern, thr, entries)
    patterns: dict[str, float] = dict(q.patterns) if q else {}
    own = q is not None and pattern is not None and q.delta(pattern) is not None
    if own:
        assert q is not None and pattern is not None
        delta = q.delta(pattern)
        assert delta is not None
        value, drop, dense, drop_source = q.patterns[pattern], -delta, q.dense, "workload"
    elif ev.chosen is not None:
        assert ev.sparse is not None and ev.dense is not None and ev.drop is not None
        value, dense, drop, delta, drop_source = ev.sparse, ev.dense, ev.drop, -ev.drop, "registry"
        metric, higher, source = f"{ev.task} {ev.metric}", ev.higher_is_better, f"{ev.source} [{ev.chosen}]"
        patterns = {str(pattern): ev.sparse}  # the registry's figure, in its metric: not the workload's figures
    elif q is None:
        missing.append(f"the workload has no quality: block, and the quality registry gives no single figure: "
                       f"{ev.message}")
    else:
        asked = pattern or "a plan that mixes patterns"  # a figure at one pattern is not a mixed plan's
        missing.append(f"no quality figure for {asked} (the workload lists: {', '.join(q.patterns) or 'none'}; "
                       f"registry: {ev.message})")
    # a published drop in another metric than the workload's own: its max_drop is in the workload's metric
    other_metric = drop_source == "registry" and q is not None and normalize_name(q.metric) != normalize_name(
        str(metric))
    if thr is None:
        missing.append("no threshold (quality.max_drop in the workload, or --quality-threshold)")
    elif other_metric and thr_source != "argument":
        assert q is not None
        missing.append(f"threshold in {q.metric} (quality.max_drop), evidence in {metric}: cannot compare (give "
                       f"--quality-threshold in {metric}, or figures of the workload's own for {pattern})")
        ev = dataclasses.replace(ev, conflicts=())  # their drops are not compared against a threshold in q.metric
        thr_source = f"{thr_source}, in {q.metric}"
    if missing:
        status = "missing"
    else:
        assert drop is not None and thr is not None
        status = "breach" if drop > thr else "ok"
    if drop is not None:
        assert value is not None and dense is not None and delta is not None
        origin = "the workload's figure" if drop_source == "workload" else f"published [{ev.chosen}]"
        head = f"{metric}: {pattern} {_num(value)} vs dense {_num(dense)}, a drop of {drop:.4g} ({origin})"
    else:
        head = ""
    if status == "missing":
        message = (f"{head}; cannot check: " if head else "cannot check quality: ") + "; ".join(missing)
    else:
        assert thr is not None
        verb = "exceeds" if status == "breach" else "within"
        message = f"{head}, {verb} the threshold {thr:.4g} (from {thr_source})"
    if drop_source == "workload":
        message += f"; registry: {ev.message}"
    elif other_metric and status != "missing":
        assert q is not None and thr is not None
        message += (f"; note: the threshold {thr:.4g} is the one given (--quality-threshold), read in the published "
                    f"metric ({metric}); the workload's own figures are in {q.metric}")
    message += _conflict_text(ev)
    mine = None if q is None else WorkloadQuality(
        metric=q.metric, higher_is_better=q.higher_is_better, dense=q.dense, patterns=freeze(dict(q.patterns)),
        kind=q.kind, entries=tuple(q.entries), source=q.source or None, max_drop=q.max_drop)
    return QualityGuard(pattern=pattern, metric=metric, higher_is_better=higher, dense=dense, value=value, delta=delta,
                        drop=drop, threshold=thr, threshold_source=thr_source, source=source,
                        patterns=freeze(patterns), missing=tuple(missing), status=status,
                        message=message, drop_source=drop_source, evidence=ev, workload=mine)


# ---------------------------------------------------------------------------------------------- numeric proxy

def _expected_weight_shape(layer: Any) -> tuple[int, int]:
    """Rows x columns of the weight as the proxy expects it: (m, k) per group, groups stacked along rows."""
    m, _, k = layer.gemm_shape()
    return m * getattr(layer, "groups", 1), k


def load_weights(weights: str | os.PathLike[str], model: Workload) -> LoadedWeights:
    """Arrays by layer name from a .npz (names = layer names) or a .npy (single weight layer); shapes checked."""
    path = Path(weights)
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise AccelsimError(f"weights {path}: file not found") from None
    except (OSError, ValueError) as exc:
        raise AccelsimError(f"weights {path}: cannot read ({exc}); expected a .npz (arrays named by layer) "
                            "or a .npy (single-layer workload)") from None
    weight_layers = [layer for layer in model.layers if layer.op in WEIGHT_OPS]
    if isinstance(loaded, np.ndarray):
        if len(weight_layers) != 1:
            raise AccelsimError(f"weights {path}: a .npy holds one array but workload '{model.name}' has "
                                f"{len(weight_layers)} weight layers; use a .npz with one array per layer name")
        arrays = {weight_layers[0].name: loaded}
    else:
        try:
            with loaded:
                arrays = {name: loaded[name] for name in loaded.files}
        except (OSError, ValueError) as exc:
            raise AccelsimError(f"weights {path}: cannot read an array ({exc})") from None
    by_name = {layer.name: layer for layer in weight_layers}
    unused = sorted(name for name in arrays if name not in by_name)
    if not set(arrays) & set(by_name):
        raise AccelsimError(f"weights {path}: no array is named after a weight layer of '{model.name}' "
                            f"(arrays: {', '.join(sorted(arrays)[:5])}{' ...' if len(arrays) > 5 else ''}; "
                            f"layers: {', '.join(list(by_name)[:5])}{' ...' if len(by_name) > 5 else ''})")
    out = {}
    for name, arr in arrays.items():
        layer = by_name.get(name)
        if layer is None:
            continue
        rows, cols = _expected_weight_shape(layer)
        a = np.asarray(arr)
        if a.ndim == 4 and a.shape[0] == rows and int(np.prod(a.shape[1:])) == cols:
            a = a.reshape(rows, cols)  # (filters, channels/groups, kh, kw) convolution weights
        if a.shape != (rows, cols):
            groups = getattr(layer, "groups", 1)
            per_group = f" (per group: {rows // groups} x {cols}, {groups} groups stacked along rows)" \
                if groups > 1 else ""
            raise AccelsimError(f"weights {path}: layer '{name}': array shape {tuple(a.shape)} does not match the "
                                f"layer's weight m x k = {rows} x {cols}{per_group}")
        if not np.issubdtype(a.dtype, np.number):
            raise AccelsimError(f"weights {path}: layer '{name}': array dtype {a.dtype} is not numeric")
        bad = ~np.isfinite(a)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AccelsimError(f"weights {path}: layer '{name}': {int(bad.sum()):,} NaN or Inf values (first at "
                                f"index {idx}: {a[idx]}); the pruning proxy needs finite weights")
        out[name] = a
    return out, unused


def _proxy_error(a: np.ndarray, b: np.ndarray, fmt: SparsityFormat) -> tuple[float, float]:
    """Relative output error of magnitude pruning of ``a`` to ``fmt`` against ``b``, and the kept weight energy."""
    pruned, _ = fmt.prune(a)
    denom = float(np.linalg.norm(a @ b))
    err = float(np.linalg.norm((a - pruned) @ b)) / denom if denom > 0 else 0.0
    total = float(np.sum(a * a))
    kept = float(np.sum(pruned * pruned)) / total if total > 0 else 1.0
    return round(err, 9), round(kept, 9)


def _pruning_rules(rows: Iterable[ProxyLayer]) -> list[str]:
    """Each distinct format pruned, once, in the order first met, with what its pruning keeps."""
    formats = dict.fromkeys(r.pattern for r in rows)
    return [fmt.pruning for name in formats if (fmt := parse_format(name)) is not None] or ["no op runs sparse"]


def numeric_proxy(model: Workload, real: RunResult, weights: str | os.PathLike[str] | None,
                  loaded: LoadedWeights | None = None) -> NumericProxy:
    """The pruning-error proxy of every weight op of ``real`` that runs sparse (``loaded``: weights read already)."""
    layers = {layer.name: layer for layer in model.layers}
    eligible = [r for r in real.layers if r.path == "sparse" and layers[r.name].op in WEIGHT_OPS]
    user: dict[str, np.ndarray] = {}
    unused: list[str] = []
    if loaded is not None:
        user, unused = loaded
    elif weights is not None:
        user, unused = load_weights(weights, model)
    rows_out = []
    synthetic_cache: dict[tuple[int, int, SparsityFormat], tuple[float, float]] = {}
    for r in eligible:
        layer = layers[r.name]
        pat = parse_format(r.pattern_requested)
        assert pat is not None  # the op runs sparse
        rows, cols = _expected_weight_shape(layer)
        take = min(rows, PROXY_MAX_ROWS)
        if r.name in user:
            rng = np.random.default_rng([PROXY_SEED, zlib.crc32(r.name.encode())])
            idx = np.sort(rng.choice(rows, size=take, replace=False)) if rows > take else np.arange(rows)
            a = np.asarray(user[r.name][idx], dtype=np.float64)
            err, kept = _proxy_error(a, rng.standard_normal((cols, PROXY_COLS)), pat)
            label = "user weights"
        else:  # seeded by shape and pattern: same-shape ops share one draw (synthetic weights carry no identity)
            key = (take, cols, pat)
            if key not in synthetic_cache:
                rng = np.random.default_rng([PROXY_SEED, take, cols, pat.keep, pat.group])
                a = rng.standard_normal((take, cols))
                synthetic_cache[key] = _proxy_error(a, rng.standard_normal((cols, PROXY_COLS)), pat)
            err, kept = synthetic_cache[key]
            label = SYNTHETIC_LABEL
        rows_out.append(ProxyLayer(name=r.name, op=r.op, pattern=str(pat), weight_shape=(rows, cols),
                                   rows_sampled=take, b_columns=PROXY_COLS, relative_error=err, kept_energy=kept,
                                   weights=label, macs=r.macs))
    macs = sum(x.macs for x in rows_out)
    n_user = sum(1 for x in rows_out if x.weights == "user weights")
    n_syn = len(rows_out) - n_user
    label = ("user weights" if n_syn == 0 else SYNTHETIC_LABEL if n_user == 0
             else f"user weights ({n_user} layers) and {SYNTHETIC_LABEL} ({n_syn} layers)")
    worst = max(rows_out, key=lambda x: x.relative_error) if rows_out else None  # first in model order
    return NumericProxy(
        label=label if rows_out else None, weights_source=str(weights) if weights else None,
        layers=tuple(rows_out), user_layers=n_user, synthetic_layers=n_syn, unused_arrays=tuple(unused),
        mac_weighted_error=sum(x.relative_error * x.macs for x in rows_out) / macs if macs else None,
        max_error=worst.relative_error if worst else None, max_error_layer=worst.name if worst else None,
        method=(f"relative output error ||(A - prune(A)) B||_F / ||A B||_F of magnitude pruning of A to the format "
                f"each op runs ({'; '.join(_pruning_rules(rows_out))}), per op that runs sparse; at most "
                f"{PROXY_MAX_ROWS} rows of A (seeded sample) and {PROXY_COLS} seeded "
                "Gaussian columns of B; grouped convs: the groups' filters stacked as rows; synthetic weights are "
                "seeded by shape and pattern, so same-shape ops share one draw"),
        caveat="a per-layer numeric proxy, not a task metric: it ignores fine-tuning, which usually recovers "
               "most of the loss, and error propagation through the network",
    )
