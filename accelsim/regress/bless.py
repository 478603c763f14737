"""Blessing: rewrite baselines ("goldens") from candidate results.

Baselines are stored as golden bodies (:func:`~accelsim.regress.loading.golden_text`: no ``meta``, keys
sorted, one layer per line), so a reviewer can read a golden diff.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelsim.fileio import write_atomic
from accelsim.regress.comparison import compare
from accelsim.regress.loading import (
    RegressInputError,
    ResultFileError,
    golden_body,
    golden_text,
    load_result,
    path_kind,
    result_files,
)
from accelsim.regress.outcome import WITHIN
from accelsim.regress.tolerances import Tolerances

ACTIONS = ("added", "changed", "removed", "unchanged")


@dataclass(frozen=True)
class BlessChange:
    """One baseline file touched (or left alone) by :func:`bless`."""

    file: str
    action: str                 # "added", "changed", "removed", "unchanged"
    moved: int | None = None    # metrics that differ from the old baseline (exact compare); None: not comparable
    note: str = ""


def _bless_one(old_path: Path, new: dict[str, Any], label: str) -> BlessChange:
    text = golden_text(golden_body(new))
    if not old_path.exists():
        write_atomic(old_path, text)
        return BlessChange(label, "added")
    try:
        old_raw = old_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        old_raw = None
    if old_raw == text:
        return BlessChange(label, "unchanged", 0)
    moved: int | None
    note = ""
    try:
        old = load_result(old_path)
        rep = compare(old, golden_body(new), Tolerances(default_rtol=0.0, default_atol=0.0))
        moved = sum(1 for r in rep.rows if r.status != WITHIN) + len(rep.one_sided)
        if moved == 0:
            note = "reformatted"
    except ResultFileError as exc:
        moved, note = None, f"old baseline replaced: {exc.problem}"
    write_atomic(old_path, text)
    return BlessChange(label, "changed", moved, note)


def bless(baseline_path: str | Path, candidate_path: str | Path) -> list[BlessChange]:
    """Rewrite the baselines from the candidate (a file, or a directory of ``*.json`` results).

    A directory baseline ends up holding exactly the candidate's files: new ones are added, stale
    ones removed. Every candidate is validated first, so an invalid candidate changes nothing.
    Returns one :class:`BlessChange` per file, changes first.
    """
    bp, cp = Path(baseline_path), Path(candidate_path)
    ck = path_kind(cp, "candidate")
    if ck == "file":
        if bp.is_dir():
            raise RegressInputError(f"candidate {cp} is a file but baseline {bp} is a directory; bless a file "
                                    "into a file or a directory into a directory")
        new = load_result(cp)
        return [_bless_one(bp, new, bp.name)]
    if bp.exists() and not bp.is_dir():
        raise RegressInputError(f"candidate {cp} is a directory but baseline {bp} is a file; bless a file into a "
                                "file or a directory into a directory")
    c_files = result_files(cp)
    if not c_files:
        raise RegressInputError(f"no result files (*.json) in candidate {cp}; refusing to empty the baselines")
    loaded = {rel: load_result(path) for rel, path in c_files.items()}  # validate all before writing any
    changes = [_bless_one(bp / rel, data, rel) for rel, data in loaded.items()]
    if bp.is_dir():
        for rel, path in result_files(bp).items():
            if rel not in c_files:
                path.unlink()
                changes.append(BlessChange(rel, "removed"))
    order = {"added": 1, "changed": 0, "removed": 2, "unchanged": 3}
    changes.sort(key=lambda ch: (order[ch.action], ch.file))
    return changes
