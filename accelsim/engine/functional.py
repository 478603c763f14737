"""Numba kernel of the functional path: a tiled GEMM executed from the compressed weight.

The caller (``accelsim.analysis.functional_check``) owns validation and dtype handling; this kernel only
walks the tiles. Operand A arrives compressed, in the gather form a format's compressed operand
gives (``CompressedOperand.gather``): ``values[r, p]`` is the p-th kept value of row r and
``indices[r, p]`` its position inside group ``p // keep``, so the dense k row of B it multiplies
is ``(p // keep) * group + indices[r, p]`` (for N:M, the metadata-driven operand selection a
sparse tensor core performs). Rows of B at or past ``b.shape[0]`` are the zero k-padding and
contribute nothing.

Load-sparse layouts (unstructured sparsity) have kernels of their own: ``csr_gemm_tiles`` walks each
row's nonzeros (an SpMM), ``bitmap_gemm_tiles`` decompresses each A tile from its bitmap into a dense
buffer and multiplies it densely (load sparse, compute dense).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def nm_gemm_tiles(values: np.ndarray, indices: np.ndarray, b: np.ndarray, out: np.ndarray,
                  keep: int, group: int, tile_m: int, tile_kc: int, tile_n: int) -> int:
    """Accumulate A_compressed . B into ``out`` tile by tile; returns the number of tiles run.

    Tiles are visited like the weight-stationary schedule of the timing model: m-tile (array
    column fold), then compressed-k tile (array row fold), then n chunk (stream chunk).
    ``tile_kc`` counts compressed positions (kept values), not dense k.
    """
    rows, kc = values.shape
    kb, ncols = b.shape
    tiles = 0
    for m0 in range(0, rows, tile_m):
        m1 = min(rows, m0 + tile_m)
        for k0 in range(0, kc, tile_kc):
            k1 = min(kc, k0 + tile_kc)
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for r in range(m0, m1):
                    for p in range(k0, k1):
                        krow = (p // keep) * group + np.int64(indices[r, p])
                        if krow >= kb:
                            continue
                        v = values[r, p]
                        for j in range(n0, n1):
                            out[r, j] += v * b[krow, j]
                tiles += 1
    return tiles


@njit(cache=True)
def csr_gemm_tiles(row_ptr: np.ndarray, col_idx: np.ndarray, values: np.ndarray, b: np.ndarray, out: np.ndarray,
                   k: int, tile_m: int, tile_k: int, tile_n: int) -> int:
    """C += A . B with A in CSR (row pointers, column of each value, values), tile by tile; returns tiles run.

    Tiles: m-tile, then dense-k tile (``tile_k`` positions of k), then n-tile. Within a tile each row
    walks its nonzeros whose column falls in the k range, as a row-split SpMM kernel (Sputnik-style) does;
    a cursor per row remembers where the next k range starts.
    """
    rows = row_ptr.shape[0] - 1
    ncols = b.shape[1]
    cursor = row_ptr[:rows].copy()
    tiles = 0
    for m0 in range(0, rows, tile_m):
        m1 = min(rows, m0 + tile_m)
        for k0 in range(0, k, tile_k):
            k1 = min(k, k0 + tile_k)
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for r in range(m0, m1):
                    p = cursor[r]
                    while p < row_ptr[r + 1] and col_idx[p] < k1:
                        v = values[p]
                        c = col_idx[p]
                        for j in range(n0, n1):
                            out[r, j] += v * b[c, j]
                        p += 1
                tiles += 1
            for r in range(m0, m1):  # past this k range
                p = cursor[r]
                while p < row_ptr[r + 1] and col_idx[p] < k1:
                    p += 1
                cursor[r] = p
    return tiles


@njit(cache=True)
def bitmap_gemm_tiles(bitmap: np.ndarray, row_ptr: np.ndarray, values: np.ndarray, b: np.ndarray, out: np.ndarray,
                      k: int, tile_m: int, tile_k: int, tile_n: int) -> int:
    """C += A . B with A as a bitmap + values, loaded sparse and computed dense; returns the tiles run.

    Each (m-tile, k-tile) of A is decompressed into a dense ``tile_m x tile_k`` buffer (the shared-memory
    tile of a load-sparse-compute-dense kernel: zero-filled, then each set bit of the tile's bitmap takes
    the row's next value), then multiplied densely by every n-tile of B. Bit ``c % 8`` of byte ``c // 8``
    of a row marks column c; ``row_ptr`` gives where each row's values start (a kernel counts it from
    the bitmap as it reads; the cursor below follows the same walk).
    """
    rows = row_ptr.shape[0] - 1
    ncols = b.shape[1]
    cursor = row_ptr[:rows].copy()
    dense = np.zeros((tile_m, tile_k), dtype=out.dtype)
    tiles = 0
    for m0 in range(0, rows, tile_m):
        m1 = min(rows, m0 + tile_m)
        for k0 in range(0, k, tile_k):
            k1 = min(k, k0 + tile_k)
            dense[:, :] = 0
            for r in range(m0, m1):
                p = cursor[r]
                for c in range(k0, k1):
                    if (bitmap[r, c >> 3] >> (c & 7)) & 1:
                        dense[r - m0, c - k0] = values[p]
                        p += 1
                cursor[r] = p
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for r in range(m0, m1):
                    for c in range(k0, k1):  # dense: the tile's zeros are multiplied too
                        v = dense[r - m0, c - k0]
                        for j in range(n0, n1):
                            out[r, j] += v * b[c, j]
                tiles += 1
    return tiles
