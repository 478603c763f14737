"""Serving plots: latency CDF and latency vs load, dense vs sparse.

Inputs are the typed results of :mod:`accelsim.serving` (a :class:`~accelsim.serving.results.CompareResult`,
whose runs carry quantile tables under ``cdf``, and :class:`~accelsim.serving.results.LoadCurve` objects);
this module only renders them and imports nothing from ``serving`` at run time. Library code: nothing here
prints or exits; figures are :class:`~matplotlib.figure.Figure` objects on the Agg canvas (no
pyplot, no global state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from accelsim.fileio import figure_bytes, write_atomic

if TYPE_CHECKING:  # types only: report renders serving results and runs nothing of serving
    from accelsim.serving.results import CompareResult, LoadCurve

DPI = 100
COLORS = {"dense": "#6b8cae"}
PALETTE = ["#2e9e4f", "#f28e2b", "#d64541", "#8e6bae", "#3b3b3b"]
COLOR_BUDGET = "#d64541"
COLOR_GRID = "#d9d9d9"


def _color(label: str, i: int) -> str:
    return COLORS.get(label, PALETTE[i % len(PALETTE)])


def latency_cdf_figure(runs: CompareResult, *, metric: str = "latency", budget_ms: float | None = None,
                       title: str | None = None) -> Figure:
    """Left: the CDF of ``metric`` (latency, ttft or tpot) per run; right: its tail, 1 - F on a log axis."""
    fig = Figure(figsize=(11.0, 4.5), dpi=DPI)
    FigureCanvasAgg(fig)
    ax, tail = fig.subplots(1, 2)
    for i, (label, res) in enumerate(runs.results.items()):
        cdf = res.cdf[metric]
        q, ms = cdf.q, cdf.ms
        if not q:
            continue
        color = _color(label, i)
        stats = res.stats(metric)
        p99 = None if stats is None else stats.p99
        text = f"{label} (p99 {p99:,.2f} ms)" if p99 is not None else label
        ax.plot(ms, q, color=color, lw=2, label=text)
        pts = [(m, 1 - p) for m, p in zip(ms, q, strict=True) if p < 1]
        tail.plot([m for m, _ in pts], [p for _, p in pts], color=color, lw=2, label=label)
    for a in (ax, tail):
        if budget_ms is not None:
            a.axvline(budget_ms, color=COLOR_BUDGET, ls="--", lw=1.2, label=f"budget {budget_ms:g} ms")
        a.set_xlabel(f"{metric} (ms)")
        a.grid(True, color=COLOR_GRID, lw=0.6)
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.005)
    tail.set_yscale("log")
    tail.set_ylabel("fraction slower (1 - CDF)")
    tail.set_ylim(1e-4, 1)
    ax.legend(loc="lower right", fontsize=9, frameon=False)
    tail.legend(loc="upper right", fontsize=9, frameon=False)
    fig.suptitle(title or f"{metric} CDF")
    fig.tight_layout()
    return fig


def latency_vs_load_figure(curves: Mapping[str, LoadCurve], *, metric: str = "latency",
                           quantiles: Sequence[str] = ("p50", "p99"), budget_ms: float | None = None,
                           title: str | None = None) -> Figure:
    """``metric`` quantiles against arrival rate per curve (solid p99, dotted p50), the budget as a line."""
    fig = Figure(figsize=(8.0, 4.8), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    styles = {"p50": ":", "p95": "--", "p99": "-"}
    top = 0.0
    for i, (label, curve) in enumerate(curves.items()):
        rates = [p.rate_rps for p in curve.points]
        for q in quantiles:
            vals: list[Any] = [p.latency_ms(metric, q) for p in curve.points]  # None: no such metric
            ax.plot(rates, vals, styles.get(q, "-"), color=_color(label, i), lw=2, marker="o", ms=3,
                    label=f"{label} {q}")
            top = max([top, *[v for v in vals if v is not None]])
    if budget_ms is not None:
        ax.axhline(budget_ms, color=COLOR_BUDGET, ls="--", lw=1.2, label=f"budget {budget_ms:g} ms")
        ax.set_ylim(0, max(2.5 * budget_ms, 1e-9) if top > 2.5 * budget_ms else None)
    ax.set_xlabel(load_curve_xlabel(curves))
    ax.set_ylabel(f"{metric} (ms)")
    ax.grid(True, color=COLOR_GRID, lw=0.6)
    ax.legend(fontsize=9, frameon=False)
    ax.set_title(title or f"{metric} vs load")
    fig.tight_layout()
    return fig


def load_curve_xlabel(curves: Mapping[str, LoadCurve]) -> str:
    """The latency-vs-load x label, naming the requests simulated per point (each point is its own run)."""
    per_point = {c.requests_per_point for c in curves.values()}
    n = per_point.pop() if len(per_point) == 1 else None
    return "arrival rate (requests/s)" + (f"; each point {n:,} requests from an empty system" if n else "")


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` (format from the suffix, e.g. .png / .svg) in one step; return the path."""
    target = Path(path)
    return write_atomic(target, figure_bytes(fig, target.suffix.lstrip(".") or "png"))
