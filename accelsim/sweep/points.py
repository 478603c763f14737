"""A sweep's hardware points: the base config with each point's overrides, validated and deduplicated."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accelsim.config.schema import canonical_hash
from accelsim.errors import ConfigError
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.hardware.systems import refuse_device_override


@dataclass(frozen=True)
class Point:
    """One hardware point: the overrides applied to the base config and what they resolve to."""

    index: int
    origin: str  # "grid" | "random" | "base"
    overrides: dict[str, Any]
    hw_hash: str
    values: tuple[Any, ...]  # resolved value at each swept path (SweepSpec.swept order)
    sram_bytes: int


def with_overrides(base: dict[str, Any], overrides: dict[str, Any], source: str = "<sweep>") -> dict[str, Any]:
    """A copy of ``base`` with ``{dotted.path: value}`` set (as ``hardware.apply_override``; base is untouched)."""
    out = dict(base)
    for path, value in overrides.items():
        refuse_device_override(path, base, source, "a sweep key")
        keys = path.split(".")
        node = out
        for i, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = {}
            elif not isinstance(child, dict):
                raise ConfigError(source, ".".join(keys[: i + 1]), f"is a value, so {path} cannot set a key below it")
            else:
                child = dict(child)
            node[key] = child
            node = child
        node[keys[-1]] = copy.deepcopy(value) if isinstance(value, dict | list) else value
    return out


def _lookup(data: Any, path: str) -> Any:
    node = data
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _swept_value(hw: Hardware, resolved: dict[str, Any], path: str) -> Any:
    """A swept key's value at a point: from the resolved config, else from the model itself (a section that holds
    its defaults is left out of the resolved config, e.g. ``host`` at ``call_floor_us: 0``)."""
    value = _lookup(resolved, path)
    if value is not None:
        return value
    node: Any = hw
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
        if node is None:
            return None
    return node.model_dump(mode="json") if hasattr(node, "model_dump") else node


def _cell(value: Any) -> Any:
    """A table cell: scalars as they are, mappings and lists as compact JSON text."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def build_points(hw_data: dict[str, Any], grid_points: Sequence[dict[str, Any]],
                 samples: Sequence[dict[str, Any]], swept: Sequence[str], source: str,
                 hw_source: str) -> tuple[list[Point], int]:
    """The grid's points, then the random samples (a union: a later duplicate of a resolved config is
    dropped); with no grid and no samples, the base config alone. Returns (points, duplicates dropped).
    A point whose config is invalid is a ConfigError naming the grid or random key that caused it."""
    raw = [("grid", o) for o in grid_points] + [("random", s) for s in samples]
    if not raw:
        raw = [("base", {})]
    points: list[Point] = []
    seen: set[str] = set()
    dropped = 0
    for i, (origin, overrides) in enumerate(raw):
        hw = _validate_point(hw_data, overrides, origin, i if origin != "random" else i - len(grid_points),
                             source, hw_source)
        resolved = hw.to_dict()
        h = canonical_hash(resolved)
        if h in seen:
            dropped += 1
            continue
        seen.add(h)
        sram = sum(hw.core.sram.buffer_bytes().values()) * hw.cores
        cells = tuple(_cell(_swept_value(hw, resolved, p)) for p in swept)
        points.append(Point(len(points), origin, overrides, h, cells, sram))
    return points, dropped


def _validate_point(hw_data: dict[str, Any], overrides: dict[str, Any], origin: str, index: int, source: str,
                    hw_source: str) -> Hardware:
    try:
        data = with_overrides(hw_data, overrides, source)
        return hardware_from_dict(data, hw_source)
    except ConfigError as exc:
        label = "random sample" if origin == "random" else f"{origin} point"
        values = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        where = f"{label} {index}" + (f" ({values})" if overrides else "")
        section = "grid" if origin == "grid" else "random"
        problems = []
        for key, problem in exc.problems:  # every problem of the point, each named by the key that caused it
            key = key or ""
            culprit = next((p for p in overrides if key == p or key.startswith(p + ".") or p.startswith(key + ".")),
                           None)
            if culprit is None and overrides:
                culprit = next(iter(overrides))
            problems.append((f"{section}.{culprit}" if culprit else None,
                             f"{where}: {key + ': ' if key and key != culprit else ''}{problem}"))
        raise ConfigError.many(source, problems, exc.unlisted) from None
