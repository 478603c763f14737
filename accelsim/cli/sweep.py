"""accelsim sweep and sweep-plot: a design-space sweep and its plots."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from accelsim.cli import options
from accelsim.cli.common import command_line, progress_bar, warn, wrote
from accelsim.errors import AccelsimError
from accelsim.sweep import MAX_POINTS, SweepRun, load_results, load_spec, run_sweep


def sweep_command(spec_path: str | Path, out: str | Path, dask: str | None = None, resume: bool = False,
                  workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                  command: list[str] | None = None, max_points: int = MAX_POINTS) -> SweepRun:
    """``accelsim sweep SPEC -o OUT [--dask ADDRESS|local] [--resume] [--workers N] [--max-points N]``."""
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise AccelsimError(f"--max-points {max_points!r}: expected a positive integer")
    spec = load_spec(spec_path, max_points)
    return run_sweep(spec, out, executor="dask" if dask else "local", dask_address=dask, workers=workers,
                     resume=resume, progress=progress, command=command)


def sweep_plot_command(results_dir: str | Path, out: str | Path | None = None, *, x: str | None = None,
                       y: str | None = None, at: list[str] | None = None,
                       progress: Callable[[int, int], None] | None = None) -> tuple[list[Path], list[str]]:
    """``accelsim sweep-plot RESULTS [-o DIR] [--x KEY] [--y KEY] [--at KEY=VALUE]...``: the PNG files
    written (default RESULTS/plots) and notes saying which grid slice the heatmaps show."""
    held: dict[str, str] = {}
    for item in at or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise AccelsimError(f"sweep-plot --at {item!r}: expected KEY=VALUE, e.g. dram.bandwidth_gb_s=400")
        if key.strip() in held:
            raise AccelsimError(f"sweep-plot --at {key.strip()}: given twice")
        held[key.strip()] = value.strip()
    from accelsim.report.sweep_plots import sweep_plot  # matplotlib: loaded for sweep-plot only

    table = load_results(results_dir)
    if not table.sweep:  # without the spec's grid, set keys and cost every row would pool in one front
        raise AccelsimError(f"{Path(results_dir) / 'meta.json'}: not found; sweep-plot needs the sweep's grid, set "
                            "keys and cost (a folder as `accelsim sweep` writes it) to split fronts and draw heatmaps")
    return sweep_plot(table, out if out is not None else Path(results_dir) / "plots", x=x, y=y, at=held,
                      progress=progress)


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run (or resume) a sweep and summarise it in one line."""
    bar, progress = progress_bar(unit="config", leave=True)
    try:
        res = sweep_command(args.spec, args.out, dask=args.dask, resume=args.resume, workers=args.workers,
                            progress=progress, command=command_line(), max_points=args.max_points)
    finally:
        bar.close()
    warn(list(res.warnings))
    over = f", {res.over_memory_rows:,} over the device's memory" if res.over_memory_rows else ""
    dropped = f", {res.duplicates_dropped:,} repeated point(s) dropped" if res.duplicates_dropped else ""
    print(f"sweep: {res.points} configs, {res.rows} rows ({res.infeasible_rows} infeasible{over}{dropped}) in "
          f"{res.wall_s:.1f} s ({_rate(res)}){_resumed(res, args.resume)}")
    wrote(res.files)
    return 0


def _rate(res: SweepRun) -> str:
    """Configs per second over the points simulated now; none when a resume found nothing left to run."""
    if not res.points_run or res.run_s <= 0:
        return "nothing left to run" if not res.points_run else "no time measured"
    rate = res.points_run / res.run_s
    text = f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"
    now = f" over the {res.points_run:,} run now" if res.points_run != res.points else ""
    return f"{text} configs/s{now}"


def _resumed(res: SweepRun, resume: bool) -> str:
    """'; N of M chunks kept from an earlier run, ...' for a resumed sweep ('' for a fresh one)."""
    damaged = [f for f in res.removed_files if not f.endswith(".tmp")]
    temps = len(res.removed_files) - len(damaged)
    if not resume and not res.chunks_resumed and not res.removed_files:
        return ""
    text = f"; {res.chunks_resumed:,} of {res.chunks:,} chunks kept from an earlier run, {res.chunks_run:,} run now"
    if damaged:
        text += f" ({len(damaged):,} partial or corrupt chunk file{'s' if len(damaged) != 1 else ''} removed)"
    if temps:
        text += f", {temps:,} leftover temporary file{'s' if temps != 1 else ''} removed"
    return text


def cmd_sweep_plot(args: argparse.Namespace) -> int:
    """Draw a sweep's plots."""
    bar, update = progress_bar(0, "plot")
    try:
        paths, notes = sweep_plot_command(args.results, args.out, x=args.x, y=args.y, at=args.at, progress=update)
    finally:
        bar.close()
    for note in notes:
        print(f"sweep-plot: {note}")
    wrote(paths)
    return 0


def add_sweep(sub: options.Subparsers) -> None:
    """The sweep subcommand."""
    sw = sub.add_parser("sweep", help="design-space sweep over hardware fields, workloads, params, patterns")
    sw.add_argument("spec", help="sweep spec YAML (sweeps/*.yaml)")
    options.add_out(sw, "results directory", required=True)
    sw.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, or 'local' for a "
                                                       "LocalCluster")
    sw.add_argument("--workers", type=options.positive_int, metavar="N",
                    help="local processes, at least 1 (1: in this process; default: all cores)")
    sw.add_argument("--resume", action="store_true", help="continue a killed sweep in the same directory")
    sw.add_argument("--max-points", type=int, default=MAX_POINTS, metavar="N",
                    help="refuse specs of more than N hardware points (default 100,000; rows: at most 10 x N)")
    sw.set_defaults(func=cmd_sweep)


def add_sweep_plot(sub: options.Subparsers) -> None:
    """The sweep-plot subcommand."""
    sp = sub.add_parser("sweep-plot", help="Pareto, heatmaps and where-sparsity-pays plots of a sweep")
    sp.add_argument("results", help="a sweep's results directory")
    options.add_out(sp, "plot directory (default RESULTS/plots)")
    sp.add_argument("--x", metavar="KEY", help="grid parameter across the heatmaps (default: the second)")
    sp.add_argument("--y", metavar="KEY", help="grid parameter up the heatmaps (default: the first)")
    sp.add_argument("--at", action="append", default=[], metavar="KEY=VALUE",
                    help="hold another grid parameter at this value (default: its first; repeatable)")
    sp.set_defaults(func=cmd_sweep_plot)
