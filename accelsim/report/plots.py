"""Timeline, occupancy, roofline and data-movement plots of simulated runs (matplotlib).

Every function takes simulated runs (and the hardware they ran on), or for ``power`` the
:class:`~accelsim.analysis.power.PowerComparison` analysis, and returns a
:class:`~matplotlib.figure.Figure` drawn on the Agg canvas directly: no pyplot, no global state
(rcParams are only touched inside ``rc_context`` when rendering bytes). Stage colours are the
trace's (:mod:`accelsim.report.timeline`). Library code: nothing prints, simulates or writes files;
:func:`figure_files` gives the bytes to write. matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from accelsim.fileio import figure_files as _figure_files
from accelsim.hardware.model import Hardware
from accelsim.report import timeline as tl
from accelsim.report.plot_common import (
    DPI,
    FIGSIZE,
    GRID,
    NOTE,
    TEXT,
    draw_title,
    new_figure,
    per_device_text,
    run_names,
)
from accelsim.report.roofline import OFF_ARRAY, plot_roofline, roofline_left_out, roofline_points, roofline_rates
from accelsim.results import RunResult
from accelsim.workloads.plan import PLAN_LABEL

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from accelsim.analysis.power import PowerComparison

__all__ = ["plot_timeline", "plot_occupancy", "plot_roofline", "plot_traffic", "plot_power", "figure_files",
           "roofline_points", "roofline_left_out", "roofline_rates", "occupancy_series", "OFF_ARRAY",
           "PLOT_KINDS", "FIGSIZE", "DPI"]

PLOT_KINDS = tuple(FIGSIZE)
SVG_HASHSALT = "accelsim-plots"
OCC_WINDOWS = 32  # counter windows per layer in the occupancy plot (as the trace)
TRAFFIC_COLORS = {"a_values": "#4c72b0", "a_metadata": "#dd8452", "b": "#55a868", "c": "#c44e52"}
TRAFFIC_LABELS = {"a_values": "A values", "a_metadata": "A metadata", "b": "B", "c": "C"}
COMM_COLOR = "#b04ac8"  # the collectives of a tensor-parallel system (interconnect row)


def _us(cycles: Any, clock: float) -> Any:
    return tl.cycles_to_us(np.asarray(cycles, dtype=np.float64), clock)


# -- timeline ----------------------------------------------------------------------------------

def plot_timeline(result: RunResult, hw: Hardware, layer: str | None = None,
                  window: tuple[float, float] | None = None) -> Figure:
    """Gantt chart of core 0's stages (load, decode, compute, write-back, vector unit) over time.

    ``layer``: only that layer; ``window``: (start, end) in microseconds of the run's time axis
    (the trace's). Idle array time is shaded by cause (waiting on memory / on metadata decode).
    """
    from matplotlib.patches import Patch

    clock = float(hw.clock_ghz)
    scheds = tl.schedule(result, hw)
    if layer is not None:
        scheds = tl.select(scheds, [layer])
    if window is not None:
        w0, w1 = float(window[0]), float(window[1])
        if not w1 > w0:
            raise ValueError(f"window must be (start, end) with end > start, got {window}")
        scheds = [s for s in scheds if _us(s.end, clock) > w0 and _us(s.start, clock) < w1]
    elif scheds:
        w0, w1 = float(_us(scheds[0].start, clock)), float(_us(scheds[-1].end, clock))
    else:
        w0, w1 = 0.0, 1.0
    names = run_names(result)
    fig = new_figure("timeline")
    ax = fig.add_axes((0.17, 0.2, 0.8, 0.64))
    rows = ["layers", "launch", "load", "gather", "decode", "compute", "writeback", "vector"]
    bars: dict[str, list[tuple[float, float]]] = {r: [] for r in rows}
    idle: dict[str, list[tuple[float, float]]] = {"memory": [], "decode": []}
    tags: dict[str, list[tuple[float, float, int]]] = {r: [] for r in rows}
    layer_boxes = []
    a_stages: set[str] = set()  # what the decode track ran: "decode" (N:M metadata) and / or "decompress"
    multi = 1
    for ls in scheds:
        layer_boxes.append((float(_us(ls.start, clock)), float(_us(ls.end - ls.start, clock)), ls))
        if ls.result.cycles["launch"] > 0:
            bars["launch"].append((float(_us(ls.start, clock)), float(_us(ls.result.cycles["launch"], clock))))
        if ls.result.path == "communication":  # a collective (tensor-parallel system): its own row, no tiles
            bars.setdefault("communication", []).append((float(_us(ls.start, clock)),
                                                          float(_us(ls.end - ls.start, clock))))
            continue
        groups = ls.slot_groups()
        if not groups:  # an op folded into another kernel (e.g. softmax inside fused attention): no tiles
            continue
        runs = groups[0][2]  # slot 0 runs every class
        multi = max(multi, max(c.active for c in ls.classes) if ls.classes else 1)
        for stage in tl.STAGES:
            iv = tl.stage_intervals(ls, stage, runs)
            if not len(iv):
                continue
            s, e = _us(iv.start, clock), _us(iv.end, clock)
            bars[stage].extend(zip(s.tolist(), (e - s).tolist(), strict=True))
            if stage == "decode":
                a_stages.add(tl.a_stage(ls.result))
            tags[stage].extend(zip(s.tolist(), (e - s).tolist(), ls.tiles["tile"][iv.row].tolist(), strict=True))
            if stage in ("compute", "vector"):
                t = ls.tiles[iv.row]
                sm = _us(t["stall_memory"], clock)
                sd = _us(t["stall_decode"] + t["stall_gather"], clock)  # the gather / decode front end
                for start, m, d in zip(s.tolist(), sm.tolist(), sd.tolist(), strict=True):
                    if m > 0:
                        idle["memory"].append((start - d - m, m))
                    if d > 0:
                        idle["decode"].append((start - d, d))
    if bars.get("communication"):
        rows.append("communication")
        tags["communication"] = []
    shown = ["layers"] + [r for r in rows[1:] if bars[r]]
    ypos = {r: len(shown) - 1 - i for i, r in enumerate(shown)}
    height = 0.7
    for r in shown[1:]:
        y = ypos[r] - height / 2
        ax.broken_barh(bars[r], (y, height), facecolors=tl.STAGE_COLORS.get(r, COMM_COLOR), edgecolors="white",
                       linewidths=0.3)
    if "compute" in ypos or "vector" in ypos:
        yc = ypos.get("compute", ypos.get("vector", 0)) - height / 2
        ax.broken_barh(idle["memory"], (yc, height), facecolors="none", edgecolors=tl.STAGE_COLORS["load"],
                       hatch="////", linewidths=0.0)
        ax.broken_barh(idle["decode"], (yc, height), facecolors="none", edgecolors=tl.STAGE_COLORS["decode"],
                       hatch="\\\\\\\\", linewidths=0.0)
    span = w1 - w0
    for r in shown[1:]:
        wide = [x for x in tags[r] if x[1] > 0.035 * span and x[0] + x[1] > w0 and x[0] < w1]
        if len(wide) <= 80:
            for start, dur, tile in wide:
                ax.text(start + dur / 2, ypos[r], f"t{tile}", ha="center", va="center", fontsize=7, color="white",
                        clip_on=True)
    for start, dur, ls in layer_boxes:
        color = tl.PATH_COLORS.get(ls.result.path, "#dddddd")
        ax.broken_barh([(start, dur)], (ypos["layers"] - height / 2, height), facecolors=color,
                       edgecolors="#666666", linewidths=0.6)
        vis0, vis1 = max(start, w0), min(start + dur, w1)
        if vis1 - vis0 > 0.08 * span:
            ax.text((vis0 + vis1) / 2, ypos["layers"], ls.name, ha="center", va="center", fontsize=8,
                    color=TEXT, clip_on=True)
        if len(layer_boxes) > 1:
            ax.axvline(start, color="#999999", linewidth=0.5, zorder=0)
    labels = {"layers": "layers (path)", "launch": "kernel launch", **tl.STAGE_LABELS,
              "communication": "interconnect (collectives)"}
    if multi > 1:
        labels["compute"] = "tensor cores"
    labels["decode"] = {"decode": "metadata decode", "decompress": "decompress (nonzeros into dense tiles)"}.get(
        "".join(sorted(a_stages)), labels["decode"])  # both kinds drawn: the combined name
    front = [word for word, ran in (("gather", bool(bars["gather"])), ("metadata decode", "decode" in a_stages),
                                    ("decompress", "decompress" in a_stages)) if ran]  # what a decode stall waited on
    ax.set_yticks([ypos[r] for r in shown], [labels[r] for r in shown], fontsize=9)
    ax.set_ylim(-0.6, len(shown) - 0.4)
    pad = 0.01 * span
    ax.set_xlim(w0 - pad, w1 + pad)
    ax.set_xlabel("time (\u00b5s)")
    ax.grid(axis="x", color=GRID, linewidth=0.6)
    ax.set_axisbelow(True)
    what = f"layer {layer}" if layer else (f"{w0:.1f}\u2013{w1:.1f} \u00b5s" if window else "whole run")
    footer = draw_title(fig, names, f"Tile timeline \u2014 {names.hardware} \u00b7 {names.workload} \u00b7 ",
                        f" \u2014 {what}", y=0.985)
    sub = (f"core 0 of {multi} active (identical cores run the same timeline)" if multi > 1
           else "single core") + f"; clock {clock:g} GHz; idle array time hatched by cause"
    if layer is not None and scheds:
        k = scheds[0].result
        c = k.cycles
        sub += (f"\n{k.path}" + (f" {k.pattern_executed}" if k.pattern_executed else "")
                + f", {c['total']:,} cycles: compute {c['compute']:,}, memory stall {c['stall_memory']:,}, "
                f"decode stall {c['stall_decode']:,}, launch {c['launch']:,}; binding {k.binding}")
    fig.text(0.5, 0.935, sub, ha="center", va="top", fontsize=9, color=NOTE)
    handles = [Patch(facecolor=tl.STAGE_COLORS.get(r, COMM_COLOR), label=labels[r]) for r in shown[1:]]
    if idle["memory"]:
        handles.append(Patch(facecolor="white", edgecolor=tl.STAGE_COLORS["load"], hatch="////",
                             label="array idle: waiting on memory"))
    if idle["decode"]:
        handles.append(Patch(facecolor="white", edgecolor=tl.STAGE_COLORS["decode"], hatch="\\\\\\\\",
                             label="array idle: waiting on " + (" / ".join(front) or "decode")))
    paths = sorted({b[2].result.path for b in layer_boxes})
    handles += [Patch(facecolor=tl.PATH_COLORS.get(p, "#dddddd"), edgecolor="#666666", label=f"{p} layer")
                for p in paths]
    fig.legend(handles=handles, loc="lower center", ncol=min(5, len(handles)), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.03 if footer else 0.0))
    return fig


# -- occupancy ---------------------------------------------------------------------------------

def occupancy_series(result: RunResult, hw: Hardware, windows: int = OCC_WINDOWS) -> dict[str, np.ndarray]:
    """Window edges (µs) and per-window counters of a whole run (``timeline.layer_counters``)."""
    edges: list[np.ndarray] = []
    vals: dict[str, list[np.ndarray]] = {k: [] for k in tl.COUNTERS}
    for ls in tl.schedule(result, hw):
        e, c = tl.layer_counters(ls, hw, tl.default_windows(ls, windows))
        edges.append(e[:-1])
        for k in tl.COUNTERS:
            vals[k].append(c[k])
    clock = float(hw.clock_ghz)
    total = float(result.total_cycles)
    out = {"t_us": _us(np.r_[np.concatenate(edges) if edges else np.zeros(0), total], clock)}
    for k in tl.COUNTERS:
        v = np.concatenate(vals[k]) if vals[k] else np.zeros(0)
        out[k] = np.r_[v, v[-1] if len(v) else 0.0]
    return out


def plot_occupancy(dense_result: RunResult, sparse_result: RunResult, hw: Hardware) -> Figure:
    """Array occupancy and DRAM bandwidth over time, dense and sparse on the same axes."""
    names = run_names(sparse_result)
    pat = names.label
    fig = new_figure("occupancy")
    ax1 = fig.add_axes((0.08, 0.54, 0.88, 0.33))
    ax2 = fig.add_axes((0.08, 0.12, 0.88, 0.33), sharex=ax1)
    clock = float(hw.clock_ghz)
    for res, label, color in ((dense_result, "dense", tl.DENSE_COLOR), (sparse_result, pat, tl.SPARSE_COLOR)):
        s = occupancy_series(res, hw)
        lat = res.totals["latency_us"]
        ax1.step(s["t_us"], s["array_occupancy_pct"], where="post", color=color, linewidth=1.1,
                 label=f"{label} ({lat:,.1f} \u00b5s)")
        if s["vector_occupancy_pct"].any():
            ax1.step(s["t_us"], s["vector_occupancy_pct"], where="post", color=color, linewidth=0.8,
                     linestyle=":", label=f"{label}: vector unit")
        ax2.step(s["t_us"], s["dram_bytes_per_cycle"] * clock, where="post", color=color, linewidth=1.1,
                 label=label)
    peak = hw.dram_bytes_per_cycle() * clock
    if np.isfinite(peak):
        ax2.axhline(peak, color="#444444", linestyle="--", linewidth=0.9, label=f"DRAM peak {peak:,.0f} GB/s")
    ax1.set_ylim(0, 105)
    ax1.set_ylabel("array occupancy (%)")
    ax2.set_ylabel(names.axis("DRAM bandwidth", "GB/s"))
    ax2.set_ylim(bottom=0)
    ax2.set_xlabel("time (\u00b5s)")
    ax1.tick_params(labelbottom=False)
    for ax in (ax1, ax2):
        ax.grid(color=GRID, linewidth=0.6)
        ax.set_axisbelow(True)
        ax.legend(fontsize=8, loc="upper right", frameon=False)
    draw_title(fig, names, f"Occupancy over time \u2014 {names.hardware} \u00b7 {names.workload} \u00b7 dense vs ",
               y=0.965)
    fig.text(0.5, 0.905, "share of array (all cores) busy and DRAM bytes moved, averaged per window "
             f"({OCC_WINDOWS} windows per layer)", ha="center", fontsize=9, color=NOTE)
    return fig


# -- traffic -----------------------------------------------------------------------------------

def plot_traffic(dense_result: RunResult, sparse_result: RunResult) -> Figure:
    """Bytes moved per memory level, stacked by tensor (A values, A metadata, B, C), dense vs sparse."""
    from matplotlib.patches import Patch

    names = run_names(sparse_result)
    pat = names.label
    fig = new_figure("traffic")
    ax = fig.add_axes((0.11, 0.1, 0.62, 0.77))
    td, ts = dense_result.totals["bytes"], sparse_result.totals["bytes"]
    levels = [lvl for lvl in ("dram", "l2", "sram") if lvl in td or lvl in ts]
    width = 0.36
    for i, lvl in enumerate(levels):
        for j, (tot, label) in enumerate(((td.get(lvl, {}), "dense"), (ts.get(lvl, {}), pat))):
            x = i + (j - 0.5) * (width + 0.04)
            bottom = 0.0
            for key in TRAFFIC_COLORS:
                v = tot.get(key, 0) / 1e6
                ax.bar(x, v, width, bottom=bottom, color=TRAFFIC_COLORS[key], edgecolor="white", linewidth=0.5)
                bottom += v
            ax.text(x, bottom, f"{label}\n{bottom:,.1f} MB", ha="center", va="bottom", fontsize=8, color=TEXT)
    ticks = []
    for lvl in levels:
        d_sum, s_sum = sum(td.get(lvl, {}).values()), sum(ts.get(lvl, {}).values())
        ticks.append(lvl.upper() + (f"\n{pat}: {s_sum / d_sum:.2f}x of dense" if d_sum else ""))
    ax.set_xticks(range(len(levels)), ticks)
    ax.set_ylabel(names.axis("bytes moved", "MB"))
    top = max([sum(t.get(lvl, {}).values()) for t in (td, ts) for lvl in levels] + [1]) / 1e6
    ax.set_ylim(0, top * 1.18)
    ax.grid(axis="y", color=GRID, linewidth=0.6)
    ax.set_axisbelow(True)
    handles = [Patch(facecolor=TRAFFIC_COLORS[k], label=TRAFFIC_LABELS[k]) for k in reversed(TRAFFIC_COLORS)]
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(0.75, 0.5), fontsize=9, frameon=False)
    draw_title(fig, names, f"Data movement \u2014 {names.hardware} \u00b7 {names.workload} \u00b7 dense vs ",
               y=0.965)
    fig.text(0.42, 0.905, f"left bar dense, right bar {pat}; SRAM = bytes the array reads from on-chip buffers",
             ha="center", fontsize=8.5, color=NOTE)
    return fig


# -- power -----------------------------------------------------------------------------------

def plot_power(power: PowerComparison) -> Figure:
    """Power over time, dense vs sparse, with the power cap's clock when the config has one."""
    fig = new_figure("power")
    ax = fig.add_axes((0.07, 0.36, 0.9, 0.52))
    axc = fig.add_axes((0.07, 0.09, 0.9, 0.17), sharex=ax)
    colours = {"dense": "#6b8cae"}
    cap_w = power.tdp_w
    for i, prof in enumerate(power.profiles):
        label = prof.label
        colour = colours.get(label, "#2ca25f" if i else "#6b8cae")
        tr = prof.trace
        t_ms = np.concatenate([tr.t_s, [tr.t_s[-1] + tr.width_s[-1]]]) * 1e3
        unc = prof.uncapped
        ax.stairs(tr.power_w, t_ms, color=colour, lw=1.4,
                  label=f"{label}: avg {unc.avg_power_w:.0f} W, peak {unc.peak_power_w:.0f} W")
        capped = prof.capped
        if capped.capped:
            widths = tr.width_s / capped.clock_fraction
            edges = np.concatenate([[0.0], np.cumsum(widths)]) * 1e3
            axc.stairs(capped.clock_fraction, edges, color=colour, lw=1.2,
                       label=f"{label}, transient: {capped.latency_s * 1e3:.2f} ms vs "
                             f"{unc.latency_s * 1e3:.2f} ms uncapped")
        steady = prof.steady
        if cap_w is not None and steady is not None and power.clock_ghz:
            axc.axhline(steady.effective_clock_ghz / power.clock_ghz, color=colour, ls=":", lw=1.4,
                        label=f"{label}, steady: {steady.effective_clock_ghz:.3f} GHz, {steady.latency_s * 1e3:.2f} "
                              f"ms, capped layers: {steady.power_capped_layers}")
    if cap_w is not None:
        ax.axhline(cap_w, color="#d62728", ls="--", lw=1, label=f"cap {cap_w:g} W")
    per_device = per_device_text(power.devices)
    ax.set_ylabel(f"power {per_device} (W)" if per_device else "power (W)")
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.grid(True, color="#e0e0e0", lw=0.6)
    axc.set_ylabel("clock")
    axc.set_xlabel("time (ms)")
    axc.set_ylim(0, 1.05)
    if cap_w is not None:
        axc.legend(loc="lower right", fontsize=7, frameon=False)
        fig.text(0.07, 0.005, "transient: the cap's governor from a cold start over this run; steady (dotted): each "
                 "kernel at the clock it settles at under the cap, what run, sweep, serve and report use",
                 fontsize=7, color=NOTE)
    fig.suptitle(f"Power over time: {power.workload} on {power.hardware}, dense vs "
                 f"{power.sparsity or PLAN_LABEL}" + (f" (x{power.repeats})" if power.repeats > 1 else "")
                 + (f", {per_device}" if per_device else ""), fontsize=12)
    return fig


# -- bytes -------------------------------------------------------------------------------------

def figure_files(fig: Figure, out_base: str | os.PathLike[str]) -> dict[Path, bytes]:
    """``{<out_base>.png: bytes, <out_base>.svg: bytes}`` (deterministic) for :func:`accelsim.fileio.write_all`."""
    return _figure_files(fig, out_base, ("png", "svg"), DPI)
