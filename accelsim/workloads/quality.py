"""Quality figures with their evidence: a registry entry (published or derived), or a typed number
labelled illustrative or user.

A workload's ``quality:`` section and a variants file's variant point at the quality registry
(:mod:`accelsim.quality`) by entry id (``{entry: <id>}``) or by ``{model, task, format, method}``
resolved through it; a number typed in place is possible but carries the label ``illustrative``
(the default: an assumption) or ``user`` (the user's own measurement), and every output says so.
Only registry figures (published or derived) enter a verdict.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import Field, field_validator, model_validator

from accelsim.errors import AccelsimError, ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.model import Strict
from accelsim.quality import QualityEntry, entry, find_entries, normalize_name
from accelsim.records import Record

__all__ = ["EVIDENCE_KINDS", "QUALITY_KINDS", "TYPED_KINDS", "QualityFigure", "QualityRef", "count_kinds",
           "figure_from_entry", "registry_metric", "resolve_entries", "resolve_ref", "typed_figure"]

QUALITY_KINDS = ("published", "derived", "illustrative", "user")
EVIDENCE_KINDS = ("published", "derived")  # registry figures: the only ones a verdict counts
TYPED_KINDS = ("illustrative", "user")      # numbers typed into a file


class QualityRef(Strict):
    """Where a quality figure comes from: a registry ``entry`` id, or ``model`` (+ ``task``, ``format``,
    ``method``) matched in the registry; exactly one entry must match."""

    entry: str | None = Field(None, min_length=1, description="A quality registry id (`accelsim quality list`).")
    model: str | None = Field(None, min_length=1, description="Model name as the registry spells it "
                              "(case, spaces and hyphens ignored).")
    task: str | None = Field(None, min_length=1, description="Task, e.g. 'SQuAD v1.1'.")
    format: str | None = Field(None, description="Sparsity format (default: the variant's own; 'dense' takes "
                               "the entry's dense figure).")
    method: str | None = Field(None, min_length=1, description="Pruning method, e.g. 'Wanda', when several match.")

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, value: Any) -> Any:
        return None if value is None else normalize_format(value)

    @model_validator(mode="after")
    def _one_way(self) -> QualityRef:
        if (self.entry is None) == (self.model is None):
            raise ValueError("give either 'entry' (a registry id) or 'model' (with task, format, method to narrow it)")
        if self.entry is not None and any(v is not None for v in (self.task, self.format, self.method)):
            raise ValueError("'entry' names one registry entry: drop task / format / method")
        return self


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityFigure(Record):
    """One quality figure and its evidence: ``kind`` published / derived (a registry entry, ``entry``) or
    illustrative / user (typed); ``dense``: the same source's dense figure, for the change vs dense."""

    value: float
    format: str  # "dense" or the sparse format
    kind: str
    metric: str | None
    higher_is_better: bool
    source: str | None
    entry: str | None = None
    dense: float | None = None

    @property
    def in_evidence(self) -> bool:
        """Whether the figure is a registry figure (published or derived), the only kind a verdict counts."""
        return self.kind in EVIDENCE_KINDS

    @property
    def label(self) -> str:
        """``kind`` and, for registry figures, the entry id: e.g. ``published (wanda:llama-2-7b:...)``."""
        return f"{self.kind} ({self.entry})" if self.entry else self.kind


def entry_metric(e: QualityEntry) -> str:
    """What an entry measures, as one phrase: task and metric (``SQuAD v1.1 F1``)."""
    return f"{e.task} {e.metric}"


def figure_from_entry(e: QualityEntry, fmt: str) -> QualityFigure:
    """The entry's figure for ``fmt``: its dense value for ``dense``, else its sparse value (formats must match)."""
    if fmt != "dense" and fmt != e.format:
        raise AccelsimError(f"registry entry {e.id!r} is for format {e.format}, not {fmt}")
    value = e.dense if fmt == "dense" else e.sparse
    source = e.source if e.kind == "published" else f"{e.source}; derived: {e.derivation}"
    return QualityFigure(value=float(value), format=fmt, kind=e.kind, metric=entry_metric(e),
                         higher_is_better=e.higher_is_better, source=source, entry=e.id, dense=float(e.dense))


def typed_figure(value: float, fmt: str, kind: str, metric: str | None, higher_is_better: bool,
                 source: str | None) -> QualityFigure:
    """A number typed into a file, labelled ``kind`` (illustrative or user)."""
    if kind not in TYPED_KINDS:
        raise AccelsimError(f"a typed quality figure is {' or '.join(TYPED_KINDS)}, not {kind!r}")
    return QualityFigure(value=float(value), format=fmt, kind=kind, metric=metric,
                         higher_is_better=higher_is_better, source=source)


def _matches(ref: QualityRef, fmt: str) -> tuple[QualityEntry, ...]:
    try:
        found = find_entries(model=ref.model, task=ref.task, format=None if fmt == "dense" else fmt)
    except AccelsimError as exc:
        raise ValueError(str(exc)) from None
    if ref.method is not None:
        found = tuple(e for e in found if normalize_name(e.method) == normalize_name(ref.method))
    return found


def resolve_ref(ref: QualityRef, fmt: str) -> QualityFigure:
    """The figure ``ref`` points at, for a deployment in format ``fmt`` (``ref.format`` wins when given);
    ValueError with one line saying what is missing or ambiguous."""
    fmt = ref.format or fmt
    if ref.entry is not None:
        try:
            return figure_from_entry(entry(ref.entry), fmt)
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None
    found = _matches(ref, fmt)
    what = ", ".join(f"{k} {v!r}" for k, v in (("model", ref.model), ("task", ref.task), ("method", ref.method))
                     if v is not None)
    if not found:
        raise ValueError(f"the quality registry has no entry for {what}"
                         f"{'' if fmt == 'dense' else f', format {fmt}'} (nothing published: type a number "
                         "labelled illustrative, or see `accelsim quality list`)")
    if fmt == "dense":
        values = {(e.dense, entry_metric(e)) for e in found}
        if len(values) > 1:
            raise ValueError(f"{len(found)} registry entries for {what} give different dense figures "
                             f"({', '.join(f'{e.id}: {e.dense:g}' for e in found[:4])}); name one with 'entry'")
    elif len(found) > 1:
        raise ValueError(f"{len(found)} registry entries match {what}, format {fmt} "
                         f"({', '.join(e.id for e in found[:6])}); name one with 'entry' or narrow with 'method'")
    return figure_from_entry(found[0], fmt)


def resolve_entries(ids: list[str]) -> dict[str, QualityFigure]:
    """Figures by format (``dense`` first) from registry ids; entries must share the metric and the dense
    baseline (one source's comparison); ValueError otherwise."""
    out: dict[str, QualityFigure] = {}
    for ident in ids:
        try:
            e = entry(ident)
        except AccelsimError as exc:
            raise ValueError(str(exc)) from None
        dense = figure_from_entry(e, "dense")
        have = out.get("dense")
        if have is not None and (have.metric, have.value) != (dense.metric, dense.value):
            raise ValueError(f"entries {have.entry!r} and {e.id!r} differ in metric or dense baseline "
                             f"({have.metric} {have.value:g} vs {dense.metric} {dense.value:g}); use one source's")
        out.setdefault("dense", dense)
        if e.format in out:
            raise ValueError(f"two entries for format {e.format}: {out[e.format].entry!r} and {e.id!r}")
        out[e.format] = figure_from_entry(e, e.format)
    return out


def registry_metric(model: str, task: str | None = None) -> str:
    """The one task and metric the registry has for ``model`` (and ``task``); ValueError if none or several."""
    try:
        found = find_entries(model=model, task=task)
    except AccelsimError as exc:
        raise ValueError(str(exc)) from None
    metrics = sorted({entry_metric(e) for e in found})
    what = f"model {model!r}" + (f", task {task!r}" if task else "")
    if not metrics:
        raise ValueError(f"the quality registry has no entry for {what} (see `accelsim quality list`)")
    if len(metrics) > 1:
        raise ValueError(f"the quality registry has {what} in {len(metrics)} tasks ({'; '.join(metrics[:5])}): "
                         "name one with task")
    return metrics[0]


def count_kinds(figures: Any) -> dict[str, int]:
    """How many figures of each kind (every kind of :data:`QUALITY_KINDS`, zeros included)."""
    counts = dict.fromkeys(QUALITY_KINDS, 0)
    for f in figures:
        counts[f.kind] += 1
    return counts


def wrap(src: str, key: str, exc: ValueError) -> ConfigError:
    """A resolution problem as the one-line file error ``src: key: problem``."""
    return ConfigError(src, key, str(exc))
