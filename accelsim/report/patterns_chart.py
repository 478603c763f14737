"""Which pattern pays, as a chart and a table: speedup and weight footprint vs sparsity, one line per format.

Input is the :class:`~accelsim.analysis.patterns.PatternsComparison` of
:func:`accelsim.analysis.patterns.compare_patterns`. Library code: nothing here prints or writes files;
matplotlib through :class:`~matplotlib.figure.Figure` with the Agg canvas (no pyplot).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from accelsim.fileio import figure_files
from accelsim.report.reality_chart import format_params
from accelsim.textsafe import printable
from accelsim.workloads.moe import routing_line

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from accelsim.analysis.patterns import FormatAtLevel, PatternsComparison

BASENAME = "patterns"
DPI = 100
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _families(data: PatternsComparison) -> list[str]:
    return list(dict.fromkeys(r.family for r in data.results))


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h")  # the footprint panel's marker per family (lines can coincide)
LABEL_GAP_PT = 10.0  # least vertical distance between two labels' centres at one level (fontsize 8)
FELL_BACK_Z = 6  # hollow fallback rings sit above every filled marker and line


def render_patterns(data: PatternsComparison) -> Figure:
    """Left: model speedup over dense vs sparsity; right: deployed weight bytes over dense. Hollow rings, drawn on
    top: the format was asked for but every layer fell back dense (the point is the fallback's time). Labels at
    one level are stacked so none overprints another; one moved off its point gets a leader line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(12.0, 5.0))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    labels: list[tuple[float, float, str, str]] = []  # x, y, text, colour
    for i, fam in enumerate(_families(data)):
        color = COLORS[i % len(COLORS)]
        pts = [r for r in data.results if r.family == fam and r.format is not None]
        if not pts:
            continue
        xs = [r.level * 100 for r in pts]
        ax1.plot(xs, [r.speedup for r in pts], color=color, label=fam, linewidth=1.6, zorder=2)
        ax2.plot(xs, [r.weights_deployed_bytes / r.weights_dense_bytes if r.weights_dense_bytes else 1.0
                      for r in pts], color=color, label=fam, linewidth=1.6, marker=MARKERS[i % len(MARKERS)],
                 markersize=6, markerfacecolor="none", markeredgewidth=1.4)
        for r in pts:
            hollow = r.all_fell_back
            if hollow:  # a ring, larger than a filled marker and above it: visible where the two coincide
                ax1.plot([r.level * 100], [r.speedup], marker="o", markersize=11, markeredgewidth=2.0,
                         color=color, markerfacecolor="none", zorder=FELL_BACK_Z)
            else:
                ax1.plot([r.level * 100], [r.speedup], marker="o", markersize=7, color=color, zorder=3)
            ran_as = [p for p in r.patterns_executed if p != r.format]
            note = " (fallback)" if hollow else (f" (runs as {', '.join(ran_as)})" if ran_as else "")
            labels.append((r.level * 100, r.speedup or 0.0, str(r.format) + note, color))
    ax1.axhline(1.0, color="#444444", linestyle="--", linewidth=1)
    ax1.set_xlabel("sparsity (share of zeros, %)")
    ax1.set_ylabel("model speedup over dense")
    ax1.set_title("speedup vs sparsity")
    ax2.axhline(1.0, color="#444444", linestyle="--", linewidth=1)
    ax2.set_xlabel("sparsity (share of zeros, %)")
    ax2.set_ylabel("weights as deployed / dense (incl. metadata)")
    ax2.set_title("weight footprint vs sparsity")
    ax2.legend(fontsize=7, frameon=False, loc="best")
    levels = sorted({x for x, _, _, _ in labels})
    if levels:  # room right of the last level for its labels
        span = max(levels[-1] - levels[0], 10.0)
        ax1.set_xlim(levels[0] - 0.08 * span, levels[-1] + 0.35 * span)
        ax2.set_xlim(levels[0] - 0.08 * span, levels[-1] + 0.08 * span)
        for ax in (ax1, ax2):
            ax.set_xticks(levels, [f"{x:g}" for x in levels])
    ax1.margins(y=0.15)
    handles, names = ax1.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="o", markersize=9, markeredgewidth=2.0, color="#444444",
                          markerfacecolor="none", linestyle="none"))
    names.append("every layer fell back dense")
    ax1.legend(handles, names, fontsize=8, frameon=False, loc="upper left")
    fig.suptitle(f"Which pattern pays: {_subject(data)}", fontsize=12)
    foot = "; ".join(["held fixed: " + data.held_fixed, *(routing_line(m) for m in data.moe or ())])
    fig.text(0.5, 0.005, foot, ha="center", va="bottom", fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    _place_labels(ax1, labels)  # after the layout: the stacking is in the final points
    return fig


def _place_labels(ax: Axes, labels: list[tuple[float, float, str, str]]) -> None:
    """Each label right of its point, the labels of one level stacked at least LABEL_GAP_PT apart (in the order
    of their points' heights, kept inside the axes); a label moved off its point gets a thin leader line."""
    to_pt = 72.0 / ax.figure.dpi
    top = ax.bbox.y1 * to_pt - LABEL_GAP_PT / 2
    for level in sorted({x for x, _, _, _ in labels}):
        here = sorted((lab for lab in labels if lab[0] == level), key=lambda lab: (lab[1], lab[2]))
        anchors = [ax.transData.transform((x, y))[1] * to_pt for x, y, _, _ in here]
        placed: list[float] = []
        for a in anchors:  # upwards from the lowest point
            placed.append(a if not placed else max(a, placed[-1] + LABEL_GAP_PT))
        for j in range(len(placed) - 1, -1, -1):  # and down again where the stack would leave the axes
            ceiling = top if j == len(placed) - 1 else placed[j + 1] - LABEL_GAP_PT
            placed[j] = min(placed[j], ceiling)
        for (x, y, text, color), a, p in zip(here, anchors, placed, strict=True):
            moved = abs(p - a) > 1.0
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(9, p - a), fontsize=8, color=color,
                        va="center", zorder=FELL_BACK_Z + 1,  # on a white ground: lines pass under it
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                        arrowprops={"arrowstyle": "-", "color": color, "linewidth": 0.6,
                                    "shrinkA": 0, "shrinkB": 4} if moved else None)


def chart_files(fig: Figure, out_dir: str | os.PathLike[str]) -> dict[Path, bytes]:
    """``{out_dir/patterns.png: bytes, .../patterns.svg: bytes}`` (deterministic) for ``fileio.write_all``."""
    return figure_files(fig, Path(out_dir) / BASENAME, ("png", "svg"), DPI)


def level_label(level: float) -> str:
    """``0.875`` -> ``"87.5%"`` (as the analysis keys its per-level results)."""
    return f"{level * 100:.6g}%"


def _row(r: FormatAtLevel) -> list[str]:
    if r.format is None:
        return [level_label(r.level), r.family, "-", "-", "-", "-", "-", "not expressible at this level"]
    reasons = ", ".join(f"{k} x{v}" for k, v in r.fallback_reasons.items()) or "-"
    ran_as = [p for p in r.patterns_executed if p != r.format]
    fmt = r.format + (f" (as {', '.join(ran_as)})" if ran_as else "")
    return [level_label(r.level), r.family, fmt, f"{r.speedup:.3f}x", f"{r.sparse_layers}/{r.requested_layers}",
            f"{r.weights_deployed_bytes / 1e6:,.1f} MB", f"{r.metadata_share * 100:.1f}%",
            (r.biggest_loss or "-") + (f"; fallback: {reasons}" if r.fallback_layers else "")]


def _subject(data: PatternsComparison) -> str:
    """``bert-base (batch 16, seq 128) on a100-like``: the parameters the comparison ran at, and the config's
    ``--hw-set`` overrides (``on a100-like (--hw-set dram.bandwidth_gb_s=100)``)."""
    params = format_params(data.params)
    workload = f"{data.workload} ({params})" if params else str(data.workload)
    changed = f" (--hw-set {', '.join(data.hw_set)})" if data.hw_set else ""
    return printable(f"{workload} on {data.hardware}{changed}")


def patterns_table(data: PatternsComparison) -> str:
    """One line per (level, format): speedup, layers sparse, weights, metadata share, biggest ladder loss."""
    header = ["level", "family", "format", "speedup", "sparse", "weights", "metadata", "biggest loss; fallbacks"]
    body = [_row(r) for r in data.results]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    lines = [f"WHICH PATTERN PAYS  {_subject(data)} (dense {data.dense_total_cycles:,} cycles)",
             *(routing_line(m) for m in data.moe or ()),
             "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip() for b in body]
    lines.append("best per level: " + ", ".join(f"{k} {v}" for k, v in data.best_per_level.items()))
    lines.append("held fixed: " + data.held_fixed)
    lines += [f"note: {n}" for n in data.notes]
    return "\n".join(lines)
