"""JSON Schema of a workload file as written (``accelsim schema workload``).

The file is not the :class:`~accelsim.workloads.model.Workload` it loads into: ``params`` are defaults,
every numeric layer field (and ``kv_cache_elements``) may be an expression of them, a layer entry may be a
``repeat`` block of layers, and ``op: moe`` layers expand into plain ops on load. The schema says all that;
what it cannot check (an expression's value, parameter names, unique layer names after ``repeat``) is
left to loading (``accelsim validate``).
"""

from __future__ import annotations

import json
from typing import Any

from accelsim.config.file_schema import DEFS, EXPRESSION, REF_PREFIX, accept_expressions, split_defs
from accelsim.config.templating import TEXT_KEYS
from accelsim.workloads.model import Workload
from accelsim.workloads.moe import Moe

_ENTRY = "LayerEntry"
_REPEAT = "RepeatBlock"


def _with_expressions(model_schema: dict[str, Any]) -> dict[str, Any]:
    """A layer model's schema with its non-text fields taking expressions."""
    props = {k: v if k in TEXT_KEYS else accept_expressions(v) for k, v in model_schema["properties"].items()}
    return {**model_schema, "properties": props}


def workload_file_schema() -> dict[str, Any]:
    """The workload file's JSON Schema (Draft 2020-12), as a dict."""
    defs, root = split_defs(Workload.model_json_schema(), "Workload")
    del defs["Workload"]
    layers = root["properties"]["layers"]
    members = [m["$ref"] for m in layers["items"]["oneOf"]]
    for ref in members:
        name = ref[len(REF_PREFIX):]
        defs[name] = _with_expressions(defs[name])
    defs["Moe"] = _with_expressions(Moe.model_json_schema(ref_template=REF_PREFIX + "{model}"))
    entry = {"$ref": REF_PREFIX + _ENTRY}
    defs[_REPEAT] = {
        "type": "object", "additionalProperties": False, "required": ["repeat", "name", "layers"],
        "description": "Its layers, repeated: names become NAME.<i>.<layer>, and i (0, 1, ...) is a parameter "
                       "in their expressions.",
        "properties": {
            "repeat": {"description": "How many times.", "anyOf": [{"type": "integer", "minimum": 1}, EXPRESSION]},
            "name": {"type": "string", "minLength": 1, "description": "Prefix of the repeated layers' names."},
            "layers": {"type": "array", "minItems": 1, "items": entry}}}
    defs[_ENTRY] = {"description": "A layer (by its op), an op: moe block, or a repeat block of layers.",
                    "anyOf": [*({"$ref": r} for r in members), {"$ref": REF_PREFIX + "Moe"},
                              {"$ref": REF_PREFIX + _REPEAT}]}
    props = dict(root["properties"])
    props["layers"] = {**{k: v for k, v in layers.items() if k != "items"}, "items": entry}
    props["kv_cache_elements"] = accept_expressions(props["kv_cache_elements"])
    props["params"] = {**props["params"], "description": "Parameter defaults (numbers; --set KEY=VALUE overrides "
                                                         "them): layer fields use them in expressions."}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "accelsim workload file",
            **{k: v for k, v in root.items() if k not in ("title", "properties")}, "properties": props, DEFS: defs}


def workload_schema() -> str:
    """JSON Schema of the workload file, as indented JSON."""
    return json.dumps(workload_file_schema(), indent=2, sort_keys=True)
