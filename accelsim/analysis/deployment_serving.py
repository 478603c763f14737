"""The deployment report's serving section: dense vs sparse at two offered loads, served as ``accelsim serve``
serves the same inputs.

A one-shot workload (BERT, a CNN) gives request-latency p50/p95/p99 under the dynamic batcher. An LLM
workload (a ``*-prefill`` file with a ``*-decode`` sibling, paired as ``serve`` pairs them) gives TTFT and
TPOT p50/p95/p99 under continuous batching: prompts of the workload's ``seq`` tokens, serve's default
output tokens. The headline above the section is one forward pass of the workload; the section says what
it adds.

Offered loads: :data:`SERVING_LOADS` shares of the dense deployment's capacity
(:meth:`~accelsim.serving.ServingModel.capacity_rps`, the figure serve's "offered / capacity" divides by).
An LLM deployment whose weights leave no room for a KV cache on one device is not served and the section says
so (``does_not_fit``), as ``serve`` shows it; where that is dense, the loads are shares of the sparse one's.
Each run is seeded Poisson arrivals over ``SERVING_REQUESTS / rate`` simulated seconds at the rate as
shown (both rounded to 6 significant figures), so ``accelsim serve --rate RATE --duration DURATION
--max-batch B`` on the same inputs reproduces a row. The batch limit B is the headline's batch when that
is above 1 (full batches run at the batch the headline measured), else :data:`DEFAULT_MAX_BATCH`; the
``batch`` parameter itself is the scheduler's (serve refuses ``--set batch``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.serving import DoesNotFitError, ServingModel, ServingRun
from accelsim.serving.limits import NEAR_CAPACITY, kv_limit_notes, near_capacity
from accelsim.serving.request import paired_decode
from accelsim.serving.service import group_note
from accelsim.simulation import Simulator
from accelsim.workloads.model import Workload

__all__ = ["DEFAULT_MAX_BATCH", "SERVING_LOADS", "SERVING_MAX_WAIT_MS", "SERVING_REQUESTS", "SERVING_SEED",
           "Percentiles", "ServingConfig", "ServingLatency", "ServingRow", "ServingSection", "serving_section"]

SERVING_LOADS = (0.5, 0.8)  # offered load as a share of the dense deployment's capacity
SERVING_REQUESTS = 4000     # requests' worth of arrivals per run: duration = SERVING_REQUESTS / rate
SERVING_SEED = 0
SERVING_MAX_WAIT_MS = 2.0
DEFAULT_MAX_BATCH = 8       # the batch limit when the headline runs one request (batch 1)


def _sig(value: float) -> float:
    """``value`` to 6 significant figures (rates and durations as shown, and as run)."""
    return float(f"{value:.6g}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Percentiles(Record):
    p50: float
    p95: float
    p99: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingLatency(Record):
    """One variant at one load: request latency percentiles (ms; LLM: arrival to last token), LLM ``ttft`` and
    ``tpot`` percentiles (ms), utilisation, and the offered load against the variant's capacity."""

    p50: float
    p95: float
    p99: float
    ttft: Percentiles | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    tpot: Percentiles | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    rejected: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    utilisation: float
    offered_over_capacity: float | None
    overloaded: bool

    @property
    def near_capacity(self) -> bool:
        """Whether the offered load is near (not above) capacity (limits.NEAR_CAPACITY): not steady-state."""
        return near_capacity(self.offered_over_capacity)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingRow(Record):
    """One offered load: the rate, the simulated duration, the requests that arrived in it, and each variant's
    figures (keyed by label: 'dense' and the sparse label)."""

    load: float
    rate_rps: float
    duration_s: float
    requests: int
    by_label: Mapping[str, ServingLatency]

    def to_dict(self) -> dict[str, Any]:
        return {"load": self.load, "rate_rps": self.rate_rps, "duration_s": self.duration_s,
                "requests": self.requests, **{k: v.to_dict() for k, v in self.by_label.items()}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingConfig(Record):
    """The serving batch limit and wait; ``headline_batch``: the batch the headline ran (None: the workload has
    no ``batch`` parameter); LLM: the prompt and output tokens of every request."""

    max_batch: int
    max_wait_ms: float
    headline_batch: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    prompt_tokens: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    output_tokens: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingSection(Record):
    """``status`` "ok" with the table, or "skipped" with only the ``note`` saying why.

    ``mode``: "batch" (one-shot requests) or "llm" (prefill + ``decode_workload``); ``capacity_rps``: each
    variant's capacity (requests/s), the dense one being ``saturation_rps`` (the sparse one where dense does not
    fit one device: ``does_not_fit`` names it, and ``labels`` holds only the variants served)."""

    status: str
    mode: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    labels: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    # by label, a deployment not served because its weights leave no room for a KV cache (DoesNotFitError.to_dict)
    does_not_fit: Mapping[str, Mapping[str, Any]] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    decode_workload: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    saturation_rps: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    capacity_rps: Mapping[str, float] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    config: ServingConfig | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    requests: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    seed: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    rows: tuple[ServingRow, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    kv_limited: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    note: str


def _headline_batch(model: Workload) -> int | None:
    value = model.params.get("batch")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _percentiles(stats: Any) -> Percentiles:
    return Percentiles(p50=stats.p50, p95=stats.p95, p99=stats.p99)


def _measure(models: Mapping[str, ServingModel]) -> tuple[dict[str, float], list[ServingRow], dict[str, ServingRun]]:
    """Each variant's capacity, the rows at SERVING_LOADS shares of the first variant's capacity (dense, unless it
    does not fit), and each variant's highest-load run."""
    capacity = {lab: _sig(m.capacity_rps()) for lab, m in models.items()}
    base = next(iter(capacity))
    rows = []
    last: dict[str, ServingRun] = {}
    for share in SERVING_LOADS:
        rate = _sig(share * capacity[base])
        duration = _sig(SERVING_REQUESTS / rate)
        by_label = {}
        arrived = 0
        for lab, m in models.items():
            r = m.run(rate, duration_s=duration, seed=SERVING_SEED)
            last[lab] = r
            arrived = r.requests
            q = r.latency_ms
            by_label[lab] = ServingLatency(
                p50=q.p50, p95=q.p95, p99=q.p99,
                ttft=_percentiles(r.ttft_ms) if r.ttft_ms is not None else None,
                tpot=_percentiles(r.tpot_ms) if r.tpot_ms is not None else None,
                rejected=r.rejected, utilisation=r.utilisation,
                offered_over_capacity=r.load.offered_over_capacity, overloaded=r.load.overloaded)
        rows.append(ServingRow(load=share, rate_rps=rate, duration_s=duration, requests=arrived,
                               by_label=freeze(by_label)))
    return capacity, rows, last


def _batching_text(first: ServingModel, headline: int | None) -> str:
    cfg = first.config
    if cfg.max_batch == 1 and "note" in first.info:
        return str(first.info["note"])
    limit = (f"decode batches of up to {cfg.max_batch} requests (continuous batching)" if first.is_llm
             else f"batches of up to {cfg.max_batch} requests ({cfg.max_wait_ms:g} ms max wait)")
    if headline is not None and headline > 1:
        return (f"{limit}: the headline's batch {headline} is the serving batch limit (full batches run at the "
                "batch the headline measured; fewer waiting requests make smaller batches)")
    one = "prompt per prefill pass" if first.is_llm else "request per pass"
    return f"{limit}: the report's default limit, since the headline runs batch {headline or 1} (one {one})"


def serving_section(hw: Hardware, workload_source: str | None, model: Workload, sparsity: str | None, label: str,
                    policy: str, sim: Simulator) -> ServingSection:
    """Dense vs ``label`` (``sparsity``; None: the workload's own plan, as the headline runs it) at two offered
    loads, served as ``accelsim serve`` serves the workload file (an LLM with its paired decode workload)."""
    if not workload_source or not Path(workload_source).is_file():
        return ServingSection(status="skipped", note="serving needs the workload file, to simulate each batch "
                                                     "size, and none was given")
    wl = Path(workload_source)
    decode = paired_decode(wl)
    headline = _headline_batch(model)
    max_batch = headline if headline is not None and headline > 1 else DEFAULT_MAX_BATCH
    sets = {k: v for k, v in model.params.items() if k != "batch"}  # serve refuses --set batch: it is the scheduler's
    config = {"max_batch": max_batch, "max_wait_ms": SERVING_MAX_WAIT_MS}
    models: dict[str, ServingModel] = {}
    misfits: dict[str, DoesNotFitError] = {}
    try:
        for lab, sp in (("dense", "dense"), (label, sparsity)):
            try:
                models[lab] = ServingModel.from_files(hw, wl, sp, config=config, set_params=sets,
                                                      decode_workload=decode, simulator=sim, policy=policy)
            except DoesNotFitError as exc:  # shown, and the other deployment still served, as serve does
                misfits[lab] = exc
        if not models:
            return ServingSection(status="skipped", note=f"{hw.name}: no deployment leaves room for a KV cache: "
                                  + "; ".join(f"{lab} {e.short}" for lab, e in misfits.items()),
                                  does_not_fit=freeze({lab: e.to_dict() for lab, e in misfits.items()}))
        capacity, rows, last = _measure(models)
    except (AccelsimError, ValueError) as exc:
        return ServingSection(status="skipped", note=str(exc))
    base = next(iter(models))  # the loads' basis: dense, else the deployment that fits
    first = models[base]
    cfg = first.config
    prompt = output = None
    if first.is_llm:
        prompt, output = first.default_size, first.default_output_tokens
        what = (f"LLM serving, as `accelsim serve` serves {wl.name}: each request is prefilled ({prompt}-token "
                f"prompt) and then decoded with {first.info['decode_workload']} for {output} output tokens "
                "(serve's default); the headline above is the prefill pass alone. TTFT: arrival to first token "
                "(queueing + prefill); TPOT: time per output token after the first. ")
    elif wl.stem.endswith("-prefill"):
        what = (f"Prefill only: {wl.name} has no *-decode workload beside it, so requests are one-shot prefill "
                "passes and decode is not served. ")
    else:
        what = ""
    basis = ("full decode batches, each request prefilled alone" if first.is_llm
             else "full batches back to back")
    how = "--sparsity " + sparsity if sparsity is not None else "no --sparsity (the workload's own plan)"
    unfit = "".join(f"{lab} {e.short}: its weights leave no room for a KV cache on one {hw.name} device, so it is "
                    f"not served and the loads are shares of {base}'s capacity. " for lab, e in misfits.items())
    note = (f"{unfit}{what}Poisson arrivals (seed {SERVING_SEED}) at "
            f"{' and '.join(f'{s:.0%}' for s in SERVING_LOADS)} of the {base} deployment's capacity "
            f"(capacity, {basis}: "
            f"{', '.join(f'{lab} {c:g} req/s' for lab, c in capacity.items())}), {SERVING_REQUESTS:,} "
            f"requests' worth each (duration = {SERVING_REQUESTS} / rate); {_batching_text(first, headline)}; "
            "service times from the simulated plan. A row is `accelsim serve` on the same --hw, --workload and "
            f"--set (without batch) with {how} --rate RATE --duration DURATION --max-batch {cfg.max_batch}.")
    tp = group_note(hw)
    if tp:
        note += f" {tp}."
    rejected = sorted({lab for r in rows for lab in models if r.by_label[lab].rejected})
    if rejected:
        note += (f" REJECTED requests ({', '.join(rejected)}): a request whose context does not fit the KV budget "
                 "is refused and left out of the percentiles.")
    over = sorted({lab for r in rows for lab in models if r.by_label[lab].overloaded})
    if over:
        note += (f" OVERLOADED ({', '.join(over)}): where marked *, the offered load is above that variant's "
                 "capacity, so the queue grows for the whole run and its percentiles are not steady-state.")
    near = sorted({lab for r in rows for lab in models if r.by_label[lab].near_capacity})
    if near:
        note += (f" NEAR CAPACITY ({', '.join(near)}): where marked ~, the offered load is at least "
                 f"{NEAR_CAPACITY:.0%} of that variant's capacity, so its percentiles are not steady-state: they "
                 "are optimistic and grow with the run length.")
    kv_lines = kv_limit_notes(last)
    if kv_lines:
        note += " KV CACHE: " + "; ".join(kv_lines) + "."
    return ServingSection(status="ok", mode="llm" if first.is_llm else "batch", labels=tuple(models),
                          does_not_fit=freeze({lab: e.to_dict() for lab, e in misfits.items()}) or None,
                          decode_workload=first.info.get("decode_workload"), saturation_rps=capacity[base],
                          capacity_rps=freeze(capacity),
                          config=ServingConfig(max_batch=cfg.max_batch, max_wait_ms=cfg.max_wait_ms,
                                               headline_batch=headline, prompt_tokens=prompt,
                                               output_tokens=output),
                          requests=SERVING_REQUESTS, seed=SERVING_SEED, rows=tuple(rows),
                          kv_limited=tuple(lab for lab, r in last.items() if r.kv_cache and r.kv_cache.limits_batch)
                          or None, note=note)
