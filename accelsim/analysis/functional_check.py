"""Functional path: prune, compress, execute from the compressed form, and check the result.

The timing model only counts bytes and cycles of the compressed weight; this module proves the
format is real by building it (the format's own ``prune`` / ``compress``, e.g.
:mod:`accelsim.formats.nm`, which documents the N:M layout) and running the GEMM
``C[m x n] = A[m x k] . B[k x n]`` from it, tile by tile, through the same fold/chunk tiling the
timing model uses (block sparsity on a systolic array: the engine's folds, each packing the union of its
block rows' nonzero block columns). :func:`functional_check` returns a frozen :class:`FunctionalCheck`
(``to_dict()``: the JSON ``accelsim functional-check`` prints); :mod:`accelsim.report.functional_text`
renders it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.dtypes import DTYPE_BYTES, stored_bytes
from accelsim.engine import simulate
from accelsim.engine import tiling as tl
from accelsim.engine.functional import bitmap_gemm_tiles, csr_gemm_tiles, nm_gemm_tiles, run_tiled
from accelsim.errors import FunctionalError, InfeasibleError
from accelsim.formats import SparsityFormat, parse_spelling
from accelsim.formats.base import CompressedOperand, bits_to_index
from accelsim.formats.nm import (
    Compressed,
    Pattern,
    Pruned,
    as_2d,
    check_nm,
    compress,
    decompress,
    prune_magnitude,
    unpack_metadata,
    validate_mask,
)
from accelsim.hardware.kinds import kind_of
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.lowering import REASON_CODES, Kernel, format_support, lower_layer, lowering_target, natives_for
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.workloads.model import Gemm

__all__ = ["Compressed", "FunctionalCheck", "GemmShape", "Pruned", "TilePlan", "compress", "decompress",
           "execute_compressed", "functional_check", "metadata_bits_for", "prune_magnitude", "unpack_metadata",
           "validate_mask"]

DENSE = Pattern(1, 1)  # a request for dense runs as 1:1: every value kept, no metadata

# Significand bits (including the implicit one) and largest finite value of each emulated dtype.
_FLOAT_FORMATS: dict[str, tuple[int, float]] = {
    "fp32": (24, float(np.finfo(np.float32).max)),
    "tf32": (11, float(np.finfo(np.float32).max)),
    "fp16": (11, 65504.0),
    "bf16": (8, float(np.finfo(np.float32).max)),
    "fp8": (4, 448.0),  # e4m3
}
# Sub-byte types are emulated exactly: values drawn from the type's grid, held in numpy containers
# (int8 for int4, float32 for fp4 / fp6); products and sums of grid values are exact in the float64 /
# int64 accumulator, so the check asks for zero error. Integer types: (low, high) inclusive.
_INT_RANGES: dict[str, tuple[int, int]] = {"int8": (-127, 127), "int4": (-8, 7)}


def minifloat_grid(exp_bits: int, man_bits: int, bias: int) -> np.ndarray:
    """Non-negative values of an OCP MX minifloat with no inf/NaN (every exponent code is finite):
    subnormals m / 2^man x 2^(1 - bias), normals (1 + m / 2^man) x 2^(e - bias)."""
    mant = np.arange(2 ** man_bits) / 2 ** man_bits
    values = [mant * 2.0 ** (1 - bias)]
    values += [(1 + mant) * 2.0 ** (e - bias) for e in range(1, 2 ** exp_bits)]
    return np.unique(np.concatenate(values))


# fp4 = e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6); fp6 = e2m3 (0 .. 7.5); see accelsim.dtypes
MINIFLOATS: dict[str, np.ndarray] = {"fp4": minifloat_grid(2, 1, 1), "fp6": minifloat_grid(2, 3, 1)}


# -- results --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class GemmShape(Record):
    """The checked GEMM: C[m x n] = A[m x k] . B[k x n]."""

    m: int
    n: int
    k: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class TilePlan(Record):
    """The tiles the check ran: from the timing model's plan (``array`` and ``dataflow`` say which) or
    explicit (``source`` "explicit")."""

    source: str
    array: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    dataflow: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    tile_m: int
    tile_k_values: int
    tile_n: int
    # block sparsity on a systolic array: the block columns the timing model packs into each fold's k (the
    # expected union of its block rows' nonzero block columns, engine.structured)
    fold_k_blocks: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FunctionalCheck(Record):
    """One functional check: what ran (``pattern_executed``, and why, ``reason``), the bytes of the
    compressed form against dense, and the error against numpy.

    ``exercised`` is False when a sparse pattern was asked for but ran dense (``not_exercised`` says
    why): then ``passed`` only compares numbers and proves nothing about the format.
    """

    shape: GemmShape
    pattern: str
    pattern_executed: str
    reason: str | None
    exercised: bool
    not_exercised: str | None
    dtype: str
    seed: int
    k_padded: int
    padding: Mapping[str, tuple[int, ...]]
    tiling: TilePlan
    tiles_executed: int
    # block sparsity on a systolic array: the block columns each fold of tile_m rows packed (the union of its
    # block rows' nonzero block columns in this A), against the timing model's expected ``tiling.fold_k_blocks``
    fold_k_blocks_executed: tuple[int, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    metadata_bits: int
    value_bytes: int
    metadata_bytes: int
    compressed_bytes: int
    dense_bytes: int
    compressed_fraction: float
    compression_ratio: float
    max_abs_error: float
    max_rel_error: float
    tolerance: float
    passed: bool


# -- requests ------------------------------------------------------------------------------------

def metadata_bits_for(m: int) -> int:
    """Bits needed to index a position in a group of ``m``: ceil(log2 m) (0 when m == 1)."""
    return bits_to_index(m)


def _requested(pattern: object) -> SparsityFormat:
    """``"N:M"`` (any registered spelling), ``"dense"`` (= 1:1), a format or an (N, M) pair; M:M stays M:M."""
    if isinstance(pattern, SparsityFormat):
        return pattern
    if isinstance(pattern, tuple | list) and len(pattern) == 2:
        n, m = int(pattern[0]), int(pattern[1])
        check_nm(n, m)
        return Pattern(n, m)
    try:
        fmt = parse_spelling(pattern)
    except ValueError as err:
        raise FunctionalError(f"pattern: {err}") from None
    return DENSE if fmt is None else fmt


# -- execution -----------------------------------------------------------------------------------

def _acc_dtype(values: np.ndarray, b: np.ndarray, acc_dtype: object) -> np.dtype:
    if acc_dtype is not None:
        dt = np.dtype({"fp64": "float64", "fp32": "float32", "int32": "int32", "int64": "int64"}.get(
            str(acc_dtype), acc_dtype))  # type: ignore[call-overload]
        if dt not in (np.float64, np.float32, np.int64, np.int32):
            raise FunctionalError(f"accumulator dtype must be float64, float32, int64 or int32, got {dt}")
        return dt
    both_int = np.issubdtype(values.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)
    return np.dtype(np.int64 if both_int else np.float64)


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise FunctionalError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def execute_compressed(c: CompressedOperand, b: np.ndarray, tile_m: int, tile_k_groups: int, tile_n: int, *,
                       tile_k_values: int | None = None, acc_dtype: object = None,
                       return_tiles: bool = False, folds: bool = False) -> np.ndarray | tuple[np.ndarray, int]:
    """C = A . B from the compressed A, tile by tile (numba kernel); accumulates in float64 (int64 for ints).

    A tile is ``tile_m`` rows of A x ``tile_k_groups`` groups (``tile_k_groups * N`` kept values;
    ``tile_k_values`` overrides it with a count of kept values, as an array fold that splits a group
    needs) x ``tile_n`` columns of B. ``b`` has k (or k_padded) rows. ``acc_dtype`` may be
    float64/float32/int64/int32. With ``return_tiles`` returns ``(C, tiles_executed)``.

    A compressed operand with a ``layout`` of "csr" or "bitmap" (unstructured) runs its own kernel, its k
    tile counting dense positions; one with a ``row_index`` (channel) computes its kept rows and places
    them at those rows of C.

    ``folds``: run a block-sparse A as a systolic array's folds (``BlockCompressed.folded_form``): each fold of
    ``tile_m`` rows packs the union of its block rows' nonzero block columns, ``tile_k_values`` positions of it
    per k-fold (without ``folds`` a block format runs as a BSR kernel, one nonzero block per k-step).
    """
    b = as_2d(b, "B")
    if b.shape[0] not in (c.k, c.k_padded):
        raise FunctionalError(f"B has {b.shape[0]} rows; A's k is {c.k} (padded {c.k_padded})")
    layout = getattr(c, "layout", "gather")
    if layout in ("csr", "bitmap"):
        return _execute_load_sparse(c, b, layout, tile_m, tile_n, tile_k_values or tile_k_groups, acc_dtype,
                                    return_tiles)
    tm = _positive("tile_m", tile_m)
    tn = _positive("tile_n", tile_n)
    tiled_form = getattr(c, "tiled_form", None)
    if tiled_form is not None:  # a format with its own tiled kernel (V:N:M's gather, block-sparse BSR or folds)
        folded = folds and hasattr(c, "folded_form")  # block sparsity on a systolic array: the folds pack unions
        kind, arrays, params = c.folded_form(tm) if folded else tiled_form()  # type: ignore[attr-defined]
        if tile_k_values is not None:
            tkc = _positive("tile_k_values", tile_k_values)
        else:  # V:N:M counts kept values per group (N); a block format takes one block per k-step
            tkc = _positive("tile_k_groups", tile_k_groups) * (params[1] if kind == "vnm" else 1)
        acc = _acc_dtype(arrays[0], b, acc_dtype)
        out = np.zeros((c.rows, b.shape[1]), dtype=acc)
        tiles = run_tiled(kind, arrays, params, np.ascontiguousarray(b, dtype=acc), out, tm, tkc, tn, acc)
        return (out, tiles) if return_tiles else out
    values, indices, keep, group = c.gather()
    if tile_k_values is not None:
        tkc = _positive("tile_k_values", tile_k_values)
    else:
        tkc = _positive("tile_k_groups", tile_k_groups) * keep
    acc = _acc_dtype(values, b, acc_dtype)
    out = np.zeros((values.shape[0], b.shape[1]), dtype=acc)
    vals = np.ascontiguousarray(values, dtype=acc)
    bb = np.ascontiguousarray(b, dtype=acc)
    tiles = int(nm_gemm_tiles(vals, indices, bb, out, keep, group, tm, tkc, tn))
    row_index = getattr(c, "row_index", None)
    if row_index is not None:  # the kept rows of a channel-pruned A: the pruned rows of C are zero
        full = np.zeros((c.rows, b.shape[1]), dtype=acc)
        full[row_index] = out
        out = full
    return (out, tiles) if return_tiles else out


def _execute_load_sparse(c: Any, b: np.ndarray, layout: str, tile_m: int, tile_n: int, tile_k: int,
                         acc_dtype: object, return_tiles: bool) -> np.ndarray | tuple[np.ndarray, int]:
    """C = A . B from a CSR (row by row, nonzeros only) or bitmap (tiles decompressed, computed dense) A."""
    tm, tn, tk = _positive("tile_m", tile_m), _positive("tile_n", tile_n), _positive("tile_k", tile_k)
    acc = _acc_dtype(c.values, b, acc_dtype)
    out = np.zeros((c.rows, b.shape[1]), dtype=acc)
    vals = np.ascontiguousarray(c.values, dtype=acc)
    bb = np.ascontiguousarray(b, dtype=acc)
    if layout == "csr":
        tiles = csr_gemm_tiles(c.row_ptr, c.col_idx, vals, bb, out, c.k, tm, tk, tn)
    else:
        tiles = bitmap_gemm_tiles(c.bitmap, c.row_ptr, vals, bb, out, c.k, tm, tk, tn)
    return (out, int(tiles)) if return_tiles else out


# -- end-to-end check ----------------------------------------------------------------------------

def _round_significand(x: np.ndarray, bits: int, limit: float) -> np.ndarray:
    """Round float64 ``x`` to ``bits`` significand bits (round half to even) and clamp to +-limit."""
    mant, exp = np.frexp(x)
    scale = float(2 ** bits)
    return np.clip(np.ldexp(np.round(mant * scale) / scale, exp), -limit, limit)


def _operands(rng: np.random.Generator, dtype: str, a_shape: tuple[int, int],
              b_shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random A and B holding values exactly representable in ``dtype``."""
    if dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[dtype]
        return (rng.integers(lo, hi + 1, size=a_shape, dtype=np.int8),
                rng.integers(lo, hi + 1, size=b_shape, dtype=np.int8))
    if dtype in MINIFLOATS:
        grid = MINIFLOATS[dtype]

        def draw(shape: tuple[int, int]) -> np.ndarray:
            sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
            return (sign * grid[rng.integers(0, len(grid), size=shape)]).astype(np.float32)

        return draw(a_shape), draw(b_shape)
    bits, limit = _FLOAT_FORMATS[dtype]
    a = _round_significand(rng.standard_normal(a_shape), bits, limit)
    b = _round_significand(rng.standard_normal(b_shape), bits, limit)
    store = np.float16 if dtype == "fp16" else np.float32
    return a.astype(store), b.astype(store)


def _tolerance(dtype: str, scale: float) -> float:
    """Absolute tolerance: half an ulp of ``dtype`` at the magnitude bound ``scale``; 0 for the integer and
    sub-byte types, whose products and sums are exact in the accumulator."""
    if dtype in _INT_RANGES or dtype in MINIFLOATS:
        return 0.0
    bits, _ = _FLOAT_FORMATS[dtype]
    return 2.0 ** -bits * max(scale, np.finfo(np.float64).tiny)


def _hardware(tiling: object) -> Any:
    if isinstance(tiling, Hardware):
        return tiling, tiling.name
    if isinstance(tiling, str | Path):
        return load_hardware(tiling), str(tiling)
    return None, None


def _plan_tiles(hw: Any, source: str, m: int, n: int, k: int, keep: int, group: int, elem_bytes: float,
                meta_bits: int, dtype: str | None = None, executed: str | None = None,
                kernel: Kernel | None = None) -> TilePlan:
    """Tile sizes of the timing model's fold/chunk schedule (systolic_plan) for this GEMM (``m``: the rows
    computed; ``kernel``: the kernel lowering built, whose CTA tile a GPU-like part uses for a non-native
    format, and which V:N:M and block formats need to be simulated as they run)."""
    if hw is None:
        rows = cols = 32
        dataflow, acc_bytes, double = "ws", 4, True
        caps = {"ifmap": 1 << 62, "filter": 1 << 62, "ofmap": 1 << 62}
        name = "default 32x32 ws array, no SRAM limit"
    else:
        comp = hw.core.compute
        if kind_of(hw).simulation == "cta_waves":  # tiles are the CTA tile the engine picks
            if kernel is not None and kernel.sparse and not kernel.sparse_datapath:
                bm, bn, bk = simulate(kernel, hw, source, keep_tiles=False).tiling["cta_tile"]
                return TilePlan(source=hw.name, array=f"{hw.cores} cores, CTA tile {bm}x{bn}x{bk}", dataflow="cta",
                                tile_m=int(bm), tile_k_values=int(bk), tile_n=int(bn))
            return _cta_tiles(hw, source, m, n, k, keep, group, elem_bytes, meta_bits, dtype, executed, kernel)
        rows, cols, dataflow, acc_bytes = comp.rows, comp.cols, comp.dataflow, comp.accumulator_bytes
        caps, double = hw.core.sram.buffer_bytes(), hw.core.sram.double_buffered
        name = hw.name
        if kernel is not None and kernel.sparse and kernel.row_block:  # V:N:M, block: the folds the engine times
            timed = simulate(kernel, hw, source, keep_tiles=False).tiling
            return _fold_plan(name, rows, cols, dataflow, int(timed["chunk"]), timed.get("fold_k_blocks"))
    plan = tl.systolic_plan(rows, cols, dataflow, m, n, k, keep, group, elem_bytes, meta_bits, acc_bytes,
                            caps, double, b_elements=k * n)
    if "infeasible" in plan:
        buf, need, have = plan["infeasible"]
        raise InfeasibleError(source, hw.core.sram.buffer_key(buf),
                              f"SRAM too small for the smallest tile of {m}x{n}x{k} ({keep}:{group}): "
                              f"needs {need} bytes in the {buf} buffer, has {have}")
    return _fold_plan(name, rows, cols, dataflow, int(plan["chunk"]))


def _fold_plan(name: str, rows: int, cols: int, dataflow: str, chunk: int,
               fold_k_blocks: int | None = None) -> TilePlan:
    """A fold schedule's tiles: ``chunk`` is the streamed dimension's pass (systolic_plan's)."""
    if dataflow == "ws":  # rows <- compressed k, cols <- m, stream n
        tm, tkc, tn = cols, rows, chunk
    elif dataflow == "os":  # rows <- n, cols <- m, stream compressed k
        tm, tkc, tn = cols, chunk, rows
    else:  # is: rows <- compressed k, cols <- n, stream m
        tm, tkc, tn = chunk, rows, cols
    return TilePlan(source=name, array=f"{rows}x{cols}", dataflow=dataflow, tile_m=int(tm), tile_k_values=int(tkc),
                    tile_n=int(tn), fold_k_blocks=None if fold_k_blocks is None else int(fold_k_blocks))


def _cta_tiles(hw: Any, source: str, m: int, n: int, k: int, keep: int, group: int, elem_bytes: float,
               meta_bits: int, dtype: str | None = None, executed: str | None = None,
               lowered: Kernel | None = None) -> TilePlan:
    """Tile sizes of the CTA tile the tensor-core timing model picks for this GEMM (``executed``: the
    native format's spelling, default ``keep:group``)."""
    executed = executed or f"{keep}:{group}"

    dtype = dtype or {1: "int8", 2: "fp16", 4: "fp32"}[int(elem_bytes)]  # the rate table is per dtype
    if lowered is not None and lowered.sparse and lowered.row_block:  # V:N:M, block: BK counts gathered columns
        res = simulate(lowered, hw, source, keep_tiles=False)
        bm, bn, bk = res.tiling["cta_tile"]
        kept = bk // lowered.col_select * keep if lowered.col_select else bk
        return TilePlan(source=hw.name, array=f"{hw.cores} cores, CTA tile {bm}x{bn}x{bk}", dataflow="cta",
                        tile_m=int(bm), tile_k_values=int(kept), tile_n=int(bn))
    if keep < group:
        kern = Kernel("functional", "gemm", m, n, k, dtype, elem_bytes, "sparse", executed, executed, None, keep,
                      group, meta_bits)
    else:
        kern = Kernel("functional", "gemm", m, n, k, dtype, elem_bytes, "dense", None, None, None)
    res = simulate(kern, hw, source, keep_tiles=False)
    bm, bn, bk = res.tiling["cta_tile"]
    return TilePlan(source=hw.name, array=f"{hw.cores} cores, CTA tile {bm}x{bn}x{bk}", dataflow="cta",
                    tile_m=int(bm), tile_k_values=int(bk * keep // group), tile_n=int(bn))


def _explicit_tiles(tiling: object, keep: int) -> TilePlan:
    if isinstance(tiling, dict):
        tm, tn = tiling.get("tile_m"), tiling.get("tile_n")
        tkc = tiling.get("tile_k_values")
        if tkc is None and tiling.get("tile_k_groups") is not None:
            tkc = _positive("tile_k_groups", tiling["tile_k_groups"]) * keep
    elif isinstance(tiling, tuple | list) and len(tiling) == 3:
        tm, tkg, tn = tiling
        tkc = _positive("tile_k_groups", tkg) * keep
    else:
        raise FunctionalError("tiling must be None, a Hardware, a hardware YAML path, "
                              "(tile_m, tile_k_groups, tile_n) or a dict of those")
    return TilePlan(source="explicit", tile_m=_positive("tile_m", tm), tile_k_values=_positive("tile_k_values", tkc),
                    tile_n=_positive("tile_n", tn))


def _not_exercised_text(pattern: str, reason: str | None, hw: Any, m: int, k: int, dtype: str) -> str:
    """Why the compressed format did not run, in one line (with the nearest shape that would, when known)."""

    text = f"{pattern} ran dense because {reason}"
    if reason == "shape_below_minimum":
        mult = hw.core.sparse.weight_shape_multiple
        bad = [f"{name}={v} is not a multiple of {q}" for name, v, q in (("m", m, mult.m), ("k", k, mult.k)) if v % q]
        fix = f"--m {-(-m // mult.m) * mult.m} --k {-(-k // mult.k) * mult.k}"
        return f"{text}: {', '.join(bad)} (core.sparse.weight_shape_multiple); {fix} would run sparse"
    if reason == "dtype_unsupported":
        return f"{text}: {dtype} is not in core.sparse.dtypes ({', '.join(hw.core.sparse.dtypes)})"
    if reason == "block_shape_misaligned" and hw is not None:
        target, fmt = lowering_target(hw), parse_spelling(pattern)
        if getattr(fmt, "key", None) == "vnm":
            rows = ", ".join(map(str, target.vnm_tile_rows))
            return f"{text}: V = {fmt.v} is not a multiple of {rows} (V:N:M CTA M tiles or array width)"  # type: ignore[union-attr]
        mult = target.block_multiple or (1, 1)
        return (f"{text}: a {fmt.rows}x{fmt.cols} block is not made of whole {mult[0]}x{mult[1]} "  # type: ignore[union-attr]
                "tiles (core.sparse.block.block_multiple)")
    if reason == "pattern_unsupported" and hw is not None and hw.core.sparse is not None:
        runs = ", ".join(map(str, natives_for(lowering_target(hw), dtype))) or "none"
        return f"{text}: the native patterns that run {dtype} ({runs}) do not contain {pattern}"
    return f"{text}: {REASON_CODES[reason]}" if reason in REASON_CODES else text


# A, B and C of a functional check live in memory (float64 reference included): ~1 GB at this size.
MAX_ELEMENTS = 2**24


def functional_check(m: int, n: int, k: int, pattern: object, seed: int = 0, dtype: str = "fp32",
                     tiling: object = None) -> FunctionalCheck:
    """Prune seeded random A by magnitude, compress, run tile by tile and compare with numpy (A*mask)@B.

    ``tiling``: None (a 32x32 weight-stationary array, no SRAM limit), a Hardware or hardware YAML
    path (tiles from ``systolic_plan``; a pattern the hardware promotes runs in its container
    format, one it cannot run sparse runs dense as 1:1), or explicit (tile_m, tile_k_groups, tile_n).
    ``exercised`` is False when an N:M pattern was asked for but the hardware runs it dense (then
    ``not_exercised`` says why): ``passed`` only compares numbers and proves nothing about the format.
    :func:`accelsim.report.functional_text.format_check` renders the result as a table.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        _positive(name, value)
    elements = m * k + k * n + m * n
    if elements > MAX_ELEMENTS:
        raise FunctionalError(f"--m/--n/--k: the check holds A, B and C in memory as numpy arrays; "
                              f"{m}x{n}x{k} needs {elements:,} elements, the limit is {MAX_ELEMENTS:,}")
    if not 0 <= seed < 2**63:
        raise FunctionalError(f"--seed: expected an integer from 0 to 2^63-1, got {seed}")
    if dtype not in DTYPE_BYTES:
        raise FunctionalError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    req = _requested(pattern)
    hw, source = _hardware(tiling)
    exe, bits, reason, kern, support = req, req.default_metadata_bits, None, None, None
    if hw is not None and req.is_dense:
        exe, bits = DENSE, 0  # M:M lowers to dense, as in accelsim.lowering
    elif hw is not None:  # the same decision as lowering: native pattern, dtype and shape rules

        kern = lower_layer(Gemm(name="functional", op="gemm", m=m, n=n, k=k), dtype, DTYPE_BYTES[dtype],
                           str(req), hw)
        reason = kern.reason
        if kern.sparse:
            exe, bits = kern.executed_format, kern.metadata_bits  # type: ignore[assignment]
            support = format_support(lowering_target(hw), exe) if not exe.native else None
        else:
            exe, bits = DENSE, 0
    exercised = req.is_dense or not exe.is_dense  # False: a sparse pattern was asked for and ran dense
    not_exercised = None if exercised else _not_exercised_text(str(req), reason, hw, m, k, dtype)
    elem = DTYPE_BYTES[dtype]
    m_exec = m  # rows computed: channel pruning keeps fewer
    if not exe.native and (support is not None or not exe.needs_support):
        m_exec = exe.kernel_fields(m, k, support).get("rows_kept", m)
    if tiling is None or hw is not None:
        tiles_cfg = _plan_tiles(hw, source or "<hardware>", m_exec, n, k, exe.keep, exe.group, elem, bits, dtype,
                                str(exe), kern)
    else:
        tiles_cfg = _explicit_tiles(tiling, exe.keep)

    rng = np.random.default_rng(seed)
    a, b = _operands(rng, dtype, (m, k), (k, n))
    pruned, mask = req.prune(a)
    comp = exe.compress_as(pruned, mask, bits, support)
    folds = tiles_cfg.dataflow in tl.DATAFLOW_CODE and hasattr(comp, "fold_union")  # block on an array's folds
    c, tiles = execute_compressed(comp, b, tiles_cfg.tile_m, 1, tiles_cfg.tile_n,
                                  tile_k_values=tiles_cfg.tile_k_values, return_tiles=True, folds=folds)
    unions = tuple(int(u) for u in np.diff(comp.fold_union(tiles_cfg.tile_m)[0])) if folds else None  # type: ignore[attr-defined]
    if dtype in _INT_RANGES:
        ref = (a.astype(np.int64) * mask) @ b.astype(np.int64)
        scale = float(np.abs(ref).max())
    else:
        a64, b64 = a.astype(np.float64) * mask, b.astype(np.float64)
        ref = a64 @ b64
        scale = float((np.abs(a64) @ np.abs(b64)).max())
    err = np.abs(c.astype(np.float64) - ref.astype(np.float64))
    max_abs = float(err.max())
    ref_max = float(np.abs(ref).max())
    tol = _tolerance(dtype, scale)
    dense_bytes = stored_bytes(m * k, elem)  # whole bytes, rounded up for sub-byte types
    value_bytes = stored_bytes(comp.kept, elem)
    compressed_bytes = value_bytes + comp.metadata_bytes
    return FunctionalCheck(
        shape=GemmShape(m=m, n=n, k=k),
        pattern=str(req) if req != DENSE else "dense",
        pattern_executed=str(exe) if exe != DENSE else "dense",
        reason=reason,
        exercised=exercised,
        not_exercised=not_exercised,
        dtype=dtype,
        seed=seed,
        k_padded=comp.k_padded,
        padding=freeze(comp.padding),
        tiling=tiles_cfg,
        tiles_executed=tiles,
        fold_k_blocks_executed=unions,
        metadata_bits=comp.metadata_bits,
        value_bytes=value_bytes,
        metadata_bytes=comp.metadata_bytes,
        compressed_bytes=compressed_bytes,
        dense_bytes=dense_bytes,
        compressed_fraction=compressed_bytes / dense_bytes,
        compression_ratio=dense_bytes / compressed_bytes,
        max_abs_error=max_abs,
        max_rel_error=max_abs / ref_max if ref_max > 0 else max_abs,
        tolerance=tol,
        passed=bool(max_abs <= tol),
    )
