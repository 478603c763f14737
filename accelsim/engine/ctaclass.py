"""One wave class of a CTA grid in one numba call: its DRAM columns, load rates and pipeline (``engine.ctagrid``).

The same float64 operations, element by element and in the same order, as the numpy steps they replaced
(DRAM columns, row tags, the multicast L2 share, ``tensorcore.load_rate`` and ``pipeline.run_pipeline_split``;
kept as the reference in tests/test_ctaclass.py), so every number is bit-identical; one call instead of some
fifteen small array operations per class, of which a kernel's candidate search runs hundreds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from accelsim.engine.pipeline import run_pipeline_split
from accelsim.engine.tensorcore import load_rate
from accelsim.engine.tiling import (
    T_DRAM_A_META,
    T_DRAM_A_VALUES,
    T_DRAM_B,
    T_DRAM_C_WRITE,
    T_FOLD_C,
    T_FOLD_R,
    T_SRAM_A_META,
    T_SRAM_A_VALUES,
    T_SRAM_B,
    T_SRAM_C,
)


@njit(cache=True)
def run_wave_class(base: np.ndarray, wave_class: int, count: int, fa: float, fb: float, fc: float, drain: float,
                   a_meta_share: float, stored_split: bool, cluster_m: int, cluster_n: int, active: int,
                   fill: float, l2_bw: float, dram_bw: float, write_back: bool, latency: float, dec_rate: float,
                   dec_lat: float, stages: int, g_rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(work, times, load rates) of one wave class whose CTAs run the k-loop ``base``.

    ``fa``/``fb``/``fc``: DRAM fractions of A, B and C; ``drain``: DRAM bytes of C write-back per load byte;
    ``stored_split``: DRAM holds A as stored (V:N:M, block), its metadata share ``a_meta_share``;
    ``cluster_m``/``cluster_n``: the CTAs an L2 read of B / A serves (TMA multicast)."""
    n = base.shape[0]
    work = base.copy()
    step = np.empty(n, dtype=np.float64)
    share = np.empty(n, dtype=np.float64)
    l2_share = np.empty(n, dtype=np.float64)
    for i in range(n):
        row = work[i]
        row[T_DRAM_A_VALUES] = row[T_SRAM_A_VALUES] * fa
        row[T_DRAM_A_META] = row[T_SRAM_A_META] * fa
        row[T_DRAM_B] = row[T_SRAM_B] * fb
        row[T_DRAM_C_WRITE] = row[T_SRAM_C] * fc
        if stored_split:
            a_dram = row[T_DRAM_A_VALUES] + row[T_DRAM_A_META]
            row[T_DRAM_A_META] = a_dram * a_meta_share
            row[T_DRAM_A_VALUES] = a_dram - row[T_DRAM_A_META]
        row[T_FOLD_R] = wave_class
        row[T_FOLD_C] = count
        step_a = row[T_SRAM_A_VALUES] + row[T_SRAM_A_META]
        s = step_a + row[T_SRAM_B]
        step[i] = s
        from_dram = row[T_DRAM_A_VALUES] + row[T_DRAM_A_META] + row[T_DRAM_B]
        share[i] = (from_dram / s if s > 0 else 0.0) + drain
        l2 = step_a / cluster_n + row[T_SRAM_B] / cluster_m
        l2_share[i] = l2 / s if s > 0 else 1.0
    bw = load_rate(step, share, l2_share, active, fill, l2_bw, dram_bw)
    xfer = work.copy()
    c_store = np.empty(n, dtype=np.float64)
    for i in range(n):
        xfer[i, T_DRAM_A_VALUES] = work[i, T_SRAM_A_VALUES]
        xfer[i, T_DRAM_A_META] = work[i, T_SRAM_A_META]
        xfer[i, T_DRAM_B] = work[i, T_SRAM_B]
        xfer[i, T_DRAM_C_WRITE] = work[i, T_SRAM_C]
        c_store[i] = work[i, T_SRAM_C]
    wb_bw = load_rate(c_store, np.full(n, 0.0 if write_back else fc), np.ones(n), active, fill, l2_bw, dram_bw)
    times = run_pipeline_split(xfer, bw, wb_bw, latency, dec_rate, dec_lat, stages, 0.0, g_rate)
    return work, times, bw
