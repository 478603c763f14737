"""What several commands do around the library call: output format, writing, progress, loading inputs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from accelsim.config.templating import parse_sets
from accelsim.errors import AccelsimError, OutputError
from accelsim.fileio import Files, dumps_finite, refuse_input_targets, same_file, write_all, write_atomic
from accelsim.formats import normalize_format
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.workloads.model import Workload, load_workload

_EXT_FORMATS = {".json": "json", ".csv": "csv"}


def command_line() -> list[str]:
    """The command as typed, recorded in result headers."""
    return ["accelsim", *sys.argv[1:]]


def output_format(command: str, given: str | None, out: str | None, choices: tuple[str, ...]) -> str:
    """--format, else taken from -o's extension (.json, .csv; anything else: table); refuse a contradiction."""
    ext = Path(out).suffix.lower() if out else ""
    implied = _EXT_FORMATS.get(ext)
    if given is not None:
        if implied is not None and implied != given:
            raise AccelsimError(f"-o {out}: the extension says {implied} but --format is {given}; change one "
                                f"of them (without --format the extension decides)")
        return given
    fmt = implied or "table"
    if fmt not in choices:
        raise AccelsimError(f"-o {out}: {command} writes {' or '.join(choices)}, not {fmt}; use "
                            + ", ".join(f"--format {c}" for c in choices))
    return fmt


def refuse_input_as_output(out: str | None, inputs: dict[str, str | None]) -> None:
    """OutputError when ``-o`` names one of the command's input files (``{flag: path}``): writing the result
    would replace the input."""
    if not out:
        return
    for flag, path in inputs.items():
        if path is not None and same_file(out, path):
            raise OutputError(out, f"it is this command's {flag} input (the result would replace it); write "
                                   "elsewhere")


def emit(text: str, out: str | None) -> None:
    """Write ``text`` to ``out`` in one step (temp file + rename), or to stdout without -o."""
    if out:
        write_atomic(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def warn(warnings: Iterable[str]) -> None:
    """Print each warning on stderr."""
    for warning in warnings:
        print(f"accelsim: warning: {warning}", file=sys.stderr)


def require_folder(out: str | None, writes: Sequence[str] = ()) -> None:
    """OutputError, before any simulation, when ``-o`` (a folder for this command) names an existing file, or
    when one of the files the command ``writes`` there (names) is one of its inputs."""
    if out and Path(out).exists() and not Path(out).is_dir():
        raise OutputError(out, "exists and is not a folder (-o takes a directory)")
    if out:
        refuse_input_targets(Path(out) / name for name in writes)


def finish_folder_command(command: str, data: dict[str, Any], text: str, files: Files | None,
                          as_json: bool, **json_options: Any) -> int:
    """Write a folder command's ``files`` (all or none), print its table ``text`` or its ``data`` as JSON (listing
    the files written), then say on stderr which files were written."""
    written = [str(f) for f in write_all(files)] if files is not None else []
    if files is not None:
        data["files"] = written
    sys.stdout.write(dumps_finite(data, command, indent=2, **json_options) + "\n" if as_json else text)
    wrote(written)
    return 0


def wrote(paths: Iterable[object]) -> None:
    """Say on stderr which files were written."""
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)


def progress_bar(total_hint: int = 0, unit: str = "layer",
                 leave: bool = False) -> tuple[tqdm, Callable[[int, int], None]]:
    """A progress bar on stderr (shown after half a second, only on a terminal) and its update callback."""
    bar = tqdm(total=total_hint, unit=unit, delay=0.5, file=sys.stderr, leave=leave, disable=None,
               dynamic_ncols=True)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return bar, update


def load_pair(args: argparse.Namespace) -> tuple[Hardware, Workload, str | None]:
    """The hardware, workload and --sparsity of a command with --hw/--workload/--set/--hw-set/--sparsity."""
    hw = load_hardware(args.hw, getattr(args, "hw_set", []))
    model = load_workload(args.workload, parse_sets(args.set, args.workload))
    sparsity = None
    if args.sparsity is not None:
        try:
            sparsity = normalize_format(args.sparsity)
        except ValueError as exc:
            raise AccelsimError(f"--sparsity: {exc}") from None
    if getattr(args, "out", None):  # a file the inputs pulled in (extends): refused before the work
        refuse_input_targets([args.out])
    return hw, model, sparsity
