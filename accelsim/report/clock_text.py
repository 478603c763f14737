"""The clock a run ran at, in words: one wording for ``run``'s clock line, ``report``'s summary and ``serve``.

Each function takes a run's ``totals.clock`` (:meth:`~accelsim.results.RunResult.clock_totals`, or a
:class:`~accelsim.energy.RunClock`'s ``to_dict()``): nominal and time-weighted effective clocks, per path,
the dense baseline's, the layers the power cap lowered and what governed them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["capped_clocks_line", "clock_line", "clock_state"]

_NOMINAL_WHY = {"no_power_cap": "the config has no energy.power_cap, so no power limit applies",
                "no_energy": "no energy figures for this config / dtype, so the power cap cannot apply"}


def clock_state(c: Mapping[str, Any], layers: int, dtype: str = "") -> str:
    """What governed the clock: why every layer ran at nominal, or the cap, the layers it bound and the
    effective clocks (time-weighted; per path; the dense baseline's)."""
    if c["governor"] in _NOMINAL_WHY:
        why = _NOMINAL_WHY[c["governor"]] + (f" ({dtype})" if c["governor"] == "no_energy" and dtype else "")
        return f"every layer at it: {why}"
    if not c["power_capped_layers"]:
        return f"every layer at it: power cap {c['tdp_w']:g} W not reached"
    paths = ", ".join(f"{p} {g:.3f}" for p, g in c["by_path"].items())
    return (f"power cap {c['tdp_w']:g} W bound {c['power_capped_layers']:,} of {layers:,} layers: effective "
            f"{c['effective_ghz']:.3f} GHz (time-weighted; {paths}; dense baseline {c['dense_baseline_ghz']:.3f})")


def clock_line(c: Mapping[str, Any], layers: int, dtype: str = "") -> str:
    """``run``'s clock line: the nominal clock and :func:`clock_state` (said also when nothing governed it)."""
    head = f"clock {c['nominal_ghz']:g} GHz nominal"
    return f"{head}{' | ' if c['power_capped_layers'] else ', '}{clock_state(c, layers, dtype)}"


def capped_clocks_line(runs: Mapping[str, Mapping[str, Any]], where: str = "") -> str:
    """Several runs' clocks on one line, by label (each a ``RunClock.to_dict()``, with ``layers``): the nominal
    clock, ``where`` (what the figures cover), then each run's :func:`clock_state`."""
    first = next(iter(runs.values()))
    parts = [f"{label}: {clock_state(c, c['layers'])}" for label, c in runs.items()]
    return f"clock {first['nominal_ghz']:g} GHz nominal{where} | " + " | ".join(parts)
