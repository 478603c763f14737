"""Block sparsity: A tiled into BM x BK blocks, a share P of them all zero (block-sparse kernels: BSR, blocked-ELL).

Spelling ``"block{BM}x{BK}:{P}%"`` (``"block32x32:75%"``): BM rows by BK columns of A per block, P the
share of zero blocks (up to two decimals; 0 % is dense, 100 % is refused). Density d = 1 - P/100.
A block-sparse kernel runs the dense tensor cores (or array) over the nonzero blocks only, so it executes
d x the dense MACs; it reads the nonzero blocks' values and their indices.

Engine inputs: ``keep`` / ``group`` are d as a reduced fraction (75 % -> 1 / 4); the block shape comes
from the format itself (``rows``, ``cols``). Counts are expectations over random block placement:
``nonzero_blocks(rows, k)`` = round(d x block rows x block columns); A's rows are padded to whole
block rows and k to whole block columns (``padding``).

Metadata: BSR with 32-bit indices (``INDEX_BITS``; cuSPARSE / PyTorch BSR ``int32`` index arrays):
one column index per nonzero block plus one row pointer per block row and one more
(``metadata_bytes``). ``default_metadata_bits`` is that index width: for block formats the
metadata width counts bits per nonzero block's index, not per value.

Compressed form (:class:`BlockCompressed`, functional path): ``blocks`` (nonzero blocks, ``nnz x BM x BK``,
dtype of A, zero-padded at the edges), ``block_cols`` (int32, each block's column index), ``row_ptr``
(int32, block-row starts, ``block_rows + 1``): the BSR layout, blocks in row-major order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from accelsim.errors import FunctionalError
from accelsim.formats.arrays import (
    FrozenArrays,
    Pruned,
    as_2d,
    grid_padding,
    masked,
    operand_and_mask,
    packed_bytes,
    pruned_to,
    round_up,
)
from accelsim.formats.base import SparsityFormat
from accelsim.formats.percent import level_of_share
from accelsim.textsafe import short_repr

_BLOCK_RE = re.compile(r"^[ \t]*block[ \t]*([0-9]{1,6})[ \t]*x[ \t]*([0-9]{1,6})[ \t]*:[ \t]*"
                       r"([0-9]{1,3}(?:\.[0-9]{1,2})?)[ \t]*%[ \t]*\Z", re.IGNORECASE)
_CLAIM_RE = re.compile(r"^[ \t]*block[ \t]*[0-9]", re.IGNORECASE)  # "block" and a digit: ours (errors name it)
INDEX_BITS = 32  # BSR column index and row pointer width
MAX_SIDE = 65536
_HUNDREDTHS = 10000  # sparsity is kept in hundredths of a percent


@dataclass(frozen=True, order=True)
class BlockSparsity(SparsityFormat):
    """``rows`` x ``cols`` blocks of A, ``zeros_bp`` hundredths of a percent of them all zero."""

    rows: int
    cols: int
    zeros_bp: int  # share of zero blocks in hundredths of a percent (7500 = 75 %)

    key = "block"
    title = "block"
    example = "block32x32:75%"
    spelling = _BLOCK_RE
    claim = _CLAIM_RE
    spelling_hint = 'a block pattern like "block32x32:75%" (block rows x columns: share of zero blocks)'

    @classmethod
    def parse(cls, text: str) -> BlockSparsity:
        match = cls.match_spelling(text)
        bm, bk = int(match.group(1)), int(match.group(2))
        if not (1 <= bm <= MAX_SIDE and 1 <= bk <= MAX_SIDE):
            raise ValueError(f"block sides must be between 1 and {MAX_SIDE} in {short_repr(text)}")
        zeros = round(float(match.group(3)) * 100)
        if zeros >= _HUNDREDTHS:
            raise ValueError(f"sparsity must be below 100% in {short_repr(text)} (a block pattern keeps some blocks)")
        return BlockSparsity(bm, bk, zeros)

    @classmethod
    def at_sparsity(cls, sparsity: float) -> BlockSparsity | None:
        """``block32x32:P%`` with P = 100 x ``sparsity`` (to two decimals, as the spelling); None for 0 % or a
        level with more decimals. 32 x 32: the block of the issue's table (whole 16 x 16 MMA tiles)."""
        level = level_of_share(sparsity)
        if level is None or level == 0 or (level * 100).denominator != 1:
            return None
        return BlockSparsity(32, 32, int(level * 100))

    def __str__(self) -> str:
        pct = self.zeros_bp / 100
        return f"block{self.rows}x{self.cols}:{pct:g}%"

    @property
    def pruning(self) -> str:
        return f"{self}: the {self.rows}x{self.cols} blocks of smallest L2 norm zeroed"

    @property
    def _fraction(self) -> Fraction:
        return Fraction(_HUNDREDTHS - self.zeros_bp, _HUNDREDTHS)

    @property
    def keep(self) -> int:
        """Density as a reduced fraction: its numerator."""
        return self._fraction.numerator

    @property
    def group(self) -> int:
        """Density as a reduced fraction: its denominator."""
        return self._fraction.denominator

    @property
    def sparsity(self) -> float:
        """Share of zero blocks."""
        return self.zeros_bp / _HUNDREDTHS

    @property
    def default_metadata_bits(self) -> int:
        """Bits of one BSR index (per nonzero block, not per value)."""
        return INDEX_BITS

    # -- counts (expectations over random block placement) --------------------------------------
    def k_padded(self, k: int) -> int:
        return round_up(k, self.cols)

    def rows_padded(self, rows: int) -> int:
        return round_up(rows, self.rows)

    def grid(self, rows: int, k: int) -> tuple[int, int]:
        """(block rows, block columns)."""
        return -(-rows // self.rows), -(-k // self.cols)

    def nonzero_blocks(self, rows: int, k: int) -> int:
        brows, bcols = self.grid(rows, k)
        return max(1, round(self.density * brows * bcols))

    def k_compressed(self, k: int) -> int:
        """Expected nonzero k per row: density x k padded to whole blocks."""
        return max(1, round(self.density * self.k_padded(k)))

    def kept_values(self, rows: int, k: int) -> int:
        """Values of the nonzero blocks."""
        return self.nonzero_blocks(rows, k) * self.rows * self.cols

    def metadata_bytes(self, rows: int, k: int, bits: int | None = None) -> float:
        """BSR: one column index per nonzero block plus block rows + 1 row pointers, ``bits`` each (default 32)."""
        b = INDEX_BITS if bits is None else bits
        brows, _ = self.grid(rows, k)
        return (self.nonzero_blocks(rows, k) + brows + 1) * b / 8

    def decode_groups(self, rows: int, k: int) -> int:
        """No N:M decode: the block indices are read by the gather of B's block rows."""
        return 0

    # -- which formats a datapath runs ---------------------------------------------------------
    def contains(self, requested: SparsityFormat) -> bool:
        """A block-sparse kernel for BM x BK blocks runs any coarser block mask (blocks that tile into
        its own) at any sparsity: its density is the request's (it skips only zero blocks)."""
        return (isinstance(requested, BlockSparsity) and requested.rows % self.rows == 0
                and requested.cols % self.cols == 0)

    def preference(self) -> tuple[float, int]:
        return (self.density, -self.rows * self.cols)

    # -- functional path -----------------------------------------------------------------------
    def prune(self, a: np.ndarray) -> Pruned:
        """Zero the round(P x blocks) blocks of smallest L2 norm (ties: the later block goes first)."""
        a = as_2d(a, "A")
        rows, k = a.shape
        brows, bcols = self.grid(rows, k)
        total = brows * bcols
        zero = min(total - 1, round(self.sparsity * total))
        mag = _blocks(np.abs(a.astype(np.float64)), self.rows, self.cols)  # brows x bcols x BM x BK
        norms = np.sqrt((mag ** 2).sum(axis=(2, 3))).ravel()
        order = np.argsort(norms, kind="stable")  # smallest first; stable keeps earlier blocks first
        kept_flat = np.ones(total, dtype=bool)
        kept_flat[order[:zero]] = False
        kept_blocks = kept_flat.reshape(brows, bcols)
        mask = np.repeat(np.repeat(kept_blocks, self.rows, axis=0), self.cols, axis=1)[:rows, :k]
        return pruned_to(a, mask, grid_padding(rows, k, self.rows, self.cols))

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> BlockCompressed:
        """BSR of ``a_pruned * mask``: every block holding a nonzero is stored (``mask`` None: ``a != 0``)."""
        a, keep = operand_and_mask(a_pruned, mask)
        bits = INDEX_BITS if metadata_bits is None else int(metadata_bits)
        rows, k = a.shape
        brows, bcols = self.grid(rows, k)
        if bits < max(1, math.ceil(math.log2(max(2, bcols, brows * bcols + 1)))):
            raise FunctionalError(f"{bits}-bit block indices cannot address {brows} x {bcols} blocks")
        vals = _blocks(masked(a, keep), self.rows, self.cols)
        nonzero = _blocks(keep, self.rows, self.cols).any(axis=(2, 3))  # brows x bcols
        r_idx, c_idx = np.nonzero(nonzero)
        blocks = np.ascontiguousarray(vals[r_idx, c_idx])
        row_ptr = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype(np.int32)
        return BlockCompressed(blocks, c_idx.astype(np.int32), row_ptr, rows, k, self.k_padded(k), self.rows,
                               self.cols, bits)


def _blocks(x: np.ndarray, bm: int, bk: int) -> np.ndarray:
    """``x`` zero-padded to whole blocks, as block rows x block columns x BM x BK."""
    rows, k = x.shape
    brows, bcols = -(-rows // bm), -(-k // bk)
    padded = np.pad(x, ((0, brows * bm - rows), (0, bcols * bk - k)))
    return padded.reshape(brows, bm, bcols, bk).transpose(0, 2, 1, 3)


@dataclass(frozen=True, eq=False)
class BlockCompressed(FrozenArrays):
    """A BSR-compressed A (module docstring)."""

    blocks: np.ndarray  # nnz x BM x BK
    block_cols: np.ndarray  # int32, nnz
    row_ptr: np.ndarray  # int32, block rows + 1
    rows: int
    k: int
    k_padded: int
    bm: int
    bk: int
    metadata_bits: int  # bits per index (column index, row pointer)

    @property
    def nonzero_blocks(self) -> int:
        return int(self.blocks.shape[0])

    @property
    def kept(self) -> int:
        """Stored values: nonzero blocks x BM x BK."""
        return int(self.blocks.size)

    @property
    def padding(self) -> dict[str, list[int]]:
        return grid_padding(self.rows, self.k, self.bm, self.bk)

    @property
    def metadata_bytes(self) -> int:
        """Column indices and row pointers at ``metadata_bits`` each, rounded up to a byte."""
        return packed_bytes(self.block_cols.size + self.row_ptr.size, self.metadata_bits)

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """The generic (values, in-group positions, keep, group) view: one group per row spanning the padded k,
        each row's values those of its nonzero blocks' columns (a row of a block is BK consecutive values)."""
        brows = len(self.row_ptr) - 1
        counts = np.diff(self.row_ptr)
        width = int(counts.max(initial=0)) * self.bk or 1
        values = np.zeros((brows * self.bm, width), dtype=self.blocks.dtype)
        pos = np.full((brows * self.bm, width), self.k_padded, dtype=np.int64)  # past B's end: padding
        for br in range(brows):
            for j, b in enumerate(range(self.row_ptr[br], self.row_ptr[br + 1])):
                sl = slice(j * self.bk, (j + 1) * self.bk)
                values[br * self.bm:(br + 1) * self.bm, sl] = self.blocks[b]
                pos[br * self.bm:(br + 1) * self.bm, sl] = self.block_cols[b] * self.bk + np.arange(self.bk)
        return values[:self.rows], pos[:self.rows], width, max(self.k_padded, 1) + 1

    def tiled_form(self) -> tuple[str, tuple[np.ndarray, ...], tuple[int, ...]]:
        """What the engine's BSR functional kernel runs: (``"bsr"``, (blocks, block_cols, row_ptr), (rows, BM, BK))."""
        return "bsr", (self.blocks, self.block_cols, self.row_ptr), (self.rows, self.bm, self.bk)

    def fold_union(self, tile_m: int) -> tuple[np.ndarray, np.ndarray]:
        """What a systolic array's folds of ``tile_m`` rows of A pack along k: (``fold_ptr``, ``fold_cols``), fold
        f's block columns ``fold_cols[fold_ptr[f]:fold_ptr[f + 1]]``, increasing: the union of the nonzero block
        columns of the block rows its rows touch (int64)."""
        brows = len(self.row_ptr) - 1
        ptr, cols = [0], []
        for m0 in range(0, self.rows, tile_m):
            br0, br1 = m0 // self.bm, min(brows, -(-min(self.rows, m0 + tile_m) // self.bm))
            union = np.unique(self.block_cols[self.row_ptr[br0]:self.row_ptr[br1]])
            cols.append(union)
            ptr.append(ptr[-1] + len(union))
        return np.asarray(ptr, dtype=np.int64), np.concatenate(cols).astype(np.int64) if cols else \
            np.zeros(0, dtype=np.int64)

    def folded_form(self, tile_m: int) -> tuple[str, tuple[np.ndarray, ...], tuple[int, ...]]:
        """What the engine's systolic fold kernel runs: (``"bsr_folds"``, (blocks, block index by (block row,
        block column), fold_ptr, fold_cols), (rows, BM, BK)); see :meth:`fold_union`."""
        brows = len(self.row_ptr) - 1
        index = np.full((brows, -(-self.k_padded // self.bk)), -1, dtype=np.int64)
        for br in range(brows):
            for b in range(self.row_ptr[br], self.row_ptr[br + 1]):
                index[br, self.block_cols[b]] = b
        return "bsr_folds", (self.blocks, index, *self.fold_union(tile_m)), (self.rows, self.bm, self.bk)

    def dense(self) -> np.ndarray:
        """The ``rows x k`` A rebuilt from the blocks."""
        brows = len(self.row_ptr) - 1
        out = np.zeros((brows * self.bm, self.k_padded), dtype=self.blocks.dtype)
        for br in range(brows):
            for b in range(self.row_ptr[br], self.row_ptr[br + 1]):
                c = int(self.block_cols[b])
                out[br * self.bm:(br + 1) * self.bm, c * self.bk:(c + 1) * self.bk] = self.blocks[b]
        return out[:self.rows, :self.k].copy()
