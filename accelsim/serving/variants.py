"""Quality at equal latency budget: candidate variants (workload, sparsity, quality figure) from a
variants YAML, each served at the same rate; the best quality that holds the budget, against dense.

A variant's quality points at the quality registry (``quality: {entry: <id>}`` or ``{model, task,
format, method}``) or is a typed number labelled ``illustrative`` (default) or ``user``; with none, the
workload's own ``quality`` key is read, and without a figure there for the variant's format the quality
registry is looked up for the workload as the deployment report looks it up (its model and task, the
smallest published drop; a dense variant: the dense figure of its sparse siblings' source); a variant
without any figure is shown as ``missing``, with what the look-up found. Registry figures must measure the
file's ``metric`` (when it names one) and be for the workload's model (when its name matches one).
Verdicts count registry figures only (published or derived): typed and missing ones are shown, marked
and excluded (:func:`verdict` says which, and what would have won had they counted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.model import Hardware, Strict
from accelsim.quality import entry, normalize_name
from accelsim.serving.arrivals import parse_size_spec
from accelsim.serving.config import (
    DEFAULT_REQUESTS_PER_EVAL,
    DoesNotFitError,
    RuntimeConfig,
    ServingError,
)
from accelsim.serving.limits import NEAR_CAPACITY, near_capacity, sample_warning
from accelsim.serving.model import ServingModel
from accelsim.serving.results import BudgetVerdict, QualityResult, VariantOutcome
from accelsim.serving.service import check_served, resolve_hardware
from accelsim.simulation import Simulator
from accelsim.workloads.model import Quality, Workload, load_workload
from accelsim.workloads.quality import QualityFigure, QualityRef, figure_from_entry, resolve_ref, typed_figure
from accelsim.workloads.quality_evidence import registry_dense, registry_evidence, registry_model

__all__ = ["LATENCY_METRICS", "CheckedVariants", "Variant", "VariantsFile", "check_variants",
           "count_quality_kinds", "evaluate_variants", "load_variants",
           "merged_runtime", "quality_at_budget", "study_metric", "verdict"]

LATENCY_METRICS = ("latency", "ttft", "tpot")


def _quality_tag(value: Any) -> str:
    return "ref" if isinstance(value, Mapping | QualityRef) else "number"


# a mapping is a registry reference, anything else a typed number: one error message, not one per member
QualityOrNumber = Annotated[Annotated[QualityRef, Tag("ref")] | Annotated[float, Tag("number")],
                            Discriminator(_quality_tag)]
KIND_ORDER = ("published", "derived", "illustrative", "user", "missing")


class Variant(Strict):
    """One deployable variant: a workload (+ decode workload for an LLM), a sparsity, workload parameters
    and its quality figure (a registry reference, or a typed number with its label)."""

    name: str = Field(min_length=1)
    workload: str = Field(min_length=1, description="Workload YAML, relative to the variants file.")
    decode_workload: str | None = Field(None, min_length=1, description="LLM: the decode workload YAML "
                                        "(prefill is 'workload'); relative to the variants file.")
    sparsity: str = "dense"
    set: dict[str, int | float] = Field(default_factory=dict, description="Workload parameters (--set).")
    quality: QualityOrNumber | None = Field(None, description="A registry reference ({entry: id} or {model, "
                                               "task, format, method}) or a typed number; if absent, the "
                                               "workload file's 'quality' key is read.")
    quality_kind: Literal["illustrative", "user"] | None = Field(None, description="Label of a typed number: "
                                                                 "illustrative (an assumption; the default) or "
                                                                 "user (your own measurement).")
    quality_source: str | None = None


class VariantsFile(Strict):
    """Candidate variants for quality at equal latency budget."""

    metric: str | None = Field(None, description="What typed figures measure, e.g. 'SQuAD v1.1 F1' (registry "
                               "figures name their own).")
    higher_is_better: bool | None = Field(None, description="Direction of the metric (registry figures carry it; "
                                          "default true for typed ones).")
    note: str | None = None
    budget_ms: float | None = Field(None, gt=0, description="Default latency budget (the caller's wins).")
    rate_rps: float | None = Field(None, gt=0, description="Default arrival rate (the caller's wins).")
    requests: int | None = Field(None, gt=0, le=1_000_000, description="Requests simulated per variant (the "
                                 "caller's wins; default 20000).")
    latency: Literal["latency", "ttft", "tpot"] = Field("latency", description="The latency the budget is on: "
                                                        "request latency, or an LLM's ttft / tpot.")
    runtime: dict[str, Any] = Field(default_factory=dict, description="RuntimeConfig fields (the caller's win).")
    sizes: str | None = Field(None, description="One-shot request sizes (as serve --sizes).")
    prompt_tokens: str | int | None = Field(None, description="LLM prompt tokens (fixed:N, uniform:A:B, ...).")
    output_tokens: str | int | None = Field(None, description="LLM output tokens (fixed:N, uniform:A:B, ...).")
    variants: list[Variant] = Field(min_length=1)


def _rel(path: str | Path, base: str | Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(base).parent / p


def load_variants(path: str | Path) -> tuple[VariantsFile, list[Path]]:
    """Read a variants YAML; return it and each variant's workload path resolved against the file."""
    data, _ = configio.read_yaml(path)
    if isinstance(data, Mapping) and "variants" not in data:  # another kind of config: say which, in one line
        kind = ("a hardware config (it has 'core')" if "core" in data or "extends" in data else
                "a workload file (it has 'layers')" if "layers" in data else None)
        if kind is not None:
            raise ConfigError(str(path), None, f"this is {kind}, expected a variants file (with 'variants')")
    vf = configio.validate(VariantsFile, data, str(path))
    seen: set[str] = set()
    for i, v in enumerate(vf.variants):
        if v.name in seen:
            raise ConfigError(str(path), f"variants.{i}.name", f"name {v.name!r} is used twice")
        seen.add(v.name)
        try:
            normalize_format(v.sparsity)
        except ValueError as exc:
            raise ConfigError(str(path), f"variants.{i}.sparsity", str(exc)) from None
        if "batch" in v.set:
            raise ConfigError(str(path), f"variants.{i}.set.batch", "serving sets the batch per batch (the "
                              "scheduler's, up to runtime.max_batch): drop it")
        for key in ("seq", "kv_len"):
            if key in v.set and not float(v.set[key]).is_integer():
                raise ConfigError(str(path), f"variants.{i}.set.{key}", f"expected a whole number of tokens, got "
                                  f"{v.set[key]!r}")
        if v.quality_kind is not None and not isinstance(v.quality, int | float):
            raise ConfigError(str(path), f"variants.{i}.quality_kind", "labels a typed quality number; this "
                              "variant has none (registry figures carry their own label)")
    llm = [v.name for v in vf.variants if v.decode_workload]
    one_shot = [v.name for v in vf.variants if not v.decode_workload]
    if vf.sizes is not None and llm:  # each would be ignored without a word by the other kind of variant
        raise ConfigError(str(path), "sizes", f"LLM variant {llm[0]!r} (with a decode_workload) takes its sizes from "
                          "prompt_tokens / output_tokens")
    for key in ("prompt_tokens", "output_tokens"):
        if getattr(vf, key) is not None and one_shot:
            raise ConfigError(str(path), key, f"one-shot variant {one_shot[0]!r} (no decode_workload) takes its sizes "
                              "from sizes")
    for key in ("sizes", "prompt_tokens", "output_tokens"):  # checked before anything is simulated
        spec = getattr(vf, key)
        if spec is not None:
            try:
                parse_size_spec(spec)
            except ServingError as exc:
                raise ConfigError(str(path), key, str(exc)) from None
    try:
        RuntimeConfig.from_dict(vf.runtime, f"{path}: runtime")
    except ConfigError as exc:  # the runtime section's own key path, under runtime.
        raise ConfigError.many(str(path), [(f"runtime.{key}" if key else "runtime", problem)
                                           for key, problem in exc.problems]) from None
    workloads = [_rel(v.workload, path) for v in vf.variants]
    for i, (v, wl) in enumerate(zip(vf.variants, workloads, strict=True)):
        for key, given in (("workload", v.workload), ("decode_workload", v.decode_workload)):
            target = wl if key == "workload" else None if given is None else _rel(given, path)
            if target is not None and not target.is_file():
                what = "a folder, not a workload file" if target.is_dir() else "file not found"
                raise ConfigError(str(path), f"variants.{i}({v.name}).{key}", f"{given}: {what}")
    return vf, workloads


@dataclasses.dataclass(frozen=True)
class CheckedVariants:
    """A variants file checked as decide and serve check it before simulating (:func:`check_variants`)."""

    file: VariantsFile
    workloads: tuple[Path, ...]  # each variant's workload, resolved against the file
    decode_workloads: tuple[Path | None, ...]  # each LLM variant's decode workload (None: one-shot)
    figures: tuple[QualityFigure | None, ...]  # each variant's quality figure, registry references resolved
    metric: str
    higher_is_better: bool
    # per variant: how a figure the variant does not name was looked up in the registry, or why there is none
    quality_notes: tuple[str | None, ...] = ()


def check_variants(path: str | Path) -> CheckedVariants:
    """Read a variants file and check everything about it that needs no hardware or simulation (ConfigError
    naming the file and key): :func:`load_variants`, each variant's ``set`` against its workloads (assigned
    as serving assigns it, the workloads expanded at their defaults with it), ``latency: ttft / tpot`` only
    on LLM variants, quality figures (:func:`variant_qualities`), one metric and direction. ``accelsim
    validate`` runs it; :func:`evaluate_variants` runs it before simulating anything."""
    vf, paths = load_variants(path)
    src = str(path)
    decodes = tuple(_rel(v.decode_workload, path) if v.decode_workload else None for v in vf.variants)
    for i, (v, wl, dec) in enumerate(zip(vf.variants, paths, decodes, strict=True)):
        if vf.latency != "latency" and dec is None:
            raise ConfigError(src, f"variants.{i}.decode_workload",
                              f"latency: {vf.latency} needs an LLM variant (a decode workload)")
        try:
            check_served(wl, v.set, dec)
        except ConfigError as exc:  # the workload's own file and key, under the variant that names it
            key = f"variants.{i}({v.name}).{'set' if v.set else 'workload'}"
            given = f"workload {v.workload}" + (f" with set {dict(v.set)}" if v.set else "")
            raise ConfigError(src, key, f"{given}: {exc.lines()[0]}") from None
    found = variant_qualities(vf, paths, src)
    figures = tuple(f for f, _ in found)
    metric, hib = study_metric(vf, figures, src)
    return CheckedVariants(vf, tuple(paths), decodes, figures, metric, hib, tuple(n for _, n in found))


def variant_figure(vf: VariantsFile, i: int, path: Path, src: str) -> QualityFigure | None:
    """Variant ``i``'s quality figure (None: no figure anywhere), registry references resolved."""
    return variant_quality(vf, i, path, src)[0]


def variant_qualities(vf: VariantsFile, paths: Sequence[Path], src: str
                      ) -> list[tuple[QualityFigure | None, str | None]]:
    """Every variant's :func:`variant_quality`: the sparse ones first, so that a dense variant whose figure is
    looked up takes the dense figure of the entries its sparse siblings use (the same source) when it can."""
    out: dict[int, tuple[QualityFigure | None, str | None]] = {}
    order = sorted(range(len(vf.variants)), key=lambda i: normalize_format(vf.variants[i].sparsity) == "dense")
    for i in order:
        among = [f.entry for f, _ in out.values() if f is not None and f.entry is not None and f.format != "dense"]
        out[i] = variant_quality(vf, i, paths[i], src, among)
    return [out[i] for i in range(len(vf.variants))]


def variant_quality(vf: VariantsFile, i: int, path: Path, src: str, among: Sequence[str] = ()
                    ) -> tuple[QualityFigure | None, str | None]:
    """Variant ``i``'s quality figure and a note. The variant's own (a registry reference, or a typed number),
    else its workload's ``quality:`` figure for the format, else the quality registry's, looked up for the
    workload as the deployment report looks it up (:mod:`accelsim.workloads.quality_evidence`; a dense variant:
    :func:`registry_dense`, preferring ``among``, the entries of the sparse variants). The note says how a figure
    was looked up, or why there is none (None: the variant or its workload names the figure). A registry entry
    for another model than the workload's is refused (ConfigError naming ``variants.<i>.quality``)."""
    v = vf.variants[i]
    fmt = normalize_format(v.sparsity)
    hib = True if vf.higher_is_better is None else vf.higher_is_better
    key = f"variants.{i}.quality"
    if isinstance(v.quality, QualityRef):
        try:
            fig = resolve_ref(v.quality, fmt)
        except ValueError as exc:
            raise ConfigError(src, key, str(exc)) from None
        _file_metric(vf, fig, src, key)
        return fig, _same_model(load_workload(path), fig, v.workload, src, key)
    if v.quality is not None:
        return typed_figure(v.quality, fmt, v.quality_kind or "illustrative", vf.metric, hib, v.quality_source), None
    data, _ = configio.read_yaml(path)
    q = data.get("quality")
    if isinstance(q, int | float) and not isinstance(q, bool):
        return typed_figure(q, fmt, "illustrative", vf.metric, hib, f"{v.workload}: quality (a typed number)"), None
    own = configio.validate(Quality, dict(q), f"{path}: quality") if isinstance(q, Mapping) else None
    if own is not None and own.figure(fmt) is not None:
        return own.figure(fmt), None
    model = load_workload(path)
    where = (f"the variant names no quality figure and {v.workload}'s quality: section has none for {fmt}"
             if own is not None else f"the variant names no quality figure and {v.workload} has no quality: section")
    if fmt == "dense":
        e, msg = registry_dense(model, among)
        ident = None if e is None else e.id
    else:
        ev = registry_evidence(model, fmt, None)
        ident, msg = ev.chosen, ev.message
    if ident is None:
        return None, f"{where}; registry: {msg}"
    fig = figure_from_entry(entry(ident), fmt)
    if own is not None and normalize_name(own.metric) != normalize_name(str(fig.metric)):
        return None, (f"{where}; registry: {msg}; not used: it measures {fig.metric}, the workload's quality: "
                      f"section {own.metric}")
    return fig, f"{where}: looked up in the quality registry ({msg})"


def _file_metric(vf: VariantsFile, fig: QualityFigure, src: str, key: str) -> None:
    """Refuse a registry figure that measures another metric than the file's ``metric`` (when it names one)."""
    if vf.metric is not None and fig.entry is not None and normalize_name(str(fig.metric)) != normalize_name(vf.metric):
        raise ConfigError(src, key, f"measures {fig.metric!r}, the file's metric is {vf.metric!r}")


def _same_model(model: Workload, fig: QualityFigure, workload: str, src: str, key: str) -> str | None:
    """Refuse a registry figure for another model than the workload's (as the report matches it: quality.model,
    else the workload's name); a workload that matches no registry model cannot be checked: a note says so."""
    assert fig.entry is not None
    e = entry(fig.entry)
    name, how = registry_model(model)
    if name is None:
        return (f"workload '{model.name}' ({workload}) matches no quality registry model, so entry {fig.entry} "
                f"(for {e.model}) is not checked against it")
    if normalize_name(name) != normalize_name(e.model):
        raise ConfigError(src, key, f"registry entry {fig.entry!r} is for {e.model}, the variant's workload "
                          f"{workload} is {name} (matched by {how})")
    return None


def study_metric(vf: VariantsFile, figures: Sequence[QualityFigure | None], src: str) -> tuple[str, bool]:
    """The metric every figure measures and its direction; registry figures must agree with each other, with
    the file's ``metric`` when it names one and with its ``higher_is_better`` (ConfigError naming the first that
    does not)."""
    metric, hib, who = vf.metric, vf.higher_is_better, None
    for i, f in enumerate(figures):
        if f is None or f.entry is None:
            continue
        _file_metric(vf, f, src, f"variants.{i}.quality")
        if who is not None and f.metric != metric:
            raise ConfigError(src, f"variants.{i}.quality", f"measures {f.metric!r}, variant {who!r} measures "
                              f"{metric!r}: a decision compares one metric")
        if hib is not None and f.higher_is_better != hib:
            way = "higher" if f.higher_is_better else "lower"
            raise ConfigError(src, f"variants.{i}.quality", f"{f.metric} is {way}-is-better, against the file's "
                              "higher_is_better")
        if who is None:
            metric, who = (vf.metric or f.metric), vf.variants[i].name
        hib = f.higher_is_better
    return metric or "quality", True if hib is None else hib


def merged_runtime(vf: VariantsFile, config: RuntimeConfig | Mapping[str, Any] | None) -> RuntimeConfig:
    """The file's runtime fields with the caller's on top (a RuntimeConfig given whole wins whole)."""
    if isinstance(config, RuntimeConfig):
        return config
    return RuntimeConfig.from_dict({**vf.runtime, **dict(config or {})})


def evaluate_variants(variants: str | Path, hw: Hardware | str | Path, rate: float | None = None, *,
                      config: RuntimeConfig | Mapping[str, Any] | None = None, duration_s: float | None = None,
                      requests: int | None = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, sizes: Any = None,
                      quantile: str = "p99", hw_set: Sequence[str] | None = None,
                      simulator: Simulator | None = None
                      ) -> tuple[VariantsFile, float, str, bool, tuple[VariantOutcome, ...]]:
    """Serve every variant at one rate; return the file, the rate, the metric, its direction and the rows."""
    checked = check_variants(variants)
    vf, metric, hib = checked.file, checked.metric, checked.higher_is_better
    src = str(variants)
    rate = rate if rate is not None else vf.rate_rps
    if requests is None and duration_s is None:
        requests = vf.requests or DEFAULT_REQUESTS_PER_EVAL
    if rate is None:
        raise ServingError(f"{variants}: give an arrival rate (or rate_rps in the variants file)")
    hw_obj, hw_src = resolve_hardware(hw, hw_set)
    sim = simulator or Simulator(hw_obj, hw_src)
    cfg = merged_runtime(vf, config)
    rows: list[VariantOutcome] = []
    for v, path, dec, fig, qnote in zip(vf.variants, checked.workloads, checked.decode_workloads, checked.figures,
                                        checked.quality_notes, strict=True):
        base: dict[str, Any] = {"quality_note": qnote,
            "name": v.name, "workload": v.workload, "decode_workload": v.decode_workload, "set": dict(v.set),
            "quality": None if fig is None else fig.value, "quality_kind": "missing" if fig is None else fig.kind,
            "quality_entry": None if fig is None else fig.entry, "quality_source": None if fig is None else fig.source,
            "quantile": quantile, "latency_metric": vf.latency}
        try:
            model = ServingModel.from_files(hw_obj, path, v.sparsity, config=cfg, set_params=v.set,
                                            decode_workload=dec, simulator=sim)
        except DoesNotFitError as exc:
            rows.append(VariantOutcome(**base, sparsity=normalize_format(v.sparsity), value_ms=None, p50_ms=None,
                                       utilisation=None, fits=False, note=f"does not fit one device: {exc}"))
            continue
        res = model.run(rate, duration_s=duration_s, requests=requests, seed=seed, sizes=sizes or vf.sizes,
                        prompt_tokens=vf.prompt_tokens, output_tokens=vf.output_tokens)
        stats = res.stats(vf.latency)
        if stats is None:
            raise ConfigError(src, "latency", f"{vf.latency} is not measured for {v.name} (one-shot model)")
        notes = []
        if res.load.overloaded:
            notes.append("overloaded: offered load above capacity, the queue grows for the whole run; counted as "
                         "missing any budget")
        elif near_capacity(res.load.offered_over_capacity):
            notes.append(f"near capacity: offered load {res.load.offered_over_capacity:.3g} of capacity (>= "
                         f"{NEAR_CAPACITY:g}); its {quantile} is not steady-state and grows with the requests "
                         "simulated, so a verdict on it may flip with more")
        more = "raise --requests" if requests is not None else "raise --duration or --rate"
        thin = sample_warning("its latency", res.measured, (quantile,), remedy=more)
        if thin is not None:
            notes.append("too few requests: " + thin.removeprefix("its latency: "))
        note = "; ".join(notes) or None
        rows.append(VariantOutcome(**base, sparsity=model.sparsity, value_ms=stats.quantile(quantile),
                                   p50_ms=stats.p50, utilisation=res.utilisation, overloaded=res.load.overloaded,
                                   note=note))
    return vf, rate, metric, hib, tuple(rows)


_SHAKY = ("too few requests", "near capacity")


def shaky_warnings(rows: Sequence[VariantOutcome], budgets_ms: Sequence[float]) -> list[str]:
    """Where a verdict rests on latencies that do not mean what they say: each variant whose quantile comes from
    too few requests (limits.min_samples) or whose offered load is near capacity (not steady-state), then one
    line per budget naming them."""
    shaky = {r.name: r.note for r in rows if r.fits and r.note and any(k in r.note for k in _SHAKY)}
    if not shaky:
        return []
    out = [f"{name}: {note}" for name, note in shaky.items()]
    for b in budgets_ms:
        out.append(f"verdict at {b:g} ms rests on {', '.join(shaky)}: it may change with more requests")
    return out


def _better(a: float, b: float, hib: bool) -> bool:
    return a > b if hib else a < b


def _rank(r: VariantOutcome, hib: bool) -> tuple[float, float, bool, str]:
    """Sort key of a candidate: better quality, then (a tie) lower latency, then dense first, then name;
    never the file's order."""
    assert r.quality is not None
    return (-r.quality if hib else r.quality, r.value_ms if r.value_ms is not None else float("inf"),
            r.sparsity != "dense", r.name)


def _best(rows: Sequence[VariantOutcome], hib: bool) -> VariantOutcome | None:
    return min(rows, key=lambda r: _rank(r, hib), default=None)


def _tie_text(best: VariantOutcome, rows: Sequence[VariantOutcome], quantile: str) -> str:
    """How a tie on quality with ``best`` among ``rows`` was broken ('' when there is none)."""
    tied = sorted((r for r in rows if r is not best and r.quality == best.quality),
                  key=lambda r: (r.value_ms if r.value_ms is not None else float("inf"), r.sparsity != "dense", r.name))
    if not tied:
        return ""
    other = tied[0]
    names = ", ".join(r.name for r in tied)
    if other.value_ms != best.value_ms:
        return (f"tie on quality ({best.quality:g}) with {names}; {best.name} is faster ({quantile} "
                f"{best.value_ms:.4g} vs {other.value_ms:.4g} ms)")
    how = "dense first" if best.sparsity == "dense" and other.sparsity != "dense" else "name"
    return f"tie on quality ({best.quality:g}) and latency with {names}; {best.name} by {how}"


def verdict(rows: Sequence[VariantOutcome], budget_ms: float, higher_is_better: bool) -> BudgetVerdict:
    """The best counted variant within ``budget_ms``, the best counted dense one, and the gain of the first
    over the second (positive = better); typed or missing figures are excluded and named. A tie on quality
    goes to the lower latency, then dense, then the name (the message says how it was broken)."""
    holding = [r for r in rows if r.meets(budget_ms)]
    counted = [r for r in holding if r.counted]
    excluded = tuple(r.name for r in holding if not r.counted)
    best = _best(counted, higher_is_better)
    dense = _best([r for r in counted if r.sparsity == "dense"], higher_is_better)
    delta = None
    if best is not None and dense is not None:
        assert best.quality is not None and dense.quality is not None
        gain = best.quality - dense.quality
        delta = round(gain if higher_is_better else -gain, 6) + 0.0  # + 0.0: no -0.0
    anyone = _best([r for r in holding if r.quality is not None], higher_is_better)
    uncounted = anyone.name if anyone is not None and (best is None or anyone.name != best.name) \
        and not anyone.counted else None
    if best is None:
        message = f"no variant with a registry figure holds {budget_ms:g} ms"
    elif dense is None:
        message = f"{best.name} is best within {budget_ms:g} ms; no dense variant with a registry figure holds it"
    elif best is dense:
        message = f"{best.name} (dense) is best within {budget_ms:g} ms: no sparse variant beats it"
    else:
        message = (f"{best.name} is best within {budget_ms:g} ms; vs the best dense, {dense.name}: "
                   f"{delta:+.4g} ({'higher' if higher_is_better else 'lower'} is better)")
    if best is not None:
        tie = _tie_text(best, counted, best.quantile)
        message += f"; {tie}" if tie else ""
    if uncounted is not None:
        message += f" ({uncounted} would win on a typed figure, not counted)"
    return BudgetVerdict(budget_ms=budget_ms, holding=tuple(r.name for r in holding),
                         best=None if best is None else best.name, best_quality=None if best is None else best.quality,
                         best_entry=None if best is None else best.quality_entry,
                         dense_baseline=None if dense is None else dense.name,
                         dense_baseline_quality=None if dense is None else dense.quality,
                         dense_baseline_entry=None if dense is None else dense.quality_entry,
                         quality_delta=delta, excluded=excluded, uncounted_winner=uncounted, message=message)


def count_quality_kinds(rows: Sequence[VariantOutcome]) -> dict[str, int]:
    """Variants by the kind of their quality figure (published, derived, illustrative, user, missing)."""
    out = dict.fromkeys(KIND_ORDER, 0)
    for r in rows:
        out[r.quality_kind] = out.get(r.quality_kind, 0) + 1
    return out


def quality_at_budget(variants: str | Path, hw: Hardware | str | Path, budget_ms: float | None = None,
                      rate: float | None = None, *,
                      config: RuntimeConfig | Mapping[str, Any] | None = None, duration_s: float | None = None,
                      requests: int | None = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, sizes: Any = None,
                      quantile: str = "p99", hw_set: Sequence[str] | None = None,
                      simulator: Simulator | None = None) -> QualityResult:
    """Best counted variant whose ``quantile`` latency holds ``budget_ms`` at ``rate``, and its quality
    delta against the best counted dense variant that holds the same budget (quality at equal latency budget)."""
    vf, _ = load_variants(variants)
    budget_ms = budget_ms if budget_ms is not None else vf.budget_ms
    if budget_ms is None or (rate is None and vf.rate_rps is None):
        raise ServingError(f"{variants}: give a latency budget and an arrival rate (or budget_ms / rate_rps "
                           "in the variants file)")
    vf, rate_used, metric, hib, rows = evaluate_variants(
        variants, hw, rate, config=config, duration_s=duration_s, requests=requests, seed=seed, sizes=sizes,
        quantile=quantile, hw_set=hw_set, simulator=simulator)
    v = verdict(rows, budget_ms, hib)
    rows = tuple(dataclasses.replace(r, holds=r.meets(budget_ms)) for r in rows)
    return QualityResult(metric=metric, note=vf.note, budget_ms=budget_ms, quantile=quantile, rate_rps=rate_used,
                         seed=seed, requests=requests, duration_s=duration_s, variants=rows, best=v.best,
                         best_quality=v.best_quality, dense_baseline=v.dense_baseline,
                         dense_baseline_quality=v.dense_baseline_quality, quality_delta=v.quality_delta,
                         higher_is_better=hib, latency_metric=vf.latency, quality_kinds=count_quality_kinds(rows),
                         verdict=v)
