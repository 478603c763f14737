"""Text rendering of a functional check: an aligned two-column table, or its JSON.

Takes the frozen :class:`~accelsim.analysis.functional_check.FunctionalCheck` and returns text; runs
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from accelsim.results import dumps_finite

if TYPE_CHECKING:  # types only: a renderer does not import the analysis
    from accelsim.analysis.functional_check import FunctionalCheck

__all__ = ["format_check"]


def format_check(check: FunctionalCheck, as_json: bool = False) -> str:
    """``check`` as an aligned two-column table, one line per field (or as JSON)."""
    data = check.to_dict()
    if as_json:
        return dumps_finite(data, "functional-check", indent=2, sort_keys=False)
    lines = []
    width = max(len(key) for key in data)
    for key, value in data.items():
        if isinstance(value, dict):
            text = ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
        elif isinstance(value, float):
            text = f"{value:.6g}"
        elif value is None:
            text = "-"
        else:
            text = str(value)
        if key == "passed" and not check.exercised:
            text += " (numbers only: the N:M format was NOT EXERCISED)"
        lines.append(f"{key.ljust(width)}  {text}")
    return "\n".join(lines)
