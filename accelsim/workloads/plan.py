"""A run on the workload's own sparsity plan (no ``--sparsity``), named by what its layers asked for.

A plan may ask different layers for different patterns (``sparsity:`` per layer) and keep some layers dense under a
model-wide pattern (reason ``kept_dense``). One pattern name cannot describe such a run; :func:`plan_text` names
each pattern with the layers that ask for it, and the layers the plan keeps dense; :func:`plan_label` is what run,
serve, reality-check and the plots call a run: its ``--sparsity``, else ``workload plan (<plan_text>)``.

It reads only a layer's name, requested pattern and reason, so it sits with the workloads (below the results and
the analyses) where report/ may use it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from accelsim.workloads.names import group_name

__all__ = ["PLAN_LABEL", "plan_patterns", "plan_text", "plan_label"]

PLAN_LABEL = "workload plan"  # a run on the workload's own per-layer sparsity plan (no one --sparsity pattern)


class PlannedLayer(Protocol):
    """What a plan's text reads of a layer's result (:class:`accelsim.results.KernelResult` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def pattern_requested(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...


def plan_patterns(layers: Sequence[PlannedLayer]) -> dict[str, list[str]]:
    """Pattern -> the names of the layers that ask for it, patterns in order of first appearance."""
    out: dict[str, list[str]] = {}
    for lay in layers:
        if lay.pattern_requested:
            out.setdefault(lay.pattern_requested, []).append(lay.name)
    return out


def plan_text(layers: Sequence[PlannedLayer]) -> str:
    """What a run on the workload's own plan asked for, from its layers: ``'2:4'`` where every layer that asks for
    a pattern asks for the same one; ``'2:4 on g0; unstructured:75% on g2'`` where they ask for several; either
    followed by ``'; g1 dense'`` for the layers the plan keeps dense (their own ``sparsity: dense`` under a model-wide
    pattern). Layer sets are :func:`~accelsim.workloads.names.group_name` labels; ``'; '`` separates the parts,
    since a label may hold commas. ``'no pattern'`` where no layer asks for one."""
    universe = [lay.name for lay in layers]
    asked = plan_patterns(layers)
    if len(asked) == 1:
        parts = list(asked)
    else:
        parts = [f"{pattern} on {group_name(names, universe=universe)}" for pattern, names in asked.items()]
    kept = [lay.name for lay in layers if lay.reason == "kept_dense"]
    if kept:
        parts.append(f"{group_name(kept, universe=universe)} dense")
    return "; ".join(parts) if asked else "; ".join(["no pattern", *parts])


def plan_label(sparsity: str | None, layers: Sequence[PlannedLayer]) -> str:
    """What a run is called: its pattern (``'2:4'``), or on the workload's own plan ``'workload plan (<plan_text>)'``
    (``'workload plan (1:4 on g0; 2:4 on g1, g2)'``), as run, serve, reality-check and the plots name it."""
    return sparsity or f"{PLAN_LABEL} ({plan_text(layers)})"
