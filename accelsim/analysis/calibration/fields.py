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

from accelsim.analysis.measurements import MAIN_REGIMES, SPARSE_BOUND, Measurement, match_gpu
from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware, TensorCoreCompute, hardware_from_dict

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
        """The values keyed by config path."""
        return dict(zip(CALIBRATED_FIELDS, (self.efficiency_dense, self.efficiency_sparse, self.launch_dense,
                                            self.launch_sparse, self.dram_sustained_fraction), strict=True))


def _tensor_core(hw: Hardware) -> TensorCoreCompute:
    if not isinstance(hw.core.compute, TensorCoreCompute):
        raise AccelsimError(f"{hw.name}: calibration needs a tensor_core part (core.compute.kind: tensor_core)")
    return hw.core.compute


def current_calibration(hw: Hardware) -> Calibration:
    """The calibrated fields as the config has them now."""
    comp = _tensor_core(hw)
    return Calibration(float(comp.efficiency.dense), float(comp.efficiency.sparse),
                       int(hw.launch_overhead_cycles.dense), int(hw.launch_overhead_cycles.sparse),
                       float(hw.dram.sustained_fraction))


def with_calibration(hw: Hardware, cal: Calibration) -> Hardware:
    """A copy of ``hw`` with the five calibrated fields set to ``cal``."""
    _tensor_core(hw)
    data = copy.deepcopy(hw.to_dict())
    data["core"]["compute"]["efficiency"] = {"dense": float(cal.efficiency_dense),
                                             "sparse": float(cal.efficiency_sparse)}
    data["launch_overhead_cycles"] = {"dense": int(cal.launch_dense), "sparse": int(cal.launch_sparse)}
    data["dram"]["sustained_fraction"] = float(cal.dram_sustained_fraction)
    return hardware_from_dict(data, f"{hw.name} (calibrated)")


def with_fraction(hw: Hardware, fraction: float) -> Hardware:
    """A copy of ``hw`` with only ``dram.sustained_fraction`` changed."""
    return with_calibration(hw, replace(current_calibration(hw), dram_sustained_fraction=float(fraction)))


def select_rows(rows: Sequence[Measurement], gpu: str, keys: Sequence[str] | None = None, *,
                main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND) -> list[Measurement]:
    """The rows a fit may use: matched to ``gpu`` (among ``keys``), main regime, measured <= bound."""
    keys = list(keys) if keys is not None else [gpu]
    return [r for r in rows if match_gpu(r.gpu, keys) == gpu and r.regime in main_regimes and r.speedup <= bound]
