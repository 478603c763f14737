"""GPU-like parts: output CTA tiles spread over cores in waves, each CTA a k-loop of tiles.

A GEMM is cut into CTA tiles (BM x BN); CTAs are issued in waves of ``cores * ctas_per_core``
in the library's raster order (``core.compute.raster``: grouped bands of CTA-rows by default).
Each CTA runs its k-loop through the same tile pipeline as a systolic part: every k-step loads
an A tile (compressed values + metadata) and a B tile into shared memory, decodes metadata, and
runs BM*BN*BK MACs on the tensor cores. Active cores share L2 and DRAM bandwidth; A/B panels
used by several CTAs of a wave are read from DRAM once per wave, and a panel stays in L2 for a
later wave unless too much other data passed through L2 in between (``engine.l2reuse``); where the
config lists several rasters, the kernel launches in the one reading the fewest DRAM bytes. CTAs of a
thread-block cluster (``core.compute.cluster``) receive shared tiles by one L2 read (TMA multicast). A
write-back L2 takes a wave's C stores at its port rate and drains them to DRAM meanwhile and behind the next
loads (C charged once on a core's channel: ``write_back_drain``).
Waves with identical parameters are simulated once and counted.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from numba import njit

from accelsim.engine import classes as cl
from accelsim.engine import l2reuse
from accelsim.engine.tiling import (
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
    """Per-tile work of one CTA: one row per k-step (SRAM bytes, cycles, decode groups).

    The gather column (T_GATHER) stays 0: V:N:M and block-sparse grids fill it (``engine.structured``).
    """
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


def wave_classes(grid_m: int, grid_n: int, split: int, slots: int, a_block: float, b_block: float,
                 all_fit_l2: bool) -> list[tuple[int, float, float, int, int]]:
    """Distinct waves as (active CTAs, DRAM bytes of A, DRAM bytes of B, count, first wave index).

    CTA ids run m fastest, then n, then the split-k slice. A blocks are (m, slice), B blocks
    (n, slice). Inside a wave, CTAs sharing a block read it from DRAM once (L2 holds the wave's
    k-slab: (blocks x BK x stages) bytes, far below any L2). Across waves a block is re-read
    unless all of A and B fit in L2 (then each block comes from DRAM once per kernel).
    """
    plane = grid_m * grid_n
    ctas = plane * split
    waves = -(-ctas // slots)
    s = np.arange(waves, dtype=np.int64) * slots
    e = np.minimum(s + slots, ctas)
    active = e - s
    if all_fit_l2:
        def seen_a(x: np.ndarray) -> np.ndarray:
            return (x // plane) * grid_m + np.minimum(grid_m, x % plane)

        def seen_b(x: np.ndarray) -> np.ndarray:
            return -(-x // grid_m)

        new_a = seen_a(e) - seen_a(s)
        new_b = seen_b(e) - seen_b(s)
    else:
        slices = (e - 1) // plane - s // plane + 1
        new_a = np.minimum(grid_m * slices, active)
        new_b = (e - 1) // grid_m - s // grid_m + 1
    keys = np.stack([active, new_a, new_b], axis=1)
    uniq, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    return [(int(uniq[i, 0]), float(uniq[i, 1]) * a_block, float(uniq[i, 2]) * b_block, int(counts[i]),
             int(first[i])) for i in order]


WaveClass = tuple[int, float, float, int, int]  # (active CTAs, DRAM bytes of A, of B, count, first wave)
SHARE_QUANTUM = 64  # waves whose DRAM shares of A and of B agree to 1/64 of their panels run as one class


def merge_close(classes: list[WaveClass], a_panel: float, b_panel: float) -> list[WaveClass]:
    """Waves with the same CTAs and DRAM shares within 1/SHARE_QUANTUM run as one class of their mean bytes.

    A wave's share is the fraction of its CTAs' A (B) panel bytes it reads from DRAM; classes closer than
    the quantum time alike, and simulating each costs a pipeline run. Bytes stay exact (count-weighted
    means); the class keeps its first wave.
    """
    groups: dict[tuple[int, int, int], list[float]] = {}
    for active, da, db, count, first in classes:
        key = (active, round(da / (active * a_panel) * SHARE_QUANTUM) if a_panel else 0,
               round(db / (active * b_panel) * SHARE_QUANTUM) if b_panel else 0)
        got = groups.setdefault(key, [0.0, 0.0, 0, first])
        got[0] += count * da
        got[1] += count * db
        got[2] += count
        got[3] = min(got[3], first)
    merged = [(key[0], sa / c, sb / c, int(c), int(f)) for key, (sa, sb, c, f) in groups.items()]
    return sorted(merged, key=lambda cls: cls[4])


def raster_band(order: str, group_width: int, grid_m: int, grid_n: int, cluster_m: int = 1,
                cluster_n: int = 1) -> int:
    """CTA-rows (for ``grouped_columns``: CTA-columns) of one raster band, cut to the grid.

    A band holds ``group_width`` clusters across it (CUTLASS 3 swizzles whole clusters), so
    ``group_width * cluster_m`` CTA-rows (``* cluster_n`` columns for ``grouped_columns``).
    """
    if order == "m_fastest":
        return grid_m
    if order == "grouped_columns":
        return max(1, min(group_width * cluster_n, grid_n))
    return max(1, min(group_width * cluster_m, grid_m))


def reuse_classes(order: str, band: int, grid_m: int, grid_n: int, planes: int, slots: int, a_panel: float,
                  b_panel: float, c_cta: float, capacity: float, b_from_dram: bool) -> list[WaveClass]:
    """Distinct waves of a grid of ``planes`` x grid_m x grid_n CTAs with L2 reuse across waves.

    ``a_panel``/``b_panel``: bytes of one CTA-row of A / CTA-column of B over a plane's k-range;
    ``c_cta``: C bytes one CTA writes; ``capacity``: usable L2 bytes; ``b_from_dram``: False when B
    already sits in L2 (it then takes L2 space but no DRAM bytes).
    """
    b_dram = b_panel if b_from_dram else 0.0
    if order != "grouped_columns":
        exact = l2reuse.wave_reuse_classes(grid_m, grid_n, band, planes, slots, a_panel, b_panel, c_cta,
                                           capacity, a_panel, b_dram)
    else:  # the same walk with m and n exchanged
        swapped = l2reuse.wave_reuse_classes(grid_n, grid_m, band, planes, slots, b_panel, a_panel, c_cta,
                                             capacity, b_dram, a_panel)
        exact = [(act, da, db, count, first) for act, db, da, count, first in swapped]
    return merge_close(exact, a_panel, b_panel)


def raster_classes(order: str, width: int, cluster: tuple[int, int], grid_m: int, grid_n: int, planes: int,
                   slots: int, a_panel: float, b_panel: float, c_cta: float, capacity: float,
                   b_from_dram: bool) -> tuple[int, list[WaveClass], bool]:
    """(band, wave classes, settled) of the grid launched in raster ``order`` with ``width`` clusters per band.

    ``settled``: no other raster can read fewer DRAM bytes -- every CTA runs in one wave, or the whole footprint
    (A, B and the C written) fits the usable L2, or this raster already reads each panel exactly once.
    """
    band = raster_band(order, width, grid_m, grid_n, *cluster)
    classes = reuse_classes(order, band, grid_m, grid_n, planes, slots, a_panel, b_panel, c_cta, capacity,
                            b_from_dram)
    ctas = grid_m * grid_n * planes
    footprint = a_panel * grid_m * planes + b_panel * grid_n * planes + c_cta * ctas
    compulsory = (a_panel * grid_m + (b_panel if b_from_dram else 0.0) * grid_n) * planes  # each panel once
    dram = sum(c * (da + db) for _, da, db, c, _ in classes)
    return band, classes, ctas <= slots or footprint <= capacity or dram <= compulsory * (1 + 1e-9)


def pick_raster(candidates: list[tuple[str, int]], cluster: tuple[int, int], grid_m: int, grid_n: int, planes: int,
                slots: int, a_panel: float, b_panel: float, c_cta: float, capacity: float, b_from_dram: bool,
                first: list[WaveClass] | None = None) -> tuple[int, str, int, list[WaveClass], bool]:
    """(index, order, band, wave classes, settled) of the candidate raster whose waves read the fewest A + B bytes
    from DRAM (the first wins a tie, within 1e-9 relative); the walk stops at a settled one (``raster_classes``).
    ``first``: the classes of the first candidate when already known.

    The choice depends on the grid's geometry and bytes only, not on rates or efficiencies, so it is remembered
    (``_picked``): a calibration simulates each row at every efficiency of its grid with the same grids."""
    if first is None:
        i, order, band, classes, settled = _picked(tuple((o, int(w)) for o, w in candidates), (cluster[0], cluster[1]),
                                                   grid_m, grid_n, planes, slots, a_panel, b_panel, c_cta, capacity,
                                                   b_from_dram)
        return i, order, band, list(classes), settled
    return _pick(candidates, cluster, grid_m, grid_n, planes, slots, a_panel, b_panel, c_cta, capacity, b_from_dram,
                 first)


_PICKED: dict[tuple[Any, ...], tuple[int, str, int, tuple[WaveClass, ...], bool]] = {}
_PICKED_LOCK = threading.Lock()  # sweeps may simulate on threads (Dask)
PICKED_MAX_ENTRIES = 2048  # remembered grids per process (oldest dropped first)
PICKED_MAX_CLASSES = 64  # a grid of more wave classes is not remembered (bounded memory on odd shapes)


def _picked(candidates: tuple[tuple[str, int], ...], cluster: tuple[int, int], grid_m: int, grid_n: int,
            planes: int, slots: int, a_panel: float, b_panel: float, c_cta: float, capacity: float,
            b_from_dram: bool) -> tuple[int, str, int, tuple[WaveClass, ...], bool]:
    """``_pick`` with no known first classes, remembered for results of few classes."""
    key = (candidates, cluster, grid_m, grid_n, planes, slots, a_panel, b_panel, c_cta, capacity, b_from_dram)
    got = _PICKED.get(key)
    if got is None:
        i, order, band, classes, settled = _pick(list(candidates), cluster, grid_m, grid_n, planes, slots, a_panel,
                                                 b_panel, c_cta, capacity, b_from_dram, None)
        got = (i, order, band, tuple(classes), settled)
        if len(classes) <= PICKED_MAX_CLASSES:
            with _PICKED_LOCK:
                if len(_PICKED) >= PICKED_MAX_ENTRIES:
                    del _PICKED[next(iter(_PICKED))]
                _PICKED[key] = got
    return got


def _pick(candidates: list[tuple[str, int]], cluster: tuple[int, int], grid_m: int, grid_n: int, planes: int,
          slots: int, a_panel: float, b_panel: float, c_cta: float, capacity: float, b_from_dram: bool,
          first: list[WaveClass] | None) -> tuple[int, str, int, list[WaveClass], bool]:
    best: tuple[float, int, str, int, list[WaveClass], bool] | None = None
    seen: set[tuple[str, int]] = set()
    for i, (order, width) in enumerate(candidates):
        band = raster_band(order, width, grid_m, grid_n, *cluster)
        if (order, band) in seen:
            continue
        seen.add((order, band))
        if i == 0 and first is not None:
            classes, settled = first, False
        else:
            band, classes, settled = raster_classes(order, width, cluster, grid_m, grid_n, planes, slots, a_panel,
                                                    b_panel, c_cta, capacity, b_from_dram)
        dram = sum(c * (da + db) for _, da, db, c, _ in classes)
        if best is None or dram < best[0] * (1 - 1e-9):
            best = (dram, i, order, band, classes, settled)
        if settled:
            break
    assert best is not None  # candidates is never empty (schema)
    return best[1], best[2], best[3], best[4], best[5]


def legacy_classes(grid_m: int, grid_n: int, split: int, slots: int, a_block: float, b_block: float,
                   all_fit: bool) -> list[WaveClass]:
    """The m-fastest, all-or-nothing classes of the model before issue 17 (batch folded into m)."""
    waves = -(-grid_m * grid_n * split // slots)
    listing = wave_classes if waves <= cl.WAVE_CAP else cl.wave_classes_large  # same classes
    return listing(grid_m, grid_n, split, slots, a_block, b_block, all_fit)


@njit(cache=True)
def load_rate(step_bytes: np.ndarray, dram_share: np.ndarray, l2_share: np.ndarray, active: int, fill_bw: float,
              l2_bw: float, dram_bw: float) -> np.ndarray:
    """Bytes/cycle each tile's transfers get when ``active`` CTAs share L2 and DRAM.

    ``dram_share``/``l2_share``: DRAM / L2 bytes per byte the CTA's shared memory receives (the L2 share is
    below 1 with TMA multicast in clusters).
    """
    out = np.empty(len(step_bytes), dtype=np.float64)
    l2 = math.isfinite(l2_bw)
    dram = math.isfinite(dram_bw)
    for i in range(len(out)):
        per_byte = 1.0 / fill_bw
        if l2:
            per_byte = max(per_byte, active * l2_share[i] / l2_bw)
        if dram:
            per_byte = max(per_byte, active * dram_share[i] / dram_bw)
        out[i] = 1.0 / per_byte if per_byte > 0 else np.inf
    return out


def write_back_drain(c_cta: float, load_cta: float, active: int, fill_bw: float, l2_bw: float,
                     dram_bw: float) -> float:
    """DRAM bytes of C drained behind the loads, per load byte, when a write-back L2 takes a CTA's ``c_cta``
    stores at their port rate and writes them to DRAM.

    The DRAM drains C while the core's channel stores C into L2 (its loads are not using DRAM then: each store
    allocating a line evicts a dirty one) and behind the next loads; only what the store time leaves undrained
    is charged to the loads, so C's channel time is max(its L2 store time, its DRAM time), not their sum.
    """
    if load_cta <= 0 or c_cta <= 0 or not math.isfinite(dram_bw):
        return 0.0
    store_cycles = c_cta * max(1.0 / fill_bw, active / l2_bw if math.isfinite(l2_bw) else 0.0)
    return max(0.0, c_cta - store_cycles * dram_bw / active) / load_cta


def tag_rows(work: np.ndarray, wave_class: int, count: int) -> None:
    work[:, T_FOLD_R] = wave_class
    work[:, T_FOLD_C] = count
