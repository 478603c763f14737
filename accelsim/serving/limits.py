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
           "check_serve_args", "check_sizes", "load_assessment", "overload_warnings"]

MAX_REQUESTS = 10_000_000  # expected arrivals, rate x duration
MAX_REQUEST_SIZE = 32_768  # tokens (seq / prompt / output) of one request
# output tokens of one LLM run: decode runs step by step (a few 100k steps/s), so 1e7 requests x 32,768 tokens
# would run for hours; 1e8 is a few minutes at worst (max_batch 1)
MAX_DECODE_TOKENS = 100_000_000
MAX_SEED = 2**32 - 1

OVERLOAD_NOTE = ("offered load above capacity: the queue grows for the whole run, so latency percentiles are "
                 "not steady-state (they grow with the duration)")


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
