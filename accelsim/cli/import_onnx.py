"""accelsim import-onnx: an ONNX model converted to a workload YAML (shapes only)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from accelsim.cli import options
from accelsim.cli.common import refuse_input_as_output
from accelsim.config.templating import parse_sets
from accelsim.fileio import write_atomic
from accelsim.textsafe import printable
from accelsim.workloads.onnx import import_onnx, workload_yaml


def cmd_import_onnx(args: argparse.Namespace) -> int:
    """Convert; the YAML goes to stdout without -o, the summary and notes to stderr with it."""
    refuse_input_as_output(args.out, {"MODEL": args.model})
    imported = import_onnx(args.model, parse_sets(list(args.set or [])), args.dtype, name=args.name)
    data = imported.workload
    text = workload_yaml(data, imported.notes, str(args.model))
    if not args.out:
        sys.stdout.write(text)
        return 0
    write_atomic(args.out, text)
    ops = Counter(layer["op"] for layer in data["layers"])
    summary = ", ".join(f"{v} {k}" for k, v in sorted(ops.items()))
    print(f"wrote {printable(args.out)}: workload {data['name']!r}, {len(data['layers'])} layers ({summary})",
          file=sys.stderr)
    for note in imported.notes:
        print(f"note: {printable(note)}", file=sys.stderr)
    return 0


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
