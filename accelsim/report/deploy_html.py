"""The deployment report as one self-contained HTML file (``report.html``).

Inline CSS, charts as base64 PNG data URIs, no scripts, no external CSS / JS / fonts, and no
``http(s)://`` anywhere (a URL scheme in user text is defused). The header sits between
HEADER_BEGIN and HEADER_END.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from accelsim.report import deploy_prose as prose
from accelsim.report.deploy_prose import HTML
from accelsim.report.deploy_tables import serving_cells, tables
from accelsim.report.deploy_text import (
    HEADER_BEGIN,
    HEADER_END,
    NUMERIC_CELL,
    SCHEDULE_ROWS,
    TOP_LAYERS,
    findings,
    grouped_schedule,
    guardrail_line,
    header_rows,
    headline,
    schedule_findings,
    serving_heading,
    serving_skipped,
)

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport

__all__ = ["render_html"]

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
    parts = [f"<table{f' class={cls!r}' if cls else ''}>"
             + ("<tr>" + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr>" if head else "")]
    for r in rows:
        cells = []
        for c in r:
            klass = " class='n'" if NUMERIC_CELL.match(c or "") else ""
            text = _esc(c)
            if c == "NO":
                text = "<span class='bad'>NO</span>"
            cells.append(f"<td{klass}>{text}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(parts) + "\n</table>"


def _img(png: bytes, alt: str) -> str:
    return f"<img alt='{_esc(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"


def render_html(report: DeploymentReport, charts: Mapping[str, bytes]) -> str:
    """One self-contained HTML file: inline CSS, charts (``reality_check``, ``pruning_schedule`` PNG bytes)
    as base64 data URIs, no external references."""
    t = tables(report)
    sub = report.subject
    g = report.guardrail
    cons = report.contradictions
    status = g.status
    title = f"[{status.upper()}] Sparsity deployment report: {sub.title}"
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           f"<title>{_esc(title)}</title>",
           f"<!-- {_esc(guardrail_line(report))} -->",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>Sparsity deployment report: {_esc(sub.title)}</h1>",
           f"<div class='banner {status}'>{_esc(guardrail_line(report))}</div>",
           f"<p class='headline'><b>{_esc(headline(report))}</b></p>",
           f"<p class='headline'><b>{_esc(report.quality_labels.line)}</b></p>",
           f"<p class='cons'>{prose.contradictions_line(report, HTML)}</p>",
           HEADER_BEGIN, "<h2>Build and inputs</h2>", _html_table([], header_rows(report.header), "hdr"),
           HEADER_END]
    out += ["<h2>Summary</h2>",
            f"<p>{prose.subject_line(sub, HTML)}</p>", _html_table(*t["summary"])]
    clock = prose.power_clock_line(report.summary, HTML)
    out += [f"<p>{clock}</p>"] if clock else []
    out += ["<ul>"] + [f"<li>{_esc(f)}</li>" for f in findings(report)]
    out += [f"<li>warning: {_esc(w)}</li>" for w in report.summary.warnings] + ["</ul>"]
    out += ["<h3>Reality check</h3>", _img(charts["reality_check"], "reality check: nominal vs real speedup and "
                                           "the ladder"), _html_table(*t["ladder"])]
    m = report.matrix
    out += ["<h2>Supported-layer matrix</h2>",
            f"<p>Ops whose plan asks for a pattern, by op type and pattern: <b>sparse</b>, <b>padded</b> (sparse "
            f"with n/k padding) or <b>fallback</b> with its reason code. {m.ops_without_pattern} other ops "
            "(vector ops) never take a pattern.</p>", _html_table(*t["patterns"]), _html_table(*t["matrix"])]
    n_layers = len(report.layers)
    out += ["<h2>Per-layer table</h2>",
            f"<p>{prose.layers_caption(report.layers, ' (all ops are below and in report.json)')}</p>",
            _html_table(*t["layers_top"])]
    if n_layers > TOP_LAYERS:
        out += [f"<details><summary>all {n_layers} ops in model order</summary>", _html_table(*t["layers_all"]),
                "</details>"]
    sched = report.pruning_schedule
    out += ["<h2>Pruning schedule</h2>",
            f"<p>{prose.schedule_intro(sched, HTML)}</p>",
            _img(charts["pruning_schedule"], "pruning schedule: cumulative speedup vs ops made sparse"),
            "<ul>"] + [f"<li>{_esc(f)}</li>" for f in schedule_findings(report)]
    out += ["</ul>", _html_table(*t["schedule"])]
    if len(grouped_schedule(sched.rows)) > SCHEDULE_ROWS:
        out.append(f"<p class='small'>{prose.schedule_cut(sched)}</p>")
    fi = report.fallback_impact
    out += ["<h2>Dense-fallback impact</h2>",
            f"<p>{prose.fallback_intro(fi, HTML)}</p>", _html_table(*t["fallback"]), "<ul>"]
    out += [f"<li>{prose.reason_line(r, HTML)}</li>" for r in fi.reasons]
    removed = prose.all_removed(fi, HTML)
    if removed:
        out.append(f"<li>{removed}</li>")
    out.append("</ul>")
    q = report.quality
    proxy = q.proxy
    out += ["<h2>Quality guardrail</h2>", f"<div class='banner {status}'>{_esc(g.status.upper())}: "
            f"{_esc(g.message)}</div>", _html_table(*t["quality"])]
    if q.source:
        out.append(f"<p class='small'>{prose.source_line(q.source, HTML)}</p>")
    out += [f"<p>{prose.labels_intro(report, HTML)}</p>", _html_table(*t["quality_labels"])]
    ev = q.evidence
    out.append(f"<p>{prose.evidence_line(ev, HTML)}</p>")
    if ev.entries:
        out.append(_html_table(*t["evidence"]))
    if ev.conflicts:
        out.append(f"<p>{prose.conflicts_intro(HTML)}</p><ul>"
                   + "".join(f"<li>{_esc(c.message)}</li>" for c in ev.conflicts) + "</ul>")
    plabel = proxy.label or "no op runs sparse"
    out.append(f"<h3>Numeric proxy ({_esc(plabel)})</h3>")
    if proxy.layers:
        if proxy.synthetic_layers:
            out.append(f"<p>{prose.synthetic_line(proxy, HTML)}</p>")
        out += [f"<p>{prose.proxy_line(proxy, plabel, HTML)}</p>", "<p>By weight shape:</p>", _html_table(*t["proxy"])]
        if proxy.unused_arrays:
            out.append(f"<p class='small'>{prose.unused_arrays_line(proxy, HTML)}</p>")
    sens = report.sensitivity
    out.append("<h2>Sensitivity to calibrated fields</h2>")
    if sens.runs:
        out += [f"<p>{prose.sensitivity_line(sens, HTML)}</p>", _html_table(*t["sensitivity"])]
    else:
        out.append(f"<p>{_esc(sens.note or 'none')}</p>")
    out.append(f"<h2>{_esc(serving_heading(report.serving))}</h2>")
    sv = report.serving
    if sv.status == "ok":
        out += [f"<p>{_esc(sv.note)}</p>", _html_table(*serving_cells(sv))]
    else:
        out.append(f"<p>{_esc(serving_skipped(sv))}</p>")
    out += ["<h2 id='contradictions'>Contradictions</h2>", "<p>Evidence that points the other way:</p>", "<ul>"]
    out += [f"<li>{prose.contradiction(c.kind, c.message, HTML)}</li>" for c in cons] or ["<li>none found</li>"]
    out += ["</ul>", f"<hr><p class='small'>{prose.footer(HTML)}</p>", "</body></html>", ""]
    text = "\n".join(out)
    # no URL scheme may appear anywhere (a user-supplied source text could hold one): defuse it
    return re.sub(r"(?i)\b(https?):(?=//)", r"\1&#58;", text)
