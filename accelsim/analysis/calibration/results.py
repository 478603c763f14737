"""What the calibration workflows return: frozen values (fits, exact scores, folds, the outer search)."""

from __future__ import annotations

from dataclasses import dataclass

from accelsim.analysis.calibration.fields import Calibration
from accelsim.analysis.calibration.fitting import BodyTables, FitResult
from accelsim.analysis.validation_results import Metrics
from accelsim.hardware.model import Hardware


@dataclass(frozen=True)
class Score(Metrics):
    """Exact validation metrics of a config on some rows (re-simulated), with the fit's objective.

    ``dense_log_err`` / ``sparse_log_err``: mean |ln(predicted / measured time)| per path; ``objective``:
    MAE + penalty x their mean (None without rows).
    """

    dense_log_err: float = 0.0
    sparse_log_err: float = 0.0
    objective: float | None = None


@dataclass(frozen=True)
class CalibrationResult:
    """The four inner fields fitted on the main-regime rows of one GPU, exact metrics before and after."""

    gpu: str
    fitted: Calibration
    current: Calibration
    fit: FitResult
    before: Score
    after: Score
    improves: bool
    rows: int
    regimes: tuple[str, ...]
    penalty: float
    hardware: Hardware  # the config with the fitted values
    tables: BodyTables


@dataclass(frozen=True)
class Fold:
    """One source held out: fitted on the others, scored exactly on its rows (and with the full fit)."""

    source: str
    label: str
    train_rows: int
    test_rows: int
    fitted: Calibration
    train_mae: float
    train_objective: float
    test: Score
    test_with_full_fit: Score
    fraction: float | None = None  # the DRAM fraction the fold chose (nested leave-one-source-out only)


@dataclass(frozen=True)
class Pooled:
    """Row-weighted MAE and right-side share over all held-out rows of a leave-one-source-out run."""

    n: int
    mae: float | None
    right_side: float | None
    right_side_rows: int | None = None
    mae_full_fit: float | None = None


@dataclass(frozen=True)
class FractionFit:
    """The four inner fields fitted at one DRAM sustained fraction of the outer search."""

    fraction: float
    fitted: Calibration
    fit: FitResult
    after: Score
    objective: float
    hardware: Hardware
    best: bool = False
    folds: tuple[Fold, ...] | None = None  # with loso
    loso: Pooled | None = None


@dataclass(frozen=True)
class NestedLoso:
    """Leave-one-source-out with the fraction chosen inside each fold by its training objective."""

    folds: tuple[Fold, ...]
    pooled: Pooled


@dataclass(frozen=True)
class Calibration5Result:
    """All five fields fitted: the outer search over the DRAM fraction, the best fit, exact metrics."""

    gpu: str
    fitted: Calibration
    current: Calibration
    before: Score
    after: Score
    improves: bool
    rows: int
    regimes: tuple[str, ...]
    penalty: float
    grid: tuple[float, ...]
    fractions: tuple[float, ...]
    hardware: Hardware
    search: tuple[FractionFit, ...]
    loso_nested: NestedLoso | None = None
