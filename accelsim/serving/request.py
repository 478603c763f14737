"""What ``accelsim serve`` computes, as a library call: a :class:`ServeRequest` in, a
:class:`~accelsim.serving.results.ServeResult` out (dense and sparse side by side, optionally capacity at
SLA, quality at equal budget and latency-vs-load curves). Nothing here prints or writes files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from accelsim.config import schema as configio
from accelsim.config.templating import parse_sets
from accelsim.energy import RunClock, run_clock
from accelsim.hardware.model import Hardware
from accelsim.serving.arrivals import parse_size_spec
from accelsim.serving.capacity import compare, find_max_rate, latency_vs_load
from accelsim.serving.config import (
    DEFAULT_DURATION_S,
    DEFAULT_REQUESTS_PER_EVAL,
    DoesNotFitError,
    RuntimeConfig,
    ServingError,
)
from accelsim.serving.limits import (
    check_serve_args,
    kv_limit_notes,
    near_capacity_warnings,
    overload_warnings,
    sample_warnings,
)
from accelsim.serving.model import ServingModel
from accelsim.serving.results import CapacityResult, CapacitySummary, CompareResult, ServeResult
from accelsim.serving.service import (
    PLAN_LABEL,
    canonical_pattern,
    group_note,
    resolve_hardware,
    workload_plan,
)
from accelsim.serving.variants import quality_at_budget, shaky_warnings
from accelsim.simulation import Simulator

__all__ = ["ServeRequest", "serve", "LOAD_CURVE_SHARES", "paired_decode"]

LOAD_CURVE_SHARES = (0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)  # of the best capacity (or the rate)


@dataclass(frozen=True)
class ServeRequest:
    """The inputs of one ``accelsim serve``.

    Dense always runs; ``sparsity`` (or the workload's own plan) runs beside it. ``runtime_config`` is a
    dict or YAML file of :class:`~accelsim.serving.config.RuntimeConfig` fields (variability sources go
    here); ``max_batch``, ``max_wait_ms`` and ``instances`` override it when given (None: the file's value,
    else the default). A ``*-prefill.yaml`` workload with a sibling ``*-decode.yaml`` runs in LLM mode
    unless ``decode_workload=None``. ``set_params``: workload parameters, a mapping or ``KEY=VALUE``
    strings. ``find_max_rate`` needs ``sla_p99_ms``; ``variants`` (a variants YAML) is judged at
    ``budget_ms`` (default ``sla_p99_ms``). ``load_curves``: also latency-vs-load curves at rates up to
    1.2x the best capacity (or the rate).
    """

    hw: Hardware | str | Path
    workload: str | Path
    rate: float | None
    sparsity: str | None = None
    duration_s: float | None = None  # simulated seconds of Poisson arrivals (None: DEFAULT_DURATION_S); not with trace
    seed: int = 0
    max_batch: int | None = None
    max_wait_ms: float | None = None
    instances: int | None = None
    sla_p99_ms: float | None = None
    sla_metric: str | None = None
    find_max_rate: bool = False
    variants: str | Path | None = None
    budget_ms: float | None = None
    set_params: Mapping[str, Any] | Sequence[str] | None = None
    sizes: Any = None
    trace: str | Path | None = None
    decode_workload: str | Path | None | Literal["auto"] = "auto"
    prompt_tokens: Any = None
    output_tokens: Any = None
    runtime_config: Mapping[str, Any] | str | Path | None = None
    hw_set: Sequence[str] | None = None
    requests_per_eval: int = DEFAULT_REQUESTS_PER_EVAL
    rtol: float = 0.005
    policy: str = "sparse-if-supported"
    load_curves: bool = False


def serve(request: ServeRequest, progress: Callable[[int, int], None] | None = None) -> ServeResult:
    """Dense and sparse side by side, and what ``request`` asks for besides.

    ``progress(done, total)`` counts the capacity search's simulated runs (``total`` is an estimate until
    the search brackets the rate). A workload without a ``batch`` parameter is served one request at a
    time (max_batch 1, said in ``notes``); an offered load above capacity is flagged (``warnings``,
    ``overloaded``, each run's ``load``).
    """
    rq = request
    if rq.trace is not None and rq.duration_s is not None:
        raise ServingError(f"--duration {rq.duration_s:g} does not apply with --trace: the trace is replayed whole, "
                           "over its own span (--rate rescales its arrival times)")
    if rq.budget_ms is not None and rq.variants is None:
        raise ServingError(f"--budget-ms {rq.budget_ms:g} applies to --variants (quality at equal latency budget); "
                           "without --variants give the p99 budget as --sla-p99")
    if rq.find_max_rate and rq.sla_p99_ms is None:
        raise ServingError("--find-max-rate needs a p99 budget (--sla-p99 MS)")
    if rq.duration_s is None and rq.trace is None:
        rq = replace(rq, duration_s=DEFAULT_DURATION_S)
    check_serve_args(rate=rq.rate, duration_s=rq.duration_s, seed=rq.seed, max_batch=rq.max_batch,
                     max_wait_ms=rq.max_wait_ms, instances=rq.instances, sla_p99_ms=rq.sla_p99_ms,
                     budget_ms=rq.budget_ms, trace=rq.trace)
    for flag, spec in (("--sizes", rq.sizes), ("--prompt-tokens", rq.prompt_tokens),
                       ("--output-tokens", rq.output_tokens)):
        if spec is not None:
            try:
                parse_size_spec(spec)  # a bad or oversized spec fails before any simulation
            except ServingError as exc:
                raise ServingError(f"{flag}: {exc}") from None
    params = _as_params(rq.set_params)
    cfg = _runtime_config(rq)
    hw_obj, hw_src = resolve_hardware(rq.hw, rq.hw_set)
    sim = Simulator(hw_obj, hw_src)
    wl = Path(rq.workload)
    dec = paired_decode(wl) if rq.decode_workload == "auto" else rq.decode_workload
    _check_size_flags(rq, wl, dec)
    sp = canonical_pattern(rq.sparsity)
    override: dict[str, str | None] = {"dense": "dense"}  # label -> the sparsity each model runs (None: the plan)
    plan_note = None
    if sp is not None:
        if sp != "dense":
            override[sp] = sp
    else:  # no --sparsity: the workload's own plan beside dense, as 'accelsim run' runs it with no --sparsity
        plan = workload_plan(wl)
        if plan.label is not None:
            override[plan.label] = None
        if plan.label == PLAN_LABEL:
            plan_note = (f"{PLAN_LABEL}: the workload's own per-layer sparsity plan (each layer's sparsity:), as "
                         "'accelsim run' runs it with no --sparsity")
            if plan.exceptions:
                plan_note = (f"{PLAN_LABEL}: the workload's sparsity {plan.top} on every weight layer but "
                             f"{_listed(plan.exceptions)} (their own sparsity:), as 'accelsim run' runs it with no "
                             "--sparsity")
    labels = list(override)
    models, misfits = _fitting_models(hw_obj, wl, override, cfg, params, dec, sim, rq.policy)
    run_kw: dict[str, Any] = {"seed": rq.seed, "sizes": rq.sizes, "trace": rq.trace,
                              "prompt_tokens": rq.prompt_tokens, "output_tokens": rq.output_tokens}
    first = next(iter(models.values()))
    side_by_side = compare(models, rq.rate, duration_s=rq.duration_s, sla_p99_ms=rq.sla_p99_ms,
                           sla_metric=rq.sla_metric, **run_kw)
    capacity = None
    if rq.find_max_rate and rq.sla_p99_ms is not None:
        capacity = _capacity(models, rq.sla_p99_ms, rq, run_kw, progress)
    quality = None
    if rq.variants is not None:
        b_ms = rq.budget_ms if rq.budget_ms is not None else rq.sla_p99_ms
        quality = quality_at_budget(rq.variants, hw_obj, b_ms, rq.rate, config=cfg, duration_s=rq.duration_s,
                                    requests=None, seed=rq.seed, sizes=rq.sizes, simulator=sim)
    curves = None
    if rq.load_curves:
        caps = capacity.results.values() if capacity is not None else []
        top = max([c.max_rate_rps for c in caps] + [rq.rate or 0.0])
        if top > 0:
            rates = [top * f for f in LOAD_CURVE_SHARES]
            curves = {lab: latency_vs_load(m, rates, requests=rq.requests_per_eval, **run_kw)
                      for lab, m in models.items()}
    remedy = "a longer trace" if rq.trace is not None else "raise --duration or --rate"
    trust = (*sample_warnings(side_by_side.results, remedy),
             *near_capacity_warnings(side_by_side.results, curves, rq.requests_per_eval if curves else None),
             *(shaky_warnings(quality.variants, [quality.budget_ms]) if quality is not None else ()))
    return ServeResult(
        hardware=hw_obj.name, workload=first.info["workload"], decode_workload=first.info.get("decode_workload"),
        mode="llm" if first.is_llm else "batch", set=params, rate_rps=rq.rate,
        duration_s=_trace_span(side_by_side) if rq.duration_s is None else rq.duration_s,
        seed=rq.seed, sparsities=tuple(labels), runtime_config=first.config.to_dict(),
        variability_enabled=cfg.variability.any_enabled,
        notes=(*(n for n in (first.info.get("note"), group_note(hw_obj), plan_note) if n),
               *kv_limit_notes(side_by_side.results), *trust),
        does_not_fit={lab: e.to_dict() for lab, e in misfits.items()}, moe=first.info.get("moe"),
        hw_set=tuple(rq.hw_set or ()) or None,
        comparison=side_by_side,
        warnings=(*_service_warnings(models), *overload_warnings(side_by_side.results), *trust), capacity=capacity,
        quality=quality,
        latency_vs_load=curves, clock=_service_clocks(models))


def _fitting_models(hw: Hardware, wl: Path, override: Mapping[str, str | None], cfg: RuntimeConfig,
                    params: Mapping[str, Any], dec: str | Path | None, sim: Simulator,
                    policy: str) -> tuple[dict[str, ServingModel], dict[str, DoesNotFitError]]:
    """The serving model of each label that fits one device, and why each other one does not (as ``decide``
    shows a variant that does not fit); a ServingError naming every label when none fits."""
    models: dict[str, ServingModel] = {}
    misfits: dict[str, DoesNotFitError] = {}
    for lab, sp in override.items():
        try:
            models[lab] = ServingModel.from_files(hw, wl, sp, config=cfg, set_params=params, decode_workload=dec,
                                                  simulator=sim, policy=policy)
        except DoesNotFitError as exc:
            misfits[lab] = exc
    if not models:
        if len(misfits) == 1:
            raise next(iter(misfits.values()))
        raise ServingError(f"{hw.name}: no deployment leaves room for a KV cache: "
                           + "; ".join(f"{lab} {e.short}" for lab, e in misfits.items()))
    return models, misfits


def _listed(names: Sequence[str], shown: int = 4) -> str:
    """'a (dense), b (1:4)' for the first ``shown`` names, then how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _trace_span(runs: CompareResult) -> float:
    """A replayed trace's own span (first to last arrival, s, as replayed): --duration does not apply to it."""
    return float(next(iter(runs.results.values())).arrivals.get("span_s") or 0.0)


def _capacity(models: Mapping[str, ServingModel], budget_ms: float, rq: ServeRequest, run_kw: dict[str, Any],
              progress: Callable[[int, int], None] | None) -> CapacitySummary:
    """Capacity at the p99 budget for each model, with one progress count over all of them."""
    labels = list(models)
    done: dict[str, int] = {}
    guess: dict[str, int] = {}

    def tick(lab: str) -> Callable[[int, int], None]:
        def update(n: int, total: int) -> None:
            done[lab], guess[lab] = n, total
            if progress is not None:
                est = max(guess.values())
                progress(sum(done.values()), sum(guess.get(x, est) for x in labels))
        return update

    caps: dict[str, CapacityResult] = {}
    for lab, m in models.items():
        caps[lab] = find_max_rate(m, budget_ms, metric=rq.sla_metric, requests=rq.requests_per_eval, rtol=rq.rtol,
                                  progress=tick(lab), **run_kw)
    ratio = None
    if len(caps) == 2:
        a, b = (caps[lab].max_rate_rps for lab in labels)
        bounded = not any(c.lower_bound_only for c in caps.values())
        ratio = round(b / a, 6) if a and bounded else None
    return CapacitySummary(budget_ms=budget_ms, metric=next(iter(caps.values())).metric, results=caps,
                           sparse_over_dense=ratio)


def _service_clocks(models: Mapping[str, ServingModel]) -> dict[str, RunClock] | None:
    """The clocks of the runs each deployment's service times come from (prefill and decode together, each
    simulated shape once), by label; None unless the power cap lowered a kernel's clock in one of them."""
    clocks = {}
    for lab, m in models.items():
        runs = [r for svc in (m.service, m.decode_service) for r in getattr(svc, "runs", None) or ()]
        clock = run_clock(runs)
        if clock is not None:
            clocks[lab] = clock
    return clocks if any(c.capped for c in clocks.values()) else None


_ENERGY_ONLY = ("interconnect energy is not modelled", "no energy figures")  # run warnings serving has no use for


def _service_warnings(models: Mapping[str, ServingModel]) -> list[str]:
    """What the simulated runs behind the service times warned about (a tensor-parallel split rounded up, a
    replicated layer, ...), once each: from each service's first run, so per-batch figures do not repeat. Energy
    caveats are left out: serving reports no energy."""
    out: dict[str, None] = {}
    for m in models.values():
        for svc in (m.service, m.decode_service):
            for w in getattr(svc, "warnings", None) or ():
                if not w.startswith(_ENERGY_ONLY):
                    out.setdefault(f"{getattr(svc, 'name', m.name)}: {w}", None)
    return list(out)


def _check_size_flags(rq: ServeRequest, workload: Path, decode: str | Path | None) -> None:
    """Refuse size flags the serving mode would ignore: an LLM (prefill + decode) takes its sizes from
    --prompt-tokens / --output-tokens, a one-shot workload from --sizes."""
    if decode is None:
        given = [f for f, v in (("--prompt-tokens", rq.prompt_tokens), ("--output-tokens", rq.output_tokens))
                 if v is not None]
        if given:
            raise ServingError(f"{' and '.join(given)}: {workload} is served one-shot (no *-decode workload beside "
                               "it): its request sizes are --sizes")
    elif rq.sizes is not None:
        raise ServingError(f"--sizes: {workload} is an LLM workload (decode: {decode}): its request sizes are "
                           "--prompt-tokens and --output-tokens")
    elif rq.prompt_tokens is not None and "seq" in _as_params(rq.set_params):
        raise ServingError("--set seq and --prompt-tokens both give the prompt lengths (--prompt-tokens would win); "
                           "give one")


def _runtime_config(rq: ServeRequest) -> RuntimeConfig:
    """The runtime config file or dict, with the batching flags given on top."""
    base: dict[str, Any] = {}
    if isinstance(rq.runtime_config, str | Path):
        base, _ = configio.read_yaml(rq.runtime_config)
    elif rq.runtime_config is not None:
        base = dict(rq.runtime_config)
    flags = {"max_batch": rq.max_batch, "max_wait_ms": rq.max_wait_ms, "instances": rq.instances}
    src = str(rq.runtime_config) if isinstance(rq.runtime_config, str | Path) else "<runtime config>"
    return RuntimeConfig.from_dict({**base, **{k: v for k, v in flags.items() if v is not None}}, src)


def _as_params(set_params: Mapping[str, Any] | Sequence[str] | None) -> dict[str, Any]:
    """Workload parameters from a mapping or ``KEY=VALUE`` strings."""
    if set_params is None:
        return {}
    if isinstance(set_params, Mapping):
        return dict(set_params)
    return parse_sets(list(set_params))


def paired_decode(workload: Path) -> Path | None:
    """The ``*-decode`` sibling of a ``*-prefill`` workload, if there is one."""
    stem = workload.stem
    if stem.endswith("-prefill"):
        cand = workload.with_name(stem.removesuffix("-prefill") + "-decode" + workload.suffix)
        if cand.is_file():
            return cand
    return None
