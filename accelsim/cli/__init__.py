"""Command line: the only code that reads argv, prints and exits.

One module per group of subcommands (each adds its parsers and runs its commands), the options they
share declared once in :mod:`.options`; :func:`main` turns every failure into one line and an exit code.
"""

from __future__ import annotations

import argparse
import os
import sys

from accelsim.cli.analysis import add_plot, add_reality_check, add_report, add_trace, add_validate_hw
from accelsim.cli.calibrate import add_calibrate
from accelsim.cli.check import add_functional_check, add_schema, add_validate
from accelsim.cli.decide import add_decide
from accelsim.cli.import_onnx import add_import_onnx
from accelsim.cli.options import Parser
from accelsim.cli.patterns import add_patterns
from accelsim.cli.quality import add_quality
from accelsim.cli.regress import add_regress
from accelsim.cli.run import CSV_FIELDS, add_run, format_by_op_type, format_csv, format_table
from accelsim.cli.serve import add_serve, format_serve
from accelsim.cli.sweep import add_sweep, add_sweep_plot
from accelsim.errors import AccelsimError
from accelsim.fileio import inputs_protected
from accelsim.version import __version__

__all__ = ["CSV_FIELDS", "build_parser", "format_by_op_type", "format_csv", "format_serve", "format_table", "main"]

# in the order `accelsim --help` lists them
_SUBCOMMANDS = (add_run, add_reality_check, add_patterns, add_import_onnx, add_regress, add_report, add_sweep,
                add_sweep_plot, add_serve, add_trace, add_plot, add_validate_hw, add_calibrate, add_functional_check,
                add_validate, add_schema, add_quality, add_decide)


def build_parser() -> argparse.ArgumentParser:
    """The `accelsim` parser with every subcommand."""
    p = Parser(prog="accelsim", description="Cycle-approximate accelerator simulator for dense and N:M sparse "
                                            "workloads.")
    p.add_argument("--version", action="version", version=f"accelsim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in _SUBCOMMANDS:
        add(sub)
    return p


def _input_files(args: argparse.Namespace) -> list[str]:
    """Every existing file an argument other than ``-o`` names (``GPU=CONFIG`` items by their path): what no output
    may replace."""
    found = []
    for key, value in vars(args).items():
        if key == "out":  # the output itself (an existing file it replaces, by design)
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str | os.PathLike):
                continue
            for candidate in (str(item), str(item).rpartition("=")[2]):
                if candidate and os.path.isfile(candidate):
                    found.append(candidate)
    return found


def main(argv: list[str] | None = None) -> int:
    """Run `accelsim ARGV`; return the exit code (argparse exits 2 itself on a usage error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with inputs_protected(_input_files(args)):
            return int(args.func(args) or 0)
    except AccelsimError as exc:
        for line in exc.lines():  # one per problem, control characters escaped
            print(f"accelsim: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # last resort: writers raise OutputError, but no I/O failure may end in a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"accelsim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
