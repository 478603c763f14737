"""What a comparison found: the metrics that moved (:class:`Row`), what is on one side only, the counts.

Frozen values; :class:`Comparison` is what :func:`accelsim.regress.compare` returns. Renderings (text,
Markdown) live in :mod:`accelsim.report.regression`; ``to_dict`` / ``to_json`` are the machine-readable form
(``regress.json``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from accelsim.regress.tolerances import Tolerances

REPORT_FORMAT = "accelsim-regress/2"  # 2: a change from 0 is rel_change null, from_zero true (1: "inf")

# Run-level sections that echo the inputs: drift there is the cause of the rest.
INPUT_SECTIONS = ("hardware", "workload", "sparsity", "policy")

# The model totals a drift report leads with.
HEADLINE_TOTALS = ("totals.cycles.total", "totals.latency_us")

# Layer label used for run-level rows (totals, hardware, workload, ...).
RUN_LEVEL = "(run)"

DRIFT = "drift"        # a number beyond tolerance
CHANGED = "changed"    # a string / bool / null value changed (drift regardless of tolerance)
ADDED = "added"        # the metric exists only in the candidate (drift)
REMOVED = "removed"    # the metric exists only in the baseline (drift)
WITHIN = "within"      # a number moved, within tolerance
DRIFT_STATUSES = (DRIFT, CHANGED, ADDED, REMOVED)


@dataclass(frozen=True)
class Row:
    """One metric of one layer (or of the run) that moved.

    ``baseline`` is None when the metric is only in the candidate (status ``added``), ``candidate`` None
    when it is only in the baseline (``removed``): the status says which side lacks it.
    """

    file: str
    layer: str
    metric: str
    baseline: Any
    candidate: Any
    status: str
    abs_change: float | None = None
    rel_change: float | None = None   # |change| / |baseline|; None for non-numeric; inf from zero (from_zero)
    rtol: float | None = None
    atol: float | None = None
    share: float | None = None  # |change| / the model's total of the same kind (cycles, bytes, MACs, J)
    weight: float | None = None  # ranking weight: share, else relative change x the layer's share of time

    @property
    def is_drift(self) -> bool:
        """Beyond tolerance, changed, or on one side only."""
        return self.status in DRIFT_STATUSES

    @property
    def severity(self) -> float:
        """The ranking weight (inf from zero); -1 for a non-numeric change or a metric on one side only."""
        if self.rel_change is None:
            return -1.0
        return self.weight if self.weight is not None else self.rel_change

    @property
    def rank(self) -> tuple[int, int, float]:
        """Worst first: model totals beyond tolerance, then other numbers beyond tolerance, both by
        weight (their change as a share of the model's total of that kind, so a stall counter going
        from 132 to 5,086 cycles in one layer ranks by those 4,954 cycles against the model's
        total, not by its +3,753 %), then non-numeric changes and one-sided metrics, then numbers
        within tolerance. The model's total cycles and latency lead the totals."""
        if not self.is_drift:
            group = 3
        elif self.rel_change is None:
            group = 2
        else:
            group = 0 if self.layer == RUN_LEVEL and self.metric.startswith("totals.") else 1
        return group, 0 if group == 0 and self.metric in HEADLINE_TOTALS else 1, -self.severity

    @property
    def from_zero(self) -> bool:
        """A number that moved from a baseline of 0: no relative change (``rel_change`` is infinite)."""
        return self.rel_change is not None and math.isinf(self.rel_change) and self.baseline == 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON numbers only: a non-finite one (a change from 0: ``rel_change``, its ``weight``; a
        share of a zero model total) is null; ``from_zero`` says the baseline was 0."""
        d = asdict(self)
        for key in ("rel_change", "abs_change", "share", "weight", "baseline", "candidate"):
            d[key] = json_number(d[key]) if isinstance(d[key], float) else d[key]
        d["from_zero"] = self.from_zero
        return d


@dataclass(frozen=True)
class OneSided:
    """A layer or a result file present on one side only (drift)."""

    kind: str   # "layer" or "file"
    file: str
    layer: str | None
    side: str   # "baseline" or "candidate": where it is present


@dataclass(frozen=True)
class Counts:
    """How many of each were compared, and how each metric came out."""

    files: int = 0
    layers: int = 0
    metrics: int = 0
    unchanged: int = 0
    within: int = 0
    drift: int = 0
    ignored: int = 0


@dataclass(frozen=True)
class MetricGroup:
    """The drift rows of one metric name: how many, the worst (heaviest) change, and where."""

    metric: str
    rows: int
    worst_rel_change: float | None
    worst_file: str
    worst_layer: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data: a change from 0 (infinite) as ``worst_rel_change`` null and ``worst_from_zero`` true."""
        rel = self.worst_rel_change
        return {**asdict(self), "worst_rel_change": json_number(rel),
                "worst_from_zero": rel is not None and math.isinf(rel)}


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`~accelsim.regress.compare`. ``exit_code`` is 0 (within tolerance) or 1 (drift).

    ``rows`` come worst first (:attr:`Row.rank`); ``single_file``: two result files were compared (not
    two directories).
    """

    baseline: str
    candidate: str
    rows: tuple[Row, ...]
    one_sided: tuple[OneSided, ...]
    counts: Counts
    tolerances: Tolerances
    single_file: bool = True

    @property
    def drift_rows(self) -> list[Row]:
        """The rows that are drift (not the changes within tolerance)."""
        return [r for r in self.rows if r.is_drift]

    @property
    def has_drift(self) -> bool:
        """Any row beyond tolerance, or anything on one side only."""
        return bool(self.one_sided) or any(r.is_drift for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 within tolerance, 1 drift."""
        return 1 if self.has_drift else 0

    @property
    def status(self) -> str:
        """``ok`` or ``drift``."""
        return "drift" if self.has_drift else "ok"

    def by_metric(self) -> list[MetricGroup]:
        """Drift rows grouped by metric name: how many layers, the worst (heaviest) change, where.

        Groups come in the table's order: model totals first, then by their heaviest row's weight.
        """
        groups: dict[str, list[Row]] = {}
        for r in self.rows:
            if r.is_drift:
                groups.setdefault(r.metric, []).append(r)
        worst = {metric: min(rows, key=lambda r: r.rank) for metric, rows in groups.items()}  # first of equals
        order = sorted(groups, key=lambda m: (worst[m].rank, -len(groups[m]), m))
        return [MetricGroup(m, len(groups[m]), worst[m].rel_change, worst[m].file, worst[m].layer) for m in order]

    def input_rows(self) -> list[Row]:
        """Drift in the inputs echoed by the results (hardware, workload, sparsity, policy): the cause."""
        return [r for r in self.rows if r.is_drift and r.layer == RUN_LEVEL
                and r.metric.split(".", 1)[0].split("[", 1)[0] in INPUT_SECTIONS]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what ``regress.json`` holds)."""
        return {"format": REPORT_FORMAT, "status": self.status, "exit_code": self.exit_code,
                "baseline": self.baseline, "candidate": self.candidate, "counts": asdict(self.counts),
                "tolerances": self.tolerances.to_dict(), "by_metric": [g.to_dict() for g in self.by_metric()],
                "rows": [r.to_dict() for r in self.rows], "one_sided": [asdict(o) for o in self.one_sided]}

    def to_json(self) -> str:
        """``to_dict`` as indented JSON with a trailing newline."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def json_number(v: float | None) -> float | None:
    """A number for JSON: a non-finite one (which JSON cannot hold) as None (null)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v
