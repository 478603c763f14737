"""The sparsity deployment report: one document a reviewer can act on before shipping an N:M model.

:func:`build_report` simulates the model (sparse, dense, the reality-check ladder, per-reason
counterfactuals, calibration perturbations, optional extra patterns), evaluates the quality
guardrail and a numeric proxy, and returns plain data. :func:`write_report` renders it as
``report.md``, ``report.html`` (one self-contained file: charts are base64 PNG data URIs, no
external CSS / JS / fonts, no ``http(s)://`` anywhere) and ``report.json``, plus the chart files
``reality_check.png``/``.svg`` and ``pruning_schedule.png`` that the Markdown links to.

Determinism: everything except the top-level ``"header"`` (versions, commit, host, command,
input hashes, date) is byte-identical across identical runs, in the JSON and in the rendered
files (where the header sits between :data:`HEADER_BEGIN` and :data:`HEADER_END`).

Definitions used throughout:

- speedup = dense total cycles / sparse-run total cycles (as ``accelsim run``).
- fallback op: an op whose plan asked for a pattern (``pattern_requested``) but that did not
  run sparse; its reason code says why (``accelsim.lowering.REASON_CODES``).
- pruning schedule: ``saved_i = dense_i - sparse_i`` for the ops that run sparse, ranked
  largest first; ``speedup_j = dense_total / (dense_total - sum of the first j saved_i)``. The
  curve ends at the run's speedup exactly (integer cycle sums).
- dense-fallback counterfactual for a reason: each op with that reason gets
  ``time_cf = time_now * T_sparse / T_dense``, with ``T_sparse`` and ``T_dense`` the op's GEMM
  view simulated sparse and dense on a counterfactual copy of the hardware that can run it
  (the pattern added, no dtype / weight-shape restrictions, a sparse block with unlimited
  decode if there was none). Under policy ``sparse-if-supported`` the ops run sparse
  whatever it costs; under ``fastest`` each keeps the faster of ``time_now`` and ``time_cf``;
  ``slower_than_dense`` is always forced sparse (its counterfactual is "run sparse anyway").
- numeric quality proxy: per sparse weight op, ``||(A - prune(A)) B||_F / ||A B||_F`` with
  magnitude N:M pruning along k, at most :data:`PROXY_MAX_ROWS` rows of A (a seeded sample)
  and :data:`PROXY_COLS` seeded Gaussian columns of B; A from the user's ``.npz``/``.npy`` or
  seeded Gaussian "synthetic weights" (labelled so everywhere).

Library code: nothing here prints or exits; matplotlib is used through Figure objects only.
"""

from __future__ import annotations

import base64
import copy
import datetime as _dt
import hashlib
import html
import io
import json
import os
import platform
import re
import shlex
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.errors import AccelsimError
from accelsim.formats.nm import normalize_pattern, parse_pattern
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.lowering import FALLBACK_REASONS, POLICIES, REASON_CODES, Kernel, resolve_pattern
from accelsim.results import RunResult, build_meta
from accelsim.simulation import Simulator, peak_macs_per_cycle, run
from accelsim.workloads.model import WEIGHT_OPS, Workload

__all__ = ["HEADER_BEGIN", "HEADER_END", "PROXY_COLS", "PROXY_MAX_ROWS", "SYNTHETIC_LABEL", "build_report",
           "counterfactual_hardware", "fallback_impact", "group_name", "render_html", "render_markdown",
           "render_schedule_chart", "report_command", "strip_header", "summary_lines", "write_report"]

REPORT_SCHEMA_VERSION = 1
HEADER_BEGIN = "<!-- report-header:begin -->"
HEADER_END = "<!-- report-header:end -->"
SYNTHETIC_LABEL = "synthetic weights"
PROXY_MAX_ROWS = 256   # rows of A sampled per layer for the numeric proxy
PROXY_COLS = 64        # random columns of B per layer
PROXY_SEED = 2024      # base seed of the proxy (combined with a CRC of the layer name)
TOP_LAYERS = 40        # per-layer rows shown in the Markdown / HTML body (all are in the JSON)
SCHEDULE_ROWS = 20     # pruning-schedule rows shown in the Markdown / HTML
FLATTEN_FRACTION = 0.9
ONE_LAYER_SHARE = 0.5
PERTURBATION = 0.10
DPI = 100
CALIBRATED_FIELDS = {  # per compute kind: the config fields marked CALIBRATED (README, GPU-like parts)
    "tensor_core": [("core", "compute", "efficiency", "dense"), ("core", "compute", "efficiency", "sparse"),
                    ("launch_overhead_cycles", "dense"), ("launch_overhead_cycles", "sparse"),
                    ("dram", "sustained_fraction")],
    "systolic": [],
}
PADDING_REASONS = ("n_padded", "k_padded")


# ============================================================================================ helpers

def _subject(model: Workload, hw: Hardware, label: str) -> str:
    params = ", ".join(f"{k} {v}" for k, v in model.params.items())
    return f"{model.name}{f' ({params})' if params else ''} on {hw.name}, {label}"


def _file_sha256(path: str | os.PathLike[str] | None) -> str | None:
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


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


def _shape_text(shape: dict[str, int]) -> str:
    if "elements" in shape:
        return f"{shape['elements']:,} el"
    if not shape:
        return "-"
    text = f"{shape['m']}x{shape['n']}x{shape['k']}"
    return f"{shape['batch']}x({text})" if "batch" in shape else text


def _op_type(layer: Any) -> str:
    """Op type for the matrix: convolutions split by kind (their sparse support differs)."""
    if layer.op == "conv2d" and layer.groups > 1:
        return "conv2d depthwise" if layer.depthwise else "conv2d grouped"
    return str(layer.op)


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


# ============================================================================================ header

def build_header(model: Workload, hw: Hardware, *, command: list[str] | str | None = None,
                 hw_source: str | None = None, workload_source: str | None = None,
                 weights: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The part of the report that may change between identical runs: build, host, command, inputs, date."""
    import matplotlib

    meta = build_meta(None, {"hardware": hw.config_hash(), "workload": model.config_hash()})
    cmd = command if isinstance(command, str) else (shlex.join(command) if command else "")
    inputs: dict[str, Any] = {
        "hardware": {"source": hw_source or "<hardware>", "config_hash": hw.config_hash(),
                     "file_sha256": _file_sha256(hw_source)},
        "workload": {"source": workload_source or "<workload>", "config_hash": model.config_hash(),
                     "file_sha256": _file_sha256(workload_source), "params": dict(model.params)},
    }
    if weights:
        inputs["weights"] = {"source": str(weights), "file_sha256": _file_sha256(weights)}
    return {
        "accelsim_version": meta["accelsim_version"],
        "git_commit": meta["git_commit"],
        "python": meta["python"],
        "numpy": meta["numpy"],
        "numba": meta["numba"],
        "matplotlib": matplotlib.__version__,
        "host_cpu": _host_cpu(),
        "platform": platform.platform(),
        "command": cmd,
        "inputs": inputs,
        "date_utc": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
    }


# ============================================================================================ summary

def _occupancy(res: RunResult) -> dict[str, float]:
    """Tensor-core / array occupancy: executed and dense-equivalent MACs over the peak, model and array ops."""
    peak = res.peak_macs_per_cycle or 1.0
    total = res.total_cycles or 1
    array = [r for r in res.layers if r.path in ("dense", "sparse")]
    arr_cycles = sum(r.cycles["total"] for r in array) or 1
    execd = sum(r.macs_executed for r in res.layers)
    macs = sum(r.macs for r in res.layers)
    return {
        "model": execd / (total * peak),
        "array_ops": sum(r.macs_executed for r in array) / (arr_cycles * peak),
        "model_dense_equivalent": macs / (total * peak),
        "array_ops_dense_equivalent": sum(r.macs for r in array) / (arr_cycles * peak),
        "array_time_share": sum(r.cycles["total"] for r in array) / total,
    }


def _bytes_levels(res: RunResult) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for level, by in res.totals["bytes"].items():
        out[level] = {**by, "total": sum(by.values())}
    return out


def _summary(real: RunResult, dense: RunResult, rc: dict[str, Any]) -> dict[str, Any]:
    ghz = real.clock_ghz
    total, dense_total = real.total_cycles, real.dense_total_cycles
    requested = [r for r in real.layers if r.pattern_requested]
    fallback = [r for r in requested if r.path != "sparse"]
    fb_cycles = sum(r.cycles["total"] for r in fallback)
    rungs = {r["rung"]: r for r in rc["rungs"]}
    meta_cycles = rungs["metadata"]["sparse_cycles"] - rungs["data_movement"]["sparse_cycles"]
    levels = _bytes_levels(real)
    dram = levels.get("dram", {})
    a_bytes = dram.get("a_values", 0) + dram.get("a_metadata", 0)
    totals = real.totals
    energy = totals.get("energy")
    return {
        "dense": {"cycles": dense_total, "latency_us": dense_total / (ghz * 1e3)},
        "sparse": {"cycles": total, "latency_us": total / (ghz * 1e3)},
        "speedup": _ratio(dense_total, total),
        "occupancy": {"dense": _occupancy(dense), "sparse": _occupancy(real)},
        "layers_by_path": totals["layers_by_path"],
        "fallback": {
            "kernels": len(fallback), "kernels_requested": len(requested), "kernels_all": len(real.layers),
            "share_of_requested_kernels": _ratio(len(fallback), len(requested)) if requested else 0.0,
            "share_of_all_kernels": len(fallback) / len(real.layers) if real.layers else 0.0,
            "cycles": fb_cycles, "share_of_time": fb_cycles / total if total else 0.0,
        },
        "metadata": {
            "dram_bytes": dram.get("a_metadata", 0),
            "sram_bytes": levels.get("sram", {}).get("a_metadata", 0),
            "share_of_weight_dram_bytes": dram.get("a_metadata", 0) / a_bytes if a_bytes else 0.0,
            "share_of_dram_bytes": dram.get("a_metadata", 0) / dram["total"] if dram.get("total") else 0.0,
            "cycles": meta_cycles,
            "share_of_sparse_time": meta_cycles / total if total else 0.0,
            "cycles_definition": "reality-check ladder: sparse_cycles(metadata) - sparse_cycles(data_movement)",
        },
        "bytes": {"dense": _bytes_levels(dense), "sparse": levels},
        "energy": None if energy is None else {
            "total_j": energy["total_j"], "dense_total_j": energy["dense_total_j"],
            "avg_power_w": energy["avg_power_w"],
            "dense_avg_power_w": dense.totals["energy"]["avg_power_w"] if dense.layers[0].energy else None,
            "perf_per_watt_vs_dense": energy["perf_per_watt_vs_dense"],
            "by_component_j": energy["by_component_j"],
        },
        "footprint": real.footprint,
        "warnings": list(real.warnings),
    }


# ============================================================================================ matrix

def _category(r: Any) -> str:
    if r.path == "sparse":
        return "padded" if r.padding else "sparse"
    return "fallback"


def _matrix(model: Workload, runs: list[tuple[str, RunResult]], dense_cycles: list[int]) -> dict[str, Any]:
    """Op type x pattern: counts of sparse / padded / fallback (by reason) ops and their time share."""
    kinds = {layer.name: _op_type(layer) for layer in model.layers}
    rows = []
    patterns = []
    for label, res in runs:
        total = res.total_cycles or 1
        cells: dict[str, dict[str, Any]] = {}
        for i, r in enumerate(res.layers):
            if not r.pattern_requested:
                continue
            c = cells.setdefault(kinds[r.name], {
                "op_type": kinds[r.name], "pattern": label, "layers": 0, "sparse": 0, "padded": 0,
                "promoted": 0, "fallback": {}, "padding_reasons": {}, "cycles": 0, "dense_cycles": 0,
                "cycles_by_category": {"sparse": 0, "padded": 0, "fallback": 0}})
            cat = _category(r)
            c["layers"] += 1
            if cat == "fallback":
                c["fallback"][r.reason or "none"] = c["fallback"].get(r.reason or "none", 0) + 1
            else:
                c[cat] += 1
            if cat == "padded":
                for key in sorted(r.padding):
                    pr = f"{key}_padded"
                    c["padding_reasons"][pr] = c["padding_reasons"].get(pr, 0) + 1
            if r.reason == "pattern_promoted":
                c["promoted"] += 1
            c["cycles"] += r.cycles["total"]
            c["dense_cycles"] += dense_cycles[i]
            c["cycles_by_category"][cat] += r.cycles["total"]
        for c in sorted(cells.values(), key=lambda c: (-c["cycles"], c["op_type"])):
            c["fallback"] = dict(sorted(c["fallback"].items()))
            c["padding_reasons"] = dict(sorted(c["padding_reasons"].items()))
            c["share_of_time"] = c["cycles"] / total
            c["speedup"] = _ratio(c["dense_cycles"], c["cycles"])
            rows.append(c)
        executed = sorted({r.pattern_executed for r in res.layers if r.pattern_executed})
        reqd = [r for r in res.layers if r.pattern_requested]
        patterns.append({"pattern": label, "executed_as": executed, "speedup": _ratio(res.dense_total_cycles,
                                                                                       res.total_cycles),
                         "cycles": res.total_cycles, "requested_ops": len(reqd),
                         "sparse_ops": sum(1 for r in reqd if r.path == "sparse"),
                         "requested_time_share": sum(r.cycles["total"] for r in reqd) / (res.total_cycles or 1)})
    not_requested = sum(1 for r in runs[0][1].layers if not r.pattern_requested) if runs else 0
    return {"patterns": patterns, "rows": rows, "ops_without_pattern": not_requested,
            "categories": {"sparse": "runs sparse (pattern_promoted counts here too)",
                           "padded": "runs sparse with padding (n_padded / k_padded)",
                           "fallback": "the plan asked for a pattern; runs dense (or on the vector unit), by reason"}}


# ============================================================================================ layers

def _layer_rows(real: RunResult, dense_cycles: list[int]) -> list[dict[str, Any]]:
    total = real.total_cycles or 1
    rows = []
    for i, r in enumerate(real.layers):
        rows.append({
            "index": i, "name": r.name, "op": r.op, "shape": r.shape, "path": r.path,
            "pattern_requested": r.pattern_requested, "pattern_executed": r.pattern_executed,
            "reason": r.reason, "padding": r.padding, "cycles": r.cycles["total"],
            "dense_cycles": dense_cycles[i], "saved_cycles": dense_cycles[i] - r.cycles["total"],
            "share_of_time": r.cycles["total"] / total, "binding": r.binding,
            "utilization": r.utilization, "speedup": _ratio(dense_cycles[i], r.cycles["total"]),
        })
    return rows


# ============================================================================================ schedule

def _schedule(real: RunResult, dense_cycles: list[int]) -> dict[str, Any]:
    dense_total = real.dense_total_cycles
    cand = [(i, r) for i, r in enumerate(real.layers) if r.path == "sparse"]
    order = sorted(cand, key=lambda ir: (-(dense_cycles[ir[0]] - ir[1].cycles["total"]), ir[0]))
    rows = []
    cum = 0
    curve = [1.0]
    for rank, (i, r) in enumerate(order, start=1):
        saved = dense_cycles[i] - r.cycles["total"]
        cum += saved
        sp = dense_total / (dense_total - cum)
        curve.append(sp)
        rows.append({"rank": rank, "name": r.name, "op": r.op, "shape": r.shape, "dense_cycles": dense_cycles[i],
                     "sparse_cycles": r.cycles["total"], "saved_cycles": saved,
                     "saved_share_of_dense": saved / dense_total if dense_total else 0.0,
                     "cumulative_saved_cycles": cum, "cumulative_speedup": sp})
    final = curve[-1]
    run_speedup = dense_total / real.total_cycles if real.total_cycles else 1.0
    gain = final - 1.0
    flatten = None
    if gain > 0:
        flatten = next(j for j, s in enumerate(curve) if s - 1.0 >= FLATTEN_FRACTION * gain - 1e-15)
    peak_j = max(range(len(curve)), key=lambda j: (curve[j], -j))
    return {
        "rows": rows, "curve": curve, "final_speedup": final, "run_speedup": run_speedup,
        "layers": len(rows), "excluded_layers": len(real.layers) - len(rows),
        "flatten_fraction": FLATTEN_FRACTION, "layers_to_flatten": flatten,
        "peak": {"layers": peak_j, "speedup": curve[peak_j]},
        "negative_layers": [row["name"] for row in rows if row["saved_cycles"] < 0],
        "definition": "saved_i = dense_i - sparse_i for ops that run sparse (others save 0 and are excluded); "
                      "speedup_j = dense_total / (dense_total - sum of the first j saved_i)",
    }


# ============================================================================================ counterfactuals

def counterfactual_hardware(hw: Hardware, pattern: str) -> tuple[Hardware, list[str]]:
    """A copy of ``hw`` that can run ``pattern`` sparse on any dtype and weight shape; and what changed."""
    pat = parse_pattern(pattern)
    d = copy.deepcopy(hw.to_dict())
    changes = []
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


def _gemm_view(layer: Any, model: Workload, hw_cf: Hardware, requested: str) -> tuple[Kernel, Kernel]:
    """The op's GEMM view as a sparse kernel (requested pattern or its best native container) and dense."""
    m, n, k = layer.gemm_shape()
    batch = layer.batch if layer.op == "matmul" else getattr(layer, "groups", 1)
    b_unique = layer.ifmap_elements() if layer.op == "conv2d" else 0
    weight = layer.op != "matmul"
    executed, _ = resolve_pattern(parse_pattern(requested), hw_cf)
    assert executed is not None and hw_cf.core.sparse is not None
    spec = hw_cf.core.sparse
    padding: dict[str, list[int]] = {}
    if n % spec.dense_operand_align:
        padding["n"] = [n, -(-n // spec.dense_operand_align) * spec.dense_operand_align]
    if k % executed.m:
        padding["k"] = [k, -(-k // executed.m) * executed.m]
    e = model.dtype_bytes
    sparse = Kernel(layer.name, layer.op, m, n, k, model.dtype, e, "sparse", requested, str(executed), None,
                    executed.n, executed.m, spec.metadata_bits(executed), padding, b_unique, batch, weight)
    dense = Kernel(layer.name, layer.op, m, n, k, model.dtype, e, "dense", None, None, None, b_unique=b_unique,
                   batch=batch, weight=weight)
    return sparse, dense


def fallback_impact(model: Workload, hw: Hardware, real: RunResult, policy: str) -> dict[str, Any]:
    layers = {layer.name: layer for layer in model.layers}
    total, dense_total = real.total_cycles, real.dense_total_cycles
    now_speedup = _ratio(dense_total, total)
    fallback = [r for r in real.layers if r.pattern_requested and r.path != "sparse"]
    fb_cycles = sum(r.cycles["total"] for r in fallback)
    by_reason: dict[str, list[Any]] = {}
    for r in fallback:
        by_reason.setdefault(r.reason or "none", []).append(r)
    sims: dict[str, tuple[Simulator, list[str]]] = {}
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
            if pat not in sims:
                hw_cf, ch = counterfactual_hardware(hw, pat)
                sims[pat] = (Simulator(hw_cf, f"<{hw.name} counterfactual>"), ch)
            sim, ch = sims[pat]
            changes.update(ch)
            ks, kd = _gemm_view(layers[r.name], model, sim.hw, pat)
            t_sparse, t_dense = sim(ks).cycles["total"], sim(kd).cycles["total"]
            now = r.cycles["total"]
            cf = now * t_sparse / t_dense if t_dense else float(now)
            chosen = cf if forced else min(cf, float(now))
            delta += chosen - now
            delta_best += min(cf, float(now)) - now
            per_layer.append({"name": r.name, "op": r.op, "path_now": r.path, "cycles_now": now,
                              "t_sparse": t_sparse, "t_dense": t_dense, "cycles_counterfactual": cf,
                              "cycles_chosen": chosen, "sparse_faster": t_sparse < t_dense})
        new = _ratio(dense_total, total + delta)
        best = _ratio(dense_total, total + delta_best)
        expected = "down" if reason == "slower_than_dense" else "up"
        direction = "up" if new > now_speedup else ("down" if new < now_speedup else "none")
        if reason != "slower_than_dense":
            all_real_delta += delta
            all_real_delta_best += delta_best
        cycles_now = sum(p["cycles_now"] for p in per_layer)
        reasons.append({
            "reason": reason, "description": REASON_CODES.get(reason, ""), "layers": [p["name"] for p in per_layer],
            "count": len(per_layer), "cycles_now": cycles_now, "share_of_time": cycles_now / total if total else 0.0,
            "cycles_counterfactual": cycles_now + delta, "speedup_now": now_speedup, "speedup_if_removed": new,
            "change": new - now_speedup, "speedup_if_removed_best": best,
            "expected": expected, "direction": direction, "as_expected": direction == expected,
            "mode": "forced sparse" if forced else "policy fastest: each op keeps the faster kernel",
            "sparse_faster_layers": sum(1 for p in per_layer if p["sparse_faster"]),
            "hardware_changes": sorted(changes), "per_layer": per_layer,
        })
    real_reasons = [x for x in reasons if x["reason"] != "slower_than_dense"]
    combined = None
    if len(real_reasons) > 1:
        combined = {"reasons": [x["reason"] for x in real_reasons],
                    "speedup_if_removed": _ratio(dense_total, total + all_real_delta),
                    "speedup_if_removed_best": _ratio(dense_total, total + all_real_delta_best)}
    return {"cycles": fb_cycles, "share_of_time": fb_cycles / total if total else 0.0, "layers": len(fallback),
            "speedup_now": now_speedup, "policy": policy, "reasons": reasons, "all_real_reasons_removed": combined,
            "method": "time_cf = time_now x T_sparse / T_dense (the op's GEMM view simulated sparse and dense on a "
                      "counterfactual copy of the hardware that supports it)"}


# ============================================================================================ quality

def _quality(model: Workload, pattern: str | None, threshold: float | None) -> dict[str, Any]:
    q = model.quality
    out: dict[str, Any] = {"pattern": pattern, "metric": q.metric if q else None,
                           "higher_is_better": q.higher_is_better if q else None,
                           "dense": q.dense if q else None, "value": None, "delta": None, "drop": None,
                           "threshold": None, "threshold_source": None, "source": q.source if q else None,
                           "patterns": dict(q.patterns) if q else {}, "missing": []}
    if threshold is not None:
        out["threshold"], out["threshold_source"] = float(threshold), "argument"
    elif q is not None and q.max_drop is not None:
        out["threshold"], out["threshold_source"] = float(q.max_drop), "workload quality.max_drop"
    if q is None:
        out["missing"].append("the workload has no quality: block (metric, dense value, value per pattern)")
    elif pattern is None or q.delta(pattern) is None:
        out["missing"].append(f"no quality figure for {pattern} (the workload lists: "
                              f"{', '.join(q.patterns) or 'none'})")
    else:
        delta = q.delta(pattern)
        out["value"], out["delta"], out["drop"] = q.patterns[pattern], delta, -delta
    if out["threshold"] is None:
        out["missing"].append("no threshold (quality.max_drop in the workload, or --quality-threshold)")
    if out["missing"]:
        status = "missing"
    else:
        status = "breach" if out["drop"] > out["threshold"] else "ok"
    out["status"] = status
    out["message"] = _guardrail_message(out)
    return out


def _num(v: float) -> str:
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.1f}"


def _guardrail_message(g: dict[str, Any]) -> str:
    if g["status"] == "missing":
        if g["drop"] is not None:
            return (f"{g['metric']}: {g['pattern']} {_num(g['value'])} vs dense {_num(g['dense'])} "
                    f"(change {g['delta']:+.4g}); cannot check: " + "; ".join(g["missing"]))
        return "cannot check quality: " + "; ".join(g["missing"])
    verb = "exceeds" if g["status"] == "breach" else "within"
    return (f"{g['metric']}: {g['pattern']} {_num(g['value'])} vs dense {_num(g['dense'])}, a drop of "
            f"{g['drop']:.4g} ({verb} the threshold {g['threshold']:.4g}, from {g['threshold_source']})")


# ---------------------------------------------------------------------------------------- numeric proxy

def _expected_weight_shape(layer: Any) -> tuple[int, int]:
    """Rows x columns of the weight as the proxy expects it: (m, k) per group, groups stacked along rows."""
    m, _, k = layer.gemm_shape()
    return m * getattr(layer, "groups", 1), k


def _load_weights(weights: str | os.PathLike[str], model: Workload) -> tuple[dict[str, np.ndarray], list[str]]:
    """Arrays by layer name from a .npz (names = layer names) or a .npy (single weight layer); shapes checked."""
    path = Path(weights)
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise AccelsimError(f"weights {path}: file not found") from None
    except (OSError, ValueError) as exc:
        raise AccelsimError(f"weights {path}: cannot read ({exc}); expected a .npz (arrays named by layer) "
                            "or a .npy (single-layer workload)") from None
    weight_layers = [layer for layer in model.layers if layer.op in WEIGHT_OPS]
    if isinstance(loaded, np.ndarray):
        if len(weight_layers) != 1:
            raise AccelsimError(f"weights {path}: a .npy holds one array but workload '{model.name}' has "
                                f"{len(weight_layers)} weight layers; use a .npz with one array per layer name")
        arrays = {weight_layers[0].name: loaded}
    else:
        try:
            with loaded:
                arrays = {name: loaded[name] for name in loaded.files}
        except (OSError, ValueError) as exc:
            raise AccelsimError(f"weights {path}: cannot read an array ({exc})") from None
    by_name = {layer.name: layer for layer in weight_layers}
    unused = sorted(name for name in arrays if name not in by_name)
    if not set(arrays) & set(by_name):
        raise AccelsimError(f"weights {path}: no array is named after a weight layer of '{model.name}' "
                            f"(arrays: {', '.join(sorted(arrays)[:5])}{' ...' if len(arrays) > 5 else ''}; "
                            f"layers: {', '.join(list(by_name)[:5])}{' ...' if len(by_name) > 5 else ''})")
    out = {}
    for name, arr in arrays.items():
        layer = by_name.get(name)
        if layer is None:
            continue
        rows, cols = _expected_weight_shape(layer)
        a = np.asarray(arr)
        if a.ndim == 4 and a.shape[0] == rows and int(np.prod(a.shape[1:])) == cols:
            a = a.reshape(rows, cols)  # (filters, channels/groups, kh, kw) convolution weights
        if a.shape != (rows, cols):
            per_group = f" (per group: {rows // layer.groups} x {cols}, {layer.groups} groups stacked along rows)" \
                if getattr(layer, "groups", 1) > 1 else ""
            raise AccelsimError(f"weights {path}: layer '{name}': array shape {tuple(a.shape)} does not match the "
                                f"layer's weight m x k = {rows} x {cols}{per_group}")
        if not np.issubdtype(a.dtype, np.number):
            raise AccelsimError(f"weights {path}: layer '{name}': array dtype {a.dtype} is not numeric")
        bad = ~np.isfinite(a)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AccelsimError(f"weights {path}: layer '{name}': {int(bad.sum()):,} NaN or Inf values (first at "
                                f"index {idx}: {a[idx]}); the pruning proxy needs finite weights")
        out[name] = a
    return out, unused


def _proxy_error(a: np.ndarray, b: np.ndarray, n: int, m: int) -> tuple[float, float]:
    """Relative output error of magnitude N:M pruning of ``a`` against ``b``, and the kept weight energy."""
    from accelsim.analysis.functional_check import prune_magnitude

    pruned = prune_magnitude(a, n, m).pruned
    denom = float(np.linalg.norm(a @ b))
    err = float(np.linalg.norm((a - pruned) @ b)) / denom if denom > 0 else 0.0
    total = float(np.sum(a * a))
    kept = float(np.sum(pruned * pruned)) / total if total > 0 else 1.0
    return round(err, 9), round(kept, 9)


def _proxy(model: Workload, real: RunResult, weights: str | os.PathLike[str] | None,
           loaded: tuple[dict[str, np.ndarray], list[str]] | None = None) -> dict[str, Any]:
    layers = {layer.name: layer for layer in model.layers}
    eligible = [r for r in real.layers if r.path == "sparse" and layers[r.name].op in WEIGHT_OPS]
    user: dict[str, np.ndarray] = {}
    unused: list[str] = []
    if loaded is not None:
        user, unused = loaded
    elif weights is not None:
        user, unused = _load_weights(weights, model)
    rows_out = []
    synthetic_cache: dict[tuple[int, int, int, int], tuple[float, float]] = {}
    for r in eligible:
        layer = layers[r.name]
        pat = parse_pattern(r.pattern_requested)
        rows, cols = _expected_weight_shape(layer)
        take = min(rows, PROXY_MAX_ROWS)
        if r.name in user:
            rng = np.random.default_rng([PROXY_SEED, zlib.crc32(r.name.encode())])
            idx = np.sort(rng.choice(rows, size=take, replace=False)) if rows > take else np.arange(rows)
            a = np.asarray(user[r.name][idx], dtype=np.float64)
            err, kept = _proxy_error(a, rng.standard_normal((cols, PROXY_COLS)), pat.n, pat.m)
            label = "user weights"
        else:  # seeded by shape and pattern: same-shape ops share one draw (synthetic weights carry no identity)
            key = (take, cols, pat.n, pat.m)
            if key not in synthetic_cache:
                rng = np.random.default_rng([PROXY_SEED, *key])
                a = rng.standard_normal((take, cols))
                synthetic_cache[key] = _proxy_error(a, rng.standard_normal((cols, PROXY_COLS)), pat.n, pat.m)
            err, kept = synthetic_cache[key]
            label = SYNTHETIC_LABEL
        rows_out.append({"name": r.name, "op": r.op, "pattern": str(pat), "weight_shape": [rows, cols],
                         "rows_sampled": take, "b_columns": PROXY_COLS, "relative_error": err,
                         "kept_energy": kept, "weights": label, "macs": r.macs})
    macs = sum(x["macs"] for x in rows_out)
    n_user = sum(1 for x in rows_out if x["weights"] == "user weights")
    n_syn = len(rows_out) - n_user
    label = ("user weights" if n_syn == 0 else SYNTHETIC_LABEL if n_user == 0
             else f"user weights ({n_user} layers) and {SYNTHETIC_LABEL} ({n_syn} layers)")
    worst = max(rows_out, key=lambda x: x["relative_error"]) if rows_out else None  # first in model order
    return {
        "label": label if rows_out else None, "weights_source": str(weights) if weights else None,
        "layers": rows_out, "user_layers": n_user, "synthetic_layers": n_syn, "unused_arrays": unused,
        "mac_weighted_error": sum(x["relative_error"] * x["macs"] for x in rows_out) / macs if macs else None,
        "max_error": worst["relative_error"] if worst else None, "max_error_layer": worst["name"] if worst else None,
        "method": (f"relative output error ||(A - prune(A)) B||_F / ||A B||_F of magnitude N:M pruning along k, per "
                   f"op that runs sparse; at most {PROXY_MAX_ROWS} rows of A (seeded sample) and {PROXY_COLS} seeded "
                   "Gaussian columns of B; grouped convs: the groups' filters stacked as rows; synthetic weights are "
                   "seeded by shape and pattern, so same-shape ops share one draw"),
        "caveat": "a per-layer numeric proxy, not a task metric: it ignores fine-tuning, which usually recovers "
                  "most of the loss, and error propagation through the network",
    }


# ============================================================================================ sensitivity

def _perturbed(hw: Hardware, path: tuple[str, ...], factor: float) -> tuple[Hardware, Any, Any]:
    d = copy.deepcopy(hw.to_dict())
    node = d
    for key in path[:-1]:
        node = node[key]
    old = node[path[-1]]
    if isinstance(old, int):
        new: float = int(round(old * factor))
    else:
        new = min(1.0, old * factor) if ("efficiency" in path or "sustained_fraction" in path) else old * factor
    node[path[-1]] = new
    return hardware_from_dict(d, f"<{hw.name} perturbed>"), old, new


def _sensitivity(model: Workload, hw: Hardware, sparsity: str | None, policy: str, speedup: float) -> dict[str, Any]:
    fields = CALIBRATED_FIELDS.get(hw.core.compute.kind, [])
    runs = []
    for path in fields:
        for sign in (-1, +1):
            variant, old, new = _perturbed(hw, path, 1.0 + sign * PERTURBATION)
            res = run(model, variant, sparsity, policy=policy)
            runs.append({"field": ".".join(path), "factor": 1.0 + sign * PERTURBATION, "value": old, "perturbed": new,
                         "speedup": _ratio(res.dense_total_cycles, res.total_cycles)})
    values = [speedup] + [x["speedup"] for x in runs]
    lo, hi = min(values), max(values)
    return {"fields": [".".join(p) for p in fields], "perturbation": PERTURBATION, "runs": runs,
            "speedup": speedup, "range": [lo, hi], "width": hi - lo, "gain": speedup - 1.0,
            "crosses_one": bool(runs) and lo <= 1.0 <= hi,
            "wider_than_gain": bool(runs) and (hi - lo) > abs(speedup - 1.0),
            "note": None if fields else f"no CALIBRATED fields on a {hw.core.compute.kind} part"}


# ============================================================================================ contradictions

def _contradictions(real: RunResult, layer_rows: list[dict[str, Any]], schedule: dict[str, Any],
                    impact: dict[str, Any], sens: dict[str, Any], guard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    speedup = schedule["run_speedup"]
    slower = [row for row in layer_rows if row["path"] == "sparse" and row["cycles"] > row["dense_cycles"]]
    if slower:
        lost = sum(row["cycles"] - row["dense_cycles"] for row in slower)
        names = [row["name"] for row in slower]
        out.append({"kind": "sparse_slower_than_dense", "layers": names, "cycles_lost": lost,
                    "message": f"{len(slower)} op(s) run slower sparse than dense, losing {lost:,} cycles "
                               f"({lost / (real.total_cycles or 1):.1%} of the sparse run): {group_name(names)}"})
    if speedup < 1.0:
        out.append({"kind": "model_slower_than_dense", "speedup": speedup,
                    "message": f"the model as a whole is slower sparse than dense ({speedup:.3f}x)"})
    net = real.dense_total_cycles - real.total_cycles
    if net > 0 and schedule["rows"]:
        top = schedule["rows"][0]
        if top["saved_cycles"] > ONE_LAYER_SHARE * net:
            out.append({"kind": "speedup_rests_on_one_layer", "layers": [top["name"]],
                        "share_of_saved": top["saved_cycles"] / net,
                        "message": f"the speedup rests on one op: {top['name']} saves "
                                   f"{top['saved_cycles'] / net:.0%} of the net time saved"})
    if sens["runs"] and (sens["crosses_one"] or sens["wider_than_gain"]):
        lo, hi = sens["range"]
        why = []
        if sens["crosses_one"]:
            why.append("1.0x lies inside it: the sign of the gain is not settled")
        if sens["wider_than_gain"]:
            why.append(f"it is wider ({hi - lo:.3f}) than the gain itself ({speedup - 1.0:+.3f})")
        out.append({"kind": "speedup_within_calibration_sensitivity", "range": [lo, hi],
                    "message": f"perturbing each CALIBRATED field by +/-{sens['perturbation']:.0%} moves the speedup "
                               f"over {lo:.3f}x - {hi:.3f}x; " + " and ".join(why)})
    for r in impact["reasons"]:
        if not r["as_expected"]:
            if r["expected"] == "up":
                msg = (f"removing '{r['reason']}' would not speed the model up: its {r['count']} op(s) simulate "
                       f"{'slower' if r['direction'] == 'down' else 'no faster'} sparse than dense "
                       f"({r['speedup_now']:.3f}x -> {r['speedup_if_removed']:.3f}x; {r['sparse_faster_layers']} "
                       f"of {r['count']} gain on their own)")
            else:
                msg = f"forcing the '{r['reason']}' ops sparse would not slow the model down as expected"
            out.append({"kind": "fallback_fix_would_not_help", "reason": r["reason"], "layers": r["layers"],
                        "message": msg})
    if guard["status"] == "missing":
        out.append({"kind": "quality_figures_missing", "message": guard["message"]})
    return out


# ============================================================================================ build

SERVING_LOADS = (0.5, 0.8)  # offered load as a share of the dense part's saturation throughput
SERVING_REQUESTS = 4000


def _serving(hw: Hardware, workload_source: str | None, model: Workload, label: str, policy: str,
             sim: Simulator) -> dict[str, Any]:
    """p50/p95/p99 latency, dense vs sparse, at two offered loads (simpy serving model, seeded)."""
    from accelsim.serving.simulator import ServingModel

    if not workload_source or not Path(workload_source).is_file():
        return {"status": "skipped", "note": "serving needs the workload file (to vary the batch)"}
    sets = {k: v for k, v in model.params.items() if k != "batch"}
    config = {"max_batch": 8, "max_wait_ms": 2.0}
    try:
        models = {lab: ServingModel.from_files(hw, workload_source, lab, config=config, set_params=sets,
                                               simulator=sim, policy=policy)
                  for lab in ("dense", label)}
        saturation = models["dense"].run(rate=1e9, requests=2000, seed=0)["throughput_rps"]
        rows = []
        for share in SERVING_LOADS:
            rate = share * saturation
            row: dict[str, Any] = {"load": share, "rate_rps": round(rate, 3)}
            for lab, m in models.items():
                r = m.run(rate=rate, requests=SERVING_REQUESTS, seed=0)
                row[lab] = {q: r["latency_ms"][q] for q in ("p50", "p95", "p99")} | {
                    "utilisation": r["utilisation"], "offered_over_capacity": r["load"]["offered_over_capacity"],
                    "overloaded": r["load"]["overloaded"]}
            rows.append(row)
    except (AccelsimError, ValueError) as exc:
        return {"status": "skipped", "note": str(exc)}
    used = models["dense"].config
    batching = (f"batches of up to {used.max_batch} ({used.max_wait_ms:g} ms max wait)" if used.max_batch > 1
                else models["dense"].info.get("note", "one request at a time"))
    note = (f"Poisson arrivals at a share of the dense part's saturation throughput; {batching}; service times "
            "from the simulated plan. `accelsim serve` for more.")
    over = sorted({lab for r in rows for lab in models if r[lab]["overloaded"]})
    if over:
        note += (f" OVERLOADED ({', '.join(over)}): where marked *, the offered load is above that variant's "
                 "capacity, so the queue grows for the whole run and its percentiles are not steady-state.")
    return {"status": "ok", "labels": ["dense", label], "saturation_rps": round(saturation, 3),
            "config": {"max_batch": used.max_batch, "max_wait_ms": used.max_wait_ms}, "requests": SERVING_REQUESTS,
            "seed": 0, "rows": rows, "note": note}


def _serving_cells(sv: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Head and rows of the serving table (a * marks an overloaded run's percentiles)."""
    labs = sv["labels"]
    head = ["load", "rate (req/s)"] + [f"{lab} {q}" for lab in labs for q in ("p50", "p95", "p99")]
    body = [[f"{r['load']:.0%}", f"{r['rate_rps']:,.1f}"]
            + [f"{r[lab][q]:.3f} ms" + (" *" if r[lab].get("overloaded") else "") for lab in labs
               for q in ("p50", "p95", "p99")] for r in sv["rows"]]
    return head, body


def _serving_md(sv: dict[str, Any]) -> list[str]:
    if sv.get("status") != "ok":
        return [sv.get("note", "skipped")]
    return [sv["note"], "", *_md_table(*_serving_cells(sv))]


def _run_pattern(model: Workload, real: RunResult, sparsity: str | None) -> str | None:
    if sparsity not in (None, "dense"):
        return sparsity
    requested = sorted({r.pattern_requested for r in real.layers if r.pattern_requested})
    if model.sparsity not in (None, "dense"):
        return model.sparsity
    return requested[0] if len(requested) == 1 else None


def build_report(model: Workload, hw: Hardware, sparsity: str | None, *, policy: str = "sparse-if-supported",
                 patterns: list[str] | str | None = None, quality_threshold: float | None = None,
                 weights: str | os.PathLike[str] | None = None, command: list[str] | str | None = None,
                 hw_source: str | None = None, workload_source: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Simulate and assemble the deployment report as plain data (see the module docstring).

    ``sparsity``: the N:M pattern for every weight op (None: the workload's own plan).
    ``patterns``: extra patterns for the supported-layer matrix (list or "2:4,1:4").
    ``quality_threshold``: the largest acceptable quality drop (wins over ``quality.max_drop``).
    ``weights``: a .npz (arrays named by layer) or .npy (single weight layer) for the numeric proxy.
    ``progress(done, total)`` after each stage (runs, reality check, impact, proxy, sensitivity, serving).
    """
    from accelsim.analysis.reality import reality_check
    from accelsim.lowering import lower

    if policy not in POLICIES:
        raise AccelsimError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if sparsity is not None:
        try:
            sparsity = normalize_pattern(sparsity)
        except ValueError as exc:
            raise AccelsimError(f"sparsity: {exc}") from None
    if sparsity == "dense" or (sparsity is None and not any(k.pattern_requested for k in lower(model, hw, None))):
        raise AccelsimError("the report needs a pattern: pass a sparsity such as 2:4, or give the workload a "
                            "sparsity plan")
    if quality_threshold is not None and not (isinstance(quality_threshold, int | float) and quality_threshold >= 0):
        raise AccelsimError(f"quality threshold must be a number >= 0 (the largest acceptable drop), "
                            f"got {quality_threshold!r}")
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    extra: list[str] = []
    for p in patterns or []:
        try:
            norm = normalize_pattern(p)
        except ValueError as exc:
            raise AccelsimError(f"patterns: {exc}") from None
        if norm == "dense":
            raise AccelsimError("patterns: 'dense' is not a pattern for the supported-layer matrix")
        if norm not in extra:
            extra.append(norm)

    loaded = _load_weights(weights, model) if weights is not None else None  # bad weights fail before any run
    stages = 9 + len(extra)
    done = [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], stages)

    sim = Simulator(hw, hw_source or "<hardware>")
    real = run(model, hw, sparsity, policy=policy, hw_source=hw_source or "<hardware>", simulator=sim)
    step()
    dense = run(model, hw, "dense", hw_source=hw_source or "<hardware>", simulator=sim)
    step()
    dense_cycles = [r.cycles["total"] for r in dense.layers]
    if sum(dense_cycles) != real.dense_total_cycles:  # pragma: no cover - an engine invariant
        raise RuntimeError("the dense run and the sparse run's dense baselines disagree")
    pattern = _run_pattern(model, real, sparsity)
    label = sparsity or f"workload plan ({pattern or 'mixed'})"
    rc = reality_check(model, hw, sparsity, policy=policy, hw_source=hw_source or "<hardware>").to_dict()
    step()

    runs = [(label, real)]
    for p in extra:
        if p != sparsity:
            runs.append((p, run(model, hw, p, policy=policy, hw_source=hw_source or "<hardware>", simulator=sim)))
        step()
    layer_rows = _layer_rows(real, dense_cycles)
    schedule = _schedule(real, dense_cycles)
    step()
    impact = fallback_impact(model, hw, real, policy)
    step()
    guard = _quality(model, pattern, quality_threshold)
    proxy = _proxy(model, real, weights, loaded)
    step()
    sens = _sensitivity(model, hw, sparsity, policy, schedule["run_speedup"])
    step()
    contradictions = _contradictions(real, layer_rows, schedule, impact, sens, guard)
    step()
    serving = _serving(hw, workload_source, model, sparsity or "plan", policy, sim)
    step()

    return {
        "header": build_header(model, hw, command=command, hw_source=hw_source, workload_source=workload_source,
                               weights=weights),
        "schema_version": REPORT_SCHEMA_VERSION,
        "subject": {"workload": model.name, "description": model.description, "params": dict(model.params),
                    "dtype": model.dtype, "hardware": hw.name, "clock_ghz": hw.clock_ghz,
                    "peak_macs_per_cycle": peak_macs_per_cycle(hw, model.dtype), "sparsity": sparsity,
                    "pattern": pattern, "label": label, "policy": policy, "title": _subject(model, hw, label),
                    "layers": len(real.layers)},
        "guardrail": {"status": guard["status"], "message": guard["message"], "metric": guard["metric"],
                      "pattern": guard["pattern"], "delta": guard["delta"], "drop": guard["drop"],
                      "threshold": guard["threshold"], "threshold_source": guard["threshold_source"]},
        "summary": _summary(real, dense, rc),
        "reality_check": rc,
        "matrix": _matrix(model, runs, dense_cycles),
        "layers": layer_rows,
        "pruning_schedule": schedule,
        "fallback_impact": impact,
        "quality": {**guard, "proxy": proxy},
        "sensitivity": sens,
        "serving": serving,
        "contradictions": contradictions,
        "hardware": hw.to_dict(),
        "reason_codes": REASON_CODES,
    }


# ============================================================================================ charts

def render_schedule_chart(report: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Cumulative model speedup vs ops made sparse (ranked by time saved) above the per-op saving as bars.

    Returns ``(fig, artists)`` with ``artists = {"axes", "bars_axes", "line", "bars"}``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    sched = report["pruning_schedule"]
    curve = sched["curve"]
    rows = sched["rows"]
    dense_total = report["summary"]["dense"]["cycles"] or 1
    fig = Figure(figsize=(11.0, 5.6), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.08, 0.36, 0.88, 0.50))
    axb = fig.add_axes((0.08, 0.09, 0.88, 0.20), sharex=ax)
    xs = list(range(len(curve)))
    (line,) = ax.plot(xs, curve, color="#1f4e79", linewidth=2.0, marker="o" if len(xs) <= 80 else None,
                      markersize=3, zorder=3, label="cumulative model speedup")
    ax.axhline(1.0, color="#444444", linestyle="--", linewidth=1.0, zorder=2, label="dense = 1.0x")
    final = sched["final_speedup"]
    ax.axhline(final, color="#1f4e79", linestyle=":", linewidth=1.0, zorder=2)
    ax.annotate(f"all {len(rows)} ops: {final:.3f}x", (len(curve) - 1, final), xytext=(-4, 6 if final >= 1 else -6),
                textcoords="offset points", ha="right", va="bottom" if final >= 1 else "top", fontsize=9,
                color="#1f4e79")
    j = sched["layers_to_flatten"]
    if j is not None:
        for a in (ax, axb):
            a.axvline(j, color="#f28e2b", linestyle="--", linewidth=1.2, zorder=2)
        ax.plot([], [], color="#f28e2b", linestyle="--",
                label=f"{FLATTEN_FRACTION:.0%} of the final gain after {j} ops")
    peak = sched["peak"]
    if peak["speedup"] > final + 1e-12 and peak["layers"] > 0:
        ax.plot([peak["layers"]], [peak["speedup"]], marker="*", markersize=12, color="#2e9e4f", zorder=4,
                label=f"peak {peak['speedup']:.3f}x after {peak['layers']} ops", linestyle="none")
    lo = min([1.0, *curve])
    hi = max([1.0, *curve])
    pad = max(0.01, (hi - lo) * 0.12)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlim(-0.5, max(1, len(curve) - 1) + 0.5)
    ax.set_ylabel("model speedup over dense (x)", fontsize=10)
    ax.grid(axis="y", color="#d9d9d9", linewidth=0.6)
    ax.tick_params(axis="x", labelbottom=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8.5, frameon=False)
    saved = [100.0 * r["saved_cycles"] / dense_total for r in rows]
    bars = axb.bar([r["rank"] for r in rows], saved, width=0.8,
                   color=["#2e9e4f" if v >= 0 else "#d64541" for v in saved], zorder=2)
    axb.axhline(0.0, color="#444444", linewidth=0.8)
    axb.set_ylabel("saved by the op\n(% of dense time)", fontsize=9)
    axb.set_xlabel("ops made sparse, in order of simulated time saved (largest first)", fontsize=10)
    axb.grid(axis="y", color="#d9d9d9", linewidth=0.6)
    axb.tick_params(labelsize=8.5)
    sub = report["subject"]
    fig.suptitle(f"Pruning schedule: {sub['title']}", fontsize=12, fontweight="bold", y=0.975)
    return fig, {"axes": ax, "bars_axes": axb, "line": line, "bars": list(bars)}


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


# ============================================================================================ text formats

def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{100.0 * v:.{digits}f}%"


def _int(v: float | None) -> str:
    return "-" if v is None else f"{int(round(v)):,}"


def _bytes(v: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{int(v):,} B"


def _us(v: float) -> str:
    return f"{v / 1e3:,.3f} ms" if v >= 1e3 else f"{v:,.1f} us"


def _reason_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in counts.items()) or "-"


def _headline(report: dict[str, Any]) -> str:
    s = report["summary"]
    return (f"{_x(s['speedup'])} vs dense: {_us(s['dense']['latency_us'])} dense -> {_us(s['sparse']['latency_us'])} "
            f"sparse; {s['fallback']['kernels']} of {s['fallback']['kernels_requested']} ops that asked for a "
            f"pattern fall back ({_pct(s['fallback']['share_of_time'])} of the time)")


def _guardrail_line(report: dict[str, Any]) -> str:
    g = report["guardrail"]
    return f"QUALITY GUARDRAIL: {g['status'].upper()} - {g['message']}"


def _compress_component(values: list[str]) -> str:
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    if all(v.isdigit() for v in distinct):
        ints = sorted(int(v) for v in distinct)
        if ints == list(range(ints[0], ints[-1] + 1)):
            return f"{{{ints[0]}..{ints[-1]}}}"
    if len(distinct) <= 4:
        return "{" + ",".join(distinct) + "}"
    return "*"


def group_name(names: list[str], limit: int = 3) -> str:
    """One label for a set of op names: ['encoder.0.q', 'encoder.1.k'] -> 'encoder.{0..1}.{q,k}'.

    Names are split at '.', grouped by their number of parts (first appearance order) and each part
    position is written as its single value, an integer range, a set of up to four values, or '*'.
    """
    if len(names) == 1:
        return names[0]
    by_len: dict[int, list[list[str]]] = {}
    for name in names:
        parts = name.split(".")
        by_len.setdefault(len(parts), []).append(parts)
    labels = [".".join(_compress_component([p[i] for p in group]) for i in range(n)) for n, group in by_len.items()]
    text = ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more groups" if len(labels) > limit else "")
    return text


def _grouped_layers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ops with the same op, shape, path, pattern, reason, cycles and binding as one row (model order kept)."""
    groups: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        key = (r["op"], json.dumps(r["shape"], sort_keys=True), r["path"], r["pattern_executed"], r["reason"],
               r["cycles"], r["dense_cycles"], r["binding"])
        g = groups.setdefault(key, {**r, "names": [], "count": 0, "total_cycles": 0, "total_share": 0.0})
        g["names"].append(r["name"])
        g["count"] += 1
        g["total_cycles"] += r["cycles"]
        g["total_share"] += r["share_of_time"]
    return sorted(groups.values(), key=lambda g: (-g["total_cycles"], g["index"]))


def _grouped_schedule(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive schedule rows of identical ops as one row (ranks a..b)."""
    out: list[dict[str, Any]] = []
    for r in rows:
        last = out[-1] if out else None
        if last and (last["op"], last["shape"], last["dense_cycles"], last["sparse_cycles"]) == \
                (r["op"], r["shape"], r["dense_cycles"], r["sparse_cycles"]):
            last["names"].append(r["name"])
            last["last_rank"] = r["rank"]
            last["cumulative_speedup"] = r["cumulative_speedup"]
        else:
            out.append({**r, "names": [r["name"]], "last_rank": r["rank"]})
    return out


def _tables(report: dict[str, Any]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Every table of the report as (head, rows) of text cells, shared by Markdown and HTML."""
    s = report["summary"]
    t: dict[str, tuple[list[str], list[list[str]]]] = {}
    occ_d, occ_s = s["occupancy"]["dense"], s["occupancy"]["sparse"]
    fb, md = s["fallback"], s["metadata"]
    t["summary"] = (["", "dense", "sparse", ""], [
        ["latency", _us(s["dense"]["latency_us"]), _us(s["sparse"]["latency_us"]), f"speedup {_x(s['speedup'])}"],
        ["cycles", _int(s["dense"]["cycles"]), _int(s["sparse"]["cycles"]), ""],
        ["tensor-core occupancy (executed MACs / peak, whole model)", _pct(occ_d["model"]), _pct(occ_s["model"]),
         f"dense-equivalent {_pct(occ_s['model_dense_equivalent'])}"],
        ["occupancy while array ops run", _pct(occ_d["array_ops"]), _pct(occ_s["array_ops"]),
         f"dense-equivalent {_pct(occ_s['array_ops_dense_equivalent'])}"],
        ["share of time in array ops", _pct(occ_d["array_time_share"]), _pct(occ_s["array_time_share"]), ""],
        ["fallback ops (of ops that asked for a pattern)", "", f"{fb['kernels']} / {fb['kernels_requested']}",
         f"{_pct(fb['share_of_requested_kernels'])} of them, {_pct(fb['share_of_all_kernels'])} of all "
         f"{fb['kernels_all']} ops"],
        ["fallback time", "", _int(fb["cycles"]), f"{_pct(fb['share_of_time'])} of the sparse run"],
        ["metadata bytes (DRAM)", "", _bytes(md["dram_bytes"]),
         f"{_pct(md['share_of_weight_dram_bytes'])} of weight bytes, {_pct(md['share_of_dram_bytes'])} of DRAM"],
        ["metadata cycles (ladder: metadata - data movement rung)", "", _int(md["cycles"]),
         f"{_pct(md['share_of_sparse_time'])} of the sparse run"],
    ])
    for level in s["bytes"]["sparse"]:
        d, sp = s["bytes"]["dense"][level], s["bytes"]["sparse"][level]
        parts = ", ".join(f"{k} {_bytes(v)}" for k, v in sp.items() if k != "total")
        t["summary"][1].append([f"bytes moved, {level.upper()}", _bytes(d["total"]), _bytes(sp["total"]),
                                f"sparse: {parts}"])
    e = s["energy"]
    if e is not None:
        t["summary"][1].append(["energy per inference", f"{e['dense_total_j'] * 1e3:,.3f} mJ",
                                f"{e['total_j'] * 1e3:,.3f} mJ", f"perf/W vs dense {_x(e['perf_per_watt_vs_dense'])}"])
        t["summary"][1].append(["average power", f"{e['dense_avg_power_w']:,.1f} W" if e["dense_avg_power_w"] else "-",
                                f"{e['avg_power_w']:,.1f} W", ""])
    fp = s["footprint"]
    if fp:
        t["summary"][1].append(["weights in memory", _bytes(fp["weights_dense_bytes"]),
                                _bytes(fp["weights_deployed_bytes"]),
                                f"incl. metadata {_bytes(fp['weights_metadata_bytes'])}"])
    rc = report["reality_check"]
    t["ladder"] = (["rung", "sparse cycles", "speedup", "change", "share of the gap"], [
        [r["label"], _int(r["sparse_cycles"]), _x(r["speedup"]), f"{r['change']:+.3f}x" if "change" in r else "",
         _pct(next((x["share_of_gap"] for x in rc["losses"] if x["rung"] == r["rung"]), None), 0)
         if "change" in r else ""] for r in rc["rungs"]])
    m = report["matrix"]
    t["patterns"] = (["pattern", "executed as", "model speedup", "ops asking for it", "run sparse",
                      "their share of time"], [
        [p["pattern"], ", ".join(p["executed_as"]) or "-", _x(p["speedup"]), str(p["requested_ops"]),
         str(p["sparse_ops"]), _pct(p["requested_time_share"])] for p in m["patterns"]])
    t["matrix"] = (["op type", "pattern", "ops", "sparse", "padded", "fallback (reason x ops)", "time share",
                    "speedup"], [
        [c["op_type"], c["pattern"], str(c["layers"]),
         str(c["sparse"]),
         str(c["padded"]) + (f" ({_reason_text(c['padding_reasons'])})" if c["padded"] else ""),
         _reason_text(c["fallback"]), _pct(c["share_of_time"]), _x(c["speedup"])] for c in m["rows"]])
    layer_head = ["#", "layer", "op", "m x n x k", "path", "pattern", "reason", "cycles", "dense", "share",
                  "binding", "speedup"]

    def layer_row(r: dict[str, Any]) -> list[str]:
        return [str(r["index"]), r["name"], r["op"], _shape_text(r["shape"]), r["path"],
                r["pattern_executed"] or "-", r["reason"] or "-", _int(r["cycles"]), _int(r["dense_cycles"]),
                _pct(r["share_of_time"]), r["binding"], _x(r["speedup"])]

    groups = _grouped_layers(report["layers"])
    t["layers_top"] = (["layer(s)", "ops", "op", "m x n x k", "path", "pattern", "reason", "cycles each",
                        "dense each", "share (all)", "binding", "speedup"], [
        [group_name(g["names"]), str(g["count"]), g["op"], _shape_text(g["shape"]), g["path"],
         g["pattern_executed"] or "-", g["reason"] or "-", _int(g["cycles"]), _int(g["dense_cycles"]),
         _pct(g["total_share"]), g["binding"], _x(g["speedup"])] for g in groups[:TOP_LAYERS]])
    t["layers_all"] = (layer_head, [layer_row(r) for r in report["layers"]])
    sched = report["pruning_schedule"]
    sgroups = _grouped_schedule(sched["rows"])
    t["schedule"] = (["rank", "layer(s)", "op", "m x n x k", "dense each", "sparse each", "saved each",
                      "saved each (% dense)", "cumulative speedup after"], [
        [str(g["rank"]) if g["rank"] == g["last_rank"] else f"{g['rank']}-{g['last_rank']}", group_name(g["names"]),
         g["op"], _shape_text(g["shape"]), _int(g["dense_cycles"]), _int(g["sparse_cycles"]), _int(g["saved_cycles"]),
         _pct(g["saved_share_of_dense"], 2), _x(g["cumulative_speedup"])] for g in sgroups[:SCHEDULE_ROWS]])
    fi = report["fallback_impact"]
    t["fallback"] = (["reason", "ops", "time now", "share", "speedup if removed", "change", "best case",
                      "expected", "as expected"], [
        [r["reason"], str(r["count"]), _int(r["cycles_now"]), _pct(r["share_of_time"]),
         _x(r["speedup_if_removed"]), f"{r['change']:+.4f}x", _x(r["speedup_if_removed_best"]), r["expected"],
         "yes" if r["as_expected"] else "NO"] for r in fi["reasons"]])
    proxy = report["quality"]["proxy"]
    pgroups: dict[tuple, list[dict[str, Any]]] = {}
    for x in proxy["layers"]:
        pgroups.setdefault((tuple(x["weight_shape"]), x["pattern"], x["weights"]), []).append(x)
    prow = []
    for (shape, pat, label), xs in sorted(pgroups.items(), key=lambda kv: (-max(x["relative_error"] for x in kv[1]),
                                                                            kv[0])):
        worst = max(xs, key=lambda x: (x["relative_error"], x["name"]))
        prow.append([group_name([x["name"] for x in xs]), str(len(xs)), pat, f"{shape[0]}x{shape[1]}",
                     str(worst["rows_sampled"]), f"{sum(x['relative_error'] for x in xs) / len(xs):.4f}",
                     f"{worst['relative_error']:.4f}", _pct(sum(x["kept_energy"] for x in xs) / len(xs)), label])
    t["proxy"] = (["layer(s)", "ops", "pattern", "weight m x k", "rows sampled", "mean relative output error",
                   "max", "kept weight energy", "weights"], prow)
    sens = report["sensitivity"]
    t["sensitivity"] = (["field", "value", "perturbed", "speedup"], [
        [x["field"], _num(x["value"]), _num(x["perturbed"]), _x(x["speedup"])] for x in sens["runs"]])
    q = report["quality"]
    t["quality"] = (["metric", "dense", "value per pattern", "this run", "change", "drop", "threshold", "status"], [
        [q["metric"] or "-", "-" if q["dense"] is None else _num(q["dense"]),
         ", ".join(f"{k}: {_num(v)}" for k, v in q["patterns"].items()) or "-",
         str(q["pattern"]), "-" if q["delta"] is None else f"{q['delta']:+.4g}",
         "-" if q["drop"] is None else f"{q['drop']:.4g}",
         "-" if q["threshold"] is None else f"{q['threshold']:.4g} ({q['threshold_source']})",
         q["status"].upper()]])
    return t


def _header_rows(h: dict[str, Any]) -> list[list[str]]:
    inp = h["inputs"]
    rows = [["accelsim", f"{h['accelsim_version']} (git {h['git_commit']})"],
            ["python / numpy / numba / matplotlib", f"{h['python']} / {h['numpy']} / {h['numba']} / {h['matplotlib']}"],
            ["host", f"{h['host_cpu']}; {h['platform']}"],
            ["command", h["command"] or "(library call)"],
            ["hardware", f"{inp['hardware']['source']} (config {inp['hardware']['config_hash']}"
                         + (f", file sha256 {inp['hardware']['file_sha256']}" if inp['hardware']['file_sha256'] else "")
                         + ")"],
            ["workload", f"{inp['workload']['source']} (config {inp['workload']['config_hash']}"
                         + (f", file sha256 {inp['workload']['file_sha256']}" if inp['workload']['file_sha256'] else "")
                         + ")"]]
    if "weights" in inp:
        rows.append(["weights", f"{inp['weights']['source']} (sha256 {inp['weights']['file_sha256']})"])
    rows.append(["date (UTC)", h["date_utc"]])
    return rows


def _schedule_findings(report: dict[str, Any]) -> list[str]:
    out = []
    sched = report["pruning_schedule"]
    if sched["layers_to_flatten"] is not None:
        out.append(f"Pruning schedule: {sched['layers_to_flatten']} of {sched['layers']} sparse ops reach "
                   f"{FLATTEN_FRACTION:.0%} of the final gain ({_x(sched['final_speedup'])}); the rest add little.")
    elif sched["layers"]:
        out.append(f"Pruning schedule: no net gain from the {sched['layers']} sparse ops "
                   f"({_x(sched['final_speedup'])}).")
    peak = sched["peak"]
    if peak["speedup"] > sched["final_speedup"] + 1e-9 and peak["layers"] > 0:
        out.append(f"Making only the first {peak['layers']} ops of the schedule sparse gives {_x(peak['speedup'])} "
                   f"(all {sched['layers']}: {_x(sched['final_speedup'])}).")
    return out


def _findings(report: dict[str, Any]) -> list[str]:
    """Plain-language findings for the summary (deterministic text)."""
    out = _schedule_findings(report)
    s = report["summary"]
    fi = report["fallback_impact"]
    for r in fi["reasons"]:
        out.append(f"Fallback '{r['reason']}' ({r['count']} ops, {_pct(r['share_of_time'])} of the time): "
                   f"removing it would give {_x(r['speedup_if_removed'])} ({r['change']:+.4f}x).")
    if s["metadata"]["dram_bytes"]:
        out.append(f"Metadata costs {_bytes(s['metadata']['dram_bytes'])} of DRAM traffic and "
                   f"{_int(s['metadata']['cycles'])} cycles ({_pct(s['metadata']['share_of_sparse_time'])}).")
    return out


# ---------------------------------------------------------------------------------------------- markdown

def _md_escape(text: str) -> str:
    """A table cell: '|' and backticks escaped (& < > are escaped for every line by :func:`_md_safe`)."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ")


def _md_fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (user text cannot close it)."""
    runs = re.findall(r"`+", text)
    return "`" * max(3, 1 + max((len(r) for r in runs), default=0))


_FENCE = "\x00fence\x00"  # placeholder of our code fences until the document's fence length is known


def _md_safe(text: str) -> str:
    """Escape &, < and > outside our code blocks, so no user string (names, quality metric and source, file
    names) renders as HTML; our own header comments and blockquote markers are kept. Our code blocks'
    fences are longer than any run of backticks in the document, so user text can neither open nor close one."""
    fence = _md_fence(text)
    out = []
    inside = False
    for line in text.split("\n"):
        if line.startswith(_FENCE):
            inside = not inside
            out.append(fence + line[len(_FENCE):])
            continue
        if inside:
            out.append(line)
            continue
        if line in (HEADER_BEGIN, HEADER_END):
            out.append(line)
            continue
        quote = re.match(r"^>\s?", line)
        head = quote.group(0) if quote else ""
        body = line[len(head):].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(head + body)
    return "\n".join(out)


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return ["(none)"]
    num = re.compile(r"^[-+]?[\d,.]+\s*(x|%|us|ms|B|kB|MB|GB)?( \*)?$")
    right = {i for i in range(len(head))
             if any(num.match(r[i]) for r in rows) and all(num.match(r[i]) for r in rows if r[i] not in ("", "-"))}
    lines = ["| " + " | ".join(_md_escape(h) for h in head) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown; links the chart files written beside it. The header sits between markers."""
    t = _tables(report)
    sub = report["subject"]
    g = report["guardrail"]
    cons = report["contradictions"]
    mark = {"breach": "\u274c", "ok": "\u2705", "missing": "\u26a0\ufe0f"}[g["status"]]
    out = [f"# Sparsity deployment report: {sub['title']}", "",
           f"> {mark} **{_guardrail_line(report)}**", ">",
           f"> **{_headline(report)}**", ">",
           f"> **{len(cons)} contradiction(s)**: " + ("; ".join(c["kind"] for c in cons) if cons else "none")
           + " (see [Contradictions](#contradictions))", "",
           HEADER_BEGIN, "## Build and inputs", ""]
    out += _md_table(["field", "value"], _header_rows(report["header"]))
    out += [HEADER_END, ""]
    out += ["## Summary", "", f"Policy `{sub['policy']}`, dtype {sub['dtype']}, {sub['layers']} ops, "
            f"{sub['clock_ghz']} GHz.", ""]
    out += _md_table(*t["summary"])
    out += [""] + [f"- {f}" for f in _findings(report)] + [""]
    for w in report["summary"]["warnings"]:
        out.append(f"- warning: {w}")
    out += ["### Reality check", "", "![reality check](reality_check.png)", ""]
    out += _md_table(*t["ladder"])
    from accelsim.analysis.reality import RealityCheck
    from accelsim.report.reality_chart import text_bars

    out += ["", f"{_FENCE}text", text_bars(RealityCheck.from_dict(report["reality_check"])), _FENCE, ""]
    m = report["matrix"]
    out += ["## Supported-layer matrix", "",
            f"Ops whose plan asks for a pattern, by op type and pattern: **sparse**, **padded** (sparse with "
            f"n/k padding) or **fallback** with its reason code. {m['ops_without_pattern']} other ops (vector "
            "ops: norms, softmax, activations, pooling, embeddings) never take a pattern.", ""]
    out += _md_table(*t["patterns"]) + [""]
    out += _md_table(*t["matrix"]) + [""]
    n_layers = len(report["layers"])
    out += ["## Per-layer table", "",
            f"The {min(TOP_LAYERS, n_layers)} ops with the most time in the sparse run, of {n_layers}"
            + (" (all ops are in report.json and in the HTML report)." if n_layers > TOP_LAYERS else "."), ""]
    out += _md_table(*t["layers_top"]) + [""]
    sched = report["pruning_schedule"]
    out += ["## Pruning schedule", "", "Which ops to make sparse first: ranked by simulated time saved "
            f"(`{sched['definition']}`). The curve ends at the run's speedup {_x(sched['run_speedup'])}.", "",
            "![pruning schedule](pruning_schedule.png)", ""]
    out += [f"- {f}" for f in _schedule_findings(report)] + [""]
    out += _md_table(*t["schedule"])
    if len(_grouped_schedule(sched["rows"])) > SCHEDULE_ROWS:
        out.append(f"\n(first {SCHEDULE_ROWS} rows of the {sched['layers']}-op schedule; all are in report.json)")
    fi = report["fallback_impact"]
    out += ["", "## Dense-fallback impact", "",
            f"{fi['layers']} fallback ops take {_int(fi['cycles'])} cycles, {_pct(fi['share_of_time'])} of the "
            f"sparse run. Per reason, the model speedup if the reason were removed ({fi['method']}; "
            f"policy `{fi['policy']}`; best case: each op keeps the faster kernel):", ""]
    out += _md_table(*t["fallback"]) + [""]
    for r in fi["reasons"]:
        names = r["layers"]
        out.append(f"- `{r['reason']}` ({r['description']}): {r['mode']}; "
                   f"{r['sparse_faster_layers']} of {r['count']} ops are faster sparse on their own; hardware changes: "
                   f"{', '.join(r['hardware_changes']) or 'none'}; ops: {group_name(names)}")
    if fi["all_real_reasons_removed"]:
        a = fi["all_real_reasons_removed"]
        out.append(f"- all of {', '.join(a['reasons'])} removed: {_x(a['speedup_if_removed'])} "
                   f"(best case {_x(a['speedup_if_removed_best'])})")
    q = report["quality"]
    proxy = q["proxy"]
    out += ["", "## Quality guardrail", "", f"**{g['status'].upper()}**: {g['message']}", ""]
    out += _md_table(*t["quality"])
    if q["source"]:
        out += ["", f"Source of the figures: {q['source']}"]
    plabel = proxy["label"] or "no op runs sparse"
    out += ["", f"### Numeric proxy ({plabel})", ""]
    if proxy["layers"]:
        if proxy["synthetic_layers"]:
            out.append(f"**On {SYNTHETIC_LABEL}** (seeded Gaussian, not the model's weights) for "
                       f"{proxy['synthetic_layers']} of {len(proxy['layers'])} ops: the figures show what magnitude "
                       "pruning does to a generic matrix, not to this model.")
        out += ["", f"MAC-weighted relative output error {proxy['mac_weighted_error']:.4f}, worst "
                f"{proxy['max_error']:.4f} ({proxy['max_error_layer']}), {plabel}. {proxy['method']}. "
                f"Caveat: {proxy['caveat']}.", "", "By weight shape:", ""]
        out += _md_table(*t["proxy"])
        if proxy["unused_arrays"]:
            out += ["", "Arrays in the weights file that match no weight layer: " + ", ".join(proxy["unused_arrays"])]
    sens = report["sensitivity"]
    out += ["", "## Sensitivity to calibrated fields", ""]
    if sens["runs"]:
        out += [f"Each CALIBRATED field perturbed by +/-{sens['perturbation']:.0%}: the speedup ranges over "
                f"{_x(sens['range'][0])} - {_x(sens['range'][1])} (nominal {_x(sens['speedup'])}).", ""]
        out += _md_table(*t["sensitivity"])
    else:
        out.append(sens["note"] or "none")
    out += ["", "## Serving latency (p50 / p95 / p99)", ""]
    out += _serving_md(report.get("serving", {}))
    out += ["", "## Contradictions", "", "Evidence that points the other way:", ""]
    out += [f"- **{c['kind']}**: {c['message']}" for c in cons] or ["- none found"]
    out += ["", "---", "Generated by `accelsim report`; the full data is in report.json (everything outside "
            "`header` is byte-identical for identical inputs).", ""]
    return _md_safe("\n".join(out))


# ---------------------------------------------------------------------------------------------- html

_CSS = ("body{font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:24px auto;"
        "max-width:1280px;padding:0 16px;color:#222;line-height:1.4}h1{font-size:22px;margin:0 0 10px}"
        "h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:28px}h3{font-size:15px}"
        ".banner{padding:10px 14px;border-radius:6px;margin:8px 0;font-weight:600}"
        ".breach{background:#fde2e1;border:2px solid #d64541;color:#8b1a17}"
        ".ok{background:#e3f4e8;border:1px solid #2e9e4f;color:#1d5e31}"
        ".missing{background:#fff3da;border:1px solid #f2a52b;color:#7a4d00}"
        ".headline{font-size:16px;margin:6px 0}.cons{background:#fff6e9;border-left:4px solid #f28e2b;"
        "padding:6px 12px}table{border-collapse:collapse;font-size:12.5px;margin:6px 0 12px}"
        "th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}"
        "th{background:#f3f5f7}tr:nth-child(even) td{background:#fafbfc}td.n{text-align:right;"
        "font-variant-numeric:tabular-nums}img{max-width:100%;border:1px solid #eee}.small{color:#666;font-size:12px}"
        "details{margin:8px 0}summary{cursor:pointer;color:#1f4e79}.hdr td:first-child{color:#555;width:220px}"
        "code{background:#f3f5f7;padding:0 3px}.bad{color:#b3261e;font-weight:600}")


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html_table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    if not rows:
        return "<p>(none)</p>"
    num = re.compile(r"^[-+]?[\d,.]+\s*(x|%|us|ms|B|kB|MB|GB)?( \*)?$")
    parts = [f"<table{f' class={cls!r}' if cls else ''}>"
             + ("<tr>" + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr>" if head else "")]
    for r in rows:
        cells = []
        for c in r:
            klass = " class='n'" if num.match(c or "") else ""
            text = _esc(c)
            if c == "NO":
                text = "<span class='bad'>NO</span>"
            cells.append(f"<td{klass}>{text}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(parts) + "\n</table>"


def _img(png: bytes, alt: str) -> str:
    return f"<img alt='{_esc(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"


def render_html(report: dict[str, Any], charts: dict[str, bytes]) -> str:
    """One self-contained HTML file: inline CSS, charts as base64 PNG data URIs, no external references."""
    t = _tables(report)
    sub = report["subject"]
    g = report["guardrail"]
    cons = report["contradictions"]
    status = g["status"]
    title = f"[{status.upper()}] Sparsity deployment report: {sub['title']}"
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           f"<title>{_esc(title)}</title>",
           f"<!-- {_esc(_guardrail_line(report))} -->",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>Sparsity deployment report: {_esc(sub['title'])}</h1>",
           f"<div class='banner {status}'>{_esc(_guardrail_line(report))}</div>",
           f"<p class='headline'><b>{_esc(_headline(report))}</b></p>",
           f"<p class='cons'><b>{len(cons)} contradiction(s)</b>: "
           + (_esc("; ".join(c["kind"] for c in cons)) if cons else "none")
           + " (see <a href='#contradictions'>Contradictions</a>)</p>",
           HEADER_BEGIN, "<h2>Build and inputs</h2>", _html_table([], _header_rows(report["header"]), "hdr"),
           HEADER_END]
    out += ["<h2>Summary</h2>",
            f"<p>Policy <code>{_esc(sub['policy'])}</code>, dtype {_esc(sub['dtype'])}, {sub['layers']} ops, "
            f"{_esc(sub['clock_ghz'])} GHz.</p>", _html_table(*t["summary"])]
    out += ["<ul>"] + [f"<li>{_esc(f)}</li>" for f in _findings(report)]
    out += [f"<li>warning: {_esc(w)}</li>" for w in report["summary"]["warnings"]] + ["</ul>"]
    out += ["<h3>Reality check</h3>", _img(charts["reality_check"], "reality check: nominal vs real speedup and "
                                           "the ladder"), _html_table(*t["ladder"])]
    m = report["matrix"]
    out += ["<h2>Supported-layer matrix</h2>",
            f"<p>Ops whose plan asks for a pattern, by op type and pattern: <b>sparse</b>, <b>padded</b> (sparse "
            f"with n/k padding) or <b>fallback</b> with its reason code. {m['ops_without_pattern']} other ops "
            "(vector ops) never take a pattern.</p>", _html_table(*t["patterns"]), _html_table(*t["matrix"])]
    n_layers = len(report["layers"])
    out += ["<h2>Per-layer table</h2>",
            f"<p>The {min(TOP_LAYERS, n_layers)} ops with the most time in the sparse run, of {n_layers}.</p>",
            _html_table(*t["layers_top"])]
    if n_layers > TOP_LAYERS:
        out += [f"<details><summary>all {n_layers} ops in model order</summary>", _html_table(*t["layers_all"]),
                "</details>"]
    sched = report["pruning_schedule"]
    out += ["<h2>Pruning schedule</h2>",
            f"<p>Which ops to make sparse first: ranked by simulated time saved (<code>{_esc(sched['definition'])}"
            f"</code>). The curve ends at the run's speedup {_x(sched['run_speedup'])}.</p>",
            _img(charts["pruning_schedule"], "pruning schedule: cumulative speedup vs ops made sparse"),
            "<ul>"] + [f"<li>{_esc(f)}</li>" for f in _schedule_findings(report)]
    out += ["</ul>", _html_table(*t["schedule"])]
    if len(_grouped_schedule(sched["rows"])) > SCHEDULE_ROWS:
        out.append(f"<p class='small'>first {SCHEDULE_ROWS} rows of the {sched['layers']}-op schedule; all are in "
                   "report.json</p>")
    fi = report["fallback_impact"]
    out += ["<h2>Dense-fallback impact</h2>",
            f"<p>{fi['layers']} fallback ops take {_int(fi['cycles'])} cycles, {_pct(fi['share_of_time'])} of the "
            f"sparse run. Per reason, the model speedup if the reason were removed ({_esc(fi['method'])}; policy "
            f"<code>{_esc(fi['policy'])}</code>; best case: each op keeps the faster kernel):</p>",
            _html_table(*t["fallback"]), "<ul>"]
    for r in fi["reasons"]:
        names = r["layers"]
        out.append(f"<li><code>{_esc(r['reason'])}</code> ({_esc(r['description'])}): {_esc(r['mode'])}; "
                   f"{r['sparse_faster_layers']} of {r['count']} ops are faster sparse on their own; hardware "
                   f"changes: {_esc(', '.join(r['hardware_changes']) or 'none')}; ops: "
                   + _esc(group_name(names)) + "</li>")
    if fi["all_real_reasons_removed"]:
        a = fi["all_real_reasons_removed"]
        out.append(f"<li>all of {_esc(', '.join(a['reasons']))} removed: {_x(a['speedup_if_removed'])} "
                   f"(best case {_x(a['speedup_if_removed_best'])})</li>")
    out.append("</ul>")
    q = report["quality"]
    proxy = q["proxy"]
    out += ["<h2>Quality guardrail</h2>", f"<div class='banner {status}'>{_esc(g['status'].upper())}: "
            f"{_esc(g['message'])}</div>", _html_table(*t["quality"])]
    if q["source"]:
        out.append(f"<p class='small'>Source of the figures: {_esc(q['source'])}</p>")
    plabel = proxy["label"] or "no op runs sparse"
    out.append(f"<h3>Numeric proxy ({_esc(plabel)})</h3>")
    if proxy["layers"]:
        if proxy["synthetic_layers"]:
            out.append(f"<p><b>On {SYNTHETIC_LABEL}</b> (seeded Gaussian, not the model's weights) for "
                       f"{proxy['synthetic_layers']} of {len(proxy['layers'])} ops: the figures show what magnitude "
                       "pruning does to a generic matrix, not to this model.</p>")
        out += [f"<p>MAC-weighted relative output error {proxy['mac_weighted_error']:.4f}, worst "
                f"{proxy['max_error']:.4f} ({_esc(proxy['max_error_layer'])}), {_esc(plabel)}. "
                f"{_esc(proxy['method'])}. Caveat: {_esc(proxy['caveat'])}.</p>", "<p>By weight shape:</p>",
                _html_table(*t["proxy"])]
        if proxy["unused_arrays"]:
            out.append("<p class='small'>Arrays in the weights file that match no weight layer: "
                       + _esc(", ".join(proxy["unused_arrays"])) + "</p>")
    sens = report["sensitivity"]
    out.append("<h2>Sensitivity to calibrated fields</h2>")
    if sens["runs"]:
        out += [f"<p>Each CALIBRATED field perturbed by &plusmn;{sens['perturbation']:.0%}: the speedup ranges over "
                f"{_x(sens['range'][0])} - {_x(sens['range'][1])} (nominal {_x(sens['speedup'])}).</p>",
                _html_table(*t["sensitivity"])]
    else:
        out.append(f"<p>{_esc(sens['note'] or 'none')}</p>")
    out.append("<h2>Serving latency (p50 / p95 / p99)</h2>")
    sv = report.get("serving", {})
    if sv.get("status") == "ok":
        out += [f"<p>{_esc(sv['note'])}</p>", _html_table(*_serving_cells(sv))]
    else:
        out.append(f"<p>{_esc(sv.get('note', 'skipped'))}</p>")
    out += ["<h2 id='contradictions'>Contradictions</h2>", "<p>Evidence that points the other way:</p>", "<ul>"]
    out += [f"<li><b>{_esc(c['kind'])}</b>: {_esc(c['message'])}</li>" for c in cons] or ["<li>none found</li>"]
    out += ["</ul>", "<hr><p class='small'>Generated by <code>accelsim report</code>; the full data is in "
            "report.json (everything outside <code>header</code> is byte-identical for identical inputs).</p>",
            "</body></html>", ""]
    text = "\n".join(out)
    # no URL scheme may appear anywhere (a user-supplied source text could hold one): defuse it
    return re.sub(r"(?i)\b(https?):(?=//)", r"\1&#58;", text)


def strip_header(text: str) -> str:
    """The rendered Markdown / HTML without its header block (for determinism checks)."""
    start, end = text.find(HEADER_BEGIN), text.find(HEADER_END)
    if start < 0 or end < start:
        return text
    return text[:start] + text[end + len(HEADER_END):]


# ============================================================================================ files

def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_report(report: dict[str, Any], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write report.md, report.html, report.json and the chart files; return the paths written.

    Everything is rendered in memory first, then written all or nothing
    (:func:`accelsim.fileio.write_all`): a failure leaves the previous files or none, never a mix.
    """
    from accelsim.fileio import figure_bytes, write_all
    from accelsim.report.reality_chart import BASENAME, render_reality_check
    from accelsim.report.reality_chart import DPI as RC_DPI

    out = Path(out_dir)
    from accelsim.analysis.reality import RealityCheck

    fig_rc, _ = render_reality_check(RealityCheck.from_dict(report["reality_check"]))
    fig_sched, _ = render_schedule_chart(report)
    charts = {"reality_check": _png(fig_rc), "pruning_schedule": _png(fig_sched)}
    payloads = {
        "report.json": report_json(report).encode("utf-8"),
        "report.md": render_markdown(report).encode("utf-8"),
        "report.html": render_html(report, charts).encode("utf-8"),
        "pruning_schedule.png": charts["pruning_schedule"],
        f"{BASENAME}.png": figure_bytes(fig_rc, "png", RC_DPI),
        f"{BASENAME}.svg": figure_bytes(fig_rc, "svg", RC_DPI),
    }
    return write_all({out / name: payload for name, payload in payloads.items()})


# ============================================================================================ command

def _command_line(hw_path: str, workload_path: str, out_dir: str, sparsity: str | None, sets: list[str],
                  hw_set: list[str], policy: str, patterns: list[str] | None, quality_threshold: float | None,
                  weights: str | None) -> list[str]:
    cmd = ["accelsim", "report", "--hw", str(hw_path), "--workload", str(workload_path)]
    for s in sets:
        cmd += ["--set", s]
    for s in hw_set:
        cmd += ["--hw-set", s]
    if sparsity:
        cmd += ["--sparsity", sparsity]
    if policy != "sparse-if-supported":
        cmd += ["--policy", policy]
    if patterns:
        cmd += ["--patterns", ",".join(patterns)]
    if quality_threshold is not None:
        cmd += ["--quality-threshold", f"{quality_threshold:g}"]
    if weights:
        cmd += ["--weights", str(weights)]
    return cmd + ["-o", str(out_dir)]


def report_command(hw_path: str, workload_path: str, out_dir: str, sparsity: str | None = "2:4",
                   set_params: list[str] | dict[str, Any] | None = None, hw_set: list[str] | None = None,
                   policy: str = "sparse-if-supported", patterns: list[str] | str | None = None,
                   quality_threshold: float | None = None, weights: str | None = None,
                   command: list[str] | str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> tuple[list[Path], list[str]]:
    """The ``accelsim report`` handler: load, build, write. Returns (paths written, summary lines to print).

    ``set_params``: workload parameters as ``KEY=VALUE`` strings (``--set``) or a dict.
    ``hw_set``: hardware overrides ``PATH=VALUE`` (``--hw-set``). ``patterns``: list or "2:4,1:4".
    """
    from accelsim.config.templating import parse_sets
    from accelsim.hardware.model import load_hardware
    from accelsim.workloads.model import load_workload

    if isinstance(set_params, dict):
        params: dict[str, Any] = dict(set_params)
        sets = [f"{k}={v}" for k, v in set_params.items()]
    else:
        sets = list(set_params or [])
        params = parse_sets(sets, str(workload_path))
    if isinstance(patterns, str):
        patterns = [p.strip() for p in patterns.split(",") if p.strip()]
    hw = load_hardware(hw_path, list(hw_set or []))
    model = load_workload(workload_path, params)
    if command is None:
        command = _command_line(hw_path, workload_path, out_dir, sparsity, sets, list(hw_set or []), policy,
                                patterns, quality_threshold, weights)
    report = build_report(model, hw, sparsity, policy=policy, patterns=patterns, quality_threshold=quality_threshold,
                          weights=weights, command=command, hw_source=str(hw_path),
                          workload_source=str(workload_path), progress=progress)
    paths = write_report(report, out_dir)
    return paths, summary_lines(report)


def summary_lines(report: dict[str, Any]) -> list[str]:
    """A few lines for the terminal: guardrail first, then the headline numbers and the contradictions."""
    sub = report["subject"]
    lines = [_guardrail_line(report), f"{sub['title']}: {_headline(report)}"]
    sched = report["pruning_schedule"]
    if sched["layers_to_flatten"] is not None:
        lines.append(f"pruning schedule: {sched['layers_to_flatten']} of {sched['layers']} sparse ops reach "
                     f"{FLATTEN_FRACTION:.0%} of the gain")
    for r in report["fallback_impact"]["reasons"]:
        lines.append(f"fallback {r['reason']}: {r['count']} ops, {_pct(r['share_of_time'])} of time; if removed "
                     f"{_x(r['speedup_if_removed'])}")
    cons = report["contradictions"]
    lines.append(f"{len(cons)} contradiction(s)" + (": " + "; ".join(c["kind"] for c in cons) if cons else ""))
    return lines
