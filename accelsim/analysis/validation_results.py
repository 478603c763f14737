"""What a validation against measured GPUs returns: frozen values, one per row, group and run.

:func:`accelsim.analysis.gpu_validation.validate_hw` builds a :class:`ValidationResult`; ``to_dict()`` is
``validation.json``. Text, CSV and the scatter live in :mod:`accelsim.report`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Metrics:
    """Speedup error metrics over paired rows: MAE, MAPE, right side of 1.0x, Spearman, bias, worst error.

    ``dense_time_mape`` / ``sparse_time_mape``: mean |time error| in % per path, over the rows with a
    measured time (None without).
    """

    n: int
    mae: float | None = None
    mape: float | None = None
    median_ape: float | None = None  # median |error| / measured, in % (issue 18's per-source target)
    right_side: float | None = None
    right_side_rows: int = 0
    spearman: float | None = None
    bias: float | None = None
    max_abs: float | None = None
    dense_time_mape: float | None = None
    sparse_time_mape: float | None = None
    rule_mae: float | None = None  # the FLOPs rule of thumb (gpu_validation.rule_of_thumb) on the same rows
    rule_right_side: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (without the time errors and the rule of thumb when there are no rows)."""
        d = asdict(self)
        if not self.n:
            del d["dense_time_mape"], d["sparse_time_mape"], d["rule_mae"], d["rule_right_side"]
        return d


@dataclass(frozen=True)
class Measured:
    """What was measured for one row: the speedup and, when given, both times (microseconds)."""

    speedup: float
    dense_us: float | None
    sparse_us: float | None


@dataclass(frozen=True)
class Prediction:
    """One measured shape simulated dense and sparse: times, speedup, and why (path, binding, tiles)."""

    speedup: float
    dense_us: float
    sparse_us: float
    dense_cycles: int
    sparse_cycles: int
    path: str
    reason: str | None
    padding: Mapping[str, Any]
    dense_binding: str
    sparse_binding: str
    dense_tile: Any
    sparse_tile: Any
    dense_split_k: Any
    sparse_split_k: Any
    dense_launch_cycles: int
    sparse_launch_cycles: int
    host_bound: tuple[str, ...] = ()  # the kernels ('dense', 'sparse') that took the host's per-call floor


@dataclass(frozen=True)
class RowResult:
    """One measured row: the measurement, the prediction (None when not simulated) and the scoring.

    ``status``: ``scored``, ``above_bound`` (predicted, not scored), ``unmapped`` or ``infeasible``;
    ``message`` says why a row is not scored.
    """

    line: int
    gpu: str
    hw_key: str | None
    hw: str | None
    dtype: str
    m: int
    n: int
    k: int
    regime: str
    main: bool
    backend: str
    source: str
    source_label: str
    measured: Measured
    predicted: Prediction | None = None
    error: float | None = None
    abs_error: float | None = None
    ape: float | None = None
    right_side: bool | None = None
    dense_time_err_pct: float | None = None
    sparse_time_err_pct: float | None = None
    scored: bool = False
    status: str = "scored"
    message: str | None = None
    format: str | None = None  # the row's own format (the CSV's `format` column); None: the validation's sparsity
    timing: str = "framework"  # how the row was timed (measurements.TIMINGS); kernel-loop: no fixed launch cost
    kernels: str = "default"  # which 2:4 kernels its harness ran (measurements.KERNEL_CHOICES)
    c_dtype: str = ""  # what its dense / 2:4 kernels wrote C as ("int32/bf16"); empty: the input dtype
    sparse_isa: str = "native"  # what its 2:4 kernels were compiled for (measurements.SPARSE_ISAS)


@dataclass(frozen=True)
class GroupResult:
    """The metrics of the rows of one GPU / dtype / regime (or the main regimes together)."""

    gpu: str
    hw: str | None
    dtype: str
    regime: str
    main: bool
    rows: int
    unscored: int
    metrics: Metrics
    format: str | None = None  # rows of one format (None: the validation's sparsity)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, the metrics beside the group's keys."""
        return {"gpu": self.gpu, "hw": self.hw, "dtype": self.dtype, "regime": self.regime, "main": self.main,
                **({"format": self.format} if self.format is not None else {}),
                "rows": self.rows, "unscored": self.unscored, **self.metrics.to_dict()}


@dataclass(frozen=True)
class Unscored:
    """A row that was not scored, and why."""

    line: int
    gpu: str
    status: str
    message: str | None


@dataclass(frozen=True)
class HardwareRef:
    """A hardware config the rows were simulated on: its name, config hash and file (when known)."""

    name: str
    config_hash: str
    source: str | None


@dataclass(frozen=True)
class ValidationResult:
    """Predicted vs measured speedups: every row, per GPU / dtype / regime, the main regimes, overall.

    ``overall`` covers all scored main-regime rows; ``measurements`` names the CSV when known.
    """

    sparsity: str
    bound: float
    main_regimes: tuple[str, ...]
    hardware: Mapping[str, HardwareRef]
    rows: tuple[RowResult, ...]
    groups: tuple[GroupResult, ...]
    main: tuple[GroupResult, ...]
    overall: Metrics
    unscored: tuple[Unscored, ...]
    notes: tuple[str, ...]
    measurements: str | None = None
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what validation.json holds)."""
        out: dict[str, Any] = {
            "schema_version": self.schema_version, "sparsity": self.sparsity, "bound": self.bound,
            "main_regimes": list(self.main_regimes),
            "hardware": {key: asdict(ref) for key, ref in self.hardware.items()},
            "rows": [asdict(r) for r in self.rows], "groups": [g.to_dict() for g in self.groups],
            "main": [g.to_dict() for g in self.main], "overall": self.overall.to_dict(),
            "unscored": [asdict(u) for u in self.unscored], "notes": list(self.notes)}
        if self.measurements is not None:
            out["measurements"] = self.measurements
        return out
