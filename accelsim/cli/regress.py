"""accelsim regress: results compared with baselines (exit 0 ok, 1 drift, 2 error), or baselines blessed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accelsim.cli import options
from accelsim.errors import AccelsimError
from accelsim.fileio import write_atomic
from accelsim.regress import (
    REPORT_NAME,
    Comparison,
    RegressInputError,
    ResultFileError,
    as_tolerances,
    compare,
)
from accelsim.regress import bless as bless_files
from accelsim.report.regression import bless_summary, describe_change, format_markdown, format_table


def regress_command(baseline: str | Path, candidate: str | Path, tolerances: str | Path | None = None,
                    out_dir: str | Path | None = None, bless: bool = False) -> tuple[int, str]:
    """``accelsim regress BASELINE CANDIDATE [--tolerances tol.yaml] [-o DIR] [--bless]``.

    Returns ``(exit code, text)``. 0/1: ``text`` is the report (to stdout). 2: ``text`` is one line
    ``accelsim: error: ...`` (to stderr). With ``out_dir``, also writes ``regress.json`` and
    ``regress.md`` there. With ``bless``, compares first (the report says what the bless
    changes), then rewrites the baselines from the candidate and returns 0 with the list of changed
    files; if the baselines cannot be read, they are rewritten all the same.
    """
    try:
        tol = as_tolerances(tolerances)
        comparison: Comparison | None
        if bless:
            try:
                comparison = compare(baseline, candidate, tol)
            except ResultFileError as exc:
                if Path(exc.source) == Path(candidate) or _under(exc.source, candidate):
                    raise
                comparison = None  # an unreadable / old baseline is what blessing replaces
            except RegressInputError:
                comparison = None
        else:
            comparison = compare(baseline, candidate, tol)
        text = ""
        if comparison is not None:
            text = format_table(comparison, headline_text=f"accelsim regress --bless: what moved from baseline "
                                                          f"{baseline} to candidate {candidate}"
                                if bless else None)
        if out_dir is not None and comparison is not None:
            out = Path(out_dir)
            write_atomic(out / REPORT_NAME, comparison.to_json())
            write_atomic(out / "regress.md", format_markdown(comparison))
            text += f"wrote {out / REPORT_NAME}\nwrote {out / 'regress.md'}\n"
        if not bless:
            assert comparison is not None
            return comparison.exit_code, text
        changes = bless_files(baseline, candidate)
        touched = [c for c in changes if c.action != "unchanged"]
        lines = [f"blessed {baseline} from {candidate}: {bless_summary(changes)}",
                 *(f"  {describe_change(c)}" for c in touched)]
        return 0, (text + "\n" if text else "") + "\n".join(lines) + "\n"
    except AccelsimError as exc:
        return 2, f"accelsim: error: {exc}\n"
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return 2, f"accelsim: error: {where}{exc.strerror or exc}\n"


def _under(path: str, root: str | Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False


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
