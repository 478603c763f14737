"""Quality at equal latency budget: candidate variants (workload, sparsity, quality figure) from a
variants YAML, each served at the same rate; the best quality that holds the budget, against dense."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.model import Hardware, Strict
from accelsim.serving.config import DEFAULT_REQUESTS_PER_EVAL, RuntimeConfig, ServingError
from accelsim.serving.model import ServingModel
from accelsim.serving.results import QualityResult, VariantOutcome
from accelsim.serving.service import resolve_hardware
from accelsim.simulation import Simulator

__all__ = ["Variant", "VariantsFile", "load_variants", "quality_at_budget"]


class Variant(Strict):
    """One deployable variant: a workload, a sparsity, workload parameters and its quality figure."""

    name: str = Field(min_length=1)
    workload: str = Field(min_length=1, description="Workload YAML, relative to the variants file.")
    sparsity: str = "dense"
    set: dict[str, int | float] = Field(default_factory=dict, description="Workload parameters (--set).")
    quality: float | None = Field(None, description="Quality figure (higher is better); if absent, the "
                                  "workload file's top-level 'quality' key is read.")
    quality_source: str | None = None


class VariantsFile(Strict):
    """Candidate variants for quality at equal latency budget."""

    metric: str = Field("quality", description="What 'quality' measures, e.g. 'SQuAD v1.1 dev F1'.")
    note: str | None = None
    budget_ms: float | None = Field(None, gt=0, description="Default latency budget (the caller's wins).")
    rate_rps: float | None = Field(None, gt=0, description="Default arrival rate (the caller's wins).")
    variants: list[Variant] = Field(min_length=1)


def load_variants(path: str | Path) -> tuple[VariantsFile, list[Path]]:
    """Read a variants YAML; return it and each variant's workload path resolved against the file."""
    data, _ = configio.read_yaml(path)
    vf = configio.validate(VariantsFile, data, str(path))
    seen: set[str] = set()
    paths = []
    for i, v in enumerate(vf.variants):
        if v.name in seen:
            raise ConfigError(str(path), f"variants.{i}.name", f"name {v.name!r} is used twice")
        seen.add(v.name)
        wl = Path(v.workload)
        paths.append(wl if wl.is_absolute() else Path(path).parent / wl)
        try:
            normalize_format(v.sparsity)
        except ValueError as exc:
            raise ConfigError(str(path), f"variants.{i}.sparsity", str(exc)) from None
    return vf, paths


def _variant_quality(v: Variant, path: Path, src: str, i: int) -> float:
    if v.quality is not None:
        return float(v.quality)
    data, _ = configio.read_yaml(path)
    q = data.get("quality")
    if isinstance(q, int | float) and not isinstance(q, bool):
        return float(q)
    raise ConfigError(src, f"variants.{i}.quality", f"no quality figure here or in {v.workload}")


def quality_at_budget(variants: str | Path, hw: Hardware | str | Path, budget_ms: float | None = None,
                      rate: float | None = None, *,
                      config: RuntimeConfig | Mapping[str, Any] | None = None, duration_s: float | None = None,
                      requests: int | None = DEFAULT_REQUESTS_PER_EVAL, seed: int = 0, sizes: Any = None,
                      quantile: str = "p99", hw_set: Sequence[str] | None = None,
                      simulator: Simulator | None = None) -> QualityResult:
    """Best-quality variant whose ``quantile`` latency holds ``budget_ms`` at ``rate``, and its quality
    delta against the best dense variant that holds the same budget (quality at equal latency budget)."""
    vf, paths = load_variants(variants)
    budget_ms = budget_ms if budget_ms is not None else vf.budget_ms
    rate = rate if rate is not None else vf.rate_rps
    if budget_ms is None or rate is None:
        raise ServingError(f"{variants}: give a latency budget and an arrival rate (or budget_ms / rate_rps "
                           "in the variants file)")
    hw_obj, hw_src = resolve_hardware(hw, hw_set)
    sim = simulator or Simulator(hw_obj, hw_src)
    rows: list[VariantOutcome] = []
    for i, (v, path) in enumerate(zip(vf.variants, paths, strict=True)):
        model = ServingModel.from_files(hw_obj, path, v.sparsity, config=config, set_params=v.set, simulator=sim)
        res = model.run(rate, duration_s=duration_s, requests=requests, seed=seed, sizes=sizes,
                        sla_p99_ms=budget_ms if quantile == "p99" else None)
        value = res.latency_ms.quantile(quantile)
        rows.append(VariantOutcome(name=v.name, workload=v.workload, sparsity=model.sparsity, set=dict(v.set),
                                   quality=_variant_quality(v, path, str(variants), i),
                                   quality_source=v.quality_source, quantile=quantile, value_ms=value,
                                   p50_ms=res.latency_ms.p50, utilisation=res.utilisation,
                                   holds=bool(value <= budget_ms)))
    ok = [r for r in rows if r.holds]
    best = max(ok, key=lambda r: r.quality, default=None)
    dense = max((r for r in ok if r.sparsity == "dense"), key=lambda r: r.quality, default=None)
    delta = None if best is None or dense is None else round(best.quality - dense.quality, 6)
    return QualityResult(metric=vf.metric, note=vf.note, budget_ms=budget_ms, quantile=quantile, rate_rps=rate,
                         seed=seed, requests=requests, duration_s=duration_s, variants=tuple(rows),
                         best=None if best is None else best.name,
                         best_quality=None if best is None else best.quality,
                         dense_baseline=None if dense is None else dense.name,
                         dense_baseline_quality=None if dense is None else dense.quality, quality_delta=delta)
