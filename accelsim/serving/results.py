"""Typed, frozen results of the serving analyses: capacity at SLA, latency vs load, side-by-side runs,
quality at equal latency budget, and everything ``accelsim serve`` reports.

Each has ``to_dict()`` (``to_rows()`` for a latency-vs-load curve): the plain JSON-able data that
``accelsim serve --format json`` and ``serve.json`` carry, key for key. A single run's summary (what
:meth:`~accelsim.serving.model.ServingModel.run` returns) is a frozen
:class:`~accelsim.serving.run_record.ServingRun`; results here hold those runs by label.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from accelsim.energy import RunClock
from accelsim.serving.run_record import ServingRun

__all__ = ["CapacityEval", "CapacityResult", "LoadPoint", "LoadCurve", "Comparison", "CompareResult",
           "VariantOutcome", "BudgetVerdict", "QualityResult", "CapacitySummary", "ServeResult"]


@dataclass(frozen=True)
class CapacityEval:
    """One simulated rate of the capacity search: its ``quantile`` latency and whether it holds the budget
    (``overloaded``: the offered load was above capacity, so it does not hold whatever the quantile)."""

    rate_rps: float
    quantile: str
    value_ms: float
    holds: bool
    utilisation: float
    overloaded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``{rate_rps, <quantile>_ms, holds, utilisation, overloaded}``."""
        return {"rate_rps": self.rate_rps, f"{self.quantile}_ms": self.value_ms, "holds": self.holds,
                "utilisation": self.utilisation, "overloaded": self.overloaded}


@dataclass(frozen=True)
class CapacityResult:
    """Capacity at SLA: the highest simulated rate whose ``quantile`` ``metric`` holds ``budget_ms``.

    ``status``: ok (bracketed to ``rtol``), infeasible (no rate holds), unbounded (every rate tried
    holds: ``max_rate_rps`` is only a lower bound) or max_evals (the evaluation budget ran out first).
    ``limited_by``: what the lowest failing rate missed: ``"budget"`` (its quantile is over the budget) or
    ``"capacity"`` (its quantile held, but its offered load is above the deployment's capacity: the budget does
    not bind below the throughput limit); None without a failing rate.
    """

    name: str
    sparsity: str | None
    metric: str
    quantile: str
    budget_ms: float
    max_rate_rps: float
    bracket_rps: tuple[float | None, float | None]
    value_at_max_ms: float | None
    rtol: float
    requests_per_eval: int
    seed: int
    status: str
    evaluations: tuple[CapacityEval, ...]
    limited_by: str | None = None

    @property
    def lower_bound_only(self) -> bool:
        """Whether ``max_rate_rps`` is only a lower bound (no failing rate was found)."""
        return self.status == "unbounded"

    def to_dict(self) -> dict[str, Any]:
        """The search as plain data (``<quantile>_ms_at_max`` names the value at ``max_rate_rps``)."""
        return {"name": self.name, "sparsity": self.sparsity, "metric": self.metric, "quantile": self.quantile,
                "budget_ms": self.budget_ms, "max_rate_rps": self.max_rate_rps, "bracket_rps": list(self.bracket_rps),
                f"{self.quantile}_ms_at_max": self.value_at_max_ms, "rtol": self.rtol,
                "requests_per_eval": self.requests_per_eval, "seed": self.seed, "status": self.status,
                "lower_bound_only": self.lower_bound_only, "limited_by": self.limited_by,
                "evaluations": [e.to_dict() for e in self.evaluations]}


@dataclass(frozen=True)
class LoadPoint:
    """Latency percentiles at one arrival rate; ``percentiles_ms[metric][q]`` for latency (and ttft, tpot
    for LLMs) and q in p50, p95, p99."""

    rate_rps: float
    throughput_rps: float
    utilisation: float
    percentiles_ms: Mapping[str, Mapping[str, float]]

    def latency_ms(self, metric: str, quantile: str) -> float | None:
        """The ``quantile`` of ``metric`` in ms, None if this point has no such metric."""
        return (self.percentiles_ms.get(metric) or {}).get(quantile)

    def to_dict(self) -> dict[str, Any]:
        """``{rate_rps, throughput_rps, utilisation, <metric>_<q>_ms...}``."""
        row: dict[str, Any] = {"rate_rps": self.rate_rps, "throughput_rps": self.throughput_rps,
                               "utilisation": self.utilisation}
        for metric, qs in self.percentiles_ms.items():
            row.update({f"{metric}_{q}_ms": v for q, v in qs.items()})
        return row


@dataclass(frozen=True)
class LoadCurve:
    """A latency-vs-load curve: one point per arrival rate (the same seeded path, scaled in time), each point
    from ``requests_per_point`` requests (None where not recorded)."""

    points: tuple[LoadPoint, ...]
    requests_per_point: int | None = None

    def to_rows(self) -> list[dict[str, Any]]:
        """One plain row per point."""
        return [p.to_dict() for p in self.points]


@dataclass(frozen=True)
class Comparison:
    """The first two runs of a comparison against each other: ``ratios`` maps ``<metric>_<q>_ratio``
    (baseline / other: above 1, the other is faster) to its value."""

    baseline: str
    other: str
    ratios: Mapping[str, float | None]
    throughput_ratio: float | None
    utilisation: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """``{baseline, other, reading, <metric>_<q>_ratio..., throughput_ratio, utilisation}``."""
        return {"baseline": self.baseline, "other": self.other,
                "reading": f"above 1 means {self.other} is better: latency ratios are {self.baseline} / "
                           f"{self.other}, throughput_ratio is {self.other} / {self.baseline}",
                **self.ratios, "throughput_ratio": self.throughput_ratio, "utilisation": list(self.utilisation)}


@dataclass(frozen=True)
class CompareResult:
    """Several deployments run on the same seeded arrivals: their runs by label, side by side."""

    results: Mapping[str, ServingRun]
    comparison: Comparison | None

    @property
    def labels(self) -> list[str]:
        """The run labels, in order (the first is the baseline)."""
        return list(self.results)

    def to_dict(self) -> dict[str, Any]:
        """``{results: {label: run record}, comparison}`` (comparison only with two runs or more)."""
        out: dict[str, Any] = {"results": {label: run.to_dict() for label, run in self.results.items()}}
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_dict()
        return out


@dataclass(frozen=True)
class VariantOutcome:
    """One variant served at the study's rate: its quality figure with its evidence (``quality_kind``
    published / derived from the registry, illustrative / user when typed, missing when none), its
    ``quantile`` of ``latency_metric`` (None when it does not fit the device) and, at one budget, whether
    that holds (``holds`` None in a multi-budget decision: each verdict lists what holds)."""

    name: str
    workload: str
    sparsity: str | None
    set: Mapping[str, int | float]
    quality: float | None
    quality_kind: str
    quality_entry: str | None
    quality_source: str | None
    quantile: str
    value_ms: float | None
    p50_ms: float | None
    utilisation: float | None
    holds: bool | None = None
    latency_metric: str = "latency"
    decode_workload: str | None = None
    fits: bool = True
    overloaded: bool = False
    note: str | None = None
    quality_note: str | None = None  # how a figure the variant does not name was looked up, or why there is none

    @property
    def counted(self) -> bool:
        """Whether a verdict may count this variant's quality: a registry figure (published or derived)."""
        return self.quality_kind in ("published", "derived") and self.quality is not None

    def meets(self, budget_ms: float) -> bool:
        """Whether the variant holds ``budget_ms``: it fits, is not overloaded, and its quantile is within."""
        return self.fits and not self.overloaded and self.value_ms is not None and self.value_ms <= budget_ms

    def to_dict(self) -> dict[str, Any]:
        """The variant's row (``<quantile>_ms`` names its latency; ``holds`` only at one budget)."""
        out: dict[str, Any] = {
            "name": self.name, "workload": self.workload, "decode_workload": self.decode_workload,
            "sparsity": self.sparsity, "set": dict(self.set), "quality": self.quality,
            "quality_kind": self.quality_kind, "quality_entry": self.quality_entry,
            "quality_source": self.quality_source, "quality_note": self.quality_note, "counted": self.counted,
            "latency_metric": self.latency_metric,
            f"{self.quantile}_ms": self.value_ms, "p50_ms": self.p50_ms, "utilisation": self.utilisation,
            "fits": self.fits, "overloaded": self.overloaded, "note": self.note}
        if self.holds is not None:
            out["holds"] = self.holds
        return out


@dataclass(frozen=True)
class BudgetVerdict:
    """At one latency budget: the best counted variant that holds it, the best counted dense one, and by how
    much the first beats the second (``quality_delta``, positive = better whichever way the metric runs).
    Variants whose quality is typed or missing are shown but never counted (``excluded``)."""

    budget_ms: float
    holding: tuple[str, ...]
    best: str | None
    best_quality: float | None
    best_entry: str | None
    dense_baseline: str | None
    dense_baseline_quality: float | None
    dense_baseline_entry: str | None
    quality_delta: float | None
    excluded: tuple[str, ...]
    uncounted_winner: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data."""
        return {"budget_ms": self.budget_ms, "holding": list(self.holding), "best": self.best,
                "best_quality": self.best_quality, "best_entry": self.best_entry,
                "dense_baseline": self.dense_baseline, "dense_baseline_quality": self.dense_baseline_quality,
                "dense_baseline_entry": self.dense_baseline_entry, "quality_delta": self.quality_delta,
                "excluded": list(self.excluded), "uncounted_winner": self.uncounted_winner, "message": self.message}


@dataclass(frozen=True)
class QualityResult:
    """Quality at equal latency budget: the best counted variant that holds the budget, and its quality
    delta against the best counted dense variant that holds it (None where either is missing).
    ``quality_kinds`` counts the variants' figures by kind (published, derived, illustrative, user, missing)."""

    metric: str
    note: str | None
    budget_ms: float
    quantile: str
    rate_rps: float
    seed: int
    requests: int | None
    duration_s: float | None
    variants: tuple[VariantOutcome, ...]
    best: str | None
    best_quality: float | None
    dense_baseline: str | None
    dense_baseline_quality: float | None
    quality_delta: float | None
    higher_is_better: bool = True
    latency_metric: str = "latency"
    quality_kinds: Mapping[str, int] | None = None
    verdict: BudgetVerdict | None = None

    def to_dict(self) -> dict[str, Any]:
        """The study as plain data, one row per variant."""
        return {"metric": self.metric, "higher_is_better": self.higher_is_better, "note": self.note,
                "budget_ms": self.budget_ms, "quantile": self.quantile, "latency_metric": self.latency_metric,
                "rate_rps": self.rate_rps, "seed": self.seed, "requests": self.requests,
                "duration_s": self.duration_s, "quality_kinds": dict(self.quality_kinds or {}),
                "variants": [v.to_dict() for v in self.variants], "best": self.best,
                "best_quality": self.best_quality, "dense_baseline": self.dense_baseline,
                "dense_baseline_quality": self.dense_baseline_quality, "quality_delta": self.quality_delta,
                "excluded": list(self.verdict.excluded) if self.verdict else [],
                "verdict": self.verdict.message if self.verdict else None}


@dataclass(frozen=True)
class CapacitySummary:
    """Capacity at SLA per sparsity, and sparse over dense when there are two (None where either search is
    unbounded: a ratio of lower bounds means nothing, ``ratio_note`` says so)."""

    budget_ms: float
    metric: str
    results: Mapping[str, CapacityResult]
    sparse_over_dense: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{budget_ms, metric, results}`` (+ ``sparse_over_dense`` with two results)."""
        out: dict[str, Any] = {"budget_ms": self.budget_ms, "metric": self.metric,
                               "results": {lab: c.to_dict() for lab, c in self.results.items()}}
        if len(self.results) == 2:
            out["sparse_over_dense"] = self.sparse_over_dense
            if self.ratio_note is not None:
                out["ratio_note"] = self.ratio_note
        return out

    @property
    def ratio_note(self) -> str | None:
        """Why there is no sparse/dense ratio, where a search found no failing rate (else None)."""
        loose = [lab for lab, c in self.results.items() if c.lower_bound_only]
        if not loose:
            return None
        return (f"no sparse/dense ratio: the search for {', '.join(loose)} found no rate that misses the budget, so "
                "its capacity is only a lower bound")


@dataclass(frozen=True)
class ServeResult:
    """Everything ``accelsim serve`` reports: dense and sparse side by side, overload warnings, and when
    asked for, capacity at SLA, quality at equal budget and latency-vs-load curves. ``clock``: the clocks of
    the runs behind each label's service times, where the power cap lowered a kernel's clock (else None)."""

    hardware: str
    workload: str
    decode_workload: str | None
    mode: str
    set: Mapping[str, Any]
    rate_rps: float | None
    duration_s: float
    seed: int
    sparsities: tuple[str, ...]
    runtime_config: Mapping[str, Any]
    variability_enabled: bool
    notes: tuple[str, ...]
    comparison: CompareResult
    warnings: tuple[str, ...]
    capacity: CapacitySummary | None = None
    quality: QualityResult | None = None
    latency_vs_load: Mapping[str, LoadCurve] | None = None
    clock: Mapping[str, RunClock] | None = None  # by label, where the power cap lowered a kernel's clock
    # by label, each deployment that was not served because its weights leave no room for a KV cache on one
    # device (DoesNotFitError.to_dict: weights, device capacity, memory_utilization, message); ``sparsities``
    # still lists it, ``results`` does not
    does_not_fit: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # by workload (prefill, decode), the routing of its moe ops at its own parameters, as run records it under
    # workload.moe (each simulated batch and size is routed the same way); None: no moe op
    moe: Mapping[str, Any] | None = None
    hw_set: tuple[str, ...] | None = None  # the --hw-set overrides the config was loaded with (None: none)

    @property
    def results(self) -> Mapping[str, ServingRun]:
        """The runs by sparsity label."""
        return self.comparison.results

    @property
    def overloaded(self) -> bool:
        """Whether any run's offered load is above its capacity (then ``warnings`` says which; other warnings,
        from the simulated runs, do not count)."""
        return any(run.load.overloaded for run in self.results.values())

    def to_dict(self) -> dict[str, Any]:
        """The plain data ``accelsim serve --format json`` prints (less the written ``files``)."""
        out: dict[str, Any] = {
            "command": "serve", "hardware": self.hardware, "workload": self.workload,
            "decode_workload": self.decode_workload, "mode": self.mode, "set": copy.deepcopy(dict(self.set)),
            "rate_rps": self.rate_rps, "duration_s": self.duration_s, "seed": self.seed,
            "sparsities": list(self.sparsities), "runtime_config": copy.deepcopy(dict(self.runtime_config)),
            "variability_enabled": self.variability_enabled, "notes": list(self.notes),
            **self.comparison.to_dict(), "warnings": list(self.warnings), "overloaded": self.overloaded,
        }
        if self.hw_set is not None:
            out["hw_set"] = list(self.hw_set)
        if self.moe is not None:
            out["moe"] = copy.deepcopy(dict(self.moe))
        if self.does_not_fit:
            out["does_not_fit"] = {lab: dict(v) for lab, v in self.does_not_fit.items()}
        if self.clock is not None:
            out["clock"] = {lab: c.to_dict() for lab, c in self.clock.items()}
        if self.capacity is not None:
            out["capacity"] = self.capacity.to_dict()
        if self.quality is not None:
            out["quality"] = self.quality.to_dict()
        if self.latency_vs_load is not None:
            out["latency_vs_load"] = {lab: c.to_rows() for lab, c in self.latency_vs_load.items()}
            per_point = {c.requests_per_point for c in self.latency_vs_load.values()}
            out["latency_vs_load_requests_per_point"] = per_point.pop() if len(per_point) == 1 else None
        return out
