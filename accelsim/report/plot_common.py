"""The run plots' shared pieces (:mod:`accelsim.report.plots`, :mod:`accelsim.report.roofline`): the figure, what
they call a run, and the title.

A run on the workload's own sparsity plan (no ``--sparsity``) is named as run, serve and reality-check name it
(:func:`accelsim.workloads.plan.plan_label`: ``workload plan (1:4 on g0; 2:4 on g1, g2)``), never ``dense``. A
tensor-parallel system's run holds one device's shard, so its plots show one device's bytes, bandwidth, MACs and
timeline: their titles and axes say ``per device (1 of N)``, as the power plot does. Library code: nothing prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from accelsim.textsafe import printable
from accelsim.workloads.plan import PLAN_LABEL, plan_label, plan_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from accelsim.results import RunResult

__all__ = ["RunNames", "run_names", "per_device_text", "draw_title", "new_figure", "FIGSIZE", "DPI", "TEXT", "GRID",
           "NOTE", "TITLE_CHARS_PER_INCH"]

DPI = 100
FIGSIZE = {"timeline": (13.0, 5.0), "occupancy": (13.0, 6.0), "roofline": (9.0, 6.5), "traffic": (9.0, 6.0),
           "power": (12.0, 5.5)}
TITLE_CHARS_PER_INCH = 9.5  # a 12-point title fits about this many characters per inch of figure width
TEXT = "#222222"
NOTE = "#555555"
GRID = "#d9d9d9"


def new_figure(kind: str) -> Figure:
    """A figure of ``kind``'s size on the Agg canvas: no pyplot, no global state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # deferred: the CLI starts without matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE[kind], dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def per_device_text(devices: int) -> str:
    """``'per device (1 of 8)'`` on a tensor-parallel system of 8 devices; ``''`` on one device."""
    return f"per device (1 of {devices})" if devices > 1 else ""


@dataclass(frozen=True)
class RunNames:
    """A sparse run's names on a plot: ``label`` on bars, legends and ticks (``2:4``, ``workload plan``),
    ``full`` in the title (``2:4``, ``workload plan (1:4 on g0; 2:4 on g1)``), ``per_device`` (or '')."""

    hardware: str
    workload: str
    label: str
    full: str
    plan: str
    per_device: str

    def axis(self, quantity: str, unit: str) -> str:
        """``'bytes moved per device (1 of 8) (MB)'`` on a system, ``'bytes moved (MB)'`` on one device."""
        return f"{quantity} {self.per_device} ({unit})" if self.per_device else f"{quantity} ({unit})"


def run_names(result: RunResult) -> RunNames:
    """The names of ``result`` (the sparse run, or the one run a timeline draws) on a plot."""
    plan = "" if result.sparsity else printable(plan_text(result.layers))
    full = printable(plan_label(result.sparsity, result.layers))
    label = printable(result.sparsity) if result.sparsity else PLAN_LABEL
    devices = int((result.system or {}).get("devices", 1))
    return RunNames(hardware=printable(str(result.hardware.get("name", "hardware"))),
                    workload=printable(str(result.workload.get("name", "workload"))),
                    label=label, full=full, plan=plan, per_device=per_device_text(devices))


def draw_title(fig: Figure, names: RunNames, head: str, tail: str = "", *, y: float) -> bool:
    """Draw ``<head><run><tail>[, per device (1 of N)]`` as the title, the run by its full name where the title
    has room for it; else ``workload plan (named below)``, with a footer line naming the plan. Returns whether
    it drew the footer (a legend at the figure's foot moves up for it)."""
    per_device = f", {names.per_device}" if names.per_device else ""
    title = f"{head}{names.full}{tail}{per_device}"
    room = int(fig.get_figwidth() * TITLE_CHARS_PER_INCH)
    footer = bool(names.plan) and len(title) > room
    if footer:
        title = f"{head}{names.label} (named below){tail}{per_device}"
        fig.text(0.01, 0.005, f"{names.label}: {names.plan}", ha="left", va="bottom", fontsize=7.5, color=NOTE,
                 wrap=True)
    fig.suptitle(title, fontsize=12, color=TEXT, y=y)
    return footer
