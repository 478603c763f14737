"""Result values: per-kernel and per-run, frozen, with a versioned JSON form that reads back.

``RunResult.from_dict(r.to_dict())`` (or ``from_json``) rebuilds a result whose JSON is byte-identical
to ``r``'s; two results are equal when their JSON forms are. Per-tile records are not part of the JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from accelsim.errors import AccelsimError
from accelsim.fileio import dumps_finite  # noqa: F401 (re-exported: results' writers import it from here)
from accelsim.hardware.kinds import peak_macs_per_cycle
from accelsim.hardware.model import hardware_from_dict
from accelsim.provenance import build_meta  # noqa: F401 (re-exported: writers of results import it from here)
from accelsim.records import FrozenDict, frozen_tree, json_form, rounded, thawed
from accelsim.result_checks import result_problem
from accelsim.run_clocks import clock_totals
from accelsim.system.energy import system_energy
from accelsim.tables import to_dataframe

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1

# Per-tile record layout (numpy structured array): one row per tile of one core, cycles are
# absolute within the kernel (its launch starts at 0). Systolic parts: fold_r/fold_c/chunk
# locate the tile in the fold schedule. Multi-core parts: the rows are one CTA's k-loop for
# each distinct wave (wave_class); the wave runs wave_count times on active_cores cores, so a
# row's bytes count wave_count * active_cores times in the layer's totals.
TILE_DTYPE = np.dtype([
    ("tile", np.int64), ("fold_r", np.int32), ("fold_c", np.int32), ("chunk", np.int32),
    ("wave_class", np.int32), ("wave_count", np.int64), ("active_cores", np.int32),
    ("load_start", np.float64), ("load_end", np.float64),
    ("decode_start", np.float64), ("decode_end", np.float64),
    ("compute_start", np.float64), ("compute_end", np.float64),
    ("wb_start", np.float64), ("wb_end", np.float64),
    ("compute_cycles", np.float64), ("decode_groups", np.float64),
    ("stall_memory", np.float64), ("stall_decode", np.float64),
    ("dram_a_values", np.float64), ("dram_a_metadata", np.float64), ("dram_b", np.float64),
    ("dram_c_read", np.float64), ("dram_c_write", np.float64),
    ("sram_a_values", np.float64), ("sram_a_metadata", np.float64), ("sram_b", np.float64),
    ("sram_c", np.float64), ("binding", np.int8),
    ("gather_rows", np.float64), ("gather_start", np.float64), ("gather_end", np.float64),
    ("stall_gather", np.float64),
])

# "gather": the column-gather stage of V:N:M and block-sparse kernels; "decompress": the stage of load-sparse
# kernels (unstructured) between load and compute. Each is absent from results of kernels without it.
BINDING_NAMES = ("compute", "memory", "decode", "launch", "gather", "decompress", "communication")
STAGE_NAMES = ("decode", "decompress")  # the stage before compute (Kernel.a_stage); its stalls: stall_decode
TENSORS = ("a_values", "a_metadata", "b", "c")

# What set a kernel's clock (``KernelResult.clock["limit"]``): nominal (the cap did not bind), power_cap (the
# highest clock whose power fits tdp_w), clock_floor (even min_clock_fraction draws more than the TDP), and at
# the nominal clock without a governor: no_power_cap (no energy.power_cap), no_energy (no energy figures).
# TILE_CYCLE_COLUMNS: per-tile record columns that count cycles (rescaled with the clock).
CLOCK_LIMITS = ("nominal", "power_cap", "clock_floor", "no_power_cap", "no_energy")
CAPPED_LIMITS = frozenset({"power_cap", "clock_floor"})
TILE_CYCLE_COLUMNS = ("load_start", "load_end", "decode_start", "decode_end", "compute_start", "compute_end",
                      "wb_start", "wb_end", "compute_cycles", "stall_memory", "stall_decode", "gather_start",
                      "gather_end", "stall_gather")


class KernelTotals(NamedTuple):
    """The scalars of one simulated kernel that every total is built from (runs and sweeps alike)."""

    total: int
    compute: int
    stall_memory: int
    stall_decode: int
    launch: int
    dram_a_values: int
    dram_a_metadata: int
    dram_b: int
    dram_c: int
    sram_a_values: int
    sram_a_metadata: int
    sram_b: int
    sram_c: int
    busy_memory: int
    busy_decode: int  # busy cycles of the stage between load and compute (``stage``: decode or decompress)
    binding: str  # one of BINDING_NAMES: the busiest resource
    decode_groups: float  # that stage's work: N:M groups decoded, or values decompressed
    stage: str = "decode"
    stall_gather: int = 0  # the gather stage (V:N:M, block sparsity), reported where gather_rows > 0
    busy_gather: int = 0
    gather_rows: float = 0.0
    communication: int = 0  # a collective's cycles (tensor-parallel systems; 0 for every kernel)

    def cycles(self) -> dict[str, int]:
        """Cycles by cause, as a KernelResult reports them (``stall_gather`` only where rows are gathered)."""
        return {"total": self.total, "compute": self.compute, "stall_memory": self.stall_memory,
                "stall_decode": self.stall_decode, "launch": self.launch,
                **({"stall_gather": self.stall_gather} if self.gather_rows > 0 else {})}

    def dram(self) -> dict[str, int]:
        """DRAM bytes by tensor."""
        return {"a_values": self.dram_a_values, "a_metadata": self.dram_a_metadata, "b": self.dram_b,
                "c": self.dram_c}

    def sram(self) -> dict[str, int]:
        """SRAM bytes by tensor."""
        return {"a_values": self.sram_a_values, "a_metadata": self.sram_a_metadata, "b": self.sram_b,
                "c": self.sram_c}

    def busy(self) -> dict[str, int]:
        """Busy cycles of each resource (``gather`` only where rows are gathered)."""
        return dict(compute=self.compute, memory=self.busy_memory, **{self.stage: self.busy_decode}, launch=self.launch,
                    **({"gather": self.busy_gather} if self.gather_rows > 0 else {}))

    def in_nominal_cycles(self, fraction: float) -> KernelTotals:
        """These totals, counted at ``fraction`` of the nominal clock, as nominal-clock cycles (time x nominal clock):
        each cycle count / ``fraction``, rounded, causes adding up to the total; bytes and binding as they were."""
        if fraction == 1.0:
            return self
        c, d, la = round(self.compute / fraction), round(self.stall_decode / fraction), round(self.launch / fraction)
        g = round(self.stall_gather / fraction)
        total = max(round(self.total / fraction), c + d + la + g)
        return self._replace(total=total, compute=c, stall_memory=total - c - d - la - g, stall_decode=d, launch=la,
                             busy_memory=round(self.busy_memory / fraction),
                             busy_decode=round(self.busy_decode / fraction), stall_gather=g,
                             busy_gather=round(self.busy_gather / fraction))


class LayerTotals(NamedTuple):
    """One layer's (or ``count`` identical layers') share of a model total."""

    totals: KernelTotals
    path: str  # "sparse" | "dense" | "vector", as run
    requested: bool  # the plan asked for a sparse pattern
    macs: int
    macs_executed: int
    peak: float  # the array's dense MACs per cycle in the element type the layer runs in (0: not array work)
    count: int = 1  # type: ignore[assignment]  # shadows tuple.count on purpose: the natural name
    clock_cycles: int | None = None  # cycles counted at the kernel's own clock (None: not clocked, a collective)
    capped: bool = False  # the power cap lowered the kernel's clock


@dataclass(frozen=True)
class ModelTotals:
    """Sums over a model's layers: what a run's ``totals()`` and a sweep row report."""

    cycles: dict[str, int]
    dram: dict[str, int]
    sram: dict[str, int]
    macs: int
    macs_executed: int
    layers: int
    layers_by_path: dict[str, int]
    requested_layers: int
    fallback_layers: int
    fallback_cycles: int
    binding_cycles: dict[str, int]  # cycles of the layers each resource binds
    dense_total_cycles: int
    clock_cycles: int = 0  # cycles counted at each clocked layer's own clock
    capped_layers: int = 0  # layers whose clock the power cap lowered
    clocked_cycles: int = 0  # nominal-clock cycles (time) of the clocked layers (collectives are not clocked)
    macs_by_peak: tuple[tuple[float, int], ...] = ()  # executed MACs by the array peak they ran against, by peak

    @property
    def total(self) -> int:
        return self.cycles["total"]

    def latency_us(self, clock_ghz: float) -> float:
        return round(self.total / (clock_ghz * 1e3), 6)

    def speedup_vs_dense(self) -> float:
        return round(self.dense_total_cycles / self.total, 6) if self.total else 1.0

    def utilization(self) -> float:
        """The array's utilization over the whole model: each layer's executed MACs over the array's peak in the
        element type it runs in (an int8 layer against the int8 peak), summed, over the model's cycles. That is
        the time-weighted mean of the array layers' utilization, with vector-unit and communication layers
        counting as time without array work: never above the busiest array layer's, nor 1."""
        total = self.total
        return round(sum(m / (total * p) for p, m in self.macs_by_peak), 6) if total else 0.0

    def fallback_share_of_time(self) -> float:
        return round(self.fallback_cycles / self.total, 6) if self.total else 0.0

    def effective_clock_ghz(self, nominal_ghz: float) -> float:
        """The time-weighted mean clock of the clocked layers: cycles at each one's clock over their nominal-clock
        cycles (time). Collectives (no clock) are left out; the nominal clock when no layer is clocked."""
        clocked = self.clocked_cycles
        return round(nominal_ghz * self.clock_cycles / clocked, 6) if clocked else nominal_ghz

    def binding(self) -> tuple[str, float]:
        """The resource binding most of the model's cycles, and that share of them."""
        best = max(BINDING_NAMES, key=lambda b: (self.binding_cycles[b], -BINDING_NAMES.index(b)))
        return best, round(self.binding_cycles[best] / self.total, 6) if self.total else 0.0


def model_totals(layers: Iterable[LayerTotals], dense_total_cycles: int) -> ModelTotals:
    """The one summation of per-layer totals into a model's (``dense_total_cycles``: its dense baseline)."""
    total = compute = stall_mem = stall_dec = launch = stall_gat = comm = 0
    gathers = communicates = False
    dram = [0, 0, 0, 0]
    sram = [0, 0, 0, 0]
    macs = macs_exec = n_layers = requested = fallback = fallback_cycles = clock_cycles = capped = clocked = 0
    paths: dict[str, int] = {}
    by_peak: dict[float, int] = {}
    bind = dict.fromkeys(BINDING_NAMES, 0)
    for t, path, req, m, mx, peak, n, at_clock, is_capped in layers:
        if mx:  # the array's work, against its peak in the layer's element type
            if peak <= 0:
                raise ValueError(f"a {path} layer executed {mx:,} MACs but has no array peak to measure them against")
            by_peak[peak] = by_peak.get(peak, 0) + n * mx
        cyc = n * t.total
        total += cyc
        if at_clock is not None:
            clock_cycles += n * at_clock
            clocked += n * t.total
        if is_capped:
            capped += n
        compute += n * t.compute
        stall_mem += n * t.stall_memory
        stall_dec += n * t.stall_decode
        stall_gat += n * t.stall_gather
        gathers = gathers or t.gather_rows > 0
        comm += n * t.communication
        communicates = communicates or path == "communication"
        launch += n * t.launch
        dram[0] += n * t.dram_a_values
        dram[1] += n * t.dram_a_metadata
        dram[2] += n * t.dram_b
        dram[3] += n * t.dram_c
        sram[0] += n * t.sram_a_values
        sram[1] += n * t.sram_a_metadata
        sram[2] += n * t.sram_b
        sram[3] += n * t.sram_c
        bind[t.binding] += cyc
        macs += n * m
        macs_exec += n * mx
        n_layers += n
        paths[path] = paths.get(path, 0) + n
        if req:
            requested += n
            if path != "sparse":
                fallback += n
                fallback_cycles += cyc
    return ModelTotals(
        cycles={"total": total, "compute": compute, "stall_memory": stall_mem, "stall_decode": stall_dec,
                "launch": launch, **({"stall_gather": stall_gat} if gathers else {}),
                **({"communication": comm} if communicates else {})},
        dram=dict(zip(TENSORS, dram, strict=True)), sram=dict(zip(TENSORS, sram, strict=True)), macs=macs,
        macs_executed=macs_exec, layers=n_layers, layers_by_path=dict(sorted(paths.items())),
        requested_layers=requested, fallback_layers=fallback, fallback_cycles=fallback_cycles, binding_cycles=bind,
        dense_total_cycles=dense_total_cycles, clock_cycles=clock_cycles, capped_layers=capped,
        clocked_cycles=clocked, macs_by_peak=tuple(sorted(by_peak.items())))


@dataclass(frozen=True, eq=False)
class KernelResult:
    """Simulated cost of one kernel (layer). Frozen; equal to another when their JSON forms are.

    ``counts`` (decode groups, vector ops and the clock fraction, which energy is computed from) and
    ``tiles`` (per-tile records, :data:`TILE_DTYPE`) are not part of the JSON: a result read back has neither.

    Cycles are nominal-clock cycles (time x the config's ``clock_ghz``); ``clock`` (None in results
    written before clocks were echoed): ``ghz`` (the kernel's own), ``limit`` (:data:`CLOCK_LIMITS`),
    ``power_capped`` (the cap lowered it), ``cycles_at_clock`` (cycles of its own clock), ``power_w`` (at that
    clock, when a cap governs and the kernel takes time) and ``dense_ghz`` (its dense baseline's, when that is
    another kernel). Collectives have no clock (None)."""

    name: str
    op: str
    shape: Mapping[str, int]
    path: str
    pattern_requested: str | None
    pattern_executed: str | None
    reason: str | None
    padding: Mapping[str, Sequence[int]]
    cycles: Mapping[str, int]
    macs: int
    macs_executed: int
    utilization: float
    bytes: Mapping[str, Mapping[str, int]]
    binding: str
    busy: Mapping[str, int]
    tiling: Mapping[str, Any]
    dense_cycles: int | None = None  # the dense baseline's total cycles; None: this kernel is its own baseline
    counts: Mapping[str, float] = field(default_factory=dict)
    tiles: np.ndarray | None = field(default=None, repr=False)
    energy: Mapping[str, Any] | None = None
    clock: Mapping[str, Any] | None = None
    dtype: str | None = None  # the element type it runs in when not the workload's (a quantized linear's weights)

    def __post_init__(self) -> None:  # read-only all the way down (FrozenDict, FrozenList): a result never changes
        for name in _KERNEL_TREES:
            value = getattr(self, name)
            if value is not None and type(value) is not FrozenDict:
                object.__setattr__(self, name, frozen_tree(value))

    def __deepcopy__(self, memo: dict[int, Any]) -> KernelResult:
        return self  # immutable (its tiles are read-only)

    @property
    def speedup_vs_dense(self) -> float:
        """Dense-baseline cycles over this kernel's cycles (1.0 for its own baseline or zero cycles)."""
        total = self.cycles["total"]
        return self.dense_cycles / total if self.dense_cycles is not None and total else 1.0

    @property
    def baseline_cycles(self) -> int:
        """The dense baseline's total cycles (this kernel's own when it is the baseline)."""
        return self.cycles["total"] if self.dense_cycles is None else self.dense_cycles

    def replace(self, **changes: Any) -> KernelResult:
        """A copy with ``changes`` (frozen in turn); the parts it leaves alone, all read-only, are shared.

        What ``dataclasses.replace`` does, without its per-field ``__init__`` (a run replaces every layer twice)."""
        if type(self) is not KernelResult or not changes.keys() <= _RESULT_FIELDS:
            return dataclasses.replace(self, **changes)  # (its TypeError naming an unknown field)
        out = object.__new__(KernelResult)
        values = out.__dict__
        values.update(self.__dict__)
        for name, value in changes.items():
            values[name] = frozen_tree(value) if name in _KERNEL_TREE_SET and value is not None and \
                type(value) is not FrozenDict else value
        return out

    def layer_totals(self, peak: float = 0.0) -> LayerTotals:
        """This layer's share of a model total (``peak``: the array's dense MACs per cycle in the element type it
        runs in, :meth:`RunResult.layer_peak`; needed where it executed MACs)."""
        c, d, s, b = self.cycles, self.bytes["dram"], self.bytes["sram"], self.busy
        t = KernelTotals(c["total"], c["compute"], c["stall_memory"], c["stall_decode"], c["launch"], d["a_values"],
                         d["a_metadata"], d["b"], d["c"], s["a_values"], s["a_metadata"], s["b"], s["c"], b["memory"],
                         b[(stage := next((n for n in STAGE_NAMES if n in b), "decode"))], self.binding,
                         float(self.counts.get("decode_groups", 0.0)), stage, c.get("stall_gather", 0),
                         b.get("gather", 0), float(self.counts.get("gather_rows", 1.0 if "gather" in b else 0.0)),
                         c.get("communication", 0))
        clock = self.clock
        return LayerTotals(t, self.path, bool(self.pattern_requested), self.macs, self.macs_executed, peak, 1,
                           None if clock is None else clock["cycles_at_clock"],
                           clock is not None and clock["power_capped"])

    def in_nominal_cycles(self, fraction: float, clock: dict[str, Any]) -> KernelResult:
        """This result, simulated at ``fraction`` of the nominal clock, with its cycles counted as nominal-clock
        cycles (:meth:`KernelTotals.in_nominal_cycles`), tile records alike, ``clock`` echoed (plus
        ``cycles_at_clock``). Shares the dicts it leaves alone with this result (a cache entry's view)."""
        if fraction == 1.0:  # the hot path: a shallow copy with the clock echoed
            out = object.__new__(KernelResult)
            out.__dict__.update(self.__dict__, clock=frozen_tree({**clock, "cycles_at_clock": self.cycles["total"]}))
            return out
        actual = self.layer_totals().totals
        t, tiles, util = actual.in_nominal_cycles(fraction), self.tiles, self.utilization
        util = util * actual.total / t.total if t.total else util
        if tiles is not None:
            tiles = tiles.copy()
            for col in TILE_CYCLE_COLUMNS:
                tiles[col] = tiles[col] / fraction
            tiles.setflags(write=False)
        wait = self.tiling.get("host_wait_cycles")  # cycles, like the launch it is part of
        tiling = {**self.tiling, "host_wait_cycles": round(wait / fraction)} if wait else self.tiling
        return dataclasses.replace(self, cycles=t.cycles(), busy=t.busy(), tiles=tiles, utilization=util,
                                   counts={**self.counts, "clock_fraction": fraction}, tiling=tiling,
                                   clock={**clock, "cycles_at_clock": actual.total})

    def to_dict(self) -> dict[str, Any]:
        """JSON body of this layer (no per-tile records, no ``counts``) as plain data: a copy to change freely."""
        return thawed(self.view())

    def view(self) -> dict[str, Any]:
        """What ``to_dict`` copies, its values this result's own (read-only, shared: no copying)."""
        return {
            "name": self.name, "op": self.op, "shape": self.shape, **({"dtype": self.dtype} if self.dtype else {}),
            "path": self.path,
            "pattern_requested": self.pattern_requested, "pattern_executed": self.pattern_executed,
            "reason": self.reason, "padding": self.padding, "cycles": self.cycles,
            "macs": self.macs, "macs_executed": self.macs_executed,
            "utilization": round(self.utilization, 6), "bytes": self.bytes, "binding": self.binding,
            "busy": self.busy, "tiling": self.tiling,
            "speedup_vs_dense": round(self.speedup_vs_dense, 6), "dense_cycles": self.baseline_cycles,
            **({"energy": self.energy} if self.energy is not None else {}),
            **({"clock": self.clock} if self.clock is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelResult:
        """The layer of a result's JSON (its ``to_dict()``). A layer written before ``dense_cycles`` was
        recorded gets its baseline from the rounded ``speedup_vs_dense`` (exact below a million cycles)."""
        total = data["cycles"]["total"]
        dense = data["dense_cycles"] if "dense_cycles" in data else round(data["speedup_vs_dense"] * total)
        fields = {k: data[k] for k in _LAYER_KEYS}  # frozen (copied) by __post_init__
        return cls(**fields, dense_cycles=int(dense), energy=data.get("energy"), clock=data.get("clock"),
                   dtype=data.get("dtype"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelResult):
            return NotImplemented
        return json_form(self.view()) == json_form(other.view())


_KERNEL_TREES = ("shape", "padding", "cycles", "bytes", "busy", "tiling", "counts", "energy", "clock")
_KERNEL_TREE_SET = frozenset(_KERNEL_TREES)
_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(KernelResult))
_LAYER_KEYS = ("name", "op", "shape", "path", "pattern_requested", "pattern_executed", "reason", "padding", "cycles",
               "macs", "macs_executed", "utilization", "bytes", "binding", "busy", "tiling")


@dataclass(frozen=True, eq=False)
class RunResult:
    """A whole workload on one hardware config: per-layer results and totals.

    Frozen; equal to another when their JSON forms (``to_dict()``) are. ``totals`` and ``by_op_type``
    are computed from the layers on each access. ``from_dict`` / ``from_json`` read the JSON back.
    """

    hardware: Mapping[str, Any]
    workload: Mapping[str, Any]
    sparsity: str | None
    layers: Sequence[KernelResult]  # a tuple
    clock_ghz: float
    peak_macs_per_cycle: float
    meta: Mapping[str, Any] = field(default_factory=dict)
    dense_total_cycles: int = 0
    policy: str = "sparse-if-supported"
    footprint: Mapping[str, Any] = field(default_factory=dict)
    warnings: Sequence[str] = field(default_factory=list)
    system: Mapping[str, Any] | None = None  # tensor-parallel systems only: devices, split, communication
    # the array's dense MACs/cycle in each KernelResult.dtype (quantized linears; the workload's: peak_macs_per_cycle)
    dtype_peaks: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:  # read-only all the way down: a result never changes
        for name in ("hardware", "workload", "meta", "footprint", "warnings", "system", "dtype_peaks"):
            object.__setattr__(self, name, frozen_tree(getattr(self, name)))
        object.__setattr__(self, "layers", tuple(self.layers))

    def __deepcopy__(self, memo: dict[int, Any]) -> RunResult:
        return self  # immutable

    def layer_peak(self, layer: KernelResult) -> float:
        """The array's dense MACs/cycle in the type ``layer`` runs in (its utilization's); 0.0 off the array."""
        if layer.path in ("vector", "communication"):
            return 0.0
        return self.peak_macs_per_cycle if layer.dtype is None else self.dtype_peaks[layer.dtype]

    @property
    def total_cycles(self) -> int:
        return sum(r.cycles["total"] for r in self.layers)

    def model_totals(self) -> ModelTotals:
        """Sums over layers (the same summation a sweep row comes from)."""
        return model_totals((r.layer_totals(self.layer_peak(r)) for r in self.layers), self.dense_total_cycles)

    @property
    def totals(self) -> dict[str, Any]:
        """Sums over layers and model-level speedup (computed on each access)."""
        t = self.model_totals()
        return {
            "cycles": t.cycles,
            "latency_us": t.latency_us(self.clock_ghz),
            "macs": t.macs,
            "macs_executed": t.macs_executed,
            "utilization": t.utilization(),
            "bytes": {"dram": t.dram, "sram": t.sram} if self.layers else {},
            "layers": t.layers,
            "layers_by_path": t.layers_by_path,
            "dense_total_cycles": self.dense_total_cycles,
            "speedup_vs_dense": t.speedup_vs_dense(),
            **({"energy": self.energy_totals()} if self.layers and self.layers[0].energy is not None else {}),
            "fallback": {"layers": t.fallback_layers, "cycles": t.fallback_cycles,
                         "share_of_time": t.fallback_share_of_time()},
            **({"clock": self.clock_totals(t)} if self.layers and self.layers[0].clock is not None else {}),
        }

    def clock_totals(self, t: ModelTotals | None = None) -> dict[str, Any]:
        """Clocks (:func:`accelsim.run_clocks.clock_totals`): nominal, time-weighted effective over the clocked
        layers (overall, per path, dense baseline), layers capped, the governor."""
        return clock_totals(self.layers, t or self.model_totals(), self.clock_ghz, self.hardware,
                            self.workload.get("dtype", ""))

    def energy_totals(self) -> dict[str, Any]:
        """Model energy by component and tensor, power, inferences per joule, dense vs this run (systems: all)."""
        seconds = self.total_cycles / (self.clock_ghz * 1e9)
        parts = [rounded(r.energy) for r in self.layers if r.energy is not None]  # as the body carries them
        out = sum_energy(parts, seconds)
        dense_j = sum(p["dense_total_j"] for p in parts)
        out["dense_total_j"] = dense_j
        out["perf_per_watt_vs_dense"] = dense_j / out["total_j"] if out["total_j"] else 1.0
        n = int((self.system or {}).get("devices", 1))  # a system: every device's, one device's in per_device
        return rounded(out if n == 1 else system_energy(rounded(out), n))

    def by_op_type(self) -> list[dict[str, Any]]:
        """Counts and time per (op type, path), largest time first."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        total = self.total_cycles or 1
        for r in self.layers:
            g = groups.setdefault((r.op, r.path), {"op": r.op, "path": r.path, "count": 0, "cycles": 0,
                                                   "dense_cycles": 0, "reasons": {}})
            g["count"] += 1
            g["cycles"] += r.cycles["total"]
            g["dense_cycles"] += r.baseline_cycles
            if r.reason:
                g["reasons"][r.reason] = g["reasons"].get(r.reason, 0) + 1
        out = sorted(groups.values(), key=lambda g: (-g["cycles"], g["op"], g["path"]))
        for g in out:
            g["share_of_time"] = round(g["cycles"] / total, 6)
            g["reasons"] = dict(sorted(g["reasons"].items()))
        return out

    def body(self) -> dict[str, Any]:
        """Everything except ``meta`` as plain data (a copy): byte-identical for identical inputs."""
        return thawed(self._body_view())

    def _body_view(self) -> dict[str, Any]:  # body() with this result's own read-only values (no copying)
        return {
            "schema_version": SCHEMA_VERSION,
            "hardware": self.hardware,
            "workload": self.workload,
            "sparsity": self.sparsity,
            "policy": self.policy,
            "layers": [r.view() for r in self.layers],
            "totals": self.totals,
            "by_op_type": self.by_op_type(),
            "footprint": self.footprint,
            "warnings": self.warnings,
            **({"system": self.system} if self.system is not None else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form as plain data (a copy to change freely): ``schema_version``, ``meta``, then the body."""
        return thawed(self._view())

    def _view(self) -> dict[str, Any]:
        body = self._body_view()
        return {"schema_version": body.pop("schema_version"), "meta": self.meta, **body}

    def to_json(self) -> str:
        return dumps_finite(self._view(), "run result", indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> RunResult:
        """Read a result back from its JSON text (``accelsim run --format json``, or a golden body)."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise AccelsimError(f"not an accelsim result: invalid JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Rebuild a result from its ``to_dict()`` (``meta`` optional): the rebuilt result's ``to_json()`` is
        byte-identical. Per-tile records and per-layer ``counts`` are not in the JSON, so it has neither."""
        if not isinstance(data, Mapping) or "layers" not in data or "schema_version" not in data:
            raise AccelsimError("not an accelsim result: expected the JSON of 'accelsim run --format json' "
                                "(with 'schema_version' and 'layers')")
        if data["schema_version"] != SCHEMA_VERSION:
            raise AccelsimError(f"result schema_version {data['schema_version']!r}: this accelsim reads "
                                f"version {SCHEMA_VERSION} ('accelsim regress' migrates older results)")
        try:
            hw = hardware_from_dict(thawed(data["hardware"]), "<result hardware>")
            problem = result_problem(data)  # the numbers totals are built from: refused now, not at r.totals
            if problem is not None:
                raise AccelsimError(f"not an accelsim result: {problem}")
            own, layer_dtypes = data["workload"]["dtype"], {d["dtype"] for d in data["layers"] if d.get("dtype")}
            return cls(hardware=data["hardware"], workload=data["workload"],  # frozen (copied) by __post_init__
                       sparsity=data["sparsity"], layers=[KernelResult.from_dict(d) for d in data["layers"]],
                       clock_ghz=hw.clock_ghz, peak_macs_per_cycle=peak_macs_per_cycle(hw, own),
                       dtype_peaks={d: peak_macs_per_cycle(hw, d) for d in sorted(layer_dtypes)},
                       meta=data.get("meta", {}), dense_total_cycles=data["totals"]["dense_total_cycles"],
                       policy=data["policy"], footprint=data["footprint"], warnings=list(data["warnings"]),
                       system=data.get("system"))
        except (KeyError, TypeError) as exc:
            raise AccelsimError(f"not an accelsim result: {type(exc).__name__} {exc} while reading it") from None

    def to_dataframe(self) -> pd.DataFrame:
        """One row per layer, nested fields flattened (``cycles_total``, ``bytes_dram_b``...). Needs pandas."""
        return to_dataframe([r.view() for r in self.layers])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunResult):
            return NotImplemented
        return json_form(self._view()) == json_form(other._view())


def sum_energy(parts: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Add per-op energies (at least one, from ``energy.layer_energy``) into a model total (exact sums: fsum)."""
    comp = {c: math.fsum(p["by_component_j"][c] for p in parts) for c in parts[0]["by_component_j"]}
    tens = {t: math.fsum(p["by_tensor_j"][t] for p in parts) for t in parts[0]["by_tensor_j"]}
    total = math.fsum(comp.values())
    return {"total_j": total, "by_component_j": comp, "by_tensor_j": tens,
            "avg_power_w": total / seconds if seconds else 0.0, "inferences_per_j": 1.0 / total if total else 0.0}
