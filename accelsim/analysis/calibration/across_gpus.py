"""One set of calibrated values for several GPUs, and leave-one-GPU-out: predict a GPU never fitted.

A fit per GPU cannot say anything about a GPU without measurements. Here the calibrated fields are
*shared*: one main-loop efficiency per path (a share of each part's own published peak), one fixed cost
per kernel in **nanoseconds** (a software cost: launch, prologue, epilogue; each part converts it to its
own cycles at its clock), and each config's own ``dram.sustained_fraction`` (not refitted here). The rows
of every GPU are pooled into one set of body tables in nanoseconds, so the search of :mod:`.fitting`
runs unchanged. :func:`leave_one_gpu_out` fits on all GPUs but one, applies the values to the left-out
GPU's config (its spec-sheet numbers stay its own) and scores its rows by exact re-simulation, next to
the FLOPs rule of thumb on the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accelsim.analysis.calibration.fields import (
    DEFAULT_GRID,
    Calibration,
    current_calibration,
    select_rows,
    with_calibration,
)
from accelsim.analysis.calibration.fitting import BodyTables, body_tables, fit
from accelsim.analysis.gpu_validation import validate_hw, with_host_floor
from accelsim.analysis.measurements import MAIN_REGIMES, SPARSE_BOUND, Measurement, gpu_name, match_row
from accelsim.analysis.validation_results import Metrics, RowResult
from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware

LAUNCH_MAX_NS = 20000  # the fixed-cost search range per kernel, nanoseconds (50 ns steps)
FLOOR_MAX_NS = 20000  # the host per-call floor search range, nanoseconds (fitting.FLOOR_STEP steps)


@dataclass(frozen=True)
class SharedCalibration:
    """Calibrated values shared by several GPUs: efficiencies, fixed costs in ns, and the GPUs they came from."""

    efficiency_dense: float
    efficiency_sparse: float
    launch_dense_ns: int
    launch_sparse_ns: int
    fitted_on: tuple[str, ...]
    rows: int
    objective: float
    host_floors_ns: tuple[tuple[str, int], ...] = ()  # (host, floor): each measured host's per-call floor

    def for_part(self, hw: Hardware) -> Calibration:
        """The five fields for ``hw``: the shared values, fixed costs in its cycles, its own DRAM fraction."""
        own = current_calibration(hw)
        return Calibration(self.efficiency_dense, self.efficiency_sparse,
                           round(self.launch_dense_ns * hw.clock_ghz), round(self.launch_sparse_ns * hw.clock_ghz),
                           own.dram_sustained_fraction)

    def host_floor_ns(self, host: str) -> int:
        """The fitted per-call floor of ``host``; for a host never measured, the least floor of the measured hosts
        (the libraries' per-call cost on the fastest host seen; 0 when none was fitted)."""
        floors = dict(self.host_floors_ns)
        return floors[host] if host in floors else min(floors.values(), default=0)

    def apply(self, hw: Hardware, host: str) -> Hardware:
        """``hw`` with the five fields and the host floor of ``host`` (``host.call_floor_us``)."""
        return with_calibration(with_host_floor(hw, self.host_floor_ns(host) / 1000.0), self.for_part(hw))


@dataclass(frozen=True)
class GpuScore:
    """How one GPU's main-regime rows score with a given calibration (model and rule of thumb)."""

    gpu: str
    hardware: str
    metrics: Metrics
    rows: tuple[RowResult, ...] = ()  # every row of the GPU as predicted with the calibration scored


@dataclass(frozen=True)
class LogoFold:
    """One fold: the GPU left out, the values fitted without it, and its score."""

    left_out: str
    calibration: SharedCalibration
    score: GpuScore


@dataclass(frozen=True)
class LeaveOneGpuOut:
    """Leave-one-GPU-out folds, and the in-sample fit on every GPU with its per-GPU and overall scores."""

    folds: tuple[LogoFold, ...]
    in_sample: SharedCalibration
    in_sample_scores: tuple[GpuScore, ...]
    in_sample_overall: Metrics
    bound: float
    main_regimes: tuple[str, ...]


def pooled_tables(rows_by_gpu: Mapping[str, Sequence[Measurement]], hw_by_gpu: Mapping[str, Hardware],
                  grid: Sequence[float] = DEFAULT_GRID) -> BodyTables:
    """Body tables of every GPU's rows, in nanoseconds (a table at "1 GHz"), concatenated."""
    parts = []
    for gpu, rows in rows_by_gpu.items():
        if rows:
            parts.append((body_tables(rows, hw_by_gpu[gpu], grid), hw_by_gpu[gpu].clock_ghz))
    if not parts:
        raise AccelsimError("calibration: no rows to fit on any GPU")
    grid_a = parts[0][0].grid
    return BodyTables(grid_a, np.concatenate([t.dense / ghz for t, ghz in parts], axis=1),
                      np.concatenate([t.sparse / ghz for t, ghz in parts], axis=1),
                      np.concatenate([t.sparse_path for t, _ in parts]),
                      tuple(r for t, _ in parts for r in t.rows), 1.0, float("nan"))


def fit_shared(rows_by_gpu: Mapping[str, Sequence[Measurement]], hw_by_gpu: Mapping[str, Hardware], *,
               grid: Sequence[float] = DEFAULT_GRID, penalty: float = 0.1,
               host_of: Callable[[str], str] | None = None) -> SharedCalibration:
    """Fit the shared efficiencies and fixed costs (ns) on the pooled rows of every GPU given.

    ``host_of`` (hw-map key -> host name) also fits each host's per-call floor (``host.call_floor_us``) on its
    rows but those timed as a kernel loop (no host call per kernel); None fits none.
    """
    tables = pooled_tables(rows_by_gpu, hw_by_gpu, grid)
    # a host with a floor to fit: one with a row that made a host call per kernel (not a kernel loop)
    hosts = list(dict.fromkeys(host_of(k) for k, r in rows_by_gpu.items()
                               for row in r if row.timing != "kernel-loop")) if host_of else []
    groups = None
    if host_of is not None:
        groups = np.array([-1 if row.timing == "kernel-loop" else hosts.index(host_of(k))
                           for k, r in rows_by_gpu.items() for row in r])
    res = fit(tables, penalty=penalty, launch_max=LAUNCH_MAX_NS, floor_groups=groups,
              floor_max=FLOOR_MAX_NS if hosts else 0, n_floor_groups=len(hosts))
    cal = res.calibration
    return SharedCalibration(cal.efficiency_dense, cal.efficiency_sparse, int(cal.launch_dense),
                             int(cal.launch_sparse), tuple(g for g, r in rows_by_gpu.items() if r), res.rows,
                             res.objective, tuple(zip(hosts, res.host_floors, strict=True)))


def _score(gpu: str, rows: Sequence[Measurement], parts: Mapping[str, Hardware], cal: SharedCalibration,
           main_regimes: Sequence[str], bound: float, host_of: Callable[[str], str] = gpu_name) -> GpuScore:
    """A GPU's rows scored on its configs (one per hw-map key of that GPU) with ``cal`` applied to each (and the
    floor of its host, ``host_of(key)``; a host the fit never saw takes the least fitted floor, 0 if none)."""
    calibrated = {key: cal.apply(hw, host_of(key)) for key, hw in parts.items()}
    res = validate_hw(rows, calibrated, main_regimes=main_regimes, bound=bound)
    return GpuScore(gpu, " + ".join(dict.fromkeys(hw.name for hw in parts.values())), res.overall, tuple(res.rows))


def leave_one_gpu_out(rows: Sequence[Measurement], hw_map: Mapping[str, Hardware], *,
                      grid: Sequence[float] = DEFAULT_GRID, penalty: float = 0.1,
                      main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
                      progress: Callable[[str], None] | None = None, host_floors: bool = True) -> LeaveOneGpuOut:
    """For each GPU of ``hw_map``: fit shared values on the others, score it; then fit on all and score each.

    A GPU is a key's name before any ``@SOURCE`` qualifier: ``A100`` and ``A100@vllmbench`` (its rows
    from one source, mapped to another SKU's config) are one GPU, left out together, with one per-call floor for
    all its rows (its hosts' fastest calls bound it). ``host_floors=False`` fits no floor (every host's 0: the
    ablation).
    """
    host_of = gpu_name if host_floors else None
    keys = list(hw_map)
    gpus = list(dict.fromkeys(gpu_name(k) for k in keys))
    if len(gpus) < 2:
        raise AccelsimError("leave-one-GPU-out needs at least two GPUs in the hardware map")
    fit_rows = {k: select_rows(rows, k, keys, main_regimes=main_regimes, bound=bound) for k in keys}
    parts = {g: {k: hw_map[k] for k in keys if gpu_name(k) == g} for g in gpus}
    own_rows = {g: [r for r in rows if (k := match_row(r, keys)) is not None and gpu_name(k) == g] for g in gpus}
    empty = [g for g in gpus if not any(fit_rows[k] for k in keys if gpu_name(k) == g)]
    if empty:
        raise AccelsimError(f"leave-one-GPU-out: no main-regime row of the measurements matches {', '.join(empty)} "
                            f"(mapped in the hardware map); every mapped GPU needs rows to fit on and to predict")
    folds = []
    for gpu in gpus:
        if progress:
            progress(f"fitting without {gpu}")
        others = {k: fit_rows[k] for k in keys if gpu_name(k) != gpu}
        cal = fit_shared(others, {k: hw_map[k] for k in others}, grid=grid, penalty=penalty, host_of=host_of)
        folds.append(LogoFold(gpu, cal, _score(gpu, own_rows[gpu], parts[gpu], cal, main_regimes, bound)))
    if progress:
        progress("fitting on every GPU")
    every = fit_shared(fit_rows, hw_map, grid=grid, penalty=penalty, host_of=host_of)
    scores = tuple(_score(g, own_rows[g], parts[g], every, main_regimes, bound) for g in gpus)
    return LeaveOneGpuOut(tuple(folds), every, scores, _pooled(scores), bound, tuple(main_regimes))


@dataclass(frozen=True)
class FamilyFit:
    """One fit shared by the configs of a family: the values, each config's cycles, and the in-sample scores."""

    calibration: SharedCalibration
    parts: tuple[tuple[str, str, int, int], ...]  # (hw-map key, config name, dense cycles, sparse cycles)
    before: GpuScore  # the family's rows with the configs as given (shipped values)
    after: GpuScore   # ... with the fitted values applied

    @property
    def host_floor_ns(self) -> int:
        """The family's fitted host per-call floor (``host.call_floor_us`` x 1000)."""
        return self.calibration.host_floor_ns(FAMILY_HOST)


def fit_family(rows: Sequence[Measurement], hw_map: Mapping[str, Hardware], *,
               grid: Sequence[float] = DEFAULT_GRID, penalty: float = 0.1,
               main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
               host_floor: bool = True) -> FamilyFit:
    """Fit the family's shared efficiencies, fixed costs (ns) and host floor on the rows of every config in
    ``hw_map`` (``host_floor=False``: no floor, the ablation).

    Each config keeps its spec-sheet numbers and converts the fixed costs to its own cycles (rounded to 10,
    as the configs store them). ``before``/``after`` score all the family's rows (main regimes).
    """
    keys = list(hw_map)
    fit_rows = {k: select_rows(rows, k, keys, main_regimes=main_regimes, bound=bound) for k in keys}
    cal = fit_shared(fit_rows, hw_map, grid=grid, penalty=penalty, host_of=_family_host if host_floor else None)
    own = [r for r in rows if match_row(r, keys) is not None]
    parts = tuple((k, hw.name, int(round(cal.launch_dense_ns * hw.clock_ghz, -1)),
                   int(round(cal.launch_sparse_ns * hw.clock_ghz, -1))) for k, hw in hw_map.items())
    label = " + ".join(dict.fromkeys(gpu_name(k) for k in keys))
    before = validate_hw(own, dict(hw_map), main_regimes=main_regimes, bound=bound)
    names = " + ".join(dict.fromkeys(hw.name for hw in hw_map.values()))
    return FamilyFit(cal, parts, GpuScore(label, names, before.overall),
                     _score(label, own, hw_map, cal, main_regimes, bound, _family_host))


FAMILY_HOST = "family"  # a family fit's one host floor, shared by its parts (family.host.call_floor_us)


def _family_host(key: str) -> str:
    return FAMILY_HOST


def _pooled(scores: Sequence[GpuScore]) -> Metrics:
    """Row-weighted MAE and right-side share over GPUs (model and rule of thumb)."""
    total = sum(s.metrics.n for s in scores)
    if not total:
        return Metrics(n=0)

    def avg(attr: str) -> float | None:
        vals = [(getattr(s.metrics, attr), s.metrics.n) for s in scores if s.metrics.n]
        if any(v is None for v, _ in vals):
            return None
        return sum(v * n for v, n in vals) / total

    return Metrics(n=total, mae=avg("mae"), right_side=avg("right_side"),
                   right_side_rows=sum(s.metrics.right_side_rows for s in scores), rule_mae=avg("rule_mae"),
                   rule_right_side=avg("rule_right_side"))
