"""The clock a run ran at, in words: one wording for ``run``'s clock line, ``report``'s summary and ``serve``.

Each function takes a run's ``totals.clock`` (:meth:`~accelsim.results.RunResult.clock_totals`, or a
:class:`~accelsim.energy.RunClock`'s ``to_dict()``): nominal and time-weighted effective clocks, per path,
the dense baseline's, the layers the power cap lowered and what governed them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["capped_clocks_line", "clock_line", "clock_state"]

def _nominal_why(c: Mapping[str, Any]) -> str | None:
    """Why no governor set any clock (every layer at nominal), or None when the power cap governs."""
    if c["governor"] == "no_power_cap":
        return "the config has no energy.power_cap, so no power limit applies"
    if c["governor"] == "no_energy":
        missing = ", ".join(c["no_energy_layers"])
        if not missing:
            return "the config has no energy figures, so no power cap can apply"
        return f"the config's energy figures have no {missing} entry, so the power cap cannot apply"
    return None


def _unpowered(c: Mapping[str, Any]) -> str:
    """Layers the cap could not govern (an element type without energy figures): they ran at nominal."""
    kinds = c["no_energy_layers"]
    return "".join(f"; {n:,} {d} layer(s) at nominal: the config's energy figures have no {d} entry"
                   for d, n in kinds.items())


def clock_state(c: Mapping[str, Any], layers: int) -> str:
    """What governed the clock: why every layer ran at nominal, or the cap, the layers it bound and the
    effective clocks (time-weighted over the clocked layers; per path; the dense baseline's). ``layers``
    counts every layer of the run; collectives (no clock) are said to be left out."""
    why = _nominal_why(c)
    if why is not None:
        return f"every layer at it: {why}"
    tdp, capped, over = c["tdp_w"], c["power_capped_layers"], c["over_cap_layers"]
    nominal, dense = c["nominal_ghz"], c["dense_baseline_ghz"]
    if not capped:
        if over:  # the floor is the nominal clock (min_clock_fraction 1): the cap can lower nothing
            head = (f"every layer at it: {over:,} of {layers:,} layers draw more than the power cap {tdp:g} W even "
                    "at the floor clock, which is the nominal one (energy.power_cap.min_clock_fraction 1: no "
                    "throttling possible)")
        else:
            head = f"every layer at it: power cap {tdp:g} W not reached by this run"
        if dense < nominal:
            head += (f", but reached by its dense baseline: its layers ran at {dense:.3f} GHz (time-weighted), "
                     "which the speedup vs dense counts")
        return head + _unpowered(c)
    paths = ", ".join(f"{p} {g:.3f}" for p, g in c["by_path"].items())
    unclocked = c["unclocked_layers"]
    over_text = f" ({over:,} over it even at the floor clock)" if over else ""
    weighted = (f"time-weighted over the clocked layers, {unclocked:,} collective(s) left out"
                if unclocked else "time-weighted")
    return (f"power cap {tdp:g} W bound {capped:,} of {layers:,} layers{over_text}: effective "
            f"{c['effective_ghz']:.3f} GHz ({weighted}; {paths}; dense baseline {dense:.3f})" + _unpowered(c))


def clock_line(c: Mapping[str, Any], layers: int) -> str:
    """``run``'s clock line: the nominal clock and :func:`clock_state` (said also when nothing governed it)."""
    head = f"clock {c['nominal_ghz']:g} GHz nominal"
    return f"{head}{' | ' if c['power_capped_layers'] else ', '}{clock_state(c, layers)}"


def capped_clocks_line(runs: Mapping[str, Mapping[str, Any]], where: str = "") -> str:
    """Several runs' clocks on one line, by label (each a ``RunClock.to_dict()``, with ``layers``): the nominal
    clock, ``where`` (what the figures cover), then each run's :func:`clock_state`."""
    first = next(iter(runs.values()))
    parts = [f"{label}: {clock_state(c, c['layers'])}" for label, c in runs.items()]
    return f"clock {first['nominal_ghz']:g} GHz nominal{where} | " + " | ".join(parts)
