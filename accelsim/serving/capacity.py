"""Capacity at SLA (:func:`find_max_rate`), latency-vs-load curves, and deployments side by side on the
same seeded arrivals (:func:`compare`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from accelsim.serving.config import DEFAULT_REQUESTS_PER_EVAL, ServingError
from accelsim.serving.model import ServingModel
from accelsim.serving.results import CapacityEval, CapacityResult, CompareResult, Comparison, LoadCurve, LoadPoint
from accelsim.serving.run_record import ServingRun

__all__ = ["find_max_rate", "latency_vs_load", "compare", "MAX_DOUBLINGS"]

MAX_DOUBLINGS = 20  # an unbounded search stops ~1e6x above its start rate (reached only without a known capacity)


def find_max_rate(model: ServingModel, budget_ms: float, *, metric: str | None = None, quantile: str = "p99",
                  requests: int = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, rtol: float = 0.005,
                  start_rate: float | None = None, max_evals: int = 60,
                  progress: Callable[[int, int], None] | None = None, **run_kw: Any) -> CapacityResult:
    """Highest arrival rate (requests/s) whose ``quantile`` latency holds ``budget_ms`` ("capacity at SLA").

    Every evaluation runs ``requests`` Poisson arrivals with the same ``seed`` (common random numbers:
    the arrival path is the same unit-rate path scaled in time). From ``start_rate`` (default: the
    model's full-batch rate guess) the rate is doubled or halved until the budget is bracketed, then
    bisected geometrically until hi/lo - 1 <= ``rtol``. ``max_rate_rps`` is the bracket's low end, a
    rate that was simulated and holds. A rate whose offered load is above the deployment's capacity (the
    run's ``load.overloaded``) does not hold, whatever its quantile: its queue grows for as long as requests
    arrive, so a budget that a finite sample happens to meet (p99 TPOT barely grows with the queue; a loose
    budget outlasts the drain of ``requests`` arrivals) is not held in steady state. This bounds the search by
    the capacity; where the capacity is unknown the doubling stops at ``MAX_DOUBLINGS`` and the result is
    ``unbounded`` (``max_rate_rps`` then a lower bound only). Assumes the quantile grows with load above the
    bracket's low end (a lightly loaded batcher can be *slower* than a busier one, so the search starts near
    saturation).
    The result is a property of the seeded sample: its statistical error (a few % at 20,000 requests
    for p99) is separate from ``rtol``. ``progress(done, total)`` after each evaluation (``total`` is an
    estimate until the rate is bracketed).
    """
    metric = metric or ("ttft" if model.is_llm else "latency")
    if metric not in ("latency", "ttft", "tpot"):
        raise ServingError(f"metric {metric!r}: expected latency, ttft or tpot")
    if not budget_ms > 0:
        raise ServingError(f"latency budget must be > 0 ms, got {budget_ms!r}")
    evals: list[CapacityEval] = []

    def holds(rate: float) -> bool:
        res = model.run(rate, requests=requests, seed=seed, sla_metric=metric, **run_kw)
        stats = res.stats(metric)
        if stats is None:
            raise ServingError(f"metric {metric!r}: {model.name} runs have no {metric} (one-shot models have only "
                               "latency)")
        value = stats.quantile(quantile)
        over = bool(res.load.overloaded)
        ok = bool(value <= budget_ms) and not over
        evals.append(CapacityEval(rate_rps=round(rate, 6), quantile=quantile, value_ms=value, holds=ok,
                                  utilisation=res.utilisation, overloaded=over))
        if progress is not None:
            progress(len(evals), min(max_evals, len(evals) + _evals_left(lo, hi, rtol)))
        return ok

    r = float(start_rate or model.rate_guess())
    lo: float | None = None
    hi: float | None = None
    if holds(r):
        lo = r
        ceiling = r * 2 ** MAX_DOUBLINGS
        while hi is None and len(evals) < max_evals and r < ceiling:
            r *= 2
            if holds(r):
                lo = r
            else:
                hi = r
    else:
        hi = r
        floor = r / 4096  # below this the server is essentially idle: more halving cannot help
        while lo is None and len(evals) < max_evals and r > floor:
            r /= 2
            if holds(r):
                lo = r
            else:
                hi = r
    status = "ok"
    if lo is None:
        status = "infeasible"
    elif hi is None:
        status = "unbounded"
    else:
        while hi / lo - 1 > rtol and len(evals) < max_evals:
            mid = math.sqrt(lo * hi)
            if holds(mid):
                lo = mid
            else:
                hi = mid
        if hi / lo - 1 > rtol:
            status = "max_evals"
    if progress is not None:
        progress(len(evals), len(evals))
    at = next((e for e in reversed(evals) if lo is not None and e.rate_rps == round(lo, 6)), None)
    miss = next((e for e in reversed(evals) if hi is not None and e.rate_rps == round(hi, 6)), None)
    limited_by = None if miss is None else ("capacity" if miss.overloaded and miss.value_ms <= budget_ms
                                            else "budget")
    return CapacityResult(name=model.name, sparsity=model.sparsity, metric=metric, quantile=quantile,
                          budget_ms=budget_ms, max_rate_rps=round(lo, 6) if lo is not None else 0.0,
                          bracket_rps=(None if lo is None else round(lo, 6), None if hi is None else round(hi, 6)),
                          value_at_max_ms=None if at is None else at.value_ms, rtol=rtol, requests_per_eval=requests,
                          seed=seed, status=status, evaluations=tuple(evals), limited_by=limited_by)


def _evals_left(lo: float | None, hi: float | None, rtol: float) -> int:
    """Bisection steps still to come (a guess of 3 more bracketing steps while the rate is unbracketed)."""
    if lo is None or hi is None:
        return 3 + math.ceil(math.log2(math.log(2) / math.log1p(rtol)))
    if hi / lo - 1 <= rtol:
        return 0
    return math.ceil(math.log2(math.log(hi / lo) / math.log1p(rtol)))


def latency_vs_load(model: ServingModel, rates: Sequence[float], *, requests: int = DEFAULT_REQUESTS_PER_EVAL,
                    seed: int = 0, **run_kw: Any) -> LoadCurve:
    """Latency percentiles at each arrival rate (same seeded path, scaled): a latency-vs-load curve."""
    points = []
    for rate in rates:
        res = model.run(float(rate), requests=requests, seed=seed, **run_kw)
        pct = {metric: {q: stats.quantile(q) for q in ("p50", "p95", "p99")}
               for metric in ("latency", "ttft", "tpot") if (stats := res.stats(metric)) is not None}
        points.append(LoadPoint(rate_rps=float(rate), throughput_rps=res.throughput_rps,
                                utilisation=res.utilisation, percentiles_ms=pct))
    return LoadCurve(tuple(points), requests_per_point=requests)


def compare(models: Mapping[str, ServingModel], rate: float | None = None, **run_kw: Any) -> CompareResult:
    """Run several models (e.g. dense and 2:4) on the same seeded arrivals; results side by side."""
    results = {label: m.run(rate, **run_kw) for label, m in models.items()}
    labels = list(results)
    comparison = None
    if len(labels) >= 2:
        a, b = results[labels[0]], results[labels[1]]
        metrics = ["latency"] + (["ttft", "tpot"] if a.is_llm else [])
        comparison = Comparison(
            baseline=labels[0], other=labels[1],
            ratios={f"{m}_{q}_ratio": _ratio(_quantile(a, m, q), _quantile(b, m, q))
                    for m in metrics for q in ("p50", "p99")},
            throughput_ratio=_ratio(b.throughput_rps, a.throughput_rps),
            utilisation=(a.utilisation, b.utilisation))
    return CompareResult(results=MappingProxyType(results), comparison=comparison)


def _quantile(run: ServingRun, metric: str, quantile: str) -> float:
    stats = run.stats(metric)
    if stats is None:
        raise ServingError(f"{run.name}: a {run.mode} run has no {metric} to compare")
    return stats.quantile(quantile)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 6) if b and math.isfinite(a) and math.isfinite(b) else None

