"""Dense-fallback impact: what the model's speedup would be if a fallback reason were removed.

For each reason, each op with that reason gets ``time_cf = time_now * T_sparse / T_dense``, with
``T_sparse`` and ``T_dense`` the op's GEMM view simulated sparse and dense on a counterfactual copy of
the hardware that can run it (:func:`counterfactual_hardware`: the pattern added, no dtype /
weight-shape restrictions, a sparse block with unlimited decode if there was none). Under policy
``sparse-if-supported`` the ops run sparse whatever it costs; under ``fastest`` each keeps the faster
of ``time_now`` and ``time_cf``; ``slower_than_dense`` is always forced sparse (its counterfactual is
"run sparse anyway").
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from accelsim.errors import ConfigError
from accelsim.formats import SparsityFormat, parse_format
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.lowering import (
    FALLBACK_REASONS,
    REASON_CODES,
    STRUCTURED_FAMILIES,
    Kernel,
    resolve_pattern,
    sparse_view,
)
from accelsim.records import Record
from accelsim.results import KernelResult, RunResult
from accelsim.simulation import Simulator
from accelsim.workloads.model import Workload

__all__ = ["CombinedImpact", "FallbackImpact", "LayerCounterfactual", "ReasonImpact", "counterfactual_hardware",
           "fallback_impact"]

METHOD = ("time_cf = time_now x T_sparse / T_dense (the op's GEMM view simulated sparse and dense on a "
          "counterfactual copy of the hardware that supports it)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerCounterfactual(Record):
    """One fallback op: its time now, its GEMM view sparse and dense, and its time if the reason were removed."""

    name: str
    op: str
    path_now: str
    cycles_now: int
    t_sparse: int
    t_dense: int
    cycles_counterfactual: float
    cycles_chosen: float
    sparse_faster: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReasonImpact(Record):
    """The model speedup if one fallback reason were removed, and whether it moves the way it should."""

    reason: str
    description: str
    layers: tuple[str, ...]
    count: int
    cycles_now: int
    share_of_time: float
    cycles_counterfactual: float
    speedup_now: float
    speedup_if_removed: float
    change: float
    speedup_if_removed_best: float
    expected: str      # "up", or "down" for slower_than_dense
    direction: str     # "up", "down" or "none"
    as_expected: bool
    mode: str
    sparse_faster_layers: int
    hardware_changes: tuple[str, ...]
    per_layer: tuple[LayerCounterfactual, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class CombinedImpact(Record):
    """Every real reason (not slower_than_dense) removed at once."""

    reasons: tuple[str, ...]
    speedup_if_removed: float
    speedup_if_removed_best: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class FallbackImpact(Record):
    cycles: int
    share_of_time: float
    layers: int
    speedup_now: float
    policy: str
    reasons: tuple[ReasonImpact, ...]
    all_real_reasons_removed: CombinedImpact | None
    method: str


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


class NoCounterfactual(ConfigError):
    """The part's kind cannot run the format at all (e.g. unstructured on a systolic array): no what-if."""


def _format_counterfactual(hw: Hardware, fmt: SparsityFormat) -> tuple[Hardware, list[str]]:
    """A copy of ``hw`` listing a non-native format's family under core.sparse.formats (its default entry)."""
    if not fmt.needs_support or fmt.default_support is None:
        return hw, []
    d = copy.deepcopy(hw.to_dict())
    changes = []
    if d["core"].get("sparse") is None:
        d["core"]["sparse"] = {"patterns": {"2:4": {}}, "decode_groups_per_cycle": "unlimited"}
        changes.append("added a sparse block (2:4, decode unlimited)")
    sp = d["core"]["sparse"]
    if (sp.get("formats") or {}).get(fmt.key) is None:
        sp["formats"] = {**(sp.get("formats") or {}), fmt.key: dict(fmt.default_support)}
        changes.append(f"added core.sparse.formats.{fmt.key} ({', '.join(map(str, fmt.default_support.values()))})")
    try:
        return hardware_from_dict(d, f"<{hw.name} counterfactual>"), changes
    except ConfigError as err:
        raise NoCounterfactual(f"<{hw.name} counterfactual>", None, f"{fmt} cannot run on this part: "
                               f"{err.problems[0][1] if err.problems else err}") from None


def counterfactual_hardware(hw: Hardware, pattern: str) -> tuple[Hardware, list[str]]:
    """A copy of ``hw`` that can run ``pattern`` sparse on any dtype and weight shape; and what changed.

    NoCounterfactual when the part's kind cannot run the format at all (unstructured on a systolic array)."""
    pat = parse_format(pattern)
    assert pat is not None  # a fallback asked for a format
    if not pat.native:
        return _format_counterfactual(hw, pat)
    d = copy.deepcopy(hw.to_dict())
    changes: list[str] = []
    if pat is not None and pat.key in STRUCTURED_FAMILIES:
        _structured_counterfactual(d, pat, hw, changes)
        return hardware_from_dict(d, f"<{hw.name} counterfactual>"), changes
    sp = d["core"].get("sparse")
    if sp is None:
        d["core"]["sparse"] = {"patterns": {str(pat): {}}, "decode_groups_per_cycle": "unlimited"}
        changes.append(f"added a sparse datapath running {pat} (decode unlimited)")
    else:
        if resolve_pattern(pat, hw)[0] is None:
            sp["patterns"][str(pat)] = {}
            changes.append(f"added {pat} to core.sparse.patterns")
        if sp.get("dtypes") is not None:
            sp["dtypes"] = None
            changes.append("dropped core.sparse.dtypes")
        wsm = sp.get("weight_shape_multiple") or {}
        if wsm.get("m", 1) != 1 or wsm.get("k", 1) != 1:
            sp["weight_shape_multiple"] = {"m": 1, "k": 1}
            changes.append("dropped core.sparse.weight_shape_multiple")
    return hardware_from_dict(d, f"<{hw.name} counterfactual>"), changes


def _structured_counterfactual(d: dict[str, Any], pat: Any, hw: Hardware, changes: list[str]) -> None:
    """V:N:M / block: add the section (gather unlimited) and the 2:4 native V:N:M runs on, drop the dtype lists and
    the block-shape rule; a V:N:M CTA tile of M = V where none divides V. A V that is not a multiple of a systolic
    array's width stays unrunnable (a fold shares one selection): those ops keep their time."""
    sp = d["core"].get("sparse")
    if sp is None:
        sp = d["core"]["sparse"] = {"patterns": {"2:4": {}}, "decode_groups_per_cycle": "unlimited"}
        changes.append("added a 2:4 sparse datapath (decode unlimited)")
    if sp.get("dtypes") is not None:
        sp["dtypes"] = None
        changes.append("dropped core.sparse.dtypes")
    if pat.key == "vnm":
        section = sp.get("vnm") or {"runs_on": "2:4", "gather_rows_per_cycle": "unlimited"}
        if section["runs_on"] not in sp["patterns"]:
            sp["patterns"][section["runs_on"]] = {}
        sp["patterns"][section["runs_on"]]["dtypes"] = None
        tiles = section.get("cta_tiles") or d["core"]["compute"].get("cta_tiles", {}).get("sparse")
        if tiles is not None and not any(pat.v % t[0] == 0 for t in tiles):
            section["cta_tiles"] = [*tiles, [pat.v, 64, 32]]
            changes.append(f"added a V:N:M CTA tile of M = {pat.v}")
        if "vnm" not in sp:
            changes.append("added core.sparse.vnm (gather unlimited)")
        sp["vnm"] = section
        return
    section = sp.get("block") or {"gather_rows_per_cycle": "unlimited"}
    if "block" not in sp:
        changes.append("added core.sparse.block (gather unlimited)")
    mult = section.get("block_multiple") or {}
    if pat.rows % mult.get("m", 1) or pat.cols % mult.get("k", 1):
        section["block_multiple"] = {"m": 1, "k": 1}
        changes.append("dropped core.sparse.block.block_multiple")
    section["dtypes"] = None
    sp["block"] = section


def _gemm_view(layer: Any, model: Workload, hw_cf: Hardware, requested: str) -> tuple[Kernel, Kernel]:
    """The op's GEMM view as a sparse kernel (requested pattern or its best native container) and dense; the
    dense view twice when even the counterfactual cannot run it (V:N:M's V against a systolic array's width)."""
    dtype, e = model.layer_dtype(layer)  # a quantized Linear's weights' type
    sparse = sparse_view(layer, dtype, e, requested, hw_cf)
    if sparse is None:
        m, n, k = layer.gemm_shape()
        batch = layer.batch if layer.op == "matmul" else getattr(layer, "groups", 1)
        dense = Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", None, None, None,
                       b_unique=layer.ifmap_elements() if layer.op == "conv2d" else 0, batch=batch,
                       weight=layer.op != "matmul")
        return dense, dense
    dense = Kernel(layer.name, layer.op, sparse.m, sparse.n, sparse.k, dtype, e, "dense", None,
                   None, None, b_unique=sparse.b_unique, batch=sparse.batch, weight=sparse.weight)
    return sparse, dense


def fallback_impact(model: Workload, hw: Hardware, real: RunResult, policy: str) -> FallbackImpact:
    """Per fallback reason of the run ``real``, the model speedup if the reason were removed (module doc)."""
    layers = {layer.name: layer for layer in model.layers}
    total, dense_total = real.total_cycles, real.dense_total_cycles
    now_speedup = _ratio(dense_total, total)
    fallback = [r for r in real.layers if r.pattern_requested and r.path != "sparse"]
    fb_cycles = sum(r.cycles["total"] for r in fallback)
    by_reason: dict[str, list[KernelResult]] = {}
    for r in fallback:
        by_reason.setdefault(r.reason or "none", []).append(r)
    sims: dict[str, tuple[Simulator, list[str]] | None] = {}
    reasons = []
    all_real_delta = 0.0
    all_real_delta_best = 0.0
    for reason in sorted(by_reason, key=lambda x: (FALLBACK_REASONS.index(x) if x in FALLBACK_REASONS else 99, x)):
        per_layer = []
        delta = delta_best = 0.0
        changes: set[str] = set()
        forced = reason == "slower_than_dense" or policy == "sparse-if-supported"
        for r in by_reason[reason]:
            pat = r.pattern_requested
            assert pat is not None
            if pat not in sims:
                try:
                    hw_cf, ch = counterfactual_hardware(hw, pat)
                except NoCounterfactual:
                    sims[pat] = None
                    continue
                sims[pat] = (Simulator(hw_cf, f"<{hw.name} counterfactual>"), ch)
            entry = sims[pat]
            if entry is None:  # the part cannot run the format at all: no what-if for this op
                continue
            sim, ch = entry
            changes.update(ch)
            ks, kd = _gemm_view(layers[r.name], model, sim.hw, pat)
            t_sparse, t_dense = sim(ks).cycles["total"], sim(kd).cycles["total"]
            now = r.cycles["total"]
            cf = now * t_sparse / t_dense if t_dense else float(now)
            chosen = cf if forced else min(cf, float(now))
            delta += chosen - now
            delta_best += min(cf, float(now)) - now
            per_layer.append(LayerCounterfactual(name=r.name, op=r.op, path_now=r.path, cycles_now=now,
                                                 t_sparse=t_sparse, t_dense=t_dense, cycles_counterfactual=cf,
                                                 cycles_chosen=chosen, sparse_faster=t_sparse < t_dense))
        if not per_layer:  # no op of this reason has a what-if (the part cannot run its format)
            continue
        new = _ratio(dense_total, total + delta)
        best = _ratio(dense_total, total + delta_best)
        expected = "down" if reason == "slower_than_dense" else "up"
        direction = "up" if new > now_speedup else ("down" if new < now_speedup else "none")
        if reason != "slower_than_dense":
            all_real_delta += delta
            all_real_delta_best += delta_best
        cycles_now = sum(p.cycles_now for p in per_layer)
        reasons.append(ReasonImpact(
            reason=reason, description=REASON_CODES.get(reason, ""), layers=tuple(p.name for p in per_layer),
            count=len(per_layer), cycles_now=cycles_now, share_of_time=cycles_now / total if total else 0.0,
            cycles_counterfactual=cycles_now + delta, speedup_now=now_speedup, speedup_if_removed=new,
            change=new - now_speedup, speedup_if_removed_best=best,
            expected=expected, direction=direction, as_expected=direction == expected,
            mode="forced sparse" if forced else "policy fastest: each op keeps the faster kernel",
            sparse_faster_layers=sum(1 for p in per_layer if p.sparse_faster),
            hardware_changes=tuple(sorted(changes)), per_layer=tuple(per_layer),
        ))
    real_reasons = [x for x in reasons if x.reason != "slower_than_dense"]
    combined = None
    if len(real_reasons) > 1:
        combined = CombinedImpact(reasons=tuple(x.reason for x in real_reasons),
                                  speedup_if_removed=_ratio(dense_total, total + all_real_delta),
                                  speedup_if_removed_best=_ratio(dense_total, total + all_real_delta_best))
    return FallbackImpact(cycles=fb_cycles, share_of_time=fb_cycles / total if total else 0.0, layers=len(fallback),
                          speedup_now=now_speedup, policy=policy, reasons=tuple(reasons),
                          all_real_reasons_removed=combined, method=METHOD)
