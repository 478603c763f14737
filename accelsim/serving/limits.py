"""Bounds on ``accelsim serve``'s inputs, and whether a run's offered load exceeds its capacity.

Library code: raises :class:`~accelsim.errors.AccelsimError` subclasses, never prints. The bounds keep
every serving run small enough to finish in seconds (a run holds a few arrays per request, and each
distinct (batch, size) shape costs one accelsim simulation); they are far above real deployments. The
bounds of :class:`~accelsim.serving.config.RuntimeConfig`'s fields live with it and are used here too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from accelsim.serving.config import MAX_BATCH, MAX_INSTANCES, MAX_WAIT_MS, ServingError
from accelsim.serving.run_record import LoadAssessment, ServingRun

__all__ = ["MAX_INSTANCES", "MAX_BATCH", "MAX_WAIT_MS", "MAX_REQUESTS", "MAX_REQUEST_SIZE", "MAX_SEED", "OVERLOAD_NOTE",
           "MAX_DECODE_TOKENS", "check_decode_tokens",
           "check_serve_args", "check_sizes", "load_assessment", "overload_warnings", "NEAR_CAPACITY",
           "min_samples", "thin_quantiles", "sample_warning", "sample_warnings", "near_capacity",
           "near_capacity_warnings", "kv_limit_notes"]

MAX_REQUESTS = 10_000_000  # expected arrivals, rate x duration
MAX_REQUEST_SIZE = 32_768  # tokens (seq / prompt / output) of one request
# output tokens of one LLM run: decode runs step by step (a few 100k steps/s), so 1e7 requests x 32,768 tokens
# would run for hours; 1e8 is a few minutes at worst (max_batch 1)
MAX_DECODE_TOKENS = 100_000_000
MAX_SEED = 2**32 - 1

OVERLOAD_NOTE = ("offered load above capacity: the queue grows for the whole run, so latency percentiles are "
                 "not steady-state (they grow with the duration)")


# Offered load at or above this share of capacity (and not above it) is "near saturation": the queue's
# relaxation time grows like 1 / (1 - rho)^2, so a run of a few seconds from an empty system sees far less
# queueing than the steady state, and its percentiles grow with the run length.
NEAR_CAPACITY = 0.9
QUANTILE_LEVELS = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def min_samples(level: float) -> int:
    """Completed requests a ``level`` quantile needs to mean what it says: 1 / (1 - level), rounded up
    (p99: 100, p95: 20, p50: 2). With fewer, fewer than one sample lies above the quantile, so the
    interpolated "p99" is (nearly) the largest latency seen, not a 1-in-100 tail."""
    return math.ceil(round(1.0 / (1.0 - level), 9))


def thin_quantiles(n: int, quantiles: tuple[str, ...] = ("p50", "p95", "p99")) -> list[str]:
    """The quantiles of ``quantiles`` that ``n`` completed requests are too few for (see :func:`min_samples`)."""
    return [q for q in quantiles if q in QUANTILE_LEVELS and n < min_samples(QUANTILE_LEVELS[q])]


def sample_warning(label: str, n: int, quantiles: tuple[str, ...] = ("p50", "p95", "p99"),
                   remedy: str = "raise --duration or --rate") -> str | None:
    """A warning when ``n`` completed requests are too few for some of ``quantiles`` (None when enough)."""
    thin = thin_quantiles(n, quantiles)
    if not thin:
        return None
    need = ", ".join(f"a {q} needs >= {min_samples(QUANTILE_LEVELS[q])}" for q in thin)
    return (f"{label}: {' and '.join(thin)} from only {n:,} completed request{'s' if n != 1 else ''} ({need} to be "
            f"more than the largest latency seen): not a tail estimate; {remedy}")


def sample_warnings(results: Mapping[str, ServingRun], remedy: str = "raise --duration or --rate") -> list[str]:
    """One :func:`sample_warning` per run of ``results`` whose measured requests are too few for its p99."""
    return [w for lab, run in results.items() if (w := sample_warning(lab, run.measured, remedy=remedy)) is not None]


def near_capacity(ratio: float | None) -> bool:
    """Whether offered / capacity is near saturation: at least :data:`NEAR_CAPACITY`, not above 1."""
    return ratio is not None and NEAR_CAPACITY <= ratio <= 1.0


def near_capacity_warnings(results: Mapping[str, ServingRun], curves: Mapping[str, Any] | None = None,
                           curve_requests: int | None = None) -> list[str]:
    """One warning per run whose offered load is near capacity (:func:`near_capacity`): its percentiles are
    not steady-state. Where ``curves`` (latency-vs-load curves by label) has a point at the run's own rate,
    the warning gives that point's p99 (from ``curve_requests`` requests) against the run's."""
    lines = []
    for label, run in results.items():
        ratio = run.load.offered_over_capacity
        if not near_capacity(ratio):
            continue
        metric = "ttft" if run.is_llm else "latency"
        line = (f"{label}: offered load is {ratio:.3g} of the capacity (>= {NEAR_CAPACITY:g}, near saturation): "
                f"from an empty system the queue has not reached steady state in {run.measured:,} requests, so "
                "these percentiles are optimistic and grow with the run length (--duration)")
        rate = run.load.offered_rps
        curve = (curves or {}).get(label)
        point = next((p for p in getattr(curve, "points", ()) if rate and math.isclose(p.rate_rps, rate,
                                                                                        rel_tol=1e-6)), None)
        stats = run.stats(metric)
        if point is not None and stats is not None:
            far = point.latency_ms(metric, "p99")
            if far is not None and math.isfinite(far) and math.isfinite(stats.p99) and stats.p99 > 0:
                runs = f"{curve_requests:,} requests" if curve_requests else "its requests"
                line += (f"; the latency-vs-load curve at this rate ({runs}) gives {metric} p99 {far:,.1f} ms "
                         f"against {stats.p99:,.1f} ms here ({far / stats.p99:,.3g}x)")
        lines.append(line)
    return lines


def kv_limit_notes(results: Mapping[str, ServingRun]) -> list[str]:
    """One note per LLM run whose KV-cache budget, not max_batch, limits the decode batch."""
    lines = []
    for label, run in results.items():
        kv = run.kv_cache
        if kv is None or not kv.limits_batch:
            continue
        lines.append(f"{label}: the KV cache limits the decode batch to {kv.cap_requests:,} of the largest "
                     f"requests (max_batch {run.config.max_batch:,}; budget {kv.budget_bytes:,} B, "
                     f"{kv.largest_request_bytes:,} B per request); {kv.blocked_admissions:,} admissions waited "
                     "for KV room")
    return lines


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def check_serve_args(*, rate: float | None, duration_s: float | None, seed: int, max_batch: int | None,
                     max_wait_ms: float | None, instances: int | None, sla_p99_ms: float | None = None,
                     budget_ms: float | None = None, trace: Any = None) -> None:
    """Raise a one-line ServingError naming the ``accelsim serve`` flag whose value is out of bounds."""
    def bad(flag: str, value: Any, want: str) -> ServingError:
        return ServingError(f"{flag} {value!r}: expected {want}")

    if rate is not None and not (_finite(rate) and rate > 0):
        raise bad("--rate", rate, "a finite number of requests/s > 0")
    if duration_s is not None and not (_finite(duration_s) and duration_s > 0):
        raise bad("--duration", duration_s, "a finite number of simulated seconds > 0")
    if rate is not None and duration_s is not None and trace is None and rate * duration_s > MAX_REQUESTS:
        raise ServingError(f"--rate {rate:g} x --duration {duration_s:g} = {rate * duration_s:,.0f} expected requests; "
                           f"at most {MAX_REQUESTS:,} per run (shorten --duration: percentiles settle long before)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise bad("--seed", seed, f"an integer from 0 to {MAX_SEED} (2^32 - 1)")
    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int)
                                  or not 1 <= max_batch <= MAX_BATCH):
        raise bad("--max-batch", max_batch, f"an integer from 1 to {MAX_BATCH:,}")
    if max_wait_ms is not None and not (_finite(max_wait_ms) and 0 <= max_wait_ms <= MAX_WAIT_MS):
        raise bad("--max-wait-ms", max_wait_ms, f"a finite number of ms from 0 to {MAX_WAIT_MS:,.0f}")
    if instances is not None and (isinstance(instances, bool) or not isinstance(instances, int)
                                  or not 1 <= instances <= MAX_INSTANCES):
        raise bad("--instances", instances, f"an integer from 1 to {MAX_INSTANCES:,}")
    for flag, v in (("--sla-p99", sla_p99_ms), ("--budget-ms", budget_ms)):
        if v is not None and not (_finite(v) and v > 0):
            raise bad(flag, v, "a finite latency budget in ms > 0")


def check_sizes(spec: dict[str, Any], text: Any) -> None:
    """Reject a parsed size spec whose largest request is above :data:`MAX_REQUEST_SIZE`."""
    top = {"fixed": lambda s: s["value"], "uniform": lambda s: s["high"], "choice": lambda s: max(s["values"])}
    largest = top[spec["kind"]](spec)
    if largest > MAX_REQUEST_SIZE:
        raise ServingError(f"size spec {text!r}: a request of {largest:,} tokens is above the limit of "
                           f"{MAX_REQUEST_SIZE:,} tokens per request")


def load_assessment(offered_rps: float | None, capacity_rps: float | None, basis: str) -> LoadAssessment:
    """Offered load against capacity: the ratio, whether the run is overloaded, and what that means."""
    ratio = None  # plain floats and bool: a trace's rate comes as numpy scalars, which JSON would turn to 0.0 / 1.0
    offered_rps = None if offered_rps is None else float(offered_rps)
    capacity_rps = None if capacity_rps is None else float(capacity_rps)
    if offered_rps is not None and capacity_rps and math.isfinite(offered_rps) and math.isfinite(capacity_rps):
        ratio = round(offered_rps / capacity_rps, 6)
    over = bool(ratio is not None and ratio > 1.0)
    return LoadAssessment(offered_rps=None if offered_rps is None else round(offered_rps, 6),
                          capacity_rps=None if capacity_rps is None else round(capacity_rps, 6),
                          offered_over_capacity=ratio, overloaded=over, capacity_basis=basis,
                          note=OVERLOAD_NOTE if over else None)


def _rps(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def overload_warnings(results: Mapping[str, ServingRun]) -> list[str]:
    """One warning line per overloaded run of ``results`` (runs by sparsity label)."""
    lines = []
    for label, res in results.items():
        load = res.load
        if load.overloaded:  # then offered, capacity and their ratio are all known
            assert load.offered_rps is not None and load.capacity_rps is not None
            lines.append(f"{label}: offered load {_rps(load.offered_rps)} req/s is "
                         f"{load.offered_over_capacity:,.3g}x the capacity (~{_rps(load.capacity_rps)} req/s): "
                         "the queue grows for the whole run, so latency percentiles are not steady-state (they "
                         "grow with the duration)")
    return lines


def check_decode_tokens(requests: int, tokens: int) -> None:
    """Refuse an LLM run whose requests generate more than :data:`MAX_DECODE_TOKENS` output tokens in all."""
    if tokens > MAX_DECODE_TOKENS:
        raise ServingError(f"{requests:,} requests would generate {tokens:,} output tokens, more than the "
                           f"{MAX_DECODE_TOKENS:,} one LLM run simulates (decode runs step by step): fewer requests "
                           "(rate x duration, --requests) or fewer output tokens")
