"""Regenerate the example deployment reports under examples/reports/ (see README.md there).

Run from anywhere: ``.venv/bin/python examples/reports/generate.py``. Each report is what
``accelsim report`` writes for the command shown in README.md; this script calls that
subcommand's handler, :func:`accelsim.cli.analysis.report_command`, for each example.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from accelsim.cli.analysis import report_command

ROOT = Path(__file__).resolve().parents[2]

EXAMPLES = [
    {"out_dir": "examples/reports/bert-base-b16-a100-2to4", "hw_path": "hwconfigs/a100-like.yaml",
     "workload_path": "examples/workloads/bert-base-2to4-quality.yaml", "set_params": ["batch=16"],
     "sparsity": "2:4"},
    {"out_dir": "examples/reports/mobilenetv2-a100-2to4", "hw_path": "hwconfigs/a100-like.yaml",
     "workload_path": "workloads/mobilenetv2.yaml", "set_params": [], "sparsity": "2:4",
     "patterns": ["2:4", "1:4", "4:8"]},
]


def cli_equivalent(ex: dict) -> list[str]:
    """The ``accelsim report`` command line that writes the same report."""
    cmd = ["accelsim", "report", "--hw", ex["hw_path"], "--workload", ex["workload_path"]]
    for s in ex.get("set_params", []):
        cmd += ["--set", s]
    cmd += ["--sparsity", ex["sparsity"]]
    if ex.get("patterns"):
        cmd += ["--patterns", ",".join(ex["patterns"])]
    return cmd + ["-o", ex["out_dir"]]


def main() -> int:
    os.chdir(ROOT)  # relative paths in the reports' headers, as the documented commands give them
    for ex in EXAMPLES:
        command = (f"python examples/reports/generate.py  # equivalent to: {shlex.join(cli_equivalent(ex))}")
        paths, lines = report_command(command=command, **ex)
        print("\n".join(lines))
        for path in paths:
            print(f"wrote {path}", file=sys.stderr)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
