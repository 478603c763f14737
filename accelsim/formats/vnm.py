"""V:N:M sparsity (VENOM / Spatha: R. L. Castro et al., "VENOM: A Vectorized N:M Format for Unleashing the
Power of Sparse Tensor Cores", SC'23, arXiv 2310.02065): 2:4 sparse tensor cores at 75-98 % sparsity.

Spelling ``"V:N:M"`` (``"64:2:8"``), three fields, so it never collides with N:M's two (``"2:4"``).
A's rows are cut in blocks of V rows, k in groups of M columns. In every (V-row block, group) the
format selects ``SELECT`` = 4 columns, shared by the block's V rows; inside those 4 columns every row
keeps at most N values (N:4). Density N / M. A 2:4 sparse tensor core runs it on the gathered
columns: the kernel gathers, per V-row block, the 4 selected rows of B of each group (the column-gather
stage) and runs 2:4 on them, so it executes N / M of the dense MACs at the 2:4 rate (twice dense) on
4 / M of k. N <= 2 runs on 2:4 hardware (N = 1 as 2:4 with zero fill); N = 3, 4 need another datapath.

Metadata (``metadata_bytes``): per V-row block and group, 4 column indices of ceil(log2 M) bits
(``column_index_bits``); per kept value a 2-bit index into the 4 selected columns (the 2:4 metadata).
The last block may be short (rows not a multiple of V: padded to whole blocks, ``padding["m"]``); k is
zero-padded to whole groups (``padding["k"]``).

Compressed form (:class:`VnmCompressed`, functional path):

* ``columns``: uint8, ``blocks x groups x 4``, the selected columns of each (block, group), positions
  0..M-1 in the group, strictly increasing; a (block, group) using fewer than 4 columns is filled with
  its lowest unused positions (fill columns may lie in the k padding).
* ``values``: ``rows x groups*N`` (dtype of A), group after group N values per row; ``indices``: uint8,
  same shape, each value's slot 0..3 among its block's selected columns, increasing inside a group; a row
  with fewer than N kept values in a group is filled with the lowest unused slots at value 0.
* ``pack_metadata()``: the column indices as one stream at ceil(log2 M) bits, then the slot indices at
  2 bits, each little-endian as :mod:`accelsim.formats.nm` packs its indices.
"""

from __future__ import annotations

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
    masked,
    operand_and_mask,
    packed_bytes,
    pruned_to,
)
from accelsim.formats.base import GroupedFormat, SparsityFormat, bits_to_index
from accelsim.formats.nm import _pack
from accelsim.textsafe import short_repr

_VNM_RE = re.compile(r"^[ \t]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t]*\Z")
SELECT = 4  # columns selected per (V-row block, group): the 4 positions of a 2:4 sparse tensor-core group
SLOT_BITS = 2  # bits of a kept value's slot among the SELECT columns (the 2:4 metadata)
MAX_V = 65536
MAX_M = 256  # column indices fit a byte


@dataclass(frozen=True, order=True)
class VnmPattern(GroupedFormat):
    """V:N:M: per V-row block and group of M columns, 4 shared columns; N of them kept per row."""

    v: int
    n: int
    m: int

    key = "vnm"
    title = "V:N:M"
    example = "64:2:8"
    spelling = _VNM_RE
    spelling_hint = 'a V:N:M pattern like "64:2:8"'

    @classmethod
    def parse(cls, text: str) -> VnmPattern:
        v, n, m = (int(g) for g in cls.match_spelling(text).groups())
        if not 1 <= v <= MAX_V:
            raise ValueError(f"V (rows sharing a column selection) must be between 1 and {MAX_V} in {short_repr(text)}")
        if m <= SELECT:
            raise ValueError(f"M must be larger than {SELECT} in {short_repr(text)}: V:N:M selects {SELECT} of every M "
                             f"columns (with M = {m} write the N:M pattern \"{n}:{m}\")")
        if m > MAX_M:
            raise ValueError(f"M = {m} in {short_repr(text)} is larger than {MAX_M}")
        if not 1 <= n <= SELECT:
            raise ValueError(f"N must be between 1 and {SELECT} in {short_repr(text)}: at most N values per row "
                             f"among the {SELECT} selected columns")
        return VnmPattern(v, n, m)

    @classmethod
    def at_sparsity(cls, sparsity: float) -> VnmPattern | None:
        """``64:2:M`` with exactly ``sparsity`` zeros: M = 2 / (1 - sparsity) when that is a whole number above
        4 and at most MAX_M (75 % -> 64:2:8, 87.5 % -> 64:2:16, 90 % -> 64:2:20); None otherwise (50 % would
        be 64:2:4, which is the N:M pattern 2:4). V = 64 and N = 2: VENOM's (Castro et al., SC'23) V = 64 runs
        and the N that runs on 2:4 sparse tensor cores."""
        if not 0.0 <= sparsity < 1.0:
            return None
        m = 2.0 / (1.0 - sparsity)
        if abs(m - round(m)) > 1e-9 or not SELECT < round(m) <= MAX_M:
            return None
        return VnmPattern(64, 2, round(m))

    @classmethod
    def number_hint(cls, value: int) -> str | None:
        """YAML 1.1 reads an unquoted ``V:N:M`` with N, M below 60 as the base-60 number V x 3600 + N x 60 + M."""
        v, rest = divmod(value, 3600)
        n, m = divmod(rest, 60)
        if v >= 1 and 1 <= n <= SELECT and m > SELECT:
            return (f"got the number {value}: YAML reads an unquoted {v}:{n}:{m} as a base-60 number; "
                    f"quote the pattern: \"{v}:{n}:{m}\"")
        return None

    def __str__(self) -> str:
        return f"{self.v}:{self.n}:{self.m}"

    @property
    def pruning(self) -> str:
        return (f"{self}: in each {self.v}-row block and group of {self.m} along k, the 4 columns of largest L2 norm, "
                f"then each row's {self.n} largest |values| among them")

    @property
    def default_metadata_bits(self) -> int:
        """Bits per kept value: its slot among the 4 selected columns (2, the 2:4 metadata)."""
        return SLOT_BITS

    @property
    def column_index_bits(self) -> int:
        """Bits of one selected column's index in its group: ceil(log2 M)."""
        return bits_to_index(self.m)

    @property
    def select(self) -> int:
        return SELECT

    def selection_bits_per_value(self) -> float:
        """The column indices spread over the kept values they serve: 4 x ceil(log2 M) / (V x N)."""
        return SELECT * self.column_index_bits / (self.v * self.n)

    def blocks(self, rows: int) -> int:
        return -(-rows // self.v)

    def metadata_bytes(self, rows: int, k: int, bits: int | None = None) -> float:
        """2:4 slot indices (``bits`` per kept value, default 2) plus 4 column indices per block and group."""
        b = self.default_metadata_bits if bits is None else bits
        groups = -(-k // self.m)
        return (rows * groups * self.n * b + self.blocks(rows) * groups * SELECT * self.column_index_bits) / 8

    def contains(self, requested: SparsityFormat) -> bool:
        """V1:N1:M1 runs every V2:N2:M2 mask with V1 | V2, M1 | M2 and N2 <= N1."""
        return (isinstance(requested, VnmPattern) and requested.v % self.v == 0 and requested.m % self.m == 0
                and requested.n <= self.n)

    def preference(self) -> tuple[float, int, int]:
        return (self.density, self.m, -self.v)

    def prune(self, a: np.ndarray) -> Pruned:
        return prune_vnm(a, self.v, self.n, self.m)

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> VnmCompressed:
        return compress_vnm(a_pruned, mask, self.v, self.n, self.m, metadata_bits)


# -- functional path ------------------------------------------------------------------------------

def _shape(rows: int, k: int, v: int, m: int) -> tuple[int, int, int, int]:
    """(blocks, groups, rows padded to V, k padded to M)."""
    blocks, groups = -(-rows // v), -(-k // m)
    return blocks, groups, blocks * v, groups * m


def _grid(x: np.ndarray, v: int, m: int) -> np.ndarray:
    """``x`` (rows x k) zero-padded to whole blocks and groups, as blocks x V x groups x M."""
    rows, k = x.shape
    blocks, groups, rp, kp = _shape(rows, k, v, m)
    return np.pad(x, ((0, rp - rows), (0, kp - k))).reshape(blocks, v, groups, m)


def prune_vnm(a: np.ndarray, v: int, n: int, m: int) -> Pruned:
    """Magnitude pruning to V:N:M: in each (V-row block, group) keep the 4 columns of largest L2 norm over
    the block's rows, then each row's N largest |values| among them (ties to the lower position)."""
    a = as_2d(a, "A")
    rows, k = a.shape
    mag = _grid(np.abs(a.astype(np.float64)), v, m)  # blocks x V x groups x M
    norms = np.sqrt((mag ** 2).sum(axis=1))  # blocks x groups x M
    cols = np.argsort(-norms, axis=2, kind="stable")[:, :, :SELECT]  # blocks x groups x 4
    in_cols = np.take_along_axis(mag, cols[:, None, :, :], axis=3)  # blocks x V x groups x 4
    slots = np.argsort(-in_cols, axis=3, kind="stable")[:, :, :, :n]
    keep: np.ndarray = np.zeros(mag.shape, dtype=bool)
    chosen = np.take_along_axis(np.broadcast_to(cols[:, None, :, :], in_cols.shape), slots, axis=3)
    np.put_along_axis(keep, chosen, True, axis=3)
    blocks, groups = mag.shape[0], mag.shape[2]
    return pruned_to(a, keep.reshape(blocks * v, groups * m)[:rows, :k], grid_padding(rows, k, v, m))


def compress_vnm(a_pruned: np.ndarray, mask: np.ndarray | None, v: int, n: int, m: int,
                 metadata_bits: int | None = None) -> VnmCompressed:
    """The V:N:M compressed form of ``a_pruned * mask`` (``mask`` None: ``a_pruned != 0``).

    FunctionalError naming the first (block, group) whose nonzeros use more than 4 columns, or the first
    row with more than N of them.
    """
    a, keep = operand_and_mask(a_pruned, mask)
    bits = SLOT_BITS if metadata_bits is None else int(metadata_bits)
    if bits < SLOT_BITS:
        raise FunctionalError(f"{bits} metadata bits per value cannot index the {SELECT} selected columns "
                              f"(needs {SLOT_BITS})")
    rows, k = a.shape
    grid = _grid(keep, v, m)  # blocks x V x groups x M
    used = np.asarray(grid.any(axis=1))  # blocks x groups x M
    bad = np.argwhere(used.sum(axis=2) > SELECT)
    if len(bad):
        b, g = (int(x) for x in bad[0])
        raise FunctionalError(f"rows {b * v}..{min(rows, b * v + v) - 1}, group {g} (k {g * m}.."
                              f"{min(k, g * m + m) - 1}) use {int(used[b, g].sum())} columns; {v}:{n}:{m} allows "
                              f"{SELECT}")
    per_row = grid.sum(axis=3)  # blocks x V x groups
    bad = np.argwhere(per_row > n)
    if len(bad):
        b, r, g = (int(x) for x in bad[0])
        raise FunctionalError(f"row {b * v + r}, group {g} (k {g * m}..{min(k, g * m + m) - 1}) has "
                              f"{int(per_row[b, r, g])} nonzeros; {v}:{n}:{m} allows at most {n}")
    columns = fill_select(used, SELECT)  # blocks x groups x 4: the used columns, then the lowest unused
    vals = _grid(masked(a, keep), v, m)
    sel_keep = np.take_along_axis(grid, columns[:, None, :, :], axis=3)  # blocks x V x groups x 4
    sel_vals = np.take_along_axis(vals, columns[:, None, :, :], axis=3)
    slots = fill_select(sel_keep, n)  # blocks x V x groups x N: each row's kept slots, then the lowest free
    values = np.take_along_axis(sel_vals, slots, axis=3)
    blocks, _, groups, _ = grid.shape
    values = np.ascontiguousarray(values.reshape(blocks * v, groups * n)[:rows])
    indices = np.ascontiguousarray(slots.astype(np.uint8).reshape(blocks * v, groups * n)[:rows])
    return VnmCompressed(values, indices, np.ascontiguousarray(columns.astype(np.uint8)), k, groups * m, v, n, m,
                         bits)


@dataclass(frozen=True, eq=False)
class VnmCompressed(GroupedValues):
    """A V:N:M-compressed A: kept values, their slots among the selected columns, the selections."""

    values: np.ndarray  # rows x groups*N, dtype of A
    indices: np.ndarray  # uint8, same shape: slot 0..3 among the block's selected columns of the group
    columns: np.ndarray  # uint8, blocks x groups x 4: selected positions 0..M-1 of each (block, group)
    k: int
    k_padded: int
    v: int
    n: int
    m: int
    metadata_bits: int  # per kept value (the slot index); the column indices come on top

    @property
    def padding(self) -> dict[str, list[int]]:
        return grid_padding(self.rows, self.k, self.v, self.m)

    @property
    def column_index_bits(self) -> int:
        return bits_to_index(self.m)

    @property
    def metadata_bytes(self) -> int:
        """Packed slot indices plus packed column indices, each stream rounded up to a byte."""
        return packed_bytes(self.kept, self.metadata_bits) + packed_bytes(self.columns.size, self.column_index_bits)

    def pack_metadata(self, word_bits: int = 8) -> tuple[np.ndarray, np.ndarray]:
        """(column indices at ceil(log2 M) bits, slot indices at ``metadata_bits``), little-endian words."""
        return (_pack(self.columns.ravel(), self.column_index_bits, word_bits),
                _pack(self.indices.ravel(), self.metadata_bits, word_bits))

    def positions(self) -> np.ndarray:
        """Each kept value's position 0..M-1 in its group (uint8, the shape of ``values``)."""
        groups = self.columns.shape[1]
        block = np.arange(self.rows) // self.v
        cols = self.columns[block]  # rows x groups x 4
        slots = self.indices.reshape(self.rows, groups, self.n).astype(np.intp)
        return np.ascontiguousarray(np.take_along_axis(cols, slots, axis=2).reshape(self.rows, groups * self.n))

    def tiled_form(self) -> tuple[str, tuple[np.ndarray, ...], tuple[int, ...]]:
        """What the engine's V:N:M functional kernel runs: (``"vnm"``, (values, slots, columns), (V, N, M))."""
        return "vnm", (self.values, self.indices, self.columns), (self.v, self.n, self.m)
