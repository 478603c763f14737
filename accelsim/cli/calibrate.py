"""python -m accelsim.analysis.calibration: the five-field fit of a tensor-core config to measured speedups, printed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from accelsim.analysis.calibration import COARSE_GRID, DEFAULT_FRACTIONS, DEFAULT_GRID, calibrate5, format_search
from accelsim.analysis.gpu_validation import read_measurements
from accelsim.cli import options
from accelsim.cli.common import progress_bar
from accelsim.errors import AccelsimError
from accelsim.hardware.model import load_hardware


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m accelsim.analysis.calibration CSV --hw CONFIG --gpu NAME``: the five-field fit, printed."""
    ap = argparse.ArgumentParser(prog="python -m accelsim.analysis.calibration", description=main.__doc__)
    ap.add_argument("measurements", help="measurement CSV (accelsim validate-hw format)")
    options.add_hw(ap, "tensor-core hardware config (YAML)")
    ap.add_argument("--gpu", required=True, help="GPU name (prefix) of the rows to fit, e.g. A100")
    ap.add_argument("--fractions", default=",".join(f"{f:g}" for f in DEFAULT_FRACTIONS),
                    help="comma-separated dram.sustained_fraction candidates (default: %(default)s)")
    ap.add_argument("--grid", choices=("default", "coarse"), default="default",
                    help="efficiency grid of the body tables (coarse: 5 points, 2.6x faster)")
    ap.add_argument("--penalty", type=float, default=0.1, help="weight of the time-error term (default 0.1)")
    ap.add_argument("--loso", action="store_true", help="also leave one source out at every fraction")
    args = ap.parse_args(argv)
    try:
        fractions = [float(x) for x in args.fractions.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--fractions: expected numbers, got {args.fractions!r}")
    try:
        rows = read_measurements(args.measurements)
        hw = load_hardware(args.hw)
        bar, update = progress_bar(unit="fit")
        with bar:
            res = calibrate5(rows, hw, args.gpu, fractions, penalty=args.penalty, loso=args.loso,
                             grid=COARSE_GRID if args.grid == "coarse" else DEFAULT_GRID, progress=update)
    except AccelsimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{res['rows']} main-regime rows of {args.gpu}; shipped config: MAE {res['before']['mae']:.4f}, "
          f"objective {res['before']['objective']:.4f}")
    print(format_search(res))
    return 0
