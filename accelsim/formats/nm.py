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
from accelsim.formats.arrays import (
    GroupedValues,
    Pruned,
    as_2d,
    fill_select,
    grid_padding,
    largest,
    masked,
    operand_and_mask,
    pruned_to,
    round_up,
)
from accelsim.formats.base import GroupedFormat, SparsityFormat, bits_to_index
from accelsim.textsafe import short_repr

_PATTERN_RE = re.compile(r"^[ \t]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t]*\Z")  # ASCII digits only
MAX_GROUP = 64  # no sparse datapath uses larger groups


@dataclass(frozen=True, order=True)
class Pattern(GroupedFormat):
    """At most ``n`` nonzeros in every aligned group of ``m`` consecutive values along k."""

    n: int
    m: int

    key = "nm"
    title = "N:M"
    example = "2:4"
    spelling = _PATTERN_RE
    spelling_hint = 'a pattern like "2:4" (N:M)'

    @classmethod
    def parse(cls, text: str) -> Pattern:
        n, m = (int(g) for g in cls.match_spelling(text).groups())
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
    def pruning(self) -> str:
        return f"{self}: the {self.n} largest |value{'s' if self.n > 1 else ''}| of every {self.m} along k"

    @property
    def default_metadata_bits(self) -> int:
        """Bits per kept value for an index into the group: ceil(log2(M))."""
        return bits_to_index(self.m)

    def contains(self, requested: SparsityFormat) -> bool:
        """Every mask valid for ``requested`` (an N:M pattern) is valid for this one."""
        if not isinstance(requested, Pattern):
            return False
        return max_nonzeros_in_group(requested, self.m) <= self.n

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


def _pad_k(a: np.ndarray, k_padded: int) -> np.ndarray:
    """Zero-pad axis 1 of ``a`` up to ``k_padded``."""
    k = a.shape[1]
    if k == k_padded:
        return a
    return np.pad(a, ((0, 0), (0, k_padded - k)))


def prune_magnitude(a: np.ndarray, n: int, m: int) -> Pruned:
    """Keep the N largest-|value| entries of each aligned group of M along k; returns (pruned, mask).

    k not a multiple of M is zero-padded to one for grouping (``result.padding`` reports it);
    ``pruned`` and ``mask`` keep A's shape. Ties go to the lower k position.
    """
    check_nm(n, m)
    a = as_2d(a, "A")
    rows, k = a.shape
    kp = round_up(k, m)
    keep = largest(_pad_k(np.abs(a.astype(np.float64)), kp).reshape(rows, kp // m, m), n)
    return pruned_to(a, keep.reshape(rows, kp)[:, :k], grid_padding(rows, k, 1, m))


def validate_mask(mask: np.ndarray, n: int, m: int) -> None:
    """Raise FunctionalError naming the first row and group with more than N nonzeros."""
    check_nm(n, m)
    mask = as_2d(mask, "mask") != 0
    rows, k = mask.shape
    kp = round_up(k, m)
    counts = _pad_k(mask, kp).reshape(rows, kp // m, m).sum(axis=2)
    bad = np.argwhere(counts > n)
    if len(bad):
        r, g = (int(x) for x in bad[0])
        lo, hi = g * m, min(k, g * m + m) - 1
        raise FunctionalError(f"row {r}, group {g} (k {lo}..{hi}) has {int(counts[r, g])} nonzeros; "
                              f"{n}:{m} allows at most {n}")


@dataclass(frozen=True, eq=False)
class Compressed(GroupedValues):
    """An N:M-compressed A: kept ``values`` and their in-group ``indices`` (see module docstring)."""

    values: np.ndarray  # m_rows x ceil(k/M)*N, dtype of A
    indices: np.ndarray  # uint8, same shape: position 0..M-1 of each value inside its group
    k: int
    k_padded: int
    n: int
    m: int
    metadata_bits: int

    @property
    def groups(self) -> int:
        """N:M groups per row: k_padded / M."""
        return self.k_padded // self.m

    @property
    def value_bytes(self) -> int:
        """Bytes of stored values at the storage dtype's item size."""
        return int(self.values.nbytes)

    def pack_metadata(self, word_bits: int = 8) -> np.ndarray:
        """Indices packed densely at metadata_bits each, little-endian, as uint8 (8) or uint32 (32) words."""
        return _pack(self.indices.ravel(), self.metadata_bits, word_bits)

    def positions(self) -> np.ndarray:
        """The in-group indices (stored as the metadata)."""
        return self.indices


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
    a, keep = operand_and_mask(a_pruned, mask)
    validate_mask(keep, n, m)
    need = bits_to_index(m)
    bits = need if metadata_bits is None else int(metadata_bits)
    if bits < need:
        raise FunctionalError(f"{bits} metadata bits cannot index a group of {m} (needs {need})")
    rows, k = a.shape
    kp = round_up(k, m)
    g = kp // m
    vals = _pad_k(masked(a, keep), kp).reshape(rows, g, m)
    sel = fill_select(_pad_k(keep, kp).reshape(rows, g, m), n)  # kept positions plus the lowest fill ones
    values = np.ascontiguousarray(np.take_along_axis(vals, sel, axis=2).reshape(rows, g * n))
    indices = np.ascontiguousarray(sel.astype(np.uint8).reshape(rows, g * n))
    return Compressed(values, indices, k, kp, n, m, bits)


def decompress(c: Compressed) -> np.ndarray:
    """Dense ``rows x k`` A rebuilt from values + indices."""
    return c.dense()
