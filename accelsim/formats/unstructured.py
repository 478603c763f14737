"""Unstructured sparsity: any P% of A's values are zero, wherever magnitude pruning puts them.

Spelling ``"unstructured:P%"`` (``"unstructured:90%"``): P is the share of zeros, 0 <= P < 100 with up
to four decimals; ``unstructured:0%`` is dense. Of A's ``m x k`` values ``floor(m k P / 100)`` are
zero (pruned by magnitude over the whole weight, ties to the lower flat position); the others,
``nonzeros(m, k)``, are stored.

**How it runs** is the hardware's choice (``core.sparse.formats.unstructured``; a part without the
entry falls back to dense, ``format_unsupported``):

* ``load_sparse_compute_dense`` (Flash-LLM, Xia et al., VLDB 2024, arXiv 2309.10285): A moves from
  DRAM / L2 compressed (values + index), a **decompress** stage places each tile's nonzeros into a
  dense tile in shared memory (``decompress_values_per_cycle`` per core), and the dense datapath
  multiplies it: no MAC is skipped, the gain is in A's bytes.
* ``vector_spmm`` (Sputnik-style CSR SpMM on the CUDA cores / vector unit): only the nonzeros are
  multiplied, at ``spmm_macs_per_cycle`` per core; A moves compressed. With ``b_access: row_gather`` B moves
  as Sputnik moves it: one row segment per nonzero, gathered through L1 (``accelsim/engine/rowgather.py``).

**Index encodings** (``index``, a hardware/kernel choice), their bytes for an ``m x k`` weight:

* ``bitmap``: one bit per dense position, each row's bits padded to a whole byte:
  ``m x ceil(k / 8)`` bytes (the padding is reported by the functional check).
* ``csr``: ``index_bits`` per nonzero (its column; Flash-LLM's Tiled-CSL stores a 16-bit location
  next to each fp16 value) plus ``m + 1`` row pointers of ``pointer_bits``:
  ``ceil(nnz x index_bits / 8) + (m + 1) x pointer_bits / 8`` bytes.

The engine sees both as ``a_index_bits``: index bits per dense position of A (bytes / (m k) x 8).

Compressed form (functional path): ``values`` (the nonzeros, row-major) and ``row_ptr`` (int64,
``m + 1``: row r's values are ``values[row_ptr[r]:row_ptr[r + 1]]``); CSR adds ``col_idx`` (int32, the
column of each value), bitmap adds ``bitmap`` (uint8, ``m x ceil(k / 8)``, bit ``c % 8`` of byte
``c // 8`` set where column c holds a value, little-endian). For a bitmap kernel the row offsets are
counted from the bitmap as it is read (a popcount), so they are not stored and not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from accelsim.errors import FunctionalError
from accelsim.formats.arrays import Pruned, UnpaddedRows, as_2d, masked, operand_and_mask, pruned_to
from accelsim.formats.percent import PercentLevelFormat, zeros_of

INDEX_ENCODINGS = ("bitmap", "csr")
RUNS_ON = ("load_sparse_compute_dense", "vector_spmm")


@dataclass(frozen=True, order=True)
class Unstructured(PercentLevelFormat):
    """``level`` percent of A's values are zero, anywhere; stored as values + a bitmap or CSR index."""

    level: Fraction

    key = "unstructured"
    title = "unstructured"
    example = "unstructured:90%"
    native = False  # no sparse datapath runs arbitrary masks natively: the hardware says how (module doc)
    default_support = {"runs_on": "load_sparse_compute_dense"}  # what-ifs (deployment report): bitmap, unlimited

    def nonzeros(self, rows: int, k: int) -> int:
        """Values stored of a ``rows x k`` A: rows k - floor(rows k P / 100)."""
        return rows * k - zeros_of(rows * k, self.level)

    def kept_values(self, rows: int, k: int) -> int:
        return self.nonzeros(rows, k)

    def index_bytes(self, rows: int, k: int, encoding: str, index_bits: int = 16, pointer_bits: int = 32) -> float:
        """Bytes of A's index in ``encoding`` (module docstring)."""
        if encoding == "bitmap":
            return float(rows * -(-k // 8))
        if encoding == "csr":
            return float(-(-self.nonzeros(rows, k) * index_bits // 8) + (rows + 1) * pointer_bits / 8)
        raise ValueError(f"unknown index encoding {encoding!r}; known: {', '.join(INDEX_ENCODINGS)}")

    def metadata_bytes(self, rows: int, k: int, bits: int | None = None) -> float:
        """Bitmap bytes (the encoding-free default; the hardware's choice is in ``index_bytes``)."""
        return self.index_bytes(rows, k, "bitmap")

    def kernel_fields(self, m: int, k: int, support: Any | None) -> dict[str, Any]:
        """Engine inputs on a part whose ``core.sparse.formats.unstructured`` entry is ``support``: A's share
        of stored values and index bits per dense position; the decompress stage (load-sparse-compute-dense)
        or the vector unit's SpMM rate (vector_spmm)."""
        if support is None:
            raise ValueError(f"{self} needs the hardware's core.sparse.formats.unstructured entry")
        positions = m * k
        index = self.index_bytes(m, k, support.index, support.index_bits, support.pointer_bits)
        fields: dict[str, Any] = {"a_density": self.nonzeros(m, k) / positions,
                                  "a_index_bits": index * 8 / positions, "a_index": support.index}
        if support.runs_on == "vector_spmm":
            fields.update(compute_on="vector", compute_rate=float(support.spmm_macs_per_cycle))
            if support.b_access == "row_gather":
                rate = support.gather_rows_per_cycle
                fields.update(gather_rows=support.cta_rows, gather_cols=support.cta_n,
                              gather_rate=math.inf if rate == "unlimited" else float(rate))
            return fields
        rate = support.decompress_values_per_cycle
        return {**fields, "compute_on": "dense", "a_stage": "decompress",
                "a_stage_rate": math.inf if rate == "unlimited" else float(rate)}

    def compress_as(self, a_pruned: np.ndarray, mask: np.ndarray | None, metadata_bits: int | None,
                    support: Any | None) -> UnstructuredCompressed:
        """:meth:`compress` in the index encoding of the hardware entry ``support`` (bitmap without one)."""
        if support is None:
            return self.compress(a_pruned, mask)
        return self.compress(a_pruned, mask, encoding=support.index, index_bits=support.index_bits,
                             pointer_bits=support.pointer_bits)

    @property
    def pruning(self) -> str:
        return f"{self}: the largest |values| over the whole of A kept (no structure)"

    # -- functional path ----------------------------------------------------------------------
    def prune(self, a: np.ndarray) -> Pruned:
        """Keep the ``nonzeros`` values of largest magnitude over the whole of A (ties to the lower position)."""
        a = as_2d(a, "A")
        rows, k = a.shape
        order = np.argsort(-np.abs(a.astype(np.float64)).ravel(), kind="stable")[:self.nonzeros(rows, k)]
        mask = np.zeros(rows * k, dtype=bool)
        mask[order] = True
        return pruned_to(a, mask.reshape(rows, k))

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None, metadata_bits: int | None = None,
                 encoding: str = "bitmap", index_bits: int = 16, pointer_bits: int = 32) -> UnstructuredCompressed:
        """Values + ``encoding`` index of ``a_pruned * mask`` (``mask`` None: the nonzeros). A mask may keep at
        most ``nonzeros`` positions (fewer: the missing ones are fill, value 0, at the lowest free positions)."""
        a, keep = operand_and_mask(a_pruned, mask)
        if encoding not in INDEX_ENCODINGS:
            raise FunctionalError(f"index encoding {encoding!r} is not one of {', '.join(INDEX_ENCODINGS)}")
        rows, k = a.shape
        limit = self.nonzeros(rows, k)
        count = int(keep.sum())
        if count > limit:
            raise FunctionalError(f"the mask keeps {count} of {rows * k} values; {self} keeps at most {limit}")
        if encoding == "csr" and k > 2 ** index_bits:
            raise FunctionalError(f"{index_bits} index bits cannot address column {k - 1}")
        flat = keep.ravel().copy()
        flat[np.flatnonzero(~flat)[:limit - count]] = True  # fill: value 0 at the lowest free positions
        keep = flat.reshape(rows, k)
        values = np.ascontiguousarray(masked(a, keep)[keep])
        row_ptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
        cols = np.ascontiguousarray(np.nonzero(keep)[1].astype(np.int32))
        bitmap = np.packbits(keep, axis=1, bitorder="little")
        return UnstructuredCompressed(values, row_ptr, cols if encoding == "csr" else None,
                                      bitmap if encoding == "bitmap" else None, rows, k, encoding, index_bits,
                                      pointer_bits)


@dataclass(frozen=True, eq=False)
class UnstructuredCompressed(UnpaddedRows):
    """An unstructured A: nonzeros row-major, row offsets, and a CSR column index or a bitmap (module doc)."""

    values: np.ndarray  # nnz, dtype of A
    row_ptr: np.ndarray  # int64, rows + 1
    col_idx: np.ndarray | None  # int32, nnz (csr)
    bitmap: np.ndarray | None  # uint8, rows x ceil(k / 8) (bitmap)
    m: int
    k: int
    encoding: str
    index_bits: int
    pointer_bits: int
    metadata_bits: int = 0  # no fixed bits per value: see metadata_bytes

    @property
    def layout(self) -> str:
        """How the functional path walks it: "csr" (nonzeros row by row) or "bitmap" (decompress tiles)."""
        return self.encoding

    @property
    def metadata_bytes(self) -> int:
        """Index bytes: the bitmap (rows x ceil(k/8)) or CSR columns + row pointers."""
        if self.encoding == "bitmap":
            return int(self.m * -(-self.k // 8))
        return int(-(-self.kept * self.index_bits // 8) + (self.m + 1) * self.pointer_bits // 8)

    @property
    def padding(self) -> dict[str, list[int]]:
        """A bitmap row is padded to whole bytes: ``{"k": [k, ceil(k/8)*8]}`` when k is not a multiple of 8."""
        if self.encoding == "bitmap" and self.k % 8:
            return {"k": [self.k, -(-self.k // 8) * 8]}
        return {}

    def columns(self) -> np.ndarray:
        """The column of each value (from the CSR index, or read off the bitmap)."""
        if self.col_idx is not None:
            return self.col_idx
        assert self.bitmap is not None  # one of the two encodings
        bits = np.unpackbits(self.bitmap, axis=1, bitorder="little")[:, :self.k].astype(bool)
        return np.nonzero(bits)[1].astype(np.int32)

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """An ELL view: each row's values padded to the longest row (value 0 at column 0), with their
        columns; keep = that width and group = k, so value p multiplies B row ``indices[r, p]``."""
        counts = np.diff(self.row_ptr)
        width = max(1, int(counts.max()) if len(counts) else 1)
        vals = np.zeros((self.m, width), dtype=self.values.dtype)
        idx = np.zeros((self.m, width), dtype=np.int64)
        slot = np.arange(self.kept) - np.repeat(self.row_ptr[:-1], counts)
        rows = np.repeat(np.arange(self.m), counts)
        vals[rows, slot] = self.values
        idx[rows, slot] = self.columns()
        return vals, idx, width, self.k

    def dense(self) -> np.ndarray:
        out = np.zeros((self.m, self.k), dtype=self.values.dtype)
        counts = np.diff(self.row_ptr)
        out[np.repeat(np.arange(self.m), counts), self.columns()] = self.values
        return out
