"""Comparing results with baselines: every layer metric by metric, and every run-level section.

What is compared: every layer (matched by name) metric by metric, flattened to dotted keys
(``cycles.total``, ``bytes.dram.a_values``, ``utilization``, ``path``, ``binding``, ``padding.k[0]``),
and every run-level section under its own prefix (``totals.cycles.total``, ``hardware.dram.bandwidth_gb_s``,
``workload.layers[g1024].m``, ``by_op_type[gemm/sparse].cycles``, ``footprint.*``, ``warnings[0]``,
``sparsity``, ``policy``). ``meta`` is never compared. Numbers move within tolerance when
``|candidate - baseline| <= max(atol, rtol * |baseline|)``; any other value (string, bool, null, or a
number turning into one of those) that changes is drift regardless of tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelsim.regress.flatten import flatten, layers_by_name, run_level
from accelsim.regress.loading import RegressInputError, check_result, load_result, path_kind, result_files
from accelsim.regress.outcome import (
    ADDED,
    CHANGED,
    DRIFT,
    REMOVED,
    RUN_LEVEL,
    WITHIN,
    Comparison,
    Counts,
    OneSided,
    Row,
)
from accelsim.regress.tolerances import Tolerances, as_tolerances
from accelsim.regress.weights import Weigher, is_number

_MISSING: Any = object()  # a metric absent on one side (None is a value: JSON null)


@dataclass
class _Tally:
    """What a comparison collects before it is frozen into a :class:`Comparison`."""

    rows: list[Row] = field(default_factory=list)
    one_sided: list[OneSided] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("files", "layers", "metrics", "unchanged", "within", "drift", "ignored"), 0))


def _compare_metrics(base: dict[str, Any], cand: dict[str, Any], tol: Tolerances, file: str, layer: str,
                     tally: _Tally, weigher: Weigher, scope: float = 1.0) -> None:
    counts = tally.counts
    keys = list(base)
    keys += [k for k in cand if k not in base]
    for metric in keys:
        t = tol.for_metric(metric)
        if t is None:
            counts["ignored"] += 1
            continue
        counts["metrics"] += 1
        b = base.get(metric, _MISSING)
        c = cand.get(metric, _MISSING)
        if b is _MISSING or c is _MISSING:
            tally.rows.append(Row(file, layer, metric, None if b is _MISSING else b, None if c is _MISSING else c,
                                  ADDED if b is _MISSING else REMOVED))
            counts["drift"] += 1
            continue
        if is_number(b) and is_number(c):
            if b == c or (isinstance(b, float) and isinstance(c, float) and math.isnan(b) and math.isnan(c)):
                counts["unchanged"] += 1
                continue
            diff = abs(c - b)
            rel = math.inf if math.isnan(diff) or b == 0 else diff / abs(b)
            ok = diff <= max(t.atol, t.rtol * abs(b))  # False for NaN / inf differences
            share, weight = weigher.weigh(metric, diff, rel, scope)
            tally.rows.append(Row(file, layer, metric, b, c, WITHIN if ok else DRIFT, diff, rel, t.rtol, t.atol,
                                  share, weight))
            counts["within" if ok else "drift"] += 1
        elif b == c and type(b) is type(c):
            counts["unchanged"] += 1
        else:
            tally.rows.append(Row(file, layer, metric, b, c, CHANGED))
            counts["drift"] += 1


def _compare_results(base: dict[str, Any], cand: dict[str, Any], tol: Tolerances, file: str, tally: _Tally) -> None:
    tally.counts["files"] += 1
    weigher = Weigher(base, cand)
    _compare_metrics(run_level(base), run_level(cand), tol, file, RUN_LEVEL, tally, weigher)
    b_layers = layers_by_name(base)
    c_layers = layers_by_name(cand)
    for name, b_layer in b_layers.items():
        if tol.layer_ignored(name):
            continue
        c_layer = c_layers.get(name)
        if c_layer is None:
            tally.one_sided.append(OneSided("layer", file, name, "baseline"))
            continue
        tally.counts["layers"] += 1
        _compare_metrics(flatten({k: v for k, v in b_layer.items() if k != "name"}),
                         flatten({k: v for k, v in c_layer.items() if k != "name"}), tol, file, name, tally,
                         weigher, weigher.layer_share(b_layer, c_layer))
    for name in c_layers:
        if name not in b_layers and not tol.layer_ignored(name):
            tally.one_sided.append(OneSided("layer", file, name, "candidate"))


def _compare_dirs(bp: Path, cp: Path, tol: Tolerances, tally: _Tally) -> None:
    b_files, c_files = result_files(bp), result_files(cp)
    if not b_files and not c_files:
        raise RegressInputError(f"no result files (*.json) in {bp} or {cp}")
    for rel, path in b_files.items():
        if rel not in c_files:
            load_result(path)  # a broken baseline is an error even when it has no partner
            tally.one_sided.append(OneSided("file", rel, None, "baseline"))
            continue
        _compare_results(load_result(path), load_result(c_files[rel]), tol, rel, tally)
    for rel, path in c_files.items():
        if rel not in b_files:
            load_result(path)
            tally.one_sided.append(OneSided("file", rel, None, "candidate"))


def compare(baseline: str | Path | dict[str, Any], candidate: str | Path | dict[str, Any],
            tolerances: Tolerances | dict[str, Any] | str | Path | None = None) -> Comparison:
    """Compare two results (paths to files, loaded dicts) or two directories of results.

    Directories are matched by relative path of their ``*.json`` files; a file on one side only is
    drift. Rows (the metrics that moved) come worst first (:attr:`Row.rank`): model totals beyond
    tolerance, then other drift by its share of the model's total of the same kind (cycles, DRAM or
    SRAM bytes, MACs, joules; unitless metrics by relative change x the layer's share of time), then
    non-numeric changes and metrics on one side only, then changes within tolerance.
    Raises :class:`ResultFileError` / :class:`SchemaVersionError` / :class:`RegressInputError`.
    """
    tol = as_tolerances(tolerances)
    tally = _Tally()
    b_label = "<baseline>" if isinstance(baseline, dict) else str(baseline)
    c_label = "<candidate>" if isinstance(candidate, dict) else str(candidate)
    single = True
    if isinstance(baseline, dict) or isinstance(candidate, dict):
        b = check_result(baseline, b_label) if isinstance(baseline, dict) else load_result(baseline)
        c = check_result(candidate, c_label) if isinstance(candidate, dict) else load_result(candidate)
        _compare_results(b, c, tol, "", tally)
    else:
        bp, cp = Path(baseline), Path(candidate)
        bk, ck = path_kind(bp, "baseline"), path_kind(cp, "candidate")
        if bk != ck:
            raise RegressInputError(f"baseline {bp} is a {'directory' if bk == 'dir' else 'file'} but candidate "
                                    f"{cp} is a {'directory' if ck == 'dir' else 'file'}; compare a file with a "
                                    "file or a directory with a directory")
        if bk == "file":
            _compare_results(load_result(bp), load_result(cp), tol, "", tally)
        else:
            single = False
            _compare_dirs(bp, cp, tol, tally)
    rows = sorted(tally.rows, key=lambda r: (r.rank, r.file, r.layer != RUN_LEVEL, r.layer, r.metric))
    one_sided = sorted(tally.one_sided, key=lambda o: (o.kind != "file", o.file))  # stable: layers in result order
    return Comparison(b_label, c_label, tuple(rows), tuple(one_sided), Counts(**tally.counts), tol,
                      single_file=single)
