"""The numba hot path: tile generation and the tile pipeline. ``simulate`` is its entry point."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InfeasibleError
from ..hardware import Hardware
from ..lowering import Kernel
from ..results import BINDING_NAMES, TILE_DTYPE, KernelResult
from . import pipeline as pl
from . import tiling as tl

__all__ = ["simulate", "SOURCE_UNKNOWN"]

SOURCE_UNKNOWN = "<hardware>"


def _rate(value: object) -> float:
    return float("inf") if value == "unlimited" else float(value)  # type: ignore[arg-type]


def _tile_records(work: np.ndarray, times: np.ndarray) -> np.ndarray:
    rec = np.zeros(work.shape[0], dtype=TILE_DTYPE)
    rec["tile"] = np.arange(work.shape[0])
    rec["fold_r"] = work[:, tl.T_FOLD_R]
    rec["fold_c"] = work[:, tl.T_FOLD_C]
    rec["chunk"] = work[:, tl.T_CHUNK]
    for name, col in (("load_start", pl.P_LOAD_START), ("load_end", pl.P_LOAD_END),
                      ("decode_start", pl.P_DECODE_START), ("decode_end", pl.P_DECODE_END),
                      ("compute_start", pl.P_COMPUTE_START), ("compute_end", pl.P_COMPUTE_END),
                      ("wb_start", pl.P_WB_START), ("wb_end", pl.P_WB_END),
                      ("stall_memory", pl.P_STALL_MEMORY), ("stall_decode", pl.P_STALL_DECODE)):
        rec[name] = times[:, col]
    rec["binding"] = times[:, pl.P_BINDING]
    for name, col in (("compute_cycles", tl.T_CYCLES), ("decode_groups", tl.T_GROUPS),
                      ("dram_a_values", tl.T_DRAM_A_VALUES), ("dram_a_metadata", tl.T_DRAM_A_META),
                      ("dram_b", tl.T_DRAM_B), ("dram_c_read", tl.T_DRAM_C_READ),
                      ("dram_c_write", tl.T_DRAM_C_WRITE), ("sram_a_values", tl.T_SRAM_A_VALUES),
                      ("sram_a_metadata", tl.T_SRAM_A_META), ("sram_b", tl.T_SRAM_B),
                      ("sram_c", tl.T_SRAM_C)):
        rec[name] = work[:, col]
    return rec


def _round_bytes(x: float) -> int:
    return int(math.ceil(x - 1e-6))


def simulate(kernel: Kernel, hw: Hardware, source: str = SOURCE_UNKNOWN, keep_tiles: bool = True) -> KernelResult:
    """Simulate one kernel on ``hw``, tile by tile; raises InfeasibleError if no tile fits."""
    comp = hw.core.compute
    sram = hw.core.sram
    caps = sram.buffer_bytes()
    sparse = kernel.sparse
    b_elements = kernel.b_elements if sram.im2col == "on_chip" else kernel.k * kernel.n
    b_scale = b_elements / (kernel.k * kernel.n)
    plan = tl.systolic_plan(comp.rows, comp.cols, comp.dataflow, kernel.m, kernel.n, kernel.k,
                            kernel.keep_n, kernel.group_m, kernel.dtype_bytes, kernel.metadata_bits,
                            comp.accumulator_bytes, caps, sram.double_buffered, b_elements)
    if "infeasible" in plan:
        buf, need, have = plan["infeasible"]
        half = " per half, double-buffered" if sram.double_buffered else ""
        raise InfeasibleError(source, sram.buffer_key(buf),
                              f"SRAM too small for the smallest tile of layer '{kernel.name}' "
                              f"({kernel.m}x{kernel.n}x{kernel.k}, {kernel.pattern_executed or 'dense'}): "
                              f"needs {need} bytes in the {buf} buffer, has {have}{half}",
                              kernel.name)
    work = tl.systolic_tiles(comp.rows, comp.cols, tl.DATAFLOW_CODE[comp.dataflow],
                             comp.output_drain == "serial", kernel.m, kernel.n, kernel.k,
                             kernel.keep_n, kernel.group_m, float(kernel.dtype_bytes),
                             float(kernel.metadata_bits), float(comp.accumulator_bytes), int(plan["chunk"]), b_scale,
                             bool(plan["a_resident"]), bool(plan["b_resident"]), bool(plan["c_resident"]),
                             sparse)
    launch = hw.launch_overhead_cycles.sparse if sparse else hw.launch_overhead_cycles.dense
    bw = hw.fill_bytes_per_cycle()
    spec = hw.core.sparse
    decode_rate = _rate(spec.decode_groups_per_cycle) if (sparse and spec) else float("inf")
    decode_lat = float(spec.decode_latency_cycles) if (sparse and spec) else 0.0
    times = pl.run_pipeline(work, bw, hw.dram_latency_cycles(), decode_rate, decode_lat,
                            2 if sram.double_buffered else 1, float(launch))
    return _assemble(kernel, hw, work, times, launch, bw, decode_rate, plan, keep_tiles)


def _assemble(kernel: Kernel, hw: Hardware, work: np.ndarray, times: np.ndarray, launch: int, bw: float,
              decode_rate: float, plan: dict, keep_tiles: bool) -> KernelResult:
    comp = hw.core.compute
    end = float(max(times[:, pl.P_COMPUTE_END].max(), times[:, pl.P_WB_END].max())) if len(work) else float(launch)
    total = int(math.ceil(end - 1e-6))
    compute = int(round(work[:, tl.T_CYCLES].sum()))
    stall_decode = int(round(times[:, pl.P_STALL_DECODE].sum()))
    stall_memory = max(0, total - compute - launch - stall_decode)
    col = work.sum(axis=0)
    dram = {"a_values": _round_bytes(col[tl.T_DRAM_A_VALUES]), "a_metadata": _round_bytes(col[tl.T_DRAM_A_META]),
            "b": _round_bytes(col[tl.T_DRAM_B]),
            "c": _round_bytes(col[tl.T_DRAM_C_READ] + col[tl.T_DRAM_C_WRITE])}
    sram_b = {"a_values": _round_bytes(col[tl.T_SRAM_A_VALUES]), "a_metadata": _round_bytes(col[tl.T_SRAM_A_META]),
              "b": _round_bytes(col[tl.T_SRAM_B]), "c": _round_bytes(col[tl.T_SRAM_C])}
    dram_bytes = sum(col[c] for c in (tl.T_DRAM_A_VALUES, tl.T_DRAM_A_META, tl.T_DRAM_B,
                                      tl.T_DRAM_C_READ, tl.T_DRAM_C_WRITE))
    dram_busy = dram_bytes / bw if math.isfinite(bw) else 0.0
    decode_busy = col[tl.T_GROUPS] / decode_rate if math.isfinite(decode_rate) else 0.0
    busy = {"compute": compute, "dram": int(math.ceil(dram_busy - 1e-9)),
            "decode": int(math.ceil(decode_busy - 1e-9)), "launch": int(launch)}
    ranked = max(range(4), key=lambda i: (busy[("compute", "dram", "decode", "launch")[i]], -i))
    binding = BINDING_NAMES[ranked]
    pes = comp.rows * comp.cols
    macs_exec = kernel.macs_executed
    return KernelResult(
        name=kernel.name, op=kernel.op, shape={"m": kernel.m, "n": kernel.n, "k": kernel.k},
        path=kernel.path, pattern_requested=kernel.pattern_requested,
        pattern_executed=kernel.pattern_executed, reason=kernel.reason, padding=dict(kernel.padding),
        cycles={"total": total, "compute": compute, "stall_memory": stall_memory,
                "stall_decode": stall_decode, "launch": int(launch)},
        macs=kernel.macs, macs_executed=macs_exec,
        utilization=macs_exec / (total * pes) if total else 0.0,
        bytes={"dram": dram, "sram": sram_b}, binding=binding, busy=busy,
        tiling={"tiles": int(len(work)), "chunk": int(plan["chunk"]),
                "folds": int(len(np.unique(work[:, tl.T_FOLD_R] * 1e6 + work[:, tl.T_FOLD_C]))) if len(work) else 0,
                "a_resident": bool(plan["a_resident"]), "b_resident": bool(plan["b_resident"]),
                "c_resident": bool(plan["c_resident"])},
        tiles=_tile_records(work, times) if keep_tiles else None,
    )
