"""The deployment report's figures of one sparse run against its dense run.

- summary: latency, speedup, occupancy, fallback share, metadata cost, bytes, energy, footprint;
- supported-layer matrix: op type x pattern, counts of sparse / padded / fallback (by reason) ops;
- per-layer rows;
- pruning schedule: ``saved_i = dense_i - sparse_i`` for the ops that run sparse, ranked largest
  first; ``speedup_j = dense_total / (dense_total - sum of the first j saved_i)``. The curve ends at
  the run's speedup exactly (integer cycle sums).

speedup = dense total cycles / sparse-run total cycles (as ``accelsim run``). A fallback op is an op
whose plan asked for a pattern (``pattern_requested``) but that did not run sparse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from accelsim.analysis.reality import RealityCheck
from accelsim.energy import RunClock, run_clock
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.results import KernelResult, RunResult
from accelsim.workloads.model import Workload

__all__ = ["FLATTEN_FRACTION", "BytesMoved", "Clocks", "EnergyFigures", "FallbackShare", "LayerRow", "Latency",
           "MatrixCell", "MatrixPattern", "MetadataCost", "Occupancy", "OccupancyPair", "PruningSchedule",
           "SchedulePeak", "ScheduleRow", "Summary", "SupportMatrix", "layer_rows", "pruning_schedule", "summarise",
           "support_matrix"]

FLATTEN_FRACTION = 0.9
SCHEDULE_DEFINITION = ("saved_i = dense_i - sparse_i for ops that run sparse (others save 0 and are excluded); "
                       "speedup_j = dense_total / (dense_total - sum of the first j saved_i)")
MATRIX_CATEGORIES = {"sparse": "runs sparse (pattern_promoted counts here too)",
                     "padded": "runs sparse with padding (n_padded / k_padded)",
                     "fallback": "the plan asked for a pattern; runs dense (or on the vector unit), by reason"}


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


# ============================================================================================ summary

@dataclasses.dataclass(frozen=True, kw_only=True)
class Latency(Record):
    cycles: int
    latency_us: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Occupancy(Record):
    """Executed and dense-equivalent MACs over the peak, whole model and while array ops run."""

    model: float
    array_ops: float
    model_dense_equivalent: float
    array_ops_dense_equivalent: float
    array_time_share: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class OccupancyPair(Record):
    dense: Occupancy
    sparse: Occupancy


BytesByLevel = Mapping[str, Mapping[str, int]]  # {level: {tensor: bytes, ..., "total": bytes}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class BytesMoved(Record):
    dense: BytesByLevel
    sparse: BytesByLevel


@dataclasses.dataclass(frozen=True, kw_only=True)
class FallbackShare(Record):
    kernels: int
    kernels_requested: int
    kernels_all: int
    share_of_requested_kernels: float
    share_of_all_kernels: float
    cycles: int
    share_of_time: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class MetadataCost(Record):
    dram_bytes: int
    sram_bytes: int
    share_of_weight_dram_bytes: float
    share_of_dram_bytes: float
    cycles: float
    share_of_sparse_time: float
    cycles_definition: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnergyFigures(Record):
    total_j: float
    dense_total_j: float
    avg_power_w: float
    dense_avg_power_w: float | None
    perf_per_watt_vs_dense: float
    by_component_j: Mapping[str, float]
    # a tensor-parallel system: the figures above are all its devices'; how many, and one device's figures
    devices: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    per_device: Mapping[str, float | None] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Clocks(Record):
    """The clocks the sparse and the dense run ran at (each ``accelsim run``'s ``totals.clock``, layers counted)."""

    sparse_run: RunClock
    dense_run: RunClock


@dataclasses.dataclass(frozen=True, kw_only=True)
class Summary(Record):
    dense: Latency
    sparse: Latency
    speedup: float
    occupancy: OccupancyPair
    layers_by_path: Mapping[str, int]
    fallback: FallbackShare
    metadata: MetadataCost
    bytes: BytesMoved
    energy: EnergyFigures | None
    footprint: Mapping[str, Any]
    warnings: tuple[str, ...]
    # set only where the power cap lowered a kernel's clock in either run (uncapped reports do not carry it)
    clock: Clocks | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    # set only where energy is None: why the run has no energy figures
    energy_not_modelled: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


def _occupancy(res: RunResult) -> Occupancy:
    """Tensor-core / array occupancy: executed and dense-equivalent MACs of the array ops, each over the array's
    peak in the element type it runs in (``RunResult.layer_peak``: an int8 layer against the int8 peak), over the
    model's cycles and over the array ops' own. Work on the vector unit (a depthwise conv there) is not the
    array's: its MACs count in neither."""
    total = res.total_cycles or 1
    array = [r for r in res.layers if r.path in ("dense", "sparse")]
    arr_cycles = sum(r.cycles["total"] for r in array) or 1
    execd: dict[float, int] = {}  # executed and dense-equivalent MACs by the peak they run against
    macs: dict[float, int] = {}
    for r in array:
        p = res.layer_peak(r)
        execd[p] = execd.get(p, 0) + r.macs_executed
        macs[p] = macs.get(p, 0) + r.macs

    def over(by_peak: dict[float, int], cycles: int) -> float:
        return sum(m / (cycles * p) for p, m in sorted(by_peak.items()))

    return Occupancy(
        model=over(execd, total),
        array_ops=over(execd, arr_cycles),
        model_dense_equivalent=over(macs, total),
        array_ops_dense_equivalent=over(macs, arr_cycles),
        array_time_share=sum(r.cycles["total"] for r in array) / total,
    )


def _bytes_levels(res: RunResult) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for level, by in res.totals["bytes"].items():
        out[level] = {**by, "total": sum(by.values())}
    return out


def _clocks(real: RunResult, dense: RunResult) -> Clocks | None:
    """Both runs' clocks, when the power cap lowered a kernel's clock in either; else None."""
    sparse_clock, dense_clock = run_clock([real]), run_clock([dense])
    if sparse_clock is None or dense_clock is None or not (sparse_clock.capped or dense_clock.capped):
        return None
    return Clocks(sparse_run=sparse_clock, dense_run=dense_clock)


def _energy(energy: Mapping[str, Any], dense: Mapping[str, Any] | None) -> EnergyFigures:
    """The sparse run's energy totals (``RunResult.energy_totals``) and the dense run's average power; on a system
    also one device's figures of both."""
    each, dense_each = energy.get("per_device"), (dense or {}).get("per_device") or {}
    return EnergyFigures(
        total_j=energy["total_j"], dense_total_j=energy["dense_total_j"], avg_power_w=energy["avg_power_w"],
        dense_avg_power_w=dense["avg_power_w"] if dense else None,
        perf_per_watt_vs_dense=energy["perf_per_watt_vs_dense"], by_component_j=freeze(energy["by_component_j"]),
        devices=energy.get("devices"),
        per_device=None if each is None else freeze({
            "total_j": each["total_j"], "dense_total_j": each["dense_total_j"], "avg_power_w": each["avg_power_w"],
            "dense_avg_power_w": dense_each.get("avg_power_w")}))


def _no_energy(res: RunResult) -> str:
    """Why ``res`` has no energy figures: its config has no energy block, or none for the types its layers run in."""
    if not res.hardware.get("energy"):
        return "the config has no energy: block"
    missing = sorted({r.dtype or res.workload.get("dtype", "") for r in res.layers
                      if r.clock is not None and r.clock["limit"] == "no_energy"})
    return (f"the config's energy.mac_pj has no {', '.join(missing)} entry" if missing
            else "the run carries no energy figures")


def summarise(real: RunResult, dense: RunResult, rc: RealityCheck) -> Summary:
    """The summary of the sparse run ``real`` against the ``dense`` run (metadata cycles from the ladder ``rc``)."""
    ghz = real.clock_ghz
    total, dense_total = real.total_cycles, real.dense_total_cycles
    requested = [r for r in real.layers if r.pattern_requested]
    fallback = [r for r in requested if r.path != "sparse"]
    fb_cycles = sum(r.cycles["total"] for r in fallback)
    rungs = {r.rung: r for r in rc.rungs}
    meta_cycles = rungs["metadata"].sparse_cycles - rungs["data_movement"].sparse_cycles
    levels = _bytes_levels(real)
    dram = levels.get("dram", {})
    a_bytes = dram.get("a_values", 0) + dram.get("a_metadata", 0)
    totals = real.totals
    energy = totals.get("energy")
    return Summary(
        dense=Latency(cycles=dense_total, latency_us=dense_total / (ghz * 1e3)),
        sparse=Latency(cycles=total, latency_us=total / (ghz * 1e3)),
        speedup=_ratio(dense_total, total),
        occupancy=OccupancyPair(dense=_occupancy(dense), sparse=_occupancy(real)),
        layers_by_path=freeze(totals["layers_by_path"]),
        fallback=FallbackShare(
            kernels=len(fallback), kernels_requested=len(requested), kernels_all=len(real.layers),
            share_of_requested_kernels=_ratio(len(fallback), len(requested)) if requested else 0.0,
            share_of_all_kernels=len(fallback) / len(real.layers) if real.layers else 0.0,
            cycles=fb_cycles, share_of_time=fb_cycles / total if total else 0.0),
        metadata=MetadataCost(
            dram_bytes=dram.get("a_metadata", 0),
            sram_bytes=levels.get("sram", {}).get("a_metadata", 0),
            share_of_weight_dram_bytes=dram.get("a_metadata", 0) / a_bytes if a_bytes else 0.0,
            share_of_dram_bytes=dram.get("a_metadata", 0) / dram["total"] if dram.get("total") else 0.0,
            cycles=meta_cycles,
            share_of_sparse_time=meta_cycles / total if total else 0.0,
            cycles_definition="reality-check ladder: sparse_cycles(metadata) - sparse_cycles(data_movement)"),
        bytes=BytesMoved(dense=freeze(_bytes_levels(dense)), sparse=freeze(levels)),
        energy=None if energy is None else _energy(energy, dense.totals.get("energy")),
        footprint=freeze(real.footprint),
        warnings=tuple(real.warnings),
        clock=_clocks(real, dense),
        energy_not_modelled=_no_energy(real) if energy is None else None,
    )


# ============================================================================================ matrix

@dataclasses.dataclass(frozen=True, kw_only=True)
class MatrixPattern(Record):
    """One pattern of the matrix: how the model runs with it."""

    pattern: str
    executed_as: tuple[str, ...]
    speedup: float
    cycles: int
    requested_ops: int
    sparse_ops: int
    requested_time_share: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatrixCell(Record):
    """Op type x pattern: the ops that asked for the pattern, by category, and their time."""

    op_type: str
    pattern: str
    layers: int
    sparse: int
    padded: int
    promoted: int
    fallback: Mapping[str, int]          # ops by reason code
    padding_reasons: Mapping[str, int]   # padded ops by n_padded / k_padded
    cycles: int
    dense_cycles: int
    cycles_by_category: Mapping[str, int]
    share_of_time: float
    speedup: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class SupportMatrix(Record):
    patterns: tuple[MatrixPattern, ...]
    rows: tuple[MatrixCell, ...]
    ops_without_pattern: int
    categories: Mapping[str, str]


def _op_type(layer: Any, lowered: str) -> str:
    """Op type for the matrix: the op as run (`lowered`: a workload matmul run as fused attention is
    'attention', as in ``run --by-op-type``), convolutions split by kind (their sparse support differs)."""
    if layer.op == "conv2d" and layer.groups > 1:
        return "conv2d depthwise" if layer.depthwise else "conv2d grouped"
    return lowered


def _category(r: KernelResult) -> str:
    if r.path == "sparse":
        return "padded" if r.padding else "sparse"
    return "fallback"


def support_matrix(model: Workload, runs: list[tuple[str, RunResult]], dense_cycles: list[int]) -> SupportMatrix:
    """Op type x pattern: counts of sparse / padded / fallback (by reason) ops and their time share."""
    layers = {layer.name: layer for layer in model.layers}
    rows = []
    patterns = []
    for label, res in runs:
        total = res.total_cycles or 1
        cells: dict[str, dict[str, Any]] = {}
        for i, r in enumerate(res.layers):
            if not r.pattern_requested:
                continue
            kind = _op_type(layers[r.name], r.op)
            c = cells.setdefault(kind, {
                "op_type": kind, "pattern": label, "layers": 0, "sparse": 0, "padded": 0,
                "promoted": 0, "fallback": {}, "padding_reasons": {}, "cycles": 0, "dense_cycles": 0,
                "cycles_by_category": {"sparse": 0, "padded": 0, "fallback": 0}})
            cat = _category(r)
            c["layers"] += 1
            if cat == "fallback":
                c["fallback"][r.reason or "none"] = c["fallback"].get(r.reason or "none", 0) + 1
            else:
                c[cat] += 1
            if cat == "padded":
                for key in sorted(r.padding):
                    pr = f"{key}_padded"
                    c["padding_reasons"][pr] = c["padding_reasons"].get(pr, 0) + 1
            if r.reason == "pattern_promoted":
                c["promoted"] += 1
            c["cycles"] += r.cycles["total"]
            c["dense_cycles"] += dense_cycles[i]
            c["cycles_by_category"][cat] += r.cycles["total"]
        for c in sorted(cells.values(), key=lambda c: (-c["cycles"], c["op_type"])):
            rows.append(MatrixCell(
                **{**c, "fallback": freeze(dict(sorted(c["fallback"].items()))),
                   "padding_reasons": freeze(dict(sorted(c["padding_reasons"].items()))),
                   "cycles_by_category": freeze(c["cycles_by_category"])},
                share_of_time=c["cycles"] / total, speedup=_ratio(c["dense_cycles"], c["cycles"])))
        executed = sorted({r.pattern_executed for r in res.layers if r.pattern_executed})
        reqd = [r for r in res.layers if r.pattern_requested]
        patterns.append(MatrixPattern(
            pattern=label, executed_as=tuple(executed), speedup=_ratio(res.dense_total_cycles, res.total_cycles),
            cycles=res.total_cycles, requested_ops=len(reqd), sparse_ops=sum(1 for r in reqd if r.path == "sparse"),
            requested_time_share=sum(r.cycles["total"] for r in reqd) / (res.total_cycles or 1)))
    not_requested = sum(1 for r in runs[0][1].layers if not r.pattern_requested) if runs else 0
    return SupportMatrix(patterns=tuple(patterns), rows=tuple(rows), ops_without_pattern=not_requested,
                         categories=freeze(MATRIX_CATEGORIES))


# ============================================================================================ layers

@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerRow(Record):
    index: int
    name: str
    op: str
    shape: Mapping[str, int]
    path: str
    pattern_requested: str | None
    pattern_executed: str | None
    reason: str | None
    padding: Mapping[str, Any]
    cycles: int
    dense_cycles: int
    saved_cycles: int
    share_of_time: float
    binding: str
    utilization: float
    speedup: float
    # the fastest format at the sparsity level of the pattern this layer asks for ("dense" when none beats it; None
    # when the layer asks for no pattern, e.g. one the plan keeps dense), and its speedup over dense
    best_format: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    best_format_speedup: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    # True for an op fused into the attention kernel above it: it runs nothing of its own (its shape is zero)
    fused: bool | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


def layer_rows(real: RunResult, dense_cycles: list[int],
               best: Mapping[str, tuple[str, float]] | None = None) -> tuple[LayerRow, ...]:
    """One row per op of the sparse run, with its dense time (``dense_cycles``, model order) and, from ``best``
    (layer -> (format, speedup)), the best format at the sparsity level the layer asks for."""
    total = real.total_cycles or 1
    best = best or {}
    return tuple(LayerRow(
        index=i, name=r.name, op=r.op, shape=freeze(r.shape), path=r.path, pattern_requested=r.pattern_requested,
        pattern_executed=r.pattern_executed, reason=r.reason, padding=freeze(r.padding), cycles=r.cycles["total"],
        dense_cycles=dense_cycles[i], saved_cycles=dense_cycles[i] - r.cycles["total"],
        share_of_time=r.cycles["total"] / total, binding=r.binding, utilization=r.utilization,
        speedup=_ratio(dense_cycles[i], r.cycles["total"]),
        best_format=best[r.name][0] if r.name in best else None,
        best_format_speedup=best[r.name][1] if r.name in best else None,
        fused=True if (r.tiling or {}).get("absorbed") else None) for i, r in enumerate(real.layers))


# ============================================================================================ schedule

@dataclasses.dataclass(frozen=True, kw_only=True)
class ScheduleRow(Record):
    rank: int
    name: str
    op: str
    shape: Mapping[str, int]
    dense_cycles: int
    sparse_cycles: int
    saved_cycles: int
    saved_share_of_dense: float
    cumulative_saved_cycles: int
    cumulative_speedup: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulePeak(Record):
    layers: int
    speedup: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class PruningSchedule(Record):
    rows: tuple[ScheduleRow, ...]
    curve: tuple[float, ...]      # speedup after the first j ops (j = 0 .. len(rows))
    final_speedup: float
    run_speedup: float
    layers: int
    excluded_layers: int
    flatten_fraction: float
    layers_to_flatten: int | None  # ops that reach flatten_fraction of the final gain
    peak: SchedulePeak
    negative_layers: tuple[str, ...]
    definition: str


def pruning_schedule(real: RunResult, dense_cycles: list[int]) -> PruningSchedule:
    """Which ops to make sparse first: ranked by simulated time saved (module doc)."""
    dense_total = real.dense_total_cycles
    cand = [(i, r) for i, r in enumerate(real.layers) if r.path == "sparse"]
    order = sorted(cand, key=lambda ir: (-(dense_cycles[ir[0]] - ir[1].cycles["total"]), ir[0]))
    rows = []
    cum = 0
    curve = [1.0]
    for rank, (i, r) in enumerate(order, start=1):
        saved = dense_cycles[i] - r.cycles["total"]
        cum += saved
        sp = dense_total / (dense_total - cum)
        curve.append(sp)
        rows.append(ScheduleRow(rank=rank, name=r.name, op=r.op, shape=freeze(r.shape), dense_cycles=dense_cycles[i],
                                sparse_cycles=r.cycles["total"], saved_cycles=saved,
                                saved_share_of_dense=saved / dense_total if dense_total else 0.0,
                                cumulative_saved_cycles=cum, cumulative_speedup=sp))
    final = curve[-1]
    run_speedup = dense_total / real.total_cycles if real.total_cycles else 1.0
    gain = final - 1.0
    flatten = None
    if gain > 0:
        flatten = next(j for j, s in enumerate(curve) if s - 1.0 >= FLATTEN_FRACTION * gain - 1e-15)
    peak_j = max(range(len(curve)), key=lambda j: (curve[j], -j))
    return PruningSchedule(
        rows=tuple(rows), curve=tuple(curve), final_speedup=final, run_speedup=run_speedup,
        layers=len(rows), excluded_layers=len(real.layers) - len(rows),
        flatten_fraction=FLATTEN_FRACTION, layers_to_flatten=flatten,
        peak=SchedulePeak(layers=peak_j, speedup=curve[peak_j]),
        negative_layers=tuple(row.name for row in rows if row.saved_cycles < 0),
        definition=SCHEDULE_DEFINITION,
    )
