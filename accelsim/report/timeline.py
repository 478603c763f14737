"""Per-tile timelines rebuilt from a run's tile records: the schedule shared by traces and plots.

A :class:`~accelsim.results.KernelResult` keeps per-tile records (``TILE_DTYPE``) with cycle
times absolute within its kernel. Systolic parts have one row per (fold, chunk) tile. Multi-core
(tensor-core) parts keep one CTA's k-loop per distinct wave class; the engine's schedule is:
the kernel's launch cost, then for each class in order ``wave_count`` back-to-back runs of that
k-loop (each ``end`` cycles long, ``end`` = the class's last compute or write-back) on
``active_cores`` CTA slots at once. The records of class ``c`` are offset by the *single* runs of
the classes before it; :func:`schedule` undoes that and lays every run out on the time axis.

Layers run back to back: layer ``i`` starts where layer ``i - 1`` ended (its ``cycles.total``).
Vector-path layers run on the vector unit, shown on core 0.

Library code: nothing here prints.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from accelsim.hardware.kinds import kind_of
from accelsim.hardware.model import Hardware
from accelsim.results import BINDING_NAMES, STAGE_NAMES, KernelResult, RunResult

STAGES = ("load", "gather", "decode", "compute", "writeback", "vector")

STAGE_LABELS = {
    "load": "load (DRAM/L2 \u2192 SRAM)",
    "gather": "gather (rows of B by index)",
    "decode": "metadata decode / decompress",
    "compute": "compute array",
    "writeback": "write-back (SRAM \u2192 DRAM)",
    "vector": "vector unit",
}

# One palette for the trace and the plots. Each stage has a hex colour (plots) and the Chrome
# trace-viewer reserved colour name ("cname") of the same RGB (chrome://tracing; Perfetto colours
# slices by name and ignores cname).
STAGE_COLORS = {
    "load": "#4387fd",       # rail_response (67, 135, 253)
    "decode": "#ee8e00",     # rail_idle (238, 142, 0)
    "gather": "#ff8c00",     # thread_state_iowait (255, 140, 0)
    "compute": "#0da861",    # rail_load (13, 168, 97)
    "writeback": "#f44a3f",  # rail_animation (244, 74, 63)
    "vector": "#b400b4",     # detailed_memory_dump (180, 0, 180)
    "launch": "#7d7d7d",     # generic_work (125, 125, 125)
}
STAGE_CNAMES = {
    "load": "rail_response", "gather": "thread_state_iowait", "decode": "rail_idle", "compute": "rail_load",
    "writeback": "rail_animation",
    "vector": "detailed_memory_dump", "launch": "generic_work",
}
PATH_COLORS = {"sparse": "#99ee66", "dense": "#bbbbbb", "vector": "#ffff77"}
PATH_CNAMES = {"sparse": "cq_build_passed", "dense": "cq_build_abandoned", "vector": "cq_build_running"}
DENSE_COLOR = "#5b6f8a"
SPARSE_COLOR = "#0da861"

_LOAD_DRAM = ("dram_a_values", "dram_a_metadata", "dram_b", "dram_c_read")
_LOAD_SRAM = ("sram_a_values", "sram_a_metadata", "sram_b")


@dataclass
class ClassRun:
    """One wave class of a layer: rows ``i0:i1`` of the records, run ``count`` times back to back."""

    cls: int
    i0: int
    i1: int
    count: int
    active: int          # CTA slots (cores x ctas_per_core) running it at once
    first_wave: int      # index of its first run among the layer's runs
    delta0: float        # add to record times to get global cycles for run 0
    length: float        # cycles of one run (the engine's segment end)
    pos: int = 0         # position in LayerSchedule.classes

    def deltas(self) -> np.ndarray:
        return self.delta0 + np.arange(self.count, dtype=np.float64) * self.length


@dataclass
class LayerSchedule:
    """Where one layer's tiles run on the global time axis (cycles)."""

    index: int
    result: KernelResult
    start: float
    end: float
    vector: bool
    latency: float       # load latency included in the records' load_end
    classes: list[ClassRun] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.result.name

    @property
    def tiles(self) -> np.ndarray:
        assert self.result.tiles is not None
        return self.result.tiles

    def slot_groups(self) -> list[tuple[int, int, list[ClassRun]]]:
        """Slots with identical timelines: (first slot, number of slots, classes they run)."""
        if self.vector:
            return [(0, 1, list(self.classes))]
        actives = sorted({c.active for c in self.classes})
        out = []
        lo = 0
        for a in actives:
            runs = [c for c in self.classes if c.active >= a]
            out.append((lo, a - lo, runs))
            lo = a
        return out


def schedule(result: RunResult, hw: Hardware) -> list[LayerSchedule]:
    """Every layer of ``result`` laid out on the global cycle axis (needs ``keep_tiles=True``)."""
    out = []
    start = 0.0
    for i, k in enumerate(result.layers):
        if k.tiles is None:
            raise ValueError(f"layer '{k.name}' has no per-tile records: run with keep_tiles=True")
        t = k.tiles
        vector = k.path == "vector"
        lat = 0.0 if (vector and k.tiling.get("in_l2")) else hw.dram_latency_cycles()
        ls = LayerSchedule(i, k, start, start + k.cycles["total"], vector, lat)
        launch = float(k.cycles["launch"])
        rec_off = launch
        true_off = launch
        wave = 0
        if len(t):
            cls = t["wave_class"]
            bounds = np.flatnonzero(np.diff(cls)) + 1
            for i0, i1 in zip(np.r_[0, bounds], np.r_[bounds, len(t)], strict=True):
                i0, i1 = int(i0), int(i1)
                length = float(max(t["compute_end"][i0:i1].max(), t["wb_end"][i0:i1].max())) - rec_off
                count = int(t["wave_count"][i0])
                ls.classes.append(ClassRun(int(cls[i0]), i0, i1, count, int(t["active_cores"][i0]), wave,
                                           start + true_off - rec_off, length, len(ls.classes)))
                wave += count
                rec_off += length
                true_off += count * length
        out.append(ls)
        start += k.cycles["total"]
    return out


def select(scheds: list[LayerSchedule], names: list[str] | None) -> list[LayerSchedule]:
    """The schedules of the layers named (all when ``names`` is None); unknown names raise ValueError."""
    if not names:
        return scheds
    by = {s.name: s for s in scheds}
    missing = [n for n in names if n not in by]
    if missing:
        hints = []
        for n in missing:
            close = difflib.get_close_matches(n, list(by), n=3)
            hints.append(f"'{n}'" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise ValueError(f"unknown layer {', '.join(hints)}; the workload has {len(by)} layers")
    wanted = set(names)
    return [s for s in scheds if s.name in wanted]


# -- stage intervals ---------------------------------------------------------------------------

@dataclass
class Intervals:
    """One stage's slices for one slot timeline, in time order (global cycles)."""

    start: np.ndarray
    end: np.ndarray
    row: np.ndarray       # record row
    run: np.ndarray       # run index within the layer (wave for multi-core parts)
    cls: np.ndarray       # position of the ClassRun in LayerSchedule.classes

    def __len__(self) -> int:
        return len(self.start)


def _stage_cols(ls: LayerSchedule, stage: str, rows: slice) -> tuple[np.ndarray, np.ndarray]:
    t = ls.tiles[rows]
    if stage == "load":
        s, e = t["load_start"], t["load_end"]
        busy_end = np.maximum(s, e - ls.latency)  # the channel is busy for the transfer, not the latency
        return s, np.where(e > s, busy_end, s)
    if stage == "decode":
        return t["decode_start"], t["decode_end"]
    if stage == "gather":
        return t["gather_start"], t["gather_end"]
    if stage in ("compute", "vector"):
        return t["compute_start"], t["compute_end"]
    return t["wb_start"], t["wb_end"]


def stage_intervals(ls: LayerSchedule, stage: str, runs: list[ClassRun] | None = None) -> Intervals:
    """Non-empty slices of ``stage`` over ``runs`` (default: all classes), time-ordered."""
    if (stage == "vector") != ls.vector and stage in ("compute", "vector"):
        return _empty()
    parts = []
    for c in (ls.classes if runs is None else runs):
        s, e = _stage_cols(ls, stage, slice(c.i0, c.i1))
        keep = np.flatnonzero(e > s)
        if not len(keep):
            continue
        d = c.deltas()
        n = len(d)
        parts.append((
            (s[keep][None, :] + d[:, None]).ravel(), (e[keep][None, :] + d[:, None]).ravel(),
            np.tile(keep + c.i0, n), np.repeat(np.arange(n) + c.first_wave, len(keep)),
            np.full(n * len(keep), c.pos),
        ))
    if not parts:
        return _empty()
    return Intervals(*(np.concatenate([p[j] for p in parts]) for j in range(5)))


def _empty() -> Intervals:
    z = np.zeros(0)
    zi = np.zeros(0, dtype=np.int64)
    return Intervals(z, z, zi, zi, zi)


def stage_count(ls: LayerSchedule, stage: str, runs: list[ClassRun]) -> int:
    """Number of slices ``stage_intervals`` would give, without building them."""
    if (stage == "vector") != ls.vector and stage in ("compute", "vector"):
        return 0
    total = 0
    for c in runs:
        s, e = _stage_cols(ls, stage, slice(c.i0, c.i1))
        total += int(np.count_nonzero(e > s)) * c.count
    return total


def binding_name(code: int, stage: str = "decode") -> str:
    """The resource a tile's binding code names; code 2 is the layer's stage between load and compute."""
    if int(code) == 2:
        return stage
    return BINDING_NAMES[int(code)] if 0 <= int(code) < len(BINDING_NAMES) else str(int(code))


def a_stage(result: KernelResult) -> str:
    """The layer's stage between load and compute as results name it: "decode" (N:M metadata) or "decompress"
    (a load-sparse format's nonzeros placed into a dense tile); both run on the trace's decode track."""
    return next((name for name in STAGE_NAMES if name in result.busy), "decode")


# -- counters ----------------------------------------------------------------------------------

def _ramp_integral(start: np.ndarray, end: np.ndarray, amount: np.ndarray, t: np.ndarray) -> np.ndarray:
    """At each ``t``: sum of ``amount`` spread uniformly over [start, end) that has happened by t.

    Intervals may overlap; zero-length intervals deposit their amount at ``start``.
    """
    out = np.zeros(len(t))
    if not len(start):
        return out
    width = end - start
    ramp = width > 0
    if ramp.any():
        s, e = start[ramp], end[ramp]
        r = amount[ramp] / (e - s)
        for pts, sign in ((s, 1.0), (e, -1.0)):
            order = np.argsort(pts, kind="stable")
            p, w = pts[order], r[order]
            cw = np.r_[0.0, np.cumsum(w)]
            cwp = np.r_[0.0, np.cumsum(w * p)]
            i = np.searchsorted(p, t, side="right")
            out += sign * (cw[i] * t - cwp[i])
    if (~ramp).any():
        p = start[~ramp]
        order = np.argsort(p, kind="stable")
        cw = np.r_[0.0, np.cumsum(amount[~ramp][order])]
        out += cw[np.searchsorted(p[order], t, side="right")]
    return out


COUNTERS = ("array_occupancy_pct", "vector_occupancy_pct", "dram_bytes_per_cycle", "sram_bytes",
            "decode_utilization_pct")


def layer_counters(ls: LayerSchedule, hw: Hardware, windows: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Counters of one layer averaged over ``windows`` equal windows of its span.

    Returns (window edges in global cycles, {counter: value per window}):
    ``array_occupancy_pct`` share of CTA slots (cores x ctas_per_core; 1 for systolic parts) whose
    array is busy; ``vector_occupancy_pct`` the vector unit busy; ``dram_bytes_per_cycle`` DRAM
    bytes moved (loads and write-backs of all active cores, each transfer spread evenly over its
    busy time; behind a write-back L2 (``tiling.c_write_back``) C's DRAM bytes drain during its stores and
    the rest during the loads); ``sram_bytes`` bytes staged in SRAM by tiles in flight (operands from load start to
    compute end, outputs from compute start to write-back end; vector layers stream and are not
    counted); ``decode_utilization_pct`` the metadata decoders busy.
    """
    slots = _slots(hw)
    write_back = bool(ls.result.tiling.get("c_write_back"))
    edges = np.linspace(ls.start, ls.end, windows + 1)
    width = np.diff(edges)
    width = np.where(width > 0, width, 1.0)
    t = ls.tiles
    acc = {k: np.zeros(windows) for k in COUNTERS}

    def add(key: str, start: np.ndarray, end: np.ndarray, amount: np.ndarray) -> None:
        acc[key] += np.diff(_ramp_integral(start, end, amount, edges))

    for c in ls.classes:
        d = c.deltas()
        rows = slice(c.i0, c.i1)
        r = t[rows]
        mult = float(c.active)

        def expand(x: np.ndarray, d: np.ndarray = d) -> np.ndarray:
            return (x[None, :] + d[:, None]).ravel()

        def rep(x: np.ndarray, d: np.ndarray = d, mult: float = mult) -> np.ndarray:
            return np.tile(x * mult, len(d))

        ls_, le_ = _stage_cols(ls, "load", rows)
        cs, ce = r["compute_start"], r["compute_end"]
        busy = ce - cs
        key = "vector_occupancy_pct" if ls.vector else "array_occupancy_pct"
        add(key, expand(cs), expand(ce), rep(busy))
        dram_in = cast(np.ndarray, sum(r[k] for k in _LOAD_DRAM))
        c_out = r["dram_c_write"]
        if write_back and len(r):  # a write-back L2 drains C to DRAM while the core stores it (at the core's
            # DRAM share) and the rest behind the loads, as the engine charges it (engine.tensorcore.write_back_drain)
            loaded = cast(np.ndarray, sum(r[k] for k in _LOAD_SRAM))
            total = float(loaded.sum())
            if total > 0:
                during = np.minimum(c_out, (r["wb_end"] - r["wb_start"]) * hw.dram_bytes_per_cycle() / mult)
                dram_in = dram_in + float((c_out - during).sum()) * loaded / total
                c_out = during
        add("dram_bytes_per_cycle", expand(ls_), expand(le_), rep(dram_in))
        add("dram_bytes_per_cycle", expand(r["wb_start"]), expand(r["wb_end"]), rep(c_out))
        ds, de = r["decode_start"], r["decode_end"]
        add("decode_utilization_pct", expand(ds), expand(de), rep(de - ds))
        if not ls.vector:
            staged = sum(r[k] for k in _LOAD_SRAM)
            # resident bytes x time: spread (bytes x duration) over the residency interval
            add("sram_bytes", expand(r["load_start"]), expand(ce), rep(staged * (ce - r["load_start"])))
            add("sram_bytes", expand(cs), expand(r["wb_end"]), rep(r["sram_c"] * (r["wb_end"] - cs)))
    out = {
        "array_occupancy_pct": 100.0 * acc["array_occupancy_pct"] / (width * slots),
        "vector_occupancy_pct": 100.0 * acc["vector_occupancy_pct"] / width,
        "dram_bytes_per_cycle": acc["dram_bytes_per_cycle"] / width,
        "sram_bytes": acc["sram_bytes"] / width,
        "decode_utilization_pct": 100.0 * acc["decode_utilization_pct"] / (width * (1 if ls.vector else slots)),
    }
    return edges, out


def _slots(hw: Hardware) -> int:
    return hw.cores * kind_of(hw).slots_per_core(hw.core.compute)


def slot_location(hw: Hardware, slot: int) -> tuple[int, int]:
    """(core, lane) of a CTA slot: slots fill cores round-robin; a second resident CTA is lane 1."""
    return slot % hw.cores, slot // hw.cores


def n_slots(hw: Hardware) -> int:
    return _slots(hw)


def default_windows(ls: LayerSchedule, windows: int) -> int:
    """Counter windows for a layer: ``windows``, or one per tile run when the layer has fewer."""
    runs = sum((c.i1 - c.i0) * c.count for c in ls.classes)
    return int(max(1, min(windows, runs)))


def cycles_to_us(cycles: float | np.ndarray, clock_ghz: float) -> float | np.ndarray:
    return cycles / (clock_ghz * 1e3)
