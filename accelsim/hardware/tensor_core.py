"""Compute kind ``tensor_core``: a GPU-like part, tensor cores per SM fed from shared memory, CTAs in waves."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from accelsim.config import schema as configio
from accelsim.hardware.base import DtypeName, Fraction, OmitsDefaults, PosInt, Rate, Strict, Triple
from accelsim.hardware.kinds import ComputeKind, TraceLabels


class PerPath(Strict):
    """A value for the dense kernel and one for the sparse kernel."""

    dense: Fraction
    sparse: Fraction


class InstructionTiles(Strict):
    """MMA instruction shapes [m, n, k] (k is the logical, uncompressed reduction)."""

    dense: Triple
    sparse: Triple


TileList = Annotated[list[Triple], Field(min_length=1)]


def check_tiles_align(tiles: list[list[int]], mma: list[int], where: tuple[str | int, ...], what: str) -> None:
    """Raise a field error at ``where`` + index for the first CTA tile that is not a multiple of the ``what`` MMA
    tile ``mma``."""
    for i, tile in enumerate(tiles):
        if any(t % m for t, m in zip(tile, mma, strict=True)):
            raise configio.FieldError((*where, i), f"CTA tile {tile} is not a multiple of the {what} MMA tile {mma}")


class DtypeTiles(Strict):
    """The library's CTA tiles for one element type, dense and sparse."""

    dense: TileList
    sparse: TileList


class CtaTiles(OmitsDefaults):
    """Candidate CTA tiles [BM, BN, BK] of the library's dense and sparse kernels."""

    omitted = {"sparse_searched": None}

    dense: TileList
    sparse: TileList
    by_dtype: dict[DtypeName, DtypeTiles] = Field(
        default_factory=dict, description="Tiles of the library's kernels for one element type where they differ "
        "from dense / sparse (e.g. fp4 kernels take BK = 256: the same 128-byte k-tile as fp16's 64); element types "
        "not listed use dense / sparse.")
    sparse_searched: list[Triple] | None = Field(
        None, min_length=1, description="Tiles of the 2:4 kernels a caller chooses among when it searches the "
        "library's algorithms for each shape (timing every cuSPARSELt algorithm id and keeping the fastest, as "
        "a benchmark harness does); `sparse` is what the library's default algorithm runs, and what `run`, `sweep` "
        "and `serve` use. Used by `validate-hw` and `calibrate` for measurement rows whose harness searched "
        "(`kernels` column or tag, or a known searching harness); unset: the same as `sparse`.")

    def for_path(self, path: str, dtype: str) -> list[list[int]]:
        """The candidate tiles of the ``path`` ('dense' | 'sparse') kernel for ``dtype``."""
        own = self.by_dtype.get(dtype)  # type: ignore[call-overload]
        return list(getattr(own if own is not None else self, path))


class SplitK(Strict):
    """Split-k factors available to the dense and to the sparse kernels."""

    dense: Annotated[list[PosInt], Field(min_length=1)] = [1]
    sparse: Annotated[list[PosInt], Field(min_length=1)] = [1]


class StreamK(Strict):
    """Stream-K decomposition of the library's persistent kernels (CUTLASS 3 sm90 ``Heuristic`` mode)."""

    dense: bool = Field(False, description="The dense kernels spread the k-steps of a partial last wave's output "
                                           "tiles over one wave of persistent CTAs (stream-K).")
    sparse: bool = Field(False, description="The same for the sparse kernels.")
    min_k_steps_per_unit: PosInt = Field(8, description="Fewest k-steps a stream-K unit runs (CUTLASS "
                                                        "min_iters_per_sk_unit_).")

    def on(self, path: str) -> bool:
        """Whether the ``path`` ('dense' | 'sparse') kernels use stream-K."""
        return bool(getattr(self, path))


RasterOrder = Literal["grouped", "grouped_columns", "m_fastest"]
GroupWidths = Annotated[list[PosInt], Field(min_length=1)]
RasterOrders = Annotated[list[RasterOrder], Field(min_length=1)]


class Raster(Strict):
    """The order a library's GEMM kernel issues its CTAs in: which output tiles share a wave, and so L2.

    ``order`` and ``group_width`` may each list candidates: the library launches the kernel it chose (CTA tile,
    split-k, timed in the first candidate) in the candidate whose waves read the fewest A and B bytes from DRAM
    (the first listed wins a tie), as cuBLAS's heuristics pick a kernel's CTA swizzle per problem and CUTLASS 3's
    tile scheduler takes the raster order and swizzle size as run-time arguments.
    """

    order: RasterOrders = Field(
        ["grouped"], description="'grouped': CTAs walk a band of group_width CTA-rows (m fastest inside the band), "
        "then move along n, then take the next band (Triton's grouped matmul order, GROUP_M; CUTLASS 3's "
        "RasterOrder::AlongN with a swizzle); 'grouped_columns': the same with m and n exchanged (CUTLASS 2.x "
        "GemmIdentityThreadblockSwizzle<group_width>: a band of CTA-columns walked along m; CUTLASS 3's AlongM); "
        "'m_fastest': blockIdx.x = m tile over the whole grid, no swizzle (CUTLASS's "
        "GemmIdentityThreadblockSwizzle<1>; the model's order before issue 17, kept for ablation). A list: "
        "candidates the library picks from per GEMM (fewest DRAM bytes; one name is a list of one).")
    group_width: GroupWidths = Field(
        [8], description="CTA-rows (columns for grouped_columns) per band, in clusters of core.compute.cluster "
        "(CUTLASS 3 swizzles whole clusters), cut to the grid. Default 8: Triton's matmul tutorial "
        "GROUP_SIZE_M = 8, CUTLASS's library generator default SwizzlingFunctor.Identity8 "
        "(python/cutlass_library/generator.py, dense and sparse GEMMs). A list: candidates, as for order.")

    # one name or width is a list of one (json_schema_input_type: the schema of the file says so too)
    @field_validator("order", mode="before", json_schema_input_type=RasterOrder | RasterOrders)
    @classmethod
    def _one_or_more_orders(cls, value: Any) -> Any:
        return value if isinstance(value, list) else [value]

    @field_validator("group_width", mode="before", json_schema_input_type=PosInt | GroupWidths)
    @classmethod
    def _one_or_more_widths(cls, value: Any) -> Any:
        return value if isinstance(value, list) else [value]

    def candidates(self) -> list[tuple[str, int]]:
        """(order, group width) pairs the library may pick from, in preference order (m_fastest takes no width)."""
        out: list[tuple[str, int]] = []
        for order in self.order:
            for width in self.group_width[:1] if order == "m_fastest" else self.group_width:
                if (order, width) not in out:
                    out.append((order, width))
        return out


class Cluster(OmitsDefaults):
    """CTAs launched together as a thread-block cluster (Hopper and later): a tile several of them load is read
    from L2 once and multicast into each CTA's shared memory (TMA multicast)."""

    m: PosInt = Field(1, description="CTAs of a cluster along m: they share each B tile (read from L2 once).")
    n: PosInt = Field(1, description="CTAs of a cluster along n: they share each A tile (read from L2 once).")
    pair_mma: bool = Field(False, description="The two CTAs of a cluster along m (m = 2) run one MMA together "
                           "(Blackwell's tcgen05 cta_group::2): each keeps half of the shared B tile in its shared "
                           "memory and the tensor cores read the partner's half across the cluster, so each CTA's B "
                           "fills (and the L2 reads for them) are half the tile, its B reads (energy) the whole "
                           "tile. False: each CTA's shared memory receives the whole B tile (TMA multicast saves "
                           "the L2 reads only). Left out of the resolved config when False.")

    omitted = {"pair_mma": False}

    @model_validator(mode="after")
    def _pairs_are_two(self) -> Cluster:
        if self.pair_mma and self.m != 2:
            raise configio.FieldError(("pair_mma",), f"an MMA pair is two CTAs along m (tcgen05 cta_group::2): "
                                                      f"pair_mma needs m = 2, got m = {self.m}")
        return self


UsableFraction = Annotated[float, Field(ge=0, le=1)]


class L2Reuse(Strict):
    """How A and B panels survive in L2 from one wave of CTAs to a later one."""

    across_waves: Literal["reuse_distance", "all_or_nothing"] = Field(
        "reuse_distance", description="'reuse_distance': a panel is re-read from DRAM only when more than the "
        "usable L2 capacity of other data (panels, C tiles) passed through L2 since its last use (an LRU stack "
        "distance in bytes, per k-slab, with the raster order's wave footprints); 'all_or_nothing': every block "
        "is re-read in every wave unless all of A and B fit in l2.bytes (the model before issue 17, ablation).")
    usable_fraction: UsableFraction = Field(
        1.0, description="Share of l2.bytes a GEMM's panels can hold across waves under reuse_distance (1: the "
        "whole L2 as an ideal LRU; lower for an L2 split into partitions that each cache lines for their own "
        "SMs, or for replacement losses; 0: no reuse across waves). Estimate.")


class OperandFeed(Strict):
    """Shared memory feeding the tensor cores: the main loop's operand reads (each warp loads its A and B
    fragments) and the tile fills (cp.async writes of the next k-step) share the banks of one SM."""

    smem_bytes_per_cycle: Rate | None = Field(
        None, description="Bytes the shared-memory banks of one SM serve per cycle, reads and fill writes "
        "together (32 banks x 4 B = 128 on sm50 and later). While a main loop's operand demand at the full "
        "tensor rate exceeds it, the tensor cores wait: the kernel's rate is scaled by the share the banks "
        "can feed. None: not modelled (operands assumed always fed).")
    warp_tile: Annotated[list[PosInt], Field(min_length=2, max_length=2)] = Field(
        [64, 64], description="[m, n] of the MMA tile one warp computes (cut to the CTA tile): each warp reads "
        "its m rows of A and n columns of B from shared memory per k-step, so A is read BN / n times and B "
        "BM / m times per CTA.")

    def share(self, tile: tuple[int, int, int], a_step: float, b_step: float, cycles_at_peak: float) -> float:
        """Share of the tensor rate the banks sustain for a CTA ``tile`` whose k-step fills ``a_step`` and
        ``b_step`` bytes and takes ``cycles_at_peak`` cycles at the full tensor rate (1.0 when not modelled)."""
        if self.smem_bytes_per_cycle is None or cycles_at_peak <= 0:
            return 1.0
        bm, bn, _ = tile
        wm, wn = min(self.warp_tile[0], bm), min(self.warp_tile[1], bn)
        demand = a_step * (1 + bn / wn) + b_step * (1 + bm / wm)  # fill writes + warp reads per k-step
        return min(1.0, self.smem_bytes_per_cycle * cycles_at_peak / demand) if demand > 0 else 1.0


class Sm80Sparse(OmitsDefaults):
    """2:4 kernels compiled for sm80 (Ampere's ``mma.sp``) run on a later part whose own 2:4 kernels use another
    instruction (Hopper's ``wgmma.sp``): what a measurement whose ``sparse_isa`` is ``sm80`` ran (e.g. CUTLASS's
    sparse GEMMs on H100 before it had Hopper sparse kernels). The mma.sp operands reach the tensor cores through
    the warps' ldmatrix reads of shared memory (``operand_feed``); the main loop keeps the part's
    ``efficiency.sparse``. Used by ``validate-hw`` and ``calibrate`` for such rows only."""

    mma: Triple = Field(description="The sm80 2:4 MMA instruction tile [m, n, k] (logical k).")
    cta_tiles: TileList = Field(description="CTA tiles of the default sm80 2:4 kernel.")
    cta_tiles_searched: list[Triple] | None = Field(
        None, min_length=1, description="The sm80 2:4 kernels' tiles when the harness searched them (a measurement's "
        "``kernels: searched``); unset: cta_tiles.")
    operand_feed: OperandFeed = Field(description="Shared-memory banks feeding mma.sp through ldmatrix.")
    dtypes: Annotated[list[DtypeName], Field(min_length=1)] = Field(
        description="Element types sm80 mma.sp runs; a row of another type (e.g. fp8) runs dense "
                    "(dtype_unsupported).")

    omitted = {"cta_tiles_searched": None}

    @model_validator(mode="after")
    def _tiles_align(self) -> Sm80Sparse:
        for where, tiles in (("cta_tiles", self.cta_tiles), ("cta_tiles_searched", self.cta_tiles_searched or [])):
            check_tiles_align(tiles, self.mma, (where,), "sm80 2:4")
        return self


class TensorCoreCompute(OmitsDefaults):
    """GPU-like streaming multiprocessor: tensor cores fed from shared memory, one CTA tile at a time."""

    kind: Literal["tensor_core"] = Field(description="Compute model: tensor cores (GPU-like SM).")
    macs_per_cycle: dict[DtypeName, Rate] = Field(
        description="Dense MACs per cycle per core (SM) for each supported dtype.")
    mma: InstructionTiles = Field(description="MMA instruction tiles [m, n, k], dense and sparse.")
    cta_tiles: CtaTiles = Field(
        description="CTA tiles [BM, BN, BK] the library offers; for each GEMM the fastest feasible one "
                    "is used (as a library heuristic / autotuner would). BK is logical (uncompressed) k.")
    ctas_per_core: PosInt = Field(1, description="CTAs resident per core at once.")
    split_k: SplitK = Field(
        default_factory=lambda: SplitK(), description="Split-k factors the dense and the sparse library kernels "
        "may use: k is cut into slices run by separate CTAs whose fp32 partial tiles are reduced afterwards "
        "(extra C traffic). The fastest is used.")
    accumulator_bytes: Annotated[int, Field(gt=0, le=16)] = Field(
        4, description="Bytes per partial sum a split-k slice writes for the reduction (4: fp32 partial tiles, as "
        "cuBLAS / CUTLASS accumulate fp16 and bf16 GEMMs; 2 for fp16 partials; at most 16): each CTA of a split-k "
        "kernel writes BM x BN of them and the reduction reads them back (DRAM / L2 traffic and L2 footprint of C). "
        "The same key as a systolic part's. Left out of the resolved config at 4.")
    stream_k: StreamK | None = Field(
        None, description="Stream-K for a partial last wave (unset: data-parallel waves only, left out of the "
        "resolved config). With it, a split-1 candidate with a partial last wave may run the output tiles of its "
        "last two waves (all, under two waves) as one wave of up to `cores` units of equal k-steps (CUTLASS 3's "
        "sm90 layout); the faster of that and data-parallel is kept. The units' fp32 partial tiles (the fix-up) "
        "are taken to stay in L2 and are not timed (echoed as tiling.stream_k).")
    raster: Raster = Field(default_factory=lambda: Raster(),
                           description="CTA rasterization of the library's GEMM kernels (sets which A/B panels "
                                       "each wave shares and how far apart in time a panel is reused).")
    cluster: Cluster = Field(
        default_factory=lambda: Cluster(), description="Thread-block cluster of the library's GEMM kernels: L2 -> "
        "SM bytes per CTA are A / n + B / m of its tiles (TMA multicast; shared memory still receives whole "
        "tiles); 1 x 1: no clusters (parts before Hopper). Partners are cut to the grid.")
    l2_reuse: L2Reuse = Field(default_factory=lambda: L2Reuse(),
                              description="How A/B panels are kept in L2 across waves of CTAs.")
    operand_feed: OperandFeed = Field(
        default_factory=lambda: OperandFeed(), description="Shared-memory banks feeding the tensor cores "
        "(operand reads and tile fills per SM); unset: not modelled.")
    efficiency: PerPath = Field(
        description="CALIBRATED: fraction of peak tensor throughput the library's kernels sustain in their "
                    "main loop (issue limits, register pressure, clocks under load; the shared-memory "
                    "feed is operand_feed's when set), dense and sparse.")
    sm80_sparse: Sm80Sparse | None = Field(
        None, description="How sm80 (Ampere mma.sp) 2:4 binaries run on this part, for measurements that ran them "
        "(`sparse_isa: sm80`); unset: such rows run the part's own 2:4 kernels (the sm80 instruction is its own, or "
        "not described). Left out of the resolved config when unset.")

    omitted = {"stream_k": None, "sm80_sparse": None, "accumulator_bytes": 4}

    def with_sm80_sparse(self) -> TensorCoreCompute:
        """This compute with its 2:4 kernels replaced by the sm80 ones of ``sm80_sparse`` (itself when unset)."""
        sm80 = self.sm80_sparse
        if sm80 is None:
            return self
        tiles = self.cta_tiles.model_copy(update={"sparse": list(sm80.cta_tiles), "sparse_searched": (
            list(sm80.cta_tiles_searched) if sm80.cta_tiles_searched is not None else None), "by_dtype": {
            d: t.model_copy(update={"sparse": list(sm80.cta_tiles)}) for d, t in self.cta_tiles.by_dtype.items()}})
        return self.model_copy(update={"mma": self.mma.model_copy(update={"sparse": list(sm80.mma)}),
                                       "cta_tiles": tiles, "operand_feed": sm80.operand_feed,
                                       "stream_k": None if self.stream_k is None else
                                       self.stream_k.model_copy(update={"sparse": False})})

    @model_validator(mode="after")
    def _tiles_align(self) -> TensorCoreCompute:
        lists: list[tuple[tuple[str, ...], list[list[int]]]] = [
            ((path,), getattr(self.cta_tiles, path)) for path in ("dense", "sparse")]
        lists += [(("by_dtype", dtype, path), getattr(tiles, path)) for dtype, tiles in self.cta_tiles.by_dtype.items()
                  for path in ("dense", "sparse")]
        if self.cta_tiles.sparse_searched is not None:
            lists.append((("sparse_searched",), self.cta_tiles.sparse_searched))
        for where, tiles in lists:
            path = "sparse" if where[-1] == "sparse_searched" else where[-1]
            check_tiles_align(tiles, getattr(self.mma, path), ("cta_tiles", *where), path)
        return self


class TensorCoreKind(ComputeKind):
    """Cores (SMs) each running CTA tiles on tensor cores (engine simulation ``cta_waves``)."""

    name = "tensor_core"
    schema = TensorCoreCompute
    simulation = "cta_waves"
    calibrated_fields = ("core.compute.efficiency.dense", "core.compute.efficiency.sparse",
                         "launch_overhead_cycles.dense", "launch_overhead_cycles.sparse", "dram.sustained_fraction")
    trace = TraceLabels("SM", (("wave_class", "wave_class"), ("k_step", "chunk")),
                        ("cta_tile", "split_k", "ctas", "waves", "last_wave_ctas", "wave_classes", "raster", "cluster",
                         "l2_reuse", "dram_reread", "smem_operand_share"), waves=True)

    def peak_macs_per_cycle(self, compute: Any, dtype: str) -> float:
        return float(compute.macs_per_cycle.get(dtype, 0.0))

    def check(self, hw: Any) -> None:
        """The V:N:M kernel's CTA tiles (core.sparse.vnm.cta_tiles) are whole sparse MMA tiles."""
        vnm = hw.core.sparse.vnm if hw.core.sparse is not None else None
        check_tiles_align((vnm.cta_tiles or []) if vnm is not None else [], hw.core.compute.mma.sparse,
                          ("core", "sparse", "vnm", "cta_tiles"), "sparse")

    def slots_per_core(self, compute: Any) -> int:
        return int(compute.ctas_per_core)

    def sparse_efficiency_ratio(self, compute: Any) -> float:
        return float(compute.efficiency.sparse / compute.efficiency.dense)

    def sparse_at_dense_efficiency(self, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "efficiency": {**data["efficiency"], "sparse": data["efficiency"]["dense"]}}


TENSOR_CORE = TensorCoreKind()
