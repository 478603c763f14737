"""What every format's functional path shares: operand checks, masking, padding, the pruned pair, and the
common members of compressed operands (read-only arrays, kept values, packed metadata, the group scatter).

A format module writes only what differs: how it chooses the mask and how it lays out the kept values.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from accelsim.errors import FunctionalError


def round_up(x: int, step: int) -> int:
    """``x`` rounded up to a whole multiple of ``step``."""
    return -(-x // step) * step


def packed_bytes(count: int, bits: int) -> int:
    """Bytes of ``count`` entries of ``bits`` bits packed densely: ceil(count x bits / 8)."""
    return -(-count * bits // 8)


def as_2d(a: np.ndarray, what: str) -> np.ndarray:
    """``a`` as an array; FunctionalError naming ``what`` unless it is 2-D (rows x k)."""
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise FunctionalError(f"{what} must be a 2-D array (rows x k), got shape {arr.shape}")
    return arr


def operand_and_mask(a_pruned: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(A, kept positions)`` of a compress call: ``mask`` None means A's nonzeros; FunctionalError when either
    is not 2-D or their shapes differ."""
    a = as_2d(a_pruned, "A")
    keep = (a != 0) if mask is None else as_2d(mask, "mask") != 0
    if keep.shape != a.shape:
        raise FunctionalError(f"mask shape {keep.shape} differs from A's shape {a.shape}")
    return a, keep


def masked(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``a`` with the positions ``keep`` does not hold set to zero, in ``a``'s dtype."""
    return np.where(keep, a, np.zeros((), dtype=a.dtype)).astype(a.dtype, copy=False)


def grid_padding(rows: int, k: int, row_block: int, k_group: int) -> dict[str, list[int]]:
    """The padding of a ``rows x k`` A to whole ``row_block`` rows (``"m"``) and ``k_group`` columns (``"k"``):
    ``{"m": [rows, padded], "k": [k, padded]}``, each only when it pads."""
    out = {}
    if rows % row_block:
        out["m"] = [rows, round_up(rows, row_block)]
    if k % k_group:
        out["k"] = [k, round_up(k, k_group)]
    return out


def largest(mag: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask of the ``n`` largest entries along the last axis of ``mag`` (ties to the lower position)."""
    order = np.argsort(-mag, axis=-1, kind="stable")[..., :n]
    keep = np.zeros(mag.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return keep


def fill_select(kept: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` positions along the last axis a compressed group stores: the kept ones (at most ``n``) plus the
    lowest unused ones as fill, in increasing order (NVIDIA's 2:4 fill)."""
    width = kept.shape[-1]
    key = np.where(kept, 0, width) + np.arange(width)  # kept positions sort first, then unused in index order
    return np.sort(np.argsort(key, axis=-1, kind="stable")[..., :n], axis=-1)


def scatter_groups(values: np.ndarray, positions: np.ndarray, keep: int, group: int, k: int) -> np.ndarray:
    """The dense ``rows x k`` A of a grouped compressed form: row r's value p sits at position ``positions[r, p]``
    of group ``p // keep`` (``group`` dense positions each)."""
    rows = values.shape[0]
    groups = values.shape[1] // keep
    dense = np.zeros((rows, groups, group), dtype=values.dtype)
    np.put_along_axis(dense, positions.reshape(rows, groups, keep).astype(np.intp),
                      values.reshape(rows, groups, keep), axis=2)
    return dense.reshape(rows, groups * group)[:, :k].copy()


class Pruned(tuple):
    """``(pruned, mask)`` from a format's ``prune``: the pruned A and its mask, A's shape; ``padding`` reports how
    A was padded for the format's grouping (``{"m": [rows, padded], "k": [k, padded]}``, each when it pads)."""

    pruned: np.ndarray
    mask: np.ndarray
    padding: dict[str, list[int]]

    def __new__(cls, pruned: np.ndarray, mask: np.ndarray, padding: dict[str, list[int]]) -> Pruned:
        obj = super().__new__(cls, (pruned, mask))
        obj.pruned, obj.mask, obj.padding = pruned, mask, padding
        return obj

    @property
    def k(self) -> int:
        """Dense reduction length."""
        return int(self.mask.shape[1])

    @property
    def k_padded(self) -> int:
        """k after padding to the format's group."""
        return self.padding["k"][1] if "k" in self.padding else self.k


def pruned_to(a: np.ndarray, mask: np.ndarray, padding: dict[str, list[int]] | None = None) -> Pruned:
    """The :class:`Pruned` pair of ``a`` under ``mask`` (made contiguous), with ``padding`` (none by default)."""
    mask = np.ascontiguousarray(mask)
    return Pruned(masked(a, mask), mask, {} if padding is None else padding)


# -- members compressed operands share (mixins of frozen dataclasses) --------------------------------------

class FrozenArrays:
    """A compressed operand (a frozen dataclass) whose array fields are made read-only when it is built."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)


class StoredValues(FrozenArrays):
    """A compressed operand storing its kept ``values`` with ``metadata_bits`` of metadata per kept value."""

    values: np.ndarray
    metadata_bits: int

    @property
    def kept(self) -> int:
        """Stored values (fill values included)."""
        return int(self.values.size)

    @property
    def metadata_bytes(self) -> int:
        """Bytes of packed metadata: ceil(kept * metadata_bits / 8)."""
        return packed_bytes(self.kept, self.metadata_bits)


class UnpaddedRows(StoredValues):
    """A compressed operand of an ``m x k`` A that pads nothing: C has ``m`` rows, k stays k."""

    m: int
    k: int

    @property
    def rows(self) -> int:
        """Rows of C: the unpruned m."""
        return self.m

    @property
    def k_padded(self) -> int:
        return self.k

    @property
    def padding(self) -> dict[str, list[int]]:
        return {}


class GroupedValues(StoredValues):
    """A compressed operand keeping ``n`` values per group of ``m`` along k, row after row: value p of row r sits
    at position ``positions()[r, p]`` of group ``p // n``."""

    k: int
    k_padded: int
    n: int
    m: int

    @property
    def rows(self) -> int:
        """Rows of A (m of the GEMM)."""
        return int(self.values.shape[0])

    @property
    def padding(self) -> dict[str, list[int]]:
        """``{"k": [k, k_padded]}`` when k was padded to a multiple of M, else ``{}``."""
        return {"k": [self.k, self.k_padded]} if self.k_padded != self.k else {}

    def positions(self) -> np.ndarray:
        """Each kept value's position 0..M-1 in its group (the shape of ``values``)."""
        raise NotImplementedError

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Values, in-group positions, N and M: value p of row r multiplies B row (p // N) * M + position[r, p]."""
        return self.values, self.positions(), self.n, self.m

    def dense(self) -> np.ndarray:
        """The ``rows x k`` A rebuilt from values and positions."""
        return scatter_groups(self.values, self.positions(), self.n, self.m, self.k)
