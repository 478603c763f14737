"""How a part runs the V:N:M and block-sparse formats (``core.sparse.vnm``, ``core.sparse.block``).

Neither format has a datapath of its own: V:N:M (:mod:`accelsim.formats.vnm`) runs on a native N:M
datapath (the 2:4 sparse tensor cores) behind a column-gather stage; block sparsity
(:mod:`accelsim.formats.block`) runs on the dense datapath over the nonzero blocks, its B rows fetched
by block index through the same kind of gather stage. A part that lacks the section runs the format
dense (``format_unsupported``). Both sections are left out of a config's echo when absent, so configs
that do not declare them read back and hash as before.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from accelsim.hardware.base import DtypeName, OmitsDefaults, PosFloat, PosInt, RateOrUnlimited, Strict, Triple


class VnmSupport(OmitsDefaults):
    """V:N:M on a native N:M datapath: per V-row block, the 4 selected rows of B of each group of M are
    gathered (``gather_rows_per_cycle``) and run N:4 inside on the native pattern ``runs_on``."""

    runs_on: str = Field("2:4", description="The native pattern (a key of core.sparse.patterns) the gathered "
                         "columns run on; a V:N:M request runs when its N is at most that pattern's N (N = 1 runs as "
                         "2 on 2:4, zero-filled), at that pattern's rate and in the element types it runs.")
    cta_tiles: list[Triple] | None = Field(
        None, description="tensor_core: the V:N:M kernel's CTA tiles [BM, BN, BK], BK in gathered columns (4 per "
                          "group of M); a tile runs V when BM = V (Spatha instantiates BM = V), else when BM divides "
                          "V; no such tile: the layer runs dense (block_shape_misaligned). Absent: "
                          "core.compute.cta_tiles.sparse. Systolic parts: V must be a multiple of the array's "
                          "columns (a fold of A shares one selection).")
    gather_rows_per_cycle: RateOrUnlimited = Field(
        description="Column-gather stage throughput: rows of B (each one tile wide) a core gathers by index per "
                    "cycle; the stage runs after a tile's load and before its metadata decode.")
    resident_ctas: PosInt | None = Field(
        None, description="tensor_core: CTAs of the V:N:M kernel a core holds at once. A core runs them back to "
                          "back through one tile pipeline, so the next CTA's loads overlap the current one's last "
                          "k-steps and C write-back (a short k-loop then streams at the memory rate instead of "
                          "paying load latency and write-back per wave). Absent: as many as shared memory holds "
                          "at the tile's stages (Spatha's small 1-4 warp CTAs are built to share an SM); 1: one "
                          "CTA per core at a time, each wave paying its own prologue and write-back.")

    omitted = {"resident_ctas": None}


class BlockMultiple(Strict):
    """Multiples a block's sides must be for the dense datapath to run whole blocks."""

    m: PosInt = Field(1, description="Block rows (BM) must be a multiple of this (the dense MMA m).")
    k: PosInt = Field(1, description="Block columns (BK) must be a multiple of this (the dense MMA k).")


class BlockSupport(OmitsDefaults):
    """Block sparsity on the dense datapath over the nonzero blocks (a BSR / blocked-ELL kernel)."""

    block_multiple: BlockMultiple = Field(
        default_factory=lambda: BlockMultiple(), description="A block shape whose sides are not multiples of these "
        "does not run (block_shape_misaligned, the layer runs dense): no padding of blocks.")
    gather_rows_per_cycle: RateOrUnlimited = Field(
        description="Gather stage throughput: rows of B a core fetches by block index per cycle (one block column "
                    "selects BK rows of B per k-step).")
    cta_m: Literal["block", "library"] = Field(
        "block", description="The block-sparse kernel's CTA M tile: 'block': one block row per CTA (M = the block "
        "height, or the largest library M dividing a taller block; as Triton's bsr_dense_mm takes BLOCK_M from the "
        "block size), so blocks smaller than the library's tiles run smaller, less efficient tiles; 'library': the "
        "dense library tiles whose M is a multiple of the block height or divides it, a CTA walking its r block "
        "rows' nonzero blocks in lockstep (imbalance below).")
    imbalance: PosFloat | None = Field(
        None, description="Per-CTA (per-fold) k-loop length over the mean nonzero blocks of a block row. Absent: "
                          "the expected maximum, over the r block rows a CTA tile covers (r = tile M / BM, at "
                          "least 1), of Binomial(block columns, density) nonzero blocks (random placement; the "
                          "CTA's rows advance in lockstep), over its mean; 1 when r = 1.")
    dtypes: list[DtypeName] | None = Field(
        None, description="Element types the block-sparse kernel runs; absent = every type the dense datapath runs.")
    cta_n: Literal["library", "block"] = Field(
        "library", description="tensor_core: the block-sparse kernel's CTA N tile and k-step. 'library': N from the "
        "dense library tiles, a k-step the library's BK inside a block column; 'block': the output tile is square, "
        "block height x block height, and a k-step is one whole nonzero block (PyTorch 2.1's Triton bsr_dense_mm "
        "tiles its output into blocksize[0] x blocksize[0] and runs one tl.dot per nonzero block), so B is reused "
        "only BM-fold and small blocks read far more bytes per MAC.")
    stages: PosInt | None = Field(
        None, description="tensor_core: software-pipeline stages of the block-sparse kernel (1: no prefetch, each "
                          "k-step's loads start after the previous step's MMA and their latency is exposed, as "
                          "Triton num_stages=1, PyTorch 2.1 bsr_dense_mm's default). Absent: core.sram.stages.")
    resident_ctas: PosInt | None = Field(
        None, description="tensor_core: CTAs of the block-sparse kernel a core runs at once (at most what shared "
                          "memory holds at the kernel's stages); they share its tensor cores and fill port and hide "
                          "each other's load latency. Absent: core.compute.ctas_per_core.")
    index_load: Literal["prefetched", "dependent"] = Field(
        "prefetched", description="tensor_core: how a k-step gets its block's column index. 'prefetched': with the "
        "tile's other loads (one load latency per k-step); 'dependent': the B rows' address waits for the index "
        "load, two load latencies (dram.latency_ns each) in series per k-step; exposed where stages is 1 (PyTorch "
        "2.1 bsr_dense_mm loads col_indices, then the dense block it names, inside the loop without prefetch).")

    omitted = {"cta_n": "library", "stages": None, "resident_ctas": None, "index_load": "prefetched"}


def vnm_tile_rows(compute: Any, support: VnmSupport) -> tuple[int, ...]:
    """The row counts a V:N:M request's V must be a multiple of: the M of the V:N:M kernel's CTA tiles
    (``support.cta_tiles``, else the compute's sparse CTA tiles) on tensor-core parts, the array width
    (a fold's columns of A share one selection) on systolic ones."""
    tiles = getattr(compute, "cta_tiles", None)
    if tiles is not None:
        return tuple(sorted({int(t[0]) for t in (support.cta_tiles or tiles.sparse)}))
    cols = getattr(compute, "cols", None)
    return (int(cols),) if cols is not None else ()
