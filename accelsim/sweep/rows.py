"""The work of one sweep worker: the metric rows of hardware points, with per-process caches.

A worker gets a :class:`WorkContext` (what every point shares, sent once) and lists of
``(point index, overrides)``; :func:`run_points` returns each point's metric rows in
(workload, set-parameter combination, sparsity) order. The lean path lowers each workload once
per distinct lowering target and simulates each distinct kernel once per distinct engine key;
the reference path (``lean=False``) builds every row through :func:`accelsim.simulation.run`.
Both sum the same :class:`~accelsim.results.LayerTotals` with :func:`~accelsim.results.model_totals`,
and both settle each kernel at its power-limited clock with :func:`accelsim.energy.settle_clock`.
Both take the memory footprint from :func:`accelsim.simulation.footprint` (the lean path once per
lowering, not per point: it depends on the kernels, not on what the engine reads) and test it against
the point's ``dram.capacity_bytes`` with :func:`accelsim.simulation.fits_capacity`, as ``run`` does;
likewise the footprint of the dense baseline (every kernel dense) that ``speedup_vs_dense`` compares
against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelsim.energy import SettledClock, at_clock, energy_tables_cover, kernel_energy, power_cap_of, settle_clock
from accelsim.engine import EngineHardware, hardware_key, simulate_totals
from accelsim.errors import InfeasibleError
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.lowering import Kernel, LoweringTarget, lower, lowering_target
from accelsim.results import KernelTotals, LayerTotals, ModelTotals, model_totals
from accelsim.simulation import Simulator, choose_path, fits_capacity, footprint, peak_macs_per_cycle, run
from accelsim.sweep.columns import METRICS
from accelsim.sweep.points import with_overrides
from accelsim.workloads.model import Workload, workload_from_dict
from accelsim.workloads.tensor_parallel import TensorParallelPlan, split

Row = tuple[Any, ...]  # one row's METRICS
PointTask = tuple[int, dict[str, Any]]  # (point index, overrides)


@dataclass(frozen=True)
class WorkContext:
    """What every point of a sweep shares; sent to each worker once (picklable)."""

    id: str  # the spec hash (and "-ref" for the reference path): worker caches are valid for one id
    hardware: dict[str, Any]
    hw_source: str
    workloads: tuple[tuple[str, dict[str, Any], tuple[dict[str, Any], ...]], ...]  # (source, data, combos)
    sparsity: tuple[str | None, ...]
    policy: str
    lean: bool


@dataclass
class _Group:
    kernel: Kernel
    base: Kernel | None  # the dense baseline of a sparse kernel
    count: int


@dataclass
class _Lowered:
    """A workload lowered for one target: identical kernels folded into groups, each layer's group, and the
    memory footprint's total bytes by the groups the 'fastest' policy sent back to dense (() = none)."""

    groups: list[_Group]
    layer_group: tuple[int, ...]
    footprint_bytes: dict[tuple[int, ...], int]
    dense_bytes: int  # the dense baseline's footprint (every kernel dense)


class _WorkerState:
    """Per-process caches, valid for one sweep context."""

    MAX_TOTALS = 200_000
    MAX_LOWERED = 2_000

    def __init__(self, ctx_id: str) -> None:
        self.ctx_id = ctx_id
        self.models: dict[tuple[int, int], Workload] = {}
        self.lowered: dict[tuple[Any, ...], _Lowered] = {}
        self.plans: dict[tuple[int, int, int], TensorParallelPlan] = {}  # (workload, combo, devices) -> split
        self.dense_bytes: dict[tuple[Any, ...], int] = {}  # the reference path's dense-baseline footprints
        self.totals: dict[tuple[Any, ...], KernelTotals] = {}
        self.settled: dict[tuple[Any, ...], SettledClock] = {}


_STATE: _WorkerState | None = None


def _state(ctx: WorkContext) -> _WorkerState:
    global _STATE
    if _STATE is None or _STATE.ctx_id != ctx.id:
        _STATE = _WorkerState(ctx.id)
    return _STATE


def _model(ctx: WorkContext, st: _WorkerState, wi: int, ci: int) -> Workload:
    m = st.models.get((wi, ci))
    if m is None:
        src, data, combos = ctx.workloads[wi]
        m = workload_from_dict(data, src, combos[ci])
        st.models[(wi, ci)] = m
    return m


def _lower_groups(model: Workload, target: LoweringTarget, sparsity: str | None, hw: Hardware) -> _Lowered:
    """Lower ``model`` and fold identical kernels: (kernel, dense baseline) pairs with their layer count; and
    the footprint of the kernels as lowered (``hw``: any point of this target; the footprint's total does
    not depend on it, only ``fits`` does)."""
    index: dict[tuple[Any, ...], int] = {}
    groups: list[_Group] = []
    layer_group: list[int] = []
    kernels = lower(model, target, sparsity)
    for k in kernels:
        base = k.as_dense() if k.sparse else None
        key = (k.cache_key(), k.pattern_requested, base.cache_key() if base is not None else None)
        gi = index.get(key)
        if gi is None:
            gi = index[key] = len(groups)
            groups.append(_Group(k, base, 1))
        else:
            groups[gi].count += 1
        layer_group.append(gi)
    total = footprint(model, kernels, hw)["total_bytes"]
    return _Lowered(groups, tuple(layer_group), {(): total}, _dense_bytes(model, kernels, hw, total))


def _dense_bytes(model: Workload, kernels: list[Kernel], hw: Hardware, total: int | None = None) -> int:
    """The footprint's total bytes with every kernel dense, as ``run`` checks the dense baseline (``total``:
    the kernels' own, when known, for a model with no sparse kernel)."""
    if total is not None and not any(k.sparse for k in kernels):
        return total
    return footprint(model, [k.as_dense() for k in kernels], hw)["total_bytes"]


def _footprint_bytes(model: Workload, low: _Lowered, target: LoweringTarget, sparsity: str | None,
                     dense: tuple[int, ...], hw: Hardware) -> int:
    """The footprint's total bytes when the groups ``dense`` run dense (policy 'fastest'), as ``run`` takes it:
    lowered again (once per such set) with those layers' kernels swapped for their dense twins."""
    hit = low.footprint_bytes.get(dense)
    if hit is None:
        kernels = lower(model, target, sparsity)
        swap = set(dense)
        for i, gi in enumerate(low.layer_group):
            if gi in swap:  # its dense twin, as run swaps it in (dense was faster)
                kernels[i] = choose_path(kernels[i], 1, 0, "fastest")
        hit = low.footprint_bytes[dense] = footprint(model, kernels, hw)["total_bytes"]
    return hit


def _sig(x: float | None, digits: int = 6) -> float | None:
    """Round to ``digits`` significant digits (energies summed in different orders agree to ~1e-15)."""
    return None if x is None else float(f"{x:.{digits}g}")


def _memory(total: int, dense: int, hw: Hardware) -> tuple[int, bool | None, bool | None]:
    """A row's footprint_bytes, fits_memory and dense_fits_memory."""
    cap = hw.dram.capacity_bytes
    return total, fits_capacity(total, cap), fits_capacity(dense, cap)


def _metrics(t: ModelTotals, peak: float, clock_ghz: float, energy: float | None, dense_energy: float | None,
             memory: tuple[int, bool | None, bool | None], split_notes: str | None) -> Row:
    """A feasible row's METRICS from its model totals (``results.ModelTotals``), its footprint (:func:`_memory`)
    and its tensor-parallel split's notes (None on one device)."""
    dram = (t.dram["a_values"], t.dram["a_metadata"], t.dram["b"], t.dram["c"])
    dram_total = sum(dram)
    binding, share = t.binding()
    return (True, None, memory[1], memory[0], memory[2], t.latency_us(clock_ghz), t.total, t.dense_total_cycles,
            t.speedup_vs_dense(), t.utilization(), peak, t.cycles["compute"], t.cycles["stall_memory"],
            t.cycles["stall_decode"], t.cycles["launch"], t.cycles.get("communication", 0), t.macs, t.macs_executed,
            dram_total, *dram, dram[1],
            round(dram[1] / dram_total, 6) if dram_total else 0.0, t.layers, t.layers_by_path.get("sparse", 0),
            t.fallback_layers, round(t.fallback_layers / t.requested_layers, 6) if t.requested_layers else 0.0,
            t.fallback_share_of_time(), binding, share, _sig(energy), _sig(dense_energy),
            _sig(dense_energy / energy) if energy and dense_energy is not None else None,
            t.effective_clock_ghz(clock_ghz), t.capped_layers, split_notes)


def _infeasible(exc: InfeasibleError) -> Row:
    return (False, f"{exc.key}: {exc.problem}") + (None,) * (len(METRICS) - 2)


class _Point:
    """One hardware point as the caches see it: what lowering reads, and what the engine reads."""

    def __init__(self, hw: Hardware, source: str) -> None:
        self.hw = hw
        self.source = source
        self.target = lowering_target(hw)  # the lowering cache key
        self.engine = hardware_key(hw)  # with a kernel's cache_key(), the simulation cache key
        self.prepared = EngineHardware(hw)  # what every kernel's simulation reads of hw, computed once
        cap = power_cap_of(hw)
        # with the engine key, what a settled clock depends on: the energy model when a cap governs
        self.governor = "" if cap is None or hw.energy is None else hw.energy.model_dump_json()
        self.energy: dict[tuple[str, Any], float] = {}  # (dtype, kernel cache key) -> J, on this point's hardware

    def kernel_energy(self, dtype: str, kernel: Kernel, clock: SettledClock) -> float:
        key = (dtype, kernel.cache_key())
        e = self.energy.get(key)
        if e is None:
            if clock.energy_j is not None and dtype == kernel.dtype:  # the governor's own sum at this clock
                e = self.energy[key] = clock.energy_j
            else:
                e = self.energy[key] = kernel_energy(self.hw, dtype, kernel, clock.totals, clock.fraction)
        return e


def _row(model: Workload, keys: _Point, sparsity: str | None, policy: str, st: _WorkerState,
         model_key: tuple[int, int]) -> Row:
    """One row: each distinct kernel simulated once (cached on what the engine reads), then summed."""
    hw = keys.hw
    key = (model_key, sparsity, keys.target)
    low = st.lowered.get(key)
    if low is None:
        if len(st.lowered) >= st.MAX_LOWERED:
            st.lowered.clear()
        low = _lower_groups(model, keys.target, sparsity, hw)
        st.lowered[key] = low
    cache = st.totals
    if len(cache) >= st.MAX_TOTALS:
        cache.clear()
    if len(st.settled) >= st.MAX_TOTALS:
        st.settled.clear()

    def sim(kernel: Kernel) -> KernelTotals:
        k = (keys.engine, kernel.cache_key())
        hit = cache.get(k)
        if hit is None:
            # an InfeasibleError is not cached: it names the layer
            hit = simulate_totals(kernel, hw, keys.source, keys.prepared)
            cache[k] = hit
        return hit

    def settled(kernel: Kernel) -> SettledClock:
        k = (keys.engine, keys.governor, kernel.cache_key())
        hit = st.settled.get(k)
        if hit is None:
            def totals_at(f: float) -> KernelTotals:
                if f == 1.0:
                    return sim(kernel)
                hw_f = at_clock(hw, f)
                kf = (hardware_key(hw_f), kernel.cache_key())
                t = cache.get(kf)
                if t is None:
                    t = cache[kf] = simulate_totals(kernel, hw_f, keys.source)
                return t

            hit = st.settled[k] = settle_clock(hw, kernel, totals_at)
        return hit

    with_energy = energy_tables_cover(hw, model.dtype)
    energy = dense_energy = 0.0
    dense_total = 0
    layers = []
    dense: list[int] = []  # groups the policy sent back to dense
    for gi, g in enumerate(low.groups):
        kernel = g.kernel
        res = settled(kernel)
        base = settled(g.base) if g.base is not None else res
        run_kernel = choose_path(kernel, res.totals.total, base.totals.total, policy)
        if run_kernel is not kernel:
            res = base
            dense.append(gi)
        n = g.count
        dense_total += n * base.totals.total
        peak = 0.0 if run_kernel.vector else peak_macs_per_cycle(hw, run_kernel.dtype)  # its utilization's peak
        layers.append(LayerTotals(res.totals, run_kernel.path, bool(run_kernel.pattern_requested), run_kernel.macs,
                                  run_kernel.macs_executed, peak, n, res.actual.total, res.capped))
        if with_energy:
            e = keys.kernel_energy(run_kernel.dtype, run_kernel, res)  # a quantized Linear: its weights' type
            energy += n * e
            dense_energy += n * (keys.kernel_energy(g.base.dtype, g.base, base)
                                 if run_kernel.sparse and g.base is not None else e)
    mem = _footprint_bytes(model, low, keys.target, sparsity, tuple(dense), hw)
    return _metrics(model_totals(layers, dense_total), peak_macs_per_cycle(hw, model.dtype), hw.clock_ghz,
                    energy if with_energy else None, dense_energy if with_energy else None,
                    _memory(mem, low.dense_bytes, hw), None)


def _reference_row(model: Workload, hw: Hardware, sparsity: str | None, policy: str, sim: Simulator,
                   st: _WorkerState, model_key: tuple[int, int]) -> Row:
    """The same row from :func:`accelsim.simulation.run` (the check path, and systems; slower): with the
    dense baseline's footprint (``run`` checks it only when the row fits) and the split's notes, which
    ``run`` warns of (sizes rounded up to the largest shard, replicated layers; '; '-joined)."""
    res = run(model, hw, sparsity, policy=policy, simulator=sim)
    t = res.totals
    plan = None
    if hw.devices > 1:  # run's split, again (cached): one device's shard and what the split says
        pkey = (*model_key, hw.devices)
        plan = st.plans.get(pkey)
        if plan is None:
            plan = st.plans[pkey] = split(model, hw.devices)
    shard = plan.workload if plan is not None else model
    dkey = (model_key, hw.devices, sparsity, lowering_target(hw))
    dense = st.dense_bytes.get(dkey)
    if dense is None:
        if len(st.dense_bytes) >= st.MAX_LOWERED:
            st.dense_bytes.clear()
        dense = st.dense_bytes[dkey] = _dense_bytes(shard, lower(shard, hw, sparsity), hw)
    return _metrics(res.model_totals(), res.peak_macs_per_cycle, hw.clock_ghz,
                    t["energy"]["total_j"] if "energy" in t else None,
                    t["energy"]["dense_total_j"] if "energy" in t else None,
                    _memory(res.footprint["total_bytes"], dense, hw),
                    ("; ".join(plan.notes) or None) if plan is not None else None)


def run_points(ctx: WorkContext, points: list[PointTask]) -> list[list[Row]]:
    """Metric rows for each point: (workload, combo, sparsity) order; an infeasible row says why."""
    st = _state(ctx)
    out = []
    for index, overrides in points:
        src = f"{ctx.hw_source} (point {index})"
        hw = hardware_from_dict(with_overrides(ctx.hardware, overrides, src), src)
        rows: list[Row] = []
        keys = _Point(hw, src) if ctx.lean and hw.devices == 1 else None  # systems: run()'s tensor parallelism
        sim = Simulator(hw, src) if keys is None else None
        for wi, (_, _, combos) in enumerate(ctx.workloads):
            for ci in range(len(combos)):
                model = _model(ctx, st, wi, ci)
                for sp in ctx.sparsity:
                    try:
                        if keys is not None:
                            rows.append(_row(model, keys, sp, ctx.policy, st, (wi, ci)))
                        else:
                            assert sim is not None
                            rows.append(_reference_row(model, hw, sp, ctx.policy, sim, st, (wi, ci)))
                    except InfeasibleError as exc:
                        rows.append(_infeasible(exc))
        out.append(rows)
    return out
