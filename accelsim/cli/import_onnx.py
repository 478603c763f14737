"""accelsim import-onnx: an ONNX model converted to a workload YAML (shapes only)."""

from __future__ import annotations

import argparse
import sys

from accelsim.cli import options
from accelsim.workloads.onnx_import import cmd_import_onnx as convert


def cmd_import_onnx(args: argparse.Namespace) -> int:
    """Convert; the YAML goes to stdout without -o, the summary to stderr with it."""
    code, lines = convert(args)
    stream = sys.stderr if args.out else sys.stdout
    for line in lines:
        print(line, file=stream)
    return code


def add_import_onnx(sub: options.Subparsers) -> None:
    """The import-onnx subcommand."""
    i = sub.add_parser("import-onnx", help="convert an ONNX model to a workload YAML (shapes only; weights are "
                                           "never read)")
    i.add_argument("model", help="MODEL.onnx (external weight data may be absent)")
    options.add_out(i, "workload YAML to write (default: print it)")
    options.add_set(i, "size a symbolic dimension, e.g. batch=8 (repeatable)")
    i.add_argument("--name", help="workload name (default: the file's stem)")
    options.add_dtype(i, "element type the model is deployed in (default: the graph's, e.g. fp32)")
    i.set_defaults(func=cmd_import_onnx)
