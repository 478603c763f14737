"""The options several subcommands share, each declared once; a subcommand adds them with these helpers.

A helper fixes the flag, its type, choices, default and metavar; the caller passes only the help text
where it says something specific to that command (``None``: no help line, as before).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn, TypeAlias

from accelsim.lowering import POLICIES
from accelsim.workloads.model import DTYPE_BYTES

DTYPES = tuple(DTYPE_BYTES)  # fp32, tf32, fp16, bf16, fp8, int8, fp6, fp4, int4

SPARSITY_PLAN = "sparsity format: 2:4, channel:50%%, unstructured:90%%, ... (default: the workload's plan)"
SPARSITY_OR_DENSE = ("sparsity format (2:4, channel:50%%, unstructured:90%%, ...) or dense "
                     "(default: the workload's plan)")


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line with exit code 2."""

    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _whole_at_least(text: str, least: int) -> int:
    """``text`` as a whole number >= ``least`` (an argparse usage error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number >= 0 (a usage error otherwise)."""
    return _whole_at_least(text, 0)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (a usage error otherwise)."""
    return _whole_at_least(text, 1)


Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"  # what add_subparsers(parser_class=Parser) returns


def add_hw(p: argparse.ArgumentParser, help: str | None = None, required: bool = True) -> None:
    """--hw: a hardware config YAML."""
    p.add_argument("--hw", required=required, help=help)


def add_workload(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--workload: a workload YAML (always required)."""
    p.add_argument("--workload", required=True, help=help)


def add_sparsity(p: argparse.ArgumentParser, help: str) -> None:
    """--sparsity: an N:M pattern or 'dense' (what it overrides is said in help)."""
    p.add_argument("--sparsity", help=help)


def add_target(p: argparse.ArgumentParser, sparsity_help: str, hw_help: str | None = None,
               workload_help: str | None = None) -> None:
    """--hw, --workload and --sparsity, in that order: what to simulate."""
    add_hw(p, hw_help)
    add_workload(p, workload_help)
    add_sparsity(p, sparsity_help)


def add_set(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--set KEY=VALUE (repeatable): a workload parameter."""
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_hw_set(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--hw-set PATH=VALUE (repeatable): one hardware field overridden."""
    p.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE", help=help)


def add_overrides(p: argparse.ArgumentParser) -> None:
    """--set then --hw-set, without help lines."""
    add_set(p)
    add_hw_set(p)


def add_policy(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--policy: how a layer chooses between its sparse and dense kernels."""
    p.add_argument("--policy", choices=list(POLICIES), default=POLICIES[0], help=help)


def add_dtype(p: argparse.ArgumentParser, help: str | None = None, default: str | None = None) -> None:
    """--dtype: an element type."""
    p.add_argument("--dtype", choices=list(DTYPES), default=default, help=help)


def add_format(p: argparse.ArgumentParser, choices: Sequence[str], help: str | None = None,
               default: str | None = None) -> None:
    """--format: the output format, one of ``choices``."""
    p.add_argument("--format", choices=list(choices), default=default, help=help)


def add_out(p: argparse.ArgumentParser, help: str, required: bool = False, metavar: str | None = None) -> None:
    """-o/--out: the file or directory written (what it is, is said in help)."""
    p.add_argument("-o", "--out", required=required, metavar=metavar, help=help)


def add_seed(p: argparse.ArgumentParser) -> None:
    """--seed: the random seed (default 0)."""
    p.add_argument("--seed", type=int, default=0)
