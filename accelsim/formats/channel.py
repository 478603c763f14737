"""Channel (filter) pruning: whole output rows of the weight A are removed, the rest stays dense.

Spelling ``"channel:P%"`` (``"channel:50%"``): P is the share of A's m rows (output channels /
``out_features``) pruned, 0 <= P < 100 with up to four decimals; ``channel:0%`` is dense.

**Rounding rule.** Of ``m`` rows, ``floor(m x P / 100)`` are pruned (never more than asked), and at
least one row is kept: ``rows_kept(m) = max(1, m - floor(m x P / 100))``. ``channel:50%`` keeps 384 of
768 rows, and 19 of 37.

**How it runs.** No metadata and no sparse datapath: the layer is a smaller dense GEMM
(``rows_kept x n x k``) on the dense datapath of any part, systolic or tensor-core (no entry under
``core.sparse.formats`` is needed). Weights shrink to the kept rows, C has ``rows_kept`` rows written,
and ``speedup_vs_dense`` compares with the unpruned layer.

**Assumption (named ``downstream_input: not_shrunk``, echoed in each layer's ``tiling``).** The next
layer's input is not shrunk: a workload is a list of ops without the graph that says which layer
consumes these rows (residual adds and norms in between keep the width), so its ``k`` stays as
written. Pruning the producer's rows and the consumer's columns together is written as two layers
whose shapes say so (e.g. the FFN intermediate width scaled down in the workload).

Compressed form (functional path): ``values`` (``rows_kept x k``, the kept rows of A in increasing
row order) and ``row_index`` (their rows in A, i.e. the rows of C they produce). ``row_index`` is the
pruned model's bookkeeping (the next layer is sliced to match), not metadata stored with the
weights: ``metadata_bytes`` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from accelsim.errors import FunctionalError
from accelsim.formats.arrays import Pruned, UnpaddedRows, as_2d, masked, operand_and_mask, pruned_to
from accelsim.formats.percent import PercentLevelFormat, zeros_of

DOWNSTREAM_INPUT = "not_shrunk"  # the named assumption echoed in results (module docstring)


@dataclass(frozen=True, order=True)
class ChannelPruning(PercentLevelFormat):
    """``level`` percent of A's rows (output channels) pruned whole; the kept rows run as a dense GEMM."""

    level: Fraction

    key = "channel"
    title = "channel"
    example = "channel:50%"
    native = False  # a smaller dense GEMM, not a pattern of the sparse datapath
    needs_support = False  # every part runs dense GEMMs

    def rows_kept(self, m: int) -> int:
        """Rows of an ``m``-row A kept: m - floor(m x P / 100), at least 1 (module docstring)."""
        return max(1, m - zeros_of(m, self.level))

    def kept_values(self, rows: int, k: int) -> int:
        """Values of the kept rows."""
        return self.rows_kept(rows) * k

    def metadata_bytes(self, rows: int, k: int, bits: int | None = None) -> float:
        return 0.0

    def kernel_fields(self, m: int, k: int, support: Any | None) -> dict[str, Any]:
        """A dense GEMM of the kept rows: ``rows_kept`` (the engine computes and writes only those)."""
        return {"rows_kept": self.rows_kept(m), "compute_on": "dense"}

    @property
    def pruning(self) -> str:
        return f"{self}: the rows (output channels) of smallest L2 norm zeroed, whole rows (not along k)"

    # -- functional path ----------------------------------------------------------------------
    def prune(self, a: np.ndarray) -> Pruned:
        """Keep the ``rows_kept`` rows of largest L2 norm (ties to the lower row); the others become zero."""
        a = as_2d(a, "A")
        rows, k = a.shape
        norms = np.sqrt((a.astype(np.float64) ** 2).sum(axis=1))
        keep = np.sort(np.argsort(-norms, kind="stable")[:self.rows_kept(rows)])
        mask = np.zeros(a.shape, dtype=bool)
        mask[keep, :] = True
        return pruned_to(a, mask)

    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> ChannelCompressed:
        """The kept rows of ``a_pruned * mask`` (``mask`` None: rows with a nonzero). A mask must keep or drop
        whole rows, at most ``rows_kept``; fewer kept rows are filled with the lowest dropped ones (zeros)."""
        a, keep = operand_and_mask(a_pruned, mask)
        rows, k = a.shape
        kept_rows = keep.any(axis=1)
        if mask is not None:
            partial = np.flatnonzero(kept_rows & ~keep.all(axis=1))
            if len(partial):
                raise FunctionalError(f"row {int(partial[0])} of the mask is partly pruned; {self} drops whole rows")
        limit = self.rows_kept(rows)
        if int(kept_rows.sum()) > limit:
            raise FunctionalError(f"the mask keeps {int(kept_rows.sum())} of {rows} rows; {self} keeps at most "
                                  f"{limit}")
        fill = np.flatnonzero(~kept_rows)[:limit - int(kept_rows.sum())]
        index = np.sort(np.concatenate([np.flatnonzero(kept_rows), fill])).astype(np.int64)
        values = masked(a, keep)[index]
        return ChannelCompressed(np.ascontiguousarray(values), index, rows, k)


@dataclass(frozen=True, eq=False)
class ChannelCompressed(UnpaddedRows):
    """A channel-pruned A: the kept rows (dense) and the row of C each produces (module docstring)."""

    values: np.ndarray  # rows_kept x k, dtype of A
    row_index: np.ndarray  # int64, rows_kept: row of A (and of C) of each kept row, increasing
    m: int  # rows of the unpruned A (and of C)
    k: int
    metadata_bits: int = 0  # no metadata: metadata_bytes is 0 (rows of C: the unpruned m; pruned rows give zeros)

    @property
    def rows_kept(self) -> int:
        return int(self.values.shape[0])

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """The kept rows as a dense operand (keep = group = 1: value p multiplies B row p); their rows of C
        are ``row_index``."""
        return self.values, np.zeros(self.values.shape, dtype=np.uint8), 1, 1

    def dense(self) -> np.ndarray:
        out = np.zeros((self.m, self.k), dtype=self.values.dtype)
        out[self.row_index] = self.values
        return out
