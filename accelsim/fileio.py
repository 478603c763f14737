"""Writing files in one step: a failure leaves the previous file or nothing, never half a file."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SVG_HASHSALT = "accelsim"


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename (parents created, mode 0644 by umask)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(payload)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def figure_bytes(fig: Any, fmt: str, dpi: float | None = None) -> bytes:
    """Render a matplotlib figure deterministically: no date / software metadata, a fixed SVG hash salt."""
    import matplotlib

    metadata = {"Software": None} if fmt == "png" else ({"Date": None, "Creator": None} if fmt == "svg" else None)
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "path"}):
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=metadata)
    return buf.getvalue()


def save_figure(fig: Any, base: str | os.PathLike[str], formats: Iterable[str] = ("png", "svg"),
                dpi: float | None = None) -> list[Path]:
    """Write ``<base>.<fmt>`` for each format (deterministic, atomic); return the paths."""
    base = Path(base)
    return [write_atomic(base.with_name(f"{base.name}.{fmt}"), figure_bytes(fig, fmt, dpi)) for fmt in formats]


def write_all(files: dict[str | os.PathLike[str], bytes | str]) -> list[Path]:
    """Write several files all or nothing: every temporary file first, then the renames; on a failure the
    temporaries are removed and an AccelsimError names the path (parents are created)."""
    from .errors import AccelsimError

    temps: list[tuple[Path, Path]] = []
    current: Path | None = None
    try:
        for path, data in files.items():
            current = Path(path)
            current.parent.mkdir(parents=True, exist_ok=True)
            tmp = current.with_name(f".{current.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            temps.append((tmp, current))
            with open(tmp, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        for tmp, target in temps:
            current = target
            os.replace(tmp, target)
    except OSError as exc:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise AccelsimError(f"{exc.filename or current}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    return [target for _, target in temps]
