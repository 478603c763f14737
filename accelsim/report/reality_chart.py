"""The sparse reality check as a chart and as terminal bars.

Input is the :class:`~accelsim.analysis.reality.RealityCheck` of
:func:`accelsim.analysis.reality.reality_check` (``RealityCheck.from_dict`` reads a saved
``reality_check.json`` back). Library code: nothing here prints, exits or writes files, and matplotlib
is used through :class:`~matplotlib.figure.Figure` with the Agg canvas directly (no pyplot, no global
state; rcParams are only touched inside ``rc_context``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelsim.fileio import figure_files
from accelsim.formats import parse_format
from accelsim.textsafe import printable, speedup_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from accelsim.analysis.reality import RealityCheck, Rung

FIGSIZE = (13.0, 5.5)
DPI = 100
BASENAME = "reality_check"
SVG_HASHSALT = "accelsim-reality-check"

COLOR_NOMINAL = "#6b8cae"   # grey-blue
COLOR_GAIN = "#2e9e4f"      # green
COLOR_LOSS = "#d64541"      # red
COLOR_FALLBACK = "#f28e2b"  # orange
COLOR_GRID = "#d9d9d9"
COLOR_TEXT = "#222222"

# rung key -> short cause name for the waterfall's x axis and the text ladder
SHORT_NAMES = {
    "nominal": "nominal",
    "executed_pattern": "executed pattern",
    "amdahl": "non-sparse ops",
    "non_mac_time": "non-MAC time",
    "padding": "padding / shape",
    "data_movement": "data movement",
    "metadata": "metadata",
    "efficiency": "kernel efficiency",
    "fixed_cost": "fixed cost",
    "power_clock": "power-limited clocks",
}

_LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 1.0, "alpha": 0.85}

WHY_LINE_IN = 0.22     # figure inches per "why" line below the plots
MAX_WHY_LINES = 4
WHY_LINE_CHARS = 190

TITLE = "Sparse reality check: "
TITLE_CHARS = 120      # a longer title (a plan naming many layers) would run past the figure's edges

BAR_CHAR = "\u2588"
TEXT_LABELS = ("nominal sparsity", "real speedup", "fallback overhead")


# ----------------------------------------------------------------------------------------------- helpers

def format_params(params: Mapping[str, Any] | None) -> str:
    """``{'batch': 16, 'seq': 128}`` -> ``'batch 16, seq 128'`` (empty string for no params)."""
    return ", ".join(f"{k} {v}" for k, v in (params or {}).items())


def run_label(data: RealityCheck) -> str:
    """What the sparse run ran: its ``--sparsity`` (``2:4``), or the workload's own plan
    (``workload plan (2:4 on g0; unstructured:75% on g2; g1 dense)``)."""
    if data.sparsity is None and data.plan is not None:
        return f"workload plan ({data.plan})"
    return str(data.sparsity)


def _subject(data: RealityCheck, label: str | None = None) -> str:
    """``bert-base (batch 16, seq 128), fp16 on a100-like, 2:4``: the element type where known, unless the workload is
    quantized (then :func:`quantized_note` names the weights' and activations' types); ``label`` replaces
    :func:`run_label`."""
    params = format_params(data.params)
    workload = f"{data.workload} ({params})" if params else str(data.workload)
    if data.dtype is not None and data.quantization is None:
        workload += f", {data.dtype}"
    changed = f" (--hw-set {', '.join(data.hw_set)})" if data.hw_set else ""
    return printable(f"{workload} on {data.hardware}{changed}, {label or run_label(data)}")


def _plan_in_title(data: RealityCheck) -> bool:
    """Whether the chart's title names the whole plan; a longer one says 'workload plan' and the footer names it."""
    return data.sparsity is not None or data.plan is None or len(TITLE + _subject(data)) <= TITLE_CHARS


def quantized_note(data: RealityCheck) -> str:
    """``quantized: int8 weights x fp16 activations on 224 linears`` for a quantized workload (its speedups are of
    int8 / fp8 Linears, not of the workload dtype's); '' otherwise. The chart's subtitle leads with it, the
    terminal view's header ends with it."""
    q = data.quantization
    if q is None:
        return ""
    unfused = ", unfused dequantize" if q.dequantize == "unfused" else ""
    linears = f"{q.quantized_layers} linear{'' if q.quantized_layers == 1 else 's'}"
    return f"quantized: {q.weights} weights x {q.activations} activations on {linears}{unfused}"


def _executed_note(data: RealityCheck) -> str:
    """'1:4 requested, executed as 2:4' when the hardware ran another pattern than asked for; else ''. A run on the
    workload's own plan names each requested pattern that its sparse layers ran as another ('; '-separated)."""
    if data.sparsity is None and data.plan_executed is not None:
        return printable("; ".join(f"{asked} requested, executed as {', '.join(ran)}"
                                   for asked, ran in data.plan_executed.items() if ran and list(ran) != [asked]))
    executed = list(data.patterns_executed)
    if executed and executed != [data.sparsity]:
        return f"{data.sparsity} requested, executed as {', '.join(executed)}"
    return ""


def nominal_note(data: RealityCheck) -> str:
    """For a workload plan that asks for several patterns, how its nominal bar is made (else '')."""
    if data.sparsity is not None or data.plan_executed is None or len(data.plan_executed) < 2:
        return ""
    ratios = ", ".join(f"{p} {_mn(p)}" for p in data.plan_executed)
    nominal = speedup_text(float(data.bars.nominal_speedup))
    return printable(f"nominal {nominal} = the ops that ask for a pattern, each at its M/N ({ratios}), by their dense "
                     "time")


def _mn(pattern: str) -> str:
    fmt = parse_format(pattern)
    return f"{fmt.dense_speedup:g}x" if fmt is not None else "?"


def _short_name(rung: Rung) -> str:
    return SHORT_NAMES.get(rung.rung, str(rung.label).lstrip("+ "))


def _wrap(name: str) -> str:
    """Two lines for a long tick label: 'kernel efficiency' -> 'kernel\nefficiency'."""
    if len(name) <= 7 or " " not in name:
        return name
    words = name.split(" ")
    def cost(i: int) -> int:  # balanced lines, and never a line that starts with '/'
        return abs(len(" ".join(words[:i])) - len(" ".join(words[i:]))) + (99 if not words[i][0].isalnum() else 0)

    best = min(range(1, len(words)), key=cost)
    return " ".join(words[:best]) + "\n" + " ".join(words[best:])


def _real_color(real: float) -> str:
    return COLOR_GAIN if real >= 1.0 else COLOR_LOSS


def _percent(fraction: float) -> str:
    """A fraction as a whole percentage, never '-0%'."""
    value = round(100.0 * fraction)
    return f"{value if value else 0:d}%"


def _signed(x: float) -> str:
    """A change in x with an explicit sign; a zero change (or -0.0) prints as +0.00x."""
    if abs(x) < 0.005:
        return "\u00b10.00x"
    return f"{x:+.2f}x"


# ----------------------------------------------------------------------------------------------- chart

def render_reality_check(data: RealityCheck) -> tuple[Figure, dict[str, Any]]:
    """Draw the reality check: three bars (left) and the ladder as a waterfall (right).

    Returns ``(fig, artists)`` with ``artists = {"bars": {"nominal", "real", "fallback"}: Rectangle,
    "axes": {"speedup", "fallback", "ladder"}: Axes, "ladder_bars": [Rectangle, ...]}``. The
    speedup bars are in x on the ``speedup`` axis, the fallback bar in percent of the sparse run's
    time on the ``fallback`` axis (twin of ``speedup``). ``ladder_bars`` are the waterfall's bars
    in order: nominal, one per rung after the first (bottom = the lower of the two speedups, height
    = |change|, a zero change drawn as a hairline), real. The layout is fixed (no layout engine),
    so data-to-pixel transforms read before saving hold for the saved PNG.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # deferred: the CLI starts without matplotlib
    from matplotlib.figure import Figure

    bars = data.bars
    nominal = float(bars.nominal_speedup)
    real = float(bars.real_speedup)
    fallback_pct = 100.0 * float(bars.fallback_overhead)
    rungs = list(data.rungs)

    why = why_lines(data)
    footer = (0.12 + WHY_LINE_IN * len(why)) if why else 0.0
    height = FIGSIZE[1] + footer
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI)
    FigureCanvasAgg(fig)

    def from_top(frac: float) -> float:  # a position of the 5.5-inch layout, measured from the top
        return 1.0 - (1.0 - frac) * FIGSIZE[1] / height

    # fixed layout (no constrained/tight layout) so axes positions do not move at draw time; the why
    # lines get a band of their own below, so the plots keep their size whatever the explanation
    grid = fig.add_gridspec(1, 2, width_ratios=[1.0, 1.75], left=0.06, right=0.985, top=from_top(0.82),
                            bottom=from_top(0.14), wspace=0.30)
    ax = fig.add_subplot(grid[0, 0])
    ax3 = fig.add_subplot(grid[0, 1])

    title = _subject(data) if _plan_in_title(data) else _subject(data, "workload plan (named below)")
    fig.suptitle(TITLE + title, fontsize=14, fontweight="bold", y=from_top(0.975),
                 color=COLOR_TEXT)
    fig.text(0.5, from_top(0.905), subtitle(data), ha="center", va="center", fontsize=10, color="#555555",
             linespacing=1.3)
    for i, line in enumerate(why):
        fig.text(0.06, (footer - 0.06 - WHY_LINE_IN * (i + 0.5)) / height, line, ha="left", va="center",
                 fontsize=9, color=COLOR_TEXT)

    # ---- left: nominal / real / fallback
    ymax = max(nominal, real, 1.0) * 1.22
    labels = ["nominal\nsparsity", "real\nspeedup", "fallback\noverhead"]
    b_nom = ax.bar(0, nominal, width=0.6, color=COLOR_NOMINAL, zorder=3)[0]
    b_real = ax.bar(1, real, width=0.6, color=_real_color(real), zorder=3)[0]
    ax.set_ylim(0, ymax)
    ax.set_xlim(-0.6, 2.6)
    ax.set_xticks([0, 1, 2], labels, fontsize=10)
    ax.set_ylabel("speedup over dense (x)", fontsize=10)
    # the dense line spans the two speedup bars only (the fallback bar has its own % axis)
    ax.plot([-0.6, 1.36], [1.0, 1.0], color="#444444", linestyle="--", linewidth=1.0, zorder=4)
    ax.text(1.38, 1.0, "dense", ha="left", va="center", fontsize=8.5, color="#444444", zorder=5, bbox=_LABEL_BOX)
    ax.grid(axis="y", color=COLOR_GRID, linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    for spine in ("top",):
        ax.spines[spine].set_visible(False)
    off = ymax * 0.015
    ax.text(0, nominal + off, speedup_text(nominal), ha="center", va="bottom", fontsize=12, fontweight="bold",
            color=COLOR_TEXT, zorder=5, bbox=_LABEL_BOX)
    ax.text(1, real + off, speedup_text(real), ha="center", va="bottom", fontsize=12, fontweight="bold",
            color=COLOR_TEXT, zorder=5, bbox=_LABEL_BOX)
    ax.set_title("nominal vs real", fontsize=11, color=COLOR_TEXT)

    ax2 = ax.twinx()
    b_fb = ax2.bar(2, fallback_pct, width=0.6, color=COLOR_FALLBACK, zorder=3)[0]
    ax2.set_ylim(0, max(100.0, fallback_pct) * 1.22)
    ax2.set_yticks([0, 20, 40, 60, 80, 100])
    ax2.set_ylabel("fallback overhead (% of sparse-run time)", fontsize=10, color=COLOR_FALLBACK)
    ax2.tick_params(axis="y", colors=COLOR_FALLBACK)
    ax2.spines["right"].set_color(COLOR_FALLBACK)
    ax2.spines["top"].set_visible(False)
    ax2.text(2, fallback_pct + ax2.get_ylim()[1] * 0.015, f"{fallback_pct:.0f}%", ha="center", va="bottom",
             fontsize=12, fontweight="bold", color=COLOR_TEXT, zorder=5, bbox=_LABEL_BOX)

    # ---- right: the ladder as a waterfall
    ladder_bars = _waterfall(ax3, rungs, nominal, real)

    artists = {"bars": {"nominal": b_nom, "real": b_real, "fallback": b_fb},
               "axes": {"speedup": ax, "fallback": ax2, "ladder": ax3},
               "ladder_bars": ladder_bars}
    return fig, artists


def why_lines(data: RealityCheck) -> list[str]:
    """The chart's footer: the workload plan where the title has no room for it, the executed-pattern note and the
    explanation, as the terminal prints them.

    At most MAX_WHY_LINES lines of at most WHY_LINE_CHARS characters; what is cut says where the rest is.
    """
    lines = [] if _plan_in_title(data) else [printable(f"workload plan: {data.plan}")]
    lines += [f"note: {nominal_note(data)}"] if nominal_note(data) else []
    lines += [f"note: {_executed_note(data)}"] if _executed_note(data) else []
    lines += [f"note: {clock_note(data)}"] if data.clock is not None else []
    lines += [f"why: {printable(e)}" for e in data.explanation]
    cut = [line if len(line) <= WHY_LINE_CHARS else line[: WHY_LINE_CHARS - 3] + "..." for line in lines]
    if len(cut) > MAX_WHY_LINES:
        rest = len(cut) - (MAX_WHY_LINES - 1)
        cut = cut[: MAX_WHY_LINES - 1] + [f"(+{rest} more lines in reality_check.json)"]
    return cut


def subtitle(data: RealityCheck) -> str:
    """The chart's line under the title: the quantization (if any), the policy, the executed-pattern note, the
    ops that ran sparse and those that fell back; a long one puts its last part on a second line."""
    parts = ([quantized_note(data)] if data.quantization is not None else []) + [f"policy: {data.policy}"]
    if _executed_note(data):
        parts.append(_executed_note(data))
    parts.append(f"{data.sparse_layers} of {data.layers} ops run sparse")
    fb = data.fallback
    if fb.layers:
        by = sorted(fb.by_reason.items(), key=lambda kv: (-kv[1].cycles, kv[0]))
        reasons = ", ".join(f"{k} {v.layers}" for k, v in by[:3]) + (f", +{len(by) - 3} more" if len(by) > 3 else "")
        parts.append(f"{fb.layers} fell back to dense" + (f" ({reasons})" if reasons else ""))
    text = "   \u00b7   ".join(parts)
    if len(text) > 150 and len(parts) > 2:  # many fallback reasons: they get a line of their own
        text = "   \u00b7   ".join(parts[:-1]) + "\n" + parts[-1]
    return text


def _waterfall(ax3: Any, rungs: list[Rung], nominal: float, real: float) -> list[Rectangle]:
    """Nominal bar, one floating bar per rung's change, the real bar; returns the bars in that order."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    steps = [r for r in rungs if r.rung != "nominal"]
    names = ["nominal"] + [_short_name(r) for r in steps] + ["real"]
    values = [float(r.speedup) for r in rungs] if rungs else [nominal, real]
    top = max([nominal, real, 1.0, *values])
    ymax = top * 1.22
    off = ymax * 0.015
    ax3.set_ylim(0, ymax)
    ax3.set_xlim(-0.6, len(names) - 0.4)
    ax3.grid(axis="y", color=COLOR_GRID, linewidth=0.6, zorder=0)
    ax3.set_axisbelow(True)
    ax3.spines["top"].set_visible(False)
    ax3.spines["right"].set_visible(False)
    ax3.axhline(1.0, color="#444444", linestyle="--", linewidth=1.0, zorder=4)
    ax3.set_ylabel("speedup over dense (x)", fontsize=10)
    ax3.set_title("where the speedup goes: each rung adds one real effect to the sparse run", fontsize=11,
                  color=COLOR_TEXT)

    out = [ax3.bar(0, nominal, width=0.6, color=COLOR_NOMINAL, zorder=3)[0]]
    ax3.text(0, nominal + off, speedup_text(nominal), ha="center", va="bottom", fontsize=10, fontweight="bold",
             color=COLOR_TEXT, zorder=5, bbox=_LABEL_BOX)
    prev = nominal
    for i, rung in enumerate(steps, start=1):
        cur = float(rung.speedup)
        change = cur - prev
        lo, hi = min(prev, cur), max(prev, cur)
        color = COLOR_LOSS if change < 0 else COLOR_GAIN
        # a zero change still gets a hairline so the rung is visibly "nothing lost here"
        out.append(ax3.bar(i, max(hi - lo, ymax * 0.004), bottom=lo, width=0.6,
                           color=color if hi > lo else "#888888", zorder=3)[0])
        ax3.plot([i - 1 + 0.3, i - 0.3], [prev, prev], color="#888888", linewidth=0.8, linestyle=":", zorder=2)
        if change <= -0.005:  # a visible loss: label under the bar; gains and ~zero changes: above
            ax3.text(i, lo - off, _signed(change), ha="center", va="top", fontsize=9.5,
                     color=COLOR_LOSS, fontweight="bold", zorder=5, bbox=_LABEL_BOX)
        else:
            ax3.text(i, hi + off, _signed(change), ha="center", va="bottom", fontsize=9.5,
                     color=COLOR_GAIN if change >= 0.005 else "#666666", fontweight="bold", zorder=5,
                     bbox=_LABEL_BOX)
        prev = cur
    last = len(names) - 1
    ax3.plot([last - 1 + 0.3, last - 0.3], [prev, prev], color="#888888", linewidth=0.8, linestyle=":", zorder=2)
    out.append(ax3.bar(last, real, width=0.6, color=_real_color(real), zorder=3)[0])
    ax3.text(last, real + off, speedup_text(real), ha="center", va="bottom", fontsize=10, fontweight="bold",
             color=COLOR_TEXT, zorder=5, bbox=_LABEL_BOX)
    ax3.set_xticks(range(len(names)), [_wrap(n) for n in names], fontsize=8.5 if len(names) > 8 else 9.5)
    ax3.legend(handles=[Patch(color=COLOR_LOSS, label="loss"), Patch(color=COLOR_GAIN, label="gain"),
                        Line2D([], [], color="#444444", linestyle="--", label="dense = 1.0x")],
               loc="upper right", fontsize=9, frameon=False, ncol=3)
    return out


# ----------------------------------------------------------------------------------------------- files

def chart_files(fig: Figure, out_dir: str | os.PathLike[str]) -> dict[Path, bytes]:
    """``{out_dir/reality_check.png: bytes, .../reality_check.svg: bytes}`` for ``fileio.write_all``.

    Both are deterministic for identical figures: no date or software metadata, a fixed SVG hash salt.
    """
    return figure_files(fig, Path(out_dir) / BASENAME, ("png", "svg"), DPI)


# ----------------------------------------------------------------------------------------------- text

def _bar(chars: int, width: int) -> str:
    return (BAR_CHAR * chars).ljust(width)


def bar_lengths(data: RealityCheck, width: int = 40) -> tuple[int, int, int]:
    """Characters of the nominal, real and fallback bars of :func:`text_bars`.

    The two speedup bars share one scale (the larger speedup = ``width``); the fallback bar is its
    fraction of the sparse run's time times ``width``.
    """
    bars = data.bars
    nominal, real = float(bars.nominal_speedup), float(bars.real_speedup)
    scale = max(nominal, real)
    n_nom = round(width * nominal / scale) if scale > 0 else 0
    n_real = round(width * real / scale) if scale > 0 else 0
    n_fb = min(width, max(0, round(width * float(bars.fallback_overhead))))
    return n_nom, n_real, n_fb


def text_bars(data: RealityCheck, width: int = 40) -> str:
    """The terminal view: a header, three bars, the ladder rung by rung and the explanation.

    Lines joined by newlines, no trailing newline (``print(text_bars(data))``).
    """
    bars = data.bars
    nominal, real = float(bars.nominal_speedup), float(bars.real_speedup)
    fallback = float(bars.fallback_overhead)
    n_nom, n_real, n_fb = bar_lengths(data, width)
    lab = max(len(t) for t in TEXT_LABELS) + 2
    lines = [
        f"SPARSE REALITY CHECK  {_subject(data)}" + (f", {quantized_note(data)}" if data.quantization else ""),
        f"{TEXT_LABELS[0]:<{lab}}{_bar(n_nom, width)}  {speedup_text(nominal)}",
        f"{TEXT_LABELS[1]:<{lab}}{_bar(n_real, width)}  {speedup_text(real)}",
        f"{TEXT_LABELS[2]:<{lab}}{_bar(n_fb, width)}  {100.0 * fallback:.0f}% of sparse-run time",
    ]
    rungs = data.rungs
    if rungs:
        shares = {loss.rung: loss.share_of_gap for loss in data.losses}
        rw = max(len(r.label) for r in rungs)
        texts = [speedup_text(float(r.speedup)) for r in rungs]
        sw = max(len(t) for t in texts)  # a rung near 1 has a third decimal: the columns after it stay aligned
        lines.append("")
        lines.append(_ladder_header(data))
        for rung, text in zip(rungs, texts, strict=True):
            line = f"  {rung.label:<{rw}}  {text:<{sw}}"
            if rung.change is not None:
                share = shares.get(rung.rung, 0.0)
                line += f"  ({_signed(float(rung.change))}, {_percent(share)} of the gap)"
            lines.append(line.rstrip())
    explanation = data.explanation
    if nominal_note(data) or _executed_note(data) or explanation or data.clock is not None:
        lines.append("")
    if nominal_note(data):
        lines.append(f"note: {nominal_note(data)}")
    if _executed_note(data):
        lines.append(f"note: {_executed_note(data)}")
    if data.clock is not None:
        lines.append(f"note: {clock_note(data)}")
    if explanation:
        lines.extend(f"why: {printable(e)}" for e in explanation)
    return "\n".join(lines)


def _ladder_header(data: RealityCheck) -> str:
    if data.clock is None:
        return "ladder (one real effect added per rung; speedup over the real dense run):"
    nominal_dense = data.rungs[0].dense_cycles if data.rungs else None  # None: a file written before it was stored
    cycles = f" ({int(nominal_dense):,} cycles)" if nominal_dense is not None else ""
    return (f"ladder (one real effect added per rung; speedup over the dense run at the nominal clock{cycles}, "
            f"the last rung over the real dense run ({int(data.dense_total_cycles):,} cycles)):")


def clock_note(data: RealityCheck) -> str:
    """What the power cap did to the two real runs (``data.clock`` set: it slowed a kernel)."""
    clock = data.clock or {}
    sparse, dense = clock.get("sparse_run") or {}, clock.get("dense_run") or {}
    return (f"power cap {float(sparse.get('tdp_w', 0.0)):g} W (energy.power_cap.tdp_w): the sparse run at an "
            f"effective {float(sparse.get('effective_ghz', 0.0)):.3f} GHz ({int(sparse.get('power_capped_layers', 0))} "
            f"layer(s) capped), the dense run at {float(dense.get('effective_ghz', 0.0)):.3f} GHz "
            f"({int(dense.get('power_capped_layers', 0))}), nominal {float(sparse.get('nominal_ghz', 0.0)):g} GHz; "
            "the rungs before the last run every kernel at the nominal clock")
