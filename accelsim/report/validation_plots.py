"""Validation scatter: predicted vs measured 2:4 speedup, one point per measured row.

Input is the :class:`~accelsim.analysis.validation_results.ValidationResult` of
:func:`accelsim.analysis.gpu_validation.validate_hw`. Library code: nothing here
prints, and matplotlib is used through :class:`~matplotlib.figure.Figure` with the Agg canvas
(no pyplot, no global state; rcParams are only touched inside ``rc_context`` when saving).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from accelsim.fileio import save_figure

if TYPE_CHECKING:  # types only: a renderer does not import the simulation
    from accelsim.analysis.validation_results import RowResult, ValidationResult

BASENAME = "validation_scatter"
SVG_HASHSALT = "accelsim-validation"
FIGSIZE = (7.5, 6.5)
DPI = 110

REGIME_COLORS = {
    "kernel-gemm": "#1f77b4",
    "inference-linear": "#2ca02c",
    "decode-regime linear": "#d62728",
    "training fwd+bwd": "#9467bd",
}
FALLBACK_COLORS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e")


def regime_color(regime: str, order: list[str]) -> str:
    """A stable colour per regime: the known tags have fixed colours, others cycle a palette."""
    if regime in REGIME_COLORS:
        return REGIME_COLORS[regime]
    extra = [r for r in order if r not in REGIME_COLORS]
    return FALLBACK_COLORS[extra.index(regime) % len(FALLBACK_COLORS)] if regime in extra else FALLBACK_COLORS[0]


def scatter_figure(result: ValidationResult, *, title: str | None = None, annotate_worst: int = 4) -> Figure:
    """Predicted (y) vs measured (x) speedup with the y = x line and the 1.0x quadrant lines.

    Regimes are coloured; main-regime rows are filled circles, other regimes filled squares,
    rows above the 2:4 bound hollow (reported, not scored). The ``annotate_worst`` largest
    errors among scored rows are labelled with their CSV line and shape.
    """
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    rows = [r for r in result.rows if r.predicted is not None]
    known = list(REGIME_COLORS)
    regimes = sorted({r.regime for r in rows},
                     key=lambda x: (known.index(x) if x in known else len(known), x))
    values = [v for r in rows for v in (r.measured.speedup, _predicted(r))]
    lo = min([0.5, *values]) * 0.85 if values else 0.5
    hi = max([2.1, *values]) * 1.05 if values else 2.1
    ax.plot([lo, hi], [lo, hi], color="#444444", lw=1.0, zorder=1, label="y = x")
    ax.axhline(1.0, color="#999999", lw=0.8, ls="--", zorder=1)
    ax.axvline(1.0, color="#999999", lw=0.8, ls="--", zorder=1)
    ax.axvline(float(result.bound), color="#cc9999", lw=0.8, ls=":", zorder=1)
    ax.fill_between([lo, 1.0], 1.0, hi, color="#f4d6d6", alpha=0.35, zorder=0, lw=0)
    ax.fill_between([1.0, hi], lo, 1.0, color="#f4d6d6", alpha=0.35, zorder=0, lw=0)
    for regime in regimes:
        color = regime_color(regime, regimes)
        for scored in (True, False):
            pts = [r for r in rows if r.regime == regime and r.scored == scored]
            if not pts:
                continue
            main = pts[0].main
            ax.scatter([r.measured.speedup for r in pts], [_predicted(r) for r in pts],
                       s=36, marker="o" if main else "s", zorder=3, linewidths=1.2,
                       facecolors=color if scored else "none", edgecolors=color,
                       label=f"{regime} ({len(pts)})" + ("" if scored else ", not scored"))
    worst = sorted((r for r in rows if r.scored and r.main), key=lambda r: -(r.abs_error or 0.0))
    for i, r in enumerate(worst[:max(0, annotate_worst)]):
        ax.annotate(f"L{r.line}", (r.measured.speedup, _predicted(r)),
                    xytext=(-4, 7 + 8 * (i % 2)), textcoords="offset points", fontsize=7, color="#333333",
                    ha="right", arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.5})
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("measured speedup (dense time / 2:4 time)")
    ax.set_ylabel("predicted speedup (accelsim)")
    ov = result.overall
    sub = ""
    if ov.n:
        sub = (f"main regimes: MAE {ov.mae:.3f}, right side {ov.right_side_rows}/{ov.n}, "
               f"Spearman {ov.spearman:.2f}" if ov.spearman is not None else
               f"main regimes: MAE {ov.mae:.3f}, right side {ov.right_side_rows}/{ov.n}")
    hws = ", ".join(sorted({h.name for h in result.hardware.values()}))
    ax.set_title((title or f"Predicted vs measured 2:4 speedup on {hws}") + ("\n" + sub if sub else ""), fontsize=10)
    ax.text(0.99, 0.01, "shaded: wrong side of 1.0x; Ln: CSV line of a worst row", transform=ax.transAxes,
            ha="right", va="bottom",
            fontsize=7, color="#996666")
    ax.legend(loc="upper left", fontsize=8, frameon=True)
    ax.grid(True, color="#e5e5e5", lw=0.6, zorder=0)
    fig.tight_layout()
    return fig


def save_scatter(fig: Figure, out_dir: str | os.PathLike[str], basename: str = BASENAME) -> list[Path]:
    """Write ``<basename>.png`` and ``.svg`` into ``out_dir`` (deterministic, atomic); return the paths."""
    return save_figure(fig, Path(out_dir) / basename, ("png", "svg"), DPI)




def _predicted(row: RowResult) -> float:
    """The predicted speedup of a row that has a prediction."""
    assert row.predicted is not None
    return row.predicted.speedup
