"""Tables of results for pandas users: dict rows (result layers, sweep rows) as a DataFrame."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from accelsim.errors import AccelsimError

if TYPE_CHECKING:
    import pandas as pd


def to_dataframe(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A pandas DataFrame of dict rows, one row each, nested dicts flattened into ``parent_child``
    columns (``cycles_total``, ``bytes_dram_b``); lists stay values. Needs pandas (optional)."""
    try:
        import pandas as pd
    except ImportError:
        raise AccelsimError("to_dataframe needs pandas, an optional dependency: pip install pandas") from None
    return pd.DataFrame([flat_row(row) for row in rows])


def flat_row(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``row`` with nested mappings flattened: ``{"a": {"b": 1}}`` -> ``{"a_b": 1}``."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_row(value, f"{name}_"))
        else:
            out[name] = value
    return out
