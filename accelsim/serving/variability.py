"""Seeded variability at run time: the per-batch service-time factors (a service distribution and
lognormal jitter) and clock-throttle episodes, each on its own seed stream (``SEED_STREAMS``)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

import numpy as np

from accelsim.serving.config import SEED_STREAMS, RuntimeConfig, ServingError, ThrottleSource

__all__ = ["seed_streams", "service_factors", "Throttle", "make_throttle"]


def seed_streams(seed: int) -> list[np.random.SeedSequence]:
    """One independent seed sequence per entry of ``SEED_STREAMS``, from one run seed."""
    return np.random.SeedSequence(int(seed)).spawn(len(SEED_STREAMS))


def _factor_stream(kind: Any, rng: np.random.Generator, chunk: int = 65_536) -> Iterator[float]:
    """Endless mean-1 multiplicative factors: 'exponential', 'lognormal:<sigma>' or a callable(rng, n)."""
    while True:
        if callable(kind):
            block = np.asarray(kind(rng, chunk), dtype=np.float64)
        elif kind == "exponential":
            block = rng.standard_exponential(chunk)
        elif isinstance(kind, tuple) and kind[0] == "lognormal":
            sigma = kind[1]
            block = np.exp(sigma * rng.standard_normal(chunk) - 0.5 * sigma * sigma)
        else:  # pragma: no cover - guarded by service_factors
            raise ValueError(kind)
        yield from block.tolist()


def service_factors(service_dist: Any, config: RuntimeConfig,
                    seeds: list[np.random.SeedSequence]) -> Iterator[float] | None:
    """One per-batch factor iterator combining the service distribution and jitter, or None."""
    streams: list[Iterator[float]] = []
    if service_dist not in (None, "deterministic"):
        if not (callable(service_dist) or service_dist == "exponential"):
            raise ServingError(f"service_dist must be 'deterministic', 'exponential' or a callable, "
                                f"got {service_dist!r}")
        streams.append(_factor_stream(service_dist, np.random.default_rng(seeds[SEED_STREAMS["service_dist"]])))
    jit = config.variability.jitter
    if jit.enabled and jit.sigma > 0:
        streams.append(_factor_stream(("lognormal", jit.sigma), np.random.default_rng(seeds[SEED_STREAMS["jitter"]])))
    if not streams:
        return None
    if len(streams) == 1:
        return streams[0]
    return (a * b for a, b in zip(*streams, strict=False))


class Throttle:
    """Clock-throttle episodes, generated lazily along simulated time."""

    def __init__(self, cfg: ThrottleSource, rng: np.random.Generator) -> None:
        self.rate = cfg.episodes_per_s
        self.dur = cfg.duration_ms / 1e3
        self.slow = 1.0 / cfg.clock_factor
        self.rng = rng
        self.starts: list[float] = []
        self.horizon = 0.0
        self.hits = 0

    def _extend(self, t: float) -> None:
        while self.horizon <= t:
            gaps = self.rng.standard_exponential(256) / self.rate
            epochs = (self.horizon + np.cumsum(gaps)).tolist()
            self.starts.extend(epochs)
            self.horizon = epochs[-1]

    def factor(self, t: float) -> float:
        """Service-time factor of a batch starting at ``t`` (s): 1/clock_factor inside an episode, else 1."""
        if t >= self.horizon:
            self._extend(t)
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and t < self.starts[i] + self.dur:
            self.hits += 1
            return self.slow
        return 1.0




def make_throttle(config: RuntimeConfig, seeds: list[np.random.SeedSequence]) -> Throttle | None:
    """The run's throttle episodes (on the ``throttle`` seed stream), or None when the source is off."""
    if not config.variability.throttle.enabled:
        return None
    return Throttle(config.variability.throttle, np.random.default_rng(seeds[SEED_STREAMS["throttle"]]))
