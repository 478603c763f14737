"""Functional N:M path: prune, compress, execute from the compressed form, and check the result.

The timing model only counts bytes and cycles of the compressed weight; this module proves the
format is real by building it and running the GEMM ``C[m x n] = A[m x k] . B[k x n]`` from it,
tile by tile, through the same fold/chunk tiling the timing model uses.

Compressed format of A (``m_rows x k``, pattern N:M, groups of M consecutive values along k):

* k is zero-padded up to ``k_padded = ceil(k / M) * M``; group g covers dense k ``g*M .. g*M+M-1``.
* ``values`` is ``m_rows x (k_padded / M * N)``: row r holds, group after group, exactly N
  entries per group; ``indices`` (uint8, same shape) holds each entry's position 0..M-1
  inside its group. Within a group the indices are distinct and strictly increasing.
* A group with fewer than N nonzeros (kept positions) is filled, as NVIDIA's 2:4 format does:
  its kept positions plus the lowest unused positions, sorted, with value 0 at the fill ones.
  Fill positions may fall in the k padding; they always carry value 0.

Metadata bit layout (``Compressed.pack_metadata``), ``b = metadata_bits = ceil(log2 M)``:

* The indices form one bit stream in row-major order of ``indices``: row 0 group 0 slot 0,
  slot 1, ..., row 0 group 1 ..., then row 1; entry i occupies stream bits ``i*b .. i*b+b-1``,
  its least significant bit first. Rows are not padded to a byte: the stream is dense.
* Stream bit j is bit ``j % W`` of word ``j // W`` (W = 8 for uint8 words, 32 for uint32):
  little-endian within a word, so uint32 words are the uint8 bytes read little-endian. For
  2:4 (b = 2) one byte holds two groups: group g's first index in bits 0-1, second in 2-3.
* ``metadata_bytes = ceil(kept * b / 8)`` with ``kept = m_rows * ceil(k / M) * N``; the last
  byte (or word) is zero-filled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.engine.functional import nm_gemm_tiles
from accelsim.errors import FunctionalError, InfeasibleError
from accelsim.formats.nm import Pattern, parse_pattern
from accelsim.results import dumps_finite

__all__ = ["Compressed", "Pruned", "compress", "decompress", "execute_compressed", "format_check",
           "functional_check", "metadata_bits_for", "prune_magnitude", "unpack_metadata", "validate_mask"]

MAX_GROUP = 64  # as accelsim.formats.nm.parse_pattern: no sparse datapath uses larger groups

# Significand bits (including the implicit one) and largest finite value of each emulated dtype.
_FLOAT_FORMATS: dict[str, tuple[int, float]] = {
    "fp32": (24, float(np.finfo(np.float32).max)),
    "tf32": (11, float(np.finfo(np.float32).max)),
    "fp16": (11, 65504.0),
    "bf16": (8, float(np.finfo(np.float32).max)),
    "fp8": (4, 448.0),  # e4m3
}
_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


# -- patterns ------------------------------------------------------------------------------------

def _check_nm(n: int, m: int) -> None:
    """Raise FunctionalError unless 1 <= n <= m <= MAX_GROUP."""
    if isinstance(n, bool) or isinstance(m, bool) or not isinstance(n, int | np.integer) \
            or not isinstance(m, int | np.integer):
        raise FunctionalError(f"N and M must be integers, got {n!r}:{m!r}")
    if m < 1 or m > MAX_GROUP:
        raise FunctionalError(f"group size M = {m} must be between 1 and {MAX_GROUP}")
    if n < 1 or n > m:
        raise FunctionalError(f"N = {n} must be between 1 and M = {m} in pattern {n}:{m}")


def metadata_bits_for(m: int) -> int:
    """Bits needed to index a position in a group of ``m``: ceil(log2 m) (0 when m == 1)."""
    return math.ceil(math.log2(m)) if m > 1 else 0


def _parse_nm(pattern: object) -> tuple[int, int]:
    """``"N:M"``, ``"dense"`` (= 1:1), a Pattern or an (N, M) pair to (N, M); M:M stays M:M."""
    if isinstance(pattern, Pattern):
        return pattern.n, pattern.m
    if isinstance(pattern, tuple | list) and len(pattern) == 2:
        n, m = int(pattern[0]), int(pattern[1])
        _check_nm(n, m)
        return n, m
    if isinstance(pattern, str) and pattern.strip().lower() == "dense":
        return 1, 1
    try:
        parse_pattern(pattern)
    except ValueError as err:
        raise FunctionalError(f"pattern: {err}") from None
    n_text, _, m_text = str(pattern).partition(":")
    return int(n_text), int(m_text)


def _k_padded(k: int, m: int) -> int:
    return -(-k // m) * m


def _as_2d(a: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise FunctionalError(f"{what} must be a 2-D array (rows x k), got shape {arr.shape}")
    return arr


def _pad_k(a: np.ndarray, k_padded: int) -> np.ndarray:
    """Zero-pad axis 1 of ``a`` up to ``k_padded``."""
    k = a.shape[1]
    if k == k_padded:
        return a
    return np.pad(a, ((0, 0), (0, k_padded - k)))


# -- pruning -------------------------------------------------------------------------------------

class Pruned(tuple):
    """``(pruned, mask)`` from prune_magnitude; also reports the k-padding of the grouping."""

    pruned: np.ndarray
    mask: np.ndarray
    k: int
    k_padded: int

    def __new__(cls, pruned: np.ndarray, mask: np.ndarray, k_padded: int) -> Pruned:
        obj = super().__new__(cls, (pruned, mask))
        obj.pruned, obj.mask, obj.k, obj.k_padded = pruned, mask, int(mask.shape[1]), int(k_padded)
        return obj

    @property
    def padding(self) -> dict[str, list[int]]:
        """``{"k": [k, k_padded]}`` when k was zero-padded to a multiple of M, else ``{}``."""
        return {"k": [self.k, self.k_padded]} if self.k_padded != self.k else {}


def prune_magnitude(a: np.ndarray, n: int, m: int) -> Pruned:
    """Keep the N largest-|value| entries of each aligned group of M along k; returns (pruned, mask).

    k not a multiple of M is zero-padded to one for grouping (``result.padding`` reports it);
    ``pruned`` and ``mask`` keep A's shape. Ties go to the lower k position.
    """
    _check_nm(n, m)
    a = _as_2d(a, "A")
    rows, k = a.shape
    kp = _k_padded(k, m)
    mag = _pad_k(np.abs(a.astype(np.float64)), kp).reshape(rows, kp // m, m)
    order = np.argsort(-mag, axis=2, kind="stable")[:, :, :n]
    keep = np.zeros(mag.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=2)
    mask = np.ascontiguousarray(keep.reshape(rows, kp)[:, :k])
    pruned = np.where(mask, a, np.zeros((), dtype=a.dtype)).astype(a.dtype, copy=False)
    return Pruned(pruned, mask, kp)


def validate_mask(mask: np.ndarray, n: int, m: int) -> None:
    """Raise FunctionalError naming the first row and group with more than N nonzeros."""
    _check_nm(n, m)
    mask = _as_2d(mask, "mask") != 0
    rows, k = mask.shape
    kp = _k_padded(k, m)
    counts = _pad_k(mask, kp).reshape(rows, kp // m, m).sum(axis=2)
    bad = np.argwhere(counts > n)
    if len(bad):
        r, g = (int(x) for x in bad[0])
        lo, hi = g * m, min(k, g * m + m) - 1
        raise FunctionalError(f"row {r}, group {g} (k {lo}..{hi}) has {int(counts[r, g])} nonzeros; "
                              f"{n}:{m} allows at most {n}")


# -- compressed format ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Compressed:
    """An N:M-compressed A: kept ``values`` and their in-group ``indices`` (see module docstring)."""

    values: np.ndarray  # m_rows x ceil(k/M)*N, dtype of A
    indices: np.ndarray  # uint8, same shape: position 0..M-1 of each value inside its group
    k: int
    k_padded: int
    n: int
    m: int
    metadata_bits: int

    def __post_init__(self) -> None:
        for arr in (self.values, self.indices):
            arr.setflags(write=False)

    @property
    def rows(self) -> int:
        """Rows of A (m of the GEMM)."""
        return int(self.values.shape[0])

    @property
    def groups(self) -> int:
        """N:M groups per row: k_padded / M."""
        return self.k_padded // self.m

    @property
    def kept(self) -> int:
        """Stored values (= stored indices): rows * groups * N."""
        return int(self.values.size)

    @property
    def padding(self) -> dict[str, list[int]]:
        """``{"k": [k, k_padded]}`` when k was padded to a multiple of M, else ``{}``."""
        return {"k": [self.k, self.k_padded]} if self.k_padded != self.k else {}

    @property
    def metadata_bytes(self) -> int:
        """Bytes of packed metadata: ceil(kept * metadata_bits / 8)."""
        return -(-self.kept * self.metadata_bits // 8)

    @property
    def value_bytes(self) -> int:
        """Bytes of stored values at the storage dtype's item size."""
        return int(self.values.nbytes)

    def pack_metadata(self, word_bits: int = 8) -> np.ndarray:
        """Indices packed densely at metadata_bits each, little-endian, as uint8 (8) or uint32 (32) words."""
        return _pack(self.indices.ravel(), self.metadata_bits, word_bits)


def _pack(idx: np.ndarray, bits: int, word_bits: int) -> np.ndarray:
    if word_bits not in (8, 32):
        raise FunctionalError(f"word_bits must be 8 or 32, got {word_bits}")
    if bits == 0:
        return np.zeros(0, dtype=np.uint8 if word_bits == 8 else np.uint32)
    shifts = np.arange(bits, dtype=np.uint64)
    stream = ((idx.astype(np.uint64)[:, None] >> shifts) & 1).astype(np.uint8).ravel()
    packed = np.packbits(stream, bitorder="little")
    if word_bits == 8:
        return packed
    packed = np.pad(packed, (0, -len(packed) % 4))
    return packed.view("<u4").astype(np.uint32)


def unpack_metadata(packed: np.ndarray, shape: tuple[int, ...], bits: int) -> np.ndarray:
    """Inverse of Compressed.pack_metadata: uint8 or uint32 words to uint8 indices of ``shape``."""
    count = int(np.prod(shape))
    if bits == 0:
        return np.zeros(shape, dtype=np.uint8)
    words = np.asarray(packed)
    if words.dtype == np.uint32:
        raw = words.astype("<u4").view(np.uint8)
    elif words.dtype == np.uint8:
        raw = words
    else:
        raise FunctionalError(f"packed metadata must be uint8 or uint32, got {words.dtype}")
    if raw.size * 8 < count * bits:
        raise FunctionalError(f"packed metadata holds {raw.size * 8} bits, {count} indices of {bits} bits need "
                              f"{count * bits}")
    stream = np.unpackbits(raw, bitorder="little")[:count * bits].reshape(count, bits).astype(np.uint16)
    return (stream << np.arange(bits, dtype=np.uint16)).sum(axis=1).astype(np.uint8).reshape(shape)


def compress(a_pruned: np.ndarray, mask: np.ndarray | None, n: int, m: int,
             metadata_bits: int | None = None) -> Compressed:
    """Compress ``a_pruned * mask`` to N:M values + indices; ``mask`` None means ``a_pruned != 0``.

    Validates the mask (FunctionalError on a group with more than N nonzeros). Groups with fewer
    kept positions are filled with zero values at their lowest unused indices.
    ``metadata_bits`` defaults to ceil(log2 M); a hardware may store more, never fewer.
    """
    _check_nm(n, m)
    a = _as_2d(a_pruned, "A")
    keep = (a != 0) if mask is None else _as_2d(mask, "mask") != 0
    if keep.shape != a.shape:
        raise FunctionalError(f"mask shape {keep.shape} differs from A's shape {a.shape}")
    validate_mask(keep, n, m)
    need = metadata_bits_for(m)
    bits = need if metadata_bits is None else int(metadata_bits)
    if bits < need:
        raise FunctionalError(f"{bits} metadata bits cannot index a group of {m} (needs {need})")
    rows, k = a.shape
    kp = _k_padded(k, m)
    g = kp // m
    kept = _pad_k(keep, kp).reshape(rows, g, m)
    vals = _pad_k(np.where(keep, a, np.zeros((), dtype=a.dtype)).astype(a.dtype, copy=False), kp)
    vals = vals.reshape(rows, g, m)
    # Kept positions sort first (key < M), then unused ones in index order: the first N are the
    # kept positions plus the lowest fill positions; sort them so indices increase.
    key = np.where(kept, 0, m) + np.arange(m)
    sel = np.sort(np.argsort(key, axis=2, kind="stable")[:, :, :n], axis=2)
    values = np.ascontiguousarray(np.take_along_axis(vals, sel, axis=2).reshape(rows, g * n))
    indices = np.ascontiguousarray(sel.astype(np.uint8).reshape(rows, g * n))
    return Compressed(values, indices, k, kp, n, m, bits)


def decompress(c: Compressed) -> np.ndarray:
    """Dense ``rows x k`` A rebuilt from values + indices."""
    g = c.groups
    dense = np.zeros((c.rows, g, c.m), dtype=c.values.dtype)
    np.put_along_axis(dense, c.indices.reshape(c.rows, g, c.n).astype(np.intp),
                      c.values.reshape(c.rows, g, c.n), axis=2)
    return dense.reshape(c.rows, c.k_padded)[:, :c.k].copy()


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


def execute_compressed(c: Compressed, b: np.ndarray, tile_m: int, tile_k_groups: int, tile_n: int, *,
                       tile_k_values: int | None = None, acc_dtype: object = None,
                       return_tiles: bool = False) -> np.ndarray | tuple[np.ndarray, int]:
    """C = A . B from the compressed A, tile by tile (numba kernel); accumulates in float64 (int64 for ints).

    A tile is ``tile_m`` rows of A x ``tile_k_groups`` N:M groups (``tile_k_groups * N`` kept values;
    ``tile_k_values`` overrides it with a count of kept values, as an array fold that splits a group
    needs) x ``tile_n`` columns of B. ``b`` has k (or k_padded) rows. ``acc_dtype`` may be
    float64/float32/int64/int32. With ``return_tiles`` returns ``(C, tiles_executed)``.
    """
    b = _as_2d(b, "B")
    if b.shape[0] not in (c.k, c.k_padded):
        raise FunctionalError(f"B has {b.shape[0]} rows; A's k is {c.k} (padded {c.k_padded})")
    tm = _positive("tile_m", tile_m)
    tn = _positive("tile_n", tile_n)
    if tile_k_values is not None:
        tkc = _positive("tile_k_values", tile_k_values)
    else:
        tkc = _positive("tile_k_groups", tile_k_groups) * c.n
    acc = _acc_dtype(c.values, b, acc_dtype)
    out = np.zeros((c.rows, b.shape[1]), dtype=acc)
    vals = np.ascontiguousarray(c.values, dtype=acc)
    bb = np.ascontiguousarray(b, dtype=acc)
    tiles = int(nm_gemm_tiles(vals, c.indices, bb, out, c.n, c.m, tm, tkc, tn))
    return (out, tiles) if return_tiles else out


# -- end-to-end check ----------------------------------------------------------------------------

def _round_significand(x: np.ndarray, bits: int, limit: float) -> np.ndarray:
    """Round float64 ``x`` to ``bits`` significand bits (round half to even) and clamp to +-limit."""
    mant, exp = np.frexp(x)
    scale = float(2 ** bits)
    return np.clip(np.ldexp(np.round(mant * scale) / scale, exp), -limit, limit)


def _operands(rng: np.random.Generator, dtype: str, a_shape: tuple[int, int],
              b_shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Seeded random A and B holding values exactly representable in ``dtype``."""
    if dtype == "int8":
        return (rng.integers(-127, 128, size=a_shape, dtype=np.int8),
                rng.integers(-127, 128, size=b_shape, dtype=np.int8))
    bits, limit = _FLOAT_FORMATS[dtype]
    a = _round_significand(rng.standard_normal(a_shape), bits, limit)
    b = _round_significand(rng.standard_normal(b_shape), bits, limit)
    store = np.float16 if dtype == "fp16" else np.float32
    return a.astype(store), b.astype(store)


def _tolerance(dtype: str, scale: float) -> float:
    """Absolute tolerance: half an ulp of ``dtype`` at the magnitude bound ``scale`` (0 for int8)."""
    if dtype == "int8":
        return 0.0
    bits, _ = _FLOAT_FORMATS[dtype]
    return 2.0 ** -bits * max(scale, np.finfo(np.float64).tiny)


def _hardware(tiling: object) -> Any:
    from accelsim.hardware.model import Hardware, load_hardware

    if isinstance(tiling, Hardware):
        return tiling, tiling.name
    if isinstance(tiling, str | Path):
        return load_hardware(tiling), str(tiling)
    return None, None


def _plan_tiles(hw: Any, source: str, m: int, n: int, k: int, keep: int, group: int, elem_bytes: int,
                meta_bits: int, dtype: str | None = None) -> dict[str, Any]:
    """Tile sizes of the timing model's fold/chunk schedule (systolic_plan) for this GEMM."""
    from accelsim.engine import tiling as tl

    if hw is None:
        rows = cols = 32
        dataflow, acc_bytes, double = "ws", 4, True
        caps = {"ifmap": 1 << 62, "filter": 1 << 62, "ofmap": 1 << 62}
        name = "default 32x32 ws array, no SRAM limit"
    else:
        comp = hw.core.compute
        if getattr(comp, "kind", "systolic") == "tensor_core":
            return _cta_tiles(hw, source, m, n, k, keep, group, elem_bytes, meta_bits, dtype)
        rows, cols, dataflow, acc_bytes = comp.rows, comp.cols, comp.dataflow, comp.accumulator_bytes
        caps, double = hw.core.sram.buffer_bytes(), hw.core.sram.double_buffered
        name = hw.name
    plan = tl.systolic_plan(rows, cols, dataflow, m, n, k, keep, group, elem_bytes, meta_bits, acc_bytes,
                            caps, double, b_elements=k * n)
    if "infeasible" in plan:
        buf, need, have = plan["infeasible"]
        raise InfeasibleError(source, hw.core.sram.buffer_key(buf),
                              f"SRAM too small for the smallest tile of {m}x{n}x{k} ({keep}:{group}): "
                              f"needs {need} bytes in the {buf} buffer, has {have}")
    chunk = int(plan["chunk"])
    if dataflow == "ws":  # rows <- compressed k, cols <- m, stream n
        tm, tkc, tn = cols, rows, chunk
    elif dataflow == "os":  # rows <- n, cols <- m, stream compressed k
        tm, tkc, tn = cols, chunk, rows
    else:  # is: rows <- compressed k, cols <- n, stream m
        tm, tkc, tn = chunk, rows, cols
    return {"source": name, "array": f"{rows}x{cols}", "dataflow": dataflow, "tile_m": int(tm),
            "tile_k_values": int(tkc), "tile_n": int(tn)}


def _cta_tiles(hw: Any, source: str, m: int, n: int, k: int, keep: int, group: int, elem_bytes: int,
               meta_bits: int, dtype: str | None = None) -> dict[str, Any]:
    """Tile sizes of the CTA tile the tensor-core timing model picks for this GEMM."""
    from accelsim.engine import simulate
    from accelsim.lowering import Kernel

    dtype = dtype or {1: "int8", 2: "fp16", 4: "fp32"}[elem_bytes]  # the rate table is per dtype (tf32 != fp32)
    if keep < group:
        kern = Kernel("functional", "gemm", m, n, k, dtype, elem_bytes, "sparse", f"{keep}:{group}",
                      f"{keep}:{group}", None, keep, group, meta_bits)
    else:
        kern = Kernel("functional", "gemm", m, n, k, dtype, elem_bytes, "dense", None, None, None)
    res = simulate(kern, hw, source, keep_tiles=False)
    bm, bn, bk = res.tiling["cta_tile"]
    return {"source": hw.name, "array": f"{hw.cores} cores, CTA tile {bm}x{bn}x{bk}", "dataflow": "cta",
            "tile_m": int(bm), "tile_k_values": int(bk * keep // group), "tile_n": int(bn)}


def _explicit_tiles(tiling: object, keep: int) -> dict[str, Any]:
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
    return {"source": "explicit", "tile_m": _positive("tile_m", tm),
            "tile_k_values": _positive("tile_k_values", tkc), "tile_n": _positive("tile_n", tn)}


def _not_exercised_text(pattern: str, reason: str | None, hw: Any, m: int, k: int, dtype: str) -> str:
    """Why the compressed format did not run, in one line (with the nearest shape that would, when known)."""
    from accelsim.lowering import REASON_CODES

    text = f"{pattern} ran dense because {reason}"
    if reason == "shape_below_minimum":
        mult = hw.core.sparse.weight_shape_multiple
        bad = [f"{name}={v} is not a multiple of {q}" for name, v, q in (("m", m, mult.m), ("k", k, mult.k)) if v % q]
        fix = f"--m {-(-m // mult.m) * mult.m} --k {-(-k // mult.k) * mult.k}"
        return f"{text}: {', '.join(bad)} (core.sparse.weight_shape_multiple); {fix} would run sparse"
    if reason == "dtype_unsupported":
        return f"{text}: {dtype} is not in core.sparse.dtypes ({', '.join(hw.core.sparse.dtypes)})"
    return f"{text}: {REASON_CODES[reason]}" if reason in REASON_CODES else text


# A, B and C of a functional check live in memory (float64 reference included): ~1 GB at this size.
MAX_ELEMENTS = 2**24


def functional_check(m: int, n: int, k: int, pattern: object, seed: int = 0, dtype: str = "fp32",
                     tiling: object = None) -> dict[str, Any]:
    """Prune seeded random A by magnitude, compress, run tile by tile and compare with numpy (A*mask)@B.

    ``tiling``: None (a 32x32 weight-stationary array, no SRAM limit), a Hardware or hardware YAML
    path (tiles from ``systolic_plan``; a pattern the hardware promotes runs in its container
    format, one it cannot run sparse runs dense as 1:1), or explicit (tile_m, tile_k_groups, tile_n).
    ``exercised`` is False when an N:M pattern was asked for but the hardware runs it dense (then
    ``not_exercised`` says why): ``passed`` only compares numbers and proves nothing about the format.
    The result holds only JSON-able values; ``format_check`` renders it as a table.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        _positive(name, value)
    elements = m * k + k * n + m * n
    if elements > MAX_ELEMENTS:
        raise FunctionalError(f"--m/--n/--k: the check holds A, B and C in memory as numpy arrays; "
                              f"{m}x{n}x{k} needs {elements:,} elements, the limit is {MAX_ELEMENTS:,}")
    if not 0 <= seed < 2**63:
        raise FunctionalError(f"--seed: expected an integer from 0 to 2^63-1, got {seed}")
    if dtype not in _DTYPE_BYTES:
        raise FunctionalError(f"dtype {dtype!r} is not one of {', '.join(_DTYPE_BYTES)}")
    req_n, req_m = _parse_nm(pattern)
    hw, source = _hardware(tiling)
    exe_n, exe_m, bits, reason = req_n, req_m, metadata_bits_for(req_m), None
    if hw is not None and req_n == req_m:
        exe_n, exe_m, bits = 1, 1, 0  # M:M lowers to dense, as in accelsim.lowering
    elif hw is not None:  # the same decision as lowering: native pattern, dtype and shape rules
        from accelsim.lowering import lower_layer
        from accelsim.workloads.model import Gemm

        kern = lower_layer(Gemm(name="functional", op="gemm", m=m, n=n, k=k), dtype, _DTYPE_BYTES[dtype],
                           f"{req_n}:{req_m}", hw)
        reason = kern.reason
        if kern.sparse:
            exe_n, exe_m, bits = kern.keep_n, kern.group_m, kern.metadata_bits
        else:
            exe_n, exe_m, bits = 1, 1, 0
    exercised = req_n == req_m or exe_n < exe_m  # False: a sparse pattern was asked for and ran dense
    not_exercised = None if exercised else _not_exercised_text(f"{req_n}:{req_m}", reason, hw, m, k, dtype)
    elem = _DTYPE_BYTES[dtype]
    if tiling is None or hw is not None:
        tiles_cfg = _plan_tiles(hw, source or "<hardware>", m, n, k, exe_n, exe_m, elem, bits, dtype)
    else:
        tiles_cfg = _explicit_tiles(tiling, exe_n)

    rng = np.random.default_rng(seed)
    a, b = _operands(rng, dtype, (m, k), (k, n))
    pruned, mask = prune_magnitude(a, req_n, req_m)
    comp = compress(pruned, mask, exe_n, exe_m, metadata_bits=bits)
    c, tiles = execute_compressed(comp, b, tiles_cfg["tile_m"], 1, tiles_cfg["tile_n"],
                                  tile_k_values=tiles_cfg["tile_k_values"], return_tiles=True)
    if dtype == "int8":
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
    dense_bytes = m * k * elem
    value_bytes = comp.kept * elem
    compressed_bytes = value_bytes + comp.metadata_bytes
    return {
        "shape": {"m": m, "n": n, "k": k},
        "pattern": f"{req_n}:{req_m}" if (req_n, req_m) != (1, 1) else "dense",
        "pattern_executed": f"{exe_n}:{exe_m}" if (exe_n, exe_m) != (1, 1) else "dense",
        "reason": reason,
        "exercised": exercised,
        "not_exercised": not_exercised,
        "dtype": dtype,
        "seed": seed,
        "k_padded": comp.k_padded,
        "padding": comp.padding,
        "tiling": tiles_cfg,
        "tiles_executed": tiles,
        "metadata_bits": comp.metadata_bits,
        "value_bytes": value_bytes,
        "metadata_bytes": comp.metadata_bytes,
        "compressed_bytes": compressed_bytes,
        "dense_bytes": dense_bytes,
        "compressed_fraction": compressed_bytes / dense_bytes,
        "compression_ratio": dense_bytes / compressed_bytes,
        "max_abs_error": max_abs,
        "max_rel_error": max_abs / ref_max if ref_max > 0 else max_abs,
        "tolerance": tol,
        "passed": bool(max_abs <= tol),
    }


def format_check(result: dict[str, Any], as_json: bool = False) -> str:
    """Render a functional_check result as an aligned two-column table (or JSON)."""
    if as_json:
        return dumps_finite(result, "functional-check", indent=2, sort_keys=False)
    lines = []
    width = max(len(key) for key in result)
    for key, value in result.items():
        if isinstance(value, dict):
            text = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
        elif isinstance(value, float):
            text = f"{value:.6g}"
        elif value is None:
            text = "-"
        else:
            text = str(value)
        if key == "passed" and result.get("exercised") is False:
            text += " (numbers only: the N:M format was NOT EXERCISED)"
        lines.append(f"{key.ljust(width)}  {text}")
    return "\n".join(lines)
