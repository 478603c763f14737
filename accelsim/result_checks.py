"""What a result's JSON must hold for its totals to be computed from it: the checks ``RunResult.from_dict``
and ``accelsim regress`` share, so a corrupt file (a count written as text, a NaN) is refused on reading,
naming the key, instead of loading and failing (or comparing as "changed") later.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

CYCLE_KEYS = ("total", "compute", "stall_memory", "stall_decode", "launch")
BYTE_LEVELS = ("dram", "sram")
TENSOR_KEYS = ("a_values", "a_metadata", "b", "c")
NUMBER_KEYS = ("macs", "macs_executed", "utilization")  # a layer's own numbers (besides its count mappings)
CLOCK_NUMBERS = ("ghz", "cycles_at_clock")  # a layer's clock, where it has one (power_w, dense_ghz: optional)


def is_number(value: Any) -> bool:
    """A finite JSON number (``true`` / ``false`` are not numbers)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def layer_problem(layer: Mapping[str, Any], complete: bool = True) -> tuple[str, str] | None:
    """(key path within the layer, what is wrong) for the first field a result's totals read that is missing
    or not a finite number, else None. ``complete=False`` (regress, which compares whatever a file holds):
    only the fields present are checked."""
    return next(_layer_problems(layer if complete else _Present(layer)), None)


class _Present(dict):  # type: ignore[type-arg]
    """A layer's or the totals' fields (nested mappings too) where an absent key counts as checked: the checks
    then test only what a file holds (``layer_problem(complete=False)``, ``totals_problem``)."""

    def __init__(self, layer: Mapping[str, Any]) -> None:
        super().__init__({k: _Present(v) if isinstance(v, Mapping) else v for k, v in layer.items()})


def _layer_problems(layer: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for key in NUMBER_KEYS:
        yield from _numbers(layer, (key,), "")
    yield from _numbers(layer, ("dense_cycles",) if "dense_cycles" in layer else ("speedup_vs_dense",), "")
    yield from _counts(layer, "cycles", CYCLE_KEYS)
    yield from _counts(layer, "busy", ("compute", "memory"))
    by_level = layer.get("bytes")
    if not isinstance(by_level, Mapping):
        if "bytes" in layer or not isinstance(layer, _Present):
            yield "bytes", _not_mapping(by_level)
        return
    for level in BYTE_LEVELS:
        yield from _counts(by_level, level, TENSOR_KEYS, "bytes.")
    energy = layer.get("energy")
    if energy is not None:
        yield from _leaves(energy, "energy")
    clock = layer.get("clock")
    if clock is not None:
        if not isinstance(clock, Mapping):
            yield "clock", _not_mapping(clock)
            return
        yield from _numbers(clock, CLOCK_NUMBERS, "clock.")
        yield from _numbers(clock, tuple(k for k in ("power_w", "dense_ghz") if clock.get(k) is not None), "clock.")


def totals_problem(totals: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key path within ``totals``, what is wrong) for the first model total present that is not a finite number
    (cycles, bytes, MACs, latency, utilization, the dense baseline and speedup, energy in joules), else None.
    Only the fields present are checked (regress compares partial files)."""
    present = _Present(totals)
    checks = [_numbers(present, TOTAL_NUMBERS, ""), _counts(present, "cycles", ())]
    by_level = present.get("bytes")
    if isinstance(by_level, Mapping):
        checks += [_counts(by_level, level, (), "bytes.") for level in BYTE_LEVELS]
    elif "bytes" in present:
        checks.append(iter([("bytes", _not_mapping(by_level))]))
    energy = present.get("energy")
    if isinstance(energy, Mapping):
        checks += [_numbers(energy, ("total_j",), "energy."), *(_counts(energy, k, (), "energy.")
                                                                 for k in ("by_component_j", "by_tensor_j"))]
    return next((p for check in checks for p in check), None)


TOTAL_NUMBERS = ("latency_us", "macs", "macs_executed", "utilization", "layers", "dense_total_cycles",
                 "speedup_vs_dense")


def _counts(parent: Mapping[str, Any], key: str, required: tuple[str, ...], prefix: str = "") -> Iterator[
        tuple[str, str]]:
    """``parent[key]``: a mapping holding ``required`` keys, every value a finite number."""
    value, where = parent.get(key), f"{prefix}{key}"
    if isinstance(parent, _Present) and key not in parent:
        return
    if not isinstance(value, Mapping):
        yield where, _not_mapping(value)
        return
    yield from _numbers(value, tuple(dict.fromkeys((*required, *value))), f"{where}.")


def _numbers(mapping: Mapping[str, Any], keys: tuple[str, ...], prefix: str) -> Iterator[tuple[str, str]]:
    for key in keys:
        if key not in mapping:
            if not isinstance(mapping, _Present):
                yield f"{prefix}{key}", "is missing"
        elif not is_number(mapping[key]):
            yield f"{prefix}{key}", f"is {_shown(mapping[key])}, not a finite number"


def _leaves(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every leaf of a nested mapping of numbers (a layer's energy) a finite number."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{where}.{k}")
    elif not is_number(value):
        yield where, f"is {_shown(value)}, not a finite number"


def first_non_finite(value: Any, where: str = "") -> str | None:
    """The key path of the first NaN or infinity in decoded JSON (``json`` reads NaN, Infinity, 1e999), else None."""
    kind = type(value)
    if kind is float:
        return None if math.isfinite(value) else where or "(top level)"
    if kind is dict or isinstance(value, Mapping):
        for k, v in value.items():
            if type(v) in _PLAIN:
                continue
            found = first_non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = None if type(v) in _PLAIN else first_non_finite(v, f"{where}[{i}]")
            if found:
                return found
    return None


_PLAIN = frozenset({str, int, bool, type(None)})  # leaves that are never NaN (skipped without a call)


def _not_mapping(value: Any) -> str:
    return "is missing" if value is None else f"is {_shown(value)}, expected a mapping of numbers"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def result_problem(data: Mapping[str, Any]) -> str | None:
    """What is wrong with a result's JSON (``RunResult.to_dict()``) in the fields its totals are built from, as
    "KEY PATH PROBLEM", else None. Layers are named by index (``layers[3].cycles.total``)."""
    bad = first_non_finite(data)
    if bad is not None:
        return f"{bad} is not a finite number (NaN or infinity)"
    layers = data.get("layers")
    if not isinstance(layers, list):
        return f"layers is {_shown(layers)}, expected a list"
    for i, layer in enumerate(layers):
        if not isinstance(layer, Mapping):
            return f"layers[{i}] is {_shown(layer)}, expected a mapping"
        found = layer_problem(layer)
        if found is not None:
            return f"layers[{i}].{found[0]} {found[1]}"
    totals = data.get("totals")  # the one total read back (the rest are recomputed); absent: a KeyError says so
    if isinstance(totals, Mapping) and "dense_total_cycles" in totals and not is_number(totals["dense_total_cycles"]):
        return f"totals.dense_total_cycles is {_shown(totals['dense_total_cycles'])}, not a finite number"
    return None
