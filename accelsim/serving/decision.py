"""The decision at equal latency budget: every variant of a model family served on one hardware config at
one rate, its p99 latency beside its quality figure, and at each budget the best variant whose quality is
registry evidence (published or derived) against the best such dense variant (``accelsim decide``).

Each variant is simulated once; the budgets only change the verdicts. Typed (illustrative / user) and
missing figures are shown, marked and never counted; a variant that does not fit one device (an LLM
whose weights leave no room for a KV cache) is shown with no latency and holds no budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware
from accelsim.records import Record, freeze, plain
from accelsim.serving.config import DEFAULT_REQUESTS_PER_EVAL, RuntimeConfig
from accelsim.serving.limits import MAX_REQUESTS
from accelsim.serving.results import BudgetVerdict, VariantOutcome
from accelsim.serving.service import group_note, resolve_hardware
from accelsim.serving.variants import (
    count_quality_kinds,
    evaluate_variants,
    load_variants,
    merged_runtime,
    shaky_warnings,
    verdict,
)
from accelsim.simulation import Simulator
from accelsim.workloads.quality import EVIDENCE_KINDS

__all__ = ["Decision", "decide"]

MAX_BUDGETS = 16


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision(Record):
    """Quality vs latency for a family's variants on one hardware config, with a verdict per budget."""

    hardware: str
    hw_set: tuple[str, ...] | None  # the --hw-set overrides the config was loaded with (None: none)
    variants_file: str
    metric: str
    higher_is_better: bool
    latency_metric: str
    quantile: str
    rate_rps: float
    requests: int | None
    duration_s: float | None
    seed: int
    runtime_config: Mapping[str, Any]
    note: str | None
    quality_kinds: Mapping[str, int]
    counted_kinds: tuple[str, ...]
    variants: tuple[VariantOutcome, ...]
    verdicts: tuple[BudgetVerdict, ...]
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The decision as plain data: the study, one row per variant, one verdict per budget."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["runtime_config"] = plain(self.runtime_config)
        out["quality_kinds"] = dict(self.quality_kinds)
        out["counted_kinds"] = list(self.counted_kinds)
        out["variants"] = [v.to_dict() for v in self.variants]
        out["verdicts"] = [v.to_dict() for v in self.verdicts]
        out["notes"] = list(self.notes)
        out["warnings"] = list(self.warnings)
        if self.hw_set is None:
            del out["hw_set"]
        else:
            out["hw_set"] = list(self.hw_set)
        return {"command": "decide", **out}

    def variant(self, name: str) -> VariantOutcome:
        """The row of variant ``name``."""
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)


def _notes(rows: Sequence[VariantOutcome]) -> list[str]:
    notes = []
    for r in rows:
        if r.quality_kind in ("illustrative", "user"):
            notes.append(f"{r.name}: quality {r.quality:g} is {r.quality_kind} (typed, not registry evidence): "
                         "shown, not counted")
        elif r.quality_kind == "missing":
            why = f" ({r.quality_note})" if r.quality_note else ""
            notes.append(f"{r.name}: no quality figure{why}: shown, not counted")
        elif r.quality_note:  # a figure looked up in the registry, or an entry whose model could not be checked
            notes.append(f"{r.name}: {r.quality_note}")
        if r.note:
            notes.append(f"{r.name}: {r.note}")
    return notes


def decide(variants: str | Path, hw: Hardware | str | Path, budgets_ms: Sequence[float] | None = None,
           rate: float | None = None, *, config: RuntimeConfig | Mapping[str, Any] | None = None,
           duration_s: float | None = None, requests: int | None = None, seed: int = 0,
           quantile: str = "p99", hw_set: Sequence[str] | None = None,
           simulator: Simulator | None = None) -> Decision:
    """Serve every variant of ``variants`` on ``hw`` at ``rate`` (else the file's rate_rps) and judge each
    budget of ``budgets_ms`` (else the file's budget_ms): best counted variant vs best counted dense one.
    ``requests`` per variant: else the file's ``requests``, else 20000 (with ``duration_s``: that long)."""
    vf, _ = load_variants(variants)
    budgets = [float(b) for b in budgets_ms] if budgets_ms else ([vf.budget_ms] if vf.budget_ms else [])
    if not budgets:
        raise AccelsimError(f"{variants}: give a latency budget (--budget-ms, or budget_ms in the file)")
    if len(budgets) > MAX_BUDGETS:
        raise AccelsimError(f"at most {MAX_BUDGETS} budgets, got {len(budgets)}")
    if any(not b > 0 or b != b for b in budgets):
        raise AccelsimError(f"a latency budget is a number of ms > 0, got {budgets}")
    if requests is None and duration_s is None:
        requests = vf.requests or DEFAULT_REQUESTS_PER_EVAL
    if requests is not None and not (isinstance(requests, int) and 0 < requests <= MAX_REQUESTS):
        raise AccelsimError(f"--requests {requests!r}: expected an integer from 1 to {MAX_REQUESTS:,}")
    hw_obj, hw_src = resolve_hardware(hw, hw_set)
    sim = simulator or Simulator(hw_obj, hw_src)
    vf, rate_used, metric, hib, rows = evaluate_variants(
        variants, hw_obj, rate, config=config, duration_s=duration_s, requests=requests, seed=seed,
        quantile=quantile, simulator=sim)
    verdicts = tuple(verdict(rows, b, hib) for b in sorted(set(budgets)))
    return Decision(hardware=hw_obj.name, hw_set=tuple(hw_set or ()) or None,
                    variants_file=str(variants), metric=metric, higher_is_better=hib,
                    latency_metric=vf.latency, quantile=quantile, rate_rps=rate_used, requests=requests,
                    duration_s=duration_s, seed=seed, runtime_config=freeze(merged_runtime(vf, config).to_dict()),
                    note=vf.note, quality_kinds=freeze(count_quality_kinds(rows)), counted_kinds=EVIDENCE_KINDS,
                    variants=rows, verdicts=verdicts,
                    notes=tuple(n for n in (group_note(hw_obj), *_notes(rows)) if n),
                    warnings=tuple(shaky_warnings(rows, [v.budget_ms for v in verdicts])))
