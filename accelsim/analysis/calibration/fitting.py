"""Fitting the four inner calibrated fields on tables of simulated kernel bodies.

A launch cost is additive to a kernel's cycles (total = launch + body), and a dense body depends only on
the dense efficiency (a sparse body only on the sparse one). So each row's dense and sparse body is
simulated once per efficiency on a grid (:func:`body_tables`), interpolated linearly in 1 / efficiency,
and the four fields are searched on those tables (:func:`fit`: a coarse 4-D grid, then coordinate descent
at 0.01 efficiency / 50 cycle resolution from the best few coarse points). The objective is the speedup
MAE plus ``penalty`` x the mean absolute log error of the predicted dense and sparse *times*, which keeps
the fields physical (the speedup alone cannot tell a kernel at 100 % of peak with a large fixed cost from
one at 75 % with a small one). Bounds: efficiencies in (0.3, 1], launch costs >= 0 cycles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelsim.analysis.calibration.fields import (
    DEFAULT_GRID,
    EFF_BOUNDS,
    EFF_STEP,
    LAUNCH_MAX,
    LAUNCH_STEP,
    Calibration,
    with_calibration,
)
from accelsim.analysis.gpu_validation import row_hardware, row_kernels, row_sparsity, runs_sm80, with_host_floor
from accelsim.analysis.measurements import Measurement
from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware
from accelsim.simulation import Simulator


@dataclass(frozen=True)
class FitResult:
    """The four inner fields fitted on body tables (at the tables' DRAM fraction), with the table objective."""

    calibration: Calibration
    objective: float
    mae: float
    dense_log_err: float
    sparse_log_err: float
    right_side: float
    rows: int
    penalty: float
    eff_bounds: tuple[float, float]
    launch_max: int
    host_floors: tuple[int, ...] = ()  # per floor group (``fit``'s ``floor_groups``), in the tables' cycles


@dataclass(frozen=True)
class BodyTables:
    """Per-row simulated cycles without the launch cost, on a grid of efficiencies."""

    grid: np.ndarray  # (G,) efficiencies, ascending
    dense: np.ndarray  # (G, R) dense body cycles at efficiency grid[g]
    sparse: np.ndarray  # (G, R) sparse body cycles (the dense body where the sparse path fell back)
    sparse_path: np.ndarray  # (R,) True where the 2:4 run is really sparse
    rows: tuple[Measurement, ...]
    clock_ghz: float
    dram_sustained_fraction: float  # the (fixed) fifth field the bodies were simulated with
    host_floor: float = 0.0  # the config's host per-call floor, in these cycles: kept when a fit fits no floor

    def subset(self, mask: np.ndarray) -> BodyTables:
        idx = np.flatnonzero(mask)
        return BodyTables(self.grid, self.dense[:, idx], self.sparse[:, idx], self.sparse_path[idx],
                          tuple(self.rows[i] for i in idx), self.clock_ghz, self.dram_sustained_fraction,
                          self.host_floor)

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
    """Simulate every row dense and sparse at each grid efficiency with zero launch cost and no host floor.

    The DRAM sustained fraction is ``hw``'s own (set it with :func:`with_calibration` first).
    """
    if not rows:
        raise AccelsimError("calibration: no rows to fit")
    _check_fit_size(len(rows))
    g = np.array(sorted(set(float(x) for x in grid)))
    if len(g) < 2 or g[0] <= 0 or g[-1] > 1:
        raise AccelsimError("calibration: the efficiency grid needs at least two values in (0, 1]")
    dense = np.zeros((len(g), len(rows)))
    sparse = np.zeros((len(g), len(rows)))
    path = np.zeros(len(rows), dtype=bool)
    for gi, eff in enumerate(g):
        hw_e = with_host_floor(with_calibration(hw, Calibration(float(eff), float(eff), 0, 0,
                                                                float(hw.dram.sustained_fraction))), 0.0)
        sims: dict[tuple[str, str], Simulator] = {}
        for ri, row in enumerate(rows):
            # as the row's harness ran each kernel (the searched 2:4 tiles, sm80 2:4 binaries), at no launch cost
            fmt = row_sparsity(row, sparsity)
            sim_d, sim_s = (_row_sim(sims, hw_e, row, p, sparsity) for p in ("dense", "sparse"))
            try:
                kd, ks = row_kernels(row, sim_d.hw, fmt)  # C as the row's harness wrote it
                if sim_s is not sim_d:  # sm80 2:4 kernels: lowered on their own hardware
                    ks = row_kernels(row, sim_s.hw, fmt)[1]
                if not ks.sparse:  # a dense fallback runs on the part's own dense kernels
                    sim_s = sim_d
                dense[gi, ri] = sim_d(kd).cycles["total"]
                sparse[gi, ri] = sim_s(ks).cycles["total"]
            except AccelsimError as exc:  # e.g. a dtype the config has no rate for: name the row
                raise AccelsimError(f"{row.file or 'measurements'}: line {row.line} ({row.gpu}, {row.dtype} "
                                    f"{row.m}x{row.n}x{row.k}) cannot run on {hw.name}: {exc}; drop the row or map "
                                    f"its GPU to a config that runs it") from None
            path[ri] = ks.sparse
    return BodyTables(g, dense, sparse, path, tuple(rows), float(hw.clock_ghz), float(hw.dram.sustained_fraction),
                      hw.host.call_floor_us * 1e3 * hw.clock_ghz)


def _row_sim(sims: dict[tuple[str, str], Simulator], hw: Hardware, row: Measurement, path: str,
             sparsity: str) -> Simulator:
    """The simulator of a row's ``path`` kernel on ``hw`` (no launch cost or host floor: the fit adds them, and
    ``row_hardware``'s kernel-loop change is a no-op here), as its harness ran it, one per distinct variant."""
    key = (row.kernels, "sm80" if runs_sm80(row, path, sparsity) else "")
    if key not in sims:
        sims[key] = Simulator(row_hardware(hw, row, path, sparsity))
    return sims[key]


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
    floor: np.ndarray  # (R,) each row's host floor (0: none): a call takes max(floor, launch + body)
    called: np.ndarray  # (R,) 1.0 where the row pays the launch cost, 0.0 for kernel-loop rows (as scoring does)

    def times(self, ed: int, es: int, ld: int, ls: int) -> tuple[np.ndarray, np.ndarray]:
        """Every row's dense and sparse time at one point: max(floor, launch + body); fallbacks run dense."""
        d = np.maximum(self.dense[ed] + self.launches[ld] * self.called, self.floor)
        s = np.where(self.fallback, d, np.maximum(self.sparse[es] + self.launches[ls] * self.called, self.floor))
        return d, s

    def objective(self, ed: int, es: int, ld: int, ls: int) -> tuple[float, float, float, float]:
        d, s = self.times(ed, es, ld, ls)
        mae = float(np.abs(d / s - self.meas).mean())
        td = float(_log_err(d[None, :], self.md)[0])
        ts = float(_log_err(s[None, :], self.ms)[0])
        return mae + self.penalty * (td + ts) / 2.0, mae, td, ts


def fit(tables: BodyTables, *, penalty: float = 0.1, eff_bounds: tuple[float, float] = EFF_BOUNDS,
        launch_max: int = LAUNCH_MAX, starts: int = 6, floor_groups: np.ndarray | None = None,
        floor_max: int = 0, n_floor_groups: int | None = None) -> FitResult:
    """Fit the four inner fields on ``tables`` (all its rows) at the tables' DRAM fraction.

    ``floor_groups`` (one int per row, -1 for none) also fits a host per-call floor per group, 0 to
    ``floor_max`` cycles: a row's time is then max(floor, launch + body) (``host.call_floor_us``). The floors
    and the four fields are fitted in turns (each floor by a scan, the fields by the search below) until
    neither moves. Returns the values (a :class:`Calibration` carrying ``tables.dram_sustained_fraction``),
    the floors and the table-based objective (:class:`FitResult`).
    """
    if not len(tables.rows):
        raise AccelsimError("calibration: no rows to fit")
    _check_fit_size(len(tables.rows))
    if not math.isfinite(penalty) or penalty < 0:
        raise AccelsimError(f"calibration: the time-error penalty must be a finite number >= 0, got {penalty:g}")
    lo, hi = eff_bounds
    if not (0.0 < lo < hi <= 1.0):
        raise AccelsimError(f"calibration: efficiency bounds must satisfy 0 < low < high <= 1, got {eff_bounds}")
    effs = np.round(np.arange(math.ceil(lo / EFF_STEP) * EFF_STEP, hi + 1e-9, EFF_STEP), 4)
    effs = effs[(effs > lo - 1e-9) & (effs <= hi + 1e-9)]
    launches = np.arange(0, launch_max + 1, LAUNCH_STEP)
    meas, md, ms = _measured(tables)
    loop = np.array([r.timing == "kernel-loop" for r in tables.rows], dtype=bool)  # no host call per kernel
    groups = np.full(len(tables.rows), -1) if floor_groups is None else np.asarray(floor_groups, dtype=int)
    groups = np.where(loop, -1, groups)
    n_groups = 0 if floor_max <= 0 else (n_floor_groups if n_floor_groups is not None else int(groups.max()) + 1)
    search = _Search(effs, launches, tables.at(effs, "dense"), tables.at(effs, "sparse"), meas, md, ms,
                     ~tables.sparse_path, penalty, np.where(loop, 0.0, tables.host_floor), np.where(loop, 0.0, 1.0))
    # a host's floor cannot exceed its fastest measured call; the turns start every floor there (the fixed costs
    # fitted without a floor would absorb it and leave no gradient towards one)
    caps = [min(float(floor_max), _fastest_call(search, groups == g)) for g in range(n_groups)]
    floors = np.array([int(c // FLOOR_STEP) * FLOOR_STEP for c in caps], dtype=int)
    if n_groups:
        search.floor = _row_floors(groups, floors)
    point = _fields(search, starts)
    for _ in range(MAX_TURNS if n_groups else 0):
        moved = False
        for g in range(n_groups):
            best = _scan_floor(search, point, groups == g, caps[g])
            moved |= best != floors[g]
            floors[g] = best
            search.floor = _row_floors(groups, floors)
        if not moved:
            break
        point = _fields(search, starts)  # afresh: with the floors moved, the fixed costs may fall to another basin
    bed, bes, bld, bls = point
    obj, mae, tde, tse = search.objective(bed, bes, bld, bls)
    d, s = search.times(bed, bes, bld, bls)
    cal = Calibration(float(effs[bed]), float(effs[bes]), int(launches[bld]), int(launches[bls]),
                      tables.dram_sustained_fraction)
    return FitResult(cal, obj, mae, tde, tse, float(((d / s > 1.0) == (meas > 1.0)).mean()), len(tables.rows),
                     penalty, (lo, hi), launch_max, tuple(int(f) for f in floors))


# The search holds (efficiencies x fixed costs x rows) arrays: about 0.2 MB per row, ~1 GB at this many rows
MAX_FIT_ROWS = 5000


def _check_fit_size(rows: int) -> None:
    if rows > MAX_FIT_ROWS:
        raise AccelsimError(f"calibration: {rows:,} rows to fit, at most {MAX_FIT_ROWS:,} (the fit's search holds "
                            f"about 0.2 MB per row); fit on a sample, or drop repeated rows")


MAX_TURNS = 6  # alternations of the floor scans and the four-field search
FLOOR_STEP = 250  # cycles (ns on pooled tables) between the host floors a scan tries


def _row_floors(groups: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """Each row's floor: its group's (0 for rows in no group)."""
    if not len(floors):
        return np.zeros(len(groups))
    return np.where(groups >= 0, floors[np.maximum(groups, 0)], 0).astype(float)


def _fastest_call(search: _Search, rows: np.ndarray) -> float:
    """The fastest measured call among ``rows`` (dense, sparse, or dense / speedup where the sparse time is not
    given): a host's floor cannot exceed it."""
    times = [search.md[rows], search.ms[rows], search.md[rows] / search.meas[rows]]
    values = np.concatenate(times)
    values = values[np.isfinite(values)]
    return float(values.min()) if len(values) else math.inf


def _scan_floor(search: _Search, point: list[int], rows: np.ndarray, floor_max: float) -> int:
    """The floor of one group (``rows``) that minimises the objective, the four fields held at ``point``."""
    best, best_value = 0, math.inf
    saved = search.floor.copy()
    for floor in range(0, int(floor_max) + 1, FLOOR_STEP):
        search.floor = np.where(rows, float(floor), saved)
        value = search.objective(*point)[0]
        if value < best_value - 1e-12:
            best, best_value = floor, value
    search.floor = saved
    return best


def _fields(search: _Search, starts: int) -> list[int]:
    """The four fields: a coarse 4-D grid (every 5th efficiency, launch costs every 1000 cycles), then a joint
    local search from the best few coarse points."""
    effs, launches, meas, md, ms, penalty = (search.effs, search.launches, search.meas, search.md, search.ms,
                                             search.penalty)
    ce = np.arange(0, len(effs), 5)
    cl = np.arange(0, len(launches), max(1, 1000 // LAUNCH_STEP))
    fixed = launches[cl][None, :, None] * search.called  # kernel-loop rows pay no launch cost
    d_tot = np.maximum(search.dense[ce][:, None, :] + fixed, search.floor)  # (Ec, Lc, R)
    s_tot = np.maximum(search.sparse[ce][:, None, :] + fixed, search.floor)
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
    best: tuple[float, list[int]] | None = None
    for flat in order:
        a, b = np.unravel_index(flat, scores.shape)
        ed, ld = np.unravel_index(a, (len(ce), len(cl)))
        es, ls = np.unravel_index(b, (len(ce), len(cl)))
        point = [int(ce[ed]), int(ce[es]), int(cl[ld]), int(cl[ls])]
        point, value = _descend(search, point)
        if best is None or value < best[0] - 1e-12:
            best = (value, point)
    assert best is not None
    return best[1]


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
    d = np.maximum(search.dense[e_d][:, None, :] + search.launches[l_d][None, :, None] * search.called,
                   search.floor)  # (7, 13, R)
    s = np.maximum(search.sparse[e_s][:, None, :] + search.launches[l_s][None, :, None] * search.called, search.floor)
    td = _log_err(d, search.md)  # (7, 13)
    ts = _log_err(s, search.ms)
    dd = d[:, :, None, None, :]
    ss = np.where(search.fallback, dd, s[None, None, :, :, :])
    mae = np.abs(dd / ss - search.meas).mean(-1)  # (7, 13, 7, 13)
    obj = mae + search.penalty * (td[:, :, None, None] + ts[None, None, :, :]) / 2.0
    a, b, c, e = np.unravel_index(int(np.argmin(obj)), obj.shape)
    return [int(e_d[a]), int(e_s[c]), int(l_d[b]), int(l_s[e])], float(obj[a, b, c, e])
