"""Row-gather SpMM on the vector unit: a CSR SpMM that gathers B row by row (Sputnik).

The kernel (T. Gale, M. Zaharia, C. Young, E. Elsen, "Sparse GPU Kernels for Deep Learning", SC'20; the
``sputnik/spmm/cuda_spmm.cu.cc`` it describes): a CTA computes ``rows`` rows of C over ``cols`` columns
(``kernel.gather_rows`` x ``kernel.gather_cols``; fp16 with n a multiple of 64: 4 x 64, one 8-thread subwarp per
row). It walks its rows' nonzeros (CSR, columns ascending), stages their values and column indices in shared memory and,
per nonzero, loads the ``cols``-wide segment of B's row at that column with vector loads through the core's L1,
then multiplies it by the value on the CUDA cores with fp32 accumulators. The grid runs row groups fastest
(``blockIdx.x`` over m), so the ``m / rows`` CTAs of one n-tile spread over every core: a core runs
``R = m / cores`` rows of each n-tile (a *visit*), and its resident rows walk B's rows in the same order.

Per visit of one core (one tile of the pipeline), with A's density ``d`` and its nonzeros' columns taken as
independent and uniform (random masks; a named assumption, echoed as ``columns: uniform``) and every core's rows
of the mean length (``row_lengths: mean``: Sputnik's row swizzle hands rows out longest first, and a random mask's
row lengths are binomial, within a few percent of the mean at these sizes; load imbalance is not modelled):

* nonzeros ``z = R k d``; compute ``z cols / compute_rate`` cycles (the SpMM's sustained rate on the vector unit);
* gather: ``z`` row segments read from L1 (``T_GATHER``, at ``gather_rate`` segments per cycle);
* L2 -> core: the distinct segments its rows need. The rows of a group of ``w = max(R, min(m, rows))`` rows share
  them through L1; a group needs ``k (1 - (1 - d)^w)`` of B's ``k`` rows, so the core fetches
  ``(R / w) k (1 - (1 - d)^w) cols e`` bytes of B (``T_SRAM_B``), plus A's values and index of its ``R`` rows
  (reloaded every visit) and writes ``R cols`` of C;
* DRAM: each n-tile's ``k x cols`` strip of B once for the whole GPU (its cores share it through L2), A once when
  it fits in L2 next to the strips (else every visit), C once.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from accelsim.engine import pipeline as pl
from accelsim.engine import tensorcore as tc
from accelsim.engine import tiling as tl
from accelsim.engine.segment import Segment
from accelsim.hardware.model import Hardware
from accelsim.lowering import Kernel

__all__ = ["TILE_LIMIT", "reuse_rows", "row_gather", "visit_tiles"]

TILE_LIMIT = 256  # visits beyond this are folded, several per tile (same sums)


def reuse_rows(m: int, cores: int, cta_rows: int) -> tuple[float, float]:
    """Rows of A a core runs per n-tile (``m / cores``) and the rows sharing its L1 (at least a CTA's)."""
    per_core = m / cores
    return per_core, max(per_core, float(min(m, cta_rows)))


@njit(cache=True)
def visit_tiles(n_tiles: int, visits: float, per_core: float, group: float, k: int, cols: float, density: float,
                index_bits: float, e: float, c_bytes: float, rate: float, cores: int, a_in_l2: bool,
                b_strip_dram: float) -> np.ndarray:
    """Work of one core's tiles, ``visits`` n-tile visits each (module docstring; SRAM columns: L2 -> core)."""
    out = np.zeros((n_tiles, tl.N_TILE_COLS), dtype=np.float64)
    nnz = per_core * k * density
    distinct = (per_core / group) * k * (1.0 - (1.0 - density) ** group)
    for i in range(n_tiles):
        row = out[i]
        row[tl.T_CHUNK] = i
        row[tl.T_CYCLES] = visits * nnz * cols / rate
        row[tl.T_GATHER] = visits * nnz
        row[tl.T_SRAM_B] = visits * distinct * cols * e
        row[tl.T_SRAM_A_VALUES] = visits * nnz * e
        row[tl.T_SRAM_A_META] = visits * per_core * k * index_bits / 8.0
        row[tl.T_SRAM_C] = visits * per_core * cols * c_bytes
        row[tl.T_DRAM_B] = visits * b_strip_dram / cores
        fa = 1.0 / (n_tiles * visits) if a_in_l2 else 1.0
        row[tl.T_DRAM_A_VALUES] = row[tl.T_SRAM_A_VALUES] * fa
        row[tl.T_DRAM_A_META] = row[tl.T_SRAM_A_META] * fa
        row[tl.T_DRAM_C_WRITE] = row[tl.T_SRAM_C]
    return out


def row_gather(kernel: Kernel, hw: Hardware) -> tuple[list[Segment], dict, float]:
    """The row-gather SpMM of ``kernel`` on every core at once: one segment, a tile per n-tile visit."""
    rows, width = kernel.gather_rows, kernel.gather_cols
    cores, e = hw.cores, float(kernel.dtype_bytes)
    m, n, k = kernel.m_exec * kernel.batch, kernel.n_exec, kernel.k
    n_tiles_total = -(-n // width)
    cols = n / n_tiles_total  # a partial last n-tile folded into the average width
    per_core, group = reuse_rows(m, cores, rows)
    tiles = min(n_tiles_total, TILE_LIMIT)
    visits = n_tiles_total / tiles
    a_bytes = m * k * (kernel.a_density * e + kernel.a_index_bits / 8.0)
    strip = k * cols * e
    l2 = hw.l2
    a_in_l2 = l2 is not None and a_bytes + strip * min(n_tiles_total, 2) <= l2.bytes
    c_bytes = kernel.c_bytes or e
    work = visit_tiles(tiles, visits, per_core, group, k, cols, kernel.a_density, kernel.a_index_bits, e, c_bytes,
                       kernel.compute_rate, cores, a_in_l2, strip)
    fill = hw.fill_bytes_per_cycle()
    l2_bw = l2.bandwidth_bytes_per_cycle if l2 is not None else math.inf
    dram_bw = hw.dram_bytes_per_cycle()
    step = work[:, tl.T_SRAM_A_VALUES] + work[:, tl.T_SRAM_A_META] + work[:, tl.T_SRAM_B]
    from_dram = work[:, tl.T_DRAM_A_VALUES] + work[:, tl.T_DRAM_A_META] + work[:, tl.T_DRAM_B]
    share = np.divide(from_dram, step, out=np.zeros_like(step), where=step > 0)
    ones = np.ones(tiles)
    bw = tc.load_rate(step, share, ones, cores, fill, l2_bw, dram_bw)
    wb_bw = tc.load_rate(work[:, tl.T_SRAM_C], ones, ones, cores, fill, l2_bw, dram_bw)
    xfer = work.copy()  # transfers move the L2-side bytes; the DRAM columns say what DRAM sent
    xfer[:, tl.T_DRAM_A_VALUES] = work[:, tl.T_SRAM_A_VALUES]
    xfer[:, tl.T_DRAM_A_META] = work[:, tl.T_SRAM_A_META]
    xfer[:, tl.T_DRAM_B] = work[:, tl.T_SRAM_B]
    g_rate = kernel.gather_rate or math.inf
    times = pl.run_pipeline_split(xfer, bw, wb_bw, hw.dram_latency_cycles(), math.inf, 0.0,
                                  hw.core.sram.n_stages(), 0.0, g_rate)
    nnz = per_core * k * kernel.a_density
    distinct = (per_core / group) * k * (1.0 - (1.0 - kernel.a_density) ** group)
    tiling = {"kernel": "row_gather", "cta": [rows, width], "cta_tile": [rows, width, k], "n_tiles": n_tiles_total,
              "columns": "uniform",
              "row_lengths": "mean",
              "rows_per_core": round(per_core, 6), "reuse_rows": round(group, 6),
              "b_segments_per_visit": round(nnz, 6), "b_segments_from_l2_per_visit": round(distinct, 6),
              "b_l1_reuse": round(nnz / distinct, 6) if distinct > 0 else 0.0, "a_in_l2": a_in_l2}
    return [Segment(work, times, bw, count=1, active=cores)], tiling, kernel.compute_rate * cores
