"""Writing files in one step: a failure leaves the previous file or nothing, never half a file.

Every writer here follows the same rules:

- a symlink is written through: the new file replaces the link's target (the temporary file is
  created beside the target, so the rename stays on one file system) and the link is kept;
- an existing folder, character or block device, FIFO or socket is never replaced: OutputError;
- missing parent folders are created;
- new files get mode ``0o666 & ~umask`` (0644 under the usual umask), like any file a shell creates;
- any OSError (permission denied, read-only file system, disk full, name too long) becomes one
  OutputError line ``PATH: cannot write: <reason>``, and temporary files are removed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from accelsim.errors import AccelsimError, OutputError

SVG_HASHSALT = "accelsim"
_TMP_NAME_MAX = 200  # a temporary name stays below NAME_MAX (255) even for the longest target name

__all__ = ["OutputError", "atomic_open", "dumps_finite", "figure_bytes", "resolve_target", "save_figure", "write_all",
           "write_atomic"]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _special_kind(mode: int) -> str | None:
    for test, name in ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return None


def resolve_target(path: str | os.PathLike[str]) -> Path:
    """The regular file a write to ``path`` replaces: symlinks followed; OutputError for anything else."""
    given = Path(path)
    target = Path(os.path.realpath(given))  # through symlinks, to the file that will be replaced
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise OutputError(str(given), _reason(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(str(given), "is a directory (give a file name)")
    kind = _special_kind(st.st_mode)
    if kind is not None:
        raise OutputError(str(given), f"is a {kind}, not a regular file (refusing to replace it)")
    return target


def _make_parent(given: Path, target: Path) -> None:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        where = exc.filename or parent
        raise OutputError(str(given), f"{where} exists and is not a folder") from None
    except OSError as exc:
        raise OutputError(str(given), f"cannot create folder {exc.filename or parent}: {_reason(exc)}") from None


def _tmp_path(target: Path) -> Path:
    return target.with_name(f".{target.name[:_TMP_NAME_MAX]}.{os.getpid()}.{threading.get_ident()}.tmp")


def _open_tmp(tmp: Path) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    return os.open(tmp, flags, 0o666)  # the umask applies, as for any new file


def _write_tmp(tmp: Path, payload: bytes, fsync: bool) -> None:
    fd = _open_tmp(tmp)
    with open(fd, "wb", closefd=True) as fh:
        fh.write(payload)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename; return ``path`` as given.

    Follows symlinks, refuses folders and special files, creates parent folders; every failure is
    an OutputError and leaves the previous file untouched.
    """
    return write_all({path: data}, fsync=fsync)[0]


# what write_all takes: paths (str, Path or both: Mapping is invariant in its key) to contents
Files = Mapping[str, bytes | str] | Mapping[Path, bytes | str] | Mapping[str | os.PathLike[str], bytes | str]


# The files a command reads (set by the CLI for one command): no output may replace one of them
_INPUTS: ContextVar[tuple[Path, ...]] = ContextVar("accelsim_command_inputs", default=())


# The files the command has read since (configs pulled in through ``extends``, a variants file's workloads, a
# sweep's hardware ...): protected like _INPUTS; None outside :func:`inputs_protected`
_READ: ContextVar[list[Path] | None] = ContextVar("accelsim_files_read", default=None)


@contextlib.contextmanager
def inputs_protected(paths: Iterable[str | os.PathLike[str]]) -> Iterator[None]:
    """Within the block, :func:`write_all` refuses a target that is one of ``paths`` (the command's inputs) or a
    file read in the block (:func:`note_read`: every config file, the ones an input pulls in included)."""
    token = _INPUTS.set(tuple(Path(p) for p in paths))
    read_token = _READ.set([])
    try:
        yield
    finally:
        _READ.reset(read_token)
        _INPUTS.reset(token)


def note_read(path: str | os.PathLike[str]) -> None:
    """Record that the command read ``path`` (inside :func:`inputs_protected`; else nothing): no output of the
    command may replace it."""
    read = _READ.get()
    if read is not None and Path(path) not in read:
        read.append(Path(path))


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one existing file (links followed); False when either is missing or unreadable."""
    try:
        return Path(a).exists() and Path(b).exists() and Path(a).samefile(b)
    except OSError:
        return False


def refuse_input_targets(paths: Iterable[str | os.PathLike[str]]) -> None:
    """OutputError when one of ``paths`` (files a command is about to write) is one of its inputs
    (:func:`inputs_protected`): said before the work, not after it."""
    for p in paths:
        _refuse_an_input(Path(p), Path(p))


def _refuse_an_input(given: Path, target: Path) -> None:
    for path in _INPUTS.get():
        if same_file(target, path):
            raise OutputError(str(given), f"it is this command's input {path} (the result would replace it); "
                                          "write elsewhere")
    for path in _READ.get() or ():
        if same_file(target, path):
            raise OutputError(str(given), f"it is a file this command reads ({path}, pulled in by one of its "
                                          "inputs; the result would replace it); write elsewhere")


def write_all(files: Files, *, fsync: bool = False) -> list[Path]:
    """Write several files all-or-nothing; return their paths as given, in order.

    Every target is checked and every temporary file written first; only then are they renamed into
    place. A failure before the renames removes all temporary files and leaves every previous file
    untouched (OutputError). Renames within a folder do not fail in practice; if one does, the
    remaining temporary files are removed and OutputError names the file.
    """
    plan: list[tuple[Path, Path, bytes]] = []
    seen: set[Path] = set()
    for path, data in files.items():
        given = Path(path)
        target = resolve_target(given)
        if target in seen:
            raise ValueError(f"write_all: {given} is given twice")
        seen.add(target)
        _refuse_an_input(given, target)
        plan.append((given, target, data.encode("utf-8") if isinstance(data, str) else data))
    for given, target, _ in plan:
        _make_parent(given, target)
    pending: list[Path] = []  # temporary files not yet renamed into place
    current = plan[0][0] if plan else Path()
    with _temporaries_removed_on_failure(pending, lambda: current):
        for given, target, payload in plan:
            current = given
            pending.append(_tmp_path(target))
            _write_tmp(pending[-1], payload, fsync)
        for given, target, _ in plan:
            current = given
            os.replace(pending[0], target)
            pending.pop(0)
    return [given for given, _, _ in plan]


@contextlib.contextmanager
def _temporaries_removed_on_failure(temps: list[Path], naming: Callable[[], Path]) -> Iterator[None]:
    """On any failure remove ``temps`` (as they are then); an OSError becomes an OutputError naming ``naming()``."""
    try:
        yield
    except OSError as exc:
        for tmp in temps:
            _unlink_quietly(tmp)
        raise OutputError(str(naming()), _reason(exc)) from None
    except BaseException:
        for tmp in temps:
            _unlink_quietly(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], *, encoding: str = "utf-8",
                newline: str | None = "\n") -> Iterator[IO[str]]:
    """Stream text into ``path``: yields a file on a temporary name, renamed into place on success.

    For outputs too large to build in memory first. The same rules as :func:`write_atomic`; an
    OSError raised inside the block is taken as a write failure (OutputError); any other
    exception removes the temporary file and propagates.
    """
    given = Path(path)
    target = resolve_target(given)
    _refuse_an_input(given, target)
    _make_parent(given, target)
    tmp = _tmp_path(target)
    with _temporaries_removed_on_failure([tmp], lambda: given):
        fh = open(_open_tmp(tmp), "w", encoding=encoding, newline=newline, closefd=True)  # noqa: SIM115
        with fh:
            yield fh
        os.replace(tmp, target)


def figure_bytes(fig: Any, fmt: str, dpi: float | None = None) -> bytes:
    """Render a matplotlib figure deterministically: no date / software metadata, a fixed SVG hash salt."""
    import matplotlib

    metadata = {"Software": None} if fmt == "png" else ({"Date": None, "Creator": None} if fmt == "svg" else None)
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "path"}):
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=metadata)
    return buf.getvalue()


def figure_files(fig: Any, base: str | os.PathLike[str], formats: Iterable[str] = ("png", "svg"),
                 dpi: float | None = None) -> dict[Path, bytes]:
    """``{<base>.<fmt>: rendered bytes}`` for each format, ready for :func:`write_all`."""
    base = Path(base)
    return {base.with_name(f"{base.name}.{fmt}"): figure_bytes(fig, fmt, dpi) for fmt in formats}


def save_figure(fig: Any, base: str | os.PathLike[str], formats: Iterable[str] = ("png", "svg"),
                dpi: float | None = None) -> list[Path]:
    """Write ``<base>.<fmt>`` for each format (deterministic, all-or-nothing); return the paths."""
    return write_all(figure_files(fig, base, formats, dpi))


# -- JSON that never holds NaN / Infinity (moved here from results.py: every writer of results uses it) --

def dumps_finite(obj: Any, what: str, **kwargs: Any) -> str:
    """``json.dumps`` that never writes NaN / Infinity: a non-finite number raises an AccelsimError
    naming where it is (it would mean a bug upstream, or a config value that escaped validation)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        path, value = _non_finite(obj)
        raise AccelsimError(f"{what}: {path} is {value}, not a finite number; refusing to write it "
                            "(this is a bug in accelsim: please report it with the command line)") from None


def _non_finite(obj: Any) -> tuple[str, float]:
    """(path, value) of the first NaN / infinity in JSON-like ``obj`` (depth first)."""
    stack: list[tuple[str, Any]] = [("(top level)", obj)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return path, node
        if isinstance(node, dict):
            stack.extend(reversed([(f"{path}.{k}" if path != "(top level)" else str(k), v) for k, v in node.items()]))
        elif isinstance(node, list | tuple):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(node)]))
    return "(somewhere)", math.nan
