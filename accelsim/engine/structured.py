"""V:N:M and block-sparse kernels in the engine: the GEMM their tiles run and what they add to it.

Both formats reach the engine as sparse kernels with ``row_block`` set (``lowering.Kernel``); the
hardware says how it runs them (``core.sparse.vnm`` / ``core.sparse.block``,
:mod:`accelsim.hardware.vnm_block`). This module turns such a kernel into the tiles the existing
simulations time (numba k-loops and folds), plus the stages and bytes the format adds:

**V:N:M on tensor cores** (Spatha, Castro et al. SC'23). Each CTA lies inside one V-row block (its M
tile BM = V, else BM dividing V: ``VnmSupport.cta_tiles``). It runs a 2:4 GEMM over the *gathered* k,
``k_g = ceil(k / M) x 4`` columns (4 selected per group), on the 2:4 sparse tensor cores at their rate
(``core.sparse.patterns[runs_on]``) and sparse efficiency: per k-step BK gathered columns, BM x BK/2 kept
values and their 2-bit indices, the block's column indices (``Kernel.selection_bits`` per kept value),
and BK rows of B gathered by index through the gather stage (``gather_rows_per_cycle``). Executed MACs
are N / M of dense. B's distinct DRAM bytes are the rows at least one V-row block selects: with
independent selections, ``coverage = 1 - (1 - 4 / M) ^ (V-row blocks)`` of B. Spatha's CTAs are small
(1-4 warps, a few stages of 128 x 32 tiles), so an SM holds several (``VnmSupport.resident_ctas``; absent:
as many as shared memory holds at the tile's stages) and starts the next CTA's loads while the current one
finishes its last k-steps and C write-back: the consecutive waves of a wave class run back to back through
one tile pipeline per core (``wave_runs``, ``back_to_back``), with the same DRAM bytes per wave. At high M a
CTA has 1-6 k-steps and its C write-back dominates: without this, every wave paid a load latency, a lone
compute and a write-back in series (VENOM rows timed as kernel loops, median error at M = 20 / 40 / 100:
18 / 29 / 37 % without it, 8.6 / 18.7 / 22.4 % with it). Echoed in the tiling as ``resident_ctas`` and
``waves_back_to_back``.

**Block sparsity on tensor cores** (a BSR kernel on the dense tensor cores, e.g. Triton's
``bsr_dense_mm``). ``core.sparse.block.cta_m`` names the kernel's M tile: ``block`` (default): one
block row per CTA, M = BM_b (Triton takes BLOCK_M from the block size), so a block smaller than the
library's tiles runs a smaller, costlier tile (more CTAs, more B traffic per MAC), and r = 1;
``library``: the dense library tiles whose M is a multiple of BM_b (a CTA covers r = M / BM_b block
rows) or divides it (r = 1). BN comes from the library tiles. A k-step lies in one block column
(BK = the library's when it divides BK_b, else BK_b). Each CTA walks the
nonzero blocks of its block rows in lockstep, so its k-loop has ``imbalance x density x block columns``
blocks: ``imbalance`` is the expected maximum over the r rows of Binomial(block columns, density)
nonzero blocks over its mean (:func:`expected_max_binomial`; random placement; 1 when r = 1), or the
configured ``core.sparse.block.imbalance``. CTAs are otherwise alike (the hardware hands a free SM the
next CTA, so the expected loop length stands for all: a named assumption). Per k-step: a dense BM x BK
A tile plus each covered block row's 32-bit index (and the row pointers); the r block rows' current
blocks sit in different block columns, so the step gathers r panels of BK rows of B (r x BK x BN).
Runs at the dense rate and efficiency, with the dense MMA shape. The kernel's structure is configurable
(``core.sparse.block``; defaults: the library-tiled kernel above): ``cta_n: block`` makes the output tile
square, BM_b x BM_b, one whole block per k-step (PyTorch 2.1's Triton ``bsr_dense_mm``), so B is reused only
BM_b-fold; ``stages`` sets the kernel's pipeline depth (1: each k-step's loads start after the previous MMA,
their latency exposed); ``index_load: dependent`` makes a k-step's loads take two latencies in series (the B
rows' address is the block index just loaded: ``GridExtras.load_trips``); ``resident_ctas`` runs that many
CTAs on a core at once (at most what shared memory holds at the kernel's stages, ``with_concurrency``): they
split its tensor-core rate and fill port, and each CTA's exposed latency overlaps the others' work
(``GridExtras.concurrent``; the CTA slots become cores x that count).

**Systolic arrays** (weight-stationary folds, columns <- m). V:N:M: a fold's columns must lie in one
V-row block (V a multiple of the array width, checked in lowering); its rows hold the compressed k
(N per group) and the feeder gathers 4 rows of B per group. Block: a fold of c columns covers
r = c / BM_b block rows; it packs the union of their nonzero block columns into its rows,
``u = columns x (1 - (1 - density) ^ r)`` of them (zero blocks inside the union are computed), and
gathers those block columns' rows of B. The zero blocks are not stored, so they are not read: DRAM and the SRAM
fills move A as stored (the nonzero blocks and their BSR indices, ``stored_a``; the zeros are filled in on
chip), the folds' A bytes scaled by ``SystolicView.a_scale``. V:N:M's column indices are those of whole, padded
V-row blocks, as stored.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from accelsim.formats import parse_format
from accelsim.formats.vnm import SELECT
from accelsim.hardware.model import Hardware
from accelsim.lowering import Kernel


def _plain() -> dict[str, Any]:
    """Kernel fields that make an inner kernel a plain GEMM (no V:N:M / block inputs, no padding labels)."""
    return {"row_block": 0, "col_select": 0, "col_block": 0, "selection_bits": 0.0, "padding": {}}


@dataclass(frozen=True)
class GridExtras:
    """What a V:N:M or block CTA grid adds to the plain one ``engine._cta_grid`` times."""

    a_values: float  # distinct bytes of A's values the kernel reads: as stored (``stored_a``)
    a_meta: float  # distinct bytes of A's metadata the kernel reads: as stored
    b_total: float  # distinct bytes of B behind the gathered rows
    gather: bool  # each k-step's rows of B are gathered by index (T_GATHER = BK)
    meta_per_step: float  # block: index bytes per CTA k-step
    tiling: dict[str, Any]  # echoed into the layer's tiling
    gather_rate: float  # rows of B the gather stage handles per cycle per core
    b_panels: int = 1  # block: panels of B a k-step loads (one per block row the CTA covers: their columns differ)
    # V:N:M: CTAs a core holds at once (0: as many as shared memory takes at the tile's stages; 1: one at a time).
    # With 2 or more, a core starts its next CTA's loads while the current one finishes its last k-steps and C
    # write-back: the consecutive waves of a wave class run back to back through one pipeline per core
    # (``back_to_back``, ``engine.ctagrid``); with 1, each wave pays its own prologue and write-back.
    resident: int = 1
    # block: CTAs of this kernel a core runs at once (core.sparse.block.resident_ctas; 0: unset, ctas_per_core); they
    # share its tensor cores and fill port, and each one's exposed load latency overlaps the others' work
    concurrent: int = 0
    stages: int = 0  # block: the kernel's pipeline stages (core.sparse.block.stages; 0: the hardware's)
    load_trips: int = 1  # block: load latencies in series per k-step (2: the B load waits for its block index)

    @property
    def a_total(self) -> float:
        """Distinct bytes of A (values + metadata) the kernel reads."""
        return self.a_values + self.a_meta

    @property
    def a_meta_share(self) -> float:
        """Metadata's share of A's DRAM bytes (a CTA's k-steps load values and indices in other proportions)."""
        return self.a_meta / self.a_total if self.a_total > 0 else 0.0


@dataclass(frozen=True)
class Candidate:
    """One CTA tile of a V:N:M or block kernel: the GEMM it runs and on which datapath."""

    tile: tuple[int, int, int]
    inner: Kernel  # the GEMM the CTAs run (k in gathered / executed positions)
    path: str  # "sparse" (the native N:M datapath) | "dense"
    mbits: float  # metadata bits per kept value in the CTA's A tile
    extras: GridExtras


def stored_a(kernel: Kernel) -> tuple[float, float]:
    """Bytes of a V:N:M or block kernel's A as stored, every batch copy: (values, metadata), the format's own
    counts (``value_bytes`` / ``metadata_bytes``: padded V-row blocks' column indices, only the nonzero blocks
    and their BSR indices), as the footprint and ``functional-check`` count them. A read once moves these bytes
    from DRAM: zero blocks a fold or CTA computes are zero-filled on chip, never read."""
    fmt = kernel.executed_format
    assert fmt is not None  # a sparse kernel
    values = fmt.value_bytes(kernel.m, kernel.k, kernel.dtype_bytes)
    meta = fmt.metadata_bytes(kernel.m, kernel.k, kernel.metadata_bits)
    return float(values * kernel.batch), float(meta * kernel.batch)


def _rate(value: object) -> float:
    return math.inf if value == "unlimited" else float(value)  # type: ignore[arg-type]


def gather_rate(kernel: Kernel, hw: Hardware) -> float:
    """Rows of B the gather stage handles per cycle per core (inf: not a gathering kernel)."""
    spec = hw.core.sparse
    if kernel.sparse and kernel.gather_cols:  # a row-gather SpMM (engine.rowgather): its own L1 rate
        return kernel.gather_rate or math.inf
    if not kernel.sparse or not kernel.row_block or spec is None:
        return math.inf
    section = spec.vnm if kernel.col_select else spec.block
    return math.inf if section is None else _rate(section.gather_rows_per_cycle)


def with_residency(extras: GridExtras, smem_bytes: int | None, cta_smem: float) -> GridExtras:
    """``extras`` with its resident CTAs per core settled: the configured count, else (0) as many CTAs as
    ``smem_bytes`` of shared memory hold at ``cta_smem`` bytes each (its stages of A and B tiles), at least 1."""
    if extras.resident > 0:
        return extras
    held = int(smem_bytes // cta_smem) if smem_bytes is not None and cta_smem > 0 else 1
    return dataclasses.replace(extras, resident=max(1, held))


def with_concurrency(extras: GridExtras, smem_bytes: float | None, cta_smem: float) -> GridExtras:
    """``extras`` with its concurrent CTAs per core cut to what ``smem_bytes`` hold at ``cta_smem`` each (>= 1)."""
    held = int(smem_bytes // cta_smem) if smem_bytes is not None and cta_smem > 0 else extras.concurrent
    return dataclasses.replace(extras, concurrent=max(1, min(extras.concurrent, held)))


def back_to_back(base: np.ndarray, ctas: int) -> np.ndarray:
    """The k-loops of ``ctas`` consecutive CTAs of one core as one tile sequence (each ends with its C write-back)."""
    return np.tile(base, (ctas, 1)) if ctas > 1 else base


def wave_runs(count: int, cap: int) -> list[tuple[int, int]]:
    """``count`` identical waves as (waves run back to back in one pipeline, times that run repeats): runs of at
    most ``cap`` waves, the remainder as one shorter run."""
    size = max(1, min(count, cap))
    runs = [(size, count // size)]
    if count % size:
        runs.append((count % size, 1))
    return runs


def coverage(share: float, selections: int) -> float:
    """Expected share of B's rows that at least one of ``selections`` independent selections (each taking
    ``share`` of the rows) uses."""
    return 1.0 - (1.0 - min(1.0, share)) ** max(1, selections)


@lru_cache(maxsize=4096)
def expected_max_binomial(n: int, p: float, r: int) -> float:
    """E[max of r independent Binomial(n, p)] = sum over j < n of 1 - F(j)^r (F: the binomial CDF)."""
    if r <= 1 or n == 0 or p <= 0.0 or p >= 1.0:
        return n * p if p < 1.0 else float(n)
    log_p, log_q = math.log(p), math.log1p(-p)
    cdf = 0.0
    total = 0.0
    for j in range(n):
        cdf += math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p
                        + (n - j) * log_q)
        total += 1.0 - min(1.0, cdf) ** r
    return total


def block_imbalance(block_cols: int, density: float, rows_per_cta: int, override: float | None) -> float:
    """A CTA's k-loop (nonzero blocks, its r block rows in lockstep) over the mean nonzero blocks of a row."""
    if override is not None:
        return float(override)
    mean = block_cols * density
    return expected_max_binomial(block_cols, density, rows_per_cta) / mean if mean > 0 else 1.0


# -- tensor cores ------------------------------------------------------------------------------

def candidates(kernel: Kernel, hw: Hardware) -> list[Candidate]:
    """The CTA tiles a V:N:M or block kernel may run on ``hw`` (the engine keeps the fastest)."""
    return _vnm_candidates(kernel, hw) if kernel.col_select else _block_candidates(kernel, hw)


def _vnm_candidates(kernel: Kernel, hw: Hardware) -> list[Candidate]:
    spec = hw.core.sparse
    assert spec is not None and spec.vnm is not None  # lowering ran it sparse only with the section
    comp = hw.core.compute
    v = kernel.row_block
    tiles = [tuple(t) for t in (spec.vnm.cta_tiles or comp.cta_tiles.sparse)]  # type: ignore[union-attr]
    exact = [t for t in tiles if t[0] == v]
    usable = exact or [t for t in tiles if v % t[0] == 0]
    base = parse_format(spec.vnm.runs_on)
    assert base is not None
    groups = -(-kernel.k // kernel.group_m)
    k_g = groups * SELECT
    inner = dataclasses.replace(kernel, k=k_g, keep_n=base.keep, group_m=base.group, pattern_executed=str(base),
                                **_plain())
    e = float(kernel.dtype_bytes)
    mbits = float(kernel.metadata_bits) + kernel.selection_bits
    n, batch = kernel.n, kernel.batch
    a_values, a_meta = stored_a(kernel)
    blocks = -(-kernel.m // v)
    cov = coverage(SELECT / kernel.group_m, blocks)
    b_total = cov * kernel.k * n * e * batch
    tiling = {"format": "V:N:M", "v": v, "gathered_k": k_g, "runs_on": str(base), "b_coverage": round(cov, 6)}
    resident = spec.vnm.resident_ctas if spec.vnm.resident_ctas is not None else 0
    return [Candidate((int(t[0]), int(t[1]), int(t[2])), inner, "sparse", mbits,
                      GridExtras(a_values, a_meta, b_total, True, 0.0, tiling,
                                 _rate(spec.vnm.gather_rows_per_cycle),
                                 resident=resident))
            for t in usable]


def _block_candidates(kernel: Kernel, hw: Hardware) -> list[Candidate]:
    spec = hw.core.sparse
    assert spec is not None and spec.block is not None
    comp = hw.core.compute
    bm_b, bk_b = kernel.row_block, kernel.col_block
    density = kernel.keep_n / kernel.group_m
    k_pad = kernel.k_padded
    block_cols = k_pad // bk_b
    lib = [tuple(t) for t in comp.cta_tiles.for_path("dense", kernel.dtype)]  # type: ignore[union-attr]
    square = spec.block.cta_n == "block"
    if spec.block.cta_m == "block" or square:  # one block row per CTA: M = the block height (a smaller tile)
        top = max(t[0] for t in lib)
        heights = {bm_b} if bm_b <= top else {t[0] for t in lib if bm_b % t[0] == 0}
        # cta_n 'block': a square output tile of the block height, one whole block per k-step
        tiles = {(h, h, bk_b) for h in heights} if square else {(h, t[1], t[2]) for h in heights for t in lib}
    else:  # library tiles over whole block rows (r of them, lockstep) or inside one
        tiles = {t for t in lib if t[0] % bm_b == 0 or bm_b % t[0] == 0}
    e = float(kernel.dtype_bytes)
    m, n, batch = kernel.m, kernel.n, kernel.batch
    brows = -(-m // bm_b)
    nnz = max(1, round(density * brows * block_cols))
    a_values, a_meta = stored_a(kernel)  # the nonzero blocks, their indices and the row pointers
    out = []
    for bm, bn, bk in sorted(tiles):
        step = bk if bk_b % bk == 0 else bk_b if bk_b < bk else 0
        if not step:
            continue
        r = max(1, bm // bm_b)
        imb = block_imbalance(block_cols, density, r, spec.block.imbalance)
        loop_blocks = max(1.0, imb * density * block_cols)
        k_loop = max(step, round(loop_blocks) * bk_b)
        inner = dataclasses.replace(kernel, path="dense", k=k_loop, keep_n=1, group_m=1, pattern_executed=None,
                                    metadata_bits=0, **_plain())
        cov = coverage(density, -(-m // bm) * r)
        b_total = cov * k_pad * n * e * batch
        meta_step = kernel.metadata_bits / 8 * r * step / bk_b  # each covered block row's block index
        tiling = {"format": "block", "block": [bm_b, bk_b], "block_rows_per_cta": r, "imbalance": round(imb, 6),
                  "nonzero_blocks": nnz, "cta_k_blocks": round(loop_blocks, 3), "b_coverage": round(cov, 6),
                  "cta_n": spec.block.cta_n, "index_load": spec.block.index_load}
        out.append(Candidate((bm, bn, step), inner, "dense", 0.0,
                             GridExtras(a_values, a_meta, b_total, True, meta_step, tiling,
                                        _rate(spec.block.gather_rows_per_cycle), r,
                                        concurrent=spec.block.resident_ctas or 0, stages=spec.block.stages or 0,
                                        load_trips=2 if spec.block.index_load == "dependent" else 1)))
    return out


# -- systolic arrays ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SystolicView:
    """A V:N:M or block kernel as the systolic tile generator sees it."""

    kernel: Kernel  # keep/group (and k) of the folds
    b_group: int  # rows of B per group of A
    mbits: float  # metadata bits per position of A the folds hold (with ``a_scale``: the stored metadata)
    decode: bool  # the N:M decode stage runs (V:N:M's 2:4 indices; not for block indices)
    tiling: dict[str, Any]
    a_scale: float = 1.0  # A's bytes (values, metadata) per position the folds hold: stored / held


def _stored_scale(kernel: Kernel, inner: Kernel) -> tuple[float, float]:
    """(a_scale, metadata bits per held position) that make one read of the folds' A, ``m`` x the held k
    positions of ``inner``, move the bytes A is stored in (``stored_a``): block folds hold zero blocks too."""
    values, meta = stored_a(kernel)
    held = kernel.m * (-(-inner.k // inner.group_m) * inner.keep_n) * kernel.batch  # positions the folds hold
    if held <= 0 or values <= 0:
        return 1.0, 0.0
    scale = values / (held * float(kernel.dtype_bytes))
    return scale, meta * 8 / (held * scale)


def systolic_view(kernel: Kernel, cols: int, imbalance: float | None = None) -> SystolicView:
    """How a fold schedule runs ``kernel`` (module docstring)."""
    if kernel.col_select:  # V:N:M: N per group in the rows, 4 gathered rows of B per group
        inner = dataclasses.replace(kernel, **_plain())
        scale, mbits = _stored_scale(kernel, inner)  # column indices of whole (padded) V-row blocks
        return SystolicView(inner, kernel.col_select, mbits, True, {"format": "V:N:M", "v": kernel.row_block},
                            scale)
    bm_b, bk_b = kernel.row_block, kernel.col_block
    density = kernel.keep_n / kernel.group_m
    k_pad = kernel.k_padded
    block_cols = k_pad // bk_b
    r = max(1.0, cols / bm_b)
    union = block_cols * (1.0 - (1.0 - density) ** r)
    if imbalance is not None:
        union = min(block_cols, imbalance * density * block_cols)
    kept_cols = max(1, min(block_cols, round(union)))
    keep = kept_cols * bk_b
    inner = dataclasses.replace(kernel, k=k_pad, keep_n=keep, group_m=k_pad, **_plain())
    # the folds compute the union's zero blocks (cycles), but only the nonzero blocks and their BSR indices are
    # read and filled into SRAM; the zeros are filled in on chip
    scale, mbits = _stored_scale(kernel, inner)
    return SystolicView(inner, keep, mbits, False,
                        {"format": "block", "block": [bm_b, bk_b], "block_rows_per_fold": round(r, 3),
                         "fold_k_blocks": kept_cols, "union_share": round(kept_cols / block_cols, 6)}, scale)
