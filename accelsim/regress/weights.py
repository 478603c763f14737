"""How much a moved metric matters: its change as a share of the model's total of the same kind.

A stall counter going from 132 to 5,086 cycles in one layer ranks by those 4,954 cycles against the
model's total cycles, not by its +3,753 %. Unitless metrics (utilization, ratios) weigh by their relative
change times the layer's share of the model's time.
"""

from __future__ import annotations

import math
from typing import Any

from accelsim.regress.flatten import flatten


def is_number(v: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def family(metric: str) -> str | None:
    """The kind of quantity a metric counts, when the model has a total of it (else None: unitless)."""
    if metric.startswith("totals."):
        metric = metric[len("totals."):]
    elif metric.startswith("by_op_type["):
        metric = metric.split("].", 1)[-1]
    head, _, rest = metric.partition(".")
    if head in ("dense_total_cycles", "dense_cycles"):
        return "dense_cycles"
    if head in ("cycles", "busy") or metric == "fallback.cycles":
        return "cycles"
    if head == "bytes":
        return rest.partition(".")[0] or None  # dram / sram
    if head in ("macs", "macs_executed"):
        return "macs"
    if head == "energy" and any(p.endswith("_j") and not p.endswith("per_j") for p in rest.split(".")):
        return "energy"  # total_j, dense_total_j, by_component_j.*, by_tensor_j.* (not inferences_per_j)
    if head == "latency_us":
        return "latency"
    if head == "footprint" and metric.endswith("_bytes"):
        return "footprint"
    return None


def family_totals(result: dict[str, Any]) -> dict[str, float]:
    """The model's total of each kind of quantity (what a change is a share of)."""
    flat = {k: v for k, v in flatten({"totals": result.get("totals"), "footprint": result.get("footprint")}).items()
            if is_number(v) and math.isfinite(v)}
    out = {"cycles": flat.get("totals.cycles.total"), "dense_cycles": flat.get("totals.dense_total_cycles"),
           "macs": flat.get("totals.macs"),
           "energy": flat.get("totals.energy.total_j"), "latency": flat.get("totals.latency_us"),
           "footprint": flat.get("footprint.total_bytes")}
    for level in ("dram", "sram"):
        parts = [v for k, v in flat.items() if k.startswith(f"totals.bytes.{level}.")]
        out[level] = sum(parts) if parts else None
    return {k: abs(float(v)) for k, v in out.items() if v is not None}


class Weigher:
    """Ranking weights of one result pair: a change as a share of the model's total of its kind."""

    def __init__(self, base: dict[str, Any], cand: dict[str, Any]) -> None:
        b, c = family_totals(base), family_totals(cand)
        self.totals = {k: b[k] if b.get(k) else c.get(k, 0.0) for k in b.keys() | c.keys()}  # baseline's, if any

    def layer_share(self, b_layer: dict[str, Any], c_layer: dict[str, Any]) -> float:
        """A layer's share of the model's time (baseline, else candidate): weighs its unitless metrics."""
        total = self.totals.get("cycles")
        for layer in (b_layer, c_layer):
            cycles = layer.get("cycles")
            t = cycles.get("total") if isinstance(cycles, dict) else None
            if total and isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t):
                return min(1.0, abs(t) / total)
        return 1.0

    def weigh(self, metric: str, abs_change: float | None, rel_change: float | None,
              scope: float) -> tuple[float | None, float | None]:
        """``(share, weight)`` of a numeric change of ``metric``; ``scope``: the layer's share of time."""
        kind = family(metric)
        total = self.totals.get(kind) if kind else None
        if kind and total is not None and abs_change is not None:
            share = abs_change / total if total else (math.inf if abs_change else 0.0)
            if math.isnan(share):
                share = math.inf
            return share, share
        if rel_change is not None:
            return None, rel_change * scope
        return None, None
