"""Compute kind ``systolic``: one R x C systolic array with SCALE-Sim dataflow semantics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from accelsim.config import schema as configio
from accelsim.hardware.base import PosInt, Strict
from accelsim.hardware.kinds import FOLD_TILE_ARGS, ComputeKind, TraceLabels

if TYPE_CHECKING:
    from accelsim.hardware.model import Hardware


class SystolicCompute(Strict):
    """An R x C systolic array with SCALE-Sim dataflow semantics."""

    kind: Literal["systolic"] = Field(description="Compute model: a systolic array of PEs.")
    rows: PosInt = Field(description="PE rows (SCALE-Sim ArrayHeight).")
    cols: PosInt = Field(description="PE columns (SCALE-Sim ArrayWidth).")
    dataflow: Literal["os", "ws", "is"] = Field(
        "ws", description="Which operand stays in the PEs: os = outputs, ws = weights (A), is = inputs (B).")
    output_drain: Literal["serial", "overlapped"] = Field(
        "serial",
        description="os only: 'serial' adds a rows-cycle output drain per fold (physical, as in the "
                    "SCALE-Sim paper); 'overlapped' hides it behind the next fold (as SCALE-Sim v3's code counts).")
    accumulator_bytes: PosInt = Field(
        4, description="Bytes per partial sum when partial outputs spill to DRAM between reduction folds.")


class SystolicKind(ComputeKind):
    """A single array: one MAC per PE per cycle, timed fold by fold (engine simulation ``systolic``)."""

    name = "systolic"
    schema = SystolicCompute
    simulation = "systolic"
    trace = TraceLabels("core", FOLD_TILE_ARGS)

    def peak_macs_per_cycle(self, compute: Any, dtype: str) -> float:
        return float(compute.rows * compute.cols)

    def check(self, hw: Hardware) -> None:
        if hw.cores != 1:
            raise configio.FieldError(("cores",), f"must be 1 for a systolic array (kind: systolic), got {hw.cores}")
        if hw.core.sparse is not None:
            for key, spec in hw.core.sparse.patterns.items():
                if spec.speedup is not None:
                    raise configio.FieldError(("core", "sparse", "patterns", key, "speedup"),
                                              "applies to tensor_core parts only (a systolic array gains by "
                                              "compressing k)")
            formats = hw.core.sparse.formats
            if formats is not None and formats.unstructured is not None:  # accelsim/formats/unstructured.py
                raise configio.FieldError(("core", "sparse", "formats", "unstructured"),
                                          "the load-sparse and vector-SpMM paths are modelled on tensor_core parts "
                                          "only; a systolic array runs unstructured:P% dense (format_unsupported)")


SYSTOLIC = SystolicKind()
