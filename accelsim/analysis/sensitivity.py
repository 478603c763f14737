"""Sensitivity of the sparse speedup to the config's calibrated fields.

Each CALIBRATED field of the compute kind (its ``calibrated_fields``), and the host's per-call floor where the
config has one (``host.call_floor_us``, fitted with them), is perturbed by ``-/+`` :data:`PERTURBATION` in turn
(efficiencies and the sustained DRAM fraction capped at 1) and the workload re-run: the spread of the speedups says
how much of the gain rests on calibration.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from accelsim.hardware.kinds import kind_of
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.records import Record
from accelsim.simulation import run
from accelsim.workloads.model import Workload

__all__ = ["PERTURBATION", "PerturbedRun", "Sensitivity", "perturbed", "sensitivity"]

PERTURBATION = 0.10


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerturbedRun(Record):
    field: str       # dotted path of the config field
    factor: float    # 0.9 or 1.1
    value: Any       # the config's value
    perturbed: Any   # the value run
    speedup: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sensitivity(Record):
    fields: tuple[str, ...]
    perturbation: float
    runs: tuple[PerturbedRun, ...]
    speedup: float
    range: tuple[float, float]  # lowest and highest speedup, nominal included
    width: float
    gain: float
    crosses_one: bool
    wider_than_gain: bool
    note: str | None


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


def perturbed(hw: Hardware, path: tuple[str, ...], factor: float) -> tuple[Hardware, Any, Any]:
    """A copy of ``hw`` with the field at ``path`` times ``factor``; the old and the new value."""
    d = copy.deepcopy(hw.to_dict())
    node = d
    for key in path[:-1]:
        node = node[key]
    old = node[path[-1]]
    if isinstance(old, int):
        new: float = int(round(old * factor))
    else:
        new = min(1.0, old * factor) if ("efficiency" in path or "sustained_fraction" in path) else old * factor
    node[path[-1]] = new
    return hardware_from_dict(d, f"<{hw.name} perturbed>"), old, new


def sensitivity(model: Workload, hw: Hardware, sparsity: str | None, policy: str, speedup: float) -> Sensitivity:
    """Re-run ``model`` with each calibrated field of ``hw`` perturbed; ``speedup`` is the nominal run's."""
    fields = [tuple(dotted.split(".")) for dotted in kind_of(hw).calibrated_fields]
    if hw.host.call_floor_us:  # the family's fitted host floor (0: not modelled, nothing to perturb)
        fields.append(("host", "call_floor_us"))
    runs = []
    for path in fields:
        for sign in (-1, +1):
            variant, old, new = perturbed(hw, path, 1.0 + sign * PERTURBATION)
            res = run(model, variant, sparsity, policy=policy)
            runs.append(PerturbedRun(field=".".join(path), factor=1.0 + sign * PERTURBATION, value=old, perturbed=new,
                                     speedup=_ratio(res.dense_total_cycles, res.total_cycles)))
    values = [speedup] + [x.speedup for x in runs]
    lo, hi = min(values), max(values)
    return Sensitivity(fields=tuple(".".join(p) for p in fields), perturbation=PERTURBATION, runs=tuple(runs),
                       speedup=speedup, range=(lo, hi), width=hi - lo, gain=speedup - 1.0,
                       crosses_one=bool(runs) and lo <= 1.0 <= hi,
                       wider_than_gain=bool(runs) and (hi - lo) > abs(speedup - 1.0),
                       note=None if fields else f"no CALIBRATED fields on a {hw.core.compute.kind} part")
