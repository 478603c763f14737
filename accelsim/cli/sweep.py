"""accelsim sweep and sweep-plot: a design-space sweep and its plots."""

from __future__ import annotations

import argparse

from accelsim.cli import options
from accelsim.cli.common import command_line, progress_bar, warn, wrote
from accelsim.sweep.execute import sweep_command, sweep_plot_command


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run (or resume) a sweep and summarise it in one line."""
    bar, progress = progress_bar(unit="config", leave=True)
    try:
        summary = sweep_command(args.spec, args.out, dask=args.dask, resume=args.resume, workers=args.workers,
                                progress=progress, command=command_line(), max_points=args.max_points)
    finally:
        bar.close()
    warn(summary.get("warnings", []))
    print(f"sweep: {summary.get('points', '?')} configs, {summary.get('rows', '?')} rows "
          f"({summary.get('infeasible_rows', 0)} infeasible) in {summary.get('wall_s', 0):.1f} s "
          f"({summary.get('configs_per_s', 0):,.0f} configs/s)")
    wrote(summary.get("files", []))
    return 0


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
    sw.add_argument("--workers", type=int, help="local processes (default: all cores)")
    sw.add_argument("--resume", action="store_true", help="continue a killed sweep in the same directory")
    sw.add_argument("--max-points", type=int, default=100_000, metavar="N",
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
