"""One-shot serving (e.g. BERT): a Triton-style dynamic batcher on identical instances (simpy).

When an instance is free it takes the oldest waiting requests as a batch once ``max_batch`` have arrived
or the oldest has waited ``max_wait_ms``, whichever comes first (immediately, if either already holds).
``instances`` identical accelerator instances are simpy processes pulling from the one FIFO queue. One
simpy timeout per batch; per-request latencies are computed vectorised at the end (``np.repeat`` of batch
ends).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from accelsim.serving.config import RuntimeConfig, ServingError, batch_key, pad_to
from accelsim.serving.variability import make_throttle, seed_streams, service_factors

__all__ = ["BatchTrace", "simulate_batching"]


class BatchTrace:
    """What a one-shot run did: per-request arrival/start/end (s) and per-batch records (arrays)."""

    def __init__(self, arrivals: np.ndarray, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray,
                 services: np.ndarray, busy_s: float, instances: int, cache_entries: int, throttled: int) -> None:
        self.arrivals = arrivals
        self.batch_start = starts
        self.batch_end = ends
        self.batch_count = counts
        self.batch_service = services
        self.busy_s = busy_s
        self.instances = instances
        self.cache_entries = cache_entries
        self.throttled_batches = throttled

    @property
    def start(self) -> np.ndarray:
        return np.repeat(self.batch_start, self.batch_count)

    @property
    def end(self) -> np.ndarray:
        return np.repeat(self.batch_end, self.batch_count)

    @property
    def latency(self) -> np.ndarray:
        return self.end - self.arrivals

    @property
    def waiting(self) -> np.ndarray:
        """Queueing delay: batch start - arrival (includes the wait for the batch to fill)."""
        return self.start - self.arrivals

    @property
    def makespan(self) -> float:
        return float(self.batch_end.max()) if self.batch_end.size else 0.0


def simulate_batching(arrivals: np.ndarray, sizes: np.ndarray | int | None, service: Callable[[int, Any], float],
                      config: RuntimeConfig | None = None, *, seed: int = 0,
                      service_dist: Any = "deterministic", cache: dict[tuple[int, Any], float] | None = None
                      ) -> BatchTrace:
    """Serve sorted ``arrivals`` (s) with dynamic batching on ``config.instances`` instances (simpy).

    ``service(batch, size)`` gives a batch's service time in seconds (called once per distinct padded
    (batch, size)); ``service_dist`` multiplies it per batch by mean-1 factors: 'deterministic',
    'exponential', or ``callable(rng, n) -> array``. ``cache``: a dict of service times by (batch key,
    padded size), filled as shapes are first used (pass one to read them afterwards).
    """
    cfg = config or RuntimeConfig()
    arr_np = np.ascontiguousarray(arrivals, dtype=np.float64)
    n = int(arr_np.size)
    arr = arr_np.tolist()
    big_b, wait, mode = cfg.max_batch, cfg.max_wait_ms / 1e3, cfg.batch_bucket
    size_const: Any = None
    size_list: list[int] | None = None
    if isinstance(sizes, int | np.integer):
        size_const = pad_to(int(sizes), cfg.size_bucket)
    elif sizes is not None:
        padded = -(-np.asarray(sizes, dtype=np.int64) // cfg.size_bucket) * cfg.size_bucket
        if padded.size != n:
            raise ServingError(f"{padded.size} sizes for {n} arrivals")
        if n and int(padded.min()) == int(padded.max()):
            size_const = int(padded[0])
        else:
            size_list = padded.tolist()
    seeds = seed_streams(seed)
    factors = service_factors(service_dist, cfg, seeds)
    throttle = make_throttle(cfg, seeds)
    cache = {} if cache is None else cache
    starts: list[float] = []
    ends: list[float] = []
    counts: list[int] = []
    services: list[float] = []
    head = [0]
    busy = [0.0]
    env = simpy.Environment()

    def instance() -> Generator[simpy.Event, Any, None]:
        timeout = env.timeout
        bisect_right = bisect.bisect_right
        while True:
            first = head[0]
            if first >= n:
                return
            now = env.now
            ready = arr[first] + wait
            last = first + big_b - 1
            if last < n and arr[last] < ready:
                ready = arr[last]
            start = now if now > ready else ready
            hi = first + big_b if last < n else n
            cnt = bisect_right(arr, start, first + 1, hi) - first
            head[0] = first + cnt
            size = size_const if size_list is None else max(size_list[first:first + cnt])
            key = (cnt if mode == "exact" else batch_key(cnt, mode, big_b), size)
            svc = cache.get(key)
            if svc is None:
                svc = float(service(key[0], size))
                if not svc > 0 or not math.isfinite(svc):
                    raise ServingError(f"service time for batch {key[0]}, size {size} is {svc!r}; must be > 0")
                cache[key] = svc
            if factors is not None:
                svc *= next(factors)
            if throttle is not None:
                svc *= throttle.factor(start)
            starts.append(start)
            ends.append(start + svc)
            counts.append(cnt)
            services.append(svc)
            busy[0] += svc
            yield timeout(start - now + svc)

    for _ in range(cfg.instances):
        env.process(instance())
    env.run()
    return BatchTrace(arr_np, np.asarray(starts), np.asarray(ends), np.asarray(counts, dtype=np.int64),
                      np.asarray(services), busy[0], cfg.instances, len(cache),
                      throttle.hits if throttle is not None else 0)

