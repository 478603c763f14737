"""What the sweep plots mark on each row: whether it fits the device's memory, and whether its dense baseline does.

A sweep row whose memory footprint exceeds ``dram.capacity_bytes`` (``fits_memory`` False) is still simulated as
if the device held it all; the plots draw it distinctly, leave it off every Pareto front, and say how many such
rows a chart holds. A row that fits but whose dense baseline does not (``dense_fits_memory`` False) is marked where
a chart shows speedup vs dense. Results written before these columns (sweep format < 4) were not checked, and the
plots say so. Data only: :mod:`accelsim.report.sweep_plots` renders it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

OVER = "over memory"  # the legend / cell label of a row over the device's memory
DENSE_OVER = "dense over memory"  # ... of a row whose dense baseline is


class MarkRows(Protocol):
    """What the marks read of a sweep's table (:class:`accelsim.sweep.SweepTable` is one)."""

    @property
    def columns(self) -> Sequence[str]: ...

    @property
    def rows(self) -> Sequence[Sequence[Any]]: ...

    def get(self, row: Sequence[Any], col: str) -> Any: ...


@dataclass(frozen=True)
class MemoryFit:
    """Rows (indices into ``table.rows``) over the device's memory, and those whose dense baseline is.

    ``checked``: the table has the ``fits_memory`` column (sweep format 4 on). ``unchecked``: feasible rows whose
    ``fits_memory`` is empty (their config gives no ``dram.capacity_bytes``).
    """

    checked: bool
    over: frozenset[int]
    dense_over: frozenset[int]  # fits_memory True, dense_fits_memory False
    unchecked: frozenset[int]
    checked_rows: int = 0  # rows whose fits_memory is True or False

    def note(self, shown: Iterable[int], *, front: bool = False, speedup: bool = False) -> str:
        """The caption for a chart of rows ``shown``: how many are over memory and how they are drawn; '' when
        every row shown was checked and fits (and, for ``speedup``, so does its dense baseline)."""
        shown = set(shown)
        if not shown:
            return ""
        if not self.checked:
            return ("memory not checked: these results have no fits_memory column (a sweep written before format 4); "
                    "rows over dram.capacity_bytes are not marked")
        parts = []
        over = len(shown & self.over)
        if over:
            drawn = "hollow, left off the Pareto fronts" if front else "hatched //"
            parts.append(f"{over} of {len(shown)} rows {OVER} (footprint > dram.capacity_bytes, simulated as if the "
                         f"device held it all): {drawn}")
        dense = len(shown & self.dense_over)
        if speedup and dense:
            parts.append(f"{dense} rows fit but their dense baseline does not (speedup vs a run over "
                         "dram.capacity_bytes): hatched ..")
        unchecked = len(shown & self.unchecked)
        if unchecked:
            parts.append(f"{unchecked} rows not checked (no dram.capacity_bytes)")
        return "; ".join(parts)


def memory_fit(table: MarkRows) -> MemoryFit:
    """The rows of ``table`` over memory, by its ``fits_memory`` / ``dense_fits_memory`` columns."""
    if "fits_memory" not in table.columns:
        return MemoryFit(False, frozenset(), frozenset(), frozenset(), 0)
    dense = "dense_fits_memory" in table.columns
    over, dense_over, unchecked = set(), set(), set()
    checked = 0
    for i, r in enumerate(table.rows):
        fits = table.get(r, "fits_memory")
        if fits is None:
            if table.get(r, "feasible"):  # an infeasible row has no footprint, and no result to mark
                unchecked.add(i)
            continue
        checked += 1
        if fits is False:
            over.add(i)
        elif dense and table.get(r, "dense_fits_memory") is False:
            dense_over.add(i)
    return MemoryFit(True, frozenset(over), frozenset(dense_over), frozenset(unchecked), checked)


# ------------------------------------------------------------------------------------------- pareto

def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points (cost, value) no other point beats on both (lower cost and lower value), by cost."""
    front: list[tuple[float, float]] = []
    best = math.inf
    for c, v in sorted(points):
        if v < best:
            front.append((c, v))
            best = v
    return front


@dataclass(frozen=True)
class ParetoSeries:
    """One sparsity pattern of a Pareto chart: the (cost, latency) points that fit, those over memory, and the
    front (over the points that fit only)."""

    sparsity: str
    fits: tuple[tuple[float, float], ...]
    over: tuple[tuple[float, float], ...]
    front: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class ParetoData:
    """What a Pareto chart of one workload setting shows, and its memory caption (``note``; '' when none)."""

    series: tuple[ParetoSeries, ...]
    over_rows: int
    note: str


def pareto_data(table: MarkRows, sparsities: Sequence[str], in_setting: Callable[[Sequence[Any]], bool],
                cost: Sequence[float | None], fit: MemoryFit) -> ParetoData:
    """Per pattern, the feasible rows of the setting (``in_setting``) with a cost and a latency, split by memory
    fit; the front of each over the rows that fit (or were not checked)."""
    series = []
    shown: list[int] = []
    for sp in sparsities:
        fits: list[tuple[float, float]] = []
        over: list[tuple[float, float]] = []
        for i, (c, r) in enumerate(zip(cost, table.rows, strict=True)):
            if (in_setting(r) and table.get(r, "sparsity") == sp and table.get(r, "feasible") and c is not None
                    and table.get(r, "latency_us")):
                (over if i in fit.over else fits).append((c, table.get(r, "latency_us")))
                shown.append(i)
        if fits or over:
            series.append(ParetoSeries(sp, tuple(fits), tuple(over), tuple(pareto_front(fits))))
    return ParetoData(tuple(series), len(set(shown) & fit.over), fit.note(shown, front=True))
