"""Per-tile traces in the Chrome Trace Event Format (opens in ui.perfetto.dev and chrome://tracing).

Layout of a trace streamed by :func:`stream_trace` (``accelsim.cli.analysis.write_trace`` writes
one to a file):

- pid 1, "<workload> on <hardware>": thread "layers" (one slice per layer: path, patterns, reason,
  cycles) and thread "kernel launch" (the fixed cost before a kernel's first tile, when non-zero);
- pid 2, "memory system (shared)": counter tracks only, sampled per window (``COUNTER_WINDOWS``
  equal windows per layer, fewer when the layer has fewer tile runs): array occupancy %, vector
  unit occupancy %, DRAM bandwidth (bytes/cycle and GB/s), SRAM occupancy (bytes staged by
  tiles in flight, all cores), metadata-decode utilisation %;
- pid 100 + c, "core c": threads load (DRAM/L2 -> SRAM), gather (V:N:M / block), metadata decode (or a
  load-sparse format's decompress stage: slices of category "decompress" with the values placed), compute array,
  write-back, and on core 0 the vector unit; one complete ("X") slice per tile and stage.
  Slices on one thread never overlap. A load slice is the transfer (the channel busy); the DRAM
  latency after it is in args (``ready_cycle``). CTA slot s of a multi-core part runs on core
  s mod cores (a second resident CTA per core gets its own threads, lane 1).

Timestamps are microseconds, ``cycles / (clock_ghz * 1e3)``, quantised to whole nanoseconds
(so that viewers, which store integer ns, see exactly adjacent, never overlapping slices); raw
cycles are in args. Layers run back to back.

``max_events`` bounds the number of events with a deterministic reduction, recorded in
``otherData.reduction`` and in the returned stats, never a silent truncation:
1. none, if the full trace fits;
2. ``merge``: the smallest factor f >= 2 such that merging every f consecutive slices of one
   layer on one thread into one slice (args ``tiles_merged``, ``busy_cycles``, ``span_cycles``,
   summed bytes, binding counts) fits. A merged slice starts where its first tile-stage starts and
   lasts their summed busy time (the sum of their durations in the full trace), so each thread
   shows the same busy time as in full detail; the idle gaps between the merged tile-stages are
   not drawn as busy, their first-start-to-last-end span is ``span_cycles``. It ends by the next
   slice's start, so slices on one thread still never overlap;
3. ``merge+collapse``: if one slice per layer and thread still does not fit, cores with identical
   timelines in a layer are drawn once, on the first such core, with args ``cores`` = how many
   (and the CTA range), then the smallest merge factor f >= 1 that fits. Skipped when no two
   CTA slots share a timeline (a one-core, one-slot part): collapsing would change nothing;
4. if one slice per layer and thread (on collapsed cores, where they collapse) still does not
   fit, the counter windows per layer are halved (32, 16, ..., 1), each time with the smallest
   merge factor that fits (level ``counters`` if that factor is 1 and nothing collapsed);
5. if even that does not fit, the most reduced form is written and ``bound_met`` is false.
Counter samples, layer slices and metadata events count towards the bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, SupportsInt

import numpy as np

from accelsim.hardware.kinds import TraceLabels, kind_of
from accelsim.hardware.model import Hardware
from accelsim.report import timeline as tl
from accelsim.results import RunResult

__all__ = ["stream_trace", "DEFAULT_MAX_EVENTS", "COUNTER_WINDOWS"]

DEFAULT_MAX_EVENTS = 500_000
COUNTER_WINDOWS = 32
LAYERS_PID, MEMORY_PID, CORE_PID0 = 1, 2, 100
LAYERS_TID, LAUNCH_TID, COMM_TID = 1, 2, 3  # COMM_TID: collectives of a tensor-parallel system
STAGE_TID = {"load": 1, "decode": 2, "compute": 3, "writeback": 4, "vector": 5, "gather": 6}
# tiling keys of a non-native format's layer (channel, unstructured) that its layer slice shows
FORMAT_TILING_KEYS = ("compute_on", "rows_kept", "downstream_input", "a_density", "a_index", "stage",
                      "compute_macs_per_cycle")
_COUNTER_EVENTS = 5  # C events per window


# -- helpers -----------------------------------------------------------------------------------

def _num(x: float) -> float | int:
    """A JSON-friendly number: integers stay integers, others keep 3 decimals."""
    x = float(x)
    r = round(x)
    return int(r) if abs(x - r) < 1e-9 else round(x, 3)


def _ns(cycles: np.ndarray | float, clock_ghz: float) -> np.ndarray:
    return np.rint(np.asarray(cycles, dtype=np.float64) / clock_ghz).astype(np.int64)


def _us(ns: SupportsInt) -> float:
    return int(ns) / 1000.0


@dataclass
class _Group:
    """Slots of one layer with an identical timeline, and their slice count per stage."""

    layer: tl.LayerSchedule
    first: int
    n: int
    runs: list[tl.ClassRun]
    counts: dict[str, int]


@dataclass
class _Plan:
    groups: list[_Group]
    merge: int
    collapse: bool
    fixed: int
    slices: int
    meta: int
    unreduced: int
    bound_met: bool
    tracks: dict[int, set[tuple[int, str]]]  # core -> {(lane, stage)}
    has_launch: bool
    windows: int  # counter windows per layer (at most)
    has_comm: bool = False  # a tensor-parallel run: its collectives get their own track

    @property
    def total(self) -> int:
        return self.fixed + self.slices + self.meta


def _slices(groups: list[_Group], merge: int, collapse: bool) -> int:
    total = 0
    for g in groups:
        per = sum(-(-c // merge) for c in g.counts.values())
        total += per * (1 if collapse else g.n)
    return total


def _tracks(groups: list[_Group], hw: Hardware, collapse: bool) -> dict[int, set[tuple[int, str]]]:
    out: dict[int, set[tuple[int, str]]] = {}
    for g in groups:
        slots = [g.first] if collapse else range(g.first, g.first + g.n)
        stages = [s for s, c in g.counts.items() if c]
        for slot in slots:
            core, lane = tl.slot_location(hw, slot)
            out.setdefault(core, set()).update((lane, s) for s in stages)
    return out


def _meta_count(tracks: dict[int, set[tuple[int, str]]], has_launch: bool, has_comm: bool = False) -> int:
    procs = 2 + len(tracks)
    threads = 1 + int(has_launch) + int(has_comm) + sum(len(v) for v in tracks.values())
    return 3 * procs + 2 * threads


def _plan(scheds: list[tl.LayerSchedule], hw: Hardware, max_events: int | None, windows: int) -> _Plan:
    groups = []
    for ls in scheds:
        for first, n, runs in ls.slot_groups():
            counts = {s: tl.stage_count(ls, s, runs) for s in tl.STAGES}
            groups.append(_Group(ls, first, n, runs, counts))
    has_launch = any(ls.result.cycles["launch"] > 0 for ls in scheds)
    has_comm = any(ls.result.path == "communication" for ls in scheds)

    def fixed_for(w: int) -> int:
        n = sum(1 + int(ls.result.cycles["launch"] > 0) for ls in scheds)
        return n + _COUNTER_EVENTS * (sum(tl.default_windows(ls, w) for ls in scheds) + _gaps(scheds))

    fixed = fixed_for(windows)
    tracks_full = _tracks(groups, hw, False)
    meta_full = _meta_count(tracks_full, has_launch, has_comm)
    full = _slices(groups, 1, False)
    unreduced = fixed + meta_full + full
    biggest = max((c for g in groups for c in g.counts.values()), default=1) or 1

    def smallest(lo: int, fits: Any) -> int | None:
        hi = max(lo, biggest)
        if not fits(hi):
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def make(merge: int, collapse: bool, fx: int, meta: int, tracks: Any, met: bool, w: int) -> _Plan:
        return _Plan(groups, merge, collapse, fx, _slices(groups, merge, collapse), meta, unreduced, met, tracks,
                     has_launch, w, has_comm)

    if max_events is None or unreduced <= max_events:
        return make(1, False, fixed, meta_full, tracks_full, True, windows)
    f = smallest(2, lambda m: fixed + meta_full + _slices(groups, m, False) <= max_events)
    if f is not None:
        return make(f, False, fixed, meta_full, tracks_full, True, windows)
    # collapsing only changes something where slots share a timeline (never on a one-slot part)
    collapse = any(g.n > 1 for g in groups)
    tracks_c = _tracks(groups, hw, True) if collapse else tracks_full
    meta_c = _meta_count(tracks_c, has_launch, has_comm)
    if collapse:
        f = smallest(1, lambda m: fixed + meta_c + _slices(groups, m, True) <= max_events)
        if f is not None:
            return make(f, True, fixed, meta_c, tracks_c, True, windows)
    w = windows
    while w > 1:  # last resort: fewer counter samples per layer
        w = max(1, w // 2)
        fx = fixed_for(w)
        f = smallest(1, lambda m, fx=fx: fx + meta_c + _slices(groups, m, collapse) <= max_events)
        if f is not None:
            return make(f, collapse, fx, meta_c, tracks_c, True, w)
    return make(biggest, collapse, fixed_for(1), meta_c, tracks_c, False, 1)


def _gaps(scheds: list[tl.LayerSchedule]) -> int:
    """Counter resets (zero samples) after layers not followed directly by the next traced layer."""
    n = 0
    for i, ls in enumerate(scheds):
        if i + 1 == len(scheds) or scheds[i + 1].start != ls.end:
            n += 1
    return n


# -- slice construction ------------------------------------------------------------------------

def _tile_args(ls: tl.LayerSchedule, stage: str, row: int, labels: TraceLabels) -> dict[str, Any]:
    t = ls.tiles[row]
    args: dict[str, Any] = {"layer": ls.name, "tile": int(t["tile"])}
    if ls.vector:
        args["chunk"] = int(t["chunk"])
    else:
        for name, column in labels.tile_args:
            args[name] = int(t[column]) if isinstance(column, str) else [int(t[c]) for c in column]
    if stage == "load":
        args["dram_bytes"] = {k[5:]: _num(t[k]) for k in tl._LOAD_DRAM}
        args["sram_bytes"] = {k[5:]: _num(t[k]) for k in tl._LOAD_SRAM}
        args["latency_cycles"] = _num(ls.latency)
    elif stage == "decode" and tl.a_stage(ls.result) == "decompress":
        args["stage"] = "decompress"
        args["values"] = _num(t["decode_groups"])
        args["index_bytes"] = _num(t["sram_a_metadata"])
    elif stage == "decode":
        args["groups"] = _num(t["decode_groups"])
        args["metadata_bytes"] = _num(t["sram_a_metadata"])
    elif stage == "gather":
        args["rows"] = _num(t["gather_rows"])
        args["b_bytes"] = _num(t["sram_b"])
    elif stage in ("compute", "vector"):
        args["sram_bytes"] = {k[5:]: _num(t[k]) for k in tl._LOAD_SRAM}
        args["stall_memory_cycles"] = _num(t["stall_memory"])
        args["stall_decode_cycles"] = _num(t["stall_decode"])
        if t["gather_rows"] > 0:
            args["stall_gather_cycles"] = _num(t["stall_gather"])
    else:
        args["dram_bytes"] = {"c_write": _num(t["dram_c_write"])}
        args["sram_bytes"] = {"c": _num(t["sram_c"])}
    args["binding"] = tl.binding_name(t["binding"], tl.a_stage(ls.result))
    return args


def _merged_args(ls: tl.LayerSchedule, stage: str, iv: tl.Intervals, lo: int, hi: int) -> dict[str, Any]:
    rows = iv.row[lo:hi]
    t = ls.tiles[rows]
    codes, counts = np.unique(t["binding"], return_counts=True)
    args: dict[str, Any] = {"layer": ls.name, "tiles_merged": int(hi - lo),
                            "first_tile": int(t["tile"][0]), "last_tile": int(t["tile"][-1]),
                            "first_run": int(iv.run[lo]), "last_run": int(iv.run[hi - 1]),
                            "busy_cycles": _num(float((iv.end[lo:hi] - iv.start[lo:hi]).sum())),
                            "span_cycles": _num(float(iv.end[hi - 1] - iv.start[lo]))}
    if stage == "load":
        args["dram_bytes"] = {k[5:]: _num(t[k].sum()) for k in tl._LOAD_DRAM}
        args["sram_bytes"] = {k[5:]: _num(t[k].sum()) for k in tl._LOAD_SRAM}
    elif stage == "decode" and tl.a_stage(ls.result) == "decompress":
        args["stage"] = "decompress"
        args["values"] = _num(t["decode_groups"].sum())
    elif stage == "decode":
        args["groups"] = _num(t["decode_groups"].sum())
    elif stage == "gather":
        args["rows"] = _num(t["gather_rows"].sum())
    elif stage in ("compute", "vector"):
        args["stall_memory_cycles"] = _num(t["stall_memory"].sum())
        args["stall_decode_cycles"] = _num(t["stall_decode"].sum())
        if t["gather_rows"].sum() > 0:
            args["stall_gather_cycles"] = _num(t["stall_gather"].sum())
    else:
        args["dram_bytes"] = {"c_write": _num(t["dram_c_write"].sum())}
    args["binding"] = {tl.binding_name(c, tl.a_stage(ls.result)): int(n) for c, n in zip(codes, counts, strict=True)}
    return args


def _stage_slices(ls: tl.LayerSchedule, stage: str, iv: tl.Intervals, merge: int, clock: float,
                  labels: TraceLabels) -> Iterator[tuple[int, int, dict[str, Any], int, int]]:
    """(ts_ns, dur_ns, args, run, k_step) per slice of one slot timeline."""
    s_ns = _ns(iv.start, clock)
    e_ns = _ns(iv.end, clock)
    chunk = ls.tiles["chunk"]
    if merge <= 1:
        for i in range(len(iv)):
            args = _tile_args(ls, stage, int(iv.row[i]), labels)
            args["start_cycle"] = _num(iv.start[i])
            args["cycles"] = _num(iv.end[i] - iv.start[i])
            if stage == "load":
                args["ready_cycle"] = _num(iv.end[i] + ls.latency)
            yield int(s_ns[i]), int(e_ns[i] - s_ns[i]), args, int(iv.run[i]), int(chunk[iv.row[i]])
        return
    busy_ns = e_ns - s_ns  # each tile-stage's drawn length in the full trace
    for lo in range(0, len(iv), merge):
        hi = min(len(iv), lo + merge)
        args = _merged_args(ls, stage, iv, lo, hi)
        args["start_cycle"] = _num(iv.start[lo])
        # the slice starts with its first tile-stage and lasts their summed busy time, not the span to the
        # last one's end (idle gaps between the tiles would read as busy); it ends by the next slice's start
        yield int(s_ns[lo]), int(busy_ns[lo:hi].sum()), args, -1, -1


# -- writer ------------------------------------------------------------------------------------

class _Writer:
    def __init__(self, fh: IO[str]) -> None:
        self.fh = fh
        self.enc = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
        self.count = 0

    def __call__(self, event: dict[str, Any]) -> None:
        if self.count:
            self.fh.write(",\n")
        self.fh.write(self.enc.encode(event))
        self.count += 1


def _pattern_text(result: RunResult) -> str:
    if result.sparsity:
        return result.sparsity
    plan = result.workload.get("sparsity")
    return str(plan) if plan else "dense"


def stream_trace(result: RunResult, hw: Hardware, fh: IO[str], layers: list[str] | None = None,
                 max_events: int | None = None, counter_windows: int = COUNTER_WINDOWS) -> dict[str, Any]:
    """Stream ``result`` (run with ``keep_tiles=True``) into ``fh`` as a Chrome/Perfetto JSON trace.

    ``layers``: only these layers (at their times in the full run); ``max_events``: bound on the
    number of events (None: no bound), reached by the reduction described in the module doc.
    Bad arguments (unknown layers, a run without tile records) raise ValueError before anything
    is written. The trace is written event by event. Returns stats: ``events``, ``reduction``,
    ``cores`` (core processes), ``layers``, ``traced_us`` (the traced layers' summed time) and
    ``span_us`` (first traced layer's start to the last one's end; more than ``traced_us`` when
    ``layers`` leaves out layers between them).
    """
    if max_events is not None and max_events < 1:
        raise ValueError(f"max_events must be at least 1, got {max_events}")
    scheds = tl.select(tl.schedule(result, hw), layers)
    clock = float(hw.clock_ghz)
    labels = kind_of(hw).trace
    slots_total = tl.n_slots(hw)
    plan = _plan(scheds, hw, max_events, counter_windows)
    wl_name = str(result.workload.get("name", "workload"))
    pattern = _pattern_text(result)
    if plan.collapse:
        level = "merge+collapse" if plan.merge > 1 else "collapse"
    else:
        level = "merge" if plan.merge > 1 else ("counters" if plan.windows < counter_windows else "none")
    reduction: dict[str, Any] = {
        "level": level, "merge_factor": plan.merge, "cores_collapsed": plan.collapse,
        "counter_windows_per_layer": plan.windows, "max_events": max_events,
        "events_unreduced": plan.unreduced, "bound_met": plan.bound_met,
        "description": _reduction_text(level, plan.merge, max_events, plan.unreduced, plan.bound_met,
                                       plan.windows if plan.windows < counter_windows else None),
    }
    other = {
        "generator": "accelsim trace", "hardware": hw.name, "workload": wl_name, "sparsity": pattern,
        "policy": result.policy, "clock_ghz": clock, "cores": hw.cores, "cta_slots": slots_total,
        "time_unit": "ts/dur in microseconds = cycles / (clock_ghz * 1e3), quantised to 1 ns; raw cycles in args",
        "total_cycles": result.total_cycles,
        "layers": [s.name for s in scheds] if layers else len(scheds),
        "reduction": reduction,
        "accelsim_version": result.meta.get("accelsim_version"),
    }
    fh.write('{"displayTimeUnit":"ns","traceEvents":[\n')
    emit = _Writer(fh)
    _emit_metadata(emit, plan, hw, wl_name, pattern, reduction["description"])
    for ls in scheds:
        _emit_layer(emit, ls, clock, labels)
    for g in plan.groups:
        _emit_group(emit, g, plan, hw, clock, labels, slots_total)
    for i, ls in enumerate(scheds):
        nxt = scheds[i + 1] if i + 1 < len(scheds) else None
        _emit_counters(emit, ls, hw, clock, tl.default_windows(ls, plan.windows),
                       reset=nxt is None or nxt.start != ls.end)
    fh.write('\n],"otherData":')
    fh.write(json.dumps(other, separators=(",", ":"), ensure_ascii=False))
    fh.write("}\n")
    events = emit.count
    if events != plan.total:  # the plan and the writer must agree: the bound is a promise
        raise RuntimeError(f"trace wrote {events} events, planned {plan.total}")
    span = (scheds[-1].end - scheds[0].start) if scheds else 0.0
    traced = sum(ls.end - ls.start for ls in scheds)  # the layers' own time; span adds untraced layers between
    return {"events": events, "reduction": reduction, "cores": len(plan.tracks), "layers": len(scheds),
            "traced_us": round(float(tl.cycles_to_us(traced, clock)), 6),
            "span_us": round(float(tl.cycles_to_us(span, clock)), 6)}


def _reduction_text(level: str, merge: int, max_events: int | None, unreduced: int, met: bool,
                    windows: int | None) -> str:
    if level == "none":
        bound = f" (bound {max_events:,})" if max_events is not None else " (no bound)"
        return f"full detail: every tile-stage of every core{bound}"
    parts = []
    if merge > 1:
        parts.append(f"every {merge} consecutive tile-stages of one layer on one thread merged into one slice "
                     f"drawn from the first one's start for their summed busy time (args tiles_merged, "
                     f"span_cycles)")
    if "collapse" in level:
        parts.append("cores with identical timelines in a layer drawn once on the first of them (args cores)")
    if windows is not None:
        parts.append(f"counters sampled in at most {windows} window{'s' if windows > 1 else ''} per layer")
    text = "; ".join(parts) + f" to fit max_events {max_events:,} (full detail: {unreduced:,} events)"
    if not met:
        text += ("; the bound cannot be met even at one slice per layer and thread and one counter sample per "
                 "layer: most reduced form written")
    return text


def _emit_metadata(emit: _Writer, plan: _Plan, hw: Hardware, wl: str, pattern: str, reduction: str) -> None:
    labels = f"{hw.name} | {wl} | {pattern}"
    procs = [(LAYERS_PID, f"{wl} on {hw.name} ({pattern})", 0),
             (MEMORY_PID, "memory system (shared)", 1)]
    unit = kind_of(hw).trace.unit
    for core in sorted(plan.tracks):
        procs.append((CORE_PID0 + core, f"{unit} {core}", 2 + core))
    for pid, name, order in procs:
        emit({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
        emit({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": order}})
        text = labels if pid != MEMORY_PID else f"{labels} | trace reduction: {reduction}"
        emit({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0, "args": {"labels": text}})
    threads = [(LAYERS_PID, LAYERS_TID, "layers", 0)]
    if plan.has_launch:
        threads.append((LAYERS_PID, LAUNCH_TID, "kernel launch (fixed cost)", 1))
    if plan.has_comm:
        threads.append((LAYERS_PID, COMM_TID, "communication (interconnect collectives)", 2))
    for core in sorted(plan.tracks):
        for lane, stage in sorted(plan.tracks[core], key=lambda x: (x[0], STAGE_TID[x[1]])):
            name = tl.STAGE_LABELS[stage] + (f" (CTA lane {lane})" if lane else "")
            threads.append((CORE_PID0 + core, lane * 10 + STAGE_TID[stage], name, lane * 10 + STAGE_TID[stage]))
    for pid, tid, name, order in threads:
        emit({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        emit({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": order}})


def _emit_layer(emit: _Writer, ls: tl.LayerSchedule, clock: float, labels: TraceLabels) -> None:
    k = ls.result
    s, e = _ns(ls.start, clock), _ns(ls.end, clock)
    args: dict[str, Any] = {"index": ls.index, "op": k.op, "shape": k.shape, "path": k.path,
            "pattern_requested": k.pattern_requested, "pattern_executed": k.pattern_executed,
            "reason": k.reason, "binding": k.binding, "cycles": k.cycles, "start_cycle": _num(ls.start),
            "utilization": round(k.utilization, 6), "speedup_vs_dense": round(k.speedup_vs_dense, 6),
            "tile_records": int(len(ls.tiles)), "runs": sum(c.count for c in ls.classes),
            "busy": k.busy, "bytes": k.bytes}
    if labels.layer_tiling and not ls.vector:
        args["tiling"] = {key: k.tiling[key] for key in labels.layer_tiling if key in k.tiling}
    ran_as = {key: k.tiling[key] for key in FORMAT_TILING_KEYS if key in k.tiling}  # engine._format_echo
    if ran_as:
        args["tiling"] = {**args.get("tiling", {}), **ran_as}
    tid = COMM_TID if k.path == "communication" else LAYERS_TID
    emit({"name": k.name, "cat": f"layer,{k.path}", "ph": "X", "pid": LAYERS_PID, "tid": tid,
          "ts": _us(s), "dur": _us(e - s), "cname": tl.PATH_CNAMES.get(k.path, "generic_work"), "args": args})
    launch = k.cycles["launch"]
    if launch > 0:
        le = _ns(ls.start + launch, clock)
        emit({"name": f"{k.name} launch", "cat": "launch", "ph": "X", "pid": LAYERS_PID, "tid": LAUNCH_TID,
              "ts": _us(s), "dur": _us(le - s), "cname": tl.STAGE_CNAMES["launch"],
              "args": {"layer": k.name, "cycles": launch, "start_cycle": _num(ls.start)}})


def _emit_group(emit: _Writer, g: _Group, plan: _Plan, hw: Hardware, clock: float, labels: TraceLabels,
                slots_total: int) -> None:
    ls = g.layer
    slots = [g.first] if plan.collapse else list(range(g.first, g.first + g.n))
    multi = labels.waves and not ls.vector
    for stage in tl.STAGES:
        if not g.counts[stage]:
            continue
        iv = tl.stage_intervals(ls, stage, g.runs)
        pieces = list(_stage_slices(ls, stage, iv, plan.merge, clock, labels))
        for slot in slots:
            core, lane = tl.slot_location(hw, slot)
            pid, tid = CORE_PID0 + core, lane * 10 + STAGE_TID[stage]
            for ts, dur, args, run, kstep in pieces:
                if plan.merge > 1:
                    name = f"{ls.name} \u00d7{args['tiles_merged']} tiles"
                    a = args
                elif multi:
                    cta = run * slots_total + slot
                    if plan.collapse and g.n > 1:
                        name = f"{ls.name} wave {run} k{kstep}"
                        a = {**args, "wave": run, "ctas": [cta, cta + g.n - 1]}
                    else:
                        name = f"{ls.name} cta{cta} k{kstep}"
                        a = {**args, "wave": run, "cta": cta}
                else:
                    prefix = f"{ls.name} b{run} " if ls.classes[0].count > 1 else f"{ls.name} "
                    name = f"{prefix}t{args['tile']}"
                    a = args if ls.classes[0].count == 1 else {**args, "batch_index": run}
                if plan.collapse and g.n > 1:
                    a = {**a, "cores": g.n}
                cat = tl.a_stage(ls.result) if stage == "decode" else stage
                emit({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": _us(ts), "dur": _us(dur),
                      "cname": tl.STAGE_CNAMES[stage], "args": a})


def _emit_counters(emit: _Writer, ls: tl.LayerSchedule, hw: Hardware, clock: float, windows: int,
                   reset: bool) -> None:
    edges, c = tl.layer_counters(ls, hw, windows)
    ts = _ns(edges, clock)
    for i in range(windows):
        t = _us(ts[i])
        bpc = float(c["dram_bytes_per_cycle"][i])
        emit({"name": "array occupancy", "ph": "C", "pid": MEMORY_PID, "ts": t,
              "args": {"%": round(float(c["array_occupancy_pct"][i]), 3)}})
        emit({"name": "vector unit occupancy", "ph": "C", "pid": MEMORY_PID, "ts": t,
              "args": {"%": round(float(c["vector_occupancy_pct"][i]), 3)}})
        emit({"name": "DRAM bandwidth", "ph": "C", "pid": MEMORY_PID, "ts": t,
              "args": {"bytes/cycle": round(bpc, 3), "GB/s": round(bpc * clock, 3)}})
        emit({"name": "SRAM occupancy", "ph": "C", "pid": MEMORY_PID, "ts": t,
              "args": {"bytes": round(float(c["sram_bytes"][i]), 1)}})
        emit({"name": "metadata decode utilisation", "ph": "C", "pid": MEMORY_PID, "ts": t,
              "args": {"%": round(float(c["decode_utilization_pct"][i]), 3)}})
    if reset:
        t = _us(ts[-1])
        for name, key in (("array occupancy", "%"), ("vector unit occupancy", "%"), ("DRAM bandwidth", None),
                          ("SRAM occupancy", "bytes"), ("metadata decode utilisation", "%")):
            args = {"bytes/cycle": 0, "GB/s": 0} if key is None else {key: 0}
            emit({"name": name, "ph": "C", "pid": MEMORY_PID, "ts": t, "args": args})
