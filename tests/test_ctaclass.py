"""engine.ctaclass: one wave class in one numba call, bit-identical to the numpy steps it stands for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accelsim.engine import ctaclass as cc
from accelsim.engine import pipeline as pl
from accelsim.engine import tensorcore as tc
from accelsim.engine import tiling as tl


def _reference(base: np.ndarray, idx: int, count: int, fa: float, fb: float, fc: float, drain: float,
               a_meta_share: float, stored: bool, cm: int, cn: int, active: int, fill: float, l2_bw: float,
               dram_bw: float, write_back: bool, latency: float, dec_rate: float, dec_lat: float, stages: int,
               g_rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The array steps ``engine.ctagrid`` ran per wave class before ``run_wave_class``."""
    work = base.copy()
    work[:, tl.T_DRAM_A_VALUES] = work[:, tl.T_SRAM_A_VALUES] * fa
    work[:, tl.T_DRAM_A_META] = work[:, tl.T_SRAM_A_META] * fa
    work[:, tl.T_DRAM_B] = work[:, tl.T_SRAM_B] * fb
    work[:, tl.T_DRAM_C_WRITE] = work[:, tl.T_SRAM_C] * fc
    if stored:
        a_dram = work[:, tl.T_DRAM_A_VALUES] + work[:, tl.T_DRAM_A_META]
        work[:, tl.T_DRAM_A_META] = a_dram * a_meta_share
        work[:, tl.T_DRAM_A_VALUES] = a_dram - work[:, tl.T_DRAM_A_META]
    tc.tag_rows(work, idx, count)
    step_a = work[:, tl.T_SRAM_A_VALUES] + work[:, tl.T_SRAM_A_META]
    step = step_a + work[:, tl.T_SRAM_B]
    from_dram = work[:, tl.T_DRAM_A_VALUES] + work[:, tl.T_DRAM_A_META] + work[:, tl.T_DRAM_B]
    share = np.divide(from_dram, step, out=np.zeros_like(step), where=step > 0) + drain
    l2 = step_a / cn + work[:, tl.T_SRAM_B] / cm  # TMA multicast: one L2 read serves the cluster row / column
    bw = tc.load_rate(step, share, np.divide(l2, step, out=np.ones_like(step), where=step > 0), active, fill, l2_bw,
                      dram_bw)
    xfer = work.copy()
    xfer[:, tl.T_DRAM_A_VALUES] = work[:, tl.T_SRAM_A_VALUES]
    xfer[:, tl.T_DRAM_A_META] = work[:, tl.T_SRAM_A_META]
    xfer[:, tl.T_DRAM_B] = work[:, tl.T_SRAM_B]
    xfer[:, tl.T_DRAM_C_WRITE] = work[:, tl.T_SRAM_C]
    wb_bw = tc.load_rate(work[:, tl.T_SRAM_C], np.full(len(work), 0.0 if write_back else fc), np.ones(len(work)),
                         active, fill, l2_bw, dram_bw)
    times = pl.run_pipeline_split(xfer, bw, wb_bw, latency, dec_rate, dec_lat, stages, 0.0, g_rate)
    return work, times, bw


@pytest.mark.parametrize("seed", range(12))
def test_run_wave_class_is_bit_identical_to_the_array_steps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    bm, bn, bk = (int(x) for x in rng.choice([16, 32, 64, 128, 256], 3))
    k_total = int(rng.integers(1, 40)) * int(rng.choice([1, 7, 33]))
    sparse = bool(seed % 2)
    base = tc.cta_k_loop(bm, bn, bk, k_total, 2 if sparse else 1, 4 if sparse else 1, 16, 2.0, 2.0 if sparse else 0.0,
                         float(rng.uniform(0, 1e5)), float(rng.uniform(50, 2048)), sparse)
    if seed % 3 == 0:  # a V:N:M-like grid: gathered rows and extra metadata
        base[:, tl.T_GATHER] = base[:, tl.T_SRAM_B] / (bn * 2.0)
        base[:, tl.T_SRAM_A_META] += 17.25
    args = (int(rng.integers(0, 5)), int(rng.integers(1, 9)), float(rng.uniform(0, 1)), float(rng.uniform(0, 1)),
            float(rng.choice([0.0, 1.0])), float(rng.uniform(0, 0.3)), float(rng.uniform(0, 0.2)), seed % 3 == 0,
            int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 133)), float(rng.uniform(32, 256)),
            float(rng.choice([math.inf, 5120.0])), float(rng.choice([math.inf, 1000.0])), bool(seed % 4 == 1),
            float(rng.uniform(0, 900)), float(rng.choice([math.inf, 64.0])), float(rng.uniform(0, 20)),
            int(rng.integers(1, 5)), float(rng.choice([math.inf, 4.0])))
    got = cc.run_wave_class(base, *args)
    want = _reference(base, *args)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.tobytes() == w.tobytes()
