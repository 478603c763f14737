"""Every quality figure the deployment report shows, with its evidence label, and the count of each kind.

The workload's own figures (its ``quality:`` section: registry entries are published or derived, typed
numbers illustrative or user) and the registry entries the guardrail's evidence lists (one dense -> sparse
pair each, published or derived). The report header prints the counts; the quality section lists them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from accelsim.analysis.deployment_quality import QualityGuard
from accelsim.errors import AccelsimError
from accelsim.quality import entry
from accelsim.records import Record, freeze
from accelsim.workloads.model import Workload
from accelsim.workloads.quality import QUALITY_KINDS

__all__ = ["LabelledFigure", "QualityLabels", "quality_labels"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LabelledFigure(Record):
    """One quality figure in the report: where it shows, its format and value, its kind and registry id."""

    where: str  # "workload quality section" or "registry evidence"
    format: str
    value: float
    dense: float | None
    kind: str  # published, derived, illustrative or user
    entry: str | None
    source: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityLabels(Record):
    """The report's quality figures by kind (``counts``: every kind, zeros included) and one by one."""

    counts: Mapping[str, int]
    figures: tuple[LabelledFigure, ...]
    line: str


def quality_labels(model: Workload, guard: QualityGuard) -> QualityLabels:
    """Label the workload's quality figures and the registry entries of the guardrail's evidence."""
    figs: list[LabelledFigure] = []
    if model.quality is not None:
        for fmt, fig in model.quality.figures().items():
            figs.append(LabelledFigure(where="workload quality section", format=fmt, value=fig.value,
                                       dense=None if fmt == "dense" else fig.dense, kind=fig.kind, entry=fig.entry,
                                       source=fig.source))
    for ident in guard.evidence.entries:
        try:
            e = entry(ident)
        except AccelsimError:  # the guardrail was given its own registry: label what it says
            continue
        figs.append(LabelledFigure(where="registry evidence", format=e.format, value=e.sparse, dense=e.dense,
                                   kind=e.kind, entry=e.id, source=e.source))
    counts = dict.fromkeys(QUALITY_KINDS, 0)
    for f in figs:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    line = (f"quality figures: {', '.join(f'{n} {k}' for k, n in counts.items())} (registry figures are "
            "published or derived; typed ones illustrative or user)")
    return QualityLabels(counts=freeze(counts), figures=tuple(figs), line=line)
