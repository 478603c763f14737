"""Validation against measured GPUs: predicted vs measured 2:4 speedups, per row and per regime.

Library code: nothing here prints or writes. Measurements come from :mod:`accelsim.analysis.measurements`.
Each row is simulated as a one-GEMM workload, dense and 2:4, on the hardware its GPU name maps
to (:func:`~accelsim.analysis.measurements.match_row`); the predicted speedup is the dense total over the
sparse total. Metrics per GPU / dtype / regime: MAE and MAPE of the speedup, the share of rows on the
right side of 1.0x, and Spearman's rank correlation. Rows whose measured speedup exceeds the 2:4 bound
(2.0x: the dense baseline ran below its own peak) are reported but never scored. The result is a frozen
:class:`~accelsim.analysis.validation_results.ValidationResult`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from accelsim.analysis.measurements import (
    KNOWN_REGIMES,
    MAIN_REGIMES,
    SPARSE_BOUND,
    Measurement,
    match_row,
    source_label,
)
from accelsim.analysis.validation_results import (
    GroupResult,
    HardwareRef,
    Measured,
    Metrics,
    Prediction,
    RowResult,
    Unscored,
    ValidationResult,
)
from accelsim.errors import AccelsimError
from accelsim.formats import parse_format
from accelsim.hardware.model import Hardware, LaunchOverhead, with_host_floor  # noqa: F401 (re-exported)
from accelsim.lowering import Kernel, lower
from accelsim.simulation import Simulator
from accelsim.workloads.model import Workload, workload_from_dict
from accelsim.workloads.quantize import OUT_BYTES

__all__ = ["metrics", "predict_row", "row_kernels", "spearman", "validate_hw"]


# ---------------------------------------------------------------------------------------- statistics

def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties get the average of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    ranks[order] = np.arange(1, len(x) + 1, dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    result: np.ndarray = sums[inverse] / counts[inverse]
    return result


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float | None:
    """Spearman's rank correlation (Pearson of average ranks); None for < 3 points or a constant side."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if len(x) < 3 or len(x) != len(y):
        return None
    rx, ry = _ranks(x), _ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    den = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    if den == 0.0:
        return None
    return float((rx * ry).sum() / den)


# A measured time this many times the modelled kernel's is not a kernel cost: the row's measurement
# holds work outside the one GEMM kernel accelsim times (framework padding and copies, per-call plans,
# backward GEMMs). Such rows are not rescored; a note names them and the factor.
OUTSIDE_KERNEL_FACTOR = 3.0

# The baseline a model must beat: a rule of thumb by GEMM size alone (2*m*n*k FLOPs), no hardware.
RULE_OF_THUMB = ((1e9, 0.8), (1e11, 1.2), (math.inf, 1.55))  # (FLOPs below, predicted 2:4 speedup)


def rule_of_thumb(m: int, n: int, k: int) -> float:
    """The FLOPs rule of thumb: 0.8x below 1 GFLOP, 1.2x below 100 GFLOP, else 1.55x."""
    flops = 2.0 * m * n * k
    return next(speedup for below, speedup in RULE_OF_THUMB if flops < below)


def metrics(predicted: Sequence[float], measured: Sequence[float],
            dense_err: Sequence[float | None] | None = None,
            sparse_err: Sequence[float | None] | None = None,
            rule: Sequence[float] | None = None) -> Metrics:
    """Speedup error metrics over paired rows (and, if given, mean |time error| in % per path and the
    rule of thumb's MAE and right-side share on the same rows)."""
    p = np.asarray(predicted, dtype=float)
    y = np.asarray(measured, dtype=float)
    n = len(p)
    if n == 0:
        return Metrics(n=0)
    err = p - y
    times = []
    for vals in (dense_err, sparse_err):
        v = [abs(x) for x in (vals or []) if x is not None]
        times.append(float(np.mean(v)) if v else None)
    r = np.asarray(rule, dtype=float) if rule is not None and len(rule) == n else None
    return Metrics(n=n, mae=float(np.abs(err).mean()), mape=float((np.abs(err) / y).mean() * 100.0),
                   median_ape=float(np.median(np.abs(err) / y) * 100.0),
                   right_side=float(((p > 1.0) == (y > 1.0)).mean()),
                   right_side_rows=int(((p > 1.0) == (y > 1.0)).sum()), spearman=spearman(p, y),
                   bias=float(err.mean()), max_abs=float(np.abs(err).max()), dense_time_mape=times[0],
                   sparse_time_mape=times[1], rule_mae=None if r is None else float(np.abs(r - y).mean()),
                   rule_right_side=None if r is None else float(((r > 1.0) == (y > 1.0)).mean()))


# ---------------------------------------------------------------------------------------- simulation

@lru_cache(maxsize=4096)
def _gemm(row: Measurement) -> Workload:
    """The row's one-GEMM workload (built once per row: the calibration lowers it at every grid efficiency)."""
    return workload_from_dict({"name": f"line{row.line}", "dtype": row.dtype,
                               "layers": [{"name": "gemm", "op": "gemm", "m": row.m, "n": row.n, "k": row.k}]})


def row_kernels(row: Measurement, hw: Hardware, sparsity: str = "2:4") -> tuple[Kernel, Kernel]:
    """The row's dense and sparse GEMM kernels on ``hw``, each writing C as its harness did (``row.c_dtypes``;
    the input dtype where not known)."""
    model = _gemm(row)
    dense, sparse = lower(model, hw, "dense")[0], lower(model, hw, sparsity)[0]
    if row.c_dtypes is not None:
        dense = replace(dense, c_bytes=OUT_BYTES[row.c_dtypes[0]])
        sparse = replace(sparse, c_bytes=OUT_BYTES[row.c_dtypes[1] if sparse.sparse else row.c_dtypes[0]])
    return dense, sparse


def predict_row(row: Measurement, hw: Hardware, simulator: Simulator | None = None,
                sparsity: str = "2:4", sparse_simulator: Simulator | None = None) -> Prediction:
    """Simulate one measured shape dense and sparse on ``hw`` (each at its power-limited clock); predicted times,
    speedup and the why. ``sparse_simulator`` runs the sparse kernel where it differs (``row_hardware``)."""
    sim = simulator or Simulator(hw)
    sparse_sim = sparse_simulator or sim
    kd, ks = row_kernels(row, sim.hw, sparsity)
    if sparse_sim is not sim:
        ks = row_kernels(row, sparse_sim.hw, sparsity)[1]
    if not ks.sparse:  # a dense fallback (e.g. a type sm80 mma.sp lacks) runs on the part's own dense kernels
        sparse_sim = sim
    dense, sparse = sim.settled(kd), sparse_sim.settled(ks)
    cyc_d, cyc_s = dense.cycles["total"], sparse.cycles["total"]
    to_us = 1.0 / (hw.clock_ghz * 1e3)
    return Prediction(
        speedup=cyc_d / cyc_s if cyc_s else 1.0, dense_us=cyc_d * to_us, sparse_us=cyc_s * to_us,
        dense_cycles=int(cyc_d), sparse_cycles=int(cyc_s), path=ks.path, reason=ks.reason,
        padding=dict(sparse.padding), dense_binding=dense.binding, sparse_binding=sparse.binding,
        dense_tile=dense.tiling.get("cta_tile"), sparse_tile=sparse.tiling.get("cta_tile"),
        dense_split_k=dense.tiling.get("split_k"), sparse_split_k=sparse.tiling.get("split_k"),
        dense_launch_cycles=int(dense.cycles["launch"]), sparse_launch_cycles=int(sparse.cycles["launch"]),
        host_bound=tuple(k for k, r in (("dense", dense), ("sparse", sparse)) if r.tiling.get("host_wait_cycles")))


def row_sparsity(row: Measurement, sparsity: str = "2:4") -> str:
    """What a row runs: its own ``format`` (``dense`` for a dense one) where it names one, else ``sparsity``."""
    if row.format is None:
        return sparsity
    fmt = parse_format(row.format)
    return "dense" if fmt is None else str(fmt)


def _time_err(pred: float, meas: float | None) -> float | None:
    return None if meas is None else (pred - meas) / meas * 100.0


def _score(row: Measurement, key: str | None, hw_map: Mapping[str, Hardware], sims: Mapping[str, Simulator],
           sparsity: str, bound: float, main_regimes: Sequence[str]) -> RowResult:
    """One row matched, simulated and scored (or why not)."""
    base: dict[str, Any] = {
        "line": row.line, "gpu": row.gpu, "hw_key": key, "hw": hw_map[key].name if key else None,
        "dtype": row.dtype, "m": row.m, "n": row.n, "k": row.k, "regime": row.regime,
        "main": row.regime in main_regimes, "backend": row.backend, "source": row.source,
        "source_label": source_label(row.source),
        "measured": Measured(row.speedup, row.dense_us, row.sparse_us), "format": row.format, "timing": row.timing,
        "kernels": row.kernels, "c_dtype": "/".join(row.c_dtypes) if row.c_dtypes else "",
        "sparse_isa": row.sparse_isa}
    if key is None:
        return RowResult(**base, status="unmapped", message=f"no --hw-map entry matches GPU {row.gpu!r}")
    if row.format is not None:  # the row's own format: its ideal speedup is the bound
        try:
            fmt = parse_format(row.format)
        except ValueError as exc:
            return RowResult(**base, status="unknown_format",
                             message=f"format {row.format!r} cannot run here: {exc}")
        sparsity = row_sparsity(row, sparsity)
        bound = bound if fmt is None or fmt.dense_speedup <= 2.0 else fmt.dense_speedup
    sim = sims[_variant_key(key, row)]  # kernel-loop: no host launch cost; searched: the searched 2:4 tiles
    sparse_sim = sims[_variant_key(key, row, "sparse", sparsity)]  # ... and sm80 2:4 kernels (sparse_isa)
    try:
        pred = predict_row(row, sim.hw, sim, sparsity, sparse_sim)
    except AccelsimError as exc:  # e.g. a dtype the config has no rate for
        return RowResult(**base, status="infeasible", message=str(exc))
    err = pred.speedup - row.speedup
    base.update(predicted=pred, error=err, abs_error=abs(err), ape=abs(err) / row.speedup * 100.0,
                right_side=(pred.speedup > 1.0) == (row.speedup > 1.0),
                dense_time_err_pct=_time_err(pred.dense_us, row.dense_us),
                sparse_time_err_pct=_time_err(pred.sparse_us, row.sparse_us))
    if row.speedup > bound:
        return RowResult(**base, status="above_bound",
                         message=f"measured {row.speedup:.3f}x exceeds the {row.format or sparsity} bound {bound:g}x: "
                                 f"the dense baseline ran below its own peak; reported, not scored")
    return RowResult(**base, scored=True)


def _variant_key(key: str, row: Measurement, path: str = "dense", sparsity: str = "2:4") -> str:
    """The simulator a row's ``path`` kernel runs on: its hw-map key, how its harness timed and chose kernels,
    and whether it runs sm80 2:4 kernels."""
    return f"{key}\x00{row.timing}\x00{row.kernels}\x00{'sm80' if runs_sm80(row, path, sparsity) else ''}"


def row_hardware(hw: Hardware, row: Measurement, path: str = "dense", sparsity: str = "2:4") -> Hardware:
    """``hw`` as the row's harness ran its ``path`` ('dense' | 'sparse') kernel: without the host launch cost for
    kernel-loop timings, with the sm80 2:4 kernels (``core.compute.sm80_sparse``) for a 2:4 kernel compiled for
    sm80, and with the searched 2:4 tiles for a harness that searched the library's algorithms."""
    if row.timing == "kernel-loop":  # the host / framework share of the fixed cost hides behind the loop
        hw = kernel_loop_hardware(hw)
    if runs_sm80(row, path, sparsity):
        hw = sm80_sparse_hardware(hw)
    if row.kernels == "searched":
        hw = searched_kernels_hardware(hw)
    return hw


def runs_sm80(row: Measurement, path: str, sparsity: str = "2:4") -> bool:
    """Whether the row's ``path`` kernel is a 2:4 kernel compiled for sm80 (``sparse_isa``)."""
    return path == "sparse" and row.sparse_isa == "sm80" and row_sparsity(row, sparsity) == "2:4"


def sm80_sparse_hardware(hw: Hardware) -> Hardware:
    """``hw`` running sm80 (Ampere mma.sp) 2:4 binaries: its ``core.compute.sm80_sparse`` where set (a part whose
    own 2:4 instruction is another, e.g. Hopper's wgmma.sp), else ``hw`` (the sm80 instruction is its own).
    For the 2:4 kernel only: the sm80 operand feed replaces the part's."""
    comp = hw.core.compute
    sm80 = getattr(comp, "sm80_sparse", None)
    if sm80 is None:
        return hw
    core = {"compute": comp.with_sm80_sparse()}  # type: ignore[union-attr]
    if hw.core.sparse is not None:  # the types mma.sp runs (no fp8 before Hopper): others fall back dense
        own = hw.core.sparse.dtypes
        core["sparse"] = hw.core.sparse.model_copy(update={"dtypes": [d for d in sm80.dtypes
                                                                      if own is None or d in own]})
    return hw.model_copy(update={"core": hw.core.model_copy(update=core)})


def searched_kernels_hardware(hw: Hardware) -> Hardware:
    """``hw`` as a harness that searches the library's algorithms runs it: the 2:4 kernels choose among
    ``core.compute.cta_tiles.sparse_searched`` (where set) instead of the default algorithm's ``sparse`` tiles."""
    comp = hw.core.compute
    tiles = getattr(comp, "cta_tiles", None)
    if tiles is None or tiles.sparse_searched is None:
        return hw
    comp = comp.model_copy(update={"cta_tiles": tiles.model_copy(update={"sparse": list(tiles.sparse_searched)})})
    return hw.model_copy(update={"core": hw.core.model_copy(update={"compute": comp})})


def kernel_loop_hardware(hw: Hardware) -> Hardware:
    """``hw`` as a back-to-back kernel loop times it: no fixed launch cost per GEMM kernel (the
    ``launch_overhead_cycles`` fitted on framework-level timings) and no host per-call floor; everything else
    as configured."""
    return with_host_floor(hw.model_copy(update={"launch_overhead_cycles": LaunchOverhead(dense=0, sparse=0)}), 0.0)



def validate_hw(rows: Sequence[Measurement], hw_map: Mapping[str, Hardware], *,
                main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
                sparsity: str = "2:4", hw_sources: Mapping[str, str] | None = None) -> ValidationResult:
    """Simulate every measured row on its mapped hardware and score the predictions.

    ``hw_map`` maps GPU names, name prefixes or ``GPU@SOURCE`` keys (see
    :func:`~accelsim.analysis.measurements.match_row`) to hardware configs; ``hw_sources`` optionally
    names the file each came from. The result holds every row (measured, predicted, error, status), the
    metrics per GPU / dtype / regime (``groups``), per GPU / dtype over the main regimes (``main``), over
    all scored main-regime rows (``overall``), the unscored rows and notes.
    """
    if not hw_map:
        raise AccelsimError("validate_hw: the hardware map is empty; give at least one gpu=config")
    sims: dict[str, Simulator] = {}
    for row in rows:
        key = match_row(row, hw_map)
        if key is None:
            continue
        for path in ("dense", "sparse"):
            if _variant_key(key, row, path, sparsity) not in sims:
                sims[_variant_key(key, row, path, sparsity)] = Simulator(row_hardware(hw_map[key], row, path, sparsity),
                                                               (hw_sources or {}).get(key, "<hardware>"))
    out_rows = [_score(row, match_row(row, hw_map), hw_map, sims, sparsity, bound, main_regimes)
                for row in rows]
    return _summarise(out_rows, tuple(main_regimes), bound, sparsity, hw_map, hw_sources)


def _group_metrics(rows: Sequence[RowResult]) -> Metrics:
    scored = [r for r in rows if r.scored and r.predicted is not None]
    return metrics([r.predicted.speedup for r in scored if r.predicted], [r.measured.speedup for r in scored],
                   [r.dense_time_err_pct for r in scored], [r.sparse_time_err_pct for r in scored],
                   [rule_of_thumb(r.m, r.n, r.k) for r in scored])


def _group(key: str, hw: str | None, dtype: str, regime: str, main: bool, members: list[RowResult],
           fmt: str | None = None) -> GroupResult:
    return GroupResult(key, hw, dtype, regime, main, len(members), sum(1 for r in members if not r.scored),
                       _group_metrics(members), fmt)


def _lines(lines: Sequence[int], shown: int = 12) -> str:
    """``2, 3, 5`` (at most ``shown`` of them, then how many more)."""
    head = ", ".join(str(x) for x in lines[:shown])
    return head + (f" and {len(lines) - shown} more" if len(lines) > shown else "")


def _notes(rows: Sequence[RowResult], main_regimes: Sequence[str], bound: float,
           sm80_keys: frozenset[str] = frozenset()) -> list[str]:
    """What the tables cannot say: unscored rows and why, and the properties of the measurements applied
    (``sm80_keys``: the hw-map keys whose config describes sm80 2:4 kernels)."""
    notes = []
    above = [r for r in rows if r.status == "above_bound"]
    notes.append(f"{len(above)} row(s) measured above the 2:4 bound ({bound:g}x) are reported but not scored "
                 f"(dense baseline below its own peak)" + (": lines " + ", ".join(str(r.line) for r in above)
                                                           if above else "."))
    for status, text in (("unmapped", "no hardware matched their GPU name"),
                         ("infeasible", "the mapped hardware cannot run them"),
                         ("unknown_format", "their format does not parse here")):
        bad = [r for r in rows if r.status == status]
        if bad:
            why = {r.format: (r.message or "").partition("cannot run here: ")[2] for r in bad if r.format}
            fmts = sorted(f"{f}: {w}" for f, w in why.items()) if status == "unknown_format" else []  # and why
            notes.append(f"{len(bad)} row(s) not scored, {text}"
                         + (f" ({', '.join(fmts[:6])}{' ...' if len(fmts) > 6 else ''})" if fmts else "")
                         + ": lines " + _lines([r.line for r in bad]))
    for r in rows:
        p = r.predicted
        if p is None:
            continue
        over = [f"{path} {meas:g} us = {meas / pred:.1f}x the modelled {pred:.1f} us"
                for path, meas, pred in (("dense", r.measured.dense_us, p.dense_us),
                                         ("sparse", r.measured.sparse_us, p.sparse_us))
                if meas is not None and pred > 0 and meas > OUTSIDE_KERNEL_FACTOR * pred]
        if over:
            notes.append(f"line {r.line} ({r.m}x{r.n}x{r.k}, {r.regime}): measured " + ", ".join(over)
                         + ": the measurement holds work outside the one GEMM kernel accelsim models")
    loop = [r for r in rows if r.timing == "kernel-loop" and r.hw_key is not None]
    if loop:
        notes.append(f"{len(loop)} row(s) timed as a back-to-back kernel loop (timing=kernel-loop): their fixed "
                     "launch cost per kernel (launch_overhead_cycles, fitted on framework-level timings) and the "
                     "host's per-call floor (host.call_floor_us) are not counted; the kernels' own prologue and "
                     "write-back are simulated")
    floored = [r for r in rows if r.predicted is not None and r.predicted.host_bound]
    if floored:
        both = sum(1 for r in floored if r.predicted is not None and len(r.predicted.host_bound) == 2)
        notes.append(f"{len(floored)} row(s) predicted at the host's per-call floor (host.call_floor_us of their "
                     f"config), {both} of them dense and 2:4 alike (predicted 1.00x): the measuring host, not the "
                     f"GPU, sets their time; lines {_lines([r.line for r in floored])}")
    searched = [r for r in rows if r.kernels == "searched" and r.hw_key is not None]
    if searched:
        notes.append(f"{len(searched)} row(s) from a harness that searched the library's 2:4 algorithms "
                     "(kernels=searched): their sparse kernels choose among core.compute.cta_tiles.sparse_searched "
                     "where the config lists it, the others run the default algorithm's cta_tiles.sparse")
    sm80 = [r for r in rows if r.sparse_isa == "sm80" and r.predicted is not None]
    if sm80:
        own = sorted({r.hw or "" for r in sm80 if r.hw_key not in sm80_keys})
        notes.append(f"{len(sm80)} row(s) ran 2:4 kernels compiled for sm80 (sparse_isa=sm80; lines "
                     f"{_lines([r.line for r in sm80])}): their 2:4 GEMM runs core.compute.sm80_sparse (Ampere's "
                     "mma.sp fed through the shared-memory banks) where the config describes it"
                     + (f"; {', '.join(own)} run(s) them as the part's own 2:4 kernels" if own else ""))
    typed = [r for r in rows if r.c_dtype and r.hw_key is not None]
    if typed:
        kinds = ", ".join(sorted({f"{r.dtype} -> {r.c_dtype}" for r in typed}))
        notes.append(f"{len(typed)} row(s) write C as their harness did (dense / 2:4; c_dtype): {kinds}; "
                     "the others in the input dtype")
    other = sorted({r.regime for r in rows if not r.main})
    if other:
        notes.append("main table = regimes " + ", ".join(main_regimes) + " (pure GEMM kernels); scored separately: "
                     + ", ".join(other) + " (not a single GEMM kernel: see docs/validation.md)")
    return notes


def _summarise(rows: list[RowResult], main_regimes: tuple[str, ...], bound: float, sparsity: str,
               hw_map: Mapping[str, Hardware], hw_sources: Mapping[str, str] | None) -> ValidationResult:
    keys: dict[tuple[str, str | None, str, str, str], list[RowResult]] = {}
    for r in rows:
        if r.hw_key is not None:
            keys.setdefault((r.hw_key, r.hw, r.dtype, r.format or "", r.regime), []).append(r)
    regime_order = {name: i for i, name in enumerate(list(main_regimes) + list(KNOWN_REGIMES))}
    groups = [_group(key, hw, dtype, regime, regime in main_regimes, members, fmt or None)
              for (key, hw, dtype, fmt, regime), members in sorted(
                  keys.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][3], regime_order.get(kv[0][4], 99),
                                                kv[0][4]))]
    per_gd: dict[tuple[str, str | None, str, str], list[RowResult]] = {}
    for r in rows:
        if r.hw_key is not None and r.main:
            per_gd.setdefault((r.hw_key, r.hw, r.dtype, r.format or ""), []).append(r)
    main = [_group(key, hw, dtype, "+".join(main_regimes), True, members, fmt or None)
            for (key, hw, dtype, fmt), members in sorted(
                per_gd.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2], kv[0][3]))]
    unscored = [Unscored(r.line, r.gpu, r.status, r.message) for r in rows if not r.scored]
    hardware = {key: HardwareRef(hw.name, hw.config_hash(), (hw_sources or {}).get(key)) for key, hw in hw_map.items()}
    return ValidationResult(sparsity=sparsity, bound=bound, main_regimes=main_regimes, hardware=hardware,
                            rows=tuple(rows), groups=tuple(groups), main=tuple(main),
                            overall=_group_metrics([r for r in rows if r.main]), unscored=tuple(unscored),
                            notes=tuple(_notes(rows, main_regimes, bound, frozenset(
                                k for k, hw in hw_map.items() if getattr(hw.core.compute, "sm80_sparse", None)))))
