"""The roofline plot of a dense and a sparse run (re-exported by :mod:`accelsim.report.plots`).

Each array layer is a point; the roofs are min(peak, intensity x DRAM bytes/cycle) per element type the points run
in, dense, and one sparse roof per compute multiplier the sparse run's patterns execute at (a plan running 1:4 on
some layers and 2:4 on others has a 4x and a 2x roof): every point sits under its own pattern's roof. Library code:
nothing prints; matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from accelsim.formats import parse_format
from accelsim.hardware.model import Hardware
from accelsim.report import timeline as tl
from accelsim.report.plot_common import GRID, NOTE, TEXT, draw_title, new_figure, run_names
from accelsim.results import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_roofline", "roofline_points", "roofline_left_out", "roofline_rates", "OFF_ARRAY"]


def roofline_rates(result: RunResult, hw: Hardware) -> dict[str, float]:
    """Each pattern ``result``'s sparse-path layers execute -> its compute multiplier over dense on ``hw``, the height
    of its roof over the dense one (2.0 for 2:4; 4.0 for 1:4 where the datapath runs it natively), in order of
    first appearance. 1.0 where the pattern computes at the dense rate (its roof is the dense roof)."""
    out: dict[str, float] = {}
    for k in result.layers:
        text = k.pattern_executed
        if k.path != "sparse" or not text or text in out:
            continue
        pat = parse_format(text)
        if pat is None or hw.core.sparse is None:
            out[text] = 1.0
            continue
        try:
            out[text] = float(hw.core.sparse.rate(pat))
        except KeyError:
            out[text] = float(pat.dense_speedup)
    return out


def roofline_points(result: RunResult) -> list[dict[str, Any]]:
    """Per array layer: arithmetic intensity (dense-equivalent MACs / DRAM bytes), MACs/cycle, and the element
    type it runs in with the array's peak in it (its dense roof), and the pattern a sparse-path layer executes (its
    sparse roof: :func:`roofline_rates`; None off the sparse path). :func:`roofline_left_out` says what is not here."""
    own = str(result.workload.get("dtype", ""))
    out = []
    for k in result.layers:
        dram = sum(k.bytes["dram"].values())
        if k.path in OFF_ARRAY or k.macs <= 0 or dram <= 0 or k.cycles["total"] <= 0:
            continue
        out.append({"name": k.name, "path": k.path, "ai": k.macs / dram, "perf": k.macs / k.cycles["total"],
                    "dtype": k.dtype or own, "peak": result.layer_peak(k),
                    "pattern": k.pattern_executed if k.path == "sparse" else None})
    return out


OFF_ARRAY = ("vector", "communication")  # paths that do not run on the tensor / PE array: no roofline point


def roofline_left_out(result: RunResult) -> dict[str, Any]:
    """The layers :func:`roofline_points` leaves out, by cause, with their dense-equivalent MACs: ``vector`` (on
    the vector unit: ``layers``, and of them ``with_macs`` -- depthwise convs there -- by ``ops`` and ``macs``),
    ``communication`` (collectives), ``no_macs`` (array ops without MACs of their own: fused into attention),
    ``no_dram`` (array ops that move no DRAM bytes or take no cycles: no finite intensity; ``layers``, ``macs``);
    ``model_macs`` the run's total."""
    vec, vec_macs, comm, no_macs, no_dram, no_dram_macs = 0, 0, 0, 0, 0, 0
    ops: Counter[str] = Counter()
    for k in result.layers:
        if k.path == "vector":
            vec += 1
            if k.macs > 0:
                ops["depthwise conv2d" if k.op == "conv2d" else k.op] += 1
                vec_macs += k.macs
        elif k.path == "communication":
            comm += 1
        elif k.macs <= 0:
            no_macs += 1
        elif sum(k.bytes["dram"].values()) <= 0 or k.cycles["total"] <= 0:
            no_dram += 1
            no_dram_macs += k.macs
    return {"vector": {"layers": vec, "with_macs": sum(ops.values()), "ops": dict(sorted(ops.items())),
                       "macs": vec_macs},
            "communication": comm, "no_macs": no_macs, "no_dram": {"layers": no_dram, "macs": no_dram_macs},
            "model_macs": sum(k.macs for k in result.layers)}


def _left_out_text(left: dict[str, Any]) -> str:
    """One run's left-out layers in words (:func:`roofline_left_out`)."""
    parts = []
    total = left["model_macs"]

    def share(macs: int) -> str:
        return f"{macs:,} MACs, {macs / total:.1%} of the model's" if total else f"{macs:,} MACs"

    v = left["vector"]
    if v["layers"]:
        text = f"{v['layers']:,} vector-unit layer(s)"
        if v["with_macs"]:
            what = ", ".join(f"{n:,} {op}" for op, n in v["ops"].items())
            text += f" ({what} with {share(v['macs'])})"
        parts.append(text)
    nd = left["no_dram"]
    if nd["layers"]:
        parts.append(f"{nd['layers']:,} array layer(s) with no DRAM bytes or cycles, no finite intensity "
                     f"({share(nd['macs'])})")
    if left["no_macs"]:
        parts.append(f"{left['no_macs']:,} op(s) fused into attention (no MACs of their own)")
    if left["communication"]:
        parts.append(f"{left['communication']:,} collective(s)")
    return "; ".join(parts) if parts else "none"


def _left_out_line(dense_result: RunResult, sparse_result: RunResult, pat: str) -> str:
    """What the roofline leaves out, once where both runs leave out the same, else per run."""
    d, s = _left_out_text(roofline_left_out(dense_result)), _left_out_text(roofline_left_out(sparse_result))
    return f"left out: {d}" if d == s else f"left out of the dense run: {d}; of the {pat} run: {s}"


ROOF_STYLES = ("-", (0, (1, 1.2)), (0, (6, 1.5, 1, 1.5)))  # a dense roof's line per element type, in turn
SPARSE_ROOF_STYLES = ("--", (0, (3, 2)), (0, (3, 1.5, 1, 1.5)), (0, (8, 2)), (0, (1, 2)), (0, (5, 1, 1, 1, 1, 1)))
SPARSE_ROOF_COLORS = (tl.SPARSE_COLOR, "#1b7a4a", "#7fc97f")  # one per compute multiplier, in turn
DENSE_MARKERS, FALLBACK_MARKERS = ("o", "s", "D"), ("x", "+", "1")
SPARSE_MARKERS = ("^", "v", "<", ">", "P", "*")  # one per (pattern group, element type), in turn


def _pattern_groups(rates: dict[str, float]) -> dict[float, list[str]]:
    """Compute multiplier -> the executed patterns that run at it, lowest first (2:4 and 4:8 share a 2x roof)."""
    groups: dict[float, list[str]] = {}
    for pattern, rate in rates.items():
        groups.setdefault(rate, []).append(pattern)
    return dict(sorted(groups.items()))


def plot_roofline(dense_result: RunResult, sparse_result: RunResult, hw: Hardware) -> Figure:
    """Roofline of ``hw``: each array layer a point, dense and sparse, with the dense and sparse roofs.

    x: arithmetic intensity, dense-equivalent MACs per DRAM byte (sparse layers move compressed
    bytes, so they sit to the right); y: achieved dense-equivalent MACs per cycle. Roofs, one per
    element type the points run in (an int8 linear of a quantized fp16 model runs against the int8 peak):
    min(peak, AI x DRAM bytes/cycle) dense, and one per compute multiplier of the patterns the sparse layers
    execute (:func:`roofline_rates`: 2x for 2:4, 4x for 1:4 on a datapath that runs it natively), the sparse
    points grouped by it. A line under the title says which layers have no point (vector unit, collectives, no
    DRAM bytes) and their MACs. On a tensor-parallel system the run is one device's: the title and y axis say so.
    """
    names = run_names(sparse_result)
    pat = names.label
    fig = new_figure("roofline")
    ax = fig.add_axes((0.11, 0.11, 0.85, 0.73))
    groups = _pattern_groups(roofline_rates(sparse_result, hw))
    top_rate = max([1.0, *groups])
    bw = hw.dram_bytes_per_cycle()
    dense_pts = roofline_points(dense_result)
    sparse_pts = roofline_points(sparse_result)
    peaks = {p["dtype"]: p["peak"] for p in dense_pts + sparse_pts}
    if not peaks:  # no array layer at all: the workload dtype's roof
        peaks = {str(sparse_result.workload.get("dtype", "")): float(sparse_result.peak_macs_per_cycle)}
    dtypes = sorted(peaks, key=lambda d: (peaks[d], d))
    top, low = max(peaks.values()), min(peaks.values())
    ais = [p["ai"] for p in dense_pts + sparse_pts]
    lo = min(ais) / 2 if ais else 0.1
    hi = max(ais) * 2 if ais else 1e4
    if np.isfinite(bw):
        lo, hi = min(lo, low / bw / 8), max(hi, top * top_rate / bw * 4)
    x = np.geomspace(lo, hi, 400)
    several = len(dtypes) > 1 or sum(rate > 1.0 for rate in groups) > 1
    plateaus: dict[float, list[str]] = {}  # each roof's flat part, named at the right edge (roofs may coincide)

    def roof(peak: float) -> Any:
        return np.minimum(peak, x * bw) if np.isfinite(bw) else np.full_like(x, peak)

    for i, d in enumerate(dtypes):
        peak = peaks[d]
        plateaus.setdefault(peak, []).append(f"{d} dense")
        ax.plot(x, roof(peak), color=tl.DENSE_COLOR, linewidth=2.0, linestyle=ROOF_STYLES[i % len(ROOF_STYLES)],
                label=f"dense roof, {d} ({peak:,.0f} MACs/cycle)")
    colors = {rate: SPARSE_ROOF_COLORS[i % len(SPARSE_ROOF_COLORS)]
              for i, rate in enumerate(r for r in groups if r > 1.0)}  # a roof and its points share a colour
    styles = 0
    for rate, pats in groups.items():
        if rate <= 1.0:
            continue  # computes at the dense rate: the dense roof is its roof (its points' legend says so)
        which = " / ".join(pats)
        mine = [d for d in dtypes if any(p["dtype"] == d and p["pattern"] in pats for p in sparse_pts)]
        for d in mine or dtypes[:1]:
            peak = peaks[d]
            plateaus.setdefault(peak * rate, []).append(f"{d} {which}")
            ax.plot(x, roof(peak * rate), color=colors[rate], linewidth=2.0,
                    linestyle=SPARSE_ROOF_STYLES[styles % len(SPARSE_ROOF_STYLES)],
                    label=f"sparse roof {which}, {d}: {rate:g}x compute ({peak * rate:,.0f})")
            styles += 1
    if several:
        for y, roof_names in sorted(plateaus.items()):
            ax.text(hi / 1.05, y * 1.04, " = ".join(roof_names), ha="right", va="bottom", fontsize=7.5, color=TEXT)
    by_name = {p["name"]: p for p in dense_pts}
    for p in sparse_pts:
        d = by_name.get(p["name"])
        if d is not None:
            ax.plot([d["ai"], p["ai"]], [d["perf"], p["perf"]], color="#bbbbbb", linewidth=0.6, zorder=1)

    def scatter(pts: list[dict[str, Any]], markers: tuple[str, ...], size: int, color: str, label: str,
                zorder: int, turn: int = 0) -> None:
        for i, d in enumerate(dtypes):
            mine = [p for p in pts if p["dtype"] == d]
            if mine:
                ax.scatter([p["ai"] for p in mine], [p["perf"] for p in mine], s=size,
                           marker=markers[(turn + i) % len(markers)], color=color, zorder=zorder,
                           label=f"{label}, {d}" if len(dtypes) > 1 else label)

    scatter(dense_pts, DENSE_MARKERS, 22, tl.DENSE_COLOR, "layer, dense run", 3)
    on_sparse = [p for p in sparse_pts if p["path"] == "sparse"]
    for g, (rate, pats) in enumerate(groups.items()):
        which = f", {' / '.join(pats)}" if len(groups) > 1 or pats != [pat] else ""
        roof_note = "; its roof: dense" if rate <= 1.0 else ""
        scatter([p for p in on_sparse if p["pattern"] in pats], SPARSE_MARKERS, 26,
                colors.get(rate, tl.SPARSE_COLOR),
                f"layer, {pat} run{which} (sparse path{roof_note})", 4, turn=g * len(dtypes))
    scatter([p for p in sparse_pts if p["path"] != "sparse"], FALLBACK_MARKERS, 26, "#ee8e00",
            f"layer, {pat} run (fell back to dense)", 4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [p["perf"] for p in dense_pts + sparse_pts]
    ax.set_ylim(min(ys + [low]) / 3 if ys else low / 1e3, top * top_rate * 2)
    ax.set_xlabel("arithmetic intensity (dense-equivalent MACs / DRAM byte)")
    ax.set_ylabel(names.axis("achieved MACs / cycle", "dense-equivalent"))
    ax.grid(which="both", color=GRID, linewidth=0.5)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="lower right", frameon=False)
    draw_title(fig, names, f"Roofline \u2014 {names.hardware} \u00b7 {names.workload} \u00b7 dense vs ", y=0.965)
    bw_text = "unlimited" if not np.isfinite(bw) else f"{bw:,.1f} B/cycle"
    fig.text(0.5, 0.905, f"DRAM {bw_text}; sparse layers move compressed A (values + metadata), so they "
             "shift right; grey lines join a layer's dense and sparse points", ha="center", fontsize=8.5,
             color=NOTE)
    fig.text(0.5, 0.87, _left_out_line(dense_result, sparse_result, pat), ha="center", fontsize=8,
             color=NOTE, wrap=True)
    return fig


