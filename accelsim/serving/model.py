"""A deployment to serve requests on: :class:`ServingModel` (service times, runtime config, KV budget)
and its run over one seeded arrival stream, summarised as a frozen
:class:`~accelsim.serving.run_record.ServingRun` (times in ms, rates in requests/s: latency and queueing
percentiles, throughput, utilisation, batch sizes, offered load against capacity, SLA outcome, variability,
the service cache, CDF tables; LLM runs add TTFT, TPOT, output tokens/s, the KV cache and rejections).
``ServingRun.to_dict()`` is the plain, JSON-able run record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware
from accelsim.records import freeze
from accelsim.serving.arrivals import parse_size_spec, poisson_arrivals, read_trace, sample_sizes, trace_column
from accelsim.serving.batching import simulate_batching
from accelsim.serving.config import (
    DEFAULT_OUTPUT_TOKENS,
    SEED_STREAMS,
    DoesNotFitError,
    RuntimeConfig,
    ServingError,
    pad_to,
)
from accelsim.serving.limits import check_decode_tokens, load_assessment
from accelsim.serving.llm import simulate_llm
from accelsim.serving.run_record import (
    BatchStats,
    DecodeBatchStats,
    KvCacheReport,
    LoadAssessment,
    ServiceCache,
    ServiceTime,
    ServingRun,
    VariabilityReport,
)
from accelsim.serving.service import (
    SimulatedService,
    assign_set_params,
    canonical_pattern,
    kv_bytes_per_token,
    resolve_hardware,
    workload_plan,
)
from accelsim.serving.stats import cdf, sla_outcome, stats_ms
from accelsim.serving.variability import seed_streams
from accelsim.simulation import Simulator

__all__ = ["ServingModel"]


class ServingModel:
    """One deployment: a service-time model (+ decode model and KV budget for LLMs) and a RuntimeConfig.

    Build it from files with :meth:`from_files`, or from any ``service(batch, size) -> seconds`` callable
    (e.g. a synthetic one for queueing checks). :meth:`run` simulates one arrival stream and returns a
    :class:`~accelsim.serving.run_record.ServingRun`.
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

        ``sparsity`` None keeps the workload's own plan (labelled by its top-level ``sparsity``, else
        ``"workload plan"`` where layers name their own patterns, else dense); ``set_params`` go to whichever
        workload declares them (prefill ``seq``, decode ``kv_len`` are set per request; other keys, e.g. model
        size knobs, to both).
        """
        hw_obj, hw_src = resolve_hardware(hw, hw_set)
        sim = simulator or Simulator(hw_obj, hw_src)
        sp = canonical_pattern(sparsity)
        sets = dict(set_params or {})
        dec: SimulatedService | None = None
        if decode_workload is None:
            svc = SimulatedService(hw_obj, workload, sp, size_param=size_param, policy=policy, simulator=sim,
                                   hw_source=hw_src)
        else:
            svc = SimulatedService(hw_obj, workload, sp, size_param="seq", policy=policy, simulator=sim,
                                   hw_source=hw_src)
            dec = SimulatedService(hw_obj, decode_workload, sp, size_param="kv_len", policy=policy, simulator=sim,
                                   hw_source=hw_src)
        assign_set_params(svc, dec, sets)
        label = sp or workload_plan(workload).label or "dense"
        info: dict[str, Any] = {"hardware": hw_obj.name, "workload": svc.name, "size_param": svc.size_param,
                                "set": sets, "policy": policy, "clock_ghz": hw_obj.clock_ghz}
        moe = {s.name: r for s in (svc, dec) if s is not None and (r := s.moe_routing()) is not None}
        if moe:  # the routing assumption of the moe ops, by workload (accelsim.workloads.moe)
            info["moe"] = moe
        if decode_workload is None:
            if svc.batch_param is None:
                cfg = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_dict(config)
                if cfg.max_batch != 1:
                    config = cfg.replace(max_batch=1)
                info["note"] = (f"{svc.name} has no 'batch' parameter: requests are served one at a time "
                                "(max_batch 1)")
            return cls(svc, config, name=svc.name, sparsity=label, default_size=svc.default_size, info=info)
        assert dec is not None
        kv_per_token = kv_bytes_per_token(dec)
        fp = dec.footprint(1, dec.default_size)
        weights = fp["weights_deployed_bytes"]
        cfg = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_dict(config)
        cap = hw_obj.dram.capacity_bytes
        budget = None if cap is None else cap * cfg.memory_utilization - weights
        if cap is not None and budget is not None and budget <= 0:
            raise DoesNotFitError(hw_obj.name, weights, cap, cfg.memory_utilization)
        if hw_obj.devices > 1:  # a tensor-parallel group is one instance; weights and KV budget per device
            info["devices"] = hw_obj.devices
        info.update({"decode_workload": dec.name, "weights_deployed_bytes": weights,
                     "kv_bytes_per_token": kv_per_token, "dram_capacity_bytes": cap,
                     "kv_budget_bytes": None if budget is None else int(budget)})
        return cls(svc, cfg, name=svc.name, sparsity=label, default_size=svc.default_size, decode_service=dec,
                   kv_bytes_per_token=kv_per_token, kv_budget_bytes=budget, info=info)

    # -- arrivals
    def _arrivals(self, rate: float | None, duration_s: float | None, requests: int | None,
                  trace: str | Path | Mapping[str, np.ndarray] | None, seed: int) -> tuple[np.ndarray, dict, Any]:
        rng = np.random.default_rng(seed_streams(seed)[SEED_STREAMS["arrivals"]])
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
                "trace_rate_rps": None if native is None else round(float(native), 6), "time_scale": round(scale, 9),
                "rate_rps": None if native is None else round(float(native / scale), 6),
                "span_s": round(float(arr[-1] - arr[0]), 9) if arr.size else 0.0, "seed": seed}
        return arr, desc, cols

    def run(self, rate: float | None = None, *, duration_s: float | None = 10.0, requests: int | None = None,
            seed: int = 0, sizes: Any = None, trace: str | Path | Mapping[str, np.ndarray] | None = None,
            prompt_tokens: Any = None, output_tokens: Any = None, sla_p99_ms: float | None = None,
            sla_metric: str | None = None, warmup_s: float = 0.0) -> ServingRun:
        """Simulate one seeded arrival stream; return latency percentiles (ms), throughput, utilisation, SLA."""
        arr, arrivals_desc, cols = self._arrivals(rate, duration_s, requests, trace, seed)
        n = int(arr.size)
        if n == 0:
            raise ServingError("no requests arrive in the given duration; raise the rate or the duration")
        seeds = seed_streams(seed)
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
                (col := trace_column(cols, [size_param, "size", "tokens", "seq"], src)) is not None:
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
        return ServingRun(
            **self._header(arrivals_desc, n, int(keep.sum()), size_desc),
            latency_ms=stats_ms(lat),
            queueing_delay_ms=stats_ms(wait),
            batch_size=BatchStats(mean=round(float(tr.batch_count.mean()), 6), max=int(tr.batch_count.max()),
                                  batches=int(tr.batch_count.size)),
            service_ms=ServiceTime(mean_per_batch=round(float(tr.batch_service.mean()) * 1e3, 6)),
            throughput_rps=round(n / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            utilisation=round(tr.busy_s / (tr.instances * makespan), 6) if makespan > 0 else 0.0,
            load=self._load(arrivals_desc, _typical(size_arr, self.config.max_batch), shapes=shapes),
            makespan_s=round(makespan, 9),
            sla=sla_outcome(lat, sla_p99_ms, "latency"),
            variability=self._variability(tr.throttled_batches, int(tr.batch_count.size)),
            service_cache=ServiceCache(shapes=tr.cache_entries, simulations=getattr(self.service, "simulations", None)),
            cdf=freeze({"latency": cdf(lat)}),
        )

    def _header(self, arrivals_desc: dict, n: int, measured: int, size_desc: Any) -> dict[str, Any]:
        """The fields every run has: what ran, on which arrivals and sizes, with which config."""
        return {"mode": "llm" if self.is_llm else "batch", "name": self.name, "sparsity": self.sparsity,
                **{k: self.info[k] for k in ("hardware", "workload", "decode_workload") if k in self.info},
                "arrivals": freeze(arrivals_desc), "sizes": freeze(size_desc), "requests": n,
                "measured": measured, "config": self.config}

    def _variability(self, throttled: int, units: int) -> VariabilityReport:
        v = self.config.variability
        return VariabilityReport(enabled=v.any_enabled, jitter=v.jitter, throttle=v.throttle, throttled=throttled,
                                 units=units,
                                 service_dist=self.service_dist if isinstance(self.service_dist, str) else "custom")

    def _run_llm(self, arr: np.ndarray, arrivals_desc: dict, cols: Any, src: str, seed: int,
                 seeds: list[np.random.SeedSequence], size_rng: np.random.Generator, prompt_tokens: Any,
                 output_tokens: Any, sla_p99_ms: float | None, metric: str, warmup_s: float) -> ServingRun:
        n = int(arr.size)
        out_rng = np.random.default_rng(seeds[SEED_STREAMS["output_tokens"]])
        prompt = trace_column(cols, ["prompt_tokens", "seq", "tokens", "size"], src) if cols is not None else None
        output = trace_column(cols, ["output_tokens"], src) if cols is not None else None
        pdesc: Any = "trace"
        odesc: Any = "trace"
        if prompt is None:
            pdesc = parse_size_spec(prompt_tokens if prompt_tokens is not None else self.default_size or 512)
            prompt = sample_sizes(pdesc, n, size_rng)
        if output is None:
            odesc = parse_size_spec(output_tokens if output_tokens is not None else self.default_output_tokens)
            output = sample_sizes(odesc, n, out_rng)
        assert self.decode_service is not None  # is_llm
        check_decode_tokens(n, int(np.asarray(output[:n], dtype=np.int64).sum()))
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
        tokens = int(tr.output[done].sum())
        return ServingRun(
            **self._header(arrivals_desc, n, int(keep.sum()), {"prompt_tokens": pdesc, "output_tokens": odesc}),
            ttft_ms=stats_ms(ttft), tpot_ms=stats_ms(tpot), latency_ms=stats_ms(lat),
            queueing_delay_ms=stats_ms(tr.waiting[keep]),
            throughput_rps=round(int(done.sum()) / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            output_tokens_per_s=round(tokens / (makespan - float(arr[0])), 6) if makespan > arr[0] else math.nan,
            utilisation=round(tr.busy_s / (tr.instances * makespan), 6) if makespan > 0 else 0.0,
            load=self._load(arrivals_desc, _typical(prompt[:n]), _typical(output[:n])),
            makespan_s=round(makespan, 9),
            decode_batch=DecodeBatchStats(
                mean=round(tr.decode_batch_sum / tr.decode_steps, 6) if tr.decode_steps else 0.0,
                max=int(tr.decode_batch_max), steps=int(tr.decode_steps),
                prefill_iterations=int(tr.prefill_iterations)),
            kv_cache=KvCacheReport(
                bytes_per_token=self.kv_bytes_per_token,
                budget_bytes=None if self.kv_budget_bytes is None else int(self.kv_budget_bytes),
                weights_deployed_bytes=self.info.get("weights_deployed_bytes"),
                largest_request_bytes=int(need),
                cap_requests=(None if self.kv_budget_bytes is None or need <= 0
                              else max(0, int(self.kv_budget_bytes // need))),
                peak_bytes=int(tr.kv_peak_bytes), blocked_admissions=int(tr.kv_blocked),
                limits_batch=bool(self.kv_budget_bytes is not None and need > 0
                                  and self.kv_budget_bytes // need < self.config.max_batch)),
            rejected=int(tr.rejected.size),
            sla=sla_outcome(series[metric], sla_p99_ms, metric),
            variability=self._variability(tr.throttled, int(tr.decode_steps + tr.prefill_iterations)),
            service_cache=ServiceCache(shapes=tr.prefill_cache_entries + tr.decode_cache_entries,
                                       simulations=(getattr(self.service, "simulations", 0) or 0)
                                       + (getattr(self.decode_service, "simulations", 0) or 0)),
            cdf=freeze({"ttft": cdf(ttft), "tpot": cdf(tpot), "latency": cdf(lat)}),
        )

    def capacity_rps(self, size: int | None = None, output_tokens: int | None = None, *,
                     shapes: dict[tuple[int, Any], float] | None = None) -> float:
        """Requests/s this deployment sustains at most, for requests of ``size`` (and ``output_tokens``).

        One-shot: full batches (``max_batch``) back to back on every instance. LLM (an estimate): decode
        batches as full as ``max_batch`` and the KV budget allow, each request prefilled alone. No throttle
        episodes (variability off); kernels at their power-limited clocks, as every run. An offered rate
        above it makes the queue grow without bound. ``shapes``:
        service times a run already has, by (batch, padded size), so no shape is asked for twice.
        """
        cfg = self.config
        if not self.is_llm:
            key = (cfg.max_batch, None if size is None else pad_to(size, cfg.size_bucket))
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
        t = b * float(self.service(1, pad_to(p, cfg.size_bucket)))
        if o > 1:
            t += (o - 1) * float(self.decode_service(b, pad_to(p + o, cfg.kv_bucket)))
        return cfg.instances * b / t

    def _load(self, arrivals_desc: Mapping[str, Any], size: int | None, output_tokens: int | None = None, *,
              shapes: dict[tuple[int, Any], float] | None = None) -> LoadAssessment:
        basis = ("full batches back to back on every instance, no throttle episodes" if not self.is_llm else
                 "estimate: full decode batches (max_batch or the KV budget), each request prefilled alone, "
                 "no throttle episodes")
        try:
            cap: float | None = self.capacity_rps(size, output_tokens, shapes=shapes)
        except AccelsimError as exc:  # e.g. a full batch does not fit the hardware
            cap, basis = None, f"unknown: {exc}"
        return load_assessment(arrivals_desc.get("rate_rps"), cap, basis)

    def rate_guess(self) -> float:
        """A rough sustainable rate (requests/s): full batches back to back on every instance."""
        cfg = self.config
        if self.decode_service is not None:  # is_llm
            size = self.default_size or 512
            step = self.decode_service(cfg.max_batch, pad_to(size + self.default_output_tokens, cfg.kv_bucket))
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

