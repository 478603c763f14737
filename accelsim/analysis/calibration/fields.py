"""The five calibrated fields of a tensor-core config: their values, reading and setting them, the rows to fit.

The calibrated fields (and nothing else) are::

    core.compute.efficiency.dense    sustained share of tensor peak in the dense kernel's main loop
    core.compute.efficiency.sparse   the same for the 2:4 kernel (share of its doubled peak)
    launch_overhead_cycles.dense     fixed cost per dense GEMM kernel (launch, prologue, epilogue)
    launch_overhead_cycles.sparse    fixed cost per sparse GEMM kernel
    dram.sustained_fraction          share of the peak DRAM bandwidth a GEMM's access stream sustains
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from accelsim.analysis.measurements import MAIN_REGIMES, SPARSE_BOUND, Measurement, match_row
from accelsim.errors import AccelsimError
from accelsim.hardware.kinds import kind_of, kinds
from accelsim.hardware.model import Hardware, hardware_from_dict

# the fields this fit fits: a part can be calibrated when its compute kind's calibrated fields are these
CALIBRATED_FIELDS = ("core.compute.efficiency.dense", "core.compute.efficiency.sparse",
                     "launch_overhead_cycles.dense", "launch_overhead_cycles.sparse", "dram.sustained_fraction")
DEFAULT_GRID = (0.30, 0.40, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95, 1.00)
COARSE_GRID = (0.30, 0.55, 0.70, 0.85, 1.00)  # 2.6x faster tables; same optimum on the A100 set (tests, notebook)
DEFAULT_FRACTIONS = (0.70, 0.75, 0.80, 0.85, 1.0)  # dram.sustained_fraction candidates of the outer search
EFF_BOUNDS = (0.30, 1.00)
LAUNCH_MAX = 20000
EFF_STEP = 0.01
LAUNCH_STEP = 50


@dataclass(frozen=True)
class Calibration:
    """Values of the five calibrated fields (in ``CALIBRATED_FIELDS`` order)."""

    efficiency_dense: float
    efficiency_sparse: float
    launch_dense: int
    launch_sparse: int
    dram_sustained_fraction: float

    def to_dict(self) -> dict[str, Any]:
        """The values by field name."""
        return asdict(self)

    def fields(self) -> dict[str, float | int]:
        """The values keyed by config path (fractions as float, cycles as int)."""
        return dict(zip(CALIBRATED_FIELDS, (float(self.efficiency_dense), float(self.efficiency_sparse),
                                            int(self.launch_dense), int(self.launch_sparse),
                                            float(self.dram_sustained_fraction)), strict=True))


def _check_calibrated(hw: Hardware) -> None:
    """AccelsimError unless ``hw``'s compute kind calibrates the fields this fit fits."""
    if kind_of(hw).calibrated_fields != CALIBRATED_FIELDS:
        names = " or ".join(k.name for k in kinds() if k.calibrated_fields == CALIBRATED_FIELDS)
        raise AccelsimError(f"{hw.name}: calibration needs a {names} part (core.compute.kind: {names})")


def _read(hw: Hardware, path: str) -> Any:
    """The value of ``hw`` at a dotted config path."""
    node: Any = hw
    for key in path.split("."):
        node = getattr(node, key)
    return node


def current_calibration(hw: Hardware) -> Calibration:
    """The calibrated fields as the config has them now."""
    _check_calibrated(hw)
    eff_dense, eff_sparse, launch_dense, launch_sparse, fraction = (_read(hw, path) for path in CALIBRATED_FIELDS)
    return Calibration(float(eff_dense), float(eff_sparse), int(launch_dense), int(launch_sparse), float(fraction))


def with_calibration(hw: Hardware, cal: Calibration) -> Hardware:
    """A copy of ``hw`` with the five calibrated fields set to ``cal``."""
    _check_calibrated(hw)
    data = copy.deepcopy(hw.to_dict())
    for path, value in cal.fields().items():
        *parents, leaf = path.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[leaf] = value
    return hardware_from_dict(data, f"{hw.name} (calibrated)")


def with_fraction(hw: Hardware, fraction: float) -> Hardware:
    """A copy of ``hw`` with only ``dram.sustained_fraction`` changed."""
    return with_calibration(hw, replace(current_calibration(hw), dram_sustained_fraction=float(fraction)))


def select_rows(rows: Sequence[Measurement], gpu: str, keys: Sequence[str] | None = None, *,
                main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND) -> list[Measurement]:
    """The rows a fit may use: matched to ``gpu`` (among ``keys``), main regime, measured <= bound."""
    keys = list(keys) if keys is not None else [gpu]
    return [r for r in rows if match_row(r, keys) == gpu and r.regime in main_regimes and r.speedup <= bound]
