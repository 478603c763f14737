"""The numba hot path: tile generation and the tile pipeline. ``simulate`` is its entry point."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from accelsim.engine import attention as fa
from accelsim.engine import classes as cl
from accelsim.engine import ctagrid as cg
from accelsim.engine import pipeline as pl
from accelsim.engine import rowgather as rg
from accelsim.engine import structured as st
from accelsim.engine import tiling as tl
from accelsim.engine.segment import Segment, rate_value, stage_params
from accelsim.engine.tilerecords import fill_records
from accelsim.errors import InfeasibleError
from accelsim.hardware.kinds import ComputeKind, UnknownKindError, kind_of
from accelsim.hardware.model import Hardware
from accelsim.hardware.systolic import SystolicCompute
from accelsim.limits import SizeLimitError, check_kernel
from accelsim.lowering import Kernel
from accelsim.results import BINDING_NAMES, TILE_DTYPE, KernelResult, KernelTotals

__all__ = ["ENGINE_IGNORES", "SIMULATIONS", "EngineHardware", "hardware_key", "simulate", "simulate_totals"]

# Top-level sections of a hardware config the engine never reads (a test traces every read to check).
ENGINE_IGNORES = frozenset({"name", "energy"})


class EngineHardware:
    """The per-config numbers every kernel's simulation reads (rates, latencies, buffer sizes), computed once.

    ``simulate`` and ``simulate_totals`` build one per call unless given one; a caller simulating many
    kernels on one config (a sweep point) builds it once. It must not outlive a change to ``hw``.
    """

    __slots__ = ("hw", "fill", "latency", "decode_rate", "decode_latency", "stages", "caps", "kind", "simulation",
                 "host_floor")

    def __init__(self, hw: Hardware) -> None:
        self.hw = hw
        self.fill = hw.fill_bytes_per_cycle()  # DRAM -> SRAM bytes per cycle of one core
        self.latency = hw.dram_latency_cycles()
        spec = hw.core.sparse
        self.decode_rate, self.decode_latency = ((math.inf, 0.0) if spec is None else
                                                 (rate_value(spec.decode_groups_per_cycle),
                                                  float(spec.decode_latency_cycles)))
        self.stages = hw.core.sram.n_stages()
        self.caps = hw.core.sram.buffer_bytes()
        self.kind: ComputeKind = kind_of(hw)
        self.simulation = simulation_for(self.kind.simulation)
        self.host_floor = hw.host.call_floor_us * 1e3 * hw.clock_ghz  # cycles of this clock (a wall time)


def simulate(kernel: Kernel, hw: Hardware, source: str = "<hardware>", keep_tiles: bool = True,
             prepared: EngineHardware | None = None) -> KernelResult:
    """Simulate one kernel on ``hw``, tile by tile; raises InfeasibleError if no tile fits.

    Kernels with more tiles than ``classes.TILE_CAP`` are simulated by classes of identical tiles
    and have no per-tile records (``tiles`` stays None, ``tiling['extrapolated']`` is True); more
    than 2^62 MACs raise SizeLimitError. The numbers are :func:`simulate_totals`' (the same code).
    ``prepared``: ``EngineHardware(hw)``, when the caller keeps one for many kernels.
    """
    eh = prepared if prepared is not None else EngineHardware(hw)
    segments, tiling, peak, launch = _segments(kernel, eh, source, detail=True, keep_tiles=keep_tiles)
    totals = _totals(kernel, eh, segments, launch)
    if totals.launch > launch:  # the host's per-call floor bound: the kernel started that much later
        tiling["host_wait_cycles"] = totals.launch - launch
    return _result(kernel, totals, tiling, peak, _records(segments, totals.launch) if keep_tiles else None)


def simulate_totals(kernel: Kernel, hw: Hardware, source: str = "<hardware>",
                    prepared: EngineHardware | None = None) -> KernelTotals:
    """The totals of ``simulate(kernel, hw)`` without its tiling details or per-tile records (faster).

    ``prepared``: ``EngineHardware(hw)``, when the caller keeps one for many kernels.
    """
    eh = prepared if prepared is not None else EngineHardware(hw)
    segments, _, _, launch = _segments(kernel, eh, source, detail=False, keep_tiles=False)
    return _totals(kernel, eh, segments, launch)


def hardware_key(hw: Hardware) -> str:
    """Everything of ``hw`` the engine may read: the resolved config but for ``ENGINE_IGNORES``.

    With a kernel's ``cache_key()`` it keys a cache of :func:`simulate_totals`.
    """
    return hw.model_dump_json(exclude=set(ENGINE_IGNORES))


def _segments(kernel: Kernel, eh: EngineHardware, source: str, detail: bool,
              keep_tiles: bool = True) -> tuple[list[Segment], dict, float, int]:
    """The simulated tile sequences of ``kernel``, its tiling description, peak rate and launch cycles.

    ``detail=False`` may leave the tiling description short and fold tile arrays into their sums;
    ``keep_tiles=False`` may fold tile arrays into their sums (the same numbers, no per-tile records).
    """
    check_kernel(kernel)
    hw = eh.hw
    if kernel.absorbed:  # fused into an attention kernel: runs nothing
        return [], {"form": "fused", "absorbed": True}, 0.0, 0
    if kernel.vector:
        segments, tiling, peak = _vector(kernel, eh, detail)
        return segments, tiling, peak, hw.vector.launch_overhead_cycles
    if kernel.op == "attention":  # fused attention (engine/attention.py)
        blocks, tiling, peak = fa.fused_attention(kernel, hw, source)
        segments = [Segment(work, times, bw, count=count, active=active, wave_class=i)
                    for i, (work, times, bw, active, count) in enumerate(blocks)]
        return segments, tiling, peak, hw.launch_overhead_cycles.fused_attention()
    segments, tiling, peak = eh.simulation(kernel, eh, source, detail, keep_tiles)
    launch = hw.launch_overhead_cycles.sparse if kernel.sparse_datapath else hw.launch_overhead_cycles.dense
    return segments, tiling, peak, launch


# -- vector unit ---------------------------------------------------------------------------

def _vector(kernel: Kernel, eh: EngineHardware, detail: bool) -> tuple[list[Segment], dict, float]:
    """Element-wise work streamed through the vector unit in chunks (``vector.chunk_bytes``, at most
    ``vector.max_chunks``, ``vector.stages`` in flight): load, compute, write back."""
    hw = eh.hw
    vec = hw.vector
    total_bytes = kernel.read_bytes + kernel.write_bytes
    n_tiles = int(min(vec.max_chunks, max(1, -(-total_bytes // vec.chunk_bytes))))
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
        summed = cl.Sums.from_vector(pl.vector_segment_sums(*args, rate, pipe_latency, eh.latency, vec.stages))
        return [Segment(None, None, None, summed=summed)], {"tiles": n_tiles}, peak
    work, xfer = tl.vector_tiles(*args)
    bw = np.full(n_tiles, rate)
    times = pl.run_pipeline(xfer, bw, pipe_latency, math.inf, 0.0, vec.stages, 0.0, math.inf)
    tiling = {"tiles": n_tiles, "unit": "vector", "elements": kernel.elements,
              "ops": round(kernel.vector_ops, 3), "in_l2": in_l2}
    return [Segment(work, times, bw)], tiling, peak


# -- systolic ------------------------------------------------------------------------------

def _systolic_batch(kernel: Kernel, eh: EngineHardware, source: str, detail: bool,
                    keep_tiles: bool = True) -> tuple[list[Segment], dict, float]:
    """A systolic kernel: ``batch`` independent copies of one GEMM back to back (one segment: tile arrays are
    kept for ``detail``, whatever ``keep_tiles``)."""
    segments, tiling, peak = _systolic(kernel, eh, source, detail)
    segments[0].count = kernel.batch  # independent copies run back to back
    if kernel.batch > 1:
        tiling["batch"] = kernel.batch
    return segments, tiling, peak


def _systolic(kernel: Kernel, eh: EngineHardware, source: str, detail: bool) -> tuple[list[Segment], dict, float]:
    hw = eh.hw
    comp = hw.core.compute
    assert isinstance(comp, SystolicCompute)
    sram = hw.core.sram
    caps = eh.caps
    outer, extra = kernel, {}
    b_group, mbits, decodes, gather, a_scale = kernel.group_m, float(kernel.metadata_bits), True, False, 1.0
    if kernel.sparse and kernel.row_block:  # V:N:M, block: the folds of the GEMM they run (engine.structured)
        block = hw.core.sparse.block if hw.core.sparse is not None else None
        view = st.systolic_view(kernel, comp.cols, block.imbalance if block is not None else None)
        kernel, b_group, mbits, decodes, gather, extra = (view.kernel, view.b_group, view.mbits, view.decode, True,
                                                          view.tiling)
        a_scale = view.a_scale  # A moves as stored (block folds hold zero blocks that are not stored)
    b_elements = kernel.b_elements if sram.im2col == "on_chip" else kernel.k * kernel.n
    m = kernel.m_exec  # channel pruning: only the kept rows
    plan = tl.systolic_plan(comp.rows, comp.cols, comp.dataflow, m, kernel.n, kernel.k,
                            kernel.keep_n, kernel.group_m, kernel.dtype_bytes, mbits,
                            comp.accumulator_bytes, caps, sram.double_buffered, b_elements, b_group, a_scale)
    if "infeasible" in plan:
        buf, need, have = plan["infeasible"]
        half = " per half, double-buffered" if sram.double_buffered else ""
        raise InfeasibleError(source, sram.buffer_key(buf),
                              f"SRAM too small for the smallest tile of layer '{kernel.name}' "
                              f"({kernel.m}x{kernel.n}x{kernel.k}, {kernel.pattern_executed or 'dense'}): "
                              f"needs {need} bytes in the {buf} buffer, has {have}{half}", kernel.name)
    args = (comp.rows, comp.cols, tl.DATAFLOW_CODE[comp.dataflow], comp.output_drain == "serial", m,
            kernel.n, kernel.k, kernel.keep_n, kernel.group_m, float(kernel.dtype_bytes), mbits,
            float(comp.accumulator_bytes), int(plan["chunk"]), b_elements / (kernel.k * kernel.n),
            bool(plan["a_resident"]), bool(plan["b_resident"]), bool(plan["c_resident"]),
            kernel.sparse_datapath or gather, b_group, gather, a_scale)
    reads = tl.a_dram_reads(comp.rows, comp.cols, comp.dataflow, kernel.n, bool(plan["a_resident"]))
    if reads > 1:  # A does not stay on chip: echoed for the why-line (analysis.explain)
        extra = {**extra, "a_reads": reads}
    # block indices are metadata bytes without an N:M decode (a dense-datapath kernel): no decode time, their
    # groups zeroed below
    rate, lat = stage_params(kernel, eh.decode_rate, eh.decode_latency)
    g_rate = st.gather_rate(outer, hw)
    n_tiles = cl.systolic_tile_count(comp.rows, comp.cols, args[2], m, kernel.n, kernel.k, kernel.keep_n,
                                     kernel.group_m, args[12])
    if n_tiles > cl.TILE_CAP:  # too many to hold: simulate classes of identical tiles, extrapolate
        summed, simulated, folds = cl.systolic_sums(*args, eh.fill, eh.latency, rate, lat, eh.stages, g_rate)
        if not decodes:
            summed.groups, summed.col[tl.T_GROUPS] = 0.0, 0.0
        tiling = {"tiles": n_tiles, "chunk": int(plan["chunk"]), "folds": folds, "a_resident": bool(plan["a_resident"]),
                  "b_resident": bool(plan["b_resident"]), "c_resident": bool(plan["c_resident"]),
                  "extrapolated": True, "simulated_tiles": simulated, **extra}
        return [Segment(None, None, None, summed=summed)], tiling, float(comp.rows * comp.cols)
    if not detail:  # tiles generated, scheduled and summed in one call
        vec = pl.systolic_segment_sums(*args, eh.fill, eh.latency, rate, lat, eh.stages, g_rate)
        summed = cl.Sums.from_vector(vec)
        if not decodes:
            summed.groups, summed.col[tl.T_GROUPS] = 0.0, 0.0
        return [Segment(None, None, None, summed=summed)], {"tiles": n_tiles, **extra}, float(comp.rows * comp.cols)
    work = tl.systolic_tiles(*args)
    if not decodes:
        work[:, tl.T_GROUPS] = 0.0
    bw = np.full(len(work), eh.fill)
    times = pl.run_pipeline(work, bw, eh.latency, rate, lat, eh.stages, 0.0, g_rate)
    tiling = {"tiles": int(len(work)), "chunk": int(plan["chunk"]),
              "folds": _distinct_folds(work),
              "a_resident": bool(plan["a_resident"]), "b_resident": bool(plan["b_resident"]),
              "c_resident": bool(plan["c_resident"]), **extra}
    return [Segment(work, times, bw)], tiling, float(comp.rows * comp.cols)


def _distinct_folds(work: np.ndarray) -> int:
    """Distinct (fold_r, fold_c) among a schedule's tiles, as keys fold_r x 1e6 + fold_c: a set of them for a short
    schedule (np.unique's sort and wrapper cost more there), np.unique for a long one (the same count)."""
    keys = work[:, tl.T_FOLD_R] * 1e6 + work[:, tl.T_FOLD_C]
    return len(set(keys.tolist())) if len(keys) <= 128 else int(len(np.unique(keys)))


# -- tensor cores (engine.ctagrid) ----------------------------------------------------------

def _cta_waves(kernel: Kernel, eh: EngineHardware, source: str, detail: bool,
               keep_tiles: bool = True) -> tuple[list[Segment], dict, float]:
    """A GPU-like kernel: CTA tiles in waves over the cores (a row-gather SpMM: engine.rowgather). Without
    ``keep_tiles`` each wave class is folded into its sums as it is simulated: a grid of many classes of up to
    ``classes.KSTEP_CAP`` k-steps each held every class's arrays (hundreds of MB) only to sum them."""
    if kernel.sparse and kernel.gather_cols:
        return rg.row_gather(kernel, eh.hw)
    return cg.tensor_core(kernel, eh.hw, source, fold=not keep_tiles)


# -- the simulations compute kinds name (ComputeKind.simulation) --------------------------

Simulation = Callable[[Kernel, EngineHardware, str, bool, bool], tuple[list[Segment], dict, float]]
# (kernel, hardware, source, detail, keep_tiles) -> (segments, tiling, peak)
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

def _records(segments: list[Segment], launch: int) -> np.ndarray | None:
    if any(s.summed is not None for s in segments):
        return None  # extrapolated: no per-tile arrays to record
    tiled = [(s, s.work, s.times) for s in segments if s.work is not None and s.times is not None]  # all of them
    n = sum(len(work) for _, work, _ in tiled)
    rec = np.zeros(n, dtype=TILE_DTYPE)
    i = 0
    offset = float(launch)
    for s, work, times in tiled:  # every TILE_DTYPE field (engine.tilerecords): the segment's labels, its arrays
        fill_records(rec, i, work, times, offset, s.active == 1 and s.count == 1, s.wave_class, s.count, s.active)
        offset += s.end
        i += len(work)
    return rec


def _totals(kernel: Kernel, eh: EngineHardware, segments: list[Segment], launch: int) -> KernelTotals:
    """The one assembly of a kernel's totals from its segments' sums (runs and sweeps alike)."""
    rate, _ = stage_params(kernel, eh.decode_rate, eh.decode_latency)
    decodes = math.isfinite(rate)
    g_rate = st.gather_rate(kernel, eh.hw)
    end = cycles = stall = memory_busy = decode_busy = stall_gather = gather_busy = 0.0
    cols: list[tuple[int, np.ndarray]] = []
    for s in segments:  # segments run back to back on each core, s.count times each, on s.active cores
        t = s.summed if s.summed is not None else s.totals(eh.latency)
        n = s.count  # the scalar sums are Python floats (Sums.from_vector): numpy's errstate concerns only ``col``
        end += n * t.end
        cycles += n * t.cycles
        stall += n * t.stall_decode
        stall_gather += n * t.stall_gather
        gather_busy += n * float(t.col[tl.T_GATHER]) / g_rate  # one core's, like decode
        memory_busy += n * t.busy
        if decodes:
            decode_busy += n * t.groups / rate
        cols.append((n * s.active, t.col))
    col = None
    if len(cols) == 1 and cols[0][0] == 1:  # one segment run once (most kernels): its sums as they are
        col = cols[0][1]
    elif cols:
        # a count past float range is refused below (check_totals) in words: no numpy warning on the way there
        with np.errstate(over="ignore", invalid="ignore"):
            for w, tc in cols:
                add = tc if w == 1 else w * tc
                col = add if col is None else col + add
    c: list[float] = [0.0] * tl.N_TILE_COLS if col is None else col.tolist()  # None: an absorbed op
    if not all(map(math.isfinite, (end, cycles, stall, stall_gather, gather_busy, memory_busy, decode_busy, *c))):
        raise SizeLimitError(f"layer '{kernel.name}': its cycle or byte counts overflow a float (accelsim counts "
                             f"them in 64-bit integers); use a smaller shape or faster hardware")
    ceil = math.ceil  # counts round up, forgiving float noise of 1e-6
    total = ceil(launch + end - 1e-6)
    if eh.host_floor > total and not kernel.absorbed:  # the host issues the next call no sooner than its floor
        floor = ceil(eh.host_floor - 1e-6)
        launch, total = launch + floor - total, floor
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
    stage = kernel.a_stage  # the name the stage between load and compute goes by in results
    kt = KernelTotals(total, compute, stall_memory, stall_decode, int(launch), ceil(c[tl.T_DRAM_A_VALUES] - 1e-6),
                     ceil(c[tl.T_DRAM_A_META] - 1e-6), ceil(c[tl.T_DRAM_B] - 1e-6),
                     ceil(c[tl.T_DRAM_C_READ] + c[tl.T_DRAM_C_WRITE] - 1e-6), ceil(c[tl.T_SRAM_A_VALUES] - 1e-6),
                     ceil(c[tl.T_SRAM_A_META] - 1e-6), ceil(c[tl.T_SRAM_B] - 1e-6), ceil(c[tl.T_SRAM_C] - 1e-6),
                     busy_memory, busy_decode, stage if ranked == 2 else BINDING_NAMES[ranked],
                     float(c[tl.T_GROUPS]), stage, stall_gat, busy_gather, gather_rows)
    cl.check_totals(kernel.name, kt)
    return kt


def _format_echo(kernel: Kernel, t: KernelTotals) -> dict:
    """What a non-native format's kernel ran as (issue 18), for its layer's ``tiling``: the datapath, rows kept
    (channel, with the named assumption about the next layer), A's stored share and index, the stage."""
    if not kernel.sparse or kernel.sparse_datapath:
        return {}
    out: dict = {"compute_on": kernel.compute_on}
    if kernel.rows_kept:
        out["rows_kept"] = kernel.rows_kept
        out["downstream_input"] = "not_shrunk"  # assumption: the next layer's k stays as written
    if kernel.load_sparse:
        out["a_density"] = round(kernel.a_density, 9)
        out["a_index"] = {"encoding": kernel.a_index, "bits_per_position": round(kernel.a_index_bits, 9)}
    if kernel.a_stage != "decode":
        out["stage"] = {"name": kernel.a_stage, "values": round(t.decode_groups, 3),
                        "per_cycle": kernel.a_stage_rate if math.isfinite(kernel.a_stage_rate) else "unlimited"}
    if kernel.compute_on == "vector":
        out["compute_macs_per_cycle"] = kernel.compute_rate
    return out


def _shape(kernel: Kernel) -> dict[str, int]:
    """A result's shape: the GEMM view (batch when > 1), a vector op's elements, both for a depthwise conv on the
    vector unit (its ``macs`` are m n k batch)."""
    gemm = {"m": kernel.m, "n": kernel.n, "k": kernel.k} | ({"batch": kernel.batch} if kernel.batch > 1 else {})
    if not kernel.vector:
        return gemm
    return {"elements": kernel.elements} | (gemm if kernel.m else {})


def _result(kernel: Kernel, t: KernelTotals, tiling: dict, peak: float, tiles: np.ndarray | None) -> KernelResult:
    """The KernelResult of ``kernel`` from its totals."""
    macs_exec = kernel.macs_executed
    tiling = {**tiling, **_format_echo(kernel, t)}
    if kernel.causal_q and kernel.op != "attention":  # an unfused causal group's op: eager computes it all
        tiling["causal"] = {"mask": "causal", "form": "unfused", "masked_after_full_product": True,
                            "kv_tiles_skipped": 0}
    return KernelResult(
        name=kernel.name, op=kernel.op,
        shape=_shape(kernel),
        path=kernel.path, pattern_requested=kernel.pattern_requested,
        pattern_executed=kernel.pattern_executed, reason=kernel.reason, padding=dict(kernel.padding),
        cycles=t.cycles(), macs=kernel.macs, macs_executed=macs_exec,
        utilization=(kernel.vector_ops if kernel.vector else macs_exec) / (t.total * peak) if t.total else 0.0,
        bytes={"dram": t.dram(), "sram": t.sram()}, binding=t.binding, busy=t.busy(), tiling=tiling,
        counts={"decode_groups": t.decode_groups, "vector_ops": float(kernel.vector_ops),
                **({"gather_rows": t.gather_rows} if t.gather_rows > 0 else {})},
        tiles=tiles,
    )
