"""A finished sweep read back: the tidy table of results.csv, with the spec's facts from meta.json."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from accelsim.config.templating import evaluate
from accelsim.errors import AccelsimError
from accelsim.sweep.columns import DEFAULT_COST, TEXT_COLUMNS, cost_names

_REQUIRED = ("workload", "sparsity", "feasible", "latency_us", "origin")


@dataclass(frozen=True)
class SweepTable:
    """A sweep's rows (one per point, workload setting and pattern) and column names.

    Cells are numbers, booleans, text or None (an empty cell). ``sweep`` is meta.json's ``sweep``
    section (name, grid, set keys, cost, ...; empty when the folder has no meta.json); ``source``
    is the results.csv it was read from. Two tables are equal when their columns and rows are.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    sweep: Mapping[str, Any] = field(default_factory=dict, compare=False)
    source: str = field(default="", compare=False)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.columns)}

    def index(self, col: str) -> int:
        """Position of column ``col`` (KeyError if it is not one)."""
        return self._index[col]

    def get(self, row: Sequence[Any], col: str) -> Any:
        """The cell of ``row`` in column ``col``."""
        return row[self._index[col]]

    def column(self, col: str) -> list[Any]:
        """Every row's cell in column ``col``."""
        i = self._index[col]
        return [r[i] for r in self.rows]

    def records(self) -> list[dict[str, Any]]:
        """The rows as {column: cell} dicts."""
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def to_dataframe(self) -> Any:
        """The table as a pandas DataFrame (needs pandas; an AccelsimError says so when it is missing)."""
        try:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise AccelsimError("SweepTable.to_dataframe needs pandas, which is not installed: "
                                "pip install pandas") from None
        return pd.DataFrame.from_records(list(self.rows), columns=list(self.columns))

    @property
    def set_keys(self) -> list[str]:
        """The workload parameters the spec set (columns)."""
        return list(self.sweep.get("set") or [])

    @property
    def grid_keys(self) -> list[str]:
        """The grid's dotted hardware paths that are columns, in spec order."""
        return [k for k in (self.sweep.get("grid") or {}) if k in self._index]

    def settings(self) -> list[tuple[Any, ...]]:
        """Distinct (workload, *set params) in row order."""
        seen: dict[tuple[Any, ...], None] = {}
        for r in self.rows:
            seen.setdefault(self.setting(r), None)
        return list(seen)

    def setting(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """(workload, *set params) of one row."""
        return (self.get(row, "workload"), *(self.get(row, k) for k in self.set_keys))

    def sparsities(self) -> list[str]:
        """Distinct sparsity labels in row order."""
        seen: dict[str, None] = {}
        for r in self.rows:
            seen.setdefault(self.get(r, "sparsity"), None)
        return list(seen)

    def cost_values(self, expr: str | None = None) -> list[float | None]:
        """A cost expression over result columns (default: PEs x SRAM bytes) per row; None where a name
        it uses is empty or the result is not a finite number. Names: see :func:`.columns.cost_names`."""
        expr = expr or DEFAULT_COST
        names = cost_names(self.columns)
        used = [n for n in names if re.search(rf"\b{re.escape(n)}\b", expr)]
        out: list[float | None] = []
        for r in self.rows:
            env = {}
            for n in used:
                v = self.get(r, names[n])
                if isinstance(v, int | float) and not isinstance(v, bool):
                    env[n] = v
            try:
                val = float(evaluate(expr, env))
            except (ValueError, ZeroDivisionError, OverflowError):
                out.append(None)
                continue
            out.append(val if math.isfinite(val) else None)
        return out


def _parse_cell(col: str, text: str) -> Any:
    if text == "":
        return None
    if col in TEXT_COLUMNS:
        return text
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def load_results(results_dir: str | Path) -> SweepTable:
    """A finished sweep's table: results.csv with numbers, booleans and None restored, and meta.json's
    sweep section (both checked; an AccelsimError names the file and line)."""
    path = Path(results_dir) / "results.csv"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelsimError(f"{path} not found: is {results_dir} a finished sweep folder?") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AccelsimError(f"{path}: cannot read ({exc})") from None
    reader = csv.reader(io.StringIO(text))
    try:
        cols = next(reader)
        rows = []
        for r in reader:
            if len(r) != len(cols):
                raise AccelsimError(f"{path}: line {reader.line_num}: {len(r)} cells for {len(cols)} columns; the "
                                    "file is corrupt (rerun the sweep, or --resume it)")
            rows.append(tuple(_parse_cell(c, v) for c, v in zip(cols, r, strict=True)))
    except StopIteration:
        raise AccelsimError(f"{path} is empty") from None
    except csv.Error as exc:
        raise AccelsimError(f"{path}: line {reader.line_num}: {exc}") from None
    for need in _REQUIRED:
        if need not in cols:
            raise AccelsimError(f"{path}: no '{need}' column: not an accelsim sweep's results.csv")
    sweep = _read_meta(Path(results_dir) / "meta.json", cols)
    return SweepTable(tuple(cols), tuple(rows), MappingProxyType(sweep), str(path))


def _read_meta(meta_path: Path, cols: list[str]) -> dict[str, Any]:
    """meta.json's sweep section ({} when there is no meta.json), checked for what the table uses."""
    sweep: Any = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise AccelsimError(f"{meta_path}: unreadable sweep metadata ({exc})") from None
        sweep = meta.get("sweep", {}) if isinstance(meta, dict) else None
        grid = sweep.get("grid") if isinstance(sweep, dict) else None
        if not isinstance(sweep, dict) or not isinstance(grid or {}, dict) or \
                not all(isinstance(v, list) and v for v in (grid or {}).values()):
            raise AccelsimError(f"{meta_path}: sweep.grid: expected a mapping of parameters to value lists; the "
                                "file is corrupt (rerun the sweep)")
    for key in sweep.get("set") or []:
        if key not in cols:
            raise AccelsimError(f"{meta_path}: sweep.set names {key!r}, which is not a column of results.csv")
    return sweep
