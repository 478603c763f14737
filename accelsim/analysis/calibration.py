"""Fit the five calibrated fields of a tensor-core config to measured 2:4 speedups.

The calibrated fields (and nothing else) are::

    core.compute.efficiency.dense    sustained share of tensor peak in the dense kernel's main loop
    core.compute.efficiency.sparse   the same for the 2:4 kernel (share of its doubled peak)
    launch_overhead_cycles.dense     fixed cost per dense GEMM kernel (launch, prologue, epilogue)
    launch_overhead_cycles.sparse    fixed cost per sparse GEMM kernel
    dram.sustained_fraction          share of the peak DRAM bandwidth a GEMM's access stream sustains

There are no per-row or per-shape tables: one value per field for a whole GPU. The objective is
the speedup MAE over the fitted rows plus a small penalty that keeps the fields physical: the
mean absolute log error of the predicted dense and sparse *times* (without it, the speedup alone
cannot tell a kernel at 100 % of peak with a large fixed cost from one at 75 % with a small one),
weighted by ``penalty`` (default 0.1: a 10 % time error costs as much as 0.01 of speedup MAE).
Bounds: efficiencies in (0.3, 1], launch costs >= 0 cycles.

How: a launch cost is additive to a kernel's cycles (total = launch + body), and a dense body
depends only on the dense efficiency (a sparse body only on the sparse one). So each row's dense
and sparse body is simulated once per efficiency on a grid, interpolated linearly in
1 / efficiency, and the four fields are searched on those tables (a coarse 4-D grid, then
coordinate descent at 0.01 efficiency / 50 cycle resolution from the best few coarse points).
The fitted values are finally re-simulated exactly (:func:`calibrate` reports exact metrics).

The DRAM fraction changes every body (it is not additive), so it is searched outside: for each
candidate fraction the body tables are rebuilt and the four fields fitted inside
(:func:`calibrate5`, ~15 s per fraction with the default grid); the fraction whose fit has the
lowest exact objective wins. :func:`calibrate` and :func:`leave_one_source_out` fit the four inner
fields at the fraction the config (or the tables) already has. The outer search as a command::

    python -m accelsim.analysis.calibration ../shared/reference/gpu/a100_fp16_24_speedups.csv \
        --hw hwconfigs/a100-like.yaml --gpu A100 [--fractions 0.70,0.75,0.80,0.85,1.0] [--loso]

Library code: nothing here prints; the ``python -m`` entry point lives in :mod:`accelsim.cli.calibrate`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from accelsim.analysis.gpu_validation import (
    MAIN_REGIMES,
    SPARSE_BOUND,
    Measurement,
    match_gpu,
    metrics,
    source_label,
    validate_hw,
)
from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware, TensorCoreCompute, hardware_from_dict
from accelsim.lowering import lower
from accelsim.simulation import Simulator
from accelsim.workloads.model import workload_from_dict

__all__ = ["CALIBRATED_FIELDS", "DEFAULT_GRID", "DEFAULT_FRACTIONS", "COARSE_GRID", "Calibration", "BodyTables",
           "body_tables", "fit", "calibrate", "calibrate5", "leave_one_source_out", "pooled", "with_calibration",
           "current_calibration", "select_rows", "format_search", "main"]

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


def _with_fraction(hw: Hardware, fraction: float) -> Hardware:
    return with_calibration(hw, replace(current_calibration(hw), dram_sustained_fraction=float(fraction)))


def select_rows(rows: Sequence[Measurement], gpu: str, keys: Sequence[str] | None = None, *,
                main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND) -> list[Measurement]:
    """The rows a fit may use: matched to ``gpu`` (among ``keys``), main regime, measured <= bound."""
    keys = list(keys) if keys is not None else [gpu]
    return [r for r in rows if match_gpu(r.gpu, keys) == gpu and r.regime in main_regimes and r.speedup <= bound]


# ---------------------------------------------------------------------------------------- tables

@dataclass
class BodyTables:
    """Per-row simulated cycles without the launch cost, on a grid of efficiencies."""

    grid: np.ndarray  # (G,) efficiencies, ascending
    dense: np.ndarray  # (G, R) dense body cycles at efficiency grid[g]
    sparse: np.ndarray  # (G, R) sparse body cycles (the dense body where the sparse path fell back)
    sparse_path: np.ndarray  # (R,) True where the 2:4 run is really sparse
    rows: list[Measurement]
    clock_ghz: float
    dram_sustained_fraction: float  # the (fixed) fifth field the bodies were simulated with

    def subset(self, mask: np.ndarray) -> BodyTables:
        idx = np.flatnonzero(mask)
        return BodyTables(self.grid, self.dense[:, idx], self.sparse[:, idx], self.sparse_path[idx],
                          [self.rows[i] for i in idx], self.clock_ghz, self.dram_sustained_fraction)

    def at(self, efficiencies: np.ndarray, which: str) -> np.ndarray:
        """Bodies at arbitrary efficiencies: linear interpolation in 1 / efficiency. Shape (E, R)."""
        table = self.dense if which == "dense" else self.sparse
        x = 1.0 / self.grid[::-1]  # ascending
        xf = 1.0 / np.asarray(efficiencies, dtype=float)
        out = np.empty((len(xf), table.shape[1]))
        for r in range(table.shape[1]):
            out[:, r] = np.interp(xf, x, table[::-1, r])
        return out


def body_tables(rows: Sequence[Measurement], hw: Hardware, grid: Sequence[float] = DEFAULT_GRID,
                sparsity: str = "2:4") -> BodyTables:
    """Simulate every row dense and sparse at each grid efficiency with zero launch cost.

    The DRAM sustained fraction is ``hw``'s own (set it with :func:`with_calibration` first).
    """
    if not rows:
        raise AccelsimError("calibration: no rows to fit")
    g = np.array(sorted(set(float(x) for x in grid)))
    if len(g) < 2 or g[0] <= 0 or g[-1] > 1:
        raise AccelsimError("calibration: the efficiency grid needs at least two values in (0, 1]")
    models = [workload_from_dict({"name": f"line{r.line}", "dtype": r.dtype, "layers": [
        {"name": "gemm", "op": "gemm", "m": r.m, "n": r.n, "k": r.k}]}) for r in rows]
    dense = np.zeros((len(g), len(rows)))
    sparse = np.zeros((len(g), len(rows)))
    path = np.zeros(len(rows), dtype=bool)
    for gi, eff in enumerate(g):
        hw_e = with_calibration(hw, Calibration(float(eff), float(eff), 0, 0, float(hw.dram.sustained_fraction)))
        sim = Simulator(hw_e)
        for ri, model in enumerate(models):
            kd = lower(model, hw_e, "dense")[0]
            ks = lower(model, hw_e, sparsity)[0]
            dense[gi, ri] = sim(kd).cycles["total"]
            sparse[gi, ri] = sim(ks).cycles["total"]
            path[ri] = ks.sparse
    return BodyTables(g, dense, sparse, path, list(rows), float(hw.clock_ghz), float(hw.dram.sustained_fraction))


# ---------------------------------------------------------------------------------------- objective

def _measured(tables: BodyTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    meas = np.array([r.speedup for r in tables.rows])
    cyc = tables.clock_ghz * 1e3  # cycles per us
    md = np.array([r.dense_us * cyc if r.dense_us else np.nan for r in tables.rows])
    ms = np.array([r.sparse_us * cyc if r.sparse_us else np.nan for r in tables.rows])
    return meas, md, ms


def _log_err(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """Mean |ln(pred / meas)| over the last axis, ignoring rows without a measured time."""
    ok = np.isfinite(meas)
    if not ok.any():
        return np.zeros(pred.shape[:-1])
    return np.abs(np.log(pred[..., ok] / meas[ok])).mean(-1)


@dataclass
class _Search:
    effs: np.ndarray
    launches: np.ndarray
    dense: np.ndarray  # (E, R) bodies
    sparse: np.ndarray  # (E, R)
    meas: np.ndarray
    md: np.ndarray
    ms: np.ndarray
    fallback: np.ndarray  # rows whose sparse run is dense: they take the dense launch cost
    penalty: float

    def totals(self, ei: int, li: int, which: str) -> np.ndarray:
        body = (self.dense if which == "dense" else self.sparse)[ei]
        return body + self.launches[li]

    def objective(self, ed: int, es: int, ld: int, ls: int) -> tuple[float, float, float, float]:
        d = self.dense[ed] + self.launches[ld]
        s = np.where(self.fallback, d, self.sparse[es] + self.launches[ls])
        mae = float(np.abs(d / s - self.meas).mean())
        td = float(_log_err(d[None, :], self.md)[0])
        ts = float(_log_err(s[None, :], self.ms)[0])
        return mae + self.penalty * (td + ts) / 2.0, mae, td, ts


def fit(tables: BodyTables, *, penalty: float = 0.1, eff_bounds: tuple[float, float] = EFF_BOUNDS,
        launch_max: int = LAUNCH_MAX, starts: int = 6) -> dict[str, Any]:
    """Fit the four inner fields on ``tables`` (all its rows) at the tables' DRAM fraction.

    Returns the values (a :class:`Calibration` carrying ``tables.dram_sustained_fraction``) and the
    table-based objective.
    """
    if not len(tables.rows):
        raise AccelsimError("calibration: no rows to fit")
    lo, hi = eff_bounds
    if not (0.0 < lo < hi <= 1.0):
        raise AccelsimError(f"calibration: efficiency bounds must satisfy 0 < low < high <= 1, got {eff_bounds}")
    effs = np.round(np.arange(math.ceil(lo / EFF_STEP) * EFF_STEP, hi + 1e-9, EFF_STEP), 4)
    effs = effs[(effs > lo - 1e-9) & (effs <= hi + 1e-9)]
    launches = np.arange(0, launch_max + 1, LAUNCH_STEP)
    meas, md, ms = _measured(tables)
    search = _Search(effs, launches, tables.at(effs, "dense"), tables.at(effs, "sparse"), meas, md, ms,
                     ~tables.sparse_path, penalty)
    # 1. coarse 4-D grid: every 5th efficiency, launch costs every 1000 cycles
    ce = np.arange(0, len(effs), 5)
    cl = np.arange(0, len(launches), max(1, 1000 // LAUNCH_STEP))
    d_tot = search.dense[ce][:, None, :] + launches[cl][None, :, None]  # (Ec, Lc, R)
    s_tot = search.sparse[ce][:, None, :] + launches[cl][None, :, None]
    td = _log_err(d_tot, md)  # (Ec, Lc)
    ts = _log_err(s_tot, ms)
    dflat = d_tot.reshape(-1, d_tot.shape[-1])
    sflat = s_tot.reshape(-1, s_tot.shape[-1])
    scores = np.empty((len(dflat), len(sflat)))
    fb = search.fallback
    for i in range(len(dflat)):
        s = np.where(fb[None, :], dflat[i][None, :], sflat)
        scores[i] = np.abs(dflat[i][None, :] / s - meas).mean(-1)
    scores += penalty * (td.reshape(-1)[:, None] + ts.reshape(-1)[None, :]) / 2.0
    order = np.argsort(scores, axis=None)[: max(1, starts)]
    best: tuple[float, tuple[int, int, int, int]] | None = None
    for flat in order:
        a, b = np.unravel_index(flat, scores.shape)
        ed, ld = np.unravel_index(a, (len(ce), len(cl)))
        es, ls = np.unravel_index(b, (len(ce), len(cl)))
        point = [int(ce[ed]), int(ce[es]), int(cl[ld]), int(cl[ls])]
        point, value = _descend(search, point)
        if best is None or value < best[0] - 1e-12:
            best = (value, tuple(point))  # type: ignore[assignment]
    assert best is not None
    ed, es, ld, ls = best[1]
    obj, mae, tde, tse = search.objective(ed, es, ld, ls)
    d = search.dense[ed] + launches[ld]
    s = np.where(search.fallback, d, search.sparse[es] + launches[ls])
    cal = Calibration(float(effs[ed]), float(effs[es]), int(launches[ld]), int(launches[ls]),
                      tables.dram_sustained_fraction)
    return {"calibration": cal, "objective": obj, "mae": mae, "dense_log_err": tde, "sparse_log_err": tse,
            "right_side": float(((d / s > 1.0) == (meas > 1.0)).mean()), "rows": len(tables.rows),
            "penalty": penalty, "eff_bounds": [lo, hi], "launch_max": launch_max}


def _descend(search: _Search, point: list[int]) -> tuple[list[int], float]:
    """Joint local search: every combination of small steps of all four fields, until none improves."""
    value = search.objective(*point)[0]
    for _ in range(200):
        point, new = _neighbourhood(search, point)
        if new >= value - 1e-12:
            break
        value = new
    return point, search.objective(*point)[0]


def _neighbourhood(search: _Search, point: list[int]) -> tuple[list[int], float]:
    """The best point within +-3 efficiency steps and +-6 launch steps of ``point`` (vectorised)."""
    ne, nl = len(search.effs), len(search.launches)
    e_d = np.clip(np.arange(point[0] - 3, point[0] + 4), 0, ne - 1)
    e_s = np.clip(np.arange(point[1] - 3, point[1] + 4), 0, ne - 1)
    l_d = np.clip(np.arange(point[2] - 6, point[2] + 7), 0, nl - 1)
    l_s = np.clip(np.arange(point[3] - 6, point[3] + 7), 0, nl - 1)
    d = search.dense[e_d][:, None, :] + search.launches[l_d][None, :, None]  # (7, 13, R)
    s = search.sparse[e_s][:, None, :] + search.launches[l_s][None, :, None]
    td = _log_err(d, search.md)  # (7, 13)
    ts = _log_err(s, search.ms)
    dd = d[:, :, None, None, :]
    ss = np.where(search.fallback, dd, s[None, None, :, :, :])
    mae = np.abs(dd / ss - search.meas).mean(-1)  # (7, 13, 7, 13)
    obj = mae + search.penalty * (td[:, :, None, None] + ts[None, None, :, :]) / 2.0
    a, b, c, e = np.unravel_index(int(np.argmin(obj)), obj.shape)
    return [int(e_d[a]), int(e_s[c]), int(l_d[b]), int(l_s[e])], float(obj[a, b, c, e])


# ---------------------------------------------------------------------------------------- workflows

def _exact(rows: Sequence[Measurement], hw: Hardware, gpu: str, penalty: float = 0.1) -> dict[str, Any]:
    """Exact validation metrics of ``rows`` on ``hw`` (mapped under ``gpu``), with the fit's objective."""
    res = validate_hw(rows, {gpu: hw})
    scored = [r for r in res["rows"] if r["scored"]]
    out = metrics([r["predicted"]["speedup"] for r in scored], [r["measured"]["speedup"] for r in scored],
                  [r["dense_time_err_pct"] for r in scored], [r["sparse_time_err_pct"] for r in scored])
    logs = []
    for which in ("dense", "sparse"):
        v = [abs(math.log(r["predicted"][f"{which}_us"] / r["measured"][f"{which}_us"]))
             for r in scored if r["measured"][f"{which}_us"]]
        logs.append(float(np.mean(v)) if v else 0.0)
    out["dense_log_err"], out["sparse_log_err"] = logs
    out["objective"] = None if out["mae"] is None else out["mae"] + penalty * (logs[0] + logs[1]) / 2.0
    return out


def calibrate(rows: Sequence[Measurement], hw: Hardware, gpu: str, *, keys: Sequence[str] | None = None,
              main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND, penalty: float = 0.1,
              grid: Sequence[float] = DEFAULT_GRID, tables: BodyTables | None = None) -> dict[str, Any]:
    """Fit the four inner calibrated fields of ``hw`` on the main-regime rows of ``gpu``; exact metrics before/after.

    The DRAM sustained fraction stays where ``hw`` has it (or where ``tables`` were built); search it
    with :func:`calibrate5`. Returns ``{"fitted": Calibration, "current": Calibration, "fit": {...},
    "before": metrics, "after": metrics, "improves": bool, "rows": n, "hardware": Hardware
    (calibrated), "tables": BodyTables}``.
    """
    use = select_rows(rows, gpu, keys, main_regimes=main_regimes, bound=bound)
    if not use:
        raise AccelsimError(f"calibration: no main-regime rows ({', '.join(main_regimes)}) for GPU {gpu!r}")
    tab = tables if tables is not None else body_tables(use, hw, grid)
    fitted = fit(tab, penalty=penalty)
    cal = fitted["calibration"]
    hw_cal = with_calibration(hw, cal)
    before = _exact(use, hw, gpu, penalty)
    after = _exact(use, hw_cal, gpu, penalty)
    return {"gpu": gpu, "fitted": cal, "current": current_calibration(hw), "fit": fitted, "before": before,
            "after": after, "improves": bool(after["mae"] < before["mae"]), "rows": len(use),
            "regimes": list(main_regimes), "penalty": penalty, "hardware": hw_cal, "tables": tab}


def calibrate5(rows: Sequence[Measurement], hw: Hardware, gpu: str,
               fractions: Sequence[float] = DEFAULT_FRACTIONS, *, keys: Sequence[str] | None = None,
               main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND, penalty: float = 0.1,
               grid: Sequence[float] = DEFAULT_GRID, loso: bool = False,
               tables: Mapping[float, BodyTables] | None = None,
               progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Fit all five calibrated fields: an outer search over ``dram.sustained_fraction`` in ``fractions``.

    For each fraction the body tables are rebuilt (unless ``tables`` has them, keyed by fraction) and
    the four inner fields fitted (:func:`fit`); the fraction whose fitted config has the lowest *exact*
    objective (speedup MAE + ``penalty`` x mean |log time error|, re-simulated) wins. ``loso=True``
    also runs :func:`leave_one_source_out` at every fraction and a nested variant that picks the
    fraction inside each fold by its training objective. ``progress(done, total)`` is called after each
    fraction's fit and each held-out fold.

    Returns ``{"fitted": Calibration, "current", "before", "after", "improves", "rows", "hardware",
    "search": [per fraction: {"fraction", "fitted", "after", "objective", "best", "loso"?, "folds"?}],
    "loso_nested"?: {"folds": [...], "pooled": {...}}}``.
    """
    fr = sorted({float(f) for f in fractions})
    if not fr or fr[0] <= 0.0 or fr[-1] > 1.0:
        raise AccelsimError(f"calibration: DRAM sustained fractions must lie in (0, 1], got {list(fractions)}")
    use = select_rows(rows, gpu, keys, main_regimes=main_regimes, bound=bound)
    if not use:
        raise AccelsimError(f"calibration: no main-regime rows ({', '.join(main_regimes)}) for GPU {gpu!r}")
    opts = {"keys": keys, "main_regimes": main_regimes, "bound": bound, "penalty": penalty}
    given = {round(float(k), 6): v for k, v in (tables or {}).items()}
    search: list[dict[str, Any]] = []
    folds_per_fraction = len(set(r.source for r in use)) if loso else 0
    total = len(fr) * (1 + folds_per_fraction)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    for f in fr:
        hw_f = _with_fraction(hw, f)
        tab = given.get(round(f, 6))
        if tab is None:
            tab = body_tables(use, hw_f, grid)
        elif tab.dram_sustained_fraction != f or [r.line for r in tab.rows] != [r.line for r in use]:
            raise AccelsimError(f"calibrate5: the tables given for fraction {f:g} were built for other rows or "
                                f"another fraction ({tab.dram_sustained_fraction:g})")
        fitted = fit(tab, penalty=penalty)
        hw_cal = with_calibration(hw, fitted["calibration"])
        after = _exact(use, hw_cal, gpu, penalty)
        step()
        entry: dict[str, Any] = {"fraction": f, "fitted": fitted["calibration"], "fit": fitted, "after": after,
                                 "objective": after["objective"], "hardware": hw_cal, "best": False}
        if loso:
            entry["folds"] = leave_one_source_out(rows, hw_f, gpu, tables=tab, reference=fitted["calibration"],
                                                  on_fold=step, **opts)
            entry["loso"] = pooled(entry["folds"])
        search.append(entry)
    best = min(search, key=lambda e: e["objective"])
    best["best"] = True
    before = _exact(use, hw, gpu, penalty)
    out: dict[str, Any] = {
        "gpu": gpu, "fitted": best["fitted"], "current": current_calibration(hw), "before": before,
        "after": best["after"], "improves": bool(best["after"]["mae"] < before["mae"]), "rows": len(use),
        "regimes": list(main_regimes), "penalty": penalty, "grid": [float(g) for g in grid], "fractions": fr,
        "hardware": best["hardware"], "search": search}
    if loso:
        nested = []
        for i in range(len(search[0]["folds"])):
            pick = min(search, key=lambda e, i=i: e["folds"][i]["train_objective"])
            chosen = dict(pick["folds"][i])
            chosen["fraction"] = pick["fraction"]
            nested.append(chosen)
        out["loso_nested"] = {"folds": nested, "pooled": pooled(nested)}
    return out


def leave_one_source_out(rows: Sequence[Measurement], hw: Hardware, gpu: str, *, keys: Sequence[str] | None = None,
                         main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
                         penalty: float = 0.1, grid: Sequence[float] = DEFAULT_GRID,
                         tables: BodyTables | None = None,
                         reference: Calibration | None = None,
                         on_fold: Callable[[], None] | None = None) -> list[dict[str, Any]]:
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
        reference = fit(tab, penalty=penalty)["calibration"]
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
        hw_fold = with_calibration(hw, fitted["calibration"])
        folds.append({"source": source, "label": source_label(source), "train_rows": int((~test).sum()),
                      "test_rows": int(test.sum()), "fitted": fitted["calibration"], "train_mae": fitted["mae"],
                      "train_objective": fitted["objective"], "test": _exact(held, hw_fold, gpu, penalty),
                      "test_with_full_fit": _exact(held, hw_ref, gpu, penalty)})
    return folds


def pooled(folds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Row-weighted MAE and right-side share over all held-out rows of a leave-one-source-out run."""
    n = sum(f["test"]["n"] for f in folds)
    if not n:
        return {"n": 0, "mae": None, "right_side": None}
    return {"n": n, "mae": sum(f["test"]["mae"] * f["test"]["n"] for f in folds) / n,
            "right_side": sum(f["test"]["right_side_rows"] for f in folds) / n,
            "right_side_rows": sum(f["test"]["right_side_rows"] for f in folds),
            "mae_full_fit": sum(f["test_with_full_fit"]["mae"] * f["test"]["n"] for f in folds) / n}


# ---------------------------------------------------------------------------------------- command

def format_search(result: Mapping[str, Any]) -> str:
    """The outer search of :func:`calibrate5` as a text table."""
    hdr = (f"{'fraction':>8s}  {'eff dense/sparse':>16s}  {'launch dense/sparse':>19s}  {'MAE':>6s}  "
           f"{'objective':>9s}  {'dense/sparse time err':>21s}  {'right side':>10s}")
    has_loso = any("loso" in e for e in result["search"])
    if has_loso:
        hdr += f"  {'LOSO MAE':>8s}"
    lines = [hdr, "-" * len(hdr)]
    for e in result["search"]:
        c, a = e["fitted"], e["after"]
        line = (f"{e['fraction']:8.2f}  {c.efficiency_dense:7.2f} / {c.efficiency_sparse:<6.2f}  "
                f"{c.launch_dense:8d} / {c.launch_sparse:<8d}  {a['mae']:6.4f}  {e['objective']:9.4f}  "
                f"{a['dense_time_mape']:8.1f}% / {a['sparse_time_mape']:5.1f}%     "
                f"{a['right_side_rows']:3d}/{a['n']:<3d}   ")
        if has_loso:
            line += f"  {e['loso']['mae']:8.3f}"
        lines.append(line + ("  <- best" if e["best"] else ""))
    if "loso_nested" in result:
        nest = result["loso_nested"]
        picks = ", ".join(f"{f['label']}: {f['fraction']:.2f}" for f in nest["folds"])
        lines.append(f"leave-one-source-out with the fraction chosen inside each fold ({picks}): "
                     f"pooled MAE {nest['pooled']['mae']:.3f}, right side "
                     f"{nest['pooled']['right_side_rows']}/{nest['pooled']['n']}")
    c = result["fitted"]
    lines.append(f"best: dram.sustained_fraction {c.dram_sustained_fraction:.2f}, efficiency dense "
                 f"{c.efficiency_dense:.2f} / sparse {c.efficiency_sparse:.2f}, launch dense {c.launch_dense} / "
                 f"sparse {c.launch_sparse} cycles; shipped values: {result['current']}")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m accelsim.analysis.calibration: the command line lives in accelsim.cli
    from accelsim.cli.calibrate import main

    raise SystemExit(main())
