"""Frozen result records: what an analysis returns, typed and read-only, and plain data again on demand.

A :class:`Record` is a frozen, keyword-only dataclass. :meth:`Record.to_dict` turns it (and every
record, mapping and sequence inside it) into plain dicts and lists in field order, which is the
JSON the commands write. Fields declared with :data:`OMIT_IF_NONE` metadata are left out of that
dict when they are None (keys that only some entries carry). :func:`freeze` makes the plain data
an analysis keeps as it is (a hardware dict, counts by reason) read-only: dicts become read-only
mappings and lists tuples. Arrays (read-only, by convention) become lists in ``to_dict``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["OMIT_IF_NONE", "Record", "copy_tree", "freeze", "json_form", "plain", "rounded"]

OMIT_IF_NONE: Mapping[str, bool] = MappingProxyType({"omit_if_none": True})


def freeze(value: Any) -> Any:
    """A deep read-only view of plain data: dicts become read-only mappings, lists tuples."""
    if isinstance(value, Record):
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """Plain data again: records as dicts, mappings as dicts, tuples, lists and arrays as lists."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """Base of the analyses' result records (frozen, keyword-only dataclasses)."""

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data, fields in declaration order (None fields marked OMIT_IF_NONE left out)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_if_none"):
                continue
            out[f.name] = plain(value)
        return out


def json_form(obj: Any) -> Any:
    """``obj`` as its JSON reads back (tuples become lists): what result equality compares."""
    return json.loads(json.dumps(obj))


def copy_tree(obj: Any) -> Any:
    """A copy of JSON-like ``obj`` (dicts and lists copied, everything else shared): a result's own dicts,
    several times faster than ``copy.deepcopy`` on the small trees a layer holds."""
    if isinstance(obj, dict):
        return {k: copy_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_tree(v) for v in obj]
    return obj


def rounded(e: dict[str, Any], digits: int = 12) -> dict[str, Any]:
    """Round floats for stable JSON."""
    out: dict[str, Any] = {}
    for k, v in e.items():
        out[k] = rounded(v, digits) if isinstance(v, dict) else float(f"{v:.{digits}g}") if isinstance(v, float) else v
    return out
