"""The quality registry: published dense-vs-sparse figures, one CSV per source under ``quality/data/``.

Every row is checked on load (a bad one is one line naming the file, the line and the column); the
format must parse with :mod:`accelsim.formats`; ids are unique over all files. An entry's id is
``<source_key>:<model>:<task>:<format>:<method>`` (source key = the CSV's stem, names slugged), so it
stays put when rows are added.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
import math
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError, ConfigError
from accelsim.formats import parse_format
from accelsim.records import Record

__all__ = ["COLUMNS", "DATA", "KINDS", "QualityEntry", "entry", "find_entries", "load_registry", "normalize_name",
           "read_registry", "read_source"]

DATA = Path(__file__).resolve().parent / "data"
KINDS = ("published", "derived")
# the CSV header, in this order (every file has exactly these columns)
COLUMNS = ("model", "family", "task", "metric", "higher_is_better", "dense", "sparse", "format", "method",
           "finetuned", "dtype", "source", "kind", "derivation")
_TEXT = ("model", "family", "task", "metric", "method", "dtype", "source")
_BOOLS = {"true": True, "false": False}


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at commas outside brackets and quotes, each part stripped."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch == '"' or (ch == "'" and (i == 0 or not text[i - 1].isalnum())):  # not an apostrophe (O'Brien)
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


@dataclasses.dataclass(frozen=True, kw_only=True)
class QualityEntry(Record):
    """One published (or derived) pair of figures: a model's metric dense and pruned to one format."""

    id: str
    model: str
    family: str
    task: str
    metric: str
    higher_is_better: bool
    dense: float
    sparse: float
    format: str  # accelsim spelling, e.g. "2:4", "64:2:8", "unstructured:50%"
    sparsity: float  # share of zeros the format keeps out
    method: str  # e.g. "SparseGPT", "Wanda", "magnitude + fine-tune"
    finetuned: bool  # False: one-shot (no retraining after pruning)
    dtype: str
    source: str  # paper or model card, with the table / section
    kind: str  # "published" (as printed) or "derived" (computed from published figures: see derivation)
    derivation: str  # how a derived figure was computed ("" for published ones)

    @property
    def source_key(self) -> str:
        """The source file's stem (the id's first part): entries of one source share it."""
        return self.id.split(":", 1)[0]

    @property
    def citation(self) -> str:
        """The source's short name: its first comma-separated part (``Kurtic et al. 2022``), and the next one too
        when the first names no year (``J. Cai, PyTorch tutorial '...'``: an author alone does not identify
        it), without a trailing parenthetical; commas inside brackets or quotes do not split."""
        parts = _top_level_parts(self.source)
        short = parts[0] if re.search(r"\b(19|20)\d\d\b", parts[0]) or len(parts) == 1 else f"{parts[0]}, {parts[1]}"
        return re.sub(r"\s*\([^()]*\)$", "", short) if short != parts[0] else short

    @property
    def delta(self) -> float:
        """sparse - dense, in metric units (its sign is the metric's: see :attr:`drop`)."""
        return self.sparse - self.dense

    @property
    def drop(self) -> float:
        """How much worse the sparse model is, in metric units (positive = worse, whichever way the metric runs)."""
        return (-self.delta if self.higher_is_better else self.delta) + 0.0  # + 0.0: no negative zero

    def to_dict(self) -> dict[str, Any]:
        """The fields, then ``delta`` and ``drop`` (rounded to 6 decimals: metric units)."""
        out = super().to_dict()
        out["delta"] = round(self.delta, 6) + 0.0  # + 0.0: no "-0.0" in JSON
        out["drop"] = round(self.drop, 6) + 0.0
        return out


def normalize_name(name: str) -> str:
    """A name for matching: lower case; spaces, underscores, hyphens and slashes dropped ("Llama-2 7B" == "llama2_7b",
    "ViT-B/16" == "vit-b16")."""
    return re.sub(r"[\s_\-/]+", "", str(name)).lower()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.%+]+", "-", text.lower()).strip("-")


def _row_entry(key: str, src: str, row: dict[str, str]) -> QualityEntry:
    """The entry of one CSV row; ConfigError(src, column, problem) at the first bad column."""
    vals: dict[str, Any] = {}
    for col in _TEXT:
        text = (row.get(col) or "").strip()
        if not text:
            raise ConfigError(src, col, "must not be empty")
        vals[col] = text
    for col in ("higher_is_better", "finetuned"):
        text = (row.get(col) or "").strip().lower()
        if text not in _BOOLS:
            raise ConfigError(src, col, f"expected true or false, got {row.get(col)!r}")
        vals[col] = _BOOLS[text]
    for col in ("dense", "sparse"):
        text = (row.get(col) or "").strip()
        try:
            num = float(text)
        except ValueError:
            raise ConfigError(src, col, f"expected a number, got {text!r}") from None
        if not math.isfinite(num):
            raise ConfigError(src, col, f"expected a finite number, got {text!r}")
        vals[col] = num
    text = (row.get("format") or "").strip()
    try:
        fmt = parse_format(text)
    except ValueError as exc:
        raise ConfigError(src, "format", str(exc)) from None
    if fmt is None:
        raise ConfigError(src, "format", f"{text!r} is dense; an entry compares dense with a sparse format")
    kind = (row.get("kind") or "").strip()
    if kind not in KINDS:
        raise ConfigError(src, "kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    derivation = (row.get("derivation") or "").strip()
    if kind == "derived" and not derivation:
        raise ConfigError(src, "derivation", "a derived entry says how it was derived from published figures")
    ident = ":".join([key, _slug(vals["model"]), _slug(vals["task"]), str(fmt), _slug(vals["method"])])
    return QualityEntry(id=ident, format=str(fmt), sparsity=round(1.0 - fmt.density, 6), kind=kind,
                        derivation=derivation, **vals)


def read_source(path: str | Path, text: str | None = None) -> tuple[QualityEntry, ...]:
    """The entries of one source CSV (``text``: its content, read from ``path`` when None), rows checked."""
    path = Path(path)
    name = path.name
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AccelsimError(f"{name}: cannot read the quality source ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(reader.fieldnames or ())
    if header != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        problem = (f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(extra)}" if extra
                   else "columns out of order")
        raise ConfigError(f"{name}:1", "header", f"{problem}; expected the columns {','.join(COLUMNS)}")
    out = []
    for row in reader:
        src = f"{name}:{reader.line_num}"
        if None in row or any(v is None for v in row.values()):
            raise ConfigError(src, None, f"expected {len(COLUMNS)} columns ({','.join(COLUMNS)})")
        out.append(_row_entry(path.stem, src, row))
    return tuple(out)


def read_registry(folder: str | Path = DATA) -> tuple[QualityEntry, ...]:
    """Every entry of every ``*.csv`` in ``folder`` (files by name, rows in file order); ids checked unique."""
    files = sorted(Path(folder).glob("*.csv"))
    seen: dict[str, str] = {}
    out: list[QualityEntry] = []
    for path in files:
        for i, e in enumerate(read_source(path)):
            if e.id in seen:
                raise ConfigError(path.name, "id", f"duplicate entry {e.id!r} (also in {seen[e.id]}); "
                                  "entries differ in model, task, format or method")
            seen[e.id] = f"{path.name} entry {i + 1}"
            out.append(e)
    return tuple(out)


@lru_cache(maxsize=1)
def load_registry() -> tuple[QualityEntry, ...]:
    """The shipped registry (read once per process)."""
    return read_registry(DATA)


def find_entries(model: str | None = None, format: str | None = None, task: str | None = None,
                 family: str | None = None, entries: Iterable[QualityEntry] | None = None
                 ) -> tuple[QualityEntry, ...]:
    """Entries matching every filter given: names equal after :func:`normalize_name`, formats after parsing."""
    fmt = None
    if format is not None:
        try:
            parsed = parse_format(format)
        except ValueError as exc:
            raise AccelsimError(f"quality: format: {exc}") from None
        fmt = "dense" if parsed is None else str(parsed)
    want = {k: normalize_name(v) for k, v in (("model", model), ("task", task), ("family", family)) if v is not None}
    out = []
    for e in load_registry() if entries is None else entries:
        if fmt is not None and e.format != fmt:
            continue
        if all(normalize_name(getattr(e, k)) == v for k, v in want.items()):
            out.append(e)
    return tuple(out)


def entry(ident: str, entries: Iterable[QualityEntry] | None = None) -> QualityEntry:
    """The entry with id ``ident``; AccelsimError naming it (and the closest ids) when there is none."""
    pool = tuple(load_registry() if entries is None else entries)
    for e in pool:
        if e.id == ident:
            return e
    ids = [e.id for e in pool]
    close = difflib.get_close_matches(str(ident), ids, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise AccelsimError(f"quality registry: no entry {ident!r}{hint} (`accelsim quality list` shows the "
                        f"{len(ids)} ids)")
