"""Text pieces of the deployment report shared by its Markdown, HTML and terminal views.

Number formats, the headline and guardrail lines, the findings, the header rows, and the grouping
of identical ops into one table row. Everything takes the
:class:`~accelsim.analysis.deployment.DeploymentReport` (or a part of it) and returns text.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from accelsim.workloads.names import group_name

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport, ReportHeader
    from accelsim.analysis.deployment_serving import ServingSection
    from accelsim.analysis.deployment_summary import LayerRow, ScheduleRow

__all__ = ["HEADER_BEGIN", "HEADER_END", "NUMERIC_CELL", "SCHEDULE_ROWS", "SYNTHETIC_LABEL", "TOP_LAYERS", "LayerGroup",
           "ScheduleGroup", "findings", "fmt_bytes", "fmt_int", "fmt_num", "fmt_pct", "fmt_us", "fmt_x",
           "group_name", "grouped_layers", "grouped_schedule", "guardrail_line", "header_rows", "headline",
           "reason_text", "schedule_findings", "serving_heading", "serving_line", "serving_skipped", "shape_text"]

HEADER_BEGIN = "<!-- report-header:begin -->"
HEADER_END = "<!-- report-header:end -->"
SYNTHETIC_LABEL = "synthetic weights"  # as the analysis labels them (accelsim.analysis.deployment_quality)
TOP_LAYERS = 40        # per-layer rows shown in the Markdown / HTML body (all are in the JSON)
SCHEDULE_ROWS = 20     # pruning-schedule rows shown in the Markdown / HTML
NUMERIC_CELL = re.compile(r"^[-+]?[\d,.]+\s*(x|%|us|ms|B|kB|MB|GB)?( \*)?$")  # table cells set right-aligned


# ============================================================================================ numbers

def fmt_x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"


def fmt_pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{100.0 * v:.{digits}f}%"


def fmt_int(v: float | None) -> str:
    return "-" if v is None else f"{int(round(v)):,}"


def fmt_bytes(v: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{int(v):,} B"


def fmt_us(v: float) -> str:
    return f"{v / 1e3:,.3f} ms" if v >= 1e3 else f"{v:,.1f} us"


def fmt_num(v: float) -> str:
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.1f}"


def reason_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in counts.items()) or "-"


def shape_text(shape: Mapping[str, int]) -> str:
    if "elements" in shape:
        return f"{shape['elements']:,} el"
    if not shape:
        return "-"
    if "message_bytes" in shape:  # a collective of a tensor-parallel system
        return f"{shape['message_bytes']:,} B x{shape['devices']}"
    text = f"{shape['m']}x{shape['n']}x{shape['k']}"
    return f"{shape['batch']}x({text})" if "batch" in shape else text


# ============================================================================================ lines

def headline(report: DeploymentReport) -> str:
    s = report.summary
    return (f"{fmt_x(s.speedup)} vs dense: {fmt_us(s.dense.latency_us)} dense -> {fmt_us(s.sparse.latency_us)} "
            f"sparse; {s.fallback.kernels} of {s.fallback.kernels_requested} ops that asked for a "
            f"pattern fall back ({fmt_pct(s.fallback.share_of_time)} of the time)")


def guardrail_line(report: DeploymentReport) -> str:
    g = report.guardrail
    return f"QUALITY GUARDRAIL: {g.status.upper()} - {g.message}"


def serving_heading(sv: ServingSection) -> str:
    """The serving section's title: what its percentiles measure."""
    if sv.mode == "llm":
        return "Serving: TTFT and TPOT (p50 / p95 / p99), prefill + decode"
    return "Serving latency (p50 / p95 / p99)"


def serving_skipped(sv: ServingSection) -> str:
    """Why the serving section holds no table."""
    return f"Serving section skipped: {sv.note}"


def serving_line(sv: ServingSection) -> str:
    """One terminal line: the capacities and the p99s at the lowest load, or why the section was skipped."""
    if sv.status != "ok" or not sv.rows or not sv.labels or sv.config is None:
        return serving_skipped(sv)
    cap = ", ".join(f"{lab} {c:g}" for lab, c in (sv.capacity_rps or {}).items())
    row = sv.rows[0]
    cfg = sv.config
    if sv.mode == "llm":
        what = (f"LLM prefill + {sv.decode_workload}, {cfg.prompt_tokens}-token prompts, {cfg.output_tokens} output "
                f"tokens, decode batches of up to {cfg.max_batch}")
        p99 = "; ".join(f"p99 {m.upper()} " + ", ".join(
            f"{lab} {getattr(row.by_label[lab], m).p99:,.3f} ms" for lab in sv.labels
            if getattr(row.by_label[lab], m) is not None) for m in ("ttft", "tpot"))
    else:
        what = f"batches of up to {cfg.max_batch}" + (f" (headline batch {cfg.headline_batch})"
                                                      if cfg.headline_batch is not None else "")
        p99 = "p99 latency " + ", ".join(f"{lab} {row.by_label[lab].p99:,.3f} ms" for lab in sv.labels)
    over = sorted({lab for r in sv.rows for lab in sv.labels if r.by_label[lab].overloaded})
    near = sorted({lab for r in sv.rows for lab in sv.labels if r.by_label[lab].near_capacity})
    return (f"serving, {what}: capacity {cap} req/s; at {row.load:.0%} load ({row.rate_rps:g} req/s): {p99}"
            + (f"; OVERLOADED: {', '.join(over)}" if over else "")
            + (f"; NEAR CAPACITY (not steady-state): {', '.join(near)}" if near else "")
            + (f"; KV-cache limited: {', '.join(sv.kv_limited)}" if sv.kv_limited else "")
            + "".join(f"; NOT SERVED: {lab} {unfit['message']}" for lab, unfit in (sv.does_not_fit or {}).items()))


def header_rows(h: ReportHeader) -> list[list[str]]:
    inp = h.inputs
    rows = [["accelsim", f"{h.accelsim_version} (git {h.git_commit})"],
            ["python / numpy / numba / matplotlib", f"{h.python} / {h.numpy} / {h.numba} / {h.matplotlib}"],
            ["host", f"{h.host_cpu}; {h.platform}"],
            ["command", h.command or "(library call)"],
            ["hardware", f"{inp.hardware.source} (config {inp.hardware.config_hash}"
                         + (f", file sha256 {inp.hardware.file_sha256}" if inp.hardware.file_sha256 else "") + ")"],
            ["workload", f"{inp.workload.source} (config {inp.workload.config_hash}"
                         + (f", file sha256 {inp.workload.file_sha256}" if inp.workload.file_sha256 else "") + ")"]]
    if inp.weights is not None:
        rows.append(["weights", f"{inp.weights.source} (sha256 {inp.weights.file_sha256})"])
    rows.append(["date (UTC)", h.date_utc])
    return rows


def schedule_findings(report: DeploymentReport) -> list[str]:
    out = []
    sched = report.pruning_schedule
    if sched.layers_to_flatten is not None:
        out.append(f"Pruning schedule: {sched.layers_to_flatten} of {sched.layers} sparse ops reach "
                   f"{sched.flatten_fraction:.0%} of the final gain ({fmt_x(sched.final_speedup)}); the rest add "
                   "little.")
    elif sched.layers:
        out.append(f"Pruning schedule: no net gain from the {sched.layers} sparse ops "
                   f"({fmt_x(sched.final_speedup)}).")
    peak = sched.peak
    if peak.speedup > sched.final_speedup + 1e-9 and peak.layers > 0:
        out.append(f"Making only the first {peak.layers} ops of the schedule sparse gives {fmt_x(peak.speedup)} "
                   f"(all {sched.layers}: {fmt_x(sched.final_speedup)}).")
    return out


def findings(report: DeploymentReport) -> list[str]:
    """Plain-language findings for the summary (deterministic text)."""
    out = schedule_findings(report)
    s = report.summary
    for r in report.fallback_impact.reasons:
        out.append(f"Fallback '{r.reason}' ({r.count} ops, {fmt_pct(r.share_of_time)} of the time): "
                   f"removing it would give {fmt_x(r.speedup_if_removed)} ({r.change:+.4f}x).")
    if s.metadata.dram_bytes:
        out.append(f"Metadata costs {fmt_bytes(s.metadata.dram_bytes)} of DRAM traffic and "
                   f"{fmt_int(s.metadata.cycles)} cycles ({fmt_pct(s.metadata.share_of_sparse_time)}).")
    return out


# ============================================================================================ grouping

@dataclasses.dataclass
class LayerGroup:
    """Ops with the same op, shape, path, pattern, reason, cycles and binding: one table row."""

    first: LayerRow
    names: list[str]
    total_cycles: int = 0
    total_share: float = 0.0

    @property
    def count(self) -> int:
        return len(self.names)


def grouped_layers(rows: tuple[LayerRow, ...]) -> list[LayerGroup]:
    """Identical ops as one group, the groups with the most time first (model order among equals)."""
    groups: dict[tuple[object, ...], LayerGroup] = {}
    for r in rows:
        key = (r.op, json.dumps(dict(r.shape), sort_keys=True), r.path, r.pattern_executed, r.reason, r.cycles,
               r.dense_cycles, r.binding)
        g = groups.setdefault(key, LayerGroup(first=r, names=[]))
        g.names.append(r.name)
        g.total_cycles += r.cycles
        g.total_share += r.share_of_time
    return sorted(groups.values(), key=lambda g: (-g.total_cycles, g.first.index))


@dataclasses.dataclass
class ScheduleGroup:
    """Consecutive schedule rows of identical ops (ranks first.rank .. last_rank)."""

    first: ScheduleRow
    names: list[str]
    last_rank: int
    cumulative_speedup: float


def grouped_schedule(rows: tuple[ScheduleRow, ...]) -> list[ScheduleGroup]:
    """Consecutive schedule rows of identical ops as one row (ranks a..b)."""
    out: list[ScheduleGroup] = []
    for r in rows:
        last = out[-1] if out else None
        if last and (last.first.op, last.first.shape, last.first.dense_cycles, last.first.sparse_cycles) == \
                (r.op, r.shape, r.dense_cycles, r.sparse_cycles):
            last.names.append(r.name)
            last.last_rank = r.rank
            last.cumulative_speedup = r.cumulative_speedup
        else:
            out.append(ScheduleGroup(first=r, names=[r.name], last_rank=r.rank,
                                     cumulative_speedup=r.cumulative_speedup))
    return out
