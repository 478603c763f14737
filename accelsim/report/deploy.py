"""The sparsity deployment report, rendered from the analysis of :mod:`accelsim.analysis.deployment`.

:func:`report_files` renders a :class:`~accelsim.analysis.deployment.DeploymentReport` in memory as
``report.json`` (its ``to_dict()``), ``report.md`` (:mod:`.deploy_markdown`), ``report.html`` (one
self-contained file, :mod:`.deploy_html`) and the chart files ``pruning_schedule.png`` and
``reality_check.png``/``.svg`` that the Markdown links to; ``accelsim report`` writes them all or
nothing. :func:`summary_lines` is what the command prints.

Determinism: everything except the ``header`` (versions, commit, host, command, input hashes, date)
is byte-identical across identical runs, in the JSON and in the rendered files (where the header
sits between :data:`HEADER_BEGIN` and :data:`HEADER_END`; :func:`strip_header` removes it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from accelsim.fileio import figure_bytes
from accelsim.report.deploy_charts import png_bytes, render_schedule_chart
from accelsim.report.deploy_html import render_html
from accelsim.report.deploy_markdown import render_markdown
from accelsim.report.deploy_prose import MARKDOWN, power_clock_line
from accelsim.report.deploy_text import (
    HEADER_BEGIN,
    HEADER_END,
    SYNTHETIC_LABEL,
    fmt_pct,
    fmt_x,
    group_name,
    guardrail_line,
    headline,
    serving_line,
)
from accelsim.report.reality_chart import BASENAME, render_reality_check
from accelsim.report.reality_chart import DPI as RC_DPI
from accelsim.workloads.moe import routing_line

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport

__all__ = ["HEADER_BEGIN", "HEADER_END", "SYNTHETIC_LABEL", "group_name", "render_html", "render_markdown",
           "render_schedule_chart", "report_files", "report_json", "strip_header", "summary_lines"]


def report_json(report: DeploymentReport) -> str:
    """``report.json``: the analysis as plain data, header first."""
    return json.dumps(report.to_dict(), indent=2, sort_keys=False, allow_nan=False) + "\n"


REPORT_FILES = ("report.json", "report.md", "report.html", "pruning_schedule.png", f"{BASENAME}.png",
                f"{BASENAME}.svg")  # what report_files renders, in order


def report_files(report: DeploymentReport) -> dict[str, bytes]:
    """Every file of the report, rendered in memory: ``{file name: bytes}`` in the order to write them."""
    fig_rc, _ = render_reality_check(report.reality_check)
    fig_sched, _ = render_schedule_chart(report)
    charts = {"reality_check": png_bytes(fig_rc), "pruning_schedule": png_bytes(fig_sched)}
    return {
        "report.json": report_json(report).encode("utf-8"),
        "report.md": render_markdown(report).encode("utf-8"),
        "report.html": render_html(report, charts).encode("utf-8"),
        "pruning_schedule.png": charts["pruning_schedule"],
        f"{BASENAME}.png": figure_bytes(fig_rc, "png", RC_DPI),
        f"{BASENAME}.svg": figure_bytes(fig_rc, "svg", RC_DPI),
    }


def strip_header(text: str) -> str:
    """The rendered Markdown / HTML without its header block (for determinism checks)."""
    start, end = text.find(HEADER_BEGIN), text.find(HEADER_END)
    if start < 0 or end < start:
        return text
    return text[:start] + text[end + len(HEADER_END):]


def summary_lines(report: DeploymentReport) -> list[str]:
    """A few lines for the terminal: guardrail first, then the headline numbers and the contradictions."""
    lines = [guardrail_line(report), f"{report.subject.title}: {headline(report)}",
             *(routing_line(m) for m in report.subject.moe or ()), report.quality_labels.line]
    clock = power_clock_line(report.summary, MARKDOWN)
    lines += [clock] if clock else []
    sched = report.pruning_schedule
    if sched.layers_to_flatten is not None:
        lines.append(f"pruning schedule: {sched.layers_to_flatten} of {sched.layers} sparse ops reach "
                     f"{sched.flatten_fraction:.0%} of the gain")
    for r in report.fallback_impact.reasons:
        lines.append(f"fallback {r.reason}: {r.count} ops, {fmt_pct(r.share_of_time)} of time; if removed "
                     f"{fmt_x(r.speedup_if_removed)}")
    lines.append(serving_line(report.serving))
    cons = report.contradictions
    lines.append(f"{len(cons)} contradiction(s)" + (": " + "; ".join(c.kind for c in cons) if cons else ""))
    return lines
