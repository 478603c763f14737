"""Frozen result records: what an analysis returns, typed and read-only, and plain data again on demand.

A :class:`Record` is a frozen, keyword-only dataclass. :meth:`Record.to_dict` turns it (and every
record, mapping and sequence inside it) into plain dicts and lists in field order, which is the
JSON the commands write. Fields declared with :data:`OMIT_IF_NONE` metadata are left out of that
dict when they are None (keys that only some entries carry). :func:`freeze` makes the plain data
an analysis keeps as it is (a hardware dict, counts by reason) read-only: dicts become read-only
mappings and lists tuples. Arrays (read-only, by convention) become lists in ``to_dict``.

:class:`FrozenDict`, :class:`FrozenList` and :func:`frozen_tree` freeze the JSON-like trees a simulation
result holds: a read-only dict and list (so ``json.dumps`` writes them byte for byte as they were, and they
compare equal to plain ones) whose copies are plain.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["OMIT_IF_NONE", "FrozenDict", "FrozenList", "Record", "freeze", "frozen_tree", "hashable", "json_form",
           "key_function", "plain", "rounded", "thawed"]

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


class FrozenDict(dict):  # type: ignore[type-arg]
    """A read-only dict: every method that would change it raises TypeError. It is still a ``dict`` (``json``
    writes it as one, byte for byte); ``copy()``, ``copy.copy`` and ``copy.deepcopy`` give plain, mutable dicts
    (the deep copy with its nested values thawed too). Build one with :func:`frozen_tree`, which freezes the
    values as well."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this mapping is read-only (part of a frozen result): copy it first "
                        "(dict(m), or copy.deepcopy for a nested one)")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return thawed(self)

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (worker processes) as a FrozenDict again
        return (FrozenDict, (dict(self),))


class FrozenList(list):  # type: ignore[type-arg]
    """A read-only list, as :class:`FrozenDict` is a read-only dict: still a ``list`` (equal to one with the same
    items, written by ``json`` as one), every method that would change it raises TypeError, copies are plain."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this list is read-only (part of a frozen result): copy it first (list(x))")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = remove = pop = clear = sort = \
        reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thawed(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def frozen_tree(value: Any) -> Any:
    """JSON-like ``value`` frozen all the way down: dicts (and other mappings) become :class:`FrozenDict`, lists
    :class:`FrozenList`, tuples tuples of frozen items; a FrozenDict or FrozenList is taken as already frozen."""
    kind = type(value)
    if kind in _LEAVES or kind is FrozenDict or kind is FrozenList:
        return value
    if kind is dict or isinstance(value, Mapping):
        return FrozenDict({k: v if type(v) in _LEAVES else frozen_tree(v) for k, v in value.items()})
    if kind is list:
        return FrozenList([frozen_tree(v) for v in value])
    if kind is tuple:
        return tuple([frozen_tree(v) for v in value])
    return value


_LEAVES = frozenset({str, int, float, bool, type(None)})  # what frozen_tree returns as it is, checked first (speed)


def thawed(value: Any) -> Any:
    """Plain, mutable data again from a :func:`frozen_tree`: mappings as dicts, lists and tuples as lists."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thawed(v) for v in value]
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


def rounded(e: Mapping[str, Any], digits: int = 12) -> dict[str, Any]:
    """Round floats for stable JSON."""
    out: dict[str, Any] = {}
    for k, v in e.items():
        out[k] = rounded(v, digits) if isinstance(v, dict) else float(f"{v:.{digits}g}") if isinstance(v, float) else v
    return out


def key_function(cls: type, labels: frozenset[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A hashable key of an instance of dataclass ``cls``: its field values but ``labels``', in field order, each dict
    or list (by its annotation) as :func:`hashable` makes it. One C call reads the fields (a generator over them
    cost a run a seventh of its time); a container in a field not annotated as one fails loudly (unhashable)."""
    keyed = [f for f in dataclasses.fields(cls) if f.name not in labels]
    values = attrgetter(*(f.name for f in keyed))
    containers = tuple(i for i, f in enumerate(keyed) if str(f.type).split("[")[0].strip() in ("dict", "list"))

    def key(obj: Any) -> tuple[Any, ...]:
        out = list(values(obj))
        for i in containers:
            out[i] = hashable(out[i])
        return tuple(out)

    return key


def hashable(value: Any) -> Any:
    """``value`` with its dicts as sorted (key, value) tuples and its lists as tuples, all the way down."""
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    return value
