"""A sweep's results folder: the plan, chunk files written as points finish, and the assembled table.

Layout: ``spec.yaml`` (the spec as written), ``plan.json`` (how the points are cut into chunks),
``chunks/chunk-NNNNNN.ROWS.SHA.jsonl`` (one JSON list per row; the row count and a checksum in the
name, so a partial or corrupt file is recognised and redone on resume), then ``results.csv`` (and
``results.parquet`` when pyarrow is importable) and ``meta.json``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError, ConfigError
from accelsim.fileio import write_atomic
from accelsim.results import build_meta
from accelsim.sweep.columns import FORMAT_VERSION
from accelsim.sweep.spec import SweepSpec
from accelsim.textsafe import short_repr
from accelsim.version import __version__

CHUNK_RE = re.compile(r"^chunk-(\d{6})\.(\d+)\.([0-9a-f]{16})\.jsonl$")


def write_durably(path: Path, data: bytes) -> None:
    """Write ``path`` atomically and fsync it: a killed sweep leaves whole files or none."""
    write_atomic(path, data, fsync=True)


def is_chunk_file(name: str) -> bool:
    """A chunk file's name, or a writer's temporary file."""
    return CHUNK_RE.match(name) is not None or name.endswith(".tmp")


def _encode_rows(rows: list[list[Any]]) -> bytes:
    return "".join(json.dumps(r, separators=(",", ":"), allow_nan=False) + "\n" for r in rows).encode()


def write_chunk(chunks: Path, index: int, rows: list[list[Any]]) -> Path:
    """Write one chunk's rows; the file name carries the index, the row count and a checksum."""
    data = _encode_rows(rows)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = chunks / f"chunk-{index:06d}.{len(rows)}.{digest}.jsonl"
    write_durably(path, data)
    return path


def read_chunk(path: Path) -> list[list[Any]] | None:
    """Rows of a chunk file, or None when its bytes do not match the checksum and row count in its name."""
    m = CHUNK_RE.match(path.name)
    if m is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest()[:16] != m.group(3):
        return None
    try:
        rows = [json.loads(line) for line in data.decode().splitlines()]
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if len(rows) != int(m.group(2)) or not all(isinstance(r, list) for r in rows):
        return None
    return rows


def scan_chunks(chunks: Path, expected_rows: dict[int, int], n_cols: int) -> tuple[dict[int, Path], list[str]]:
    """Valid chunk files by index; anything partial, corrupt or stray is removed (and listed)."""
    valid: dict[int, Path] = {}
    removed: list[str] = []
    if not chunks.is_dir():
        return valid, removed
    for path in sorted(chunks.iterdir()):
        if not path.is_file():
            continue
        m = CHUNK_RE.match(path.name)
        ok = False
        if m is not None:
            idx = int(m.group(1))
            rows = read_chunk(path) if idx in expected_rows and idx not in valid else None
            ok = rows is not None and len(rows) == expected_rows[idx] and all(len(r) == n_cols for r in rows)
            if ok:
                valid[idx] = path
        if not ok and (m is not None or path.name.endswith(".tmp")):
            removed.append(path.name)
            path.unlink()
    return valid, removed


def make_plan(spec: SweepSpec, chunk_size: int) -> dict[str, Any]:
    """plan.json: the spec's hash and version, and how its points are cut into chunks."""
    return {"format": FORMAT_VERSION, "name": spec.name, "spec_hash": spec.spec_hash,
            "accelsim_version": __version__, "git_commit": build_meta()["git_commit"], "points": len(spec.points),
            "rows_per_point": spec.rows_per_point,
            "chunk_size": chunk_size, "chunks": math.ceil(len(spec.points) / chunk_size) if spec.points else 0,
            "columns": spec.columns}


def read_plan(path: Path) -> dict[str, Any]:
    """plan.json of a sweep folder, checked for the fields a resume needs (ConfigError naming the file)."""
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), None, f"unreadable sweep plan ({exc}); remove the folder or use another "
                          "one") from None
    if not isinstance(plan, dict):
        raise ConfigError(str(path), None, f"a sweep plan is a JSON object, got {type(plan).__name__}; remove the "
                          "folder or use another one")
    for key in ("chunk_size", "chunks"):
        v = plan.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "chunk_size" else 0):
            raise ConfigError(str(path), key, f"expected a {'positive' if key == 'chunk_size' else 'non-negative'} "
                              f"integer, got {short_repr(v, 60)}; the plan is corrupt")
    return plan


def assemble(spec: SweepSpec, out: Path, paths: list[Path]) -> tuple[list[Path], list[list[Any]]]:
    """Assemble the chunks into results.csv (and results.parquet when pyarrow is importable); return the
    files written and the rows."""
    cols = spec.columns
    rows: list[list[Any]] = []
    for p in paths:
        part = read_chunk(p)
        if part is None:
            raise AccelsimError(f"{p} changed while the sweep was finishing (checksum mismatch); run with --resume")
        rows += part
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    files = [out / "results.csv"]
    write_durably(files[0], buf.getvalue().encode())
    parquet = _write_parquet(out / "results.parquet", cols, rows)
    if parquet is not None:
        files.append(parquet)
    return files, rows


def _write_parquet(path: Path, cols: list[str], rows: list[list[Any]]) -> Path | None:
    try:
        import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    arrays = []
    for j, _ in enumerate(cols):
        values = [r[j] for r in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], type=pa.string()))
    table = pa.Table.from_arrays(arrays, names=cols)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    write_durably(path, sink.getvalue())
    return path
