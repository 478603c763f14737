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
buffer and multiplies it densely (load sparse, compute dense). V:N:M and block-sparse layouts too:
``vnm_gemm_tiles`` gathers each V-row block's selected rows of B, then runs the 2:4 stage on them;
``bsr_gemm_tiles`` multiplies each nonzero block by the BK rows of B its column index selects (a block-sparse
kernel on tensor cores); ``bsr_fold_gemm_tiles`` runs the folds of a systolic array instead: each fold of
``tile_m`` rows of A packs the union of its block rows' nonzero block columns into its k, zero blocks inside
the union included (``accelsim.engine.structured``, systolic arrays).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _axpy(out: np.ndarray, r: int, v: float, b: np.ndarray, krow: int | np.int64, n0: int, n1: int) -> None:
    """out[r, n0:n1] += v * b[krow, n0:n1]: one kept value of A times its row of B (every kernel's inner step)."""
    for j in range(n0, n1):
        out[r, j] += v * b[krow, j]


@njit(cache=True, inline="always")
def _csr_range_end(row_ptr: np.ndarray, col_idx: np.ndarray, r: int, p: int, k1: int) -> int:
    """The first of row ``r``'s values from ``p`` on whose column is at or past ``k1``."""
    while p < row_ptr[r + 1] and col_idx[p] < k1:
        p += 1
    return p


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
                        _axpy(out, r, values[r, p], b, krow, n0, n1)
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
    end = cursor.copy()
    tiles = 0
    for m0 in range(0, rows, tile_m):
        m1 = min(rows, m0 + tile_m)
        for k0 in range(0, k, tile_k):
            k1 = min(k, k0 + tile_k)
            for r in range(m0, m1):  # each row's nonzeros in this k range: cursor[r] .. end[r]
                end[r] = _csr_range_end(row_ptr, col_idx, r, cursor[r], k1)
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for r in range(m0, m1):
                    for p in range(cursor[r], end[r]):
                        _axpy(out, r, values[p], b, np.int64(col_idx[p]), n0, n1)
                tiles += 1
            for r in range(m0, m1):  # past this k range
                cursor[r] = end[r]
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
                        _axpy(out, r, dense[r - m0, c - k0], b, c, n0, n1)
                tiles += 1
    return tiles


@njit(cache=True)
def vnm_gemm_tiles(values: np.ndarray, slots: np.ndarray, columns: np.ndarray, b: np.ndarray, out: np.ndarray,
                   v: int, n: int, m: int, tile_m: int, tile_groups: int, tile_n: int) -> int:
    """Accumulate a V:N:M-compressed A . B into ``out`` tile by tile, as a Spatha-style kernel does.

    A tile is ``tile_m`` rows inside one V-row block (tiles never straddle blocks), ``tile_groups``
    groups of M along k and ``tile_n`` columns. Per tile the column-gather stage copies, for each
    group, the block's 4 selected rows of B (``columns``) into a gathered panel; the 2:4 stage then
    multiplies each kept value by the gathered row its slot (``slots``) names. Rows of B at or past
    its end are the zero k-padding. Returns the number of tiles run.
    """
    rows = values.shape[0]
    groups = columns.shape[1]
    kb, ncols = b.shape
    sel = columns.shape[2]
    gathered = np.zeros((tile_groups * sel, tile_n), dtype=out.dtype)
    tiles = 0
    for blk0 in range(0, rows, v):
        blk1 = min(rows, blk0 + v)
        blk = blk0 // v
        for m0 in range(blk0, blk1, tile_m):
            m1 = min(blk1, m0 + tile_m)
            for g0 in range(0, groups, tile_groups):
                g1 = min(groups, g0 + tile_groups)
                for n0 in range(0, ncols, tile_n):
                    n1 = min(ncols, n0 + tile_n)
                    for g in range(g0, g1):  # gather: the selected rows of B of each group
                        for s in range(sel):
                            krow = g * m + np.int64(columns[blk, g, s])
                            dst = (g - g0) * sel + s
                            for j in range(n0, n1):
                                gathered[dst, j - n0] = b[krow, j] if krow < kb else 0
                    for r in range(m0, m1):  # 2:4 inside the gathered rows
                        for g in range(g0, g1):
                            for q in range(n):
                                p = g * n + q
                                src = (g - g0) * sel + np.int64(slots[r, p])
                                val = values[r, p]
                                for j in range(n0, n1):
                                    out[r, j] += val * gathered[src, j - n0]
                    tiles += 1
    return tiles


@njit(cache=True)
def bsr_gemm_tiles(blocks: np.ndarray, block_cols: np.ndarray, row_ptr: np.ndarray, b: np.ndarray,
                   out: np.ndarray, rows: int, bm: int, bk: int, tile_n: int) -> int:
    """Accumulate a BSR-compressed A . B into ``out`` tile by tile, as a block-sparse kernel does: for each
    block row, each of its nonzero blocks (one k-step: its column index selects BK rows of B) and each
    ``tile_n`` columns, a dense BM x BK x tile_n product. Returns the number of tiles run."""
    kb, ncols = b.shape
    tiles = 0
    for br in range(row_ptr.shape[0] - 1):
        r0 = br * bm
        for idx in range(row_ptr[br], row_ptr[br + 1]):
            k0 = np.int64(block_cols[idx]) * bk
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for i in range(bm):
                    r = r0 + i
                    if r >= rows:
                        break
                    for kk in range(bk):
                        krow = k0 + kk
                        if krow >= kb:
                            break
                        _axpy(out, r, blocks[idx, i, kk], b, krow, n0, n1)
                tiles += 1
    return tiles


@njit(cache=True)
def bsr_fold_gemm_tiles(blocks: np.ndarray, index: np.ndarray, fold_ptr: np.ndarray, fold_cols: np.ndarray,
                        b: np.ndarray, out: np.ndarray, rows: int, bm: int, bk: int, tile_m: int, tile_kc: int,
                        tile_n: int) -> int:
    """Accumulate a block-sparse A . B into ``out`` fold by fold, as a systolic array runs it: fold ``f`` holds
    rows ``f * tile_m ..`` of A and, packed along k, the block columns ``fold_cols[fold_ptr[f]:fold_ptr[f + 1]]``
    (the union of the nonzero block columns of the block rows it touches), ``tile_kc`` packed positions per
    k-fold and ``tile_n`` columns of B per pass. ``index[block row, block column]`` is the block's index in
    ``blocks`` or -1: a zero block inside the union is computed with zeros, as the array does. Returns the
    number of (m, k, n) folds run."""
    kb, ncols = b.shape
    tiles = 0
    for f in range(fold_ptr.shape[0] - 1):
        m0 = f * tile_m
        m1 = min(rows, m0 + tile_m)
        c0 = fold_ptr[f]
        npos = (fold_ptr[f + 1] - c0) * bk
        for p0 in range(0, npos, tile_kc):
            p1 = min(npos, p0 + tile_kc)
            for n0 in range(0, ncols, tile_n):
                n1 = min(ncols, n0 + tile_n)
                for r in range(m0, m1):
                    br = r // bm
                    i = r - br * bm
                    for p in range(p0, p1):
                        col = np.int64(fold_cols[c0 + p // bk])
                        kk = p % bk
                        krow = col * bk + kk
                        if krow >= kb:
                            continue
                        idx = index[br, col]
                        v = blocks[idx, i, kk] if idx >= 0 else blocks[0, 0, 0] * 0
                        _axpy(out, r, v, b, krow, n0, n1)
                tiles += 1
    return tiles


def run_tiled(kind: str, arrays: tuple[np.ndarray, ...], params: tuple[int, ...], b: np.ndarray, out: np.ndarray,
              tile_m: int, tile_kc: int, tile_n: int, acc: np.dtype) -> int:
    """Run a format's own tiled functional kernel (``CompressedOperand.tiled_form``) into ``out``.

    ``tile_kc`` counts kept values per row along k (V:N:M: groups x N; ``bsr_folds``: packed positions of the
    fold's union); ``bsr`` takes one block per k-step.
    """
    if kind == "vnm":
        values, slots, columns = arrays
        v, n, m = params
        return int(vnm_gemm_tiles(np.ascontiguousarray(values, dtype=acc), slots, columns, b, out, v, n, m,
                                  min(tile_m, v), max(1, tile_kc // n), tile_n))
    if kind == "bsr":
        blocks, block_cols, row_ptr = arrays
        rows, bm, bk = params
        return int(bsr_gemm_tiles(np.ascontiguousarray(blocks, dtype=acc), block_cols, row_ptr, b, out, rows, bm, bk,
                                  tile_n))
    if kind == "bsr_folds":
        blocks, index, fold_ptr, fold_cols = arrays
        rows, bm, bk = params
        return int(bsr_fold_gemm_tiles(np.ascontiguousarray(blocks, dtype=acc), index, fold_ptr, fold_cols, b, out,
                                       rows, bm, bk, tile_m, tile_kc, tile_n))
    raise ValueError(f"no functional kernel {kind!r}")
