"""A result body as flat ``{dotted.key: value}`` metrics, the form in which it is compared.

Dicts become dotted keys (``cycles.total``, ``bytes.dram.a_values``); list elements are labelled by name
(``workload.layers[g1024].m``), by op/path (``by_op_type[gemm/sparse].cycles``), else by index
(``padding.k[0]``); an empty dict or list is a leaf (``warnings: []``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Sections of a result body that are compared run-wide (``layers`` is compared per layer).
# ``meta`` is machine- and time-specific and is never compared; ``schema_version`` is checked on load.
NOT_COMPARED = ("meta", "schema_version", "layers")


def list_key(items: list[Any]) -> Callable[[int, Any], str] | None:
    """How to label the elements of a list of objects: by name, by (op, path), else by index (None)."""
    if items and all(isinstance(x, dict) for x in items):
        names = [x.get("name") for x in items]
        if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return lambda _i, x: str(x["name"])
        pairs = [(x.get("op"), x.get("path")) for x in items]
        if all(isinstance(a, str) and isinstance(b, str) for a, b in pairs) and len(set(pairs)) == len(pairs):
            return lambda _i, x: f"{x['op']}/{x['path']}"
    return None


def flatten(obj: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaves of a JSON value as ``{dotted.key: value}``; list elements as ``[name]`` or ``[index]``.

    An empty dict or list is a leaf of its own (``{}`` / ``[]``), so a section that disappears, or turns from a
    dict into a list, is a change even while it was empty."""
    if out is None:
        out = {}
    if isinstance(obj, dict | list) and not obj and prefix:
        out[prefix] = type(obj)()
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list):
        label = list_key(obj)
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}[{label(i, v) if label else i}]", out)
    else:
        out[prefix] = obj
    return out


def layers_by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The layers of a result keyed by name (a repeated name becomes ``name#2``, ``name#3``, ...)."""
    out: dict[str, dict[str, Any]] = {}
    for layer in result["layers"]:
        name = layer["name"]
        if name in out:  # names are unique in valid workloads; keep duplicates apart anyway
            n = 2
            while f"{name}#{n}" in out:
                n += 1
            name = f"{name}#{n}"
        out[name] = layer
    return out


def run_level(result: dict[str, Any]) -> dict[str, Any]:
    """The run-wide metrics of a result (every section but ``meta``, ``schema_version`` and ``layers``)."""
    return flatten({k: v for k, v in result.items() if k not in NOT_COMPARED})
