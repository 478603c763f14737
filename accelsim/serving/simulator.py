"""Runtime scheduling and SLA: a discrete-event (simpy) serving model over accelsim's service times.

The last stage of the path model graph -> lowering -> kernels -> **runtime scheduling -> SLA outcome**.
Library code: nothing here prints or exits; user mistakes raise :class:`~accelsim.errors.AccelsimError`.

Model
-----
- **Arrivals** (open loop, seeded): Poisson at ``rate`` requests/s over ``duration_s`` simulated seconds
  (or exactly ``requests`` arrivals), or replayed from a CSV trace (``arrival_s`` plus a size column;
  optionally time-scaled to a target rate). Request sizes (``seq`` tokens, prompt/output tokens) come
  from a distribution spec (``fixed``, ``uniform``, ``choice``) or the trace. Arrivals are drawn up
  front as arrays (unit-rate exponentials divided by the rate), so every rate sees the same sample
  path scaled in time: common random numbers, which keep ``find_max_rate``'s bisection monotone.
- **Batching** (one-shot models, e.g. BERT): a Triton-style dynamic batcher. When an instance is free
  it takes the oldest waiting requests as a batch once ``max_batch`` have arrived or the oldest has
  waited ``max_wait_ms``, whichever comes first (immediately, if either already holds). ``instances``
  identical accelerator instances are simpy processes pulling from the one FIFO queue.
- **Service time** of a batch = ``run(load_workload(path, {batch: b, seq: s}), hw, sparsity)
  .total_cycles / (clock_ghz * 1e9)`` seconds, cached per distinct (batch, size) for each sparsity
  (one :class:`SimulatedService` per sparsity), so a long run simulates each shape once. Sizes are
  padded up to a multiple of ``size_bucket`` (the batch runs at its longest padded request, as padded
  batches do), and batch sizes optionally up to a power of two (``batch_bucket: pow2``, as servers
  with captured CUDA graphs / optimisation profiles do), which keeps the cache small.
- **Variability** (named, seeded, OFF by default; every result says whether it was on):
  ``jitter`` multiplies each batch's service time by a mean-1 lognormal factor
  ``exp(sigma*Z - sigma^2/2)``; ``throttle`` has clock-throttle episodes arriving as a Poisson process
  (``episodes_per_s``), each ``duration_ms`` long, during which the clock runs at ``clock_factor`` of
  nominal (a batch that *starts* inside an episode takes ``1/clock_factor`` longer).
- **LLM workloads** (a prefill + a decode workload): iteration-level (continuous) batching per
  instance, as Orca / vLLM do. Each iteration either prefills newly admitted requests (FIFO; at most
  ``max_prefill_tokens`` padded prompt tokens) or runs one decode step for every active request
  (the step is simulated at the batch's longest context, ``kv_len`` padded to ``kv_bucket``). A
  request joins when the decode batch has room (``max_batch``) *and* its whole KV cache
  ((prompt + output - 1) tokens) fits the instance's KV budget
  ``dram.capacity_bytes * memory_utilization - weights as deployed`` (2:4 weights are smaller, so
  sparse leaves more room for KV). Time to first token = end of its prefill - arrival; time per
  output token = (finish - first token) / (output tokens - 1).

Simulation cost: one simpy timeout per batch (one-shot) or per iteration (LLM); per-request state is
preallocated arrays, and latencies are computed vectorised at the end (``np.repeat`` of batch ends).

Outputs (plain dicts; times in ms, rates in requests/s)
------------------------------------------------------
``ServingModel.run``: ``latency_ms`` {mean, p50, p95, p99, max} (arrival -> batch end; percentiles by
linear interpolation), ``queueing_delay_ms`` (arrival -> batch start / admission, including the wait for
a batch to fill), ``throughput_rps`` (completed / (last completion - first arrival)), ``utilisation``
(share of instance-time spent serving batches, not MAC utilisation), ``batch_size`` or ``decode_batch``,
``sla`` {metric, budget_ms, p99_ms, attainment (share of requests within budget), holds},
``variability`` {enabled, per-source settings and how many batches were throttled}, ``service_cache``
{shapes used, accelsim simulations so far}, ``cdf`` (a quantile table for plots), the arrival and size
descriptions and the runtime config. LLM runs add ``ttft_ms``, ``tpot_ms``, ``output_tokens_per_s`` and
``kv_cache`` {bytes_per_token, budget_bytes, cap_requests, peak_bytes, blocked_admissions, limits_batch}.
:func:`find_max_rate` gives "capacity at SLA"; :func:`quality_at_budget` quality at equal latency budget;
:func:`serve_command` all of it for dense and sparse side by side.

Intended CLI (:func:`serve_command` is wired in ``accelsim/cli/serve.py``)::

    accelsim serve --hw HW.yaml --workload WL.yaml --rate R [--sparsity 2:4] [--duration S] [--seed N]
                   [--max-batch B] [--max-wait-ms W] [--instances K] [--set KEY=VALUE]... [--hw-set P=V]...
                   [--sizes fixed:128|uniform:64:512|choice:128,256] [--trace FILE.csv]
                   [--decode-workload WL.yaml --prompt-tokens SPEC --output-tokens SPEC]
                   [--runtime-config FILE.yaml] [--format table|json] [-o DIR]
    accelsim serve ... --sla-p99 BUDGET_MS --find-max-rate      # capacity at SLA, dense vs sparse
    accelsim serve ... --variants examples/variants-bert.yaml --budget-ms B   # quality at equal budget
"""

from __future__ import annotations

import bisect
import csv
import heapq
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import simpy
from pydantic import Field

from accelsim.config import schema as configio
from accelsim.errors import AccelsimError, ConfigError
from accelsim.formats.nm import normalize_pattern
from accelsim.hardware.model import Hardware, PosInt, Strict, load_hardware
from accelsim.results import dumps_finite
from accelsim.serving.limits import (
    MAX_BATCH,
    MAX_INSTANCES,
    MAX_WAIT_MS,
    check_serve_args,
    check_sizes,
    load_assessment,
)
from accelsim.simulation import Simulator, run
from accelsim.workloads.model import Workload, workload_from_dict

__all__ = [
    "ServingError", "JitterSource", "ThrottleSource", "Variability", "RuntimeConfig", "SimulatedService",
    "ServingModel", "BatchTrace", "LlmTrace", "parse_size_spec", "sample_sizes", "poisson_arrivals", "read_trace",
    "simulate_batching", "simulate_llm", "batch_means_ci", "find_max_rate", "latency_vs_load", "compare",
    "load_variants", "quality_at_budget", "serve_command",
]

SEED_STREAMS = {"arrivals": 0, "sizes": 1, "output_tokens": 2, "service_dist": 3, "jitter": 4, "throttle": 5}
CDF_QUANTILES = tuple(sorted({*(i / 200 for i in range(201)), 0.995, 0.999, 0.9999}))
DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_REQUESTS_PER_EVAL = 20_000


class ServingError(AccelsimError):
    """A serving-model input is invalid (bad size spec, trace, rate, variants file)."""


# ----------------------------------------------------------------------------------------------- config

class JitterSource(Strict):
    """Service-time jitter: each batch's time x exp(sigma*Z - sigma^2/2), Z ~ N(0, 1) (mean factor 1)."""

    enabled: bool = False
    sigma: float = Field(0.05, ge=0.0, description="Lognormal sigma of the per-batch service-time factor.")


class ThrottleSource(Strict):
    """Clock-throttle episodes: Poisson arrivals of episodes during which the clock is slowed."""

    enabled: bool = False
    episodes_per_s: float = Field(0.2, gt=0.0, description="Mean episode starts per simulated second.")
    duration_ms: float = Field(100.0, gt=0.0, description="Length of one episode.")
    clock_factor: float = Field(0.7, gt=0.0, le=1.0, description="Clock during an episode, as a share of "
                                "nominal: a batch starting inside one takes 1/clock_factor as long.")


class Variability(Strict):
    """Named, seeded variability sources; all off by default."""

    jitter: JitterSource = JitterSource()
    throttle: ThrottleSource = ThrottleSource()

    @property
    def any_enabled(self) -> bool:
        return self.jitter.enabled or self.throttle.enabled


Instances = Annotated[int, Field(gt=0, le=MAX_INSTANCES)]
BatchSize = Annotated[int, Field(gt=0, le=MAX_BATCH)]


class RuntimeConfig(Strict):
    """Serving-model settings: batching, instances, shape buckets, LLM limits, variability.

    A plain, dict-able value (``to_dict`` / ``from_dict``; unknown keys rejected), so it can later move
    into the hardware schema unchanged.
    """

    instances: Instances = Field(1, description="Identical accelerator instances serving one FIFO "
                              "queue.")
    max_batch: BatchSize = Field(8, description="Largest batch (one-shot) / decode batch (LLM).")
    max_wait_ms: float = Field(2.0, ge=0.0, le=MAX_WAIT_MS, allow_inf_nan=False,
                               description="Longest the oldest request waits for a batch to fill.")
    size_bucket: PosInt = Field(64, description="Request sizes (seq, prompt tokens) are padded up to a "
                                "multiple of this for the service-time lookup (1 = exact).")
    batch_bucket: Literal["exact", "pow2"] = Field("exact", description="Batch sizes for the service-time "
                                                   "lookup: exact, or padded up to a power of two (<= max_batch).")
    kv_bucket: PosInt = Field(128, description="LLM: decode steps run at the batch's longest context padded "
                              "up to a multiple of this.")
    max_prefill_tokens: PosInt = Field(8192, description="LLM: padded prompt tokens per prefill iteration "
                                       "(at least one request).")
    memory_utilization: float = Field(0.9, gt=0.0, le=1.0, description="LLM: share of dram.capacity_bytes "
                                      "usable for weights + KV cache (the rest: activations, workspace).")
    variability: Variability = Variability()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, source: str = "<runtime config>") -> RuntimeConfig:
        """Validate plain data (missing keys take their defaults)."""
        return configio.validate(cls, dict(data or {}), source)

    def replace(self, **changes: Any) -> RuntimeConfig:
        """A copy with some fields changed (validated)."""
        return RuntimeConfig.from_dict({**self.to_dict(), **changes})


# ----------------------------------------------------------------------------------------------- arrivals, sizes

def parse_size_spec(spec: Any) -> dict[str, Any]:
    """Normalise a size distribution: 128, "fixed:128", "uniform:32:512", "choice:128,256[@w1,w2]" or a dict."""
    given = spec
    if isinstance(spec, bool):
        raise ServingError(f"size spec: expected a number or a distribution, got {spec!r}")
    if isinstance(spec, int | np.integer):
        spec = {"kind": "fixed", "value": int(spec)}
    elif isinstance(spec, str):
        text = spec.strip()
        kind, _, rest = text.partition(":")
        kind = kind.strip().lower()
        try:
            if kind.isdigit() and not rest:
                spec = {"kind": "fixed", "value": int(kind)}
            elif kind == "fixed":
                spec = {"kind": "fixed", "value": int(rest)}
            elif kind == "uniform":
                lo, _, hi = rest.partition(":")
                spec = {"kind": "uniform", "low": int(lo), "high": int(hi)}
            elif kind == "choice":
                vals, _, weights = rest.partition("@")
                spec = {"kind": "choice", "values": [int(v) for v in vals.split(",")]}
                if weights:
                    spec["weights"] = [float(w) for w in weights.split(",")]
            else:
                raise ValueError
        except ValueError:
            raise ServingError(f"size spec {text!r}: expected N, fixed:N, uniform:LOW:HIGH or "
                                "choice:A,B,C[@wA,wB,wC]") from None
    if not isinstance(spec, Mapping) or spec.get("kind") not in ("fixed", "uniform", "choice"):
        raise ServingError(f"size spec {spec!r}: expected kind fixed, uniform or choice")
    out = dict(spec)
    if out["kind"] == "fixed":
        if int(out.get("value", 0)) < 1:
            raise ServingError(f"size spec {spec!r}: value must be >= 1")
        res: dict[str, Any] = {"kind": "fixed", "value": int(out["value"])}
        check_sizes(res, given)
        return res
    if out["kind"] == "uniform":
        lo, hi = int(out.get("low", 0)), int(out.get("high", 0))
        if not 1 <= lo <= hi:
            raise ServingError(f"size spec {spec!r}: need 1 <= low <= high")
        res = {"kind": "uniform", "low": lo, "high": hi}
        check_sizes(res, given)
        return res
    values = [int(v) for v in out.get("values", [])]
    if not values or min(values) < 1:
        raise ServingError(f"size spec {spec!r}: choice needs values >= 1")
    res = {"kind": "choice", "values": values}
    if out.get("weights") is not None:
        w = [float(x) for x in out["weights"]]
        if len(w) != len(values) or min(w) < 0 or sum(w) <= 0:
            raise ServingError(f"size spec {spec!r}: weights must match values, be >= 0 and not all 0")
        res["weights"] = [x / sum(w) for x in w]
    check_sizes(res, given)
    return res


def sample_sizes(spec: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` integer sizes from a size spec (inclusive bounds for uniform)."""
    s = parse_size_spec(spec)
    if s["kind"] == "fixed":
        return np.full(n, s["value"], dtype=np.int64)
    if s["kind"] == "uniform":
        return rng.integers(s["low"], s["high"] + 1, size=n, dtype=np.int64)
    return rng.choice(np.asarray(s["values"], dtype=np.int64), size=n, p=s.get("weights"))


def _unit_arrivals(n: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival epochs of a unit-rate Poisson process (n of them)."""
    return np.cumsum(rng.standard_exponential(n))


def poisson_arrivals(rate: float, rng: np.random.Generator, *, duration_s: float | None = None,
                     requests: int | None = None) -> np.ndarray:
    """Poisson arrival times (s): exactly ``requests`` of them, or all before ``duration_s``."""
    if not rate > 0 or not math.isfinite(rate):
        raise ServingError(f"rate must be > 0 requests/s, got {rate!r}")
    if requests is not None:
        if requests < 1:
            raise ServingError(f"requests must be >= 1, got {requests}")
        return _unit_arrivals(int(requests), rng) / rate
    if duration_s is None or not duration_s > 0:
        raise ServingError(f"duration must be > 0 simulated seconds, got {duration_s!r}")
    mean = rate * duration_s
    chunk = max(1024, int(mean + 8 * math.sqrt(mean) + 16))
    out = _unit_arrivals(chunk, rng)
    while out[-1] < mean:  # rare: draw more of the same stream
        out = np.concatenate([out, out[-1] + _unit_arrivals(chunk, rng)])
    out = out[: int(np.searchsorted(out, mean, side="left"))] / rate
    return out


def read_trace(path: str | Path) -> dict[str, np.ndarray]:
    """Read a CSV trace: a header row with ``arrival_s`` (non-decreasing seconds) and numeric size columns."""
    src = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise ConfigError(src, None, "file not found") from None
    except OSError as exc:
        raise ConfigError(src, None, f"cannot read: {exc.strerror}") from None
    if not rows or "arrival_s" not in [h.strip() for h in rows[0]]:
        raise ConfigError(src, None, "a trace needs a header row with an 'arrival_s' column")
    head = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if r and any(c.strip() for c in r)]
    if not body:
        raise ConfigError(src, None, "trace has no rows")
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(head):
        try:
            cols[name] = np.asarray([float(r[j]) for r in body], dtype=np.float64)
        except (ValueError, IndexError):
            if name == "arrival_s":
                raise ConfigError(src, "arrival_s", "every row needs a number here") from None
    arr = cols["arrival_s"]
    if arr[0] < 0 or np.any(np.diff(arr) < 0) or not np.all(np.isfinite(arr)):
        raise ConfigError(src, "arrival_s", "arrival times must be finite, >= 0 and non-decreasing")
    return cols


def _trace_column(cols: Mapping[str, np.ndarray], names: Sequence[str], src: str) -> np.ndarray | None:
    for name in names:
        if name in cols:
            col = cols[name]
            if np.any(col < 1) or np.any(col != np.round(col)):
                raise ConfigError(src, name, "sizes must be integers >= 1")
            return col.astype(np.int64)
    return None


# ----------------------------------------------------------------------------------------------- helpers

def _bucket(value: int, step: int) -> int:
    return -(-int(value) // step) * step


def _batch_key(b: int, mode: str, max_batch: int) -> int:
    if mode == "exact" or b <= 1:
        return b
    return min(1 << (b - 1).bit_length(), max(max_batch, b))


def _factor_stream(kind: Any, rng: np.random.Generator, chunk: int = 65_536):
    """Endless mean-1 multiplicative factors: 'exponential', 'lognormal:<sigma>' or a callable(rng, n)."""
    while True:
        if callable(kind):
            block = np.asarray(kind(rng, chunk), dtype=np.float64)
        elif kind == "exponential":
            block = rng.standard_exponential(chunk)
        elif isinstance(kind, tuple) and kind[0] == "lognormal":
            sigma = kind[1]
            block = np.exp(sigma * rng.standard_normal(chunk) - 0.5 * sigma * sigma)
        else:  # pragma: no cover - guarded by _factors
            raise ValueError(kind)
        yield from block.tolist()


def _factors(service_dist: Any, config: RuntimeConfig, seeds: list[np.random.SeedSequence]):
    """One per-batch factor iterator combining the service distribution and jitter, or None."""
    streams = []
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


class _Throttle:
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
        if t >= self.horizon:
            self._extend(t)
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and t < self.starts[i] + self.dur:
            self.hits += 1
            return self.slow
        return 1.0


def _seeds(seed: int) -> list[np.random.SeedSequence]:
    return np.random.SeedSequence(int(seed)).spawn(len(SEED_STREAMS))


def _stats_ms(x_s: np.ndarray) -> dict[str, float]:
    if x_s.size == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "p99": math.nan, "max": math.nan}
    ms = x_s * 1e3
    p50, p95, p99 = np.percentile(ms, [50, 95, 99]).tolist()
    return {"mean": round(float(ms.mean()), 6), "p50": round(p50, 6), "p95": round(p95, 6),
            "p99": round(p99, 6), "max": round(float(ms.max()), 6)}


def _cdf(x_s: np.ndarray) -> dict[str, list[float]]:
    if x_s.size == 0:
        return {"q": [], "ms": []}
    return {"q": list(CDF_QUANTILES), "ms": [round(v, 6) for v in (np.quantile(x_s, CDF_QUANTILES) * 1e3).tolist()]}


def batch_means_ci(x: np.ndarray, batches: int = 30, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and confidence half-width of a correlated series by non-overlapping batch means."""
    x = np.asarray(x, dtype=np.float64)
    size = x.size // batches
    if batches < 2 or size < 1:
        raise ValueError(f"need at least {batches} samples for {batches} batch means")
    means = x[: size * batches].reshape(batches, size).mean(axis=1)
    return float(means.mean()), _t_quantile(0.5 + confidence / 2, batches - 1) * float(means.std(ddof=1)) / \
        math.sqrt(batches)


def _t_quantile(p: float, df: int) -> float:
    """Student-t quantile (Cornish-Fisher expansion around the normal; < 1e-3 relative error for df >= 5)."""
    z = statistics.NormalDist().inv_cdf(p)
    v = float(df)
    return (z + (z ** 3 + z) / (4 * v) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * v ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * v ** 3)
            + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * v ** 4))


# ----------------------------------------------------------------------------------------------- one-shot batching

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
        size_const = _bucket(int(sizes), cfg.size_bucket)
    elif sizes is not None:
        padded = -(-np.asarray(sizes, dtype=np.int64) // cfg.size_bucket) * cfg.size_bucket
        if padded.size != n:
            raise ServingError(f"{padded.size} sizes for {n} arrivals")
        if n and int(padded.min()) == int(padded.max()):
            size_const = int(padded[0])
        else:
            size_list = padded.tolist()
    seeds = _seeds(seed)
    factors = _factors(service_dist, cfg, seeds)
    throttle = (_Throttle(cfg.variability.throttle, np.random.default_rng(seeds[SEED_STREAMS["throttle"]]))
                if cfg.variability.throttle.enabled else None)
    cache = {} if cache is None else cache
    starts: list[float] = []
    ends: list[float] = []
    counts: list[int] = []
    services: list[float] = []
    head = [0]
    busy = [0.0]
    env = simpy.Environment()

    def instance():
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
            key = (cnt if mode == "exact" else _batch_key(cnt, mode, big_b), size)
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


# ----------------------------------------------------------------------------------------------- LLM

class LlmTrace:
    """What an LLM run did: per-request arrival, first token and finish times (s), plus step statistics."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

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
    seeds = _seeds(seed)
    factors = _factors(None, cfg, seeds)
    throttle = (_Throttle(cfg.variability.throttle, np.random.default_rng(seeds[SEED_STREAMS["throttle"]]))
                if cfg.variability.throttle.enabled else None)
    admitted = [math.nan] * n
    first_token = [math.nan] * n
    finish = [math.nan] * n
    rejected: list[int] = []
    head = [0]
    stats = {"busy_s": 0.0, "prefill_iterations": 0, "decode_steps": 0, "decode_batch_sum": 0,
             "decode_batch_max": 0, "kv_blocked": 0, "kv_peak_bytes": 0.0}
    pcache: dict[tuple[int, int], float] = {}
    dcache: dict[tuple[int, int], float] = {}
    env = simpy.Environment()

    def timed(cache: dict, fn: Callable[[int, int], float], b: int, s: int) -> float:
        key = (b if mode == "exact" else _batch_key(b, mode, big_b), s)
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

    def instance():
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
                svc = timed(dcache, decode_service, b, _bucket(kv_len, kvb))
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


# ----------------------------------------------------------------------------------------------- accelsim service

class SimulatedService:
    """Batch service time (s) from accelsim's simulation of the lowered plan; cached per (batch, size).

    ``service(b, s)`` = ``run(workload at {batch: b, size_param: s, **set_params}, hw, sparsity)
    .total_cycles / (clock_ghz * 1e9)``. One object per (workload, sparsity); share ``simulator``
    across objects on the same hardware to reuse kernel simulations.
    """

    def __init__(self, hw: Hardware, workload: str | Path, sparsity: str | None = None, *,
                 size_param: str | None = "auto", set_params: Mapping[str, Any] | None = None,
                 policy: str = "sparse-if-supported", simulator: Simulator | None = None,
                 hw_source: str = "<hardware>") -> None:
        self.hw = hw
        self.source = str(workload)
        data, _ = configio.read_yaml(workload)
        if "layers" not in data:
            raise ConfigError(self.source, None, "expected a workload file (with 'layers')")
        if "quality" not in Workload.model_fields:  # a serving-only key until the schema has one
            data = {k: v for k, v in data.items() if k != "quality"}
        self.data = data
        self.defaults = dict(self.data.get("params") or {})
        self.sparsity = _pattern(sparsity)
        self.set_params = dict(set_params or {})
        if size_param == "auto":
            size_param = next((p for p in ("seq", "kv_len") if p in self.defaults), None)
        if size_param is not None and size_param not in self.defaults:
            raise ConfigError(self.source, "params", f"has no parameter {size_param!r} to vary per request "
                              f"(parameters: {', '.join(self.defaults) or 'none'})")
        self.size_param = size_param
        # A workload without a 'batch' parameter (e.g. a GEMM list, resnet18.yaml) is one request's work:
        # a batch of b such requests runs them back to back (b x one request's time).
        self.batch_param = "batch" if "batch" in self.defaults else None
        self.policy = policy
        self.sim = simulator or Simulator(hw, hw_source)
        self.name = str(self.data.get("name", Path(self.source).stem))
        self._cache: dict[tuple[int, Any], float] = {}
        self._footprints: dict[tuple[int, Any], dict[str, Any]] = {}
        self.simulations = 0

    @property
    def default_size(self) -> int | None:
        if self.size_param is None:
            return None
        return int(self.set_params.get(self.size_param, self.defaults[self.size_param]))

    def params(self, batch: int, size: Any) -> dict[str, Any]:
        out = dict(self.set_params)
        if self.batch_param is not None:
            out[self.batch_param] = int(batch)
        if self.size_param is not None and size is not None:
            out[self.size_param] = int(size)
        return out

    def workload(self, batch: int, size: Any):
        return workload_from_dict(self.data, self.source, self.params(batch, size))

    def __call__(self, batch: int, size: Any = None) -> float:
        if self.batch_param is None and batch != 1:
            return int(batch) * self(1, size)
        key = (int(batch), None if size is None else int(size))
        hit = self._cache.get(key)
        if hit is None:
            res = run(self.workload(batch, size), self.hw, self.sparsity, policy=self.policy, simulator=self.sim)
            self.simulations += 1
            hit = res.total_cycles / (self.hw.clock_ghz * 1e9)
            self._cache[key] = hit
            self._footprints[key] = res.footprint
        return hit

    def footprint(self, batch: int = 1, size: Any = None) -> dict[str, Any]:
        """The run's memory footprint (weights as deployed, activations, KV cache) at this shape."""
        key = (int(batch) if self.batch_param is not None else 1, None if size is None else int(size))
        if key not in self._footprints:
            self(batch, size)
        return self._footprints[key]

    @property
    def cache_entries(self) -> int:
        return len(self._cache)


def _pattern(value: Any) -> str | None:
    """Canonical pattern text ('2:4', 'dense'), None for None; a bad pattern is a ServingError."""
    if value is None:
        return None
    try:
        return normalize_pattern(value)
    except ValueError as exc:
        raise ServingError(f"sparsity: {exc}") from None


def _hw(hw: Hardware | str | Path, hw_set: Sequence[str] | None = None) -> tuple[Hardware, str]:
    if isinstance(hw, Hardware):
        if hw_set:
            raise ServingError("hw_set needs a hardware path, not a loaded Hardware")
        return hw, hw.name
    return load_hardware(hw, list(hw_set or [])), str(hw)


class ServingModel:
    """One deployment: a service-time model (+ decode model and KV budget for LLMs) and a RuntimeConfig.

    Build it from files with :meth:`from_files`, or from any ``service(batch, size) -> seconds`` callable
    (e.g. a synthetic one for queueing checks). :meth:`run` simulates one arrival stream and returns a
    plain dict.
    """

    def __init__(self, service: Callable[[int, Any], float], config: RuntimeConfig | Mapping[str, Any] | None = None,
                 *, name: str = "model", sparsity: str | None = None, default_size: int | None = None,
                 service_dist: Any = "deterministic", decode_service: Callable[[int, int], float] | None = None,
                 kv_bytes_per_token: float = 0.0, kv_budget_bytes: float | None = None,
                 default_output_tokens: int = DEFAULT_OUTPUT_TOKENS, info: Mapping[str, Any] | None = None) -> None:
        self.service = service
        self.config = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_dict(config)
        self.name = name
        self.sparsity = sparsity
        self.default_size = default_size
        self.service_dist = service_dist
        self.decode_service = decode_service
        self.kv_bytes_per_token = float(kv_bytes_per_token)
        self.kv_budget_bytes = kv_budget_bytes
        self.default_output_tokens = default_output_tokens
        self.info = dict(info or {})

    @property
    def is_llm(self) -> bool:
        return self.decode_service is not None

    @classmethod
    def from_files(cls, hw: Hardware | str | Path, workload: str | Path, sparsity: str | None = None, *,
                   config: RuntimeConfig | Mapping[str, Any] | None = None, set_params: Mapping[str, Any] | None = None,
                   size_param: str | None = "auto", decode_workload: str | Path | None = None,
                   policy: str = "sparse-if-supported", simulator: Simulator | None = None,
                   hw_set: Sequence[str] | None = None) -> ServingModel:
        """Service times from accelsim runs of ``workload`` (and ``decode_workload``: LLM mode) on ``hw``.

        ``sparsity`` None keeps the workload's own plan; ``set_params`` go to whichever workload declares
        them (prefill ``seq``, decode ``kv_len`` are set per request; other keys, e.g. model size knobs,
        to both).
        """
        hw_obj, hw_src = _hw(hw, hw_set)
        sim = simulator or Simulator(hw_obj, hw_src)
        sp = _pattern(sparsity)
        sets = dict(set_params or {})
        if decode_workload is None:
            svc = SimulatedService(hw_obj, workload, sp, size_param=size_param, set_params=sets, policy=policy,
                                   simulator=sim, hw_source=hw_src)
        else:
            svc = SimulatedService(hw_obj, workload, sp, size_param="seq", policy=policy, simulator=sim,
                                   hw_source=hw_src)
            dec = SimulatedService(hw_obj, decode_workload, sp, size_param="kv_len", policy=policy, simulator=sim,
                                   hw_source=hw_src)
            unknown = sorted(set(sets) - set(svc.defaults) - set(dec.defaults))
            if unknown:
                raise ConfigError(str(workload), unknown[0], "--set names a parameter neither the prefill nor the "
                                  f"decode workload has ({', '.join(sorted({*svc.defaults, *dec.defaults}))})")
            svc.set_params = {k: v for k, v in sets.items() if k in svc.defaults}
            dec.set_params = {k: v for k, v in sets.items() if k in dec.defaults}
        label = sp or _pattern(svc.data.get("sparsity")) or "dense"
        info: dict[str, Any] = {"hardware": hw_obj.name, "workload": svc.name, "size_param": svc.size_param,
                                "set": sets, "policy": policy, "clock_ghz": hw_obj.clock_ghz}
        if decode_workload is None:
            if svc.batch_param is None:
                cfg = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_dict(config)
                if cfg.max_batch != 1:
                    config = cfg.replace(max_batch=1)
                info["note"] = (f"{svc.name} has no 'batch' parameter: requests are served one at a time "
                                "(max_batch 1)")
            return cls(svc, config, name=svc.name, sparsity=label, default_size=svc.default_size, info=info)
        kv_per_token = _kv_bytes_per_token(dec)
        fp = dec.footprint(1, dec.default_size)
        weights = fp["weights_deployed_bytes"]
        cfg = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_dict(config)
        cap = hw_obj.dram.capacity_bytes
        budget = None if cap is None else cap * cfg.memory_utilization - weights
        if budget is not None and budget <= 0:
            raise ServingError(f"{hw_obj.name}: weights as deployed ({weights:,} bytes) leave no room for a KV "
                               f"cache in dram.capacity_bytes {cap:,} x memory_utilization "
                               f"{cfg.memory_utilization}")
        info.update({"decode_workload": dec.name, "weights_deployed_bytes": weights,
                     "kv_bytes_per_token": kv_per_token, "dram_capacity_bytes": cap,
                     "kv_budget_bytes": None if budget is None else int(budget)})
        return cls(svc, cfg, name=svc.name, sparsity=label, default_size=svc.default_size, decode_service=dec,
                   kv_bytes_per_token=kv_per_token, kv_budget_bytes=budget, info=info)

    # -- arrivals
    def _arrivals(self, rate: float | None, duration_s: float | None, requests: int | None,
                  trace: str | Path | Mapping[str, np.ndarray] | None, seed: int) -> tuple[np.ndarray, dict, Any]:
        rng = np.random.default_rng(_seeds(seed)[SEED_STREAMS["arrivals"]])
        if trace is None:
            if rate is None:
                raise ServingError("give an arrival rate (requests/s) or a trace")
            arr = poisson_arrivals(rate, rng, duration_s=duration_s if requests is None else None, requests=requests)
            desc = {"process": "poisson", "rate_rps": rate, "seed": seed}
            desc["requests" if requests is not None else "duration_s"] = requests if requests is not None \
                else duration_s
            return arr, desc, None
        cols = read_trace(trace) if not isinstance(trace, Mapping) else {k: np.asarray(v) for k, v in trace.items()}
        arr = np.asarray(cols["arrival_s"], dtype=np.float64)
        if requests is not None:
            arr = arr[:requests]
        native = (arr.size - 1) / (arr[-1] - arr[0]) if arr.size > 1 and arr[-1] > arr[0] else None
        scale = 1.0
        if rate is not None:
            if native is None:
                raise ServingError("cannot rescale a trace whose arrivals all share one time")
            scale = native / rate
            arr = arr * scale
        desc = {"process": "trace", "trace": Path(trace).name if not isinstance(trace, Mapping) else "<columns>",
                "trace_rate_rps": None if native is None else round(native, 6), "time_scale": round(scale, 9),
                "rate_rps": None if native is None else round(native / scale, 6), "seed": seed}
        return arr, desc, cols

    def run(self, rate: float | None = None, *, duration_s: float | None = 10.0, requests: int | None = None,
            seed: int = 0, sizes: Any = None, trace: str | Path | Mapping[str, np.ndarray] | None = None,
            prompt_tokens: Any = None, output_tokens: Any = None, sla_p99_ms: float | None = None,
            sla_metric: str | None = None, warmup_s: float = 0.0) -> dict[str, Any]:
        """Simulate one seeded arrival stream; return latency percentiles (ms), throughput, utilisation, SLA."""
        arr, arrivals_desc, cols = self._arrivals(rate, duration_s, requests, trace, seed)
        n = int(arr.size)
        if n == 0:
            raise ServingError("no requests arrive in the given duration; raise the rate or the duration")
        seeds = _seeds(seed)
        size_rng = np.random.default_rng(seeds[SEED_STREAMS["sizes"]])
        src = str(trace) if trace is not None and not isinstance(trace, Mapping) else "<trace>"
        if self.is_llm:
            return self._run_llm(arr, arrivals_desc, cols, src, seed, seeds, size_rng, prompt_tokens, output_tokens,
                                 sla_p99_ms, sla_metric or "ttft", warmup_s)
        size_arr: Any
        size_desc: Any
        size_param = self.info.get("size_param", "seq")
        if size_param is None and sizes is not None:
            raise ServingError(f"{self.name} has no per-request size parameter (seq / kv_len): drop the sizes")
        if cols is not None and size_param is not None and \
                (col := _trace_column(cols, [size_param, "size", "tokens", "seq"], src)) is not None:
            size_arr, size_desc = col[:n], "trace"
        elif sizes is not None:
            size_desc = parse_size_spec(sizes)
            size_arr = sample_sizes(size_desc, n, size_rng)
        else:
            size_arr = self.default_size
            size_desc = None if size_arr is None else {"kind": "fixed", "value": size_arr}
        shapes: dict[tuple[int, Any], float] = {}
        tr = simulate_batching(arr, size_arr, self.service, self.config, seed=seed, service_dist=self.service_dist,
                               cache=shapes)
        keep = arr >= warmup_s
        lat = tr.latency[keep]
        wait = tr.waiting[keep]
        makespan = tr.makespan
        metric = sla_metric or "latency"
        if metric != "latency":
            raise ServingError(f"sla_metric {metric!r}: one-shot models have only 'latency'")
        out = self._header(arrivals_desc, n, int(keep.sum()), size_desc)
        out.update({
            "latency_ms": _stats_ms(lat),
            "queueing_delay_ms": _stats_ms(wait),
            "batch_size": {"mean": round(float(tr.batch_count.mean()), 6), "max": int(tr.batch_count.max()),
                           "batches": int(tr.batch_count.size)},
            "service_ms": {"mean_per_batch": round(float(tr.batch_service.mean()) * 1e3, 6)},
            "throughput_rps": round(n / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            "utilisation": round(tr.busy_s / (tr.instances * makespan), 6) if makespan > 0 else 0.0,
            "load": self._load(arrivals_desc, _typical(size_arr, self.config.max_batch), shapes=shapes),
            "makespan_s": round(makespan, 9),
            "sla": _sla(lat, sla_p99_ms, "latency"),
            "variability": self._variability(tr.throttled_batches, int(tr.batch_count.size)),
            "service_cache": {"shapes": tr.cache_entries,
                              "simulations": getattr(self.service, "simulations", None)},
            "cdf": {"latency": _cdf(lat)},
        })
        return out

    def _header(self, arrivals_desc: dict, n: int, measured: int, size_desc: Any) -> dict[str, Any]:
        return {"mode": "llm" if self.is_llm else "batch", "name": self.name, "sparsity": self.sparsity,
                **{k: self.info[k] for k in ("hardware", "workload", "decode_workload") if k in self.info},
                "arrivals": arrivals_desc, "sizes": size_desc, "requests": n, "measured": measured,
                "config": self.config.to_dict()}

    def _variability(self, throttled: int, units: int) -> dict[str, Any]:
        v = self.config.variability
        return {"enabled": v.any_enabled, "jitter": v.jitter.model_dump(mode="json"),
                "throttle": {**v.throttle.model_dump(mode="json"), "throttled": throttled, "of": units},
                "service_dist": self.service_dist if isinstance(self.service_dist, str) else "custom"}

    def _run_llm(self, arr: np.ndarray, arrivals_desc: dict, cols: Any, src: str, seed: int,
                 seeds: list[np.random.SeedSequence], size_rng: np.random.Generator, prompt_tokens: Any,
                 output_tokens: Any, sla_p99_ms: float | None, metric: str, warmup_s: float) -> dict[str, Any]:
        n = int(arr.size)
        out_rng = np.random.default_rng(seeds[SEED_STREAMS["output_tokens"]])
        prompt = _trace_column(cols, ["prompt_tokens", "seq", "tokens", "size"], src) if cols is not None else None
        output = _trace_column(cols, ["output_tokens"], src) if cols is not None else None
        pdesc: Any = "trace"
        odesc: Any = "trace"
        if prompt is None:
            pdesc = parse_size_spec(prompt_tokens if prompt_tokens is not None else self.default_size or 512)
            prompt = sample_sizes(pdesc, n, size_rng)
        if output is None:
            odesc = parse_size_spec(output_tokens if output_tokens is not None else self.default_output_tokens)
            output = sample_sizes(odesc, n, out_rng)
        tr = simulate_llm(arr, prompt[:n], output[:n], self.service, self.decode_service, self.config,
                          kv_bytes_per_token=self.kv_bytes_per_token, kv_budget_bytes=self.kv_budget_bytes, seed=seed)
        done = np.isfinite(tr.finish)
        keep = (arr >= warmup_s) & done
        makespan = tr.makespan
        ttft, lat = tr.ttft[keep], tr.latency[keep]
        multi = tr.output > 1
        tpot = ((tr.finish - tr.first_token) / np.maximum(tr.output - 1, 1))[keep & multi]
        series = {"ttft": ttft, "tpot": tpot, "latency": lat}
        if metric not in series:
            raise ServingError(f"sla_metric {metric!r}: expected ttft, tpot or latency")
        need = (int(np.max(prompt[:n] + output[:n])) - 1) * self.kv_bytes_per_token
        out = self._header(arrivals_desc, n, int(keep.sum()), {"prompt_tokens": pdesc, "output_tokens": odesc})
        tokens = int(tr.output[done].sum())
        out.update({
            "ttft_ms": _stats_ms(ttft), "tpot_ms": _stats_ms(tpot), "latency_ms": _stats_ms(lat),
            "queueing_delay_ms": _stats_ms(tr.waiting[keep]),
            "throughput_rps": round(int(done.sum()) / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            "output_tokens_per_s": round(tokens / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            "utilisation": round(tr.busy_s / (tr.instances * makespan), 6) if makespan > 0 else 0.0,
            "load": self._load(arrivals_desc, _typical(prompt[:n]), _typical(output[:n])),
            "makespan_s": round(makespan, 9),
            "decode_batch": {"mean": round(tr.decode_batch_sum / tr.decode_steps, 6) if tr.decode_steps else 0.0,
                             "max": int(tr.decode_batch_max), "steps": int(tr.decode_steps),
                             "prefill_iterations": int(tr.prefill_iterations)},
            "kv_cache": {"bytes_per_token": self.kv_bytes_per_token,
                         "budget_bytes": None if self.kv_budget_bytes is None else int(self.kv_budget_bytes),
                         "weights_deployed_bytes": self.info.get("weights_deployed_bytes"),
                         "largest_request_bytes": int(need),
                         "cap_requests": (None if self.kv_budget_bytes is None or need <= 0
                                          else max(0, int(self.kv_budget_bytes // need))),
                         "peak_bytes": int(tr.kv_peak_bytes), "blocked_admissions": int(tr.kv_blocked),
                         "limits_batch": bool(self.kv_budget_bytes is not None and need > 0
                                              and self.kv_budget_bytes // need < self.config.max_batch)},
            "rejected": int(tr.rejected.size),
            "sla": _sla(series[metric], sla_p99_ms, metric),
            "variability": self._variability(tr.throttled, int(tr.decode_steps + tr.prefill_iterations)),
            "service_cache": {"shapes": tr.prefill_cache_entries + tr.decode_cache_entries,
                              "simulations": (getattr(self.service, "simulations", 0) or 0)
                              + (getattr(self.decode_service, "simulations", 0) or 0)},
            "cdf": {"ttft": _cdf(ttft), "tpot": _cdf(tpot), "latency": _cdf(lat)},
        })
        return out

    def capacity_rps(self, size: int | None = None, output_tokens: int | None = None, *,
                     shapes: dict[tuple[int, Any], float] | None = None) -> float:
        """Requests/s this deployment sustains at most, for requests of ``size`` (and ``output_tokens``).

        One-shot: full batches (``max_batch``) back to back on every instance. LLM (an estimate): decode
        batches as full as ``max_batch`` and the KV budget allow, each request prefilled alone. Nominal
        clock (variability off). An offered rate above it makes the queue grow without bound. ``shapes``:
        service times a run already has, by (batch, padded size), so no shape is asked for twice.
        """
        cfg = self.config
        if not self.is_llm:
            key = (cfg.max_batch, None if size is None else _bucket(size, cfg.size_bucket))
            svc = (shapes or {}).get(key)
            if svc is None:
                svc = float(self.service(*key))
                if shapes is not None:
                    shapes[key] = svc
            return cfg.instances * cfg.max_batch / svc
        p = int(size or self.default_size or 512)
        o = int(output_tokens or self.default_output_tokens)
        b = cfg.max_batch
        if self.kv_budget_bytes is not None and self.kv_bytes_per_token > 0:
            b = max(1, min(b, int(self.kv_budget_bytes // ((p + o - 1) * self.kv_bytes_per_token))))
        assert self.decode_service is not None
        t = b * float(self.service(1, _bucket(p, cfg.size_bucket)))
        if o > 1:
            t += (o - 1) * float(self.decode_service(b, _bucket(p + o, cfg.kv_bucket)))
        return cfg.instances * b / t

    def _load(self, arrivals_desc: Mapping[str, Any], size: int | None, output_tokens: int | None = None, *,
              shapes: dict[tuple[int, Any], float] | None = None) -> dict[str, Any]:
        basis = ("full batches back to back on every instance, nominal clock" if not self.is_llm else
                 "estimate: full decode batches (max_batch or the KV budget), each request prefilled alone, "
                 "nominal clock")
        try:
            cap: float | None = self.capacity_rps(size, output_tokens, shapes=shapes)
        except AccelsimError as exc:  # e.g. a full batch does not fit the hardware
            cap, basis = None, f"unknown: {exc}"
        return load_assessment(arrivals_desc.get("rate_rps"), cap, basis)

    def rate_guess(self) -> float:
        """A rough sustainable rate (requests/s): full batches back to back on every instance."""
        cfg = self.config
        if self.is_llm:
            size = self.default_size or 512
            step = self.decode_service(cfg.max_batch, _bucket(size + self.default_output_tokens, cfg.kv_bucket))
            return cfg.instances * cfg.max_batch / (step * self.default_output_tokens)
        return cfg.instances * cfg.max_batch / self.service(cfg.max_batch, self.default_size)


def _typical(sizes: Any, batch: int = 1) -> int | None:
    """A typical batch's size: the median of the largest of ``batch`` request sizes (a batch runs at its
    longest request), i.e. the 0.5^(1/batch) quantile, taken as one of the sizes. None without sizes."""
    if sizes is None:
        return None
    if isinstance(sizes, int | np.integer):
        return int(sizes)
    if not np.size(sizes):
        return None
    return int(np.quantile(np.asarray(sizes), 0.5 ** (1 / batch), method="inverted_cdf"))


def _kv_bytes_per_token(dec: SimulatedService) -> float:
    """KV-cache bytes per context token of one sequence, from the decode workload's kv_cache_elements."""
    a = dec.workload(1, 256)
    b = dec.workload(1, 257)
    return float((b.kv_cache_elements - a.kv_cache_elements) * a.dtype_bytes)


def _sla(x_s: np.ndarray, budget_ms: float | None, metric: str) -> dict[str, Any] | None:
    if budget_ms is None:
        return None
    p99 = float(np.percentile(x_s, 99)) * 1e3 if x_s.size else math.nan
    return {"metric": metric, "budget_ms": budget_ms, "p99_ms": round(p99, 6),
            "attainment": round(float(np.mean(x_s * 1e3 <= budget_ms)), 6) if x_s.size else math.nan,
            "holds": bool(p99 <= budget_ms)}


# ----------------------------------------------------------------------------------------------- capacity, sweeps

def find_max_rate(model: ServingModel, budget_ms: float, *, metric: str | None = None, quantile: str = "p99",
                  requests: int = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, rtol: float = 0.005,
                  start_rate: float | None = None, max_evals: int = 60,
                  progress: Callable[[int, int], None] | None = None, **run_kw: Any) -> dict[str, Any]:
    """Highest arrival rate (requests/s) whose ``quantile`` latency holds ``budget_ms`` ("capacity at SLA").

    Every evaluation runs ``requests`` Poisson arrivals with the same ``seed`` (common random numbers:
    the arrival path is the same unit-rate path scaled in time). From ``start_rate`` (default: the
    model's full-batch rate guess) the rate is doubled or halved until the budget is bracketed, then
    bisected geometrically until hi/lo - 1 <= ``rtol``. ``max_rate_rps`` is the bracket's low end, a
    rate that was simulated and holds. Assumes the quantile grows with load above the bracket's low end
    (a lightly loaded batcher can be *slower* than a busier one, so the search starts near saturation).
    The result is a property of the seeded sample: its statistical error (a few % at 20,000 requests
    for p99) is separate from ``rtol``. ``progress(done, total)`` after each evaluation (``total`` is an
    estimate until the rate is bracketed).
    """
    key = {"latency": "latency_ms", "ttft": "ttft_ms", "tpot": "tpot_ms"}
    metric = metric or ("ttft" if model.is_llm else "latency")
    if metric not in key:
        raise ServingError(f"metric {metric!r}: expected latency, ttft or tpot")
    if not budget_ms > 0:
        raise ServingError(f"latency budget must be > 0 ms, got {budget_ms!r}")
    evals: list[dict[str, Any]] = []

    def holds(rate: float) -> bool:
        res = model.run(rate, requests=requests, seed=seed, sla_metric=metric, **run_kw)
        value = res[key[metric]][quantile]
        ok = bool(value <= budget_ms)
        evals.append({"rate_rps": round(rate, 6), f"{quantile}_ms": value, "holds": ok,
                      "utilisation": res["utilisation"]})
        if progress is not None:
            progress(len(evals), min(max_evals, len(evals) + _evals_left(lo, hi, rtol)))
        return ok

    r = float(start_rate or model.rate_guess())
    lo = hi = None
    if holds(r):
        lo = r
        while hi is None and len(evals) < max_evals:
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
    at = next((e for e in reversed(evals) if lo is not None and e["rate_rps"] == round(lo, 6)), None)
    return {"name": model.name, "sparsity": model.sparsity, "metric": metric, "quantile": quantile,
            "budget_ms": budget_ms, "max_rate_rps": round(lo, 6) if lo is not None else 0.0,
            "bracket_rps": [None if lo is None else round(lo, 6), None if hi is None else round(hi, 6)],
            f"{quantile}_ms_at_max": None if at is None else at[f"{quantile}_ms"], "rtol": rtol,
            "requests_per_eval": requests, "seed": seed, "status": status, "evaluations": evals}


def _evals_left(lo: float | None, hi: float | None, rtol: float) -> int:
    """Bisection steps still to come (a guess of 3 more bracketing steps while the rate is unbracketed)."""
    if lo is None or hi is None:
        return 3 + math.ceil(math.log2(math.log(2) / math.log1p(rtol)))
    if hi / lo - 1 <= rtol:
        return 0
    return math.ceil(math.log2(math.log(hi / lo) / math.log1p(rtol)))


def latency_vs_load(model: ServingModel, rates: Sequence[float], *, requests: int = DEFAULT_REQUESTS_PER_EVAL,
                    seed: int = 0, **run_kw: Any) -> list[dict[str, Any]]:
    """Latency percentiles at each arrival rate (same seeded path, scaled): a latency-vs-load curve."""
    rows = []
    for rate in rates:
        res = model.run(float(rate), requests=requests, seed=seed, **run_kw)
        row = {"rate_rps": float(rate), "throughput_rps": res["throughput_rps"], "utilisation": res["utilisation"]}
        for metric in ("latency", "ttft", "tpot"):
            if res.get(f"{metric}_ms"):
                row.update({f"{metric}_{q}_ms": res[f"{metric}_ms"][q] for q in ("p50", "p95", "p99")})
        rows.append(row)
    return rows


def compare(models: Mapping[str, ServingModel], rate: float | None = None, **run_kw: Any) -> dict[str, Any]:
    """Run several models (e.g. dense and 2:4) on the same seeded arrivals; results side by side."""
    results = {label: m.run(rate, **run_kw) for label, m in models.items()}
    out: dict[str, Any] = {"results": results}
    labels = list(results)
    if len(labels) >= 2:
        a, b = results[labels[0]], results[labels[1]]
        metrics = ["latency"] + (["ttft", "tpot"] if a["mode"] == "llm" else [])
        out["comparison"] = {
            "baseline": labels[0], "other": labels[1],
            **{f"{m}_{q}_ratio": _ratio(a[f"{m}_ms"][q], b[f"{m}_ms"][q]) for m in metrics for q in ("p50", "p99")},
            "throughput_ratio": _ratio(b["throughput_rps"], a["throughput_rps"]),
            "utilisation": [a["utilisation"], b["utilisation"]]}
    return out


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 6) if b and math.isfinite(a) and math.isfinite(b) else None


# ----------------------------------------------------------------------------------------------- quality at budget

class Variant(Strict):
    """One deployable variant: a workload, a sparsity, workload parameters and its quality figure."""

    name: str = Field(min_length=1)
    workload: str = Field(min_length=1, description="Workload YAML, relative to the variants file.")
    sparsity: str = "dense"
    set: dict[str, int | float] = Field(default_factory=dict, description="Workload parameters (--set).")
    quality: float | None = Field(None, description="Quality figure (higher is better); if absent, the "
                                  "workload file's top-level 'quality' key is read.")
    quality_source: str | None = None


class VariantsFile(Strict):
    """Candidate variants for quality at equal latency budget."""

    metric: str = Field("quality", description="What 'quality' measures, e.g. 'SQuAD v1.1 dev F1'.")
    note: str | None = None
    budget_ms: float | None = Field(None, gt=0, description="Default latency budget (the caller's wins).")
    rate_rps: float | None = Field(None, gt=0, description="Default arrival rate (the caller's wins).")
    variants: list[Variant] = Field(min_length=1)


def load_variants(path: str | Path) -> tuple[VariantsFile, list[Path]]:
    """Read a variants YAML; return it and each variant's workload path resolved against the file."""
    data, _ = configio.read_yaml(path)
    vf = configio.validate(VariantsFile, data, str(path))
    seen: set[str] = set()
    paths = []
    for i, v in enumerate(vf.variants):
        if v.name in seen:
            raise ConfigError(str(path), f"variants.{i}.name", f"name {v.name!r} is used twice")
        seen.add(v.name)
        wl = Path(v.workload)
        paths.append(wl if wl.is_absolute() else Path(path).parent / wl)
        try:
            normalize_pattern(v.sparsity)
        except ValueError as exc:
            raise ConfigError(str(path), f"variants.{i}.sparsity", str(exc)) from None
    return vf, paths


def _variant_quality(v: Variant, path: Path, src: str, i: int) -> float:
    if v.quality is not None:
        return float(v.quality)
    data, _ = configio.read_yaml(path)
    q = data.get("quality")
    if isinstance(q, int | float) and not isinstance(q, bool):
        return float(q)
    raise ConfigError(src, f"variants.{i}.quality", f"no quality figure here or in {v.workload}")


def quality_at_budget(variants: str | Path, hw: Hardware | str | Path, budget_ms: float | None = None,
                      rate: float | None = None, *,
                      config: RuntimeConfig | Mapping[str, Any] | None = None, duration_s: float | None = None,
                      requests: int | None = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, sizes: Any = None,
                      quantile: str = "p99", hw_set: Sequence[str] | None = None,
                      simulator: Simulator | None = None) -> dict[str, Any]:
    """Best-quality variant whose ``quantile`` latency holds ``budget_ms`` at ``rate``, and its quality
    delta against the best dense variant that holds the same budget (quality at equal latency budget)."""
    vf, paths = load_variants(variants)
    budget_ms = budget_ms if budget_ms is not None else vf.budget_ms
    rate = rate if rate is not None else vf.rate_rps
    if budget_ms is None or rate is None:
        raise ServingError(f"{variants}: give a latency budget and an arrival rate (or budget_ms / rate_rps "
                           "in the variants file)")
    hw_obj, hw_src = _hw(hw, hw_set)
    sim = simulator or Simulator(hw_obj, hw_src)
    rows = []
    for i, (v, path) in enumerate(zip(vf.variants, paths, strict=True)):
        model = ServingModel.from_files(hw_obj, path, v.sparsity, config=config, set_params=v.set, simulator=sim)
        res = model.run(rate, duration_s=duration_s, requests=requests, seed=seed, sizes=sizes,
                        sla_p99_ms=budget_ms if quantile == "p99" else None)
        value = res["latency_ms"][quantile]
        rows.append({"name": v.name, "workload": v.workload, "sparsity": model.sparsity, "set": dict(v.set),
                     "quality": _variant_quality(v, path, str(variants), i), "quality_source": v.quality_source,
                     f"{quantile}_ms": value, "p50_ms": res["latency_ms"]["p50"],
                     "utilisation": res["utilisation"], "holds": bool(value <= budget_ms)})
    ok = [r for r in rows if r["holds"]]
    best = max(ok, key=lambda r: r["quality"], default=None)
    dense = max((r for r in ok if r["sparsity"] == "dense"), key=lambda r: r["quality"], default=None)
    delta = None if best is None or dense is None else round(best["quality"] - dense["quality"], 6)
    return {"metric": vf.metric, "note": vf.note, "budget_ms": budget_ms, "quantile": quantile, "rate_rps": rate,
            "seed": seed, "requests": requests, "duration_s": duration_s, "variants": rows,
            "best": None if best is None else best["name"], "best_quality": None if best is None else best["quality"],
            "dense_baseline": None if dense is None else dense["name"],
            "dense_baseline_quality": None if dense is None else dense["quality"], "quality_delta": delta}


# ----------------------------------------------------------------------------------------------- CLI handler

def _as_params(set_params: Any) -> dict[str, Any]:
    if set_params is None:
        return {}
    if isinstance(set_params, Mapping):
        return dict(set_params)
    from accelsim.config.templating import parse_sets

    return parse_sets(list(set_params))


def _paired_decode(workload: Path) -> Path | None:
    stem = workload.stem
    if stem.endswith("-prefill"):
        cand = workload.with_name(stem.removesuffix("-prefill") + "-decode" + workload.suffix)
        if cand.is_file():
            return cand
    return None


def serve_command(hw_path: str | Path, workload_path: str | Path, rate: float | None, sparsity: str | None = None,
                  duration_s: float = 10.0, seed: int = 0, max_batch: int | None = None,
                  max_wait_ms: float | None = None,
                  sla_p99_ms: float | None = None, find_max_rate: bool = False, variants: str | Path | None = None,
                  out: str | Path | None = None, set_params: Mapping[str, Any] | Sequence[str] | None = None, *,
                  budget_ms: float | None = None, instances: int | None = None, sizes: Any = None,
                  trace: str | Path | None = None, decode_workload: str | Path | None | Literal["auto"] = "auto",
                  prompt_tokens: Any = None, output_tokens: Any = None, sla_metric: str | None = None,
                  runtime_config: Mapping[str, Any] | str | Path | None = None, hw_set: Sequence[str] | None = None,
                  requests_per_eval: int = DEFAULT_REQUESTS_PER_EVAL, rtol: float = 0.005,
                  policy: str = "sparse-if-supported",
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Everything ``accelsim serve`` prints, as one plain dict: dense and sparse side by side, optionally
    capacity at SLA (``find_max_rate``), quality at equal budget (``variants``) and plots written to ``out``.

    Dense always runs; ``sparsity`` (or the workload's own plan) runs beside it. ``runtime_config`` is a
    dict or YAML file of :class:`RuntimeConfig` fields (variability sources go here); ``max_batch``,
    ``max_wait_ms`` and ``instances`` override it when given (None: the file's value, else the default).
    A ``*-prefill.yaml`` workload with a sibling ``*-decode.yaml`` runs in LLM mode unless
    ``decode_workload=None``. ``progress(done, total)`` counts
    the capacity search's simulated runs (``total`` is an estimate until the search brackets the rate).
    A workload without a ``batch`` parameter is served one request at a time (max_batch 1, said in
    ``notes``); an offered load above capacity is flagged (``overloaded``, per-run ``load``, ``warnings``).
    """
    check_serve_args(rate=rate, duration_s=duration_s, seed=seed, max_batch=max_batch, max_wait_ms=max_wait_ms,
                     instances=instances, sla_p99_ms=sla_p99_ms, budget_ms=budget_ms, trace=trace)
    if sizes is not None:
        try:
            parse_size_spec(sizes)  # a bad or oversized spec fails before any simulation
        except ServingError as exc:
            raise ServingError(f"--sizes: {exc}") from None
    params = _as_params(set_params)
    base: dict[str, Any] = {}
    if isinstance(runtime_config, str | Path):
        base, _ = configio.read_yaml(runtime_config)
    elif runtime_config is not None:
        base = dict(runtime_config)
    flags = {"max_batch": max_batch, "max_wait_ms": max_wait_ms, "instances": instances}
    cfg = RuntimeConfig.from_dict({**base, **{k: v for k, v in flags.items() if v is not None}},
                                  str(runtime_config) if isinstance(runtime_config, str | Path) else "<runtime config>")
    hw_obj, hw_src = _hw(hw_path, hw_set)
    sim = Simulator(hw_obj, hw_src)
    wl = Path(workload_path)
    dec = _paired_decode(wl) if decode_workload == "auto" else decode_workload
    sp = _pattern(sparsity)
    if sp is None:
        sp = _pattern(configio.read_yaml(wl)[0].get("sparsity"))
    labels = ["dense"] + ([sp] if sp not in (None, "dense") else [])
    models = {lab: ServingModel.from_files(hw_obj, wl, lab, config=cfg, set_params=params, decode_workload=dec,
                                           simulator=sim, policy=policy) for lab in labels}
    run_kw: dict[str, Any] = {"seed": seed, "sizes": sizes, "trace": trace, "prompt_tokens": prompt_tokens,
                              "output_tokens": output_tokens}
    first = next(iter(models.values()))
    result: dict[str, Any] = {
        "command": "serve", "hardware": hw_obj.name, "workload": first.info["workload"],
        "decode_workload": first.info.get("decode_workload"), "mode": "llm" if first.is_llm else "batch",
        "set": params, "rate_rps": rate, "duration_s": duration_s, "seed": seed, "sparsities": labels,
        "runtime_config": first.config.to_dict(), "variability_enabled": cfg.variability.any_enabled,
        "notes": [first.info["note"]] if first.info.get("note") else [],
        **compare(models, rate, duration_s=duration_s, sla_p99_ms=sla_p99_ms, sla_metric=sla_metric, **run_kw),
    }
    from accelsim.serving.limits import overload_warnings

    result["warnings"] = overload_warnings(result)
    result["overloaded"] = bool(result["warnings"])
    if find_max_rate:
        if sla_p99_ms is None:
            raise ServingError("--find-max-rate needs a p99 budget (--sla-p99 MS)")
        caps = {}
        done: dict[str, int] = {}
        guess: dict[str, int] = {}

        def tick(lab: str) -> Callable[[int, int], None]:
            def update(n: int, total: int) -> None:
                done[lab], guess[lab] = n, total
                if progress is not None:
                    est = max(guess.values())
                    progress(sum(done.values()), sum(guess.get(x, est) for x in labels))
            return update

        for lab, m in models.items():
            caps[lab] = _capacity(m, sla_p99_ms, metric=sla_metric, requests=requests_per_eval, rtol=rtol,
                                  progress=tick(lab), **run_kw)
        result["capacity"] = {"budget_ms": sla_p99_ms, "metric": next(iter(caps.values()))["metric"],
                              "results": caps}
        if len(caps) == 2:
            a, b = (caps[lab]["max_rate_rps"] for lab in labels)
            result["capacity"]["sparse_over_dense"] = round(b / a, 6) if a else None
    if variants is not None:
        b_ms = budget_ms if budget_ms is not None else sla_p99_ms
        result["quality"] = quality_at_budget(variants, hw_obj, b_ms, rate, config=cfg, duration_s=duration_s,
                                              requests=None, seed=seed, sizes=sizes, simulator=sim)
    if out is not None:
        result["files"] = _write_outputs(Path(out), result, models, rate, seed, requests_per_eval, run_kw)
    return result


def _write_outputs(out: Path, result: dict[str, Any], models: Mapping[str, ServingModel], rate: float | None,
                   seed: int, requests: int, run_kw: dict[str, Any]) -> list[str]:
    """serve.json, latency_cdf.png and latency_vs_load.png (rates up to 1.2x the best capacity or rate),
    written all or nothing once everything is rendered."""
    from accelsim.fileio import figure_bytes, write_all
    from accelsim.report.serving_plots import latency_cdf_figure, latency_vs_load_figure

    metric = "ttft" if result["mode"] == "llm" else "latency"
    budget = (result.get("capacity") or {}).get("budget_ms")
    fig = latency_cdf_figure(result["results"], metric=metric, budget_ms=budget,
                             title=f"{result['workload']} on {result['hardware']}: {metric} CDF")
    files: dict[Path, bytes] = {out / "latency_cdf.png": figure_bytes(fig, "png")}
    caps = (result.get("capacity") or {}).get("results") or {}
    top = max([c["max_rate_rps"] for c in caps.values()] + [rate or 0.0])
    if top > 0:
        rates = [top * f for f in (0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)]
        curves = {lab: latency_vs_load(m, rates, requests=requests, **run_kw) for lab, m in models.items()}
        result["latency_vs_load"] = curves
        fig = latency_vs_load_figure(curves, metric=metric, budget_ms=budget,
                                     title=f"{result['workload']} on {result['hardware']}: {metric} vs load")
        files[out / "latency_vs_load.png"] = figure_bytes(fig, "png")
    files[out / "serve.json"] = (dumps_finite(result, "serve", indent=2, default=float) + "\n").encode()
    return [str(f) for f in write_all(files)]


_capacity = find_max_rate
