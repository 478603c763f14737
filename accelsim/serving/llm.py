"""LLM serving (a prefill + a decode workload): iteration-level (continuous) batching per instance, as
Orca / vLLM do (simpy).

Each iteration either prefills newly admitted requests (FIFO; at most ``max_prefill_tokens`` padded prompt
tokens) or runs one decode step for every active request (the step is simulated at the batch's longest
context, ``kv_len`` padded to ``kv_bucket``). A request joins when the decode batch has room
(``max_batch``) *and* its whole KV cache ((prompt + output - 1) tokens) fits the instance's KV budget.
Time to first token = end of its prefill - arrival; time per output token = (finish - first token) /
(output tokens - 1). One simpy timeout per iteration.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from accelsim.serving.config import RuntimeConfig, ServingError, batch_key, pad_to
from accelsim.serving.variability import make_throttle, seed_streams, service_factors

__all__ = ["LlmTrace", "simulate_llm"]


@dataclass(frozen=True)
class LlmTrace:
    """What an LLM run did: per-request arrival, admission, first token and finish times (s; NaN for a
    request that never finished), the rejected requests, and step statistics."""

    arrivals: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    admitted: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    rejected: np.ndarray
    instances: int
    prefill_cache_entries: int
    decode_cache_entries: int
    throttled: int
    busy_s: float
    prefill_iterations: int
    decode_steps: int
    decode_batch_sum: int
    decode_batch_max: int
    kv_blocked: int
    kv_peak_bytes: float

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token - self.arrivals

    @property
    def waiting(self) -> np.ndarray:
        """Queueing delay: admission (start of its prefill iteration) - arrival."""
        return self.admitted - self.arrivals

    @property
    def latency(self) -> np.ndarray:
        return self.finish - self.arrivals

    @property
    def tpot(self) -> np.ndarray:
        """Time per output token after the first, for requests with more than one output token."""
        multi = self.output > 1
        return (self.finish[multi] - self.first_token[multi]) / (self.output[multi] - 1)

    @property
    def makespan(self) -> float:
        done = self.finish[np.isfinite(self.finish)]
        return float(done.max()) if done.size else 0.0


def simulate_llm(arrivals: np.ndarray, prompt: np.ndarray, output: np.ndarray,
                 prefill_service: Callable[[int, int], float], decode_service: Callable[[int, int], float],
                 config: RuntimeConfig | None = None, *, kv_bytes_per_token: float = 0.0,
                 kv_budget_bytes: float | None = None, seed: int = 0) -> LlmTrace:
    """Continuous batching on ``config.instances`` instances (simpy): prefill-first iterations, decode steps.

    ``prefill_service(batch, padded_prompt)`` and ``decode_service(batch, padded_kv_len)`` give seconds.
    A request is admitted only when its whole KV cache, (prompt + output - 1) * ``kv_bytes_per_token``,
    fits the instance's ``kv_budget_bytes`` (None: no cap); one that can never fit is rejected.
    """
    cfg = config or RuntimeConfig()
    arr_np = np.ascontiguousarray(arrivals, dtype=np.float64)
    n = int(arr_np.size)
    arr = arr_np.tolist()
    p_np = np.asarray(prompt, dtype=np.int64)
    o_np = np.asarray(output, dtype=np.int64)
    if p_np.size != n or o_np.size != n:
        raise ServingError(f"{p_np.size} prompts / {o_np.size} outputs for {n} arrivals")
    plist = p_np.tolist()
    olist = o_np.tolist()
    pbucket = (-(-p_np // cfg.size_bucket) * cfg.size_bucket).tolist()
    need = ((p_np + o_np - 1) * float(kv_bytes_per_token)).tolist()
    budget = math.inf if kv_budget_bytes is None else float(kv_budget_bytes)
    big_b, mode, kvb, max_tok = cfg.max_batch, cfg.batch_bucket, cfg.kv_bucket, cfg.max_prefill_tokens
    seeds = seed_streams(seed)
    factors = service_factors(None, cfg, seeds)
    throttle = make_throttle(cfg, seeds)
    admitted = [math.nan] * n
    first_token = [math.nan] * n
    finish = [math.nan] * n
    rejected: list[int] = []
    head = [0]
    stats: dict[str, Any] = {"busy_s": 0.0, "prefill_iterations": 0, "decode_steps": 0, "decode_batch_sum": 0,
             "decode_batch_max": 0, "kv_blocked": 0, "kv_peak_bytes": 0.0}
    pcache: dict[tuple[int, int], float] = {}
    dcache: dict[tuple[int, int], float] = {}
    env = simpy.Environment()

    def timed(cache: dict[tuple[int, int], float], fn: Callable[[int, int], float], b: int, s: int) -> float:
        key = (b if mode == "exact" else batch_key(b, mode, big_b), s)
        svc = cache.get(key)
        if svc is None:
            svc = float(fn(*key))
            if not svc > 0 or not math.isfinite(svc):
                raise ServingError(f"service time for batch {key[0]}, size {s} is {svc!r}; must be > 0")
            cache[key] = svc
        if factors is not None:
            svc *= next(factors)
        if throttle is not None:
            svc *= throttle.factor(env.now)
        return svc

    def instance() -> Generator[simpy.Event, Any, None]:
        timeout = env.timeout
        offs: list[int] = []        # prompt - join step, per active request: kv_len at step s = off + s
        ends: list[tuple[int, int, int]] = []   # heap of (last decode step, request, off)
        step = 0
        kv_used = 0.0
        while True:
            now = env.now
            new: list[int] = []
            tokens = 0
            blocked = False
            while head[0] < n and arr[head[0]] <= now and len(offs) + len(new) < big_b:
                i = head[0]
                if kv_used + need[i] > budget:
                    if not offs and not new and need[i] > budget:
                        rejected.append(i)
                        head[0] += 1
                        continue
                    blocked = True
                    break
                if new and tokens + pbucket[i] > max_tok:
                    break
                new.append(i)
                admitted[i] = now
                tokens += pbucket[i]
                kv_used += need[i]
                head[0] += 1
            if blocked:
                stats["kv_blocked"] += 1
            if kv_used > stats["kv_peak_bytes"]:
                stats["kv_peak_bytes"] = kv_used
            if new:
                svc = timed(pcache, prefill_service, len(new), max(pbucket[i] for i in new))
                stats["busy_s"] += svc
                stats["prefill_iterations"] += 1
                yield timeout(svc)
                t = env.now
                for i in new:
                    first_token[i] = t
                    if olist[i] <= 1:
                        finish[i] = t
                        kv_used -= need[i]
                    else:
                        off = plist[i] - step
                        offs.append(off)
                        heapq.heappush(ends, (step + olist[i] - 2, i, off))
                continue
            if offs:
                b = len(offs)
                kv_len = max(offs) + step
                svc = timed(dcache, decode_service, b, pad_to(kv_len, kvb))
                stats["busy_s"] += svc
                stats["decode_steps"] += 1
                stats["decode_batch_sum"] += b
                if b > stats["decode_batch_max"]:
                    stats["decode_batch_max"] = b
                yield timeout(svc)
                t = env.now
                while ends and ends[0][0] <= step:
                    _, i, off = heapq.heappop(ends)
                    finish[i] = t
                    kv_used -= need[i]
                    offs.remove(off)
                step += 1
                continue
            if head[0] >= n:
                return
            yield timeout(max(arr[head[0]] - now, 0.0))

    for _ in range(cfg.instances):
        env.process(instance())
    env.run()
    return LlmTrace(arrivals=arr_np, prompt=p_np, output=o_np, admitted=np.asarray(admitted),
                    first_token=np.asarray(first_token),
                    finish=np.asarray(finish), rejected=np.asarray(sorted(rejected), dtype=np.int64),
                    instances=cfg.instances, prefill_cache_entries=len(pcache), decode_cache_entries=len(dcache),
                    throttled=throttle.hits if throttle is not None else 0, **stats)

