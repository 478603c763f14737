"""Plots of a sweep's results: Pareto fronts, heatmaps with the binding constraint, where sparsity pays.

Input is a sweep's table (:class:`SweepRows`: what :func:`accelsim.sweep.load_results` returns); this
module renders it and computes nothing of the sweep. Library code: nothing here prints or exits;
figures are :class:`~matplotlib.figure.Figure` objects drawn on the Agg canvas directly (no pyplot,
no global state).

- **Pareto** (per workload setting): latency against a cost proxy, every feasible point faint,
  and per sparsity pattern the Pareto front (no other point of that pattern is both cheaper and
  faster). The cost is the spec's ``cost`` expression over result columns (dotted paths with
  ``.`` written ``_``; ``pes`` = peak MACs/cycle), default ``pes * sram_bytes`` (PEs x SRAM bytes).
- **Heatmaps** (per workload setting; needs two ``grid`` parameters): latency over two grid parameters
  (default: the first two; ``y`` and ``x`` choose), one panel per sparsity pattern, each cell marked
  with the model's binding constraint (C compute, M memory, D decode, L launch: the resource whose
  layers take most of the time). Other grid parameters are held at one value each: ``at`` picks it,
  else their first listed value; the held values are in every heatmap's title. Random points are not
  used.
- **Where sparsity pays**: speedup vs dense of each sparse pattern over the same two parameters,
  green above 1x, red below.

Every chart marks the rows over the device's memory (``fits_memory`` False; :mod:`.sweep_marks` says which):
hollow and off the fronts on the Pareto plots, hatched ``//`` on the heatmaps, and where sparsity pays a row
that fits but whose dense baseline does not hatched ``..``; its title counts them (or says that results
without these columns were not checked).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from accelsim.errors import AccelsimError
from accelsim.fileio import figure_bytes, write_atomic
from accelsim.report.sweep_marks import DENSE_OVER, OVER, MemoryFit, memory_fit, pareto_data, pareto_front
from accelsim.textsafe import speedup_text

__all__ = ["MemoryFit", "SweepRows", "choose_slice", "heatmap_figure", "memory_fit", "pareto_figure", "pareto_front",
           "sparsity_pays_figure", "sweep_figures", "sweep_plot"]

DPI = 110
MAX_SETTINGS = 6
BINDING_MARK = {"compute": "C", "memory": "M", "decode": "D", "launch": "L", "decompress": "X"}
PATTERN_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
PATTERN_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
PATTERN_LINES = ["-", "--", ":", "-.", "-", "--", ":", "-."]
DEFAULT_COST = "peak_macs_per_cycle * sram_bytes"
DEFAULT_COST_LABEL = "PEs x SRAM bytes"


class SweepRows(Protocol):
    """What the plots read of a sweep's table (:class:`accelsim.sweep.SweepTable` is one): the columns,
    the rows, meta.json's ``sweep`` section (grid, set keys, cost), the file it came from, and row queries."""

    @property
    def columns(self) -> Sequence[str]: ...

    @property
    def rows(self) -> Sequence[Sequence[Any]]: ...

    @property
    def sweep(self) -> Mapping[str, Any]: ...

    @property
    def source(self) -> str: ...

    @property
    def set_keys(self) -> list[str]: ...

    @property
    def grid_keys(self) -> list[str]: ...

    def get(self, row: Sequence[Any], col: str) -> Any: ...

    def settings(self) -> list[tuple[Any, ...]]: ...

    def setting(self, row: Sequence[Any]) -> tuple[Any, ...]: ...

    def sparsities(self) -> list[str]: ...

    def cost_values(self, expr: str | None = None) -> list[float | None]: ...


def setting_label(table: SweepRows, setting: tuple[Any, ...]) -> str:
    """'workload (param value, ...)' of one workload setting."""
    params = ", ".join(f"{k} {_num(v)}" for k, v in zip(table.set_keys, setting[1:], strict=True) if v is not None)
    return f"{setting[0]} ({params})" if params else str(setting[0])


def setting_slug(table: SweepRows, setting: tuple[Any, ...]) -> str:
    """One workload setting as a file-name part: workload_param1value1..."""
    parts = [str(setting[0])] + [f"{k}{_num(v)}" for k, v in zip(table.set_keys, setting[1:], strict=True)
                                 if v is not None]
    return re.sub(r"[^0-9A-Za-z_.-]+", "-", "_".join(parts))


def check_cells(table: SweepRows) -> None:
    """The cells the plots compute with are numbers (or empty) and feasible is True/False (else an
    AccelsimError naming the table's file and line)."""
    cols = list(table.columns)
    numeric = [c for c in ("latency_us", "speedup_vs_dense", "energy_j", "sram_bytes", "peak_macs_per_cycle")
               if c in cols]
    fi = cols.index("feasible")
    fits = [cols.index(c) for c in ("fits_memory", "dense_fits_memory") if c in cols]
    for n, r in enumerate(table.rows, start=2):
        if not isinstance(r[fi], bool):
            raise AccelsimError(f"{table.source}: line {n}: feasible: expected True or False, got {r[fi]!r}")
        for i in fits:
            if r[i] is not None and not isinstance(r[i], bool):
                raise AccelsimError(f"{table.source}: line {n}: {cols[i]}: expected True, False or empty, got "
                                    f"{r[i]!r}")
        for c in numeric:
            v = r[cols.index(c)]
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise AccelsimError(f"{table.source}: line {n}: {c}: expected a number, got {v!r}")


def _num(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer():
            return f"{int(v):,}"
        return f"{v:.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _short_bytes(v: Any) -> str:
    if isinstance(v, int | float) and not isinstance(v, bool) and v >= 1024:
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if v >= size:
                q = v / size
                return f"{q:.3g} {unit}"
    return _num(v)


def _value_label(path: str, v: Any) -> str:
    return _short_bytes(v) if path.endswith("bytes") else _num(v)


# ------------------------------------------------------------------------------------------- pareto

def pareto_figure(table: SweepRows, setting: tuple[Any, ...], cost: list[float | None], cost_label: str,
                  title: str = "", fit: MemoryFit | None = None) -> Figure:
    """Latency vs ``cost`` of one workload setting, the Pareto front per pattern over the rows that fit the device's
    memory; rows over it hollow, and the caption (``sweep_marks.ParetoData.note``) in the title."""
    fit = fit if fit is not None else memory_fit(table)
    data = pareto_data(table, table.sparsities(), lambda r: table.setting(r) == setting, cost, fit)
    fig = Figure(figsize=(8.5, 5.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    xs_all: list[float] = []
    ys_all: list[float] = []
    order = {sp: j for j, sp in enumerate(table.sparsities())}
    for ser in data.series:
        j = order[ser.sparsity]
        color = PATTERN_COLORS[j % len(PATTERN_COLORS)]
        marker = PATTERN_MARKERS[j % len(PATTERN_MARKERS)]
        pts, front = ser.fits, ser.front
        xs_all += [p[0] for p in pts + ser.over]
        ys_all += [p[1] for p in pts + ser.over]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color=color, marker=marker, alpha=0.25,
                       linewidths=0)
            ax.step([p[0] for p in front], [p[1] for p in front], where="post", color=color, linewidth=1.5,
                    linestyle=PATTERN_LINES[j % len(PATTERN_LINES)])
            ax.scatter([p[0] for p in front], [p[1] for p in front], s=34, color=color, marker=marker,
                       edgecolors="black", linewidths=0.5, label=f"{ser.sparsity} (front: {len(front)} of {len(pts)})",
                       zorder=3)
        if ser.over:
            ax.scatter([p[0] for p in ser.over], [p[1] for p in ser.over], s=30, marker=marker, facecolors="none",
                       edgecolors=color, linewidths=0.9, zorder=2,
                       label=f"{ser.sparsity}: {len(ser.over)} {OVER} (hollow, off the front)")
    if xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) > 20:
        ax.set_xscale("log")
    if ys_all and min(ys_all) > 0 and max(ys_all) / min(ys_all) > 20:
        ax.set_yscale("log")
    ax.set_xlabel(f"cost: {cost_label}")
    ax.set_ylabel("latency (us, lower is better)")
    ax.grid(True, which="both", color="#e0e0e0", linewidth=0.5)
    ax.legend(title="sparsity", fontsize=8, title_fontsize=8, loc="best")
    head = title or f"{setting_label(table, setting)}: latency vs cost, Pareto front per pattern (lower left is better)"
    ax.set_title(head + (f"\n{_wrap(data.note, _chars(fig))}" if data.note else ""), fontsize=10)
    return fig


def _chars(fig: Figure) -> int:
    """About how many characters of a 10-point title fit across ``fig``."""
    return max(40, int(fig.get_figwidth() * 12))


def _wrap(text: str, width: int = 100) -> str:
    """``text`` broken into lines of at most about ``width`` characters at spaces."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ heatmaps

class Slice:
    """Which two grid parameters a heatmap shows and the value each other grid parameter is held at."""

    def __init__(self, ykey: str, xkey: str, held: dict[str, Any], chosen: set[str]) -> None:
        self.ykey = ykey
        self.xkey = xkey
        self.held = held  # grid key -> the table's (resolved) value
        self.chosen = chosen  # keys held by the caller's choice (the rest: first listed value)

    def text(self) -> str:
        """'held: k=v (first value), ...', or '' when the grid has only the two axes."""
        parts = [f"{k}={_value_label(k, v)}" + ("" if k in self.chosen else " (first value)")
                 for k, v in self.held.items()]
        return "held: " + ", ".join(parts) if parts else ""


def _matches(listed: Any, text: str) -> bool:
    if str(listed) == text:
        return True
    try:
        return isinstance(listed, int | float) and not isinstance(listed, bool) and float(text) == float(listed)
    except ValueError:
        return False


def choose_slice(table: SweepRows, x: str | None = None, y: str | None = None,
                 at: dict[str, str] | None = None) -> Slice | None:
    """The heatmap axes and held values; None when the grid has fewer than two parameters and none is
    asked for. Axes not given are the first grid parameters not held by ``at``. Unknown keys and values
    not in the grid raise AccelsimError listing the choices."""
    grid = table.sweep.get("grid") or {}
    keys = table.grid_keys
    choices = ", ".join(keys) or "none"
    for flag, key in (("--x", x), ("--y", y), *(("--at", k) for k in (at or {}))):
        if key is not None and key not in keys:
            raise AccelsimError(f"sweep-plot {flag} {key}: not a grid parameter of this sweep (grid: {choices})")
    if len(keys) < 2:
        if x or y or at:
            raise AccelsimError(f"sweep-plot: heatmaps need two grid parameters; this sweep's grid has: {choices}")
        return None
    rest = [k for k in keys if k not in (x, y) and k not in (at or {})]  # default axes: keys not held
    if (y is None or x is None) and len(rest) < (y is None) + (x is None):
        raise AccelsimError(f"sweep-plot: --at holds {', '.join(at or {})}, which leaves no two grid parameters "
                            f"for the heatmap's axes (grid: {choices})")
    ykey = y or rest.pop(0)
    xkey = x or rest.pop(0)
    if xkey == ykey:
        raise AccelsimError(f"sweep-plot --x and --y are both {xkey}: choose two different grid parameters "
                            f"(grid: {choices})")
    held: dict[str, Any] = {}
    for key, text in (at or {}).items():
        if key in (xkey, ykey):
            raise AccelsimError(f"sweep-plot --at {key}: it is an axis of the heatmap (--x {xkey}, --y {ykey}); "
                                "hold another grid parameter")
        listed = next((v for v in grid[key] if _matches(v, text)), None)
        if listed is None:
            raise AccelsimError(f"sweep-plot --at {key}={text}: not a value of the grid (values: "
                                f"{', '.join(str(v) for v in grid[key])})")
        held[key] = _first_resolved(table, key, [listed])
    order = {k: _first_resolved(table, k, grid[k]) for k in keys if k not in (xkey, ykey)}
    return Slice(ykey, xkey, {k: held.get(k, v) for k, v in order.items()}, set(held))


def _grid_cells(table: SweepRows, setting: tuple[Any, ...], sp: str, sl: Slice
                ) -> tuple[list[Any], list[Any], dict[tuple[Any, Any], int]]:
    """The y values, x values and {(y, x): row index} of one panel."""
    ykey, xkey, fixed = sl.ykey, sl.xkey, sl.held
    cells: dict[tuple[Any, Any], int] = {}
    for i, r in enumerate(table.rows):
        if table.get(r, "origin") != "grid" or table.setting(r) != setting or table.get(r, "sparsity") != sp:
            continue
        if any(table.get(r, k) != v for k, v in fixed.items()):
            continue
        cells.setdefault((table.get(r, ykey), table.get(r, xkey)), i)
    ys = sorted({k[0] for k in cells}, key=_sort_key)
    xs = sorted({k[1] for k in cells}, key=_sort_key)
    return ys, xs, cells


def _first_resolved(table: SweepRows, key: str, values: list[Any]) -> Any:
    """The table's value for the first listed grid value (the table holds resolved values, e.g. 100 -> 100.0)."""
    first = values[0]
    for r in table.rows:
        v = table.get(r, key)
        if table.get(r, "origin") == "grid" and (v == first or str(v) == str(first)):
            return v
    return first


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, int | float) and not isinstance(v, bool) else (1, str(v))


def _layout(n: int) -> tuple[int, int]:
    """(rows, cols) of panels: at most 3 a row, 4 as 2 x 2."""
    cols = 2 if n == 4 else min(n, 3)
    return math.ceil(n / cols), cols


def _panel_figure(n: int) -> tuple[Figure, list[Any]]:
    rows, cols = _layout(n)
    fig = Figure(figsize=(4.4 * cols + 1.4, 3.6 * rows + 0.7), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(n)]


HATCH_OVER = "//"  # a heatmap cell whose row is over the device's memory
HATCH_DENSE_OVER = ".."  # ... whose dense baseline is (speedup charts)


def _heat_panel(ax: Any, table: SweepRows, ys: list[Any], xs: list[Any], cells: dict[tuple[Any, Any], int],
                value: str, norm: Any, cmap: str, text: Callable[[Sequence[Any]], str], ykey: str, xkey: str,
                marks: dict[int, tuple[str, str]], ylabel: bool = True) -> Any:
    """One panel; ``marks``: {row index: (hatch, label line)} of the cells to hatch (memory)."""
    data = np.full((len(ys), len(xs)), np.nan)
    for (y, x), n in cells.items():
        r = table.rows[n]
        v = table.get(r, value)
        if table.get(r, "feasible") and isinstance(v, int | float):
            data[ys.index(y), xs.index(x)] = v
    im = ax.imshow(np.ma.masked_invalid(data), origin="lower", aspect="auto", cmap=cmap, norm=norm)
    ax.set_facecolor("#bbbbbb")
    for (y, x), n in cells.items():
        r = table.rows[n]
        i, j = ys.index(y), xs.index(x)
        label = text(r) if table.get(r, "feasible") else "infeasible"
        color = "black"
        if not np.isnan(data[i, j]):
            red, green, blue, _ = im.cmap(im.norm(data[i, j]))
            color = "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"
        box = None
        if n in marks:  # hatched, its label on a white box
            hatch, line = marks[n]
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=hatch, edgecolor=color,
                                   linewidth=0, gid=f"row{n}"))
            label += f"\n{line}"
            color, box = "black", {"facecolor": "white", "alpha": 0.85, "linewidth": 0, "pad": 1.5}
        ax.text(j, i, label, ha="center", va="center", fontsize=7, color=color, bbox=box)
    ax.set_xticks(range(len(xs)), [_value_label(xkey, v) for v in xs], fontsize=7, rotation=30)
    ax.set_yticks(range(len(ys)), [_value_label(ykey, v) for v in ys], fontsize=7)
    ax.set_xlabel(xkey, fontsize=8)
    if ylabel:
        ax.set_ylabel(ykey, fontsize=8)
    return im


def _panels(table: SweepRows, setting: tuple[Any, ...], sps: list[Any], sl: Slice,
            metric: str) -> tuple[list[tuple], list[float], list[int]]:
    """Grid panels (one per sparsity that has cells), the feasible values of ``metric`` in them, the rows shown."""
    panels = [(sp, *_grid_cells(table, setting, sp, sl)) for sp in sps]
    panels = [p for p in panels if p[3]]
    shown = [n for _, _, _, cells in panels for n in cells.values()]
    vals = [table.get(table.rows[n], metric) for n in shown
            if table.get(table.rows[n], "feasible") and table.get(table.rows[n], metric)]
    return panels, vals, shown


def _as_slice(table: SweepRows, ykey: str | Slice, xkey: str | None) -> Slice:
    if isinstance(ykey, Slice):
        return ykey
    sl = choose_slice(table, x=xkey, y=ykey)
    assert sl is not None
    return sl


def _marks(fit: MemoryFit, speedup: bool) -> dict[int, tuple[str, str]]:
    """{row index: (hatch, label line)}: rows over memory, and (``speedup``) rows whose dense baseline is."""
    marks = {n: (HATCH_OVER, OVER) for n in fit.over}
    if speedup:
        marks.update({n: (HATCH_DENSE_OVER, DENSE_OVER) for n in fit.dense_over})
    return marks


def heatmap_figure(table: SweepRows, setting: tuple[Any, ...], ykey: str | Slice,
                   xkey: str | None = None, fit: MemoryFit | None = None) -> Figure | None:
    """Latency over two grid parameters (a :class:`Slice`, or the y and x keys with other grid parameters
    at their first value), a panel per sparsity, the binding constraint in each cell; cells over the device's
    memory hatched, and counted in the title."""
    sl = _as_slice(table, ykey, xkey)
    fit = fit if fit is not None else memory_fit(table)
    ykey, xkey = sl.ykey, sl.xkey
    panels, vals, shown = _panels(table, setting, table.sparsities(), sl, "latency_us")
    if not vals:
        return None
    norm = LogNorm(min(vals), max(vals)) if min(vals) > 0 and max(vals) > min(vals) else Normalize(min(vals),
                                                                                                 max(vals) + 1e-9)
    fig, axes = _panel_figure(len(panels))
    im = None
    cols = _layout(len(panels))[1]
    marks = _marks(fit, speedup=False)
    for i, (ax, (sp, ys, xs, cells)) in enumerate(zip(axes, panels, strict=True)):
        im = _heat_panel(ax, table, ys, xs, cells, "latency_us", norm, "viridis_r",
                         lambda r: f"{BINDING_MARK.get(table.get(r, 'binding'), '?')}\n"
                                   f"{_num(round(table.get(r, 'latency_us')))}", ykey, xkey, marks, i % cols == 0)
        ax.set_title(f"{sp}", fontsize=9)
    assert im is not None  # at least one panel: it has values
    fig.colorbar(im, ax=axes, label="latency (us)", shrink=0.85)
    held = f"\n{sl.text()}" if sl.held else ""
    note = fit.note(shown)
    fig.suptitle(f"{setting_label(table, setting)}: latency; binding C compute, M memory, D decode, L launch{held}"
                 + (f"\n{_wrap(note, _chars(fig))}" if note else ""), fontsize=10)
    return fig


def sparsity_pays_figure(table: SweepRows, setting: tuple[Any, ...], ykey: str | Slice,
                         xkey: str | None = None, fit: MemoryFit | None = None) -> Figure | None:
    """Speedup of each sparse pattern over dense on the same hardware, over two grid parameters; cells over the
    device's memory hatched //, cells that fit but whose dense baseline does not hatched .., both counted in the
    title."""
    sl = _as_slice(table, ykey, xkey)
    fit = fit if fit is not None else memory_fit(table)
    ykey, xkey = sl.ykey, sl.xkey
    sps = [sp for sp in table.sparsities() if sp != "dense"]
    panels, vals, shown = _panels(table, setting, sps, sl, "speedup_vs_dense")
    if not vals:
        return None
    span = max(max(vals), 1 / min(vals), 1.01)  # symmetric in ratio: 0.8x is as red as 1.25x is green
    norm = TwoSlopeNorm(vcenter=1.0, vmin=1 / span, vmax=span)
    fig, axes = _panel_figure(len(panels))
    im = None
    cols = _layout(len(panels))[1]
    marks = _marks(fit, speedup=True)
    for i, (ax, (sp, ys, xs, cells)) in enumerate(zip(axes, panels, strict=True)):
        im = _heat_panel(ax, table, ys, xs, cells, "speedup_vs_dense", norm, "RdYlGn",
                         lambda r: speedup_text(table.get(r, 'speedup_vs_dense')), ykey, xkey, marks, i % cols == 0)
        ax.set_title(f"{sp} vs dense", fontsize=9)
    assert im is not None  # at least one panel: it has values
    fig.colorbar(im, ax=axes, label="speedup vs dense (same hardware)", shrink=0.85)
    held = f"\n{sl.text()}" if sl.held else ""
    note = fit.note(shown, speedup=True)
    fig.suptitle(f"{setting_label(table, setting)}: where does sparsity pay?{held}"
                 + (f"\n{_wrap(note, _chars(fig))}" if note else ""), fontsize=10)
    return fig


# ------------------------------------------------------------------------------------------- files

def _save(fig: Figure, path: Path) -> Path:
    return write_atomic(path, figure_bytes(fig, "png", DPI))


def sweep_figures(table: SweepRows, cost: str | None = None, sl: Slice | None = None) -> list[tuple[str, Figure]]:
    """(file stem, Figure) for every plot the table supports; heatmaps over ``sl`` (default: the first
    two grid parameters, others at their first value)."""
    return list(_iter_figures(table, cost, sl))


def _iter_figures(table: SweepRows, cost: str | None, sl: Slice | None) -> Iterator[tuple[str, Figure]]:
    expr = cost or table.sweep.get("cost") or DEFAULT_COST
    label = DEFAULT_COST_LABEL if expr == DEFAULT_COST else expr
    costs = table.cost_values(expr)
    energies = _energies(table)
    fit = memory_fit(table)
    if sl is None:
        sl = choose_slice(table)
    for setting in table.settings()[:MAX_SETTINGS]:
        slug = setting_slug(table, setting)
        yield f"pareto_{slug}", pareto_figure(table, setting, costs, label, fit=fit)
        if energies is not None:
            yield f"pareto_energy_{slug}", pareto_figure(
                table, setting, energies, "energy per inference (mJ)",
                title=f"{setting_label(table, setting)}: latency vs energy, Pareto front per pattern (lower left is "
                      "better)", fit=fit)
        if sl is not None:
            heat = heatmap_figure(table, setting, sl, fit=fit)
            if heat is not None:
                yield f"heatmap_{slug}", heat
            pays = sparsity_pays_figure(table, setting, sl, fit=fit)
            if pays is not None:
                yield f"sparsity_pays_{slug}", pays


def memory_summary(fit: MemoryFit, rows: int) -> str:
    """One line on the whole table's memory fit, for the notes ``sweep_plot`` returns."""
    if not fit.checked:
        return ("memory: not checked (no fits_memory column: results of a sweep before format 4); rows over "
                "dram.capacity_bytes are not marked and may sit on a Pareto front")
    parts = [f"{len(fit.over):,} of {rows:,} rows exceed dram.capacity_bytes (hollow on the Pareto plots and off "
             "their fronts, hatched // on the heatmaps)" if fit.over else
             f"none of the {fit.checked_rows:,} rows checked exceeds dram.capacity_bytes"]
    if fit.dense_over:
        parts.append(f"{len(fit.dense_over):,} fit but their dense baseline does not (hatched .. where sparsity pays)")
    if fit.unchecked:
        parts.append(f"{len(fit.unchecked):,} not checked (no dram.capacity_bytes)")
    return "memory: " + "; ".join(parts)


def energy_summary(table: SweepRows) -> str | None:
    """One line on the feasible rows without energy figures, for the notes ``sweep_plot`` returns (None: every one
    has them): the energy Pareto plot leaves them off, or is not drawn at all (the sweep's meta.json warnings
    say why a row has none)."""
    energies = _energies(table)
    if energies is None:
        return ("energy: not modelled (no row has energy_j: no energy figures for these configs / dtypes, see the "
                "sweep's meta.json warnings), so no energy Pareto plot")
    feasible = "feasible" in table.columns
    missing = sum(e is None and (not feasible or table.get(r, "feasible") is not False)
                  for r, e in zip(table.rows, energies, strict=True))
    return (f"energy: {missing:,} feasible row(s) of {len(energies):,} have no energy_j (no energy figures): off "
            "the energy Pareto plot" if missing else None)


def _energies(table: SweepRows) -> list[float | None] | None:
    if "energy_j" not in table.columns:
        return None
    energies = [None if table.get(r, "energy_j") is None else table.get(r, "energy_j") * 1e3 for r in table.rows]
    return None if all(e is None for e in energies) else energies


def _expected_figures(table: SweepRows, sl: Slice | None) -> int:
    per = 1 + (_energies(table) is not None) + (2 if sl is not None else 0)
    return per * len(table.settings()[:MAX_SETTINGS])


def sweep_plot(table: SweepRows, out_dir: str | os.PathLike[str],
               cost: str | None = None, *, x: str | None = None, y: str | None = None,
               at: dict[str, str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> tuple[list[Path], list[str]]:
    """Write the sweep's plots as PNG files into ``out_dir``; return their paths and notes on the slice.

    ``cost``: an area-model expression over result columns (overrides the spec's ``cost``). ``x``, ``y``:
    the heatmaps' grid parameters; ``at``: {grid parameter: value} to hold the others at (default: their
    first value; either way the notes and the titles say which). ``progress(done, total)`` per figure.
    The cells the plots use are checked first (:func:`check_cells`). The last two notes say how many rows exceed
    the device's memory and how the plots draw them (or that these results were not checked), then, where some
    feasible rows have no energy figures, how many (:func:`energy_summary`; none at all: no energy Pareto plot).
    """
    check_cells(table)
    sl = choose_slice(table, x=x, y=y, at=at)
    if not table.rows:
        return [], []
    notes = []
    if sl is not None:
        notes.append(f"heatmaps: {sl.ykey} (y) by {sl.xkey} (x)" + (f"; {sl.text()}" if sl.held else "")
                     + " (choose with --x, --y, --at KEY=VALUE)")
        if all(sp == "dense" for sp in table.sparsities()):
            notes.append("where sparsity pays: not drawn, the sweep has no sparse pattern to compare with dense")
    else:  # the Pareto plots only: say why the others are missing
        n = len(table.grid_keys)
        notes.append(f"heatmaps and where sparsity pays: not drawn, they need two grid parameters; this sweep's grid "
                     f"has {n}{': ' + table.grid_keys[0] if n == 1 else ''}")
    notes.append(memory_summary(memory_fit(table), len(table.rows)))
    energy = energy_summary(table)
    if energy is not None:
        notes.append(energy)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        total = _expected_figures(table, sl)
        paths = []
        for stem, fig in _iter_figures(table, cost, sl):
            paths.append(_save(fig, out / f"{stem}.png"))
            if progress is not None:
                progress(len(paths), max(total, len(paths)))
    except OSError as exc:
        raise AccelsimError(f"{exc.filename or out}: cannot write the plots: {exc.strerror or exc}") from None
    return paths, notes
