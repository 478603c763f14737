"""Fit the five calibrated fields of a tensor-core config to measured 2:4 speedups.

There are no per-row or per-shape tables: one value per field for a whole GPU (:mod:`.fields` lists them).
The objective is the speedup MAE over the fitted rows plus a small penalty that keeps the fields physical:
the mean absolute log error of the predicted dense and sparse *times*, weighted by ``penalty`` (default
0.1: a 10 % time error costs as much as 0.01 of speedup MAE). The four inner fields are fitted on tables
of simulated kernel bodies (:mod:`.fitting`); the DRAM sustained fraction by an outer search
(:func:`calibrate5`, :mod:`.workflows`). Results are frozen values (:mod:`.results`). The outer search
as a command::

    accelsim calibrate ../shared/reference/gpu/a100_fp16_24_speedups.csv \\
        --hw hwconfigs/a100-like.yaml --gpu A100 [--fractions 0.70,0.75,0.80,0.85,1.0] [--loso]

Library code: nothing here prints; the command lives in :mod:`accelsim.cli.calibrate`.
"""

from accelsim.analysis.calibration.fields import (
    CALIBRATED_FIELDS,
    COARSE_GRID,
    DEFAULT_FRACTIONS,
    DEFAULT_GRID,
    Calibration,
    current_calibration,
    select_rows,
    with_calibration,
)
from accelsim.analysis.calibration.fitting import BodyTables, FitResult, body_tables, fit
from accelsim.analysis.calibration.results import (
    Calibration5Result,
    CalibrationResult,
    Fold,
    FractionFit,
    NestedLoso,
    Pooled,
    Score,
)
from accelsim.analysis.calibration.workflows import calibrate, calibrate5, leave_one_source_out, pooled

__all__ = ["CALIBRATED_FIELDS", "COARSE_GRID", "DEFAULT_FRACTIONS", "DEFAULT_GRID", "BodyTables", "Calibration",
           "Calibration5Result", "CalibrationResult", "FitResult", "Fold", "FractionFit", "NestedLoso", "Pooled",
           "Score", "body_tables", "calibrate", "calibrate5", "current_calibration", "fit", "leave_one_source_out",
           "pooled", "select_rows", "with_calibration"]
