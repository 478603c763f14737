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
from accelsim.quality import QualityEntry, find_entries, load_registry, normalize_name
from accelsim.records import Record, freeze
from accelsim.results import RunResult
from accelsim.workloads.model import WEIGHT_OPS, Workload

__all__ = ["EVIDENCE_POLICY", "PROXY_COLS", "PROXY_MAX_ROWS", "SYNTHETIC_LABEL", "EvidenceConflict", "Guardrail",
           "LoadedWeights", "NumericProxy", "ProxyLayer", "QualityEvidence", "QualityGuard", "QualityReport",
           "load_weights", "numeric_proxy", "quality_guard", "registry_evidence", "registry_model"]

SYNTHETIC_LABEL = "synthetic weights"
PROXY_MAX_ROWS = 256   # rows of A sampled per layer for the numeric proxy
PROXY_COLS = 64        # random columns of B per layer
PROXY_SEED = 2024      # base seed of the proxy (combined with a CRC of the layer name)

LoadedWeights = tuple[dict[str, np.ndarray], list[str]]  # arrays by layer name, names of unused arrays
# which registry entry's drop the guardrail checks when several match: the smallest (the best published
# result for the model and format: what the format is shown to cost when pruned well); the others are listed
EVIDENCE_POLICY = "smallest published drop (a derived one only when none is published)"
MAX_CONFLICTS_NAMED = 3  # conflicting pairs spelled out in the guardrail message (all are in the record)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvidenceConflict(Record):
    """Two registry entries from different sources whose drops differ by more than the threshold."""

    first: str  # entry ids
    second: str
    first_drop: float
    second_drop: float
    difference: float
    same_method: bool  # True: the sources contradict each other; False: they disagree with different methods
    message: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityEvidence(Record):
    """What the quality registry publishes for the workload's model at the run's pattern."""

    model: str | None  # the registry's model name that matched, or None
    matched_by: str | None  # how: "quality.model", "workload name", "workload name without '-decode'"
    pattern: str | None
    task: str | None  # the task (and metric below) the drops are in
    metric: str | None
    higher_is_better: bool | None
    entries: tuple[str, ...]  # ids of every matching entry, smallest drop first
    drops: tuple[float, ...]  # their drops, same order
    finetuned: tuple[bool, ...]  # whether each was fine-tuned after pruning (False: one-shot), same order
    chosen: str | None  # the entry whose drop the guardrail uses (EVIDENCE_POLICY)
    dense: float | None
    sparse: float | None
    drop: float | None
    source: str | None
    kind: str | None  # "published" or "derived"
    policy: str
    conflicts: tuple[EvidenceConflict, ...]
    message: str


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
class QualityGuard(Record):
    """The workload's quality figures for the run's pattern against the threshold."""

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


def registry_model(model: Workload, entries: Iterable[QualityEntry] | None = None) -> tuple[str | None, str | None]:
    """The registry model the workload is: ``quality.model`` when the workload names one, else its name, else its
    name with trailing ``-word`` parts dropped one at a time (``llama2-7b-decode`` -> ``llama2-7b``), matched
    after :func:`~accelsim.quality.normalize_name`. (registry model name, how it matched) or (None, None)."""
    pool = tuple(load_registry() if entries is None else entries)
    names = {normalize_name(e.model): e.model for e in pool}
    named = getattr(model.quality, "model", None) if model.quality is not None else None
    candidates: list[tuple[str, str]] = []
    if named:
        candidates.append((str(named), "quality.model"))
    parts = model.name.split("-")
    candidates.append((model.name, "workload name"))
    for cut in range(len(parts) - 1, 0, -1):
        candidates.append(("-".join(parts[:cut]), f"workload name without '-{'-'.join(parts[cut:])}'"))
    for text, how in candidates:
        hit = names.get(normalize_name(text))
        if hit is not None:
            return hit, how
        if how == "quality.model":  # a model the workload names is not guessed around
            return None, None
    return None, None


def _conflicts(matches: list[QualityEntry], threshold: float | None) -> tuple[EvidenceConflict, ...]:
    if threshold is None:
        return ()
    out = []
    for i, a in enumerate(matches):
        for b in matches[i + 1:]:
            diff = abs(a.drop - b.drop)
            if a.source_key == b.source_key or diff <= threshold:
                continue
            same = normalize_name(a.method) == normalize_name(b.method) and a.finetuned == b.finetuned
            how = "contradict each other (same method)" if same else f"disagree ({a.method} vs {b.method})"
            out.append(EvidenceConflict(
                first=a.id, second=b.id, first_drop=a.drop, second_drop=b.drop, difference=round(diff, 9),
                same_method=same, message=f"{a.source_key} and {b.source_key} {how}: drops {a.drop:.4g} vs "
                                          f"{b.drop:.4g}, {diff:.4g} apart (threshold {threshold:.4g})"))
    return tuple(sorted(out, key=lambda c: (-c.difference, c.first, c.second)))


def registry_evidence(model: Workload, pattern: str | None, threshold: float | None,
                      entries: Iterable[QualityEntry] | None = None) -> QualityEvidence:
    """What the registry publishes for ``model`` at ``pattern``: the matching entries of one task (the workload's
    ``quality.task`` when it names one, else the only task there is), the smallest drop and conflicts between
    sources (drops further apart than ``threshold``)."""
    pool = tuple(load_registry() if entries is None else entries)
    name, how = registry_model(model, pool)
    empty: dict[str, Any] = dict(model=name, matched_by=how, pattern=pattern, task=None, metric=None,
                                 higher_is_better=None, entries=(), drops=(), finetuned=(), chosen=None, dense=None,
                                 sparse=None, drop=None, source=None, kind=None, policy=EVIDENCE_POLICY, conflicts=())
    if name is None:
        return QualityEvidence(**empty, message=f"no model in the quality registry matches workload '{model.name}'"
                                                "; name one with quality.model")
    if pattern is None:
        return QualityEvidence(**empty, message="the run mixes patterns: no single format to look up")
    matches = list(find_entries(model=name, format=pattern, entries=pool))
    task = getattr(model.quality, "task", None) if model.quality is not None else None
    if task:
        matches = [e for e in matches if normalize_name(e.task) == normalize_name(str(task))]
    if not matches:
        where = f" for task {task}" if task else ""
        formats = sorted({e.format for e in find_entries(model=name, entries=pool)})
        return QualityEvidence(**empty, message=f"none published for {name} at {pattern}{where} (the registry has "
                                                f"{name} at: {', '.join(formats) or 'nothing'})")
    tasks = sorted({(e.task, e.metric) for e in matches})
    if len(tasks) > 1:
        listed = "; ".join(f"{t} {m}" for t, m in tasks)
        return QualityEvidence(**{**empty, "entries": tuple(e.id for e in matches),
                                  "drops": tuple(e.drop for e in matches),
                                  "finetuned": tuple(e.finetuned for e in matches)},
                               message=f"{len(matches)} published entries for {name} at {pattern} over "
                                       f"{len(tasks)} tasks ({listed}); name one with quality.task")
    matches.sort(key=lambda e: (e.drop, e.id))
    best = min(matches, key=lambda e: (e.kind != "published", e.drop, e.id))
    conflicts = _conflicts(matches, threshold)
    spread = (f"; {len(matches)} entries, drops {matches[0].drop:.4g} to {matches[-1].drop:.4g}"
              if len(matches) > 1 else "")
    message = (f"published: {best.task} {best.metric} dense {best.dense:g}, {pattern} {best.sparse:g} "
               f"({best.method}{', fine-tuned' if best.finetuned else ', one-shot'}), a drop of {best.drop:.4g} "
               f"[{best.id}]{spread}")
    return QualityEvidence(model=name, matched_by=how, pattern=pattern, task=best.task, metric=best.metric,
                           higher_is_better=best.higher_is_better, entries=tuple(e.id for e in matches),
                           drops=tuple(e.drop for e in matches), finetuned=tuple(e.finetuned for e in matches),
                           chosen=best.id, dense=best.dense,
                           sparse=best.sparse, drop=best.drop, source=best.source, kind=best.kind,
                           policy=EVIDENCE_POLICY, conflicts=conflicts, message=message)


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
    elif q is None:
        missing.append(f"the workload has no quality: block, and the quality registry gives no single figure: "
                       f"{ev.message}")
    else:
        asked = pattern or "a plan that mixes patterns"  # a figure at one pattern is not a mixed plan's
        missing.append(f"no quality figure for {asked} (the workload lists: {', '.join(q.patterns) or 'none'}; "
                       f"registry: {ev.message})")
    if thr is None:
        missing.append("no threshold (quality.max_drop in the workload, or --quality-threshold)")
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
    elif drop_source == "registry" and q is not None and normalize_name(q.metric) != normalize_name(str(metric)):
        message += (f"; note: the threshold is the workload's, in its metric ({q.metric}), the published drop is in "
                    f"{metric}")
    message += _conflict_text(ev)
    return QualityGuard(pattern=pattern, metric=metric, higher_is_better=higher, dense=dense, value=value, delta=delta,
                        drop=drop, threshold=thr, threshold_source=thr_source, source=source,
                        patterns=freeze(dict(q.patterns) if q else {}), missing=tuple(missing), status=status,
                        message=message, drop_source=drop_source, evidence=ev)


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
