"""Which pattern pays: every sparsity format the registry knows, at equal sparsity, on one hardware config.

For each sparsity level (share of zeros) each registered format family names its format at exactly that
level (:meth:`~accelsim.formats.base.SparsityFormat.at_sparsity`: 50 % -> 2:4, 90 % -> 1:10 for N:M; a
family without one is listed as "not expressible"). The workload runs with that format requested on every
weight op (``--sparsity``), so layers the hardware cannot run in it fall back dense with their reason,
exactly as ``accelsim run`` does. Per format and level: the model speedup over the real dense run, the
weights as deployed and their metadata share, layers sparse vs fallen back (by reason), the reality-check
ladder, and each layer's speedup; per level the best format for the model and per layer.

Held fixed, and said in the result: the hardware config (with any ``--hw-set`` overrides), the workload's
parameters (and its moe ops' routing assumption), the policy (``sparse-if-supported``), and the assumption
that every weight op is pruned to the level (the workload's own per-layer plan is ignored).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from accelsim.analysis.reality import Rung, reality_check
from accelsim.errors import AccelsimError
from accelsim.formats import families
from accelsim.hardware.model import Hardware
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.simulation import Simulator, run
from accelsim.workloads.model import Workload
from accelsim.workloads.moe import routing_records

__all__ = ["FormatAtLevel", "PatternsComparison", "compare_patterns", "parse_levels"]

HELD_FIXED = ("every weight op is pruned to the level in the format compared (the workload's own sparsity plan is "
              "ignored); policy sparse-if-supported; activation x activation matmuls and vector ops stay dense")


MAX_LEVELS = 32  # each level runs every format family on the whole workload


def parse_levels(text: str) -> tuple[float, ...]:
    """``"50%,75%,90%"`` (or ``"0.5,0.75"``) as shares of zeros in (0, 1), in the order given, each once.

    A level is rounded to what its label shows (six significant digits of the percentage), so two levels never
    share a label (results are keyed by it) and none shows as 0 % or 100 %; at most MAX_LEVELS levels."""
    out: list[float] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if not item.isascii():
            raise AccelsimError(f"--levels: write levels with ASCII digits, e.g. 50%,75%,90%, got {item!r}")
        try:
            value = float(item[:-1]) / 100.0 if item.endswith("%") else float(item)
        except ValueError:
            raise AccelsimError(f"--levels: expected sparsity levels like 50%,75%,90%, got {item!r}") from None
        if not math.isfinite(value) or not 0.0 < value < 1.0:
            raise AccelsimError(f"--levels: a sparsity level is a share of zeros between 0% and 100% (exclusive), "
                                f"got {item!r}")
        shown = float(level_label(value)[:-1])
        if not 0.0 < shown < 100.0:
            raise AccelsimError(f"--levels: {item!r} shows as {level_label(value)} at six significant digits; give "
                                "a level further from 0% and 100%")
        value = shown / 100.0
        if value in out:
            raise AccelsimError(f"--levels: {level_label(value)} is given twice (each level once)")
        out.append(value)
    if not out:
        raise AccelsimError("--levels: give at least one sparsity level, e.g. 50%,75%,90%")
    if len(out) > MAX_LEVELS:
        raise AccelsimError(f"--levels: {len(out)} levels; at most {MAX_LEVELS} (each runs every format family on "
                            "the whole workload)")
    return tuple(out)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FormatAtLevel(Record):
    """One format family at one sparsity level: what the model gains and why."""

    level: float  # share of zeros
    family: str  # the family's title, e.g. "N:M"
    format: str | None  # the format run; None: the family has none at this level
    speedup: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    total_cycles: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    requested_layers: int = 0  # weight ops asked to run the format
    sparse_layers: int = 0  # ... that run it (or a native format containing it)
    fallback_layers: int = 0  # ... that fell back dense
    fallback_reasons: Mapping[str, int] = dataclasses.field(default_factory=dict)
    patterns_executed: tuple[str, ...] = ()
    weights_dense_bytes: int = 0
    weights_deployed_bytes: int = 0
    metadata_bytes: int = 0
    metadata_share: float = 0.0  # of the deployed weight bytes
    ladder: tuple[Rung, ...] = ()  # the reality-check rungs (empty when nothing runs sparse)
    biggest_loss: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    layer_speedups: Mapping[str, float] = dataclasses.field(default_factory=dict)  # sparse-requested layers
    warnings: tuple[str, ...] = ()  # the run's own warnings (e.g. channel pruning's downstream assumption)

    @property
    def all_fell_back(self) -> bool:
        """Asked for, but no layer runs sparse: the curve's point is a fallback."""
        return self.format is not None and self.sparse_layers == 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class PatternsComparison(Record):
    """Every format at every level on one config; ``to_dict()`` is ``patterns.json``."""

    schema_version: int = 1
    hardware: str
    hw_set: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # --hw-set overrides
    workload: str
    params: Mapping[str, Any]
    # the routing assumption of the workload's moe ops, as run records it under workload.moe (None: no moe op)
    moe: tuple[Mapping[str, Any], ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    levels: tuple[float, ...]
    held_fixed: str
    dense_total_cycles: int
    clock_ghz: float
    results: tuple[FormatAtLevel, ...]
    best_per_level: Mapping[str, str]  # level (e.g. "75%") -> best format for the model ("dense" if none gains)
    best_per_layer: Mapping[str, Mapping[str, str]]  # level -> layer -> best format ("dense" if none gains)
    notes: tuple[str, ...] = ()  # what "best" does not weigh, and the runs' warnings, each once with its formats

    def at(self, level: float) -> list[FormatAtLevel]:
        return [r for r in self.results if r.level == level]



def held_fixed(model: Workload) -> str:
    """HELD_FIXED, and the element types the comparison ran in (a quantized workload's weights too)."""
    text = f"{HELD_FIXED}; element type {model.dtype}"
    q = model.quantization
    if q is not None:
        text += f" ({q.weights} weights on {q.quantized_layers} quantized linears)"
    return text


def level_label(level: float) -> str:
    """``0.75`` -> ``"75%"``, ``0.875`` -> ``"87.5%"``."""
    return f"{level * 100:.6g}%"


def _one(model: Workload, hw: Hardware, level: float, family: Any, dense_total: int, dense_layers: dict[str, int],
         sim: Simulator, hw_source: str) -> FormatAtLevel:
    fmt = family.at_sparsity(level)
    if fmt is None:
        return FormatAtLevel(level=level, family=family.title, format=None)
    spelling = str(fmt)
    res = run(model, hw, spelling, hw_source=hw_source, simulator=sim)
    requested = [lay for lay in res.layers if lay.pattern_requested]
    sparse = [lay for lay in requested if lay.path == "sparse"]
    reasons: dict[str, int] = {}
    for lay in requested:
        if lay.path != "sparse":
            reasons[lay.reason or "none"] = reasons.get(lay.reason or "none", 0) + 1
    fp = res.footprint
    deployed, meta = int(fp["weights_deployed_bytes"]), int(fp["weights_metadata_bytes"])
    ladder: tuple[Rung, ...] = ()
    biggest = None
    if sparse:
        check = reality_check(model, hw, spelling, hw_source=hw_source)
        ladder = check.rungs
        if check.losses:
            worst = max(check.losses, key=lambda x: x.loss)
            biggest = worst.label if worst.loss > 0 else None
    return FormatAtLevel(
        level=level, family=family.title, format=spelling, speedup=dense_total / res.total_cycles,
        total_cycles=res.total_cycles, requested_layers=len(requested), sparse_layers=len(sparse),
        fallback_layers=len(requested) - len(sparse), fallback_reasons=dict(sorted(reasons.items())),
        patterns_executed=tuple(sorted({lay.pattern_executed for lay in sparse if lay.pattern_executed})),
        weights_dense_bytes=int(fp["weights_dense_bytes"]), weights_deployed_bytes=deployed, metadata_bytes=meta,
        metadata_share=meta / deployed if deployed else 0.0, ladder=ladder, biggest_loss=biggest,
        layer_speedups={lay.name: dense_layers[lay.name] / lay.cycles["total"] for lay in requested
                        if lay.cycles["total"]},
        warnings=tuple(res.warnings))


def compare_patterns(model: Workload, hw: Hardware, levels: Sequence[float], *, hw_source: str = "<hardware>",
                     hw_set: Sequence[str] = (), progress: Any = None) -> PatternsComparison:
    """Run every registered format family at every level (see the module docstring). ``hw_set``: the
    ``--hw-set`` overrides ``hw`` was loaded with, named in the result (its title and patterns.json)."""
    sim = Simulator(hw, hw_source)
    dense = run(model, hw, "dense", hw_source=hw_source, simulator=sim)
    dense_layers = {lay.name: lay.cycles["total"] for lay in dense.layers}
    fams = families()
    results: list[FormatAtLevel] = []
    total = len(levels) * len(fams)
    for level in levels:
        for family in fams:
            results.append(_one(model, hw, level, family, dense.total_cycles, dense_layers, sim, hw_source))
            if progress is not None:
                progress(len(results), total)
    best_level: dict[str, str] = {}
    best_layer: dict[str, dict[str, str]] = {}
    for level in levels:
        here = [r for r in results if r.level == level and r.speedup is not None and r.sparse_layers]
        label = level_label(level)
        top = max(here, key=lambda r: r.speedup or 0.0, default=None)
        best_level[label] = top.format if top is not None and (top.speedup or 0.0) > 1.0 else "dense"  # type: ignore[assignment]
        layers: dict[str, str] = {}
        for name in dense_layers:
            cands = [(r.layer_speedups[name], r.format) for r in here if name in r.layer_speedups]
            gain = max(cands, key=lambda c: c[0], default=None)
            if gain is not None:
                layers[name] = gain[1] if gain[0] > 1.0 else "dense"  # type: ignore[assignment]
        best_layer[label] = layers
    return PatternsComparison(
        hardware=hw.name, hw_set=tuple(hw_set) or None, workload=model.name, params=dict(model.params),
        moe=None if (moe := routing_records(model.moe)) is None else freeze(tuple(moe)),
        levels=tuple(levels), held_fixed=held_fixed(model),
        dense_total_cycles=dense.total_cycles, clock_ghz=hw.clock_ghz, results=tuple(results),
        best_per_level=best_level, best_per_layer=best_layer, notes=_notes(results))


SPEED_ONLY = ("best is by speed alone: the formats keep different weights at the same level, so their accuracy "
              "differs (channel pruning removes whole rows, usually the largest loss); judge quality before choosing")


def _notes(results: Sequence[FormatAtLevel]) -> tuple[str, ...]:
    """SPEED_ONLY, then each distinct run warning once, with the formats whose runs gave it."""
    by_warning: dict[str, list[str]] = {}
    for r in results:
        for w in r.warnings:
            formats = by_warning.setdefault(w, [])
            if r.format is not None and r.format not in formats:
                formats.append(r.format)
    return (SPEED_ONLY, *(f"{', '.join(fmts)}: {w}" for w, fmts in by_warning.items()))
