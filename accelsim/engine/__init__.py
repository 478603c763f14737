"""The numba hot path: tile generation and the tile pipeline. ``simulate`` is its entry point."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accelsim.engine import classes as cl
from accelsim.engine import pipeline as pl
from accelsim.engine import structured as st
from accelsim.engine import tensorcore as tc
from accelsim.engine import tiling as tl
from accelsim.errors import InfeasibleError
from accelsim.hardware.kinds import ComputeKind, UnknownKindError, kind_of
from accelsim.hardware.model import Hardware
from accelsim.hardware.systolic import SystolicCompute
from accelsim.hardware.tensor_core import TensorCoreCompute
from accelsim.limits import SizeLimitError, check_kernel
from accelsim.lowering import Kernel
from accelsim.results import BINDING_NAMES, TILE_DTYPE, KernelResult, KernelTotals

__all__ = ["ENGINE_IGNORES", "SIMULATIONS", "EngineHardware", "hardware_key", "simulate", "simulate_totals"]

# Top-level sections of a hardware config the engine never reads (a test traces every read to check).
ENGINE_IGNORES = frozenset({"name", "energy"})

_WORK_COLS = (("compute_cycles", tl.T_CYCLES), ("decode_groups", tl.T_GROUPS),
              ("dram_a_values", tl.T_DRAM_A_VALUES), ("dram_a_metadata", tl.T_DRAM_A_META),
              ("dram_b", tl.T_DRAM_B), ("dram_c_read", tl.T_DRAM_C_READ), ("dram_c_write", tl.T_DRAM_C_WRITE),
              ("sram_a_values", tl.T_SRAM_A_VALUES), ("sram_a_metadata", tl.T_SRAM_A_META),
              ("sram_b", tl.T_SRAM_B), ("sram_c", tl.T_SRAM_C), ("gather_rows", tl.T_GATHER))
_TIME_COLS = (("load_start", pl.P_LOAD_START), ("load_end", pl.P_LOAD_END),
              ("decode_start", pl.P_DECODE_START), ("decode_end", pl.P_DECODE_END),
              ("compute_start", pl.P_COMPUTE_START), ("compute_end", pl.P_COMPUTE_END),
              ("wb_start", pl.P_WB_START), ("wb_end", pl.P_WB_END),
              ("gather_start", pl.P_GATHER_START), ("gather_end", pl.P_GATHER_END))


@dataclass(slots=True)
class _Segment:
    """One simulated tile sequence (a systolic kernel, or one wave class of a CTA grid).

    A sequence too long to hold tile by tile has no arrays, only ``summed``: its totals,
    extrapolated from classes of identical tiles (``classes``).
    """

    work: np.ndarray | None
    times: np.ndarray | None
    bw: np.ndarray | None
    count: int = 1  # how many times this sequence runs back to back on each core
    active: int = 1  # cores running it concurrently
    wave_class: int = 0
    summed: cl.Sums | None = None

    @property
    def end(self) -> float:
        return self.summed.end if self.summed is not None else cl.end_of(self.times)  # type: ignore[arg-type]

    def totals(self, latency: float) -> cl.Sums:
        """The sums a kernel's totals are built from."""
        if self.summed is not None:
            return self.summed
        return cl.sums_of(self.work, self.times, latency)  # type: ignore[arg-type]


def _rate(value: object) -> float:
    return float("inf") if value == "unlimited" else float(value)  # type: ignore[arg-type]


def _decode_params(kernel: Kernel, hw: Hardware) -> tuple[float, float]:
    spec = hw.core.sparse
    if not kernel.sparse or spec is None:
        return math.inf, 0.0
    return _rate(spec.decode_groups_per_cycle), float(spec.decode_latency_cycles)


class EngineHardware:
    """The per-config numbers every kernel's simulation reads (rates, latencies, buffer sizes), computed once.

    ``simulate`` and ``simulate_totals`` build one per call unless given one; a caller simulating many
    kernels on one config (a sweep point) builds it once. It must not outlive a change to ``hw``.
    """

    __slots__ = ("hw", "fill", "latency", "decode_rate", "decode_latency", "stages", "caps", "kind", "simulation")

    def __init__(self, hw: Hardware) -> None:
        self.hw = hw
        self.fill = hw.fill_bytes_per_cycle()  # DRAM -> SRAM bytes per cycle of one core
        self.latency = hw.dram_latency_cycles()
        spec = hw.core.sparse
        self.decode_rate, self.decode_latency = ((math.inf, 0.0) if spec is None else
                                                 (_rate(spec.decode_groups_per_cycle),
                                                  float(spec.decode_latency_cycles)))
        self.stages = hw.core.sram.n_stages()
        self.caps = hw.core.sram.buffer_bytes()
        self.kind: ComputeKind = kind_of(hw)
        self.simulation = simulation_for(self.kind.simulation)


def simulate(kernel: Kernel, hw: Hardware, source: str = "<hardware>", keep_tiles: bool = True) -> KernelResult:
    """Simulate one kernel on ``hw``, tile by tile; raises InfeasibleError if no tile fits.

    Kernels with more tiles than ``classes.TILE_CAP`` are simulated by classes of identical tiles
    and have no per-tile records (``tiles`` stays None, ``tiling['extrapolated']`` is True); more
    than 2^62 MACs raise SizeLimitError. The numbers are :func:`simulate_totals`' (the same code).
    """
    eh = EngineHardware(hw)
    segments, tiling, peak, launch = _segments(kernel, eh, source, detail=True)
    totals = _totals(kernel, eh, segments, launch)
    return _result(kernel, totals, tiling, peak, _records(segments, launch) if keep_tiles else None)


def simulate_totals(kernel: Kernel, hw: Hardware, source: str = "<hardware>",
                    prepared: EngineHardware | None = None) -> KernelTotals:
    """The totals of ``simulate(kernel, hw)`` without its tiling details or per-tile records (faster).

    ``prepared``: ``EngineHardware(hw)``, when the caller keeps one for many kernels.
    """
    eh = prepared if prepared is not None else EngineHardware(hw)
    segments, _, _, launch = _segments(kernel, eh, source, detail=False)
    return _totals(kernel, eh, segments, launch)


def hardware_key(hw: Hardware) -> str:
    """Everything of ``hw`` the engine may read: the resolved config but for ``ENGINE_IGNORES``.

    With a kernel's ``cache_key()`` it keys a cache of :func:`simulate_totals`.
    """
    return hw.model_dump_json(exclude=set(ENGINE_IGNORES))


def _segments(kernel: Kernel, eh: EngineHardware, source: str,
              detail: bool) -> tuple[list[_Segment], dict, float, int]:
    """The simulated tile sequences of ``kernel``, its tiling description, peak rate and launch cycles.

    ``detail=False`` may leave the tiling description short and fold tile arrays into their sums.
    """
    check_kernel(kernel)
    hw = eh.hw
    if kernel.vector:
        segments, tiling, peak = _vector(kernel, eh, detail)
        return segments, tiling, peak, hw.vector.launch_overhead_cycles
    segments, tiling, peak = eh.simulation(kernel, eh, source, detail)
    launch = hw.launch_overhead_cycles.sparse if kernel.sparse else hw.launch_overhead_cycles.dense
    return segments, tiling, peak, launch


# -- vector unit ---------------------------------------------------------------------------

def _vector(kernel: Kernel, eh: EngineHardware, detail: bool) -> tuple[list[_Segment], dict, float]:
    """Element-wise work streamed through the vector unit in chunks: load, compute, write back."""
    hw = eh.hw
    total_bytes = kernel.read_bytes + kernel.write_bytes
    n_tiles = int(min(64, max(1, -(-total_bytes // 65536))))
    embedding = kernel.op == "embedding"
    in_l2 = (hw.activations == "l2_if_fits" and hw.l2 is not None and not embedding
             and total_bytes <= hw.l2.bytes)
    fill = eh.fill * hw.cores
    if hw.l2 is not None:
        fill = min(fill, hw.l2.bandwidth_bytes_per_cycle)
    rate = fill if in_l2 else min(fill, hw.dram_bytes_per_cycle())
    args = (n_tiles, tl.T_DRAM_A_VALUES if embedding else tl.T_DRAM_B, tl.T_SRAM_A_VALUES if embedding else tl.T_SRAM_B,
            in_l2, kernel.read_bytes / n_tiles, kernel.write_bytes / n_tiles,
            kernel.vector_ops / hw.vector.ops_per_cycle / n_tiles)
    pipe_latency = 0.0 if in_l2 else eh.latency
    peak = float(hw.vector.ops_per_cycle)
    if not detail:  # chunks generated, scheduled and summed in one call
        summed = cl.Sums.from_vector(pl.vector_segment_sums(*args, rate, pipe_latency, eh.latency))
        return [_Segment(None, None, None, summed=summed)], {"tiles": n_tiles}, peak
    work, xfer = tl.vector_tiles(*args)
    bw = np.full(n_tiles, rate)
    times = pl.run_pipeline(xfer, bw, pipe_latency, math.inf, 0.0, 2, 0.0, math.inf)
    tiling = {"tiles": n_tiles, "unit": "vector", "elements": kernel.elements,
              "ops": round(kernel.vector_ops, 3), "in_l2": in_l2}
    return [_Segment(work, times, bw)], tiling, peak


# -- systolic ------------------------------------------------------------------------------

def _systolic_batch(kernel: Kernel, eh: EngineHardware, source: str,
                    detail: bool) -> tuple[list[_Segment], dict, float]:
    """A systolic kernel: ``batch`` independent copies of one GEMM back to back."""
    segments, tiling, peak = _systolic(kernel, eh, source, detail)
    segments[0].count = kernel.batch  # independent copies run back to back
    if kernel.batch > 1:
        tiling["batch"] = kernel.batch
    return segments, tiling, peak


def _systolic(kernel: Kernel, eh: EngineHardware, source: str, detail: bool) -> tuple[list[_Segment], dict, float]:
    hw = eh.hw
    comp = hw.core.compute
    assert isinstance(comp, SystolicCompute)
    sram = hw.core.sram
    caps = eh.caps
    outer, extra = kernel, {}
    b_group, mbits, decodes, gather = kernel.group_m, float(kernel.metadata_bits), True, False
    if kernel.sparse and kernel.row_block:  # V:N:M, block: the folds of the GEMM they run (engine.structured)
        block = hw.core.sparse.block if hw.core.sparse is not None else None
        view = st.systolic_view(kernel, comp.cols, block.imbalance if block is not None else None)
        kernel, b_group, mbits, decodes, gather, extra = (view.kernel, view.b_group, view.mbits, view.decode, True,
                                                          view.tiling)
    b_elements = kernel.b_elements if sram.im2col == "on_chip" else kernel.k * kernel.n
    plan = tl.systolic_plan(comp.rows, comp.cols, comp.dataflow, kernel.m, kernel.n, kernel.k,
                            kernel.keep_n, kernel.group_m, kernel.dtype_bytes, mbits,
                            comp.accumulator_bytes, caps, sram.double_buffered, b_elements, b_group)
    if "infeasible" in plan:
        buf, need, have = plan["infeasible"]
        half = " per half, double-buffered" if sram.double_buffered else ""
        raise InfeasibleError(source, sram.buffer_key(buf),
                              f"SRAM too small for the smallest tile of layer '{kernel.name}' "
                              f"({kernel.m}x{kernel.n}x{kernel.k}, {kernel.pattern_executed or 'dense'}): "
                              f"needs {need} bytes in the {buf} buffer, has {have}{half}", kernel.name)
    args = (comp.rows, comp.cols, tl.DATAFLOW_CODE[comp.dataflow], comp.output_drain == "serial", kernel.m,
            kernel.n, kernel.k, kernel.keep_n, kernel.group_m, float(kernel.dtype_bytes), mbits,
            float(comp.accumulator_bytes), int(plan["chunk"]), b_elements / (kernel.k * kernel.n),
            bool(plan["a_resident"]), bool(plan["b_resident"]), bool(plan["c_resident"]), kernel.sparse,
            b_group, gather)
    # block indices are metadata bytes without an N:M decode: no decode time, their groups zeroed below
    rate, lat = (eh.decode_rate, eh.decode_latency) if kernel.sparse and decodes else (math.inf, 0.0)
    g_rate = st.gather_rate(outer, hw)
    n_tiles = cl.systolic_tile_count(comp.rows, comp.cols, args[2], kernel.m, kernel.n, kernel.k, kernel.keep_n,
                                     kernel.group_m, args[12])
    if n_tiles > cl.TILE_CAP:  # too many to hold: simulate classes of identical tiles, extrapolate
        summed, simulated, folds = cl.systolic_sums(*args, eh.fill, eh.latency, rate, lat, eh.stages, g_rate)
        if not decodes:
            summed.groups, summed.col[tl.T_GROUPS] = 0.0, 0.0
        tiling = {"tiles": n_tiles, "chunk": int(plan["chunk"]), "folds": folds, "a_resident": bool(plan["a_resident"]),
                  "b_resident": bool(plan["b_resident"]), "c_resident": bool(plan["c_resident"]),
                  "extrapolated": True, "simulated_tiles": simulated, **extra}
        return [_Segment(None, None, None, summed=summed)], tiling, float(comp.rows * comp.cols)
    if not detail:  # tiles generated, scheduled and summed in one call
        vec = pl.systolic_segment_sums(*args, eh.fill, eh.latency, rate, lat, eh.stages, g_rate)
        summed = cl.Sums.from_vector(vec)
        if not decodes:
            summed.groups, summed.col[tl.T_GROUPS] = 0.0, 0.0
        return [_Segment(None, None, None, summed=summed)], {"tiles": n_tiles, **extra}, float(comp.rows * comp.cols)
    work = tl.systolic_tiles(*args)
    if not decodes:
        work[:, tl.T_GROUPS] = 0.0
    bw = np.full(len(work), eh.fill)
    times = pl.run_pipeline(work, bw, eh.latency, rate, lat, eh.stages, 0.0, g_rate)
    tiling = {"tiles": int(len(work)), "chunk": int(plan["chunk"]),
              "folds": int(len(np.unique(work[:, tl.T_FOLD_R] * 1e6 + work[:, tl.T_FOLD_C]))) if len(work) else 0,
              "a_resident": bool(plan["a_resident"]), "b_resident": bool(plan["b_resident"]),
              "c_resident": bool(plan["c_resident"]), **extra}
    return [_Segment(work, times, bw)], tiling, float(comp.rows * comp.cols)


# -- tensor cores --------------------------------------------------------------------------

def _cta_waves(kernel: Kernel, eh: EngineHardware, source: str, detail: bool) -> tuple[list[_Segment], dict, float]:
    """A GPU-like kernel: CTA tiles in waves over the cores."""
    return _tensor_core(kernel, eh.hw, source)


def _tensor_core(kernel: Kernel, hw: Hardware, source: str) -> tuple[list[_Segment], dict, float]:
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    dtype = kernel.dtype
    if dtype not in comp.macs_per_cycle:
        raise InfeasibleError(source, "core.compute.macs_per_cycle",
                              f"no {dtype} rate: layer '{kernel.name}' needs one "
                              f"(this part lists {', '.join(comp.macs_per_cycle)})", kernel.name)
    path = "sparse" if kernel.sparse else "dense"
    e = float(kernel.dtype_bytes)
    stages = hw.core.sram.n_stages()
    smem = hw.core.sram.buffer_bytes()
    unified_bytes = hw.core.sram.bytes
    unified = unified_bytes is not None
    best: tuple[float, list[_Segment], dict] | None = None
    smallest_need = None
    cands: list[tuple[tuple[int, int, int], Kernel, str, float, st.GridExtras | None]]
    if kernel.sparse and kernel.row_block:  # V:N:M, block: the CTA grids they run (engine.structured)
        cands = [(c.tile, c.inner, c.path, c.mbits, c.extras) for c in st.candidates(kernel, hw)]
    else:
        cands = [((t[0], t[1], t[2]), kernel, path, float(kernel.metadata_bits) if kernel.sparse else 0.0, None)
                 for t in comp.cta_tiles.for_path(path, dtype)]
    for (bm, bn, bk), inner, path, mbits, extras in cands:
        rate = comp.macs_per_cycle[dtype] * getattr(comp.efficiency, path)
        if inner.sparse:
            rate *= hw.core.sparse.rate(inner.executed_format)  # type: ignore[union-attr, arg-type]
        mma = getattr(comp.mma, path)
        a_tile = bm * (bk * inner.keep_n / inner.group_m) * (e + mbits / 8)
        b_tile = bk * bn * e * (extras.b_panels if extras is not None else 1)

        def fits(st: int, a_tile: float = a_tile, b_tile: float = b_tile) -> bool:
            if unified_bytes is not None:
                return st * (a_tile + b_tile) <= unified_bytes
            return st * a_tile <= smem["filter"] and st * b_tile <= smem["ifmap"]

        # libraries ship fewer-stage variants of a tile for wide dtypes: use the deepest that fits
        tile_stages = stages
        while tile_stages > 1 and not fits(tile_stages):
            tile_stages -= 1
        if not fits(tile_stages):
            total_need = a_tile + b_tile
            smallest_need = total_need if smallest_need is None else min(smallest_need, total_need)
            continue
        steps = -(-inner.k_padded // bk)
        for split in sorted(set(getattr(comp.split_k, path))) if extras is None else [1]:
            if split > 1 and split > steps:
                continue
            segs, tiling = _cta_grid(inner, hw, (bm, bn, bk), split, mma, rate, e, mbits, tile_stages, extras)
            total = sum(s.count * s.end for s in segs)
            if best is None or total < best[0] - 1e-9:
                best = (total, segs, tiling)
    if best is None:
        raise InfeasibleError(source, hw.core.sram.buffer_key("filter") if not unified else "core.sram.bytes",
                              f"shared memory too small for every {path} CTA tile of layer '{kernel.name}': "
                              f"the smallest needs {math.ceil(smallest_need or 0)} bytes even single-staged",
                              kernel.name)
    peak = comp.macs_per_cycle[dtype] * hw.cores
    best[2]["candidates"] = len(cands) * (1 if kernel.row_block else len(set(getattr(comp.split_k, path))))
    return best[1], best[2], peak


def _cta_grid(kernel: Kernel, hw: Hardware, tile: tuple[int, int, int], split: int, mma: list[int], rate: float,
              e: float, mbits: float, stages: int,
              extras: st.GridExtras | None = None) -> tuple[list[_Segment], dict]:
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    bm, bn, bk = tile
    m, n, k_total = kernel.m, kernel.n_exec, kernel.k_padded
    batch = kernel.batch  # independent products: more CTAs along m, each with its own A and B
    grid_m, grid_n = -(-m // bm) * batch, -(-n // bn)
    steps = -(-k_total // bk)
    k_slice = -(-steps // split) * bk  # logical k per CTA
    ctas = grid_m * grid_n * split
    slots = hw.cores * comp.ctas_per_core
    k_c = kernel.k_compressed
    a_total = m * batch * k_c * (e + mbits / 8)
    b_total = k_total * n * e * batch
    if extras is not None:  # V:N:M, block: their own distinct A and B bytes (engine.structured)
        a_total, b_total = extras.a_total, extras.b_total
    c_total = m * kernel.n * e * batch
    # split-k: every CTA writes an fp32 partial tile; a reduction reads them back and writes C
    c_traffic = c_total if split == 1 else (m * batch * n * 4.0 * split * 2 + c_total)
    l2 = hw.l2
    l2_bytes = l2.bytes if l2 is not None else 0
    all_fit = l2 is not None and a_total + b_total <= l2_bytes
    b_in_l2 = hw.activations == "l2_if_fits" and l2 is not None and b_total <= l2_bytes
    c_footprint = c_total + (m * batch * n * 4.0 * split if split > 1 else 0.0)  # C plus split-k partials
    c_in_l2 = hw.activations == "l2_if_fits" and l2 is not None and c_footprint <= l2_bytes
    waves = -(-ctas // slots)
    raster, reuse = comp.raster, comp.l2_reuse
    band = tc.raster_band(raster.order, raster.group_width, grid_m // batch, grid_n)
    capacity = 0.0
    if l2 is None:  # no cache between cores and DRAM: every CTA reads its own blocks
        classes = tc.legacy_classes(1, 1, ctas, slots, a_total * grid_n / ctas, b_total * grid_m / ctas, False)
        classes = [(a, a * a_total * grid_n / ctas, a * b_total * grid_m / ctas, c, f)
                   for a, _, _, c, f in classes]
        l2_reuse = "none"
    elif reuse.across_waves == "all_or_nothing" and raster.order == "m_fastest":  # the model before issue 17
        classes = tc.legacy_classes(grid_m, grid_n, split, slots, a_total / (grid_m * split),
                                    0.0 if b_in_l2 else b_total / (grid_n * split), all_fit)
        l2_reuse = "kernel" if all_fit else "wave"
        capacity = float(l2_bytes) if all_fit else 0.0
    else:  # batch entries and split-k slices are planes with their own A and B panels
        planes = batch * split
        if reuse.across_waves == "all_or_nothing":
            capacity, l2_reuse = (math.inf, "kernel") if all_fit else (0.0, "wave")
        else:
            capacity, l2_reuse = reuse.usable_fraction * l2_bytes, "reuse_distance"
        c_written = c_total if split == 1 else m * batch * n * 4.0 * split  # into L2 during the kernel
        try:
            classes = tc.reuse_classes(raster.order, band, grid_m // batch, grid_n, planes, slots,
                                       a_total / (grid_m * split), b_total / (grid_n * planes), c_written / ctas,
                                       capacity, not b_in_l2)
        except SizeLimitError as err:
            raise SizeLimitError(f"layer '{kernel.name}': {err}") from None
    k_cta = min(k_slice, k_total)

    def k_loop(k_len: int) -> np.ndarray:
        out = tc.cta_k_loop(bm, bn, bk, k_len, kernel.keep_n, kernel.group_m, mma[2], e, mbits, c_traffic / ctas,
                            rate, kernel.sparse)
        if extras is not None:  # rows of B gathered by index per k-step (its k length, per panel), block indices
            out[:, tl.T_SRAM_B] *= extras.b_panels
            out[:, tl.T_GATHER] = out[:, tl.T_SRAM_B] / (bn * e)
            out[:, tl.T_SRAM_A_META] += extras.meta_per_step
        return out

    fill = hw.fill_bytes_per_cycle()
    l2_bw = l2.bandwidth_bytes_per_cycle if l2 is not None else math.inf
    dram_bw = hw.dram_bytes_per_cycle()
    dec_rate, dec_lat = _decode_params(kernel, hw)
    g_rate = extras.gather_rate if extras is not None else math.inf
    latency = hw.dram_latency_cycles()

    def run_class(base: np.ndarray, idx: int, active: int, count: int, fa: float, fb: float,
                  fc: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        work = base.copy()
        tc.fill_dram_columns(work, fa, fb, fc)
        tc.tag_rows(work, idx, count)
        step = work[:, tl.T_SRAM_A_VALUES] + work[:, tl.T_SRAM_A_META] + work[:, tl.T_SRAM_B]
        from_dram = work[:, tl.T_DRAM_A_VALUES] + work[:, tl.T_DRAM_A_META] + work[:, tl.T_DRAM_B]
        share = np.divide(from_dram, step, out=np.zeros_like(step), where=step > 0)
        bw = tc.load_rate(step, share, active, fill, l2_bw, dram_bw)
        # transfers move the SRAM-side bytes; the DRAM columns only say where they came from
        xfer = work.copy()
        xfer[:, tl.T_DRAM_A_VALUES] = work[:, tl.T_SRAM_A_VALUES]
        xfer[:, tl.T_DRAM_A_META] = work[:, tl.T_SRAM_A_META]
        xfer[:, tl.T_DRAM_B] = work[:, tl.T_SRAM_B]
        xfer[:, tl.T_DRAM_C_WRITE] = work[:, tl.T_SRAM_C]
        # C goes to DRAM (or stays in L2): its own share of the memory system, not the loads'
        wb_bw = tc.load_rate(work[:, tl.T_SRAM_C], np.full(len(work), fc), active, fill, l2_bw, dram_bw)
        times = pl.run_pipeline_split(xfer, bw, wb_bw, latency, dec_rate, dec_lat, stages, 0.0, g_rate)
        return work, times, bw

    fc = 0.0 if c_in_l2 else 1.0
    k_steps = -(-k_cta // bk)
    segs = []
    if k_steps <= cl.KSTEP_CAP:
        base = k_loop(k_cta)
        a_cta = base[:, tl.T_SRAM_A_VALUES].sum() + base[:, tl.T_SRAM_A_META].sum()
        b_cta = base[:, tl.T_SRAM_B].sum()
        for idx, (active, dram_a, dram_b, count, _first) in enumerate(classes):
            fa = min(1.0, dram_a / (active * a_cta)) if a_cta else 0.0
            fb = min(1.0, dram_b / (active * b_cta)) if b_cta else 0.0
            work, times, bw = run_class(base, idx, active, count, fa, fb, fc)
            segs.append(_Segment(work, times, bw, count=count, active=active, wave_class=idx))
    else:  # a k-loop too long to hold: reduced loops, extended linearly in the number of k-steps
        loop = cl.Loop(k_steps, bk, "k")
        bases: dict[int, np.ndarray] = {}

        def reduced(steps_run: int) -> np.ndarray:
            if steps_run not in bases:
                bases[steps_run] = k_loop(k_cta - (k_steps - steps_run) * bk)
            return bases[steps_run]

        def operand_bytes(counts: list[int]) -> cl.Sums:
            return cl.Sums(0.0, 0.0, 0.0, 0.0, 0.0, reduced(counts[0]).sum(axis=0))

        col = cl.extrapolate([loop], operand_bytes)[0].col
        a_cta = col[tl.T_SRAM_A_VALUES] + col[tl.T_SRAM_A_META]
        b_cta = col[tl.T_SRAM_B]
        for idx, (active, dram_a, dram_b, count, _first) in enumerate(classes):
            fa = min(1.0, dram_a / (active * a_cta)) if a_cta else 0.0
            fb = min(1.0, dram_b / (active * b_cta)) if b_cta else 0.0

            def one(counts: list[int], idx: int = idx, active: int = active, count: int = count, fa: float = fa,
                    fb: float = fb) -> cl.Sums:
                work, times, _ = run_class(reduced(counts[0]), idx, active, count, fa, fb, fc)
                return cl.sums_of(work, times, latency)

            summed = cl.extrapolate([loop], one)[0]
            segs.append(_Segment(None, None, None, count=count, active=active, wave_class=idx, summed=summed))
    last = ctas - (waves - 1) * slots
    tiling = {"tiles": int(ctas * k_steps), "cta_tile": [bm, bn, bk], "split_k": split, "stages": stages,
              "ctas": ctas, "grid": [grid_m, grid_n, split], "slots": slots, "waves": waves, "last_wave_ctas": last,
              "idle_slot_fraction": round(1 - ctas / (waves * slots), 6), "k_steps": int(k_steps),
              "wave_classes": len(classes), "raster": {"order": raster.order, "group_width": band},
              "l2_reuse": l2_reuse, "l2_bytes_used": int(capacity) if math.isfinite(capacity) else l2_bytes,
              "dram_reread": {"a": round(sum(c * da for _, da, _, c, _ in classes) / a_total, 6) if a_total else 0.0,
                              "b": round(sum(c * db for _, _, db, c, _ in classes) / b_total, 6) if b_total else 0.0},
              "b_from_l2": b_in_l2, "c_to_l2": c_in_l2}
    if k_steps > cl.KSTEP_CAP:
        tiling["extrapolated"] = True
    if extras is not None:
        tiling.update(extras.tiling)
    return segs, tiling


# -- the simulations compute kinds name (ComputeKind.simulation) --------------------------

Simulation = Callable[[Kernel, EngineHardware, str, bool], tuple[list[_Segment], dict, float]]
SIMULATIONS: dict[str, Simulation] = {
    "systolic": _systolic_batch,  # folds and chunks of one array (SCALE-Sim semantics)
    "cta_waves": _cta_waves,  # CTA tiles in waves over cores sharing L2 and DRAM
}


def simulation_for(name: str) -> Simulation:
    """The engine simulation called ``name``; UnknownKindError naming it otherwise."""
    try:
        return SIMULATIONS[name]
    except KeyError:
        raise UnknownKindError(f"unknown engine simulation {name!r}; known: {', '.join(SIMULATIONS)}") from None


# -- results -------------------------------------------------------------------------------

def _records(segments: list[_Segment], launch: int) -> np.ndarray | None:
    if any(s.summed is not None for s in segments):
        return None  # extrapolated: no per-tile arrays to record
    tiled = [(s, s.work, s.times) for s in segments if s.work is not None and s.times is not None]  # all of them
    n = sum(len(work) for _, work, _ in tiled)
    rec = np.zeros(n, dtype=TILE_DTYPE)
    rec["tile"] = np.arange(n)
    i = 0
    offset = float(launch)
    for s, work, times in tiled:
        j = i + len(work)
        rec["fold_r"][i:j] = work[:, tl.T_FOLD_R] if s.active == 1 and s.count == 1 else 0
        rec["fold_c"][i:j] = work[:, tl.T_FOLD_C] if s.active == 1 and s.count == 1 else 0
        rec["chunk"][i:j] = work[:, tl.T_CHUNK]
        rec["wave_class"][i:j] = s.wave_class
        rec["wave_count"][i:j] = s.count
        rec["active_cores"][i:j] = s.active
        for name, col in _TIME_COLS:
            rec[name][i:j] = times[:, col] + offset
        rec["stall_memory"][i:j] = times[:, pl.P_STALL_MEMORY]
        rec["stall_decode"][i:j] = times[:, pl.P_STALL_DECODE]
        rec["stall_gather"][i:j] = times[:, pl.P_STALL_GATHER]
        rec["binding"][i:j] = times[:, pl.P_BINDING]
        for name, col in _WORK_COLS:
            rec[name][i:j] = work[:, col]
        offset += s.end
        i = j
    return rec


def _totals(kernel: Kernel, eh: EngineHardware, segments: list[_Segment], launch: int) -> KernelTotals:
    """The one assembly of a kernel's totals from its segments' sums (runs and sweeps alike)."""
    rate = eh.decode_rate if kernel.sparse else math.inf  # as _decode_params
    decodes = math.isfinite(rate)
    g_rate = st.gather_rate(kernel, eh.hw)
    end = cycles = stall = memory_busy = decode_busy = stall_gather = gather_busy = 0.0
    col = None
    for s in segments:  # segments run back to back on each core, s.count times each, on s.active cores
        t = s.summed if s.summed is not None else s.totals(eh.latency)
        n = s.count
        end += n * t.end
        cycles += n * t.cycles
        stall += n * t.stall_decode
        stall_gather += n * t.stall_gather
        gather_busy += n * float(t.col[tl.T_GATHER]) / g_rate  # one core's, like decode
        memory_busy += n * t.busy
        if decodes:
            decode_busy += n * t.groups / rate
        w = n * s.active
        c = t.col if w == 1 else w * t.col
        col = c if col is None else col + c
    c = col.tolist()  # type: ignore[union-attr]
    ceil = math.ceil  # counts round up, forgiving float noise of 1e-6
    total = ceil(launch + end - 1e-6)
    compute = int(round(cycles))
    stall_decode = int(round(stall))
    stall_gat = int(round(stall_gather))
    stall_memory = max(0, total - compute - launch - stall_decode - stall_gat)
    if stall_memory == 0:
        total = compute + launch + stall_decode + stall_gat
    busy_memory, busy_decode = ceil(memory_busy - 1e-6), ceil(decode_busy - 1e-6)
    gather_rows = float(c[tl.T_GATHER])
    busy_gather = ceil(gather_busy - 1e-6)
    ranked, most = 0, compute  # the busiest resource (BINDING_NAMES order); a tie goes to the first listed
    for i, value in ((1, busy_memory), (2, busy_decode), (3, launch), (4, busy_gather)):
        if value > most:
            ranked, most = i, value
    kt = KernelTotals(total, compute, stall_memory, stall_decode, int(launch), ceil(c[tl.T_DRAM_A_VALUES] - 1e-6),
                     ceil(c[tl.T_DRAM_A_META] - 1e-6), ceil(c[tl.T_DRAM_B] - 1e-6),
                     ceil(c[tl.T_DRAM_C_READ] + c[tl.T_DRAM_C_WRITE] - 1e-6), ceil(c[tl.T_SRAM_A_VALUES] - 1e-6),
                     ceil(c[tl.T_SRAM_A_META] - 1e-6), ceil(c[tl.T_SRAM_B] - 1e-6), ceil(c[tl.T_SRAM_C] - 1e-6),
                     busy_memory, busy_decode, BINDING_NAMES[ranked], float(c[tl.T_GROUPS]), stall_gat, busy_gather,
                     gather_rows)
    cl.check_totals(kernel.name, kt)
    return kt


def _result(kernel: Kernel, t: KernelTotals, tiling: dict, peak: float, tiles: np.ndarray | None) -> KernelResult:
    """The KernelResult of ``kernel`` from its totals."""
    macs_exec = kernel.macs_executed
    return KernelResult(
        name=kernel.name, op=kernel.op,
        shape={"elements": kernel.elements} if kernel.vector else
        ({"m": kernel.m, "n": kernel.n, "k": kernel.k} | ({"batch": kernel.batch} if kernel.batch > 1 else {})),
        path=kernel.path, pattern_requested=kernel.pattern_requested,
        pattern_executed=kernel.pattern_executed, reason=kernel.reason, padding=dict(kernel.padding),
        cycles=t.cycles(), macs=kernel.macs, macs_executed=macs_exec,
        utilization=(kernel.vector_ops if kernel.vector else macs_exec) / (t.total * peak) if t.total else 0.0,
        bytes={"dram": t.dram(), "sram": t.sram()}, binding=t.binding, busy=t.busy(), tiling=tiling,
        counts={"decode_groups": t.decode_groups, "vector_ops": float(kernel.vector_ops),
                **({"gather_rows": t.gather_rows} if t.gather_rows > 0 else {})},
        tiles=tiles,
    )
