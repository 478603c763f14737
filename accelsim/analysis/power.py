"""Power-limited runs: power over time of a dense and a sparse run, and what the power cap's governor does.

:func:`profile_power` takes one run at the nominal clock (made with ``keep_tiles=True`` on
``energy.uncapped(hw)``, a config with an energy block) and returns its :class:`PowerProfile`: power
in fixed windows over ``repeats`` back-to-back inferences (:func:`accelsim.energy.power_profile`),
the run under the transient governor (it lowers the clock while the smoothed power is above the
cap's TDP: capped latency, clock over time), the uncapped figures and, when given the same run on
``hw`` itself, its steady state: each kernel at its power-limited clock, what ``run``, ``sweep``,
``serve`` and ``report`` use (:func:`accelsim.energy.settle_clock`; the transient loop draws the
same power-vs-clock relation and settles there on a steady load). :func:`compare_power` pairs a
dense and a sparse run; :func:`power_limited` simulates both for a workload and compares them.
``accelsim plot power`` draws the comparison (:func:`accelsim.report.plots.plot_power`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from accelsim.energy import power_profile as _energy_power_profile
from accelsim.energy import power_windows, uncapped
from accelsim.errors import ConfigError
from accelsim.hardware.model import Hardware
from accelsim.records import OMIT_IF_NONE, Record
from accelsim.results import RunResult
from accelsim.simulation import run
from accelsim.workloads.model import Workload
from accelsim.workloads.plan import PLAN_LABEL

__all__ = ["GovernedRun", "PowerComparison", "PowerProfile", "PowerTrace", "SteadyRun", "UncappedRun",
           "compare_power", "power_limited", "profile_power"]


def _frozen_array(values: Any) -> np.ndarray:
    arr = np.array(values)
    arr.setflags(write=False)
    return arr


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class PowerTrace(Record):
    """Power in fixed windows (read-only arrays, one entry per window)."""

    t_s: np.ndarray        # window start (s)
    width_s: np.ndarray    # window width (s); the last one may be shorter
    dynamic_j: np.ndarray  # dynamic energy deposited in the window (J)
    power_w: np.ndarray    # dynamic / width + static (W)
    static_w: np.ndarray   # static power (W)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class GovernedRun(Record):
    """The run under the power governor; ``capped`` is False when the config has no power cap."""

    capped: bool
    tdp_w: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    latency_s: float
    uncapped_latency_s: float
    throttled: bool
    min_clock_fraction: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    avg_power_w: float
    peak_power_w: float
    clock_fraction: np.ndarray  # clock per window, as a fraction of the nominal clock
    power_w: np.ndarray | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # power per window


@dataclasses.dataclass(frozen=True, kw_only=True)
class UncappedRun(Record):
    latency_s: float
    avg_power_w: float
    peak_power_w: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class SteadyRun(Record):
    """The run with every kernel at its steady power-limited clock (what ``accelsim run`` reports), repeated."""

    latency_s: float
    effective_clock_ghz: float  # time-weighted
    clock_by_path_ghz: dict[str, float]
    power_capped_layers: int  # per inference
    avg_power_w: float | None  # one device's (on a tensor-parallel system, as the trace and the TDP)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PowerProfile(Record):
    """One run's power over time, uncapped and under the governor (transient, and steady when known)."""

    label: str
    trace: PowerTrace
    capped: GovernedRun
    uncapped: UncappedRun
    repeats: int
    window_s: float
    steady: SteadyRun | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PowerComparison(Record):
    """A dense and a sparse run's power profiles on one config."""

    hardware: str
    workload: str
    sparsity: str | None    # the sparse run's pattern (None: the workload's own plan)
    tdp_w: float | None     # the config's power cap (None: no cap)
    repeats: int
    profiles: tuple[PowerProfile, ...]  # dense first, then the sparse run
    clock_ghz: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # the config's nominal clock
    devices: int = 1  # a tensor-parallel system's: the traces, powers and TDP are one device's (1 of devices)


def _steady(result: RunResult, repeats: int) -> SteadyRun:
    t = result.totals
    clock = t.get("clock") or {"effective_ghz": result.clock_ghz, "by_path": {}, "power_capped_layers": 0}
    return SteadyRun(latency_s=repeats * t["latency_us"] * 1e-6, effective_clock_ghz=clock["effective_ghz"],
                     clock_by_path_ghz=dict(clock["by_path"]), power_capped_layers=clock["power_capped_layers"],
                     avg_power_w=_device_energy(t)["avg_power_w"] if "energy" in t else None)


def _device_energy(totals: dict[str, Any]) -> dict[str, Any]:
    """One device's energy totals (a system's ``per_device``): what its trace and the TDP are per."""
    return totals["energy"].get("per_device") or totals["energy"]


def profile_power(result: RunResult, hw: Hardware, *, label: str, repeats: int = 1,
                  window_s: float | None = None, steady: RunResult | None = None) -> PowerProfile:
    """Power over time of ``result`` (run at the nominal clock with ``keep_tiles=True``) ``repeats`` times back
    to back, capped or not; ``steady``: the same workload run on ``hw`` (its steady power-limited clocks)."""
    prof = _energy_power_profile(result, hw, repeats, window_s)
    tr, cap, unc = prof["trace"], prof["capped"], prof["uncapped"]
    return PowerProfile(
        label=label,
        trace=PowerTrace(**{k: _frozen_array(tr[k]) for k in ("t_s", "width_s", "dynamic_j", "power_w", "static_w")}),
        capped=GovernedRun(
            capped=bool(cap["capped"]), tdp_w=cap.get("tdp_w"), latency_s=cap["latency_s"],
            uncapped_latency_s=cap["uncapped_latency_s"], throttled=cap["throttled"],
            min_clock_fraction=cap.get("min_clock_fraction"), avg_power_w=cap["avg_power_w"],
            peak_power_w=cap["peak_power_w"], clock_fraction=_frozen_array(cap["clock_fraction"]),
            power_w=_frozen_array(cap["power_w"]) if "power_w" in cap else None),
        uncapped=UncappedRun(**unc),
        repeats=prof["repeats"],
        window_s=prof["window_s"],
        steady=_steady(steady, repeats) if steady is not None else None,
    )


def compare_power(dense: RunResult, sparse: RunResult, hw: Hardware, repeats: int = 1,
                  steady: tuple[RunResult, RunResult] | None = None) -> PowerComparison:
    """Power profiles of a dense and a sparse run of one workload on ``uncapped(hw)`` (both with
    ``keep_tiles=True``); ``steady``: the (dense, sparse) runs on ``hw`` itself."""
    if hw.energy is None:
        raise ConfigError("<hardware>", "energy", "this hardware config has no energy block")
    cap = hw.energy.power_cap
    return PowerComparison(
        hardware=hw.name, workload=str(dense.workload.get("name", "")), sparsity=sparse.sparsity,
        tdp_w=cap.tdp_w if cap is not None else None, repeats=repeats, clock_ghz=float(hw.clock_ghz),
        devices=hw.devices,
        profiles=(profile_power(dense, hw, label="dense", repeats=repeats, steady=steady[0] if steady else None),
                  profile_power(sparse, hw, label=sparse.sparsity or PLAN_LABEL, repeats=repeats,
                                steady=steady[1] if steady else None)))


def power_limited(model: Workload, hw: Hardware, sparsity: str | None, *, repeats: int = 1,
                  hw_source: str = "<hardware>") -> PowerComparison:
    """Simulate ``model`` sparse (``sparsity``; None: its plan) and dense on ``hw``, at the nominal clock (the
    traces) and at the steady power-limited clocks; compare their power."""
    nominal = uncapped(hw)
    sparse = run(model, nominal, sparsity, hw_source=hw_source, keep_tiles=True)
    dense = run(model, nominal, "dense", hw_source=hw_source, keep_tiles=True)
    cap = hw.energy.power_cap if hw.energy is not None else None
    if cap is not None:  # before the steady runs: a window too narrow for the traces is refused first
        for res in (dense, sparse):
            try:
                power_windows(res.total_cycles / (hw.clock_ghz * 1e9), cap.window_s, repeats)
            except ConfigError as exc:
                raise ConfigError(hw_source, exc.key, exc.problem) from None
    steady = (run(model, hw, "dense", hw_source=hw_source), run(model, hw, sparsity, hw_source=hw_source))
    return compare_power(dense, sparse, hw, repeats, steady)
