"""A run's clocks taken together: ``totals.clock`` (:meth:`accelsim.results.RunResult.clock_totals`).

Clocked layers are those that echo a ``clock`` (every kernel a device runs); a tensor-parallel system's
collectives run on the interconnect, take no clock and are left out of every clock figure here (counted in
``unclocked_layers``). The governor is the config's: ``no_energy`` (no energy figures, or none for any
clocked layer's element type), ``no_power_cap`` (energy figures but no ``energy.power_cap``), else
``power_cap``; under a cap, layers of an element type the energy tables lack run at the nominal clock and
are counted by type in ``no_energy_layers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelsim.results import KernelResult, ModelTotals

__all__ = ["clock_totals"]


def clock_totals(layers: Sequence[KernelResult], t: ModelTotals, nominal: float, hardware: Mapping[str, Any],
                 workload_dtype: str) -> dict[str, Any]:
    """Clocks of ``layers`` (a run's, summed into ``t``): nominal, time-weighted effective (overall, per path, the
    dense baseline's) over the clocked layers, layers the cap lowered / left over it at the floor clock, layers
    without energy figures by element type, unclocked layers (collectives), the governor and its TDP."""
    paths: dict[str, list[int]] = {}
    dense_weighted, dense_time, over, unclocked = 0.0, 0, 0, 0
    no_energy: dict[str, int] = {}
    has_energy = bool(hardware.get("energy"))
    for r in layers:
        c = r.clock
        if c is None:  # a collective: interconnect time, no clock of its own
            unclocked += 1
            continue
        acc = paths.setdefault(r.path, [0, 0])
        acc[0], acc[1] = acc[0] + c["cycles_at_clock"], acc[1] + r.cycles["total"]
        dense_weighted += c.get("dense_ghz", c["ghz"]) * r.baseline_cycles
        dense_time += r.baseline_cycles
        over += c["limit"] == "clock_floor"
        if c["limit"] == "no_energy" and has_energy:
            dtype = r.dtype or workload_dtype
            no_energy[dtype] = no_energy.get(dtype, 0) + 1
    energy = hardware.get("energy") or {}
    cap = energy.get("power_cap")
    clocked = len(layers) - unclocked
    if not energy or (cap and clocked and sum(no_energy.values()) == clocked):
        governor = "no_energy"
    else:
        governor = "power_cap" if cap else "no_power_cap"
    return {"nominal_ghz": nominal, "effective_ghz": t.effective_clock_ghz(nominal),
            "by_path": {p: round(nominal * a / b, 6) if b else nominal for p, (a, b) in sorted(paths.items())},
            "dense_baseline_ghz": round(dense_weighted / dense_time, 6) if dense_time else nominal,
            "power_capped_layers": t.capped_layers, "over_cap_layers": over,
            "no_energy_layers": dict(sorted(no_energy.items())), "unclocked_layers": unclocked,
            "governor": governor, "tdp_w": cap["tdp_w"] if cap and governor == "power_cap" else None}
