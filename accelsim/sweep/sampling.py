"""Where a sweep's hardware points come from: the grid's product and seeded random samples.

Integer hardware fields sampled from a continuous distribution are rounded (:func:`round_to_field`);
which fields are integers comes from the hardware schema (:func:`field_kind`).
"""

from __future__ import annotations

import copy
import itertools
import math
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

from accelsim.hardware.model import Hardware


@dataclass(frozen=True)
class Draw:
    """One random distribution of a spec: the dotted path it sets, how it draws, and the field's kind."""

    path: str
    name: str  # choice | uniform | log_uniform | int_uniform
    arg: list[Any]  # the choices, or [low, high]
    kind: str | None  # int | float | other | None (see field_kind)


def _unwrap(ann: Any) -> list[Any]:
    """Leaf annotations of ``ann`` through Annotated and unions (None dropped)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return [leaf for a in typing.get_args(ann) if a is not type(None) for leaf in _unwrap(a)]
    return [ann]


def _model_for(ann: Any, node: Any) -> type[BaseModel] | None:
    models = [a for a in _unwrap(ann) if isinstance(a, type) and issubclass(a, BaseModel)]
    if not models:
        return None
    if len(models) > 1 and isinstance(node, dict):
        for m in models:
            f = m.model_fields.get("kind")
            if f is not None and node.get("kind") in typing.get_args(f.annotation):
                return m
    return models[0]


def field_kind(path: str, base: dict[str, Any]) -> str | None:
    """'int', 'float' or 'other' for a dotted hardware path; None when the schema has no such field.

    Union members are chosen by the base config's ``kind`` (systolic / tensor_core).
    """
    ann: Any = Hardware
    node: Any = base
    for key in path.split("."):
        model = _model_for(ann, node)
        if model is not None:
            f = model.model_fields.get(key)
            if f is None:
                return None
            ann = f.annotation
        else:
            dicts = [a for a in _unwrap(ann) if typing.get_origin(a) is dict]
            if not dicts:
                return None
            ann = typing.get_args(dicts[0])[1]
        node = node.get(key) if isinstance(node, dict) else None
    types: set[type] = set()
    for leaf in _unwrap(ann):
        if typing.get_origin(leaf) is typing.Literal:
            types |= {type(v) for v in typing.get_args(leaf)}
        elif isinstance(leaf, type):
            types.add(leaf)
    if float in types:
        return "float"
    if int in types:
        return "int"
    return "other"


def round_to_field(x: float, lo: float, hi: float) -> int:
    """The rounding rule for integer fields sampled from uniform / log_uniform.

    Round half to even (Python's ``round``), then clamp to the integers inside [lo, hi]
    (ceil(lo) .. floor(hi)), so a sample never leaves the stated range.
    """
    return min(max(round(x), math.ceil(lo)), math.floor(hi))


def sample(draws: Sequence[Draw], n: int, seed: int) -> list[dict[str, Any]]:
    """n samples; each draws every distribution in spec order from one seeded PCG64 stream."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        point: dict[str, Any] = {}
        for d in draws:
            if d.name == "choice":
                value = copy.deepcopy(d.arg[int(rng.integers(len(d.arg)))])
            elif d.name == "int_uniform":
                value = int(rng.integers(d.arg[0], d.arg[1] + 1))
            else:
                lo, hi = d.arg
                x = float(rng.uniform(lo, hi)) if d.name == "uniform" else \
                    float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
                value = round_to_field(x, lo, hi) if d.kind == "int" else x
            point[d.path] = value
        out.append(point)
    return out


def grid_product(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, first key slowest; none for an empty grid."""
    if not grid:
        return []
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]
