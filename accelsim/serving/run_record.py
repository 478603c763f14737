"""One serving run's summary as a typed, frozen record: :class:`ServingRun` and its parts.

:meth:`~accelsim.serving.model.ServingModel.run` returns a :class:`ServingRun`; ``to_dict()`` gives the
plain, JSON-able run record that ``accelsim serve --format json`` and ``serve.json`` carry under
``results.<label>``, key for key and in the same order. Times are in ms, rates in requests/s.

The descriptions of a run's inputs (``arrivals``, ``sizes``) stay plain data, held read-only (dicts as
read-only mappings, lists as tuples); ``config`` is the frozen
:class:`~accelsim.serving.config.RuntimeConfig` the run used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from accelsim.records import plain
from accelsim.serving.config import JitterSource, RuntimeConfig, ThrottleSource

__all__ = ["LatencyStats", "QuantileTable", "SlaOutcome", "LoadAssessment", "BatchStats", "ServiceTime",
           "DecodeBatchStats", "KvCacheReport", "VariabilityReport", "ServiceCache", "ServingRun"]

QUANTILES = ("mean", "p50", "p95", "p99", "max")


@dataclass(frozen=True)
class LatencyStats:
    """Mean, p50, p95, p99 and max of a latency series, in ms (NaN when nothing was measured)."""

    mean: float
    p50: float
    p95: float
    p99: float
    max: float

    def quantile(self, name: str) -> float:
        """The statistic called ``name`` (mean, p50, p95, p99 or max)."""
        if name not in QUANTILES:
            raise KeyError(name)
        return float(getattr(self, name))

    def to_dict(self) -> dict[str, float]:
        """``{mean, p50, p95, p99, max}``."""
        return {"mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99, "max": self.max}


@dataclass(frozen=True)
class QuantileTable:
    """A latency CDF for plots: quantiles ``q`` and the latencies there, ``ms`` (both empty without data)."""

    q: tuple[float, ...]
    ms: tuple[float, ...]

    def to_dict(self) -> dict[str, list[float]]:
        """``{q, ms}`` as lists."""
        return {"q": list(self.q), "ms": list(self.ms)}


@dataclass(frozen=True)
class SlaOutcome:
    """The p99 of ``metric`` against ``budget_ms``: the share of requests within it and whether it holds."""

    metric: str
    budget_ms: float
    p99_ms: float
    attainment: float
    holds: bool

    def to_dict(self) -> dict[str, Any]:
        """``{metric, budget_ms, p99_ms, attainment, holds}``."""
        return {"metric": self.metric, "budget_ms": self.budget_ms, "p99_ms": self.p99_ms,
                "attainment": self.attainment, "holds": self.holds}


@dataclass(frozen=True)
class LoadAssessment:
    """Offered load against capacity (None where unknown); ``note`` says what an overload means."""

    offered_rps: float | None
    capacity_rps: float | None
    offered_over_capacity: float | None
    overloaded: bool
    capacity_basis: str
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{offered_rps, capacity_rps, offered_over_capacity, overloaded, capacity_basis}`` (+ ``note``)."""
        out: dict[str, Any] = {"offered_rps": self.offered_rps, "capacity_rps": self.capacity_rps,
                               "offered_over_capacity": self.offered_over_capacity, "overloaded": self.overloaded,
                               "capacity_basis": self.capacity_basis}
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class BatchStats:
    """One-shot batches: mean and largest batch size, and how many batches ran."""

    mean: float
    max: int
    batches: int

    def to_dict(self) -> dict[str, Any]:
        """``{mean, max, batches}``."""
        return {"mean": self.mean, "max": self.max, "batches": self.batches}


@dataclass(frozen=True)
class ServiceTime:
    """One-shot batches: mean service time per batch, in ms."""

    mean_per_batch: float

    def to_dict(self) -> dict[str, float]:
        """``{mean_per_batch}``."""
        return {"mean_per_batch": self.mean_per_batch}


@dataclass(frozen=True)
class DecodeBatchStats:
    """LLM decode steps: mean and largest decode batch, steps, and prefill iterations."""

    mean: float
    max: int
    steps: int
    prefill_iterations: int

    def to_dict(self) -> dict[str, Any]:
        """``{mean, max, steps, prefill_iterations}``."""
        return {"mean": self.mean, "max": self.max, "steps": self.steps,
                "prefill_iterations": self.prefill_iterations}


@dataclass(frozen=True)
class KvCacheReport:
    """LLM KV cache: bytes per token, the budget, the largest request, how many such requests fit, the peak
    use, admissions held back for room, and whether the budget (not ``max_batch``) limits the batch."""

    bytes_per_token: float
    budget_bytes: int | None
    weights_deployed_bytes: int | None
    largest_request_bytes: int
    cap_requests: int | None
    peak_bytes: int
    blocked_admissions: int
    limits_batch: bool

    def to_dict(self) -> dict[str, Any]:
        """The fields above, in order."""
        return {"bytes_per_token": self.bytes_per_token, "budget_bytes": self.budget_bytes,
                "weights_deployed_bytes": self.weights_deployed_bytes,
                "largest_request_bytes": self.largest_request_bytes, "cap_requests": self.cap_requests,
                "peak_bytes": self.peak_bytes, "blocked_admissions": self.blocked_admissions,
                "limits_batch": self.limits_batch}


@dataclass(frozen=True)
class VariabilityReport:
    """The variability sources a run used, and how many of its ``units`` (batches, or LLM iterations) started
    inside a clock-throttle episode (``throttled``)."""

    enabled: bool
    jitter: JitterSource
    throttle: ThrottleSource
    throttled: int
    units: int
    service_dist: str

    def to_dict(self) -> dict[str, Any]:
        """``{enabled, jitter, throttle: {..., throttled, of}, service_dist}``."""
        return {"enabled": self.enabled, "jitter": self.jitter.model_dump(mode="json"),
                "throttle": {**self.throttle.model_dump(mode="json"), "throttled": self.throttled, "of": self.units},
                "service_dist": self.service_dist}


@dataclass(frozen=True)
class ServiceCache:
    """Distinct (batch, size) shapes a run used, and the accelsim simulations its services ran so far."""

    shapes: int
    simulations: int | None

    def to_dict(self) -> dict[str, Any]:
        """``{shapes, simulations}``."""
        return {"shapes": self.shapes, "simulations": self.simulations}


@dataclass(frozen=True)
class ServingRun:
    """One seeded arrival stream through one deployment (``mode`` "batch": one-shot; "llm": prefill + decode).

    ``latency_ms``: arrival -> batch end (LLM: -> last token); ``queueing_delay_ms``: arrival -> batch
    start / admission; ``throughput_rps``: completed / (last completion - first arrival); ``utilisation``:
    share of instance-time spent serving (not MAC utilisation); ``load``: offered rate against capacity;
    ``sla``: None without a budget; ``cdf``: quantile tables by metric (latency; LLM also ttft, tpot).
    One-shot runs carry ``batch_size`` and ``service_ms``; LLM runs ``ttft_ms``, ``tpot_ms``,
    ``output_tokens_per_s``, ``decode_batch``, ``kv_cache`` and ``rejected`` (None in the other mode).
    ``hardware``, ``workload`` and ``decode_workload`` are None where the model does not say.
    """

    mode: Literal["batch", "llm"]
    name: str
    sparsity: str | None
    arrivals: Mapping[str, Any]
    sizes: Any
    requests: int
    measured: int
    config: RuntimeConfig
    latency_ms: LatencyStats
    queueing_delay_ms: LatencyStats
    throughput_rps: float
    utilisation: float
    load: LoadAssessment
    makespan_s: float
    sla: SlaOutcome | None
    variability: VariabilityReport
    service_cache: ServiceCache
    cdf: Mapping[str, QuantileTable]
    hardware: str | None = None
    workload: str | None = None
    decode_workload: str | None = None
    batch_size: BatchStats | None = None
    service_ms: ServiceTime | None = None
    ttft_ms: LatencyStats | None = None
    tpot_ms: LatencyStats | None = None
    output_tokens_per_s: float | None = None
    decode_batch: DecodeBatchStats | None = None
    kv_cache: KvCacheReport | None = None
    rejected: int | None = None

    @property
    def is_llm(self) -> bool:
        """Whether this is an LLM run (prefill + decode)."""
        return self.mode == "llm"

    def stats(self, metric: str) -> LatencyStats | None:
        """The statistics of ``metric`` (latency, queueing_delay, ttft or tpot); None if this run has none."""
        table = {"latency": self.latency_ms, "queueing_delay": self.queueing_delay_ms, "ttft": self.ttft_ms,
                 "tpot": self.tpot_ms}
        if metric not in table:
            raise KeyError(metric)
        return table[metric]

    def to_dict(self) -> dict[str, Any]:
        """The run record as plain, JSON-able data (what ``serve.json`` holds per run)."""
        out: dict[str, Any] = {"mode": self.mode, "name": self.name, "sparsity": self.sparsity}
        for key in ("hardware", "workload", "decode_workload"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out.update({"arrivals": plain(self.arrivals), "sizes": plain(self.sizes),
                    "requests": self.requests, "measured": self.measured, "config": self.config.to_dict()})
        if not self.is_llm:
            out.update({"latency_ms": self.latency_ms.to_dict(), "queueing_delay_ms": self.queueing_delay_ms.to_dict(),
                        "batch_size": _dict(self.batch_size), "service_ms": _dict(self.service_ms),
                        "throughput_rps": self.throughput_rps, "utilisation": self.utilisation,
                        "load": self.load.to_dict(), "makespan_s": self.makespan_s})
        else:
            out.update({"ttft_ms": _dict(self.ttft_ms), "tpot_ms": _dict(self.tpot_ms),
                        "latency_ms": self.latency_ms.to_dict(), "queueing_delay_ms": self.queueing_delay_ms.to_dict(),
                        "throughput_rps": self.throughput_rps, "output_tokens_per_s": self.output_tokens_per_s,
                        "utilisation": self.utilisation, "load": self.load.to_dict(), "makespan_s": self.makespan_s,
                        "decode_batch": _dict(self.decode_batch), "kv_cache": _dict(self.kv_cache),
                        "rejected": self.rejected})
        out.update({"sla": _dict(self.sla), "variability": self.variability.to_dict(),
                    "service_cache": self.service_cache.to_dict(),
                    "cdf": {metric: table.to_dict() for metric, table in self.cdf.items()}})
        return out


class _Part(Protocol):
    def to_dict(self) -> Mapping[str, Any]: ...


def _dict(part: _Part | None) -> dict[str, Any] | None:
    """A part's plain data, None for an absent part."""
    return None if part is None else dict(part.to_dict())
