"""accelsim regress: results compared with baselines (exit 0 ok, 1 drift, 2 error)."""

from __future__ import annotations

import argparse
import sys

from accelsim.cli import options
from accelsim.regress.compare import regress_command


def cmd_regress(args: argparse.Namespace) -> int:
    """Compare (or bless) and print the verdict; errors go to stderr."""
    code, text = regress_command(args.baseline, args.candidate, args.tolerances, args.out, bless=args.bless)
    (sys.stderr if code == 2 else sys.stdout).write(text if text.endswith("\n") else text + "\n")
    return code


def add_regress(sub: options.Subparsers) -> None:
    """The regress subcommand."""
    g = sub.add_parser("regress", help="compare results (files or directories) with baselines: exit 0 ok, "
                                       "1 drift, 2 error")
    g.add_argument("baseline")
    g.add_argument("candidate")
    g.add_argument("--tolerances", metavar="YAML", help="default_rtol/default_atol, per-metric overrides, ignore")
    options.add_out(g, "write regress.json and regress.md (a PR-ready diff) here", metavar="DIR")
    g.add_argument("--bless", action="store_true", help="rewrite BASELINE from CANDIDATE (bodies only)")
    g.set_defaults(func=cmd_regress)
