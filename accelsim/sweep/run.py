"""Running a sweep: chunks of points on an executor, written as they finish, resumable, then one table.

:func:`run_sweep` returns a :class:`SweepRun`; the rows are read back with
:func:`accelsim.sweep.results.load_results`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from accelsim.config.schema import canonical_hash
from accelsim.errors import AccelsimError, ConfigError
from accelsim.hardware.model import hardware_from_dict
from accelsim.results import build_meta, dumps_finite
from accelsim.sweep.columns import DEFAULT_COST, FORMAT_VERSION, PLAN
from accelsim.sweep.executors import default_workers, execute_dask, execute_local, require_dask
from accelsim.sweep.points import Point
from accelsim.sweep.rows import Row, WorkContext
from accelsim.sweep.spec import SweepSpec, load_spec
from accelsim.sweep.store import assemble, is_chunk_file, make_plan, read_plan, scan_chunks, write_chunk, write_durably
from accelsim.sweep.summary import summarize

ROUNDING = ("integer fields sampled from uniform / log_uniform: round half to even, then clamp to "
            "[ceil(low), floor(high)]")


@dataclass(frozen=True)
class SweepRun:
    """What a finished :func:`run_sweep` did: the folder, the counts, the files written, the timings."""

    name: str
    out: str  # the results folder
    points: int  # hardware points of the spec
    rows: int
    chunks: int
    chunk_size: int
    chunks_run: int
    chunks_resumed: int  # valid chunks kept from an earlier run (resume)
    removed_files: tuple[str, ...]  # partial, corrupt or stray chunk files removed before running
    duplicates_dropped: int  # random samples that repeated a point
    executor: str  # where the chunks ran, in words
    wall_s: float
    run_s: float  # of which running the chunks
    points_run: int
    configs_per_s: float  # points_run / run_s
    files: tuple[str, ...]  # results.csv (results.parquet), meta.json
    warnings: tuple[str, ...]
    infeasible_rows: int
    over_memory_rows: int  # fits_memory False: the footprint exceeds dram.capacity_bytes (run warns)
    dense_over_memory_rows: int  # fits_memory True, dense_fits_memory False: the dense baseline does not (run warns)
    split_note_rows: int  # split_notes set: a system's tensor-parallel split is uneven (run warns)
    no_energy_rows: int = 0  # feasible rows without energy figures (energy_j empty; a warning says why)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists for the tuples), in field order: as meta.json's sweep section records it."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def run_sweep(spec: SweepSpec | str | Path, out_dir: str | Path, executor: str = "local",
              dask_address: str | None = None, workers: int | None = None, resume: bool = False,
              progress: Callable[[int, int], None] | None = None, *, chunk_size: int | None = None,
              lean: bool = True, command: list[str] | None = None) -> SweepRun:
    """Run a sweep (a spec, or a spec file) into ``out_dir``; return what was done.

    ``executor``: 'local' (a process pool over ``workers`` processes, default all cores; 1 = in this
    process) or 'dask' (``dask_address`` = a scheduler address like 'tcp://host:8786', or None /
    'local' for a LocalCluster of ``workers`` processes); ``workers`` or ``chunk_size`` below 1 is an
    AccelsimError. Each finished chunk of points is written
    at once (atomically, its checksum and row count in its name). ``resume``: keep the valid
    chunks already in ``out_dir`` (of the same spec), remove partial or corrupt ones, run the rest.
    ``progress(done, total)`` counts hardware points. ``lean=False`` builds every row through
    :func:`accelsim.simulation.run` instead of the lean batch path (same numbers, much slower). A file that
    cannot be written or read (chunks, plan.json, results) is an AccelsimError naming it.
    """
    for name, value in (("workers", workers), ("chunk_size", chunk_size)):  # 0 or -3 used to pass unnoticed
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise AccelsimError(f"run_sweep: {name} must be a whole number >= 1 (None: "
                                f"{'all cores' if name == 'workers' else 'automatic'}), got {value!r}")
    try:
        return _run_sweep(spec, out_dir, executor, dask_address, workers, resume, progress, chunk_size, lean, command)
    except OSError as exc:
        raise AccelsimError(fs_error(exc, out_dir)) from None


def fs_error(exc: OSError, default: str | Path) -> str:
    """One line for a failed file operation: the path and the reason."""
    where = exc.filename if exc.filename is not None else default
    return f"{where}: {exc.strerror or exc}"


def work_context(spec: SweepSpec, lean: bool = True) -> WorkContext:
    """What every worker needs of ``spec`` (the reference path, ``lean=False``, has its own caches)."""
    return WorkContext(id=spec.spec_hash + ("" if lean else "-ref"), hardware=spec.hardware_data,
                       hw_source=spec.hardware_source,
                       workloads=tuple((w.source, w.data, w.combos) for w in spec.workloads),
                       sparsity=spec.sparsity, policy=spec.policy, lean=lean)


def _auto_chunk(n_points: int, workers: int) -> int:
    """Points per chunk: about 8 chunks per worker, at most 64 points each."""
    return max(1, min(64, math.ceil(n_points / max(1, workers * 8))))


def _full_rows(spec: SweepSpec, point: Point, metrics: list[Row]) -> list[list[Any]]:
    head = [point.index, point.origin, point.hw_hash, *point.values, point.sram_bytes]
    rows = []
    it = iter(metrics)
    for w in spec.workloads:
        for combo in w.combos:
            params = [combo.get(k) for k in spec.set_keys]
            for sp in spec.sparsity:
                rows.append([*head, w.label, *params, sp if sp is not None else PLAN, *next(it)])
    return rows


def _run_sweep(spec: SweepSpec | str | Path, out_dir: str | Path, executor: str, dask_address: str | None,
               workers: int | None, resume: bool, progress: Callable[[int, int], None] | None,
               chunk_size: int | None, lean: bool, command: list[str] | None) -> SweepRun:
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    if executor not in ("local", "dask"):
        raise ValueError(f"executor must be 'local' or 'dask', got {executor!r}")
    if dask_address is not None and executor == "local":
        executor = "dask"
    if executor == "dask":
        require_dask()  # before anything is written
    t0 = time.perf_counter()
    out = Path(out_dir)
    chunks = out / "chunks"
    plan_path = out / "plan.json"
    existing = plan_path.exists() or (chunks.is_dir() and any(chunks.iterdir()))
    n_workers = workers or default_workers()
    warnings: list[str] = []
    if existing and not resume:
        raise AccelsimError(f"{out} already holds a sweep; resume it (--resume) or choose another directory")
    if resume and plan_path.exists():
        plan = read_plan(plan_path)
        if plan.get("spec_hash") != spec.spec_hash or plan.get("format") != FORMAT_VERSION:
            raise ConfigError(str(plan_path), "spec_hash", f"{out} holds a different sweep (spec "
                              f"{plan.get('name')!r}, hash {plan.get('spec_hash')}); the spec, its hardware or "
                              "workload files changed since. Use another directory to run this one")
        size = plan["chunk_size"]
        now = make_plan(spec, size)
        if plan["chunks"] != now["chunks"]:
            raise ConfigError(str(plan_path), "chunks", f"{plan['chunks']} chunks of {size} points do not cover this "
                              f"spec's {len(spec.points)} points (expected {now['chunks']}); the plan was edited")
        if (plan.get("accelsim_version"), plan.get("git_commit")) != (now["accelsim_version"], now["git_commit"]):
            warnings.append(f"resumed with accelsim {now['accelsim_version']} ({now['git_commit']}); the chunks "
                            f"already written came from {plan.get('accelsim_version')} ({plan.get('git_commit')})")
    else:
        size = chunk_size or spec.chunk_size or _auto_chunk(len(spec.points), n_workers)
        plan = make_plan(spec, size)
        chunks.mkdir(parents=True, exist_ok=True)
        for stale in chunks.iterdir():  # resume without a plan: chunks of an unknown plan are not data
            if stale.is_file() and is_chunk_file(stale.name):
                stale.unlink()
        write_durably(out / "spec.yaml", spec.text.encode())
        write_durably(plan_path, (dumps_finite(plan, "sweep plan", indent=2) + "\n").encode())
    chunks.mkdir(parents=True, exist_ok=True)
    n_chunks = plan["chunks"]
    per_point = spec.rows_per_point
    bounds = [(i * size, min(len(spec.points), (i + 1) * size)) for i in range(n_chunks)]
    expected = {i: (hi - lo) * per_point for i, (lo, hi) in enumerate(bounds)}
    valid, removed = scan_chunks(chunks, expected, len(spec.columns))
    todo = [i for i in range(n_chunks) if i not in valid]
    total_points = len(spec.points)
    done_points = sum(bounds[i][1] - bounds[i][0] for i in valid)
    if progress is not None:
        progress(done_points, total_points)

    def on_done(idx: int, metrics: list[list[Row]]) -> None:
        nonlocal done_points
        lo, hi = bounds[idx]
        rows = [r for p, m in zip(spec.points[lo:hi], metrics, strict=True) for r in _full_rows(spec, p, m)]
        valid[idx] = write_chunk(chunks, idx, rows)
        done_points += hi - lo
        if progress is not None:
            progress(done_points, total_points)

    ctx = work_context(spec, lean)
    tasks = [(i, [(p.index, p.overrides) for p in spec.points[bounds[i][0]:bounds[i][1]]]) for i in todo]
    t_run = time.perf_counter()
    where = "in-process" if n_workers <= 1 else f"process pool ({n_workers} workers)"
    if tasks:
        if executor == "dask":
            where = execute_dask(ctx, tasks, dask_address, workers, on_done)
        else:
            execute_local(ctx, tasks, n_workers, on_done)
    run_s = time.perf_counter() - t_run
    points_run = sum(bounds[i][1] - bounds[i][0] for i in todo)
    files, rows = assemble(spec, out, [valid[i] for i in range(n_chunks)])
    counts = summarize(spec, rows)
    wall = time.perf_counter() - t0
    result = SweepRun(
        name=spec.name, out=str(out), points=len(spec.points), rows=len(spec.points) * per_point,
        chunks=n_chunks, chunk_size=size, chunks_run=len(tasks), chunks_resumed=n_chunks - len(tasks),
        removed_files=tuple(removed), duplicates_dropped=spec.duplicates_dropped, executor=where,
        wall_s=round(wall, 3), run_s=round(run_s, 3), points_run=points_run,
        configs_per_s=round(points_run / run_s, 1) if points_run and run_s > 0 else 0.0,
        files=tuple(str(f) for f in files), warnings=(*warnings, *counts.warnings),
        infeasible_rows=counts.infeasible_rows, over_memory_rows=counts.over_memory_rows,
        dense_over_memory_rows=counts.dense_over_memory_rows,
        split_note_rows=counts.split_note_rows, no_energy_rows=counts.no_energy_rows)
    meta_path = out / "meta.json"
    write_durably(meta_path, (dumps_finite(_meta(spec, result, command), "sweep meta", indent=2, default=str)
                              + "\n").encode())
    return replace(result, files=(*result.files, str(meta_path)))


def _meta(spec: SweepSpec, result: SweepRun, command: list[str] | None) -> dict[str, Any]:
    """meta.json: the header (versions, hashes, command), the spec's facts, and what the run did."""
    base_hash = canonical_hash(hardware_from_dict(spec.hardware_data, spec.hardware_source).to_dict())
    meta = build_meta(command, {"hardware": base_hash, "spec": spec.spec_hash})
    return {"meta": meta, "sweep": {
        "name": spec.name, "description": spec.description, "source": spec.source,
        "hardware": spec.hardware_source, "workloads": [w.source for w in spec.workloads],
        "set": list(spec.set_keys), "sparsity": [s or PLAN for s in spec.sparsity], "policy": spec.policy,
        "grid": spec.grid, "random": spec.random.as_dict() if spec.random is not None else None,
        "swept": list(spec.swept), "field_kinds": spec.kinds, "rounding": ROUNDING,
        "cost": spec.cost or DEFAULT_COST, "columns": spec.columns,
        **{k: v for k, v in result.to_dict().items() if k != "files"}}}
