"""accelsim validate, schema and functional-check: configs checked, their schemas, N:M executed for real."""

from __future__ import annotations

import argparse
import sys

from accelsim.analysis.functional_check import functional_check
from accelsim.cli import options
from accelsim.cli.common import emit, output_format
from accelsim.cli.file_kinds import KINDS, provenance_text, schema_text, validate_file
from accelsim.errors import AccelsimError
from accelsim.fileio import resolve_target
from accelsim.report.functional_text import format_check

MAX_ERROR_LINES = 10


def cmd_validate(args: argparse.Namespace) -> int:
    """Check every file against the schema of its kind; exit 2 if any is bad (at most ten error lines)."""
    shown, bad = 0, []
    for path in args.files:
        try:
            print(validate_file(path))
            table = provenance_text(path) if args.provenance else None
            if table:
                print(table)
        except AccelsimError as exc:
            bad.append(path)
            lines = exc.lines()  # one file's own problems: at most ten, then "and N more"
            if shown == 0 or shown + len(lines) <= MAX_ERROR_LINES:  # later files: counted in the summary
                for line in lines:
                    print(f"accelsim: error: {line}", file=sys.stderr)
                shown += len(lines)
    if len(bad) > 1:
        print(f"accelsim: error: {len(bad)} of {len(args.files)} files have problems", file=sys.stderr)
    return 2 if bad else 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of one config kind."""
    print(schema_text(args.which))
    return 0


def cmd_functional_check(args: argparse.Namespace) -> int:
    """Prune, compress and execute one GEMM; exit 1 unless it matches numpy with N:M exercised."""
    fmt = output_format("functional-check", args.format, args.out, ("table", "json"))
    if args.out:
        resolve_target(args.out)
    result = functional_check(args.m, args.n, args.k, args.pattern, seed=args.seed, dtype=args.dtype,
                              tiling=args.hw)
    emit(format_check(result, as_json=fmt == "json") + "\n", args.out)
    if not result.exercised:  # numerically right, but the compressed format never ran: not a pass
        print(f"accelsim: functional-check NOT EXERCISED: {result.not_exercised}", file=sys.stderr)
        return 1
    return 0 if result.passed else 1


def add_functional_check(sub: options.Subparsers) -> None:
    """The functional-check subcommand."""
    f = sub.add_parser("functional-check", help="prune, compress and execute a sparse GEMM tile by tile; "
                                                 "compare with numpy")
    f.add_argument("--m", type=int, required=True)
    f.add_argument("--n", type=int, required=True)
    f.add_argument("--k", type=int, required=True)
    f.add_argument("--pattern", required=True, help="sparsity format, e.g. 2:4, channel:50%%, unstructured:90%%")
    options.add_dtype(f, default="fp16")
    options.add_seed(f)
    options.add_hw(f, "take the tiling from this hardware config (default: a 32x32 ws array)", required=False)
    options.add_format(f, ("table", "json"), "default: from -o's extension (.json; otherwise table)")
    options.add_out(f, "write the output to this file instead of stdout")
    f.set_defaults(func=cmd_functional_check)


def add_validate(sub: options.Subparsers) -> None:
    """The validate subcommand."""
    v = sub.add_parser("validate", help="check hardware configs, workloads, sweep specs, runtime configs and "
                                        "variants files (the kind is recognised from the keys)")
    v.add_argument("files", nargs="+")
    v.add_argument("--provenance", action="store_true",
                   help="hardware configs: also list every number with its kind (spec, derived, family-calibrated, "
                        "estimate), sources and derivation")
    v.set_defaults(func=cmd_validate)


def add_schema(sub: options.Subparsers) -> None:
    """The schema subcommand."""
    s = sub.add_parser("schema", help="print the JSON Schema of a config file kind")
    s.add_argument("which", choices=list(KINDS))
    s.set_defaults(func=cmd_schema)
