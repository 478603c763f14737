"""Numba kernel of the functional path: a tiled GEMM executed from the compressed weight.

The caller (``accelsim.analysis.functional_check``) owns validation and dtype handling; this kernel only
walks the tiles. Operand A arrives compressed, in the gather form a format's compressed operand
gives (``CompressedOperand.gather``): ``values[r, p]`` is the p-th kept value of row r and
``indices[r, p]`` its position inside group ``p // keep``, so the dense k row of B it multiplies
is ``(p // keep) * group + indices[r, p]`` (for N:M, the metadata-driven operand selection a
sparse tensor core performs). Rows of B at or past ``b.shape[0]`` are the zero k-padding and
contribute nothing.
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
