"""Edits that turn a model's JSON Schema (the data a loader validates) into the schema of the file as written.

Loaders accept more than the model they validate into: a workload's size fields may be expressions of its
``params`` (resolved on load), a hardware config that ``extends`` a family file gives only the keys it
changes. :func:`accept_expressions` and :func:`relaxed` rewrite a pydantic JSON Schema (plain dicts) for
that; :mod:`accelsim.hardware.file_schema` and :mod:`accelsim.workloads.file_schema` use them.
"""

from __future__ import annotations

import copy
from typing import Any

DEFS = "$defs"
REF_PREFIX = "#/$defs/"
PARTIAL_PREFIX = "Partial"
EXPRESSION = {"type": "string", "minLength": 1,
              "description": "An expression of the workload's params (e.g. \"batch * seq\"): numbers, parameter "
                             "names, + - * / // % **, parentheses, min / max / ceil / floor; evaluated on load."}
_NUMERIC = ("integer", "number")


def accept_expressions(node: Any) -> Any:
    """``node`` with every integer or number schema in it (in unions and list items too) widened to also
    take an expression string; ``$ref`` targets are left alone."""
    if isinstance(node, list):
        return [accept_expressions(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") in _NUMERIC:
        keep = {k: v for k, v in node.items() if k in ("title", "description", "default")}
        number = {k: v for k, v in node.items() if k not in keep}
        return {**keep, "anyOf": [number, EXPRESSION]}
    return {k: accept_expressions(v) if k in ("anyOf", "oneOf", "items", "prefixItems") else v
            for k, v in node.items()}


def relaxed(defs: dict[str, Any], name: str) -> str:
    """Add to ``defs`` a copy of the object schema ``defs[name]`` (and of what it refers to) in which no key is
    required, for a file whose values are merged key by key over another's; return the copy's name.

    Mappings merge key by key, so below one nothing is required either; a list is replaced whole, so its
    items keep their required keys. Unions of models become ``anyOf`` (a partial member may match several)."""
    target = PARTIAL_PREFIX + name
    if target in defs:
        return target
    defs[target] = {}  # placeholder: a model that refers to itself ends here
    defs[target] = _relax(defs[name], defs)
    return target


def _relax(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_relax(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(REF_PREFIX):
            out[key] = REF_PREFIX + relaxed(defs, value[len(REF_PREFIX):])
        elif key == "required" and isinstance(value, list):
            continue
        elif key == "discriminator":  # its mapping names the complete models
            continue
        elif key in ("anyOf", "oneOf"):
            out["anyOf"] = [*out.get("anyOf", []), *_relax(value, defs)]
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: _relax(v, defs) for k, v in value.items()}
        elif key in ("items", "prefixItems"):
            out[key] = copy.deepcopy(value)  # a list is replaced whole: its items stay complete
        else:
            out[key] = _relax(value, defs)
    return out


def split_defs(schema: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the shared ``$defs``, the root schema as a def named ``name``) of a model's JSON Schema."""
    root = dict(schema)
    defs = root.pop(DEFS, {})
    defs[name] = root
    return defs, root
