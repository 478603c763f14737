"""The calibration workflows: fit the inner fields, search the DRAM fraction, leave one source out.

Each fit is scored *exactly* (re-simulated with :func:`~accelsim.analysis.gpu_validation.validate_hw`),
not only on the interpolated tables. The DRAM fraction changes every body (it is not additive), so it is
searched outside the table fit: for each candidate fraction the body tables are rebuilt and the four
fields fitted inside (:func:`calibrate5`, ~15 s per fraction with the default grid); the fraction whose
fit has the lowest exact objective wins. :func:`calibrate` and :func:`leave_one_source_out` fit the four
inner fields at the fraction the config (or the tables) already has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace

import numpy as np

from accelsim.analysis.calibration.fields import (
    DEFAULT_FRACTIONS,
    DEFAULT_GRID,
    Calibration,
    current_calibration,
    select_rows,
    with_calibration,
    with_fraction,
)
from accelsim.analysis.calibration.fitting import BodyTables, body_tables, fit
from accelsim.analysis.calibration.results import (
    Calibration5Result,
    CalibrationResult,
    Fold,
    FractionFit,
    NestedLoso,
    Pooled,
    Score,
)
from accelsim.analysis.gpu_validation import metrics, validate_hw
from accelsim.analysis.measurements import MAIN_REGIMES, SPARSE_BOUND, Measurement, source_label
from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware


def _exact(rows: Sequence[Measurement], hw: Hardware, gpu: str, penalty: float = 0.1) -> Score:
    """Exact validation metrics of ``rows`` on ``hw`` (mapped under ``gpu``), with the fit's objective."""
    res = validate_hw(rows, {gpu: hw})
    scored = [(r, r.predicted) for r in res.rows if r.scored and r.predicted is not None]
    base = metrics([p.speedup for _, p in scored], [r.measured.speedup for r, _ in scored],
                   [r.dense_time_err_pct for r, _ in scored], [r.sparse_time_err_pct for r, _ in scored])
    logs = []
    for pred_us, meas_us in ((lambda p: p.dense_us, lambda r: r.measured.dense_us),
                             (lambda p: p.sparse_us, lambda r: r.measured.sparse_us)):
        v = [abs(math.log(pred_us(p) / meas_us(r))) for r, p in scored if meas_us(r)]
        logs.append(float(np.mean(v)) if v else 0.0)
    objective = None if base.mae is None else base.mae + penalty * (logs[0] + logs[1]) / 2.0
    return Score(**asdict(base), dense_log_err=logs[0], sparse_log_err=logs[1], objective=objective)


def _no_rows(main_regimes: Sequence[str], gpu: str) -> AccelsimError:
    return AccelsimError(f"calibration: no main-regime rows ({', '.join(main_regimes)}) for GPU {gpu!r}")


def calibrate(rows: Sequence[Measurement], hw: Hardware, gpu: str, *, keys: Sequence[str] | None = None,
              main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND, penalty: float = 0.1,
              grid: Sequence[float] = DEFAULT_GRID, tables: BodyTables | None = None) -> CalibrationResult:
    """Fit the four inner calibrated fields of ``hw`` on the main-regime rows of ``gpu``; exact metrics before/after.

    The DRAM sustained fraction stays where ``hw`` has it (or where ``tables`` were built); search it
    with :func:`calibrate5`.
    """
    use = select_rows(rows, gpu, keys, main_regimes=main_regimes, bound=bound)
    if not use:
        raise _no_rows(main_regimes, gpu)
    tab = tables if tables is not None else body_tables(use, hw, grid)
    fitted = fit(tab, penalty=penalty)
    cal = fitted.calibration
    hw_cal = with_calibration(hw, cal)
    before = _exact(use, hw, gpu, penalty)
    after = _exact(use, hw_cal, gpu, penalty)
    return CalibrationResult(gpu=gpu, fitted=cal, current=current_calibration(hw), fit=fitted, before=before,
                             after=after, improves=bool(_lt(after.mae, before.mae)), rows=len(use),
                             regimes=tuple(main_regimes), penalty=penalty, hardware=hw_cal, tables=tab)


def _lt(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and a < b


def calibrate5(rows: Sequence[Measurement], hw: Hardware, gpu: str,
               fractions: Sequence[float] = DEFAULT_FRACTIONS, *, keys: Sequence[str] | None = None,
               main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND, penalty: float = 0.1,
               grid: Sequence[float] = DEFAULT_GRID, loso: bool = False,
               tables: Mapping[float, BodyTables] | None = None,
               progress: Callable[[int, int], None] | None = None) -> Calibration5Result:
    """Fit all five calibrated fields: an outer search over ``dram.sustained_fraction`` in ``fractions``.

    For each fraction the body tables are rebuilt (unless ``tables`` has them, keyed by fraction) and
    the four inner fields fitted (:func:`fit`); the fraction whose fitted config has the lowest *exact*
    objective (speedup MAE + ``penalty`` x mean |log time error|, re-simulated) wins. ``loso=True``
    also runs :func:`leave_one_source_out` at every fraction and a nested variant that picks the
    fraction inside each fold by its training objective. ``progress(done, total)`` is called after each
    fraction's fit and each held-out fold.
    """
    fr = sorted({float(f) for f in fractions})
    if not fr or fr[0] <= 0.0 or fr[-1] > 1.0:
        raise AccelsimError(f"calibration: DRAM sustained fractions must lie in (0, 1], got {list(fractions)}")
    use = select_rows(rows, gpu, keys, main_regimes=main_regimes, bound=bound)
    if not use:
        raise _no_rows(main_regimes, gpu)
    sources = sorted({r.source for r in use})
    if loso and len(sources) < 2:
        raise AccelsimError(f"calibration: leave-one-source-out needs {gpu} rows from two or more sources, "
                            f"all {len(use)} fitted row(s) come from one ({sources[0]})")
    given = {round(float(k), 6): v for k, v in (tables or {}).items()}
    search: list[FractionFit] = []
    folds_per_fraction = len(set(r.source for r in use)) if loso else 0
    total = len(fr) * (1 + folds_per_fraction)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    for f in fr:
        hw_f = with_fraction(hw, f)
        tab = given.get(round(f, 6))
        if tab is None:
            tab = body_tables(use, hw_f, grid)
        elif tab.dram_sustained_fraction != f or [r.line for r in tab.rows] != [r.line for r in use]:
            raise AccelsimError(f"calibrate5: the tables given for fraction {f:g} were built for other rows or "
                                f"another fraction ({tab.dram_sustained_fraction:g})")
        fitted = fit(tab, penalty=penalty)
        hw_cal = with_calibration(hw, fitted.calibration)
        after = _exact(use, hw_cal, gpu, penalty)
        step()
        folds = None
        if loso:
            folds = tuple(leave_one_source_out(rows, hw_f, gpu, keys=keys, main_regimes=main_regimes, bound=bound,
                                               penalty=penalty, tables=tab, reference=fitted.calibration,
                                               on_fold=step))
        assert after.objective is not None  # there are rows
        search.append(FractionFit(fraction=f, fitted=fitted.calibration, fit=fitted, after=after,
                                  objective=after.objective, hardware=hw_cal, folds=folds,
                                  loso=pooled(folds) if folds is not None else None))
    best_at = min(range(len(search)), key=lambda i: search[i].objective)  # the first of equals
    search[best_at] = best = replace(search[best_at], best=True)
    before = _exact(use, hw, gpu, penalty)
    nested = None
    if loso:
        chosen = []
        for i in range(len(search[0].folds or ())):
            pick = min(search, key=lambda e: _fold(e, i).train_objective)
            chosen.append(replace(_fold(pick, i), fraction=pick.fraction))
        nested = NestedLoso(tuple(chosen), pooled(chosen))
    return Calibration5Result(gpu=gpu, fitted=best.fitted, current=current_calibration(hw), before=before,
                              after=best.after, improves=bool(_lt(best.after.mae, before.mae)), rows=len(use),
                              regimes=tuple(main_regimes), penalty=penalty, grid=tuple(float(g) for g in grid),
                              fractions=tuple(fr), hardware=best.hardware, search=tuple(search), loso_nested=nested)


def _fold(entry: FractionFit, i: int) -> Fold:
    assert entry.folds is not None
    return entry.folds[i]


def leave_one_source_out(rows: Sequence[Measurement], hw: Hardware, gpu: str, *, keys: Sequence[str] | None = None,
                         main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
                         penalty: float = 0.1, grid: Sequence[float] = DEFAULT_GRID,
                         tables: BodyTables | None = None,
                         reference: Calibration | None = None,
                         on_fold: Callable[[], None] | None = None) -> list[Fold]:
    """For each distinct ``source``: fit on the other sources' rows, score exactly on this source's rows.

    The four inner fields are refitted per fold; the DRAM sustained fraction stays at the tables' (by
    default ``hw``'s) value. ``reference`` (default: a fit on all rows) is scored on the same held-out
    rows, so each fold shows what leaving the source out costs. A source whose rows are all that is
    left is skipped. ``on_fold()`` is called once per source, skipped or not.
    """
    use = select_rows(rows, gpu, keys, main_regimes=main_regimes, bound=bound)
    tab = tables if tables is not None else body_tables(use, hw, grid)
    if [r.line for r in tab.rows] != [r.line for r in use]:
        raise AccelsimError("leave_one_source_out: tables were built for different rows")
    if reference is None:
        reference = fit(tab, penalty=penalty).calibration
    hw_ref = with_calibration(hw, reference)
    sources = list(dict.fromkeys(r.source for r in use))
    folds = []
    for source in sources:
        test = np.array([r.source == source for r in use])
        if on_fold is not None:
            on_fold()
        if test.all():
            continue
        fitted = fit(tab.subset(~test), penalty=penalty)
        held = [r for r, t in zip(use, test, strict=True) if t]
        hw_fold = with_calibration(hw, fitted.calibration)
        folds.append(Fold(source=source, label=source_label(source), train_rows=int((~test).sum()),
                          test_rows=int(test.sum()), fitted=fitted.calibration, train_mae=fitted.mae,
                          train_objective=fitted.objective, test=_exact(held, hw_fold, gpu, penalty),
                          test_with_full_fit=_exact(held, hw_ref, gpu, penalty)))
    return folds


def pooled(folds: Sequence[Fold]) -> Pooled:
    """Row-weighted MAE and right-side share over all held-out rows of a leave-one-source-out run."""
    n = sum(f.test.n for f in folds)
    if not n:
        return Pooled(n=0, mae=None, right_side=None)
    return Pooled(n=n, mae=sum((f.test.mae or 0.0) * f.test.n for f in folds) / n,
                  right_side=sum(f.test.right_side_rows for f in folds) / n,
                  right_side_rows=sum(f.test.right_side_rows for f in folds),
                  mae_full_fit=sum((f.test_with_full_fit.mae or 0.0) * f.test.n for f in folds) / n)
