"""accelsim patterns: which sparsity format pays, at equal sparsity, on one hardware config."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from accelsim.analysis.patterns import compare_patterns, parse_levels
from accelsim.cli import options
from accelsim.cli.common import progress_bar, require_folder, wrote
from accelsim.config.templating import parse_sets
from accelsim.fileio import write_all
from accelsim.hardware.model import load_hardware
from accelsim.report.patterns_chart import chart_files, patterns_table, render_patterns
from accelsim.results import dumps_finite
from accelsim.workloads.model import load_workload


def cmd_patterns(args: argparse.Namespace) -> int:
    """Every registered format at every level: a table; with -o, patterns.json and the chart."""
    levels = parse_levels(args.levels)
    require_folder(args.out)
    hw = load_hardware(args.hw, args.hw_set)
    model = load_workload(args.workload, parse_sets(args.set, args.workload))
    bar, update = progress_bar(unit="run")
    with bar:
        data = compare_patterns(model, hw, levels, hw_source=args.hw, hw_set=args.hw_set or (), progress=update)
    written: list[Path] = []
    if args.out:  # written before the table is printed: a refused output prints nothing but its error
        out = Path(args.out)
        files: dict[str | os.PathLike[str], bytes | str] = {p: b for p, b in chart_files(render_patterns(data),
                                                                                          out).items()}
        files[out / "patterns.json"] = dumps_finite(data.to_dict(), "patterns", indent=2) + "\n"
        written = write_all(files)  # all three or none
    print(patterns_table(data))
    wrote(written)
    return 0


def add_patterns(sub: options.Subparsers) -> None:
    """The patterns subcommand."""
    p = sub.add_parser("patterns", help="which sparsity format pays at equal sparsity: every format the registry "
                                        "knows, at each level, with speedup, footprint, metadata and fallbacks")
    options.add_hw(p)
    options.add_workload(p)
    p.add_argument("--levels", default="50%,75%,90%", help="sparsity levels (share of zeros), e.g. 50%%,75%%,90%% "
                                                           "(default: %(default)s)")
    options.add_overrides(p)
    options.add_out(p, "directory for patterns.json and patterns.png/.svg")
    p.set_defaults(func=cmd_patterns)
