"""Tables of results for pandas users: dict rows (result layers, sweep rows) as a DataFrame."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from accelsim.errors import AccelsimError

if TYPE_CHECKING:
    import pandas as pd


def to_dataframe(rows: Iterable[Mapping[str, Any]] | Iterable[Sequence[Any]],
                 columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A pandas DataFrame, one row per item of ``rows``. Needs pandas (an optional dependency).

    Dict rows (result layers): nested dicts are flattened into ``parent_child`` columns (``cycles_total``,
    ``bytes_dram_b``); lists stay values. With ``columns``, rows are sequences of cells in that order, as
    a sweep's ``load_results(folder)`` returns them: ``to_dataframe(*load_results(folder))``.
    """
    try:
        import pandas as pd
    except ImportError:
        raise AccelsimError("to_dataframe needs pandas, an optional dependency: pip install pandas") from None
    if columns is not None:
        return pd.DataFrame([list(row) for row in rows], columns=list(columns))
    return pd.DataFrame([flat_row(row) for row in rows])  # type: ignore[arg-type]


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
