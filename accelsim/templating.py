"""Workload templates: parameters, arithmetic expressions in layer fields, and repeated blocks.

A workload may declare ``params`` (defaults, overridable with ``--set KEY=VALUE``) and use
them in any numeric layer field as a string expression, e.g. ``n: "batch * seq"``. A layer
entry ``{repeat: 12, name: encoder, layers: [...]}`` expands its layers 12 times with names
``encoder.0.qkv`` ... and the block index available as ``i``. Expressions allow numbers,
parameter names, + - * / // % **, parentheses and min / max / ceil / floor.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from .errors import ConfigError

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}
_TEXT_KEYS = {"name", "op", "sparsity", "function", "kind", "source_op", "description"}


def evaluate(expr: str, names: dict[str, int | float]) -> int | float:
    """Evaluate an arithmetic expression over ``names``; raises ValueError with a readable reason."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"expected an integer or an expression of parameters (e.g. \"batch * seq\"), "
                         f"cannot parse {expr!r}") from None

    def ev(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value,
                                                                                                      bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ValueError(f"unknown parameter {node.id!r} in {expr!r} (parameters: {known})")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
                raise ValueError(f"division by zero in {expr!r}")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords):
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise ValueError(f"unsupported syntax in {expr!r}: only numbers, parameters, + - * / // % ** and "
                         "min/max/ceil/floor are allowed")

    value = ev(tree)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _resolve_value(value: Any, names: dict[str, int | float], src: str, path: str) -> Any:
    if isinstance(value, str):
        try:
            return evaluate(value, names)
        except ValueError as exc:
            raise ConfigError(src, path, str(exc)) from None
    if isinstance(value, list):
        return [_resolve_value(v, names, src, f"{path}[{j}]") for j, v in enumerate(value)]
    return value


def _expand_layers(items: Any, names: dict[str, int | float], prefix: str, src: str, path: str) -> list[Any]:
    if not isinstance(items, list):
        raise ConfigError(src, path, f"expected a list of layers, got {type(items).__name__}")
    out: list[Any] = []
    for idx, item in enumerate(items):
        here = f"{path}[{idx}]"
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            here += f"({item['name']})"
        if isinstance(item, dict) and "repeat" in item:
            extra = set(item) - {"repeat", "name", "layers"}
            if extra:
                raise ConfigError(src, f"{here}.{sorted(extra)[0]}", "unknown key in a repeat block "
                                  "(allowed: repeat, name, layers)")
            count = _resolve_value(item["repeat"], names, src, f"{here}.repeat")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigError(src, f"{here}.repeat", f"expected a positive integer, got {count!r}")
            block = item.get("name")
            if not isinstance(block, str) or not block:
                raise ConfigError(src, f"{here}.name", "a repeat block needs a name (the prefix of its layers)")
            for i in range(count):
                out.extend(_expand_layers(item.get("layers"), {**names, "i": i}, f"{prefix}{block}.{i}.", src,
                                          f"{here}.layers"))
            continue
        if not isinstance(item, dict):
            out.append(item)  # validation reports the type
            continue
        layer = {}
        for key, value in item.items():
            if key in _TEXT_KEYS:
                layer[key] = value
            else:
                layer[key] = _resolve_value(value, names, src, f"{here}.{key}")
        if isinstance(layer.get("name"), str):
            layer["name"] = prefix + layer["name"]
        out.append(layer)
    return out


def expand(data: dict[str, Any], overrides: dict[str, Any] | None, src: str) -> dict[str, Any]:
    """Resolve params (defaults + overrides), expressions and repeat blocks into plain layers."""
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(src, "params", "expected a mapping of parameter names to default values")
    resolved: dict[str, int | float] = {}
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(src, f"params.{key}", f"default must be a number, got {value!r}")
        resolved[str(key)] = value
    for key, value in (overrides or {}).items():
        if key not in resolved:
            known = ", ".join(sorted(resolved)) or "none"
            raise ConfigError(src, key, f"--set names an unknown parameter (this workload has: {known})")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(src, key, f"--set value must be a positive number, got {value!r}")
        resolved[key] = value
    out = {k: v for k, v in data.items() if k not in ("params", "layers")}
    out["params"] = resolved
    if "kv_cache_elements" in out:
        out["kv_cache_elements"] = _resolve_value(out["kv_cache_elements"], resolved, src, "kv_cache_elements")
    out["layers"] = _expand_layers(data.get("layers"), resolved, "", src, "layers")
    return out


def parse_sets(items: list[str], src: str = "--set") -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings (values as YAML scalars)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(src, item, "expected KEY=VALUE, e.g. batch=16")
        try:
            out[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ConfigError(src, key, f"cannot parse value {raw!r}") from None
    return out
