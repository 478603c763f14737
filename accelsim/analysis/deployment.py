"""The sparsity deployment analysis: one result a reviewer can act on before shipping an N:M model.

:func:`build_report` simulates the model (sparse, dense, the reality-check ladder, per-reason
counterfactuals, calibration perturbations, optional extra patterns, serving latency), evaluates
the quality guardrail and a numeric proxy, and returns a frozen :class:`DeploymentReport`; its
``to_dict()`` is ``report.json``. :mod:`accelsim.report.deploy` renders it (``report.md``,
``report.html``, charts); ``accelsim report`` writes the files.

Determinism: everything except ``header`` (versions, commit, host, command, input hashes, date) is
identical across identical runs.

Where each part is defined: summary, matrix, layers and pruning schedule in
:mod:`.deployment_summary`; dense-fallback counterfactuals in :mod:`.deployment_fallback`; quality
guardrail and numeric proxy in :mod:`.deployment_quality`; calibration sensitivity in
:mod:`.sensitivity`; serving latency in :mod:`.deployment_serving`; the reality ladder in :mod:`.reality`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import importlib.metadata
import math
import os
import platform
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.analysis.deployment_fallback import FallbackImpact, fallback_impact
from accelsim.analysis.deployment_labels import QualityLabels, quality_labels
from accelsim.analysis.deployment_quality import (
    Guardrail,
    QualityGuard,
    QualityReport,
    load_weights,
    numeric_proxy,
    quality_guard,
)
from accelsim.analysis.deployment_serving import ServingSection, serving_section
from accelsim.analysis.deployment_summary import (
    LayerRow,
    PruningSchedule,
    Summary,
    SupportMatrix,
    layer_rows,
    pruning_schedule,
    summarise,
    support_matrix,
)
from accelsim.analysis.reality import RealityCheck, reality_check
from accelsim.analysis.sensitivity import Sensitivity, sensitivity
from accelsim.errors import AccelsimError
from accelsim.formats import families, normalize_format, parse_format
from accelsim.hardware.model import Hardware
from accelsim.lowering import POLICIES, REASON_CODES, lower
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.results import RunResult, build_meta
from accelsim.simulation import Simulator, peak_macs_per_cycle, run
from accelsim.workloads.model import Workload
from accelsim.workloads.moe import routing_records
from accelsim.workloads.names import group_name
from accelsim.workloads.plan import plan_label
from accelsim.workloads.tensor_parallel import split

__all__ = ["REPORT_SCHEMA_VERSION", "Contradiction", "DeploymentReport", "InputFile", "ReportHeader",
           "ReportInputs", "Subject", "WeightsFile", "build_header", "build_report"]

REPORT_SCHEMA_VERSION = 1
ONE_LAYER_SHARE = 0.5


# ============================================================================================ records

@dataclasses.dataclass(frozen=True, kw_only=True)
class InputFile(Record):
    """A config file the report was built from (``params``: the workload's parameters)."""

    source: str
    config_hash: str
    file_sha256: str | None
    params: Mapping[str, Any] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class WeightsFile(Record):
    source: str
    file_sha256: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportInputs(Record):
    hardware: InputFile
    workload: InputFile
    weights: WeightsFile | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportHeader(Record):
    """What may change between identical runs: build, host, command, inputs, date."""

    accelsim_version: str
    git_commit: str | None
    python: str
    numpy: str
    numba: str
    matplotlib: str
    host_cpu: str
    platform: str
    command: str
    inputs: ReportInputs
    date_utc: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Subject(Record):
    """What the report is about: workload, hardware, pattern, policy."""

    workload: str
    description: str | None
    params: Mapping[str, Any]
    dtype: str
    hardware: str
    clock_ghz: float
    peak_macs_per_cycle: float  # the array's dense MACs per cycle in ``dtype``
    sparsity: str | None
    pattern: str | None
    label: str
    policy: str
    title: str
    layers: int
    # where the array runs element types other than ``dtype`` alone (quantized linears): each type it runs and its
    # peak, the one each layer's utilization and the occupancy are measured against
    peak_macs_per_cycle_by_dtype: Mapping[str, float] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    hw_set: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # --hw-set overrides
    # the routing assumption of the workload's moe ops, as run records it under workload.moe (None: no moe op)
    moe: tuple[Mapping[str, Any], ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Contradiction(Record):
    """Evidence that points the other way; which optional fields it carries depends on ``kind``."""

    kind: str
    reason: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    layers: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    cycles_lost: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    speedup: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    share_of_saved: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    range: tuple[float, float] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    message: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeploymentReport(Record):
    """The deployment analysis; ``to_dict()`` is ``report.json`` (``header`` first, then the body)."""

    header: ReportHeader
    schema_version: int
    subject: Subject
    guardrail: Guardrail
    summary: Summary
    reality_check: RealityCheck
    matrix: SupportMatrix
    layers: tuple[LayerRow, ...]
    pruning_schedule: PruningSchedule
    fallback_impact: FallbackImpact
    quality: QualityReport
    quality_labels: QualityLabels    # every quality figure shown, labelled, and the count of each kind
    sensitivity: Sensitivity
    serving: ServingSection
    contradictions: tuple[Contradiction, ...]
    hardware: Mapping[str, Any]      # the hardware config as run
    reason_codes: Mapping[str, str]  # every reason code and what it means


# ============================================================================================ header

def _file_sha256(path: str | os.PathLike[str] | None) -> str | None:
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def _version(dist: str) -> str:
    """An installed distribution's version (the renderer's matplotlib draws the charts)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _host_cpu() -> str:
    name = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name or 'unknown CPU'} ({platform.machine()}, {os.cpu_count()} logical CPUs)"


def build_header(model: Workload, hw: Hardware, *, command: list[str] | str | None = None,
                 hw_source: str | None = None, workload_source: str | None = None,
                 weights: str | os.PathLike[str] | None = None) -> ReportHeader:
    """The part of the report that may change between identical runs: build, host, command, inputs, date."""
    meta = build_meta(None, {"hardware": hw.config_hash(), "workload": model.config_hash()})
    cmd = command if isinstance(command, str) else (shlex.join(command) if command else "")
    inputs = ReportInputs(
        hardware=InputFile(source=hw_source or "<hardware>", config_hash=hw.config_hash(),
                           file_sha256=_file_sha256(hw_source)),
        workload=InputFile(source=workload_source or "<workload>", config_hash=model.config_hash(),
                           file_sha256=_file_sha256(workload_source), params=freeze(model.params)),
        weights=WeightsFile(source=str(weights), file_sha256=_file_sha256(weights)) if weights else None,
    )
    return ReportHeader(
        accelsim_version=meta["accelsim_version"], git_commit=meta["git_commit"], python=meta["python"],
        numpy=meta["numpy"], numba=meta["numba"], matplotlib=_version("matplotlib"), host_cpu=_host_cpu(),
        platform=platform.platform(), command=cmd, inputs=inputs,
        date_utc=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
    )


# ============================================================================================ contradictions

def _contradictions(real: RunResult, rows: tuple[LayerRow, ...], schedule: PruningSchedule, impact: FallbackImpact,
                    sens: Sensitivity, guard: QualityGuard) -> list[Contradiction]:
    out = []
    speedup = schedule.run_speedup
    slower = [row for row in rows if row.path == "sparse" and row.cycles > row.dense_cycles]
    if slower:
        lost = sum(row.cycles - row.dense_cycles for row in slower)
        names = [row.name for row in slower]
        out.append(Contradiction(kind="sparse_slower_than_dense", layers=tuple(names), cycles_lost=lost,
                                 message=f"{len(slower)} op(s) run slower sparse than dense, losing {lost:,} cycles "
                                         f"({lost / (real.total_cycles or 1):.1%} of the sparse run): "
                                         f"{group_name(names, universe=[row.name for row in rows])}"))
    if speedup < 1.0:
        out.append(Contradiction(kind="model_slower_than_dense", speedup=speedup,
                                 message=f"the model as a whole is slower sparse than dense ({speedup:.3f}x)"))
    net = real.dense_total_cycles - real.total_cycles
    if net > 0 and schedule.rows:
        top = schedule.rows[0]
        if top.saved_cycles > ONE_LAYER_SHARE * net:
            out.append(Contradiction(kind="speedup_rests_on_one_layer", layers=(top.name,),
                                     share_of_saved=top.saved_cycles / net,
                                     message=f"the speedup rests on one op: {top.name} saves "
                                             f"{top.saved_cycles / net:.0%} of the net time saved"))
    if sens.runs and (sens.crosses_one or sens.wider_than_gain):
        lo, hi = sens.range
        why = []
        if sens.crosses_one:
            why.append("1.0x lies inside it: the sign of the gain is not settled")
        if sens.wider_than_gain:
            why.append(f"it is wider ({hi - lo:.3f}) than the gain itself ({speedup - 1.0:+.3f})")
        out.append(Contradiction(kind="speedup_within_calibration_sensitivity", range=(lo, hi),
                                 message=f"perturbing each CALIBRATED field by +/-{sens.perturbation:.0%} moves the "
                                         f"speedup over {lo:.3f}x - {hi:.3f}x; " + " and ".join(why)))
    for r in impact.reasons:
        if not r.as_expected:
            if r.expected == "up":
                msg = (f"removing '{r.reason}' would not speed the model up: its {r.count} op(s) simulate "
                       f"{'slower' if r.direction == 'down' else 'no faster'} sparse than dense "
                       f"({r.speedup_now:.3f}x -> {r.speedup_if_removed:.3f}x; {r.sparse_faster_layers} "
                       f"of {r.count} gain on their own)")
            else:
                msg = f"forcing the '{r.reason}' ops sparse would not slow the model down as expected"
            out.append(Contradiction(kind="fallback_fix_would_not_help", reason=r.reason, layers=r.layers,
                                     message=msg))
    if guard.status == "missing":
        out.append(Contradiction(kind="quality_figures_missing", message=guard.message))
    return out


# ============================================================================================ build

def _element_peaks(*runs: RunResult) -> Mapping[str, float] | None:
    """The array's peak in each element type the runs' array layers run in, where that is not the workload's
    dtype alone; None otherwise."""
    own = runs[0].workload["dtype"]
    peaks = {r.dtype or own: run.layer_peak(r) for run in runs for r in run.layers
             if r.path not in ("vector", "communication")}
    return None if set(peaks) <= {own} else freeze(dict(sorted(peaks.items())))


def _subject_title(model: Workload, hw: Hardware, label: str, hw_set: Sequence[str] = ()) -> str:
    params = ", ".join(f"{k} {v}" for k, v in model.params.items())
    changed = f" (--hw-set {', '.join(hw_set)})" if hw_set else ""
    return f"{model.name}{f' ({params})' if params else ''} on {hw.name}{changed}, {label}"


def _run_pattern(real: RunResult, sparsity: str | None) -> str | None:
    """The one pattern the run asks for: ``--sparsity``, else the one its plan asks every such layer for; None for
    a plan that asks different layers for different patterns (a top-level ``sparsity`` is not the whole plan)."""
    if sparsity not in (None, "dense"):
        return sparsity
    requested = sorted({r.pattern_requested for r in real.layers if r.pattern_requested})
    return requested[0] if len(requested) == 1 else None


def best_formats(model: Workload, hw: Hardware, real: RunResult, dense_cycles: list[int], sim: Simulator,
                 source: str) -> dict[str, tuple[str, float]]:
    """Per layer that asks for sparsity in ``real``: the fastest format of any registered family at the sparsity
    level of the pattern that layer asks for (1 - its density; one level for a --sparsity run, each layer's own in a
    plan that mixes levels), or ("dense", 1.0) when none beats dense. A layer that asks for none (vector ops, a
    layer the plan keeps dense) gets no entry."""
    levels: dict[float, set[str]] = {}  # level -> the layers asking for a pattern of that level
    for lay in real.layers:
        fmt = parse_format(lay.pattern_requested) if lay.pattern_requested else None
        if fmt is not None:
            levels.setdefault(round(1.0 - fmt.density, 9), set()).add(lay.name)
    best: dict[str, tuple[str, float]] = {}
    for level, names in levels.items():
        for family in families():
            candidate = family.at_sparsity(level)
            if candidate is None:
                continue
            res = run(model, hw, str(candidate), hw_source=source, simulator=sim)
            for i, lay in enumerate(res.layers):
                if lay.name not in names or not lay.pattern_requested:
                    continue
                gain = dense_cycles[i] / lay.cycles["total"] if lay.path == "sparse" and lay.cycles["total"] else 1.0
                if gain > best.get(lay.name, ("dense", 1.0))[1]:
                    best[lay.name] = (str(candidate), gain)
                best.setdefault(lay.name, ("dense", 1.0))
    return best


def _checked_patterns(patterns: list[str] | str | None) -> list[str]:
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    extra: list[str] = []
    for p in patterns or []:
        try:
            norm = normalize_format(p)
        except ValueError as exc:
            raise AccelsimError(f"patterns: {exc}") from None
        if norm == "dense":
            raise AccelsimError("patterns: 'dense' is not a pattern for the supported-layer matrix")
        if norm not in extra:
            extra.append(norm)
    return extra


def build_report(model: Workload, hw: Hardware, sparsity: str | None, *, policy: str = "sparse-if-supported",
                 patterns: list[str] | str | None = None, quality_threshold: float | None = None,
                 weights: str | os.PathLike[str] | None = None, command: list[str] | str | None = None,
                 hw_source: str | None = None, workload_source: str | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 hw_set: Sequence[str] = ()) -> DeploymentReport:
    """Simulate and assemble the deployment analysis (see the module docstring).

    ``sparsity``: the N:M pattern for every weight op (None: the workload's own plan).
    ``patterns``: extra patterns for the supported-layer matrix (list or "2:4,1:4").
    ``quality_threshold``: the largest acceptable quality drop (wins over ``quality.max_drop``).
    ``weights``: a .npz (arrays named by layer) or .npy (single weight layer) for the numeric proxy.
    ``progress(done, total)`` after each stage (runs, reality check, impact, proxy, sensitivity, serving).
    ``hw_set``: the ``--hw-set`` overrides ``hw`` was loaded with, named in the title and the subject.
    """
    if policy not in POLICIES:
        raise AccelsimError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if sparsity is not None:
        try:
            sparsity = normalize_format(sparsity)
        except ValueError as exc:
            raise AccelsimError(f"sparsity: {exc}") from None
    if sparsity == "dense" or (sparsity is None and not any(k.pattern_requested for k in lower(model, hw, None))):
        raise AccelsimError("the report needs a pattern: pass a sparsity such as 2:4, or give the workload a "
                            "sparsity plan")
    if quality_threshold is not None and not (isinstance(quality_threshold, int | float)
                                              and 0 <= quality_threshold < math.inf):
        raise AccelsimError(f"quality threshold must be a finite number >= 0 (the largest acceptable drop), "
                            f"got {quality_threshold!r}")
    extra = _checked_patterns(patterns)

    loaded = load_weights(weights, model) if weights is not None else None  # bad weights fail before any run
    stages = 9 + len(extra)
    done = [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], stages)

    source = hw_source or "<hardware>"
    sim = Simulator(hw, source)
    real = run(model, hw, sparsity, policy=policy, hw_source=source, simulator=sim)
    step()
    dense = run(model, hw, "dense", hw_source=source, simulator=sim)
    step()
    dense_cycles = [r.cycles["total"] for r in dense.layers]
    label = plan_label(sparsity, real.layers)
    if sum(dense_cycles) != real.dense_total_cycles:  # an engine invariant: every speedup below divides by both
        raise AccelsimError(f"internal inconsistency: the dense run takes {sum(dense_cycles):,} cycles but the "
                            f"{label} run's dense baseline takes {real.dense_total_cycles:,}; the report would "
                            "mix them (please report this with the command)")
    pattern = _run_pattern(real, sparsity)
    rc = reality_check(model, hw, sparsity, policy=policy, hw_source=source, hw_set=hw_set)
    step()

    runs = [(label, real)]
    for p in extra:
        if p != sparsity:
            runs.append((p, run(model, hw, p, policy=policy, hw_source=source, simulator=sim)))
        step()
    rows = layer_rows(real, dense_cycles, best_formats(model, hw, real, dense_cycles, sim, source))
    schedule = pruning_schedule(real, dense_cycles)
    step()
    impact = fallback_impact(split(model, hw.devices).workload if hw.devices > 1 else model, hw, real, policy)
    step()
    guard = quality_guard(model, pattern, quality_threshold)
    proxy = numeric_proxy(model, real, weights, loaded)
    step()
    sens = sensitivity(model, hw, sparsity, policy, schedule.run_speedup)
    step()
    contradictions = _contradictions(real, rows, schedule, impact, sens, guard)
    step()
    serving = serving_section(hw, workload_source, model, sparsity, label, policy, sim)
    step()

    return DeploymentReport(
        header=build_header(model, hw, command=command, hw_source=hw_source, workload_source=workload_source,
                            weights=weights),
        schema_version=REPORT_SCHEMA_VERSION,
        subject=Subject(workload=model.name, description=model.description, params=freeze(model.params),
                        dtype=model.dtype, hardware=hw.name, clock_ghz=hw.clock_ghz,
                        peak_macs_per_cycle=peak_macs_per_cycle(hw, model.dtype), sparsity=sparsity,
                        pattern=pattern, label=label, policy=policy, title=_subject_title(model, hw, label, hw_set),
                        layers=len(real.layers), peak_macs_per_cycle_by_dtype=_element_peaks(real, dense),
                        hw_set=tuple(hw_set) or None,
                        moe=None if (moe := routing_records(model.moe)) is None else freeze(tuple(moe))),
        guardrail=guard.guardrail(),
        summary=summarise(real, dense, rc),
        reality_check=rc,
        matrix=support_matrix(model, runs, dense_cycles),
        layers=rows,
        pruning_schedule=schedule,
        fallback_impact=impact,
        quality=QualityReport(**{f.name: getattr(guard, f.name) for f in dataclasses.fields(guard)}, proxy=proxy),
        quality_labels=quality_labels(model, guard),
        sensitivity=sens,
        serving=serving,
        contradictions=tuple(contradictions),
        hardware=freeze(hw.to_dict()),
        reason_codes=freeze(REASON_CODES),
    )
