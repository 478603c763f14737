"""accelsim calibrate: fit the calibrated fields of one tensor-core config, or of a family of them, printed."""

from __future__ import annotations

import argparse
import math

from accelsim.analysis.calibration import COARSE_GRID, DEFAULT_FRACTIONS, DEFAULT_GRID, calibrate5
from accelsim.analysis.calibration.across_gpus import fit_family
from accelsim.analysis.measurements import read_measurements
from accelsim.cli import options
from accelsim.cli.common import progress_bar
from accelsim.cli.validate_hw import parse_hw_map, read_all
from accelsim.errors import AccelsimError
from accelsim.hardware.model import load_hardware
from accelsim.report.validation_text import format_family_fit, format_search

DEFAULT_FRACTIONS_TEXT = ",".join(f"{f:g}" for f in DEFAULT_FRACTIONS)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """One config: search the DRAM fraction and fit the inner fields. A family (--hw-map): one shared fit."""
    grid = COARSE_GRID if args.grid == "coarse" else DEFAULT_GRID
    if not math.isfinite(args.penalty) or args.penalty < 0:
        raise AccelsimError(f"--penalty: expected a finite number >= 0, got {args.penalty:g}")
    if args.hw_map:
        if args.hw or args.gpu:
            raise AccelsimError("calibrate: give either --hw-map (a family) or --hw with --gpu (one config)")
        unused = [flag for flag, given in (("--fractions", args.fractions != DEFAULT_FRACTIONS_TEXT),
                                           ("--loso", args.loso)) if given]
        if unused:  # the family fit keeps each config's DRAM fraction and has no leave-one-source-out
            raise AccelsimError(f"calibrate --hw-map: {' and '.join(unused)} apply only to one config (--hw with "
                                "--gpu); the family fit keeps each config's dram.sustained_fraction")
        hws, _ = parse_hw_map(list(args.hw_map))
        fam = fit_family(read_all(args.measurements), hws, grid=grid, penalty=args.penalty)
        print(format_family_fit(fam))
        return 0
    if not (args.hw and args.gpu):
        raise AccelsimError("calibrate: --hw and --gpu are required (or --hw-map for a family fit)")
    if len(args.measurements) != 1:
        raise AccelsimError("calibrate --hw: give one measurement CSV (several: use --hw-map)")
    try:
        fractions = [float(x) for x in args.fractions.split(",") if x.strip()]
    except ValueError:
        raise AccelsimError(f"--fractions: expected numbers, got {args.fractions!r}") from None
    if not fractions or not all(math.isfinite(f) and 0.0 < f <= 1.0 for f in fractions):
        raise AccelsimError(f"--fractions: expected numbers in (0, 1] (dram.sustained_fraction), got "
                            f"{args.fractions!r}")
    rows = read_measurements(args.measurements[0])
    hw = load_hardware(args.hw)
    bar, update = progress_bar(unit="fit")
    with bar:
        res = calibrate5(rows, hw, args.gpu, fractions, penalty=args.penalty, loso=args.loso, grid=grid,
                         progress=update)
    print(f"{res.rows} main-regime rows of {args.gpu}; shipped config: MAE {res.before.mae:.4f}, "
          f"objective {res.before.objective:.4f}")
    print(format_search(res))
    return 0


def add_calibrate(sub: options.Subparsers) -> None:
    """The calibrate subcommand."""
    c = sub.add_parser("calibrate", help="fit the calibrated fields of a tensor-core config (or of a family of "
                                         "configs, --hw-map) to measured 2:4 speedups (accelsim validate-hw CSV)")
    c.add_argument("measurements", nargs="+", help="measurement CSV(s) (accelsim validate-hw format)")
    options.add_hw(c, "tensor-core hardware config (YAML): fit this one config", required=False)
    c.add_argument("--gpu", help="with --hw: GPU name (prefix) of the rows to fit, e.g. A100")
    c.add_argument("--hw-map", action="append", metavar="GPU[@SOURCE]=CONFIG",
                   help="a family fit: the configs of one family and the rows each simulates (repeatable, as in "
                        "validate-hw); prints the shared efficiencies and fixed costs (us) and each part's cycles")
    c.add_argument("--fractions", default=DEFAULT_FRACTIONS_TEXT,
                   help="comma-separated dram.sustained_fraction candidates (default: %(default)s)")
    c.add_argument("--grid", choices=("default", "coarse"), default="default",
                   help="efficiency grid of the body tables (coarse: 5 points, 2.6x faster)")
    c.add_argument("--penalty", type=float, default=0.1, help="weight of the time-error term (default 0.1)")
    c.add_argument("--loso", action="store_true", help="also leave one source out at every fraction")
    c.set_defaults(func=cmd_calibrate)
