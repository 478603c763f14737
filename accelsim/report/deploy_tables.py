"""Every table of the deployment report as (head, rows) of text cells, shared by Markdown and HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelsim.report.deploy_text import (
    SCHEDULE_ROWS,
    TOP_LAYERS,
    fmt_bytes,
    fmt_int,
    fmt_num,
    fmt_pct,
    fmt_us,
    fmt_x,
    group_name,
    grouped_layers,
    grouped_schedule,
    reason_text,
    shape_text,
)

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport
    from accelsim.analysis.deployment_quality import ProxyLayer
    from accelsim.analysis.deployment_serving import ServingLatency, ServingRow, ServingSection
    from accelsim.analysis.deployment_summary import LayerRow

__all__ = ["Table", "serving_cells", "tables"]

Table = tuple[list[str], list[list[str]]]
NEAR_MARK = "~"  # a percentile whose offered load is near (not above) capacity; the section's note says so


def serving_cells(sv: ServingSection) -> Table:
    """Head and rows of the serving table (a * marks an overloaded run's percentiles, a ~ a run near capacity).

    One-shot: a row per load, request latency per variant. LLM: a row per load and variant, TTFT and TPOT."""
    labs = list(sv.labels or ())
    lead = ["load", "rate (req/s)", "duration (s)"]

    def ms(value: float, v: ServingLatency) -> str:
        return f"{value:,.3f} ms" + (" *" if v.overloaded else f" {NEAR_MARK}" if v.near_capacity else "")

    def start(r: ServingRow) -> list[str]:
        return [f"{r.load:.0%}", f"{r.rate_rps:g}", f"{r.duration_s:g}"]

    if sv.mode == "llm":
        qs = ("p50", "p95", "p99")
        head = [*lead, "deployment"] + [f"{m} {q}" for m in ("TTFT", "TPOT") for q in qs]
        body = []
        for r in sv.rows or ():
            for lab in labs:
                v = r.by_label[lab]
                cells = [ms(getattr(part, q), v) if part is not None else "-"
                         for part in (v.ttft, v.tpot) for q in qs]
                body.append([*start(r), lab, *cells])
        return head, body
    head = lead + [f"{lab} {q}" for lab in labs for q in ("p50", "p95", "p99")]
    body = [start(r) + [ms(getattr(r.by_label[lab], q), r.by_label[lab]) for lab in labs
                        for q in ("p50", "p95", "p99")] for r in sv.rows or ()]
    return head, body


def _summary_table(report: DeploymentReport) -> Table:
    s = report.summary
    occ_d, occ_s = s.occupancy.dense, s.occupancy.sparse
    fb, md = s.fallback, s.metadata
    fp = s.footprint
    shard = fp.get("devices") if fp and fp.get("per_device") else None  # a system: bytes of one device's shard
    each = f" (per device of {shard})" if shard else ""
    rows = [
        ["latency", fmt_us(s.dense.latency_us), fmt_us(s.sparse.latency_us), f"speedup {fmt_x(s.speedup)}"],
        ["cycles", fmt_int(s.dense.cycles), fmt_int(s.sparse.cycles), ""],
        ["tensor-core occupancy (executed MACs / peak, whole model)", fmt_pct(occ_d.model), fmt_pct(occ_s.model),
         f"dense-equivalent {fmt_pct(occ_s.model_dense_equivalent)}"],
        ["occupancy while array ops run", fmt_pct(occ_d.array_ops), fmt_pct(occ_s.array_ops),
         f"dense-equivalent {fmt_pct(occ_s.array_ops_dense_equivalent)}"],
        ["share of time in array ops", fmt_pct(occ_d.array_time_share), fmt_pct(occ_s.array_time_share), ""],
        ["fallback ops (of ops that asked for a pattern)", "", f"{fb.kernels} / {fb.kernels_requested}",
         f"{fmt_pct(fb.share_of_requested_kernels)} of them, {fmt_pct(fb.share_of_all_kernels)} of all "
         f"{fb.kernels_all} ops"],
        ["fallback time", "", fmt_int(fb.cycles), f"{fmt_pct(fb.share_of_time)} of the sparse run"],
        [f"metadata bytes (DRAM{f', per device of {shard}' if shard else ''})", "", fmt_bytes(md.dram_bytes),
         f"{fmt_pct(md.share_of_weight_dram_bytes)} of weight bytes, {fmt_pct(md.share_of_dram_bytes)} of DRAM"],
        ["metadata cycles (ladder: metadata - data movement rung)", "", fmt_int(md.cycles),
         f"{fmt_pct(md.share_of_sparse_time)} of the sparse run"],
    ]
    for level in s.bytes.sparse:
        d, sp = s.bytes.dense[level], s.bytes.sparse[level]
        parts = ", ".join(f"{k} {fmt_bytes(v)}" for k, v in sp.items() if k != "total")
        rows.append([f"bytes moved, {level.upper()}{each}", fmt_bytes(d["total"]), fmt_bytes(sp["total"]),
                     f"sparse: {parts}"])
    e = s.energy
    if e is None:
        rows.append(["energy per inference", "", "", f"not modelled: {s.energy_not_modelled or 'no energy figures'}"])
    else:
        whole = f" (system of {e.devices} devices)" if e.per_device is not None else ""
        rows.append([f"energy per inference{whole}", _mj(e.dense_total_j), _mj(e.total_j),
                     f"perf/W vs dense {fmt_x(e.perf_per_watt_vs_dense)}"])
        if e.per_device is not None:
            rows.append([f"energy per inference (per device of {e.devices})", _mj(e.per_device["dense_total_j"]),
                         _mj(e.per_device["total_j"]), "every device runs its shard"])
        rows.append([f"average power{whole}", _watts(e.dense_avg_power_w), _watts(e.avg_power_w), ""])
        if e.per_device is not None:
            rows.append([f"average power (per device of {e.devices})", _watts(e.per_device["dense_avg_power_w"]),
                         _watts(e.per_device["avg_power_w"]), ""])
    if fp:
        rows.append([f"weights in memory{each}", fmt_bytes(fp["weights_dense_bytes"]),
                     fmt_bytes(fp["weights_deployed_bytes"]),
                     f"incl. metadata {fmt_bytes(fp['weights_metadata_bytes'])}"])
        if "kv_room_bytes" in fp:  # a tensor-parallel system: what each device has left for the KV cache
            rows.append([f"KV-cache room{each}", fmt_bytes(fp["kv_room_dense_bytes"]), fmt_bytes(fp["kv_room_bytes"]),
                         f"DRAM {fmt_bytes(fp['dram_capacity_bytes'])} less weights and peak activations "
                         f"{fmt_bytes(fp['activations_peak_bytes'])}; this run's KV cache "
                         f"{fmt_bytes(fp['kv_cache_bytes'])}"])
    return ["", "dense", "sparse", ""], rows


def _mj(j: float | None) -> str:
    return f"{j * 1e3:,.3f} mJ" if j is not None else "-"


def _watts(w: float | None) -> str:
    return f"{w:,.1f} W" if w else "-"


def _shape(r: LayerRow) -> str:
    """The op's m x n x k (or elements); an op fused into the attention kernel above it runs nothing itself."""
    return "(fused)" if r.fused else shape_text(r.shape)


def _layer_row(r: LayerRow) -> list[str]:
    return [str(r.index), r.name, r.op, _shape(r), r.path, r.pattern_executed or "-", r.reason or "-",
            fmt_int(r.cycles), fmt_int(r.dense_cycles), fmt_pct(r.share_of_time), r.binding, fmt_x(r.speedup),
            _best(r)]


def _best(r: LayerRow) -> str:
    """The best format at the sparsity level the layer asks for and its speedup ("-" for layers that ask for none;
    "- (kept dense by the plan)" for a layer the workload's plan keeps dense)."""
    if r.best_format is None:
        return "- (kept dense by the plan)" if r.reason == "kept_dense" else "-"
    return r.best_format if r.best_format == "dense" else f"{r.best_format} {fmt_x(r.best_format_speedup)}"


def _proxy_table(layers: tuple[ProxyLayer, ...], universe: list[str]) -> Table:
    groups: dict[tuple[tuple[int, ...], str, str], list[ProxyLayer]] = {}
    for x in layers:
        groups.setdefault((tuple(x.weight_shape), x.pattern, x.weights), []).append(x)
    rows = []
    for (shape, pat, label), xs in sorted(groups.items(), key=lambda kv: (-max(x.relative_error for x in kv[1]),
                                                                           kv[0])):
        worst = max(xs, key=lambda x: (x.relative_error, x.name))
        rows.append([group_name([x.name for x in xs], universe=universe), str(len(xs)), pat, f"{shape[0]}x{shape[1]}",
                     str(worst.rows_sampled), f"{sum(x.relative_error for x in xs) / len(xs):.4f}",
                     f"{worst.relative_error:.4f}", fmt_pct(sum(x.kept_energy for x in xs) / len(xs)), label])
    return (["layer(s)", "ops", "pattern", "weight m x k", "rows sampled", "mean relative output error", "max",
             "kept weight energy", "weights"], rows)


def tables(report: DeploymentReport) -> dict[str, Table]:
    """Every table of the report as (head, rows) of text cells, shared by Markdown and HTML."""
    t: dict[str, Table] = {"summary": _summary_table(report)}
    rc = report.reality_check
    shares = {x.rung: x.share_of_gap for x in rc.losses}
    t["ladder"] = (["rung", "sparse cycles", "speedup", "change", "share of the gap"], [
        [r.label, fmt_int(r.sparse_cycles), fmt_x(r.speedup), f"{r.change:+.3f}x" if r.change is not None else "",
         fmt_pct(shares.get(r.rung), 0) if r.change is not None else ""] for r in rc.rungs])
    m = report.matrix
    t["patterns"] = (["pattern", "executed as", "model speedup", "ops asking for it", "run sparse",
                      "their share of time"], [
        [p.pattern, ", ".join(p.executed_as) or "-", fmt_x(p.speedup), str(p.requested_ops),
         str(p.sparse_ops), fmt_pct(p.requested_time_share)] for p in m.patterns])
    t["matrix"] = (["op type", "pattern", "ops", "sparse", "padded", "fallback (reason x ops)", "time share",
                    "speedup"], [
        [c.op_type, c.pattern, str(c.layers), str(c.sparse),
         str(c.padded) + (f" ({reason_text(c.padding_reasons)})" if c.padded else ""),
         reason_text(c.fallback), fmt_pct(c.share_of_time), fmt_x(c.speedup)] for c in m.rows])
    layer_head = ["#", "layer", "op", "m x n x k", "path", "pattern", "reason", "cycles", "dense", "share",
                  "binding", "speedup", "best format at this sparsity"]
    groups = grouped_layers(report.layers)
    universe = [r.name for r in report.layers]  # every op, so that a label writes '*' only where it is exact
    t["layers_top"] = (["layer(s)", "ops", "op", "m x n x k", "path", "pattern", "reason", "cycles each",
                        "dense each", "share (all)", "binding", "speedup", "best format at this sparsity"], [
        [group_name(g.names, universe=universe), str(g.count), g.first.op, _shape(g.first), g.first.path,
         g.first.pattern_executed or "-", g.first.reason or "-", fmt_int(g.first.cycles), fmt_int(g.first.dense_cycles),
         fmt_pct(g.total_share), g.first.binding, fmt_x(g.first.speedup), _best(g.first)]
        for g in groups[:TOP_LAYERS]])
    t["layers_all"] = (layer_head, [_layer_row(r) for r in report.layers])
    sgroups = grouped_schedule(report.pruning_schedule.rows)
    t["schedule"] = (["rank", "layer(s)", "op", "m x n x k", "dense each", "sparse each", "saved each",
                      "saved each (% dense)", "cumulative speedup after"], [
        [str(g.first.rank) if g.first.rank == g.last_rank else f"{g.first.rank}-{g.last_rank}",
         group_name(g.names, universe=universe),
         g.first.op, shape_text(g.first.shape), fmt_int(g.first.dense_cycles), fmt_int(g.first.sparse_cycles),
         fmt_int(g.first.saved_cycles), fmt_pct(g.first.saved_share_of_dense, 2), fmt_x(g.cumulative_speedup)]
        for g in sgroups[:SCHEDULE_ROWS]])
    t["fallback"] = (["reason", "ops", "time now", "share", "speedup if removed", "change", "best case",
                      "expected", "as expected"], [
        [r.reason, str(r.count), fmt_int(r.cycles_now), fmt_pct(r.share_of_time), fmt_x(r.speedup_if_removed),
         f"{r.change:+.4f}x", fmt_x(r.speedup_if_removed_best), r.expected, "yes" if r.as_expected else "NO"]
        for r in report.fallback_impact.reasons])
    q = report.quality
    t["proxy"] = _proxy_table(q.proxy.layers, universe)
    t["sensitivity"] = (["field", "value", "perturbed", "speedup"], [
        [x.field, fmt_num(x.value), fmt_num(x.perturbed), fmt_x(x.speedup)] for x in report.sensitivity.runs])
    own = q.workload
    figures = ("published entry" if q.drop_source == "registry" else "workload's own" if own is not None else "-")
    rows = [[figures, q.metric or "-", "-" if q.dense is None else fmt_num(q.dense),
             ", ".join(f"{k}: {fmt_num(v)}" for k, v in q.patterns.items()) or "-",
             q.pattern or "mixed plan", "-" if q.delta is None else f"{q.delta:+.4g}",
             "-" if q.drop is None else f"{q.drop:.4g}",
             "-" if q.threshold is None else f"{q.threshold:.4g} ({q.threshold_source})",
             q.status.upper()]]
    if own is not None and q.drop_source == "registry":  # the workload's figures, in their own metric, apart
        rows.append(["workload's own", own.metric, "-" if own.dense is None else fmt_num(own.dense),
                     ", ".join(f"{k}: {fmt_num(v)}" for k, v in own.patterns.items()) or "-",
                     q.pattern or "mixed plan", "-", "-", "-" if own.max_drop is None else f"{own.max_drop:.4g} "
                     "(workload quality.max_drop)", "not checked (no figure for this run)"])
    t["quality"] = (["figures", "metric", "dense", "value per pattern", "this run", "change", "drop", "threshold",
                     "status"], rows)
    t["quality_labels"] = (["figure", "format", "value", "dense (same source)", "kind", "registry id"], [
        [f.where, f.format, fmt_num(f.value), "-" if f.dense is None else fmt_num(f.dense), f.kind, f.entry or "-"]
        for f in report.quality_labels.figures])
    ev = q.evidence
    used = "used" if q.drop_source == "registry" else "best published"
    t["evidence"] = (["quality registry entry", "after pruning", "drop", "guardrail"], [
        [ident, "fine-tuned" if ft else "one-shot", fmt_num(drop), used if ident == ev.chosen else ""]
        for ident, drop, ft in zip(ev.entries, ev.drops, ev.finetuned, strict=True)])
    return t
