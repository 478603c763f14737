"""accelsim calibrate: the five-field fit of a tensor-core config to measured speedups, printed."""

from __future__ import annotations

import argparse

from accelsim.analysis.calibration import COARSE_GRID, DEFAULT_FRACTIONS, DEFAULT_GRID, calibrate5
from accelsim.analysis.measurements import read_measurements
from accelsim.cli import options
from accelsim.cli.common import progress_bar
from accelsim.errors import AccelsimError
from accelsim.hardware.model import load_hardware
from accelsim.report.validation_text import format_search


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Search the DRAM fraction, fit the four inner fields at each, print the table and the best values."""
    try:
        fractions = [float(x) for x in args.fractions.split(",") if x.strip()]
    except ValueError:
        raise AccelsimError(f"--fractions: expected numbers, got {args.fractions!r}") from None
    rows = read_measurements(args.measurements)
    hw = load_hardware(args.hw)
    bar, update = progress_bar(unit="fit")
    with bar:
        res = calibrate5(rows, hw, args.gpu, fractions, penalty=args.penalty, loso=args.loso,
                         grid=COARSE_GRID if args.grid == "coarse" else DEFAULT_GRID, progress=update)
    print(f"{res.rows} main-regime rows of {args.gpu}; shipped config: MAE {res.before.mae:.4f}, "
          f"objective {res.before.objective:.4f}")
    print(format_search(res))
    return 0


def add_calibrate(sub: options.Subparsers) -> None:
    """The calibrate subcommand."""
    c = sub.add_parser("calibrate", help="fit the five calibrated fields of a tensor-core config to measured 2:4 "
                                         "speedups (accelsim validate-hw CSV)")
    c.add_argument("measurements", help="measurement CSV (accelsim validate-hw format)")
    options.add_hw(c, "tensor-core hardware config (YAML)")
    c.add_argument("--gpu", required=True, help="GPU name (prefix) of the rows to fit, e.g. A100")
    c.add_argument("--fractions", default=",".join(f"{f:g}" for f in DEFAULT_FRACTIONS),
                   help="comma-separated dram.sustained_fraction candidates (default: %(default)s)")
    c.add_argument("--grid", choices=("default", "coarse"), default="default",
                   help="efficiency grid of the body tables (coarse: 5 points, 2.6x faster)")
    c.add_argument("--penalty", type=float, default=0.1, help="weight of the time-error term (default 0.1)")
    c.add_argument("--loso", action="store_true", help="also leave one source out at every fraction")
    c.set_defaults(func=cmd_calibrate)
