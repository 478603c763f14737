"""Lean per-kernel summaries for design-space sweeps.

A sweep needs, per kernel, only the scalars a model total is built from: cycles by cause,
DRAM bytes by tensor and the binding resource. :func:`accelsim.engine.simulate` also builds
per-tile records, tiling dicts and a ``KernelResult``, which costs ~0.1-0.4 ms of Python per
call. Here one numba call per kernel generates the tiles (``tiling.systolic_tiles``), runs the
pipeline (``pipeline.run_pipeline``) and reduces the arrays; Python then repeats
``engine._assemble``'s arithmetic on those sums.

Equality with :func:`accelsim.engine.simulate` is exact, not approximate: the reductions
reproduce numpy's (``_np_sum`` is numpy's pairwise summation for 1-D sums; an ``axis=0`` sum of a
C-ordered array is a sequential sum over rows in numpy), so every float, and so every
rounded integer, is bit-identical. ``tests/test_sweep.py`` checks whole sweep rows against the
``run()`` path.

Systolic and vector kernels take the lean path; tensor-core kernels (CTA-tile search over wave
classes) call :func:`accelsim.engine.simulate` and keep its scalars. An infeasible kernel is
re-run through ``simulate`` so the InfeasibleError (and its text) is exactly the engine's.

Everything a summary depends on is in :class:`LeanHardware` (derived once per hardware point)
and the kernel's ``cache_key()``, so ``(LeanHardware.key(kernel), kernel.cache_key())`` is a
complete cache key for :func:`summarize`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from ..hardware import Hardware
from ..lowering import Kernel
from ..results import BINDING_NAMES
from . import pipeline as pl
from . import simulate
from . import tiling as tl
from .classes import TILE_CAP, systolic_tile_count

__all__ = ["LeanHardware", "Summary", "summarize", "summary_from_result", "BINDING_NAMES"]

# A kernel summary: (total, compute, stall_memory, stall_decode, launch,
#                    dram_a_values, dram_a_metadata, dram_b, dram_c, binding index into BINDING_NAMES,
#                    sram_a_values, sram_a_metadata, sram_b, sram_c, decode groups)
Summary = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int, float]

_R_END, _R_CYCLES, _R_STALL_DEC, _R_MOVED, _R_WB, _R_GROUPS = 0, 1, 2, 3, 4, 5
_R_A_VALUES, _R_A_META, _R_B, _R_C_READ, _R_C_WRITE = 6, 7, 8, 9, 10
_R_SRAM_A_VALUES, _R_SRAM_A_META, _R_SRAM_B, _R_SRAM_C, _R_GROUPS_SEQ = 11, 12, 13, 14, 15
_N_RAW = 16
_INF = math.inf


@njit(cache=True)
def _pairwise_leaf(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's unrolled block sum for n <= 128 (``DOUBLE_pairwise_sum``'s base cases)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _np_sum(a: np.ndarray) -> float:
    """``a.sum()`` of a 1-D float64 array exactly as numpy computes it (pairwise summation).

    numpy splits n > 128 into halves (the first rounded down to a multiple of 8) and adds the two
    sums; this walks the same tree without recursion (numba cannot cache recursive functions).
    """
    n_all = a.shape[0]
    if n_all <= 128:
        return _pairwise_leaf(a, 0, n_all)
    lo_s = np.empty(128, dtype=np.int64)
    n_s = np.empty(128, dtype=np.int64)
    stage = np.empty(128, dtype=np.int64)
    vals = np.empty(128, dtype=np.float64)
    sp = 1
    lo_s[0] = 0
    n_s[0] = n_all
    stage[0] = 0
    vp = 0
    while sp > 0:
        t = sp - 1
        lo = lo_s[t]
        n = n_s[t]
        if n <= 128:
            vals[vp] = _pairwise_leaf(a, lo, n)
            vp += 1
            sp -= 1
            continue
        n2 = n // 2
        n2 -= n2 % 8
        if stage[t] == 0:
            stage[t] = 1
            lo_s[sp] = lo
            n_s[sp] = n2
            stage[sp] = 0
            sp += 1
        elif stage[t] == 1:
            stage[t] = 2
            lo_s[sp] = lo + n2
            n_s[sp] = n - n2
            stage[sp] = 0
            sp += 1
        else:
            right = vals[vp - 1]
            left = vals[vp - 2]
            vp -= 2
            vals[vp] = left + right
            vp += 1
            sp -= 1
    return vals[0]


@njit(cache=True)
def _reduce(work: np.ndarray, times: np.ndarray, busy_latency: float) -> np.ndarray:
    """The sums ``engine._assemble`` takes of one segment (work: bytes/cycles, times: the pipeline)."""
    n = work.shape[0]
    out = np.zeros(_N_RAW, dtype=np.float64)
    if n == 0:
        return out
    end = times[0, pl.P_COMPUTE_END]
    for i in range(n):
        end = max(end, times[i, pl.P_COMPUTE_END])
    wb_max = times[0, pl.P_WB_END]
    for i in range(n):
        wb_max = max(wb_max, times[i, pl.P_WB_END])
    out[_R_END] = max(end, wb_max)
    col = np.empty(n, dtype=np.float64)
    for i in range(n):
        col[i] = work[i, tl.T_CYCLES]
    out[_R_CYCLES] = _np_sum(col)
    for i in range(n):
        col[i] = times[i, pl.P_STALL_DECODE]
    out[_R_STALL_DEC] = _np_sum(col)
    for i in range(n):
        moved = times[i, pl.P_LOAD_END] - times[i, pl.P_LOAD_START]
        v = moved - busy_latency if moved > 0 else 0.0
        col[i] = v if v > 0.0 else 0.0  # np.where(...).clip(min=0)
    out[_R_MOVED] = _np_sum(col)
    for i in range(n):
        col[i] = times[i, pl.P_WB_END] - times[i, pl.P_WB_START]
    out[_R_WB] = _np_sum(col)
    for i in range(n):
        col[i] = work[i, tl.T_GROUPS]
    out[_R_GROUPS] = _np_sum(col)
    # work.sum(axis=0) in engine._assemble is a sequential sum over rows: do the same, in one pass
    sums = np.zeros(10)
    cols = (tl.T_DRAM_A_VALUES, tl.T_DRAM_A_META, tl.T_DRAM_B, tl.T_DRAM_C_READ, tl.T_DRAM_C_WRITE,
            tl.T_SRAM_A_VALUES, tl.T_SRAM_A_META, tl.T_SRAM_B, tl.T_SRAM_C, tl.T_GROUPS)
    for i in range(n):
        for j in range(10):
            sums[j] += work[i, cols[j]]
    out[_R_A_VALUES] = sums[0]
    out[_R_A_META] = sums[1]
    out[_R_B] = sums[2]
    out[_R_C_READ] = sums[3]
    out[_R_C_WRITE] = sums[4]
    out[_R_SRAM_A_VALUES] = sums[5]
    out[_R_SRAM_A_META] = sums[6]
    out[_R_SRAM_B] = sums[7]
    out[_R_SRAM_C] = sums[8]
    g = sums[9]
    out[_R_GROUPS_SEQ] = g
    return out


@njit(cache=True)
def _systolic_raw(rows: int, cols: int, dataflow: int, serial_drain: bool, m: int, n: int, k: int, keep: int,
                  group: int, elem_bytes: float, meta_bits: float, acc_bytes: float, chunk: int,
                  b_dram_scale: float, a_resident: bool, b_resident: bool, c_resident: bool, sparse: bool,
                  fill: float, latency: float, decode_rate: float, decode_latency: float,
                  n_stages: int) -> np.ndarray:
    work = tl.systolic_tiles(rows, cols, dataflow, serial_drain, m, n, k, keep, group, elem_bytes, meta_bits,
                             acc_bytes, chunk, b_dram_scale, a_resident, b_resident, c_resident, sparse)
    bw = np.full(work.shape[0], fill)
    times = pl.run_pipeline(work, bw, latency, decode_rate, decode_latency, n_stages, 0.0)
    return _reduce(work, times, latency)


@njit(cache=True)
def _vector_raw(n_tiles: int, col_in: int, sram_in: int, in_l2: bool, in_bytes: float, out_bytes: float,
                cycles: float, rate: float, pipe_latency: float, busy_latency: float) -> np.ndarray:
    work = np.zeros((n_tiles, tl.N_TILE_COLS))
    for i in range(n_tiles):
        work[i, tl.T_CHUNK] = i
        work[i, sram_in] = in_bytes
        work[i, tl.T_SRAM_C] = out_bytes
        work[i, tl.T_CYCLES] = cycles
    xfer = work.copy()
    for i in range(n_tiles):
        xfer[i, col_in] = work[i, sram_in]
        xfer[i, tl.T_DRAM_C_WRITE] = work[i, tl.T_SRAM_C]
    if not in_l2:
        for i in range(n_tiles):
            work[i, col_in] = work[i, sram_in]
            work[i, tl.T_DRAM_C_WRITE] = work[i, tl.T_SRAM_C]
    bw = np.full(n_tiles, rate)
    times = pl.run_pipeline(xfer, bw, pipe_latency, np.inf, 0.0, 2, 0.0)
    return _reduce(work, times, busy_latency)


def _ceil(x: float) -> int:
    return int(math.ceil(x - 1e-6))


def _finish(raw: np.ndarray, count: int, launch: int, decode_rate: float) -> Summary:
    """``engine._assemble`` on one segment's sums (run ``count`` times on one core)."""
    r = raw.tolist()
    end = launch + count * r[_R_END]
    total = _ceil(end)
    compute = int(round(count * r[_R_CYCLES]))
    stall_decode = int(round(count * r[_R_STALL_DEC]))
    stall_memory = max(0, total - compute - launch - stall_decode)
    if stall_memory == 0:
        total = compute + launch + stall_decode
    a_values = _ceil(count * r[_R_A_VALUES])
    a_meta = _ceil(count * r[_R_A_META])
    b = _ceil(count * r[_R_B])
    c = _ceil(count * r[_R_C_READ] + count * r[_R_C_WRITE])
    memory_busy = 0.0 + count * (r[_R_MOVED] + r[_R_WB])
    decode_busy = 0.0
    if math.isfinite(decode_rate):
        decode_busy += count * r[_R_GROUPS] / decode_rate
    busy = (compute, _ceil(memory_busy), _ceil(decode_busy), int(launch))
    ranked = max(range(4), key=lambda i: (busy[i], -i))
    return (total, compute, stall_memory, stall_decode, int(launch), a_values, a_meta, b, c, ranked,
            _ceil(count * r[_R_SRAM_A_VALUES]), _ceil(count * r[_R_SRAM_A_META]), _ceil(count * r[_R_SRAM_B]),
            _ceil(count * r[_R_SRAM_C]), float(count * r[_R_GROUPS_SEQ]))


def summary_from_result(res: Any) -> Summary:
    """The Summary of a ``KernelResult`` (from :func:`accelsim.engine.simulate`)."""
    c, d, s = res.cycles, res.bytes["dram"], res.bytes["sram"]
    return (c["total"], c["compute"], c["stall_memory"], c["stall_decode"], c["launch"], d["a_values"],
            d["a_metadata"], d["b"], d["c"], BINDING_NAMES.index(res.binding), s["a_values"], s["a_metadata"],
            s["b"], s["c"], float(res.counts.get("decode_groups", 0.0)))


def _rate(value: object) -> float:
    return _INF if value == "unlimited" else float(value)  # type: ignore[arg-type]


class LeanHardware:
    """The scalars the engine reads from a Hardware, derived once per hardware point."""

    def __init__(self, hw: Hardware, source: str = "<hardware>") -> None:
        self.hw = hw
        self.source = source
        comp = hw.core.compute
        sram = hw.core.sram
        self.systolic = comp.kind == "systolic"
        self.fill = hw.fill_bytes_per_cycle()
        self.latency = hw.dram_latency_cycles()
        spec = hw.core.sparse
        self.decode_rate = _rate(spec.decode_groups_per_cycle) if spec is not None else _INF
        self.decode_latency = float(spec.decode_latency_cycles) if spec is not None else 0.0
        self.launch_dense = hw.launch_overhead_cycles.dense
        self.launch_sparse = hw.launch_overhead_cycles.sparse
        # vector unit
        fill_all = self.fill * hw.cores
        if hw.l2 is not None:
            fill_all = min(fill_all, hw.l2.bandwidth_bytes_per_cycle)
        self.vec_fill = fill_all
        self.vec_dram = hw.dram_bytes_per_cycle()
        self.vec_rate_dram = min(fill_all, self.vec_dram)
        self.l2_bytes = hw.l2.bytes if hw.l2 is not None else None
        self.l2_activations = hw.activations == "l2_if_fits" and hw.l2 is not None
        self.vec_ops = hw.vector.ops_per_cycle
        self.vec_launch = hw.vector.launch_overhead_cycles
        vec_key = ("vector", self.vec_fill, self.vec_dram, self.l2_bytes, self.l2_activations, self.vec_ops,
                   self.vec_launch, self.latency)
        if self.systolic:
            self.rows, self.cols = comp.rows, comp.cols
            self.dataflow = comp.dataflow
            self.dataflow_code = tl.DATAFLOW_CODE[comp.dataflow]
            self.serial = comp.output_drain == "serial"
            self.acc = comp.accumulator_bytes
            self.caps = sram.buffer_bytes()
            self.double_buffered = sram.double_buffered
            self.on_chip = sram.im2col == "on_chip"
            self.stages = sram.n_stages()
            base = ("systolic", self.rows, self.cols, self.dataflow, self.serial, self.acc,
                    tuple(sorted(self.caps.items())), self.double_buffered, self.on_chip, self.stages, self.fill,
                    self.latency)
            self._keys = {"dense": base + (self.launch_dense,),
                          "sparse": base + (self.launch_sparse, self.decode_rate, self.decode_latency),
                          "vector": vec_key}
        else:  # tensor cores: the engine reads much of the config; key on all of it but energy and names
            data = hw.to_dict()
            data.pop("energy", None)
            data.pop("name", None)
            whole = ("tensor_core", repr(sorted(data.items())))
            self._keys = {"dense": whole, "sparse": whole, "vector": vec_key}

    def key(self, kernel: Kernel) -> tuple:
        """Everything of this hardware the kernel's summary depends on."""
        return self._keys[kernel.path]


def _systolic(kernel: Kernel, lh: LeanHardware) -> Summary:
    b_elements = kernel.b_elements if lh.on_chip else kernel.k * kernel.n
    plan = tl.systolic_plan(lh.rows, lh.cols, lh.dataflow, kernel.m, kernel.n, kernel.k, kernel.keep_n,
                            kernel.group_m, kernel.dtype_bytes, kernel.metadata_bits, lh.acc, lh.caps,
                            lh.double_buffered, b_elements)
    if "infeasible" in plan:
        simulate(kernel, lh.hw, lh.source, keep_tiles=False)  # raises the engine's own InfeasibleError
        raise AssertionError("engine accepted a kernel the plan rejects")  # pragma: no cover
    if systolic_tile_count(lh.rows, lh.cols, lh.dataflow_code, kernel.m, kernel.n, kernel.k, kernel.keep_n,
                           kernel.group_m, int(plan["chunk"])) > TILE_CAP:  # the engine's class-extrapolated path
        return summary_from_result(simulate(kernel, lh.hw, lh.source, keep_tiles=False))
    sparse = kernel.sparse
    dec_rate, dec_lat = (lh.decode_rate, lh.decode_latency) if sparse else (_INF, 0.0)
    raw = _systolic_raw(lh.rows, lh.cols, lh.dataflow_code, lh.serial, kernel.m, kernel.n, kernel.k,
                        kernel.keep_n, kernel.group_m, float(kernel.dtype_bytes), float(kernel.metadata_bits),
                        float(lh.acc), int(plan["chunk"]), b_elements / (kernel.k * kernel.n),
                        bool(plan["a_resident"]), bool(plan["b_resident"]), bool(plan["c_resident"]), sparse,
                        lh.fill, lh.latency, dec_rate, dec_lat, lh.stages)
    launch = lh.launch_sparse if sparse else lh.launch_dense
    return _finish(raw, kernel.batch, launch, dec_rate)


def _vector(kernel: Kernel, lh: LeanHardware) -> Summary:
    total_bytes = kernel.read_bytes + kernel.write_bytes
    n_tiles = int(min(64, max(1, -(-total_bytes // 65536))))
    embedding = kernel.op == "embedding"
    col_in = tl.T_DRAM_A_VALUES if embedding else tl.T_DRAM_B
    sram_in = tl.T_SRAM_A_VALUES if embedding else tl.T_SRAM_B
    in_l2 = lh.l2_activations and not embedding and total_bytes <= lh.l2_bytes  # type: ignore[operator]
    rate = lh.vec_fill if in_l2 else lh.vec_rate_dram
    raw = _vector_raw(n_tiles, col_in, sram_in, in_l2, kernel.read_bytes / n_tiles, kernel.write_bytes / n_tiles,
                      kernel.vector_ops / lh.vec_ops / n_tiles, rate, 0.0 if in_l2 else lh.latency, lh.latency)
    return _finish(raw, 1, lh.vec_launch, _INF)


def summarize(kernel: Kernel, lh: LeanHardware) -> Summary:
    """The Summary of ``kernel`` on ``lh``; equal to ``summary_from_result(simulate(kernel, hw))``.

    Raises InfeasibleError exactly as :func:`accelsim.engine.simulate` does.
    """
    if kernel.vector:
        return _vector(kernel, lh)
    if lh.systolic:
        return _systolic(kernel, lh)
    return summary_from_result(simulate(kernel, lh.hw, lh.source, keep_tiles=False))
