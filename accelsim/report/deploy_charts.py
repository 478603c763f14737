"""The deployment report's pruning-schedule chart (matplotlib, imported when drawing)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from accelsim.analysis.deployment import DeploymentReport

__all__ = ["DPI", "png_bytes", "render_schedule_chart"]

DPI = 100


def render_schedule_chart(report: DeploymentReport) -> tuple[Figure, dict[str, Any]]:
    """Cumulative model speedup vs ops made sparse (ranked by time saved) above the per-op saving as bars.

    Returns ``(fig, artists)`` with ``artists = {"axes", "bars_axes", "line", "bars"}``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    sched = report.pruning_schedule
    curve = list(sched.curve)
    rows = sched.rows
    dense_total = report.summary.dense.cycles or 1
    fig = Figure(figsize=(11.0, 5.6), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.08, 0.36, 0.88, 0.50))
    axb = fig.add_axes((0.08, 0.09, 0.88, 0.20), sharex=ax)
    xs = list(range(len(curve)))
    (line,) = ax.plot(xs, curve, color="#1f4e79", linewidth=2.0, marker="o" if len(xs) <= 80 else None,
                      markersize=3, zorder=3, label="cumulative model speedup")
    ax.axhline(1.0, color="#444444", linestyle="--", linewidth=1.0, zorder=2, label="dense = 1.0x")
    final = sched.final_speedup
    ax.axhline(final, color="#1f4e79", linestyle=":", linewidth=1.0, zorder=2)
    ax.annotate(f"all {len(rows)} ops: {final:.3f}x", (len(curve) - 1, final), xytext=(-4, 6 if final >= 1 else -6),
                textcoords="offset points", ha="right", va="bottom" if final >= 1 else "top", fontsize=9,
                color="#1f4e79")
    j = sched.layers_to_flatten
    if j is not None:
        for a in (ax, axb):
            a.axvline(j, color="#f28e2b", linestyle="--", linewidth=1.2, zorder=2)
        ax.plot([], [], color="#f28e2b", linestyle="--",
                label=f"{sched.flatten_fraction:.0%} of the final gain after {j} ops")
    peak = sched.peak
    if peak.speedup > final + 1e-12 and peak.layers > 0:
        ax.plot([peak.layers], [peak.speedup], marker="*", markersize=12, color="#2e9e4f", zorder=4,
                label=f"peak {peak.speedup:.3f}x after {peak.layers} ops", linestyle="none")
    lo = min([1.0, *curve])
    hi = max([1.0, *curve])
    pad = max(0.01, (hi - lo) * 0.12)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlim(-0.5, max(1, len(curve) - 1) + 0.5)
    ax.set_ylabel("model speedup over dense (x)", fontsize=10)
    ax.grid(axis="y", color="#d9d9d9", linewidth=0.6)
    ax.tick_params(axis="x", labelbottom=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8.5, frameon=False)
    saved = [100.0 * r.saved_cycles / dense_total for r in rows]
    bars = axb.bar([r.rank for r in rows], saved, width=0.8,
                   color=["#2e9e4f" if v >= 0 else "#d64541" for v in saved], zorder=2)
    axb.axhline(0.0, color="#444444", linewidth=0.8)
    axb.set_ylabel("saved by the op\n(% of dense time)", fontsize=9)
    axb.set_xlabel("ops made sparse, in order of simulated time saved (largest first)", fontsize=10)
    axb.grid(axis="y", color="#d9d9d9", linewidth=0.6)
    axb.tick_params(labelsize=8.5)
    fig.suptitle(f"Pruning schedule: {report.subject.title}", fontsize=12, fontweight="bold", y=0.975)
    return fig, {"axes": ax, "bars_axes": axb, "line": line, "bars": list(bars)}


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG at the report's DPI (no software metadata), for the HTML data URIs and files."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()
