"""N:M structured sparsity: at most N nonzeros in every aligned group of M values of A along k.

Spelling ``"N:M"`` (``"2:4"``); M:M is dense. Metadata: an index into the group per kept value,
ceil(log2 M) bits unless the hardware stores more. A datapath running N:M runs every pattern
whose worst aligned window of M holds at most N nonzeros (1:4 and 2:8 run as 2:4).

Compressed form of A (``m_rows x k``, functional path):

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
import re
from dataclasses import dataclass

import numpy as np

from accelsim.errors import FunctionalError
from accelsim.formats.base import SparsityFormat, bits_to_index
from accelsim.textsafe import short_repr

_PATTERN_RE = re.compile(r"^[ \t]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t]*\Z")  # ASCII digits only
MAX_GROUP = 64  # no sparse datapath uses larger groups


@dataclass(frozen=True, order=True)
class Pattern(SparsityFormat):
    """At most ``n`` nonzeros in every aligned group of ``m`` consecutive values along k."""

    n: int
    m: int

    key = "nm"
    title = "N:M"
    example = "2:4"

    @classmethod
    def claims(cls, text: str) -> bool:
        return _PATTERN_RE.match(text) is not None

    @classmethod
    def parse(cls, text: str) -> Pattern:
        match = _PATTERN_RE.match(text.strip())
        if not match:
            raise ValueError(f"expected a pattern like \"2:4\" (N:M), got {short_repr(text)}")
        n, m = int(match.group(1)), int(match.group(2))
        if m < 1:
            raise ValueError(f"group size M must be at least 1 in {short_repr(text)}")
        if n < 1:
            raise ValueError(f"N must be at least 1 in {short_repr(text)} (a group keeps at least one value)")
        if n > m:
            raise ValueError(f"N must not exceed M in {short_repr(text)} (at most N nonzeros per group of M)")
        if m > MAX_GROUP:
            raise ValueError(f"group size M = {m} in {short_repr(text)} is larger than {MAX_GROUP}, which no "
                             "sparse datapath uses")
        return Pattern(n, m)

    @classmethod
    def at_sparsity(cls, sparsity: float) -> Pattern | None:
        """N:M with exactly ``sparsity`` zeros: the first group size M in 4, 8, 16, 32, 64, then 2..64, that
        makes N = (1 - sparsity) M a whole number >= 1 (50 % -> 2:4, 75 % -> 1:4, 87.5 % -> 1:8, 90 % -> 1:10)."""
        for m in (4, 8, 16, 32, 64, *range(2, MAX_GROUP + 1)):
            n = (1.0 - sparsity) * m
            if abs(n - round(n)) < 1e-9 and 1 <= round(n) < m:
                return Pattern(round(n), m)
        return None

    @classmethod
    def number_hint(cls, value: int) -> str | None:
        n, m = divmod(value, 60)
        if 1 <= n < 60:
            return (f"got the number {value}: YAML reads an unquoted {n}:{m} as a base-60 number; "
                    f"quote the pattern: \"{n}:{m}\"")
        return None

    def __str__(self) -> str:
        return f"{self.n}:{self.m}"

    @property
    def keep(self) -> int:
        return self.n

    @property
    def group(self) -> int:
        return self.m

    @property
    def default_metadata_bits(self) -> int:
        """Bits per kept value for an index into the group: ceil(log2(M))."""
        return max(1, math.ceil(math.log2(self.m))) if self.m > 1 else 0

    def contains(self, requested: SparsityFormat) -> bool:
        """Every mask valid for ``requested`` (an N:M pattern) is valid for this one."""
        if not isinstance(requested, Pattern):
            return False
        return max_nonzeros_in_group(requested, self.m) <= self.n

    def preference(self) -> tuple[float, int]:
        return (self.density, self.m)

    def prune(self, a: np.ndarray) -> Pruned:
        return prune_magnitude(a, self.n, self.m)

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> Compressed:
        return compress(a_pruned, mask, self.n, self.m, metadata_bits)


def max_nonzeros_in_group(requested: Pattern, group: int) -> int:
    """Worst-case nonzeros in an aligned window of ``group`` values under ``requested``."""
    period = math.lcm(requested.m, group)
    worst = 0
    for start in range(0, period, group):
        end = start + group
        count = 0
        g = (start // requested.m) * requested.m
        while g < end:
            overlap = min(end, g + requested.m) - max(start, g)
            count += min(requested.n, overlap)
            g += requested.m
        worst = max(worst, count)
    return worst


# -- functional path: prune, compress, pack ----------------------------------------------------

def check_nm(n: int, m: int) -> None:
    """Raise FunctionalError unless 1 <= n <= m <= MAX_GROUP."""
    if isinstance(n, bool) or isinstance(m, bool) or not isinstance(n, int | np.integer) \
            or not isinstance(m, int | np.integer):
        raise FunctionalError(f"N and M must be integers, got {n!r}:{m!r}")
    if m < 1 or m > MAX_GROUP:
        raise FunctionalError(f"group size M = {m} must be between 1 and {MAX_GROUP}")
    if n < 1 or n > m:
        raise FunctionalError(f"N = {n} must be between 1 and M = {m} in pattern {n}:{m}")


def _k_padded(k: int, m: int) -> int:
    return -(-k // m) * m


def as_2d(a: np.ndarray, what: str) -> np.ndarray:
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
    check_nm(n, m)
    a = as_2d(a, "A")
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
    check_nm(n, m)
    mask = as_2d(mask, "mask") != 0
    rows, k = mask.shape
    kp = _k_padded(k, m)
    counts = _pad_k(mask, kp).reshape(rows, kp // m, m).sum(axis=2)
    bad = np.argwhere(counts > n)
    if len(bad):
        r, g = (int(x) for x in bad[0])
        lo, hi = g * m, min(k, g * m + m) - 1
        raise FunctionalError(f"row {r}, group {g} (k {lo}..{hi}) has {int(counts[r, g])} nonzeros; "
                              f"{n}:{m} allows at most {n}")


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

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Values, in-group indices, N and M: value p of row r multiplies B row (p // N) * M + indices[r, p]."""
        return self.values, self.indices, self.n, self.m


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
    check_nm(n, m)
    a = as_2d(a_pruned, "A")
    keep = (a != 0) if mask is None else as_2d(mask, "mask") != 0
    if keep.shape != a.shape:
        raise FunctionalError(f"mask shape {keep.shape} differs from A's shape {a.shape}")
    validate_mask(keep, n, m)
    need = bits_to_index(m)
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
