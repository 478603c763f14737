"""CTA k-loops of load-sparse kernels: A moves compressed (values + index), the math is dense or SpMM.

Two ways a tensor-core part runs unstructured sparsity (``accelsim/formats/unstructured.py``):

* load-sparse-compute-dense (Flash-LLM): each k-step loads ``bm x bk`` positions of A as
  ``a_density`` of their values plus ``a_index_bits`` per position, a **decompress** stage places
  the nonzeros into a dense shared-memory tile (its work: the values, in the ``T_GROUPS`` column
  the pipeline's second stage reads, at the stage's own rate), and the dense tensor cores multiply
  the whole ``bm x bn x bk`` (whole MMA k-slices) at the dense rate;
* vector SpMM (Sputnik-style): the same compressed loads, no separate stage, and only the
  nonzeros' MACs (``a_density`` of them) at the SpMM rate of the vector unit.

B and C move as in a dense kernel. Shared memory holds the decompressed dense A tile (``bm x bk``, as a
dense kernel's): the compressed tile is staged in registers (as Flash-LLM does), so a CTA tile fits as
the dense one does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from accelsim.engine.tiling import (
    N_TILE_COLS,
    T_CHUNK,
    T_CYCLES,
    T_GROUPS,
    T_SRAM_A_META,
    T_SRAM_A_VALUES,
    T_SRAM_B,
    T_SRAM_C,
)


@njit(cache=True)
def cta_k_loop_load_sparse(bm: int, bn: int, bk: int, k_total: int, mma_k: int, elem_bytes: float,
                           density: float, index_bits: float, c_bytes: float, macs_per_cycle: float,
                           spmm: bool) -> np.ndarray:
    """Per-k-step work of one CTA of a load-sparse kernel (SRAM bytes of A's values and index, B, C; cycles;
    values decompressed). ``spmm``: only the nonzeros' MACs, no MMA rounding and no decompress stage."""
    steps = -(-k_total // bk)
    out = np.zeros((steps, N_TILE_COLS), dtype=np.float64)
    for s in range(steps):
        kl = min(bk, k_total - s * bk)
        positions = bm * kl
        row = out[s]
        row[T_CHUNK] = s
        row[T_SRAM_A_VALUES] = positions * density * elem_bytes
        row[T_SRAM_A_META] = positions * index_bits / 8.0
        row[T_SRAM_B] = kl * bn * elem_bytes
        if spmm:
            row[T_CYCLES] = bm * bn * kl * density / macs_per_cycle
        else:
            k_exec = -(-kl // mma_k) * mma_k  # a partial step still issues whole MMA k-slices
            row[T_CYCLES] = bm * bn * k_exec / macs_per_cycle
            row[T_GROUPS] = positions * density  # values the decompress stage places
        if s == steps - 1:
            row[T_SRAM_C] = c_bytes
    return out
