"""Pair-wise N:M sparsity: at most N nonzeros per aligned group of M values of A along k, kept in pairs.

The sparse tensor-core format of 4-bit types: "when matrices A and B have .u4/.s4 elements [or .e2m1
with .kind::mxf4], matrix A is pair-wise structured sparse at a granularity of 4:8 ... each two-wide
sub-chunk within the eight-wide chunk must be all zeroes or all non-zeros ... the positions of the two
two-wide sub-chunks with non-zero values in the eight-wide chunk ... are indicated by two 2-bit indices
in the metadata" (PTX ISA, "Sparse matrix storage", mma.sp; cuSPARSELt calls it "paired 4:8").

Spelling ``"N:M-paired"`` (``"4:8-paired"``; ``"4:8p"``, ``"4:8 pairs"`` and ``"paired 4:8"`` parse
too); N and M are even. A group is M/2 aligned pairs (positions 2j, 2j+1) of which N/2 are kept, so
a pair-wise N:M mask is an (N/2):(M/2) mask over pairs. A kept pair may hold a zero.

Metadata: one index into the group's M/2 pairs per kept pair, ceil(log2(M/2)) bits: 2 bits per pair
for 4:8, i.e. 1 bit per kept value. Per kept value the format declares ``ceil(pair bits / 2)``
(exact for 4:8). A hardware's ``metadata_bits_per_value`` b stores 2b bits per pair.

Containment: hardware running pair-wise N:M runs every request whose masks touch at most N/2 pairs
in every aligned group of M: a pair-wise format that contains it pair for pair, or a plain N:M
pattern sparse enough (1:4 and 2:8 run as 4:8-paired; 2:4 does not: two nonzeros of a group of four
may sit in both of its pairs). For a plain pattern with odd M the count of touched pairs is an upper
bound (a pair may straddle two of its groups), so containment is conservative there.

Compressed form (functional path): ``values`` (``rows x ceil(k/M)*N``, group after group, the kept
pairs in increasing order, both values of each pair) and ``pair_indices`` (uint8, ``rows x
ceil(k/M)*N/2``, each kept pair's position 0..M/2-1 in its group). A group touching fewer pairs is
filled with its lowest unused pairs at value 0. ``pack_metadata`` packs ``pair_indices`` densely at
the pair bits, little-endian, as :mod:`accelsim.formats.nm` packs its indices.
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
)
from accelsim.formats.base import GroupedFormat, SparsityFormat, bits_to_index
from accelsim.formats.nm import MAX_GROUP, Pattern, _pack, max_nonzeros_in_group
from accelsim.textsafe import short_repr

_PAIRED_RE = re.compile(r"^[ \t]*(?:paired[ \t-]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})|"
                        r"([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t-]*(?:paired|pairs|p))[ \t]*\Z", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class PairedPattern(GroupedFormat):
    """At most ``n`` nonzeros in every aligned group of ``m`` values along k, in aligned pairs."""

    n: int
    m: int

    key = "paired"
    title = "pair-wise N:M"
    example = "4:8-paired"
    spelling = _PAIRED_RE
    spelling_hint = 'a pair-wise pattern like "4:8-paired"'

    @classmethod
    def parse(cls, text: str) -> PairedPattern:
        match = cls.match_spelling(text)
        n, m = (int(g) for g in (match.group(1, 2) if match.group(1) is not None else match.group(3, 4)))
        if m < 2 or m > MAX_GROUP:
            raise ValueError(f"group size M must be between 2 and {MAX_GROUP} in {short_repr(text)}")
        if n < 2 or n > m:
            raise ValueError(f"N must be between 2 and M in {short_repr(text)} (a group keeps at least one pair)")
        if n % 2 or m % 2:
            raise ValueError(f"N and M must be even in {short_repr(text)}: values are kept in pairs")
        return PairedPattern(n, m)

    @classmethod
    def at_sparsity(cls, sparsity: float) -> PairedPattern | None:
        """Pair-wise N:M with exactly ``sparsity`` zeros over groups of 8 (50 % -> 4:8-paired, 75 % -> 2:8-paired)."""
        n = (1.0 - sparsity) * 8
        return PairedPattern(round(n), 8) if abs(n - round(n)) < 1e-9 and round(n) in (2, 4, 6) else None

    def __str__(self) -> str:
        return f"{self.n}:{self.m}-paired"

    @property
    def pruning(self) -> str:
        return f"{self}: the {self.n // 2} pairs of largest |a0| + |a1| in every {self.m} along k"

    @property
    def pairs(self) -> Pattern:
        """The same mask over pairs: (N/2):(M/2)."""
        return Pattern(self.n // 2, self.m // 2)

    @property
    def pair_index_bits(self) -> int:
        """Bits of one kept pair's index into its group: ceil(log2(M/2))."""
        return bits_to_index(self.m // 2)

    @property
    def default_metadata_bits(self) -> int:
        """Bits per kept value: half a pair index, rounded up (1 for 4:8-paired)."""
        return math.ceil(self.pair_index_bits / 2)

    def contains(self, requested: SparsityFormat) -> bool:
        """Every mask valid for ``requested`` touches at most N/2 pairs in each aligned group of M."""
        if isinstance(requested, PairedPattern):
            return max_nonzeros_in_group(requested.pairs, self.m // 2) <= self.n // 2
        if isinstance(requested, Pattern):
            return _max_pairs_touched(requested, self.m) <= self.n // 2
        return False

    def prune(self, a: np.ndarray) -> Pruned:
        """Keep the N/2 pairs of largest |a0| + |a1| in each group of M (ties to the lower position)."""
        a = as_2d(a, "A")
        rows, k = a.shape
        kp = self.k_padded(k)
        mag = np.pad(np.abs(a.astype(np.float64)), ((0, 0), (0, kp - k)))
        keep = largest(mag.reshape(rows, kp // self.m, self.m // 2, 2).sum(axis=3), self.n // 2)
        return pruned_to(a, np.repeat(keep.reshape(rows, kp // 2), 2, axis=1)[:, :k], grid_padding(rows, k, 1, self.m))

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> PairedCompressed:
        """The pair-wise compressed form of ``a_pruned * mask`` (``mask`` None: ``a_pruned != 0``)."""
        a, keep = operand_and_mask(a_pruned, mask)
        bits = self.default_metadata_bits if metadata_bits is None else int(metadata_bits)
        if 2 * bits < self.pair_index_bits:
            raise FunctionalError(f"{bits} metadata bits per value ({2 * bits} per pair) cannot index the "
                                  f"{self.m // 2} pairs of a group of {self.m} (needs {self.pair_index_bits} per pair)")
        rows, k = a.shape
        kp = self.k_padded(k)
        groups = kp // self.m
        touched = np.asarray(np.pad(keep, ((0, 0), (0, kp - k))).reshape(rows, kp // 2, 2).any(axis=2))
        counts = touched.reshape(rows, groups, self.m // 2).sum(axis=2)
        bad = np.argwhere(counts > self.n // 2)
        if len(bad):
            r, g = (int(x) for x in bad[0])
            raise FunctionalError(f"row {r}, group {g} (k {g * self.m}..{min(k, g * self.m + self.m) - 1}) has "
                                  f"nonzeros in {int(counts[r, g])} pairs; {self} allows at most {self.n // 2}")
        # the pair-level selection: the kept pairs plus the lowest fill pairs, sorted (N:M's on the pair mask)
        sel = fill_select(touched.reshape(rows, groups, self.m // 2), self.n // 2)
        pair_idx = np.ascontiguousarray(sel.astype(np.uint8).reshape(rows, groups * (self.n // 2)))
        pos = sel.astype(np.intp)[:, :, :, None] * 2 + np.arange(2)
        cols = (pos + (np.arange(groups) * self.m)[None, :, None, None]).reshape(rows, groups * self.n)
        dense = np.pad(masked(a, keep), ((0, 0), (0, kp - k)))
        values = np.ascontiguousarray(np.take_along_axis(dense, cols, axis=1))
        return PairedCompressed(values, pair_idx, k, kp, self.n, self.m, bits)


def _max_pairs_touched(requested: Pattern, group: int) -> int:
    """Most aligned pairs an N:M mask can touch in an aligned window of ``group`` values (an upper bound
    when M is odd: a pair straddling two of its groups is counted in both)."""
    period = math.lcm(requested.m, group, 2)
    worst = 0
    for start in range(0, period, group):
        end = start + group
        total = 0
        g = (start // requested.m) * requested.m
        while g < end:
            lo, hi = max(start, g), min(end, g + requested.m)
            if hi > lo:
                pairs = (hi - 1) // 2 - lo // 2 + 1
                total += min(requested.n, hi - lo, pairs)
            g += requested.m
        worst = max(worst, total)
    return worst


@dataclass(frozen=True, eq=False)
class PairedCompressed(GroupedValues):
    """A pair-wise compressed A: kept ``values`` and each kept pair's index in its group (module docstring)."""

    values: np.ndarray  # rows x ceil(k/M)*N, dtype of A
    pair_indices: np.ndarray  # uint8, rows x ceil(k/M)*N/2: pair position 0..M/2-1 in its group
    k: int
    k_padded: int
    n: int
    m: int
    metadata_bits: int  # per kept value (2x per kept pair): packed, ceil(kept pairs * pair bits / 8) bytes

    def positions(self) -> np.ndarray:
        """Each kept value's position 0..M-1 in its group (uint8, the shape of ``values``)."""
        rows, half = self.pair_indices.shape
        pos = self.pair_indices.astype(np.uint8)[:, :, None] * 2 + np.arange(2, dtype=np.uint8)
        return np.ascontiguousarray(pos.reshape(rows, half * 2))

    def pack_metadata(self, word_bits: int = 8) -> np.ndarray:
        """Pair indices packed densely at 2 x metadata_bits each, little-endian, as uint8 or uint32 words."""
        return _pack(self.pair_indices.ravel(), 2 * self.metadata_bits, word_bits)
