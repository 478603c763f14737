"""Renderings of a regression comparison: the terminal table, the pull-request Markdown, the bless summary.

Takes the frozen results of :mod:`accelsim.regress` (:class:`~accelsim.regress.Comparison`,
:class:`~accelsim.regress.BlessChange`) and returns text; computes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a renderer does not import the comparison code
    from accelsim.regress import BlessChange, Comparison, Row

_RIGHT_FROM_END = (6, 5, 4, 3, 2)  # baseline, candidate, change, rel, of model: right-aligned


def headline(comparison: Comparison) -> str:
    """The first line: OK or DRIFT, with the exit code and both sides."""
    if not comparison.has_drift:
        return (f"accelsim regress: OK, within tolerance (exit 0): {comparison.candidate} vs baseline "
                f"{comparison.baseline}")
    return f"accelsim regress: DRIFT (exit 1): {comparison.candidate} vs baseline {comparison.baseline}"


def summary_line(comparison: Comparison) -> str:
    """What was compared and how it came out, in one line."""
    c = comparison.counts
    files = "" if comparison.single_file else f"{_plural(c.files, 'file')}, "
    one = ""
    if comparison.one_sided:
        n_layers = sum(1 for o in comparison.one_sided if o.kind == "layer")
        n_files = len(comparison.one_sided) - n_layers
        one = f"; on one side only: {_plural(n_layers, 'layer')}, {_plural(n_files, 'file')}"
    return (f"{files}{_plural(c.layers, 'layer')}, {_plural(c.metrics, 'metric')} compared: {c.drift:,} drift, "
            f"{c.within:,} within tolerance, {c.unchanged:,} unchanged, {c.ignored:,} ignored{one}")


def inputs_line(comparison: Comparison) -> str:
    """``inputs changed: ...`` (the first five input metrics that moved), or "" when the inputs agree."""
    seen: list[str] = []
    for r in comparison.input_rows():
        text = f"{r.metric} {_side(r, 'baseline')} -> {_side(r, 'candidate')}"
        if text not in seen:
            seen.append(text)
    if not seen:
        return ""
    more = f", ... ({len(seen) - 5} more)" if len(seen) > 5 else ""
    return "inputs changed: " + ", ".join(seen[:5]) + more


def _head(comparison: Comparison) -> list[str]:
    return ["status", *([] if comparison.single_file else ["file"]), "layer", "metric", "baseline", "candidate",
            "change", "rel", "of model", "tolerance"]


def _cells(comparison: Comparison, r: Row) -> list[str]:
    cells = [r.status]
    if not comparison.single_file:
        cells.append(r.file)
    cells += [r.layer, r.metric, _side(r, "baseline"), _side(r, "candidate"), _fmt_change(r), _fmt_rel(r),
              _fmt_share(r), _fmt_tol(r)]
    return cells


def format_table(comparison: Comparison, max_rows: int = 40, headline_text: str | None = None) -> str:
    """Readable text: headline, the moved metrics worst first, one-sided layers/files, counts."""
    lines = [headline_text or headline(comparison), summary_line(comparison)]
    inputs = inputs_line(comparison)
    if inputs:
        lines.append(inputs)
    if comparison.rows:
        head = _head(comparison)
        shown = comparison.rows[:max_rows]
        cells = [_cells(comparison, r) for r in shown]
        widths = [max(len(row[i]) for row in [head, *cells]) for i in range(len(head))]
        right = {len(head) - k for k in _RIGHT_FROM_END}

        def line(row: list[str]) -> str:
            return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                             for i, (v, w) in enumerate(zip(row, widths, strict=True))).rstrip()

        lines += ["", "moved (worst first)", line(head), "  ".join("-" * w for w in widths), *map(line, cells)]
        if len(comparison.rows) > max_rows:
            lines.append(f"... and {len(comparison.rows) - max_rows:,} more rows (all of them in regress.json)")
        groups = comparison.by_metric()
        if groups:
            lines += ["", "drift by metric"]
            for g in groups[:max_rows]:
                where = g.worst_layer if comparison.single_file else f"{g.worst_file}: {g.worst_layer}"
                lines.append(f"  {g.metric}: {_plural(g.rows, 'row')}, worst {_fmt_rel_value(g.worst_rel_change)} "
                             f"in {where}")
            if len(groups) > max_rows:
                lines.append(f"  ... and {len(groups) - max_rows:,} more metrics")
    if comparison.one_sided:
        lines += ["", "present on one side only (drift)"]
        for o in comparison.one_sided[:max_rows]:
            where = f"layer {o.layer!r} in {o.file or 'the result'}" if o.kind == "layer" else f"file {o.file}"
            lines.append(f"  {where}: only in the {o.side}")
        if len(comparison.one_sided) > max_rows:
            lines.append(f"  ... and {len(comparison.one_sided) - max_rows:,} more")
    return "\n".join(lines) + "\n"


def format_markdown(comparison: Comparison, max_rows: int = 100) -> str:
    """A pull-request comment: summary line, table of what moved, one-sided layers and files."""
    verdict = "✅ within tolerance" if not comparison.has_drift else "❌ drift"
    lines = [f"### accelsim regress: {verdict}", "",
             f"Candidate `{comparison.candidate}` against baseline `{comparison.baseline}`: "
             f"{summary_line(comparison)}.", ""]
    inputs = inputs_line(comparison)
    if inputs:
        lines += [f"**{_md_cell('I' + inputs[1:])}** (the results were simulated from different inputs).", ""]
    groups = comparison.by_metric()
    if groups:
        lines += ["**Drift by metric:** " + "; ".join(
            f"`{g.metric}` {g.rows:,}x (worst {_fmt_rel_value(g.worst_rel_change)})"
            for g in groups[:20]) + (f"; … {len(groups) - 20} more" if len(groups) > 20 else ""), ""]
    if comparison.rows:
        head = _head(comparison)
        numeric = ("baseline", "candidate", "change", "rel", "of model")
        lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if h in numeric else "---" for h in head) + "|"]
        code_cols = (1, 2) if comparison.single_file else (1, 2, 3)
        for r in comparison.rows[:max_rows]:
            lines.append("| " + " | ".join(_md_cell(c, code=i in code_cols)
                                           for i, c in enumerate(_cells(comparison, r))) + " |")
        if len(comparison.rows) > max_rows:
            lines.append("")
            lines.append(f"… and {len(comparison.rows) - max_rows:,} more rows (see `regress.json`).")
        lines.append("")
    else:
        lines += ["No metric moved.", ""]
    if comparison.one_sided:
        lines += ["**Present on one side only:**", ""]
        for o in comparison.one_sided[:max_rows]:
            if o.kind == "layer":
                where = f" in `{o.file}`" if o.file else ""
                lines.append(f"- layer `{o.layer}`{where}: only in the {o.side}")
            else:
                lines.append(f"- file `{o.file}`: only in the {o.side}")
        if len(comparison.one_sided) > max_rows:
            lines.append(f"- … and {len(comparison.one_sided) - max_rows:,} more")
        lines.append("")
    tol = comparison.tolerances
    lines.append(f"<sub>tolerances: {tol.source}; default rtol {tol.default_rtol:g}, atol {tol.default_atol:g}"
                 f"{'; ignored: ' + ', '.join(tol.ignore) if tol.ignore else ''}</sub>")
    return "\n".join(lines) + "\n"


def describe_change(change: BlessChange) -> str:
    """One baseline file touched by a bless: action, file, how many metrics moved, note."""
    extra = f", {_plural(change.moved, 'metric')} moved" if change.moved else ""
    note = f" ({change.note})" if change.note else ""
    return f"{change.action:9s} {change.file}{extra}{note}"


def bless_summary(changes: Iterable[BlessChange]) -> str:
    """``N added, N changed (N metrics moved), N removed, N unchanged``."""
    changes = list(changes)
    n = {a: sum(1 for c in changes if c.action == a) for a in ("added", "changed", "removed", "unchanged")}
    moved = sum(c.moved or 0 for c in changes)
    return (f"{n['added']} added, {n['changed']} changed ({_plural(moved, 'metric')} moved), {n['removed']} removed, "
            f"{n['unchanged']} unchanged")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _side(r: Row, side: str) -> str:
    """A row's baseline or candidate value as shown; ``(absent)`` on the side that lacks the metric."""
    if r.status == ("added" if side == "baseline" else "removed"):
        return "(absent)"
    return _fmt_value(getattr(r, side))


def _fmt_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1e6 else f"{v:.6g}"
    return str(v)


def _fmt_change(r: Row) -> str:
    if r.abs_change is None:
        return "-"
    delta = r.candidate - r.baseline
    if isinstance(delta, int):
        return f"{delta:+,}"
    return f"{delta:+.6g}"


def _fmt_rel_value(rel: float | None) -> str:
    if rel is None:
        return "value changed"
    if math.isinf(rel):  # the baseline was 0 (results hold finite numbers only)
        return "from 0"
    if rel >= 1:
        return f"{rel * 100:,.0f}%"
    return f"{rel * 100:.3g}%"


def _fmt_rel(r: Row) -> str:
    if r.rel_change is None:
        return "-"
    if math.isinf(r.rel_change):
        return "from 0"
    sign = "+" if r.candidate >= r.baseline else "-"
    return sign + _fmt_rel_value(r.rel_change)


def _fmt_share(r: Row) -> str:
    if r.share is None:
        return "-"
    if math.isinf(r.share):
        return "inf"
    return f"{r.share * 100:.3g}%"


def _fmt_tol(r: Row) -> str:
    if r.rtol is None:
        return "exact"
    parts = [f"rtol {r.rtol:g}"]
    if r.atol:
        parts.append(f"atol {r.atol:g}")
    return ", ".join(parts)


def _md_cell(text: str, code: bool = False) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if code and text and "`" not in text else text
