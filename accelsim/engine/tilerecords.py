"""Per-tile records (``results.TILE_DTYPE``) filled from a segment's work and timing arrays in one compiled pass.

Filling the structured array field by field from Python cost about 30 numpy calls per segment, whatever its
length (most of a small kernel's simulation); this writes the same values row by row: the same float sums,
the same float-to-integer truncation as numpy's casts of the in-range counts and codes these are.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from accelsim.engine import pipeline as pl
from accelsim.engine import tiling as tl


@njit(cache=True)
def fill_records(rec: np.ndarray, start: int, work: np.ndarray, times: np.ndarray, offset: float, folds: bool,
                 wave_class: int, count: int, active: int) -> None:
    """Rows ``start`` .. ``start + len(work)`` of ``rec`` from one segment: its tiles' work (``tl.T_*`` columns)
    and times (``pl.P_*`` columns) shifted by ``offset``; ``folds``: the fold indices are recorded (else 0)."""
    for r in range(work.shape[0]):
        w = work[r]
        t = times[r]
        o = rec[start + r]
        o.tile = start + r
        if folds:
            o.fold_r = np.int32(w[tl.T_FOLD_R])
            o.fold_c = np.int32(w[tl.T_FOLD_C])
        else:
            o.fold_r = 0
            o.fold_c = 0
        o.chunk = np.int32(w[tl.T_CHUNK])
        o.wave_class = wave_class
        o.wave_count = count
        o.active_cores = active
        o.load_start = t[pl.P_LOAD_START] + offset
        o.load_end = t[pl.P_LOAD_END] + offset
        o.decode_start = t[pl.P_DECODE_START] + offset
        o.decode_end = t[pl.P_DECODE_END] + offset
        o.compute_start = t[pl.P_COMPUTE_START] + offset
        o.compute_end = t[pl.P_COMPUTE_END] + offset
        o.wb_start = t[pl.P_WB_START] + offset
        o.wb_end = t[pl.P_WB_END] + offset
        o.gather_start = t[pl.P_GATHER_START] + offset
        o.gather_end = t[pl.P_GATHER_END] + offset
        o.stall_memory = t[pl.P_STALL_MEMORY]
        o.stall_decode = t[pl.P_STALL_DECODE]
        o.stall_gather = t[pl.P_STALL_GATHER]
        o.binding = np.int8(t[pl.P_BINDING])
        o.compute_cycles = w[tl.T_CYCLES]
        o.decode_groups = w[tl.T_GROUPS]
        o.dram_a_values = w[tl.T_DRAM_A_VALUES]
        o.dram_a_metadata = w[tl.T_DRAM_A_META]
        o.dram_b = w[tl.T_DRAM_B]
        o.dram_c_read = w[tl.T_DRAM_C_READ]
        o.dram_c_write = w[tl.T_DRAM_C_WRITE]
        o.sram_a_values = w[tl.T_SRAM_A_VALUES]
        o.sram_a_metadata = w[tl.T_SRAM_A_META]
        o.sram_b = w[tl.T_SRAM_B]
        o.sram_c = w[tl.T_SRAM_C]
        o.gather_rows = w[tl.T_GATHER]
