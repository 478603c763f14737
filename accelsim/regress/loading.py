"""Reading result files for comparison: validation, schema migrations, golden bodies and their canonical text.

A result is the JSON of ``accelsim run --format json`` (with ``meta``) or a golden *body* (the same without
``meta``). Every problem with a file is one :class:`ResultFileError` line naming the file.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.regress.flatten import list_key
from accelsim.result_checks import layer_problem, totals_problem
from accelsim.results import SCHEMA_VERSION

REPORT_NAME = "regress.json"  # the comparison written by ``accelsim regress -o``: never read as a result

# Migrations of result bodies between schema versions: MIGRATIONS[v] turns a version-v body into a
# version-(v + 1) body (a pure function on the dict, which it may modify and must return with
# "schema_version" set to v + 1). Only version 1 exists, so there are none yet. When SCHEMA_VERSION
# becomes 2, register MIGRATIONS[1] here (renamed/moved fields), or leave it out to refuse v1 files.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class ResultFileError(AccelsimError):
    """A result or baseline file cannot be used: unreadable, not JSON, or not an accelsim result."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class SchemaVersionError(ResultFileError):
    """A result's schema_version is newer than this accelsim's, or older without a migration."""


class RegressInputError(AccelsimError):
    """The two sides cannot be compared or blessed (e.g. a file against a directory)."""


def migrate(data: dict[str, Any], source: str = "<result>") -> dict[str, Any]:
    """Bring a result of an older schema_version up to :data:`SCHEMA_VERSION`, or refuse it."""
    version = data["schema_version"]
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(source, f"schema_version {version} is newer than this accelsim's "
                                         f"{SCHEMA_VERSION}; upgrade accelsim to compare it")
    if version < SCHEMA_VERSION:
        data = copy.deepcopy(data)  # migrations edit in place; leave the caller's dict alone
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SchemaVersionError(source, f"schema_version {version} is older than this accelsim's "
                                             f"{SCHEMA_VERSION} and has no migration; re-run the simulation "
                                             "or bless new baselines")
        data = step(data)
        if data.get("schema_version") != version + 1:  # pragma: no cover - a migration bug
            raise SchemaVersionError(source, f"migration from schema_version {version} did not produce "
                                             f"version {version + 1}")
        version += 1
    return data


def check_result(data: Any, source: str) -> dict[str, Any]:
    """The decoded JSON is an accelsim result (or golden body): return it migrated, else raise one clear line."""
    hint = "expected the output of 'accelsim run --format json' or a golden body"
    if not isinstance(data, dict):
        raise ResultFileError(source, f"not an accelsim result (top level is a JSON {_json_type(data)}); {hint}")
    version = data.get("schema_version")
    if version is None or "layers" not in data:
        missing = " and ".join(k for k in ("schema_version", "layers") if k not in data)
        raise ResultFileError(source, f"not an accelsim result (no {missing}); {hint}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ResultFileError(source, f"not an accelsim result (schema_version {version!r} is not a "
                                      "non-negative integer)")
    try:
        bad = _non_finite(data)
    except RecursionError:  # pragma: no cover - pathological nesting
        raise ResultFileError(source, "not an accelsim result (nested too deeply)") from None
    if bad is not None:
        path, value = bad
        raise ResultFileError(source, f"{path}: non-finite number {_json_text(value)}; accelsim results hold finite "
                                      "numbers only (a hand-edited or corrupted file?)")
    data = migrate(data, source)
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise ResultFileError(source, f"not an accelsim result ('layers' is a JSON {_json_type(layers)}, "
                                      "expected a list)")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict) or not isinstance(layer.get("name"), str):
            raise ResultFileError(source, f"not an accelsim result (layers[{i}] has no 'name')")
        wrong = layer_problem(layer, complete=False)  # a count written as text would compare as "changed"
        if wrong is not None:
            raise ResultFileError(source, f"layers[{layer['name']}].{wrong[0]} {wrong[1]}; not an "
                                          "accelsim result (a hand-edited or corrupted file?)")
    totals = data.get("totals")
    wrong = totals_problem(totals) if isinstance(totals, dict) else None
    if wrong is not None:
        raise ResultFileError(source, f"totals.{wrong[0]} {wrong[1]}; not an accelsim result (a hand-edited or "
                                      "corrupted file?)")
    return data


def _non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """The key path and value of the first NaN or infinity in a decoded JSON value, else None.

    Python's json module reads ``NaN``, ``Infinity`` and overflowing literals such as ``1e999``; a
    baseline holding one would pass any candidate (every comparison with NaN or inf is False), so
    results must be finite. Paths label layers by name, like the report's rows.
    """
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "(top level)", value)
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(value, list):
        label = list_key(value)
        for i, v in enumerate(value):
            found = _non_finite(v, f"{path}[{label(i, v) if label else i}]")
            if found:
                return found
    return None


def _json_text(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result JSON (``accelsim run --format json``, with ``meta``) or a golden body (without).

    Returns the decoded dict, migrated to the current schema. Raises :class:`ResultFileError` (or its
    subclass :class:`SchemaVersionError`) with one line naming the file and the problem.
    """
    src = str(path)
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ResultFileError(src, "no such file") from None
    except IsADirectoryError:
        raise ResultFileError(src, "is a directory, expected a result JSON file") from None
    except OSError as exc:
        raise ResultFileError(src, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(src, "not JSON (not UTF-8 text)") from None
    if not text.strip():
        raise ResultFileError(src, "not JSON (the file is empty)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        tail = text.rstrip()
        hint = " (truncated?)" if exc.pos >= len(tail) - 64 or not tail.endswith(("}", "]")) else ""
        raise ResultFileError(src, f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}{hint}") from None
    except RecursionError:  # pragma: no cover - pathological nesting
        raise ResultFileError(src, "not JSON (nested too deeply)") from None
    return check_result(data, src)


def golden_body(result: Any) -> dict[str, Any]:
    """The body to store as a golden: the result without ``meta``.

    ``result`` is a :class:`~accelsim.results.RunResult` or a result dict (as loaded from JSON).
    ``RunResult.body()`` holds nothing machine-specific (no paths, versions, commits or times: those
    live in ``meta``), so this is the body itself.
    """
    if hasattr(result, "body") and callable(result.body):
        body: dict[str, Any] = result.body()
        return body
    if not isinstance(result, dict):
        raise TypeError(f"golden_body() takes a RunResult or a result dict, not {type(result).__name__}")
    return {k: v for k, v in result.items() if k != "meta"}


def golden_text(body: dict[str, Any]) -> str:
    """Canonical text of a golden body: valid JSON, keys sorted, one top-level key per line and one
    layer / op-type group per line, so a golden diff shows exactly which layer moved."""
    def one(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"]
    keys = sorted(body)
    for i, key in enumerate(keys):
        value = body[key]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"  {json.dumps(key)}: [")
            lines.extend(f"    {one(v)}{',' if j < len(value) - 1 else ''}" for j, v in enumerate(value))
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def result_files(root: Path) -> dict[str, Path]:
    """``*.json`` under ``root`` by relative POSIX path (hidden files and folders skipped, and
    ``regress.json``: this command's own report, in case ``-o`` pointed into a result directory)."""
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*.json")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or p.name == REPORT_NAME or not p.is_file():
            continue
        out[rel.as_posix()] = p
    return out


def path_kind(path: Path, role: str) -> str:
    """``"dir"`` or ``"file"``; a missing path is a :class:`ResultFileError` naming its ``role``."""
    if path.is_dir():
        return "dir"
    if path.exists():
        return "file"
    raise ResultFileError(str(path), f"no such file or directory ({role})")
