"""The decision at equal latency budget as a chart: quality against p99 latency, one point per variant, a
line per budget, the verdict's winner per budget ringed.

Input is the :class:`~accelsim.serving.decision.Decision` of :func:`accelsim.serving.decide` (types only:
nothing of ``serving`` runs here). Registry figures (published, derived) are filled markers; typed ones
(illustrative, user) hollow and grey-edged, labelled as such; variants without a figure sit on a strip
below the axis; variants that do not fit one device are listed under the plot. With a lower-is-better
metric the quality axis is inverted, so better is always up. Figures are
:class:`~matplotlib.figure.Figure` objects on the Agg canvas (no pyplot, no global state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from accelsim.textsafe import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

    from accelsim.serving.decision import Decision

DPI = 100
COLOR_DENSE = "#6b8cae"
COLOR_SPARSE = "#2e9e4f"
COLOR_TYPED = "#8c8c8c"
BUDGET_COLORS = ["#d64541", "#f28e2b", "#8e6bae", "#3b3b3b"]
COLOR_GRID = "#d9d9d9"
MARKERS = {"published": "o", "derived": "s", "illustrative": "o", "user": "D"}


def decision_figure(decision: Decision, title: str | None = None) -> Figure:
    """Quality (y) vs the budgeted latency quantile (x) per variant, budget lines, each budget's winner ringed."""
    d = decision
    fig = Figure(figsize=(10.0, 6.0), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    plotted = [v for v in d.variants if v.value_ms is not None and v.quality is not None]
    names: list[Annotation] = []
    for v in plotted:
        assert v.value_ms is not None and v.quality is not None
        color = COLOR_DENSE if v.sparsity == "dense" else COLOR_SPARSE
        typed = not v.counted
        ax.scatter([v.value_ms], [v.quality], s=70, marker=MARKERS.get(v.quality_kind, "o"),
                   facecolors="none" if typed else color, edgecolors=COLOR_TYPED if typed else color,
                   linewidths=1.6, linestyle="--" if typed else "-", zorder=3)
        label = printable(v.name) + (f" ({v.quality_kind}, not counted)" if typed else "")
        if v.overloaded:
            label += " [overloaded]"
        names.append(ax.annotate(label, (v.value_ms, v.quality), xytext=(6, 5), textcoords="offset points",
                                 fontsize=8.5, color=COLOR_TYPED if typed else "#222222"))
    xs = [v.value_ms for v in plotted if v.value_ms is not None] + [vd.budget_ms for vd in d.verdicts]
    lo, hi = min(xs), max(xs)
    if hi / lo > 8:
        ax.set_xscale("log")
    for i, vd in enumerate(d.verdicts):
        color = BUDGET_COLORS[i % len(BUDGET_COLORS)]
        label = f"budget {vd.budget_ms:g} ms: " + (printable(vd.best) if vd.best else "nothing counted holds")
        if vd.best is not None and vd.best == vd.dense_baseline:
            label += " (dense: no sparse variant beats it)"
        elif vd.quality_delta is not None:
            label += f" ({vd.quality_delta:+.3g} vs {printable(vd.dense_baseline)})"
        ax.axvline(vd.budget_ms, color=color, ls="--", lw=1.3, zorder=1, label=label)
        if vd.best is not None:
            w = d.variant(vd.best)
            assert w.value_ms is not None and w.quality is not None  # a winner holds and is counted
            ax.scatter([w.value_ms], [w.quality], s=260, marker="o", facecolors="none", edgecolors=color,
                       linewidths=1.8, zorder=2)
    unplotted = [v for v in d.variants if v.value_ms is not None and v.quality is None]
    if unplotted:
        ax.scatter([float(v.value_ms or 0.0) for v in unplotted], [0.0] * len(unplotted),
                   transform=ax.get_xaxis_transform(), marker="x", color=COLOR_TYPED, s=50, clip_on=False, zorder=3)
        for v in unplotted:
            ax.annotate(f"{printable(v.name)} (no quality figure)", (float(v.value_ms or 0.0), 0.0),
                        xycoords=ax.get_xaxis_transform(), xytext=(4, 4), textcoords="offset points",
                        fontsize=8, color=COLOR_TYPED)
    for label, color in (("dense", COLOR_DENSE), ("sparse", COLOR_SPARSE)):
        ax.scatter([], [], s=50, color=color, label=label)
    if not d.higher_is_better:
        ax.invert_yaxis()
    ax.set_xlabel(f"{d.quantile} {d.latency_metric} (ms) at {d.rate_rps:g} req/s")
    way = "higher is better" if d.higher_is_better else "lower is better; axis inverted"
    ax.set_ylabel(f"{printable(d.metric)} ({way})")
    ax.grid(True, color=COLOR_GRID, lw=0.6)
    ax.legend(loc="best", fontsize=8.5, frameon=False)
    kinds = ", ".join(f"{n} {k}" for k, n in d.quality_kinds.items() if n)
    foot = [f"quality figures: {kinds}; filled = registry (counted), hollow = typed (not counted)"]
    misfits = [printable(v.name) for v in d.variants if not v.fits]
    if misfits:
        foot.append(f"does not fit one device (no latency, holds no budget): {', '.join(misfits)}")
    fig.text(0.01, 0.01, "\n".join(foot), fontsize=8, va="bottom", color="#444444")
    changed = f" (--hw-set {', '.join(d.hw_set)})" if d.hw_set else ""
    fig.suptitle(printable(title or f"quality at equal latency budget on {d.hardware}{changed}"))
    fig.tight_layout(rect=(0, 0.04 * len(foot), 1, 1))
    _keep_inside(ax, names)
    return fig


# where a point's label may sit, in order of preference: offset (points) and alignment
_PLACES: tuple[tuple[tuple[int, int], Literal["left", "right"], Literal["bottom", "top"]], ...] = (
    ((6, 5), "left", "bottom"), ((-6, 5), "right", "bottom"), ((6, -5), "left", "top"), ((-6, -5), "right", "top"))


def _put(a: Annotation, place: int) -> None:
    offset, ha, va = _PLACES[place]
    a.xyann = offset
    a.set_horizontalalignment(ha)
    a.set_verticalalignment(va)


def _keep_inside(ax: Axes, names: list[Annotation]) -> None:
    """Each point's label at the first of _PLACES (right and above, left and above, right and below, left and below)
    that keeps it inside the axes and off the labels placed before it; else the first inside the axes."""
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = ax.get_window_extent(renderer)
    placed: list[Bbox] = []
    for a in names:
        first_inside = None
        for place in range(len(_PLACES)):
            _put(a, place)
            box = a.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and first_inside is None:
                first_inside = place
            if inside and not any(box.overlaps(p) for p in placed):
                break
        else:
            _put(a, first_inside or 0)
        placed.append(a.get_window_extent(renderer))
