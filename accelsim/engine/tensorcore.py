"""GPU-like parts: output CTA tiles spread over cores in waves, each CTA a k-loop of tiles.

A GEMM is cut into CTA tiles (BM x BN); CTAs are issued in waves of ``cores * ctas_per_core``
(m-index fastest, as blockIdx.x). Each CTA runs its k-loop through the same tile pipeline
as a systolic part: every k-step loads an A tile (compressed values + metadata) and a B tile
into shared memory, decodes metadata, and runs BM*BN*BK MACs on the tensor cores. Active
cores share L2 and DRAM bandwidth; A/B blocks used by several CTAs are read from DRAM once
per wave (L2 reuse), or once per kernel when the operands fit in L2. Waves with identical
parameters are simulated once and counted.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .tiling import (
    N_TILE_COLS,
    T_CHUNK,
    T_CYCLES,
    T_FOLD_C,
    T_FOLD_R,
    T_GROUPS,
    T_SRAM_A_META,
    T_SRAM_A_VALUES,
    T_SRAM_B,
    T_SRAM_C,
)


@njit(cache=True)
def cta_k_loop(bm: int, bn: int, bk: int, k_total: int, keep: int, group: int, mma_k: int,
               elem_bytes: float, meta_bits: float, c_bytes: float, macs_per_cycle: float,
               sparse: bool) -> np.ndarray:
    """Per-tile work of one CTA: one row per k-step (SRAM bytes, cycles, decode groups)."""
    steps = -(-k_total // bk)
    out = np.zeros((steps, N_TILE_COLS), dtype=np.float64)
    for s in range(steps):
        k0 = s * bk
        kl = min(bk, k_total - k0)
        k_exec = -(-kl // mma_k) * mma_k  # a partial step still issues whole MMA k-slices
        kc = -(-kl // group) * keep  # compressed values per A row
        row = out[s]
        row[T_CHUNK] = s
        row[T_SRAM_A_VALUES] = bm * kc * elem_bytes
        if sparse:
            row[T_SRAM_A_META] = bm * kc * meta_bits / 8.0
            row[T_GROUPS] = bm * (-(-kl // group))
        row[T_SRAM_B] = kl * bn * elem_bytes
        row[T_CYCLES] = bm * bn * k_exec / macs_per_cycle
        if s == steps - 1:
            row[T_SRAM_C] = c_bytes
    return out


def wave_classes(grid_m: int, grid_n: int, slots: int, a_block: float, b_block: float,
                 all_fit_l2: bool, wave_fits_l2: bool) -> list[tuple[int, float, float, int, int]]:
    """Distinct waves as (active CTAs, DRAM bytes of A, DRAM bytes of B, count, first wave index)."""
    ctas = grid_m * grid_n
    waves = -(-ctas // slots)
    s = np.arange(waves, dtype=np.int64) * slots
    e = np.minimum(s + slots, ctas)
    active = e - s
    if all_fit_l2:  # every block comes from DRAM once: the first time any CTA touches it
        def seen_m(x: np.ndarray) -> np.ndarray:
            return np.minimum(grid_m, x)

        def seen_n(x: np.ndarray) -> np.ndarray:
            return np.where(x > 0, (x - 1) // grid_m + 1, 0)

        new_m = seen_m(e) - seen_m(s)
        new_n = seen_n(e) - seen_n(s)
    elif wave_fits_l2:  # blocks shared inside a wave are read once per wave
        new_m = np.minimum(grid_m, active)
        new_n = (e - 1) // grid_m - s // grid_m + 1
    else:  # no reuse: every CTA reads its own blocks
        new_m = active.copy()
        new_n = active.copy()
    keys = np.stack([active, new_m, new_n], axis=1)
    uniq, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    return [(int(uniq[i, 0]), float(uniq[i, 1]) * a_block, float(uniq[i, 2]) * b_block, int(counts[i]),
             int(first[i])) for i in order]


def load_rate(step_bytes: float, dram_share: float, active: int, fill_bw: float, l2_bw: float,
              dram_bw: float) -> float:
    """Bytes/cycle one CTA's transfers get when ``active`` CTAs share L2 and DRAM."""
    if step_bytes <= 0:
        return math.inf
    t = step_bytes / fill_bw
    if math.isfinite(l2_bw):
        t = max(t, active * step_bytes / l2_bw)
    if math.isfinite(dram_bw):
        t = max(t, active * step_bytes * dram_share / dram_bw)
    return step_bytes / t if t > 0 else math.inf


def fill_dram_columns(work: np.ndarray, fa: float, fb: float, fc: float) -> None:
    """Set a CTA's DRAM byte columns from its SRAM bytes and the wave's DRAM fractions."""
    from .tiling import T_DRAM_A_META, T_DRAM_A_VALUES, T_DRAM_B, T_DRAM_C_WRITE

    work[:, T_DRAM_A_VALUES] = work[:, T_SRAM_A_VALUES] * fa
    work[:, T_DRAM_A_META] = work[:, T_SRAM_A_META] * fa
    work[:, T_DRAM_B] = work[:, T_SRAM_B] * fb
    work[:, T_DRAM_C_WRITE] = work[:, T_SRAM_C] * fc


def tag_rows(work: np.ndarray, wave_class: int, count: int) -> None:
    work[:, T_FOLD_R] = wave_class
    work[:, T_FOLD_C] = count
