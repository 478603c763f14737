"""The deployment report's sentences, written once for its Markdown and HTML views.

Each function takes a part of the :class:`~accelsim.analysis.deployment.DeploymentReport` and a
:class:`Markup` (how the view writes code, bold, links and escapes user text) and returns the sentence; the
views only place it (a paragraph, a list item, a blockquote line).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from accelsim.report.clock_text import capped_clocks_line
from accelsim.report.deploy_text import (
    SCHEDULE_ROWS,
    SYNTHETIC_LABEL,
    TOP_LAYERS,
    fmt_int,
    fmt_pct,
    fmt_x,
    group_name,
    grouped_layers,
)
from accelsim.workloads.moe import routing_line

if TYPE_CHECKING:
    from accelsim.analysis.deployment import DeploymentReport, Subject
    from accelsim.analysis.deployment_fallback import FallbackImpact, ReasonImpact
    from accelsim.analysis.deployment_quality import NumericProxy, QualityEvidence
    from accelsim.analysis.deployment_summary import LayerRow, PruningSchedule, Summary
    from accelsim.analysis.sensitivity import Sensitivity

__all__ = ["HTML", "MARKDOWN", "Markup", "all_removed", "conflicts_intro", "contradiction", "contradictions_line",
           "evidence_line", "fallback_intro", "footer", "labels_intro", "layers_caption", "power_clock_line",
           "proxy_line", "reason_line", "schedule_cut", "schedule_intro", "sensitivity_line", "source_line",
           "subject_line", "synthetic_line", "unused_arrays_line"]


class Markup:
    """Markdown: user text as written (the Markdown view escapes the whole document at the end)."""

    plusminus = "+/-"

    def text(self, value: object) -> str:
        """User text as it appears in the view."""
        return str(value)

    def code(self, value: object) -> str:
        return f"`{value}`"

    def bold(self, value: object) -> str:
        return f"**{value}**"

    def link(self, label: str, target: str) -> str:
        return f"[{label}]({target})"


class HtmlMarkup(Markup):
    """HTML: user text escaped where it is placed."""

    plusminus = "&plusmn;"

    def text(self, value: object) -> str:
        return html.escape(str(value), quote=True)

    def code(self, value: object) -> str:
        return f"<code>{self.text(value)}</code>"

    def bold(self, value: object) -> str:
        return f"<b>{self.text(value)}</b>"

    def link(self, label: str, target: str) -> str:
        return f"<a href='{target}'>{label}</a>"


MARKDOWN = Markup()
HTML = HtmlMarkup()


def contradictions_line(report: DeploymentReport, mk: Markup) -> str:
    """How many contradictions, their kinds, and a link to the section."""
    cons = report.contradictions
    return (mk.bold(f"{len(cons)} contradiction(s)") + ": " + (mk.text("; ".join(c.kind for c in cons)) if cons
                                                               else "none")
            + f" (see {mk.link('Contradictions', '#contradictions')})")


def subject_line(sub: Subject, mk: Markup) -> str:
    """Policy, dtype, ops and clock; then each moe op's routing assumption (``run``'s words), where there is one."""
    line = f"Policy {mk.code(sub.policy)}, dtype {mk.text(sub.dtype)}, {sub.layers} ops, {mk.text(sub.clock_ghz)} GHz."
    moe = [routing_line(m) for m in sub.moe or ()]
    return " ".join([line, *(mk.text(text[0].upper() + text[1:] + ".") for text in moe)])


def power_clock_line(summary: Summary, mk: Markup) -> str | None:
    """Where the power cap lowered a kernel's clock: both runs' clocks (``run``'s wording); None where it did not."""
    c = summary.clock
    if c is None:
        return None
    line = capped_clocks_line({"sparse run": c.sparse_run.to_dict(), "dense run": c.dense_run.to_dict()})
    return mk.text(f"Power-limited {line}. The latencies and speedup above are at these clocks.")


def layers_caption(layers: tuple[LayerRow, ...], elsewhere: str) -> str:
    """The per-layer table's caption: how many rows it shows and how many of the ops they hold."""
    groups = grouped_layers(layers)
    same = "ops with the same op, shape, path, pattern and cycles share a row"
    if len(groups) <= TOP_LAYERS:
        return f"All {len(layers)} ops in {len(groups)} rows, most time in the sparse run first; {same}."
    covered = sum(g.count for g in groups[:TOP_LAYERS])
    return (f"The {TOP_LAYERS} rows (of {len(groups)}) with the most time in the sparse run, holding {covered} of "
            f"the {len(layers)} ops; {same}{elsewhere}.")


def schedule_intro(sched: PruningSchedule, mk: Markup) -> str:
    return (f"Which ops to make sparse first: ranked by simulated time saved ({mk.code(sched.definition)}). "
            f"The curve ends at the run's speedup {fmt_x(sched.run_speedup)}.")


def schedule_cut(sched: PruningSchedule) -> str:
    """Said when the schedule table shows only its first rows."""
    return f"first {SCHEDULE_ROWS} rows of the {sched.layers}-op schedule; all are in report.json"


def fallback_intro(fi: FallbackImpact, mk: Markup) -> str:
    return (f"{fi.layers} fallback ops take {fmt_int(fi.cycles)} cycles, {fmt_pct(fi.share_of_time)} of the "
            f"sparse run. Per reason, the model speedup if the reason were removed ({mk.text(fi.method)}; policy "
            f"{mk.code(fi.policy)}; best case: each op keeps the faster kernel):")


def reason_line(r: ReasonImpact, mk: Markup) -> str:
    return (f"{mk.code(r.reason)} ({mk.text(r.description)}): {mk.text(r.mode)}; {r.sparse_faster_layers} of "
            f"{r.count} ops are faster sparse on their own; hardware changes: "
            f"{mk.text(', '.join(r.hardware_changes) or 'none')}; ops: {mk.text(group_name(r.layers))}")


def all_removed(fi: FallbackImpact, mk: Markup) -> str | None:
    """The speedup with every real reason removed, or None when the analysis has none."""
    a = fi.all_real_reasons_removed
    if not a:
        return None
    return (f"all of {mk.text(', '.join(a.reasons))} removed: {fmt_x(a.speedup_if_removed)} "
            f"(best case {fmt_x(a.speedup_if_removed_best)})")


def source_line(source: str, mk: Markup) -> str:
    return f"Source of the figures: {mk.text(source)}"


def labels_intro(report: DeploymentReport, mk: Markup) -> str:
    return f"Every quality figure in this report, labelled ({mk.text(report.quality_labels.line)}):"


def evidence_line(ev: QualityEvidence, mk: Markup) -> str:
    return (f"Published evidence (quality registry; model {mk.text(ev.model or 'not matched')}"
            + (f", by {mk.text(ev.matched_by)}" if ev.matched_by else "")
            + f"; policy: {mk.text(ev.policy)}): {mk.text(ev.message)}")


def conflicts_intro(mk: Markup) -> str:
    return mk.bold("Contradictory evidence") + " (sources whose drops differ by more than the threshold):"


def synthetic_line(proxy: NumericProxy, mk: Markup) -> str:
    return (mk.bold(f"On {SYNTHETIC_LABEL}") + f" (seeded Gaussian, not the model's weights) for "
            f"{proxy.synthetic_layers} of {len(proxy.layers)} ops: the figures show what magnitude pruning does to "
            "a generic matrix, not to this model.")


def proxy_line(proxy: NumericProxy, label: str, mk: Markup) -> str:
    return (f"MAC-weighted relative output error {proxy.mac_weighted_error:.4f}, worst {proxy.max_error:.4f} "
            f"({mk.text(proxy.max_error_layer)}), {mk.text(label)}. {mk.text(proxy.method)}. "
            f"Caveat: {mk.text(proxy.caveat)}.")


def unused_arrays_line(proxy: NumericProxy, mk: Markup) -> str:
    return "Arrays in the weights file that match no weight layer: " + mk.text(", ".join(proxy.unused_arrays))


def sensitivity_line(sens: Sensitivity, mk: Markup) -> str:
    return (f"Each CALIBRATED field perturbed by {mk.plusminus}{sens.perturbation:.0%}: the speedup ranges over "
            f"{fmt_x(sens.range[0])} - {fmt_x(sens.range[1])} (nominal {fmt_x(sens.speedup)}).")


def contradiction(kind: str, message: str, mk: Markup) -> str:
    return f"{mk.bold(kind)}: {mk.text(message)}"


def footer(mk: Markup) -> str:
    return (f"Generated by {mk.code('accelsim report')}; the full data is in report.json (everything outside "
            f"{mk.code('header')} is byte-identical for identical inputs).")
