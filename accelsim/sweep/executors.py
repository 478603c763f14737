"""Where a sweep's chunks run: in this process, a local process pool, or a Dask cluster.

Each executor runs tasks ``(chunk index, [(point index, overrides), ...])`` with
:func:`accelsim.sweep.rows.run_points` and hands every finished chunk to ``on_done`` in this
process, in whatever order chunks finish (the chunk index says where its rows go).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.sweep.rows import PointTask, Row, WorkContext, run_points

Task = tuple[int, list[PointTask]]  # (chunk index, its points)
OnDone = Callable[[int, list[list[Row]]], None]

_CTX: WorkContext | None = None  # a pool worker's context, set once by its initializer


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _pool_init(ctx: WorkContext) -> None:
    global _CTX
    _CTX = ctx


def _pool_chunk(index: int, points: list[PointTask]) -> tuple[int, list[list[Row]]]:
    assert _CTX is not None
    return index, run_points(_CTX, points)


def _dask_chunk(ctx: WorkContext, index: int, points: list[PointTask]) -> tuple[int, list[list[Row]]]:
    return index, run_points(ctx, points)


def _mp_context() -> Any:
    """fork on Linux: workers inherit imports and loaded numba kernels (they start in milliseconds, and a
    script calling run_sweep needs no ``if __name__ == "__main__"`` guard). The workers only compute:
    they touch no lock of the parent's other threads (a progress bar's monitor thread, say).
    Elsewhere the platform default (spawn)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def execute_local(ctx: WorkContext, tasks: list[Task], workers: int, on_done: OnDone) -> None:
    """Run the tasks in a pool of ``workers`` processes (in this process for 1 worker or 1 task)."""
    if workers <= 1 or len(tasks) <= 1:
        for idx, pts in tasks:
            on_done(idx, run_points(ctx, pts))
        return
    # Compile here first: the forked workers inherit the compiled kernels instead of each compiling them and
    # writing numba's on-disk cache at once (its index update is a read-modify-write; on a cold cache two
    # processes saving different signatures of one function can leave an entry naming the other's code).
    # The first point is simulated once more in its chunk; its result here is dropped.
    run_points(ctx, tasks[0][1][:1])
    ex = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=_mp_context(),
                             initializer=_pool_init, initargs=(ctx,))
    try:
        pending = {ex.submit(_pool_chunk, idx, pts) for idx, pts in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=id):
                idx, res = fut.result()
                on_done(idx, res)
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def require_dask() -> None:
    """AccelsimError unless dask.distributed is importable."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise AccelsimError("the Dask executor needs dask.distributed, which is not installed: "
                            "pip install 'dask[distributed]'") from None


def execute_dask(ctx: WorkContext, tasks: list[Task], address: str | None, workers: int | None,
                 on_done: OnDone) -> str:
    """Run the tasks on the Dask scheduler at ``address`` (None / '' / 'local': a LocalCluster of
    ``workers`` processes); return where they ran, in words."""
    require_dask()
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address in (None, "", "local"):
        if tasks:  # compile (and write numba's cache) once, before the local workers start
            run_points(ctx, tasks[0][1][:1])
        cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        where = f"LocalCluster({len(cluster.workers)} workers)"
    else:
        try:
            client = Client(address, timeout="30s")
        except OSError as exc:
            raise AccelsimError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        where = f"dask scheduler {address}"
    try:
        ctx_future = client.scatter(ctx, broadcast=True, hash=False)
        futures = [client.submit(_dask_chunk, ctx_future, idx, pts, pure=False, retries=3) for idx, pts in tasks]
        for fut in as_completed(futures):
            idx, res = fut.result()
            on_done(idx, res)
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return where
