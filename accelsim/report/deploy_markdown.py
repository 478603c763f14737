"""The deployment report as Markdown (``report.md``); it links the chart files written beside it.

Every user string (op names, the quality metric and its source, file names) is escaped so that it
renders as text, never as HTML or a code fence. The header sits between HEADER_BEGIN and HEADER_END.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from accelsim.report import deploy_prose as prose
from accelsim.report.deploy_prose import MARKDOWN as MD
from accelsim.report.deploy_tables import serving_cells, tables
from accelsim.report.deploy_text import (
    HEADER_BEGIN,
    HEADER_END,
    NUMERIC_CELL,
    SCHEDULE_ROWS,
    findings,
    grouped_schedule,
    guardrail_line,
    header_rows,
    headline,
    schedule_findings,
    serving_heading,
    serving_skipped,
)
from accelsim.report.reality_chart import text_bars

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport
    from accelsim.analysis.deployment_serving import ServingSection

__all__ = ["md_table", "render_markdown"]

_FENCE = "\x00fence\x00"  # placeholder of our code fences until the document's fence length is known


def _md_escape(text: str) -> str:
    """A table cell: '|' and backticks escaped (& < > are escaped for every line by :func:`_md_safe`)."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ")


def _md_fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (user text cannot close it)."""
    runs = re.findall(r"`+", text)
    return "`" * max(3, 1 + max((len(r) for r in runs), default=0))


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


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (numeric columns right-aligned); ``(none)`` without rows."""
    if not rows:
        return ["(none)"]
    right = {i for i in range(len(head))
             if any(NUMERIC_CELL.match(r[i]) for r in rows)
             and all(NUMERIC_CELL.match(r[i]) for r in rows if r[i] not in ("", "-"))}
    lines = ["| " + " | ".join(_md_escape(h) for h in head) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]
    return lines


def _serving_md(sv: ServingSection) -> list[str]:
    if sv.status != "ok":
        return [serving_skipped(sv)]
    return [sv.note, "", *md_table(*serving_cells(sv))]


def render_markdown(report: DeploymentReport) -> str:
    """The report as Markdown; links the chart files written beside it. The header sits between markers."""
    t = tables(report)
    sub = report.subject
    g = report.guardrail
    cons = report.contradictions
    mark = {"breach": "\u274c", "ok": "\u2705", "missing": "\u26a0\ufe0f"}[g.status]
    out = [f"# Sparsity deployment report: {sub.title}", "",
           f"> {mark} **{guardrail_line(report)}**", ">",
           f"> **{headline(report)}**", ">",
           f"> **{report.quality_labels.line}**", ">",
           f"> {prose.contradictions_line(report, MD)}", "",
           HEADER_BEGIN, "## Build and inputs", ""]
    out += md_table(["field", "value"], header_rows(report.header))
    out += [HEADER_END, ""]
    out += ["## Summary", "", prose.subject_line(sub, MD), ""]
    out += md_table(*t["summary"])
    clock = prose.power_clock_line(report.summary, MD)
    out += ["", clock] if clock else []
    out += [""] + [f"- {f}" for f in findings(report)] + [""]
    for w in report.summary.warnings:
        out.append(f"- warning: {w}")
    out += ["### Reality check", "", "![reality check](reality_check.png)", ""]
    out += md_table(*t["ladder"])
    out += ["", f"{_FENCE}text", text_bars(report.reality_check), _FENCE, ""]
    m = report.matrix
    out += ["## Supported-layer matrix", "",
            f"Ops whose plan asks for a pattern, by op type and pattern: **sparse**, **padded** (sparse with "
            f"n/k padding) or **fallback** with its reason code. {m.ops_without_pattern} other ops (vector "
            "ops: norms, softmax, activations, pooling, embeddings) never take a pattern.", ""]
    out += md_table(*t["patterns"]) + [""]
    out += md_table(*t["matrix"]) + [""]
    out += ["## Per-layer table", "",
            prose.layers_caption(report.layers, " (all ops are in report.json and in the HTML report)"), ""]
    out += md_table(*t["layers_top"]) + [""]
    sched = report.pruning_schedule
    out += ["## Pruning schedule", "", prose.schedule_intro(sched, MD), "", "![pruning schedule](pruning_schedule.png)",
            ""]
    out += [f"- {f}" for f in schedule_findings(report)] + [""]
    out += md_table(*t["schedule"])
    if len(grouped_schedule(sched.rows)) > SCHEDULE_ROWS:
        out.append(f"\n({prose.schedule_cut(sched)})")
    fi = report.fallback_impact
    out += ["", "## Dense-fallback impact", "", prose.fallback_intro(fi, MD), ""]
    out += md_table(*t["fallback"]) + [""]
    out += [f"- {prose.reason_line(r, MD)}" for r in fi.reasons]
    removed = prose.all_removed(fi, MD)
    if removed:
        out.append(f"- {removed}")
    q = report.quality
    proxy = q.proxy
    out += ["", "## Quality guardrail", "", f"**{g.status.upper()}**: {g.message}", ""]
    out += md_table(*t["quality"])
    if q.source:
        out += ["", prose.source_line(q.source, MD)]
    out += ["", prose.labels_intro(report, MD), ""]
    out += md_table(*t["quality_labels"])
    ev = q.evidence
    out += ["", prose.evidence_line(ev, MD)]
    if ev.entries:
        out += [""] + md_table(*t["evidence"])
    if ev.conflicts:
        out += ["", prose.conflicts_intro(MD), ""]
        out += [f"- {c.message}" for c in ev.conflicts]
    plabel = proxy.label or "no op runs sparse"
    out += ["", f"### Numeric proxy ({plabel})", ""]
    if proxy.layers:
        if proxy.synthetic_layers:
            out.append(prose.synthetic_line(proxy, MD))
        out += ["", prose.proxy_line(proxy, plabel, MD), "", "By weight shape:", ""]
        out += md_table(*t["proxy"])
        if proxy.unused_arrays:
            out += ["", prose.unused_arrays_line(proxy, MD)]
    sens = report.sensitivity
    out += ["", "## Sensitivity to calibrated fields", ""]
    if sens.runs:
        out += [prose.sensitivity_line(sens, MD), ""]
        out += md_table(*t["sensitivity"])
    else:
        out.append(sens.note or "none")
    out += ["", f"## {serving_heading(report.serving)}", ""]
    out += _serving_md(report.serving)
    out += ["", "## Contradictions", "", "Evidence that points the other way:", ""]
    out += [f"- {prose.contradiction(c.kind, c.message, MD)}" for c in cons] or ["- none found"]
    out += ["", "---", prose.footer(MD), ""]
    return _md_safe("\n".join(out))
