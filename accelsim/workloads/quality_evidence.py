"""What the quality registry publishes for a workload's model, looked up the one way every command does.

The deployment report's guardrail (:mod:`accelsim.analysis.deployment_quality`) and ``accelsim decide``
(:mod:`accelsim.serving.variants`, for a variant that names no figure) both match the workload to a
registry model (:func:`registry_model`: ``quality.model``, else its name, else its name with trailing
``-word`` parts dropped), keep the workload's ``quality.task`` (else the only task there is), and take
the smallest published drop at the format (:func:`registry_evidence`, :data:`EVIDENCE_POLICY`). A dense
deployment has no format to look up: :func:`registry_dense` takes the dense figure the matching entries
agree on (optionally among given entries: the same source as the sparse figures it is compared with).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from accelsim.quality import QualityEntry, find_entries, load_registry, normalize_name
from accelsim.records import Record
from accelsim.workloads.model import Workload

__all__ = ["EVIDENCE_POLICY", "EvidenceConflict", "QualityEvidence", "registry_dense", "registry_evidence",
           "registry_model"]

# which registry entry's drop the guardrail checks when several match: the smallest (the best published
# result for the model and format: what the format is shown to cost when pruned well); the others are listed
EVIDENCE_POLICY = "smallest published drop (a derived one only when none is published)"


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvidenceConflict(Record):
    """Two registry entries from different sources whose drops differ by more than the threshold."""

    first: str  # entry ids
    second: str
    first_drop: float
    second_drop: float
    difference: float
    same_method: bool  # True: the sources contradict each other; False: they disagree with different methods
    message: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityEvidence(Record):
    """What the quality registry publishes for the workload's model at the run's pattern."""

    model: str | None  # the registry's model name that matched, or None
    matched_by: str | None  # how: "quality.model", "workload name", "workload name without '-decode'"
    pattern: str | None
    task: str | None  # the task (and metric below) the drops are in
    metric: str | None
    higher_is_better: bool | None
    entries: tuple[str, ...]  # ids of every matching entry, smallest drop first
    drops: tuple[float, ...]  # their drops, same order
    finetuned: tuple[bool, ...]  # whether each was fine-tuned after pruning (False: one-shot), same order
    chosen: str | None  # the entry whose drop the guardrail uses (EVIDENCE_POLICY)
    dense: float | None
    sparse: float | None
    drop: float | None
    source: str | None
    kind: str | None  # "published" or "derived"
    policy: str
    conflicts: tuple[EvidenceConflict, ...]
    message: str



def registry_model(model: Workload, entries: Iterable[QualityEntry] | None = None) -> tuple[str | None, str | None]:
    """The registry model the workload is: ``quality.model`` when the workload names one, else its name, else its
    name with trailing ``-word`` parts dropped one at a time (``llama2-7b-decode`` -> ``llama2-7b``), matched
    after :func:`~accelsim.quality.normalize_name`. (registry model name, how it matched) or (None, None)."""
    pool = tuple(load_registry() if entries is None else entries)
    names = {normalize_name(e.model): e.model for e in pool}
    named = getattr(model.quality, "model", None) if model.quality is not None else None
    candidates: list[tuple[str, str]] = []
    if named:
        candidates.append((str(named), "quality.model"))
    parts = model.name.split("-")
    candidates.append((model.name, "workload name"))
    for cut in range(len(parts) - 1, 0, -1):
        candidates.append(("-".join(parts[:cut]), f"workload name without '-{'-'.join(parts[cut:])}'"))
    for text, how in candidates:
        hit = names.get(normalize_name(text))
        if hit is not None:
            return hit, how
        if how == "quality.model":  # a model the workload names is not guessed around
            return None, None
    return None, None


def _conflicts(matches: list[QualityEntry], threshold: float | None) -> tuple[EvidenceConflict, ...]:
    if threshold is None:
        return ()
    out = []
    for i, a in enumerate(matches):
        for b in matches[i + 1:]:
            diff = abs(a.drop - b.drop)
            if a.source_key == b.source_key or diff <= threshold:
                continue
            same = normalize_name(a.method) == normalize_name(b.method) and a.finetuned == b.finetuned
            how = "contradict each other (same method)" if same else f"disagree ({a.method} vs {b.method})"
            out.append(EvidenceConflict(
                first=a.id, second=b.id, first_drop=a.drop, second_drop=b.drop, difference=round(diff, 9),
                same_method=same, message=f"{a.source_key} and {b.source_key} {how}: drops {a.drop:.4g} vs "
                                          f"{b.drop:.4g}, {diff:.4g} apart (threshold {threshold:.4g})"))
    return tuple(sorted(out, key=lambda c: (-c.difference, c.first, c.second)))


def registry_evidence(model: Workload, pattern: str | None, threshold: float | None,
                      entries: Iterable[QualityEntry] | None = None) -> QualityEvidence:
    """What the registry publishes for ``model`` at ``pattern``: the matching entries of one task (the workload's
    ``quality.task`` when it names one, else the only task there is), the smallest drop and conflicts between
    sources (drops further apart than ``threshold``)."""
    pool = tuple(load_registry() if entries is None else entries)
    name, how, task, matches = _model_task_entries(model, pool, pattern)
    empty: dict[str, Any] = dict(model=name, matched_by=how, pattern=pattern, task=None, metric=None,
                                 higher_is_better=None, entries=(), drops=(), finetuned=(), chosen=None, dense=None,
                                 sparse=None, drop=None, source=None, kind=None, policy=EVIDENCE_POLICY, conflicts=())
    if name is None:
        return QualityEvidence(**empty, message=f"no model in the quality registry matches workload '{model.name}'"
                                                "; name one with quality.model")
    if pattern is None:
        return QualityEvidence(**empty, message="the run mixes patterns: no single format to look up")
    if not matches:
        where = f" for task {task}" if task else ""
        formats = sorted({e.format for e in find_entries(model=name, entries=pool)})
        return QualityEvidence(**empty, message=f"none published for {name} at {pattern}{where} (the registry has "
                                                f"{name} at: {', '.join(formats) or 'nothing'})")
    tasks = sorted({(e.task, e.metric) for e in matches})
    if len(tasks) > 1:
        listed = "; ".join(f"{t} {m}" for t, m in tasks)
        return QualityEvidence(**{**empty, "entries": tuple(e.id for e in matches),
                                  "drops": tuple(e.drop for e in matches),
                                  "finetuned": tuple(e.finetuned for e in matches)},
                               message=f"{len(matches)} published entries for {name} at {pattern} over "
                                       f"{len(tasks)} tasks ({listed}); name one with quality.task")
    matches.sort(key=lambda e: (e.drop, e.id))
    best = min(matches, key=lambda e: (e.kind != "published", e.drop, e.id))
    conflicts = _conflicts(matches, threshold)
    spread = (f"; {len(matches)} entries, drops {matches[0].drop:.4g} to {matches[-1].drop:.4g}"
              if len(matches) > 1 else "")
    message = (f"published: {best.task} {best.metric} dense {best.dense:g}, {pattern} {best.sparse:g} "
               f"({best.method}{', fine-tuned' if best.finetuned else ', one-shot'}), a drop of {best.drop:.4g} "
               f"[{best.id}]{spread}")
    return QualityEvidence(model=name, matched_by=how, pattern=pattern, task=best.task, metric=best.metric,
                           higher_is_better=best.higher_is_better, entries=tuple(e.id for e in matches),
                           drops=tuple(e.drop for e in matches), finetuned=tuple(e.finetuned for e in matches),
                           chosen=best.id, dense=best.dense,
                           sparse=best.sparse, drop=best.drop, source=best.source, kind=best.kind,
                           policy=EVIDENCE_POLICY, conflicts=conflicts, message=message)


def _model_task_entries(model: Workload, pool: tuple[QualityEntry, ...], pattern: str | None
                        ) -> tuple[str | None, str | None, str | None, list[QualityEntry]]:
    """(registry model, how it matched, the workload's quality.task, the model's entries at ``pattern`` (all
    formats when None) of that task)."""
    name, how = registry_model(model, pool)
    if name is None:
        return None, None, None, []
    matches = list(find_entries(model=name, format=pattern, entries=pool))
    task = getattr(model.quality, "task", None) if model.quality is not None else None
    if task:
        matches = [e for e in matches if normalize_name(e.task) == normalize_name(str(task))]
    return name, how, task, matches


def registry_dense(model: Workload, among: Sequence[str] = (), entries: Iterable[QualityEntry] | None = None
                   ) -> tuple[QualityEntry | None, str]:
    """The registry entry whose dense figure is ``model``'s, and a one-line account of the look-up (entry None:
    why there is none). The entries of the model (and its ``quality.task``) must be of one task and agree on the
    dense figure; ``among``: entry ids to prefer (those the dense figure is compared with: the same source), used
    when any of them is the model's. Of several entries with that figure, a published one, then the first id."""
    pool = tuple(load_registry() if entries is None else entries)
    name, _, task, matches = _model_task_entries(model, pool, None)
    if name is None:
        return None, f"no model in the quality registry matches workload '{model.name}'; name one with quality.model"
    if not matches:
        return None, f"none published for {name}{f' for task {task}' if task else ''}"
    preferred = [e for e in matches if e.id in set(among)]
    matches = preferred or matches
    tasks = sorted({f"{e.task} {e.metric}" for e in matches})
    if len(tasks) > 1:
        return None, (f"{len(matches)} published entries for {name} over {len(tasks)} tasks ({'; '.join(tasks)}); "
                      "name one with quality.task")
    values = sorted({e.dense for e in matches})
    if len(values) > 1:
        by = "; ".join(f"{v:g} ({', '.join(sorted({e.source_key for e in matches if e.dense == v}))})"
                       for v in values)
        return None, (f"the registry has {len(values)} dense figures for {name} {tasks[0]}: {by}; name one with "
                      "quality: {entry: <id>}")
    best = min(matches, key=lambda e: (e.kind != "published", e.id))
    why = " (the source of the figures it is compared with)" if preferred else ""
    return best, f"{best.kind}: {tasks[0]} dense {best.dense:g} [{best.id}]{why}"
