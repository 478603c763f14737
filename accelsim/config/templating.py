"""Workload templates: parameters, arithmetic expressions in layer fields, and repeated blocks.

A workload may declare ``params`` (defaults, overridable with ``--set KEY=VALUE``) and use
them in any numeric layer field as a string expression, e.g. ``n: "batch * seq"``. A layer
entry ``{repeat: 12, name: encoder, layers: [...]}`` expands its layers 12 times with names
``encoder.0.qkv`` ... and the block index available as ``i``. Expressions allow numbers,
parameter names, + - * / // % **, parentheses and min / max / ceil / floor. ``--set`` also
replaces the top-level text fields in ``SETTABLE_FIELDS`` that the file declares (``kv_dtype``).
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import yaml

from accelsim.config import yamlsafe as yamlload
from accelsim.errors import ConfigError
from accelsim.textsafe import short_repr

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS: dict[str, Callable[..., int | float]] = {"min": min, "max": max, "ceil": math.ceil,
                                                 "floor": math.floor}
# layer fields taken as text; every other layer field may be an expression
TEXT_KEYS = {"name", "op", "sparsity", "function", "kind", "source_op", "description", "routing", "dtype",
              "out_dtype", "to_dtype", "from_dtype"}
# top-level text fields ``--set`` may replace when the file declares them (e.g. --set kv_dtype=fp8)
SETTABLE_FIELDS = ("kv_dtype",)


MAX_EXPR_CHARS = 1000  # longest expression text
MAX_MAGNITUDE = 2**63  # largest integer an expression may produce, at any step
MAX_LAYERS = 100_000  # layers a workload may expand to through repeat blocks


MAX_EXPR_WORK = 5_000_000  # expression steps (numbers, names, operations) one workload's expansion may evaluate

Names = dict[str, int | float]
_Compiled = Callable[[Names], "int | float"]


def evaluate(expr: str, names: Names, budget: Budget | None = None) -> int | float:
    """Evaluate an arithmetic expression over ``names``; raises ValueError with a readable reason.

    Work is bounded: integers beyond ``MAX_MAGNITUDE`` (checked before a power is computed) and
    non-finite floats are refused at the step that would make them. Each text is parsed once (cached);
    with a ``budget`` a value already computed for the same names is reused and the steps evaluated
    are counted against it.
    """
    run, used, steps = _compile(expr)
    key: tuple[Any, ...] = ()
    if budget is not None:
        key = (expr, *((n, type(names[n]), names[n]) for n in used if n in names))
        if key in budget.memo:
            return budget.memo[key]
        budget.spend(steps, expr)
    try:
        value = run(names)
    except RecursionError:
        raise ValueError(f"expression {short_repr(expr)} is nested too deeply") from None
    if budget is not None and len(budget.memo) < _MEMO_SIZE:
        budget.memo[key] = value
    return value


_MEMO_SIZE = 100_000  # values one expansion remembers


class Budget:
    """The expression work left to one workload's expansion, and the values it computed (by text and names)."""

    def __init__(self, steps: int = MAX_EXPR_WORK) -> None:
        self.left = steps
        self.memo: dict[tuple[Any, ...], int | float] = {}

    def spend(self, steps: int, expr: str) -> None:
        self.left -= steps
        if self.left < 0:
            raise ValueError(f"expressions take more than {MAX_EXPR_WORK:,} steps to evaluate over this workload's "
                             f"layers (at {short_repr(expr)}); use shorter expressions or fewer repeats")


@functools.lru_cache(maxsize=4096)
def _compile(expr: str) -> tuple[_Compiled, tuple[str, ...], int]:
    """``expr`` parsed once: (evaluator over names, the names it reads, its step count)."""
    shown = short_repr(expr)
    if len(expr) > MAX_EXPR_CHARS:
        raise ValueError(f"expression {shown} is {len(expr):,} characters long (at most {MAX_EXPR_CHARS:,})")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(f"expected an integer or an expression of parameters (e.g. \"batch * seq\"), "
                         f"cannot parse {shown}") from None
    used: set[str] = set()
    steps = [0]

    def checked(value: Any) -> int | float:
        if isinstance(value, int) and abs(value) > MAX_MAGNITUDE:
            raise ValueError(f"{shown} reaches a number beyond 2^63; sizes are limited far below that")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{shown} does not give a finite number")
        if not isinstance(value, int | float):
            raise ValueError(f"{shown} does not give a real number")
        return value

    def power(base: int | float, exp: int | float) -> int | float:
        if isinstance(base, int) and isinstance(exp, int) and exp > 0 and abs(base) > 1:
            if exp * math.log2(abs(base)) > 64:
                raise ValueError(f"{shown} reaches a number beyond 2^63 (a power too large to compute)")
        try:
            return base ** exp
        except (OverflowError, ZeroDivisionError):
            raise ValueError(f"{shown} does not give a finite number") from None

    def call(name: str, args: list[int | float]) -> int | float:
        if name in ("ceil", "floor") and len(args) != 1:
            raise ValueError(f"{name}() takes one argument in {shown}")
        if not args:
            raise ValueError(f"{name}() needs at least one argument in {shown}")
        return _FUNCS[name](*args) if len(args) > 1 or name in ("ceil", "floor") else args[0]

    def unsupported(_: Names) -> int | float:
        raise ValueError(f"unsupported syntax in {shown}: only numbers, parameters, + - * / // % ** and "
                         "min/max/ceil/floor are allowed")

    def build(node: ast.AST) -> _Compiled:  # noqa: C901 (one branch per syntax form)
        steps[0] += 1
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value,
                                                                                                      bool):
            value = node.value
            return lambda names: checked(value)
        if isinstance(node, ast.Name):
            ident = node.id
            used.add(ident)

            def name(names: Names) -> int | float:
                if ident not in names:
                    known = ", ".join(sorted(names)) or "none"
                    raise ValueError(f"unknown parameter {short_repr(ident)} in {shown} (parameters: {known})")
                return names[ident]
            return name
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right, op = build(node.left), build(node.right), _BINOPS[type(node.op)]
            divides, is_pow = isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod), isinstance(node.op, ast.Pow)

            def binop(names: Names) -> int | float:
                a, b = left(names), right(names)
                if divides and b == 0:
                    raise ValueError(f"division by zero in {shown}")
                return checked(power(a, b) if is_pow else op(a, b))
            return binop
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand, negate = build(node.operand), isinstance(node.op, ast.USub)
            return lambda names: -operand(names) if negate else operand(names)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and not node.keywords):
            fname, args = node.func.id, [build(a) for a in node.args]
            return lambda names: checked(call(fname, [a(names) for a in args]))
        return unsupported

    def whole(names: Names) -> int | float:
        value = body(names)
        if isinstance(value, float) and value.is_integer():
            return checked(int(value))
        return value

    try:
        body = build(tree.body)
    except RecursionError:
        raise ValueError(f"expression {shown} is nested too deeply") from None
    return whole, tuple(sorted(used)), steps[0]


def _resolve_value(value: Any, names: Names, src: str, path: str, budget: Budget | None = None) -> Any:
    if isinstance(value, str):
        try:
            return evaluate(value, names, budget)
        except ValueError as exc:
            raise ConfigError(src, path, str(exc)) from None
    if isinstance(value, list):
        return [_resolve_value(v, names, src, f"{path}[{j}]", budget) for j, v in enumerate(value)]
    return value


def _expand_layers(items: Any, names: dict[str, int | float], prefix: str, src: str, path: str,
                   total: list[int], budget: Budget | None = None) -> list[Any]:
    """Layers of ``items`` with repeat blocks unrolled; ``total`` counts layers made so far (all blocks), ``budget``
    the expression work left (all blocks)."""
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
                raise ConfigError(src, f"{here}.{sorted(map(str, extra))[0]}", "unknown key in a repeat block "
                                  "(allowed: repeat, name, layers)")
            count = _resolve_value(item["repeat"], names, src, f"{here}.repeat", budget)
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigError(src, f"{here}.repeat", f"expected a positive integer, got {short_repr(count)}")
            if total[0] + count > MAX_LAYERS:
                raise ConfigError(src, f"{here}.repeat", f"{count:,} repeats would make more than {MAX_LAYERS:,} "
                                  "layers, the limit for a workload")
            block = item.get("name")
            if not isinstance(block, str) or not block:
                raise ConfigError(src, f"{here}.name", "a repeat block needs a name (the prefix of its layers)")
            if not item.get("layers"):
                raise ConfigError(src, f"{here}.layers", "a repeat block needs a non-empty list of layers")
            for i in range(count):
                out.extend(_expand_layers(item.get("layers"), {**names, "i": i}, f"{prefix}{block}.{i}.", src,
                                          f"{here}.layers", total, budget))
            continue
        total[0] += 1
        if total[0] > MAX_LAYERS:
            raise ConfigError(src, "layers", f"expands to more than {MAX_LAYERS:,} layers, the limit for a workload")
        if not isinstance(item, dict):
            out.append(item)  # validation reports the type
            continue
        layer = {}
        for key, value in item.items():
            if key in TEXT_KEYS:
                layer[key] = value
            else:
                layer[key] = _resolve_value(value, names, src, f"{here}.{key}", budget)
        if isinstance(layer.get("name"), str):
            layer["name"] = prefix + layer["name"]
        out.append(layer)
    return out


def _param_value(value: Any, src: str, key: str, what: str) -> int | float:
    """A parameter's value: a finite number of magnitude at most MAX_MAGNITUDE, written plainly."""
    odd = yamlload.quirk(value)
    if odd:
        raise ConfigError(src, key, f"{what}: {odd}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(src, key, f"{what} must be a number, got {short_repr(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(src, key, f"{what} must be a finite number, got {short_repr(value)}")
    if abs(value) > MAX_MAGNITUDE:
        raise ConfigError(src, key, f"{what} {short_repr(value)} is beyond 2^63")
    return value


def expand(data: dict[str, Any], overrides: dict[str, Any] | None, src: str) -> dict[str, Any]:
    """Resolve params (defaults + overrides), expressions and repeat blocks into plain layers."""
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(src, "params", "expected a mapping of parameter names to default values")
    resolved: dict[str, int | float] = {}
    for key, value in params.items():
        resolved[str(key)] = _param_value(value, src, f"params.{key}", "default")
    fields: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        if key in SETTABLE_FIELDS and key in data and key not in resolved:
            fields[key] = value  # validated with the workload (e.g. a dtype name)
            continue
        if key not in resolved:
            known = ", ".join(sorted([*resolved, *(f for f in SETTABLE_FIELDS if f in data)])) or "none"
            raise ConfigError(src, key, f"--set names an unknown parameter (this workload has: {known})")
        value = _param_value(value, src, key, "--set value")
        if value <= 0:
            raise ConfigError(src, key, f"--set value must be a positive number, got {short_repr(value)}")
        resolved[key] = value
    out = {k: v for k, v in data.items() if k not in ("params", "layers")}
    out.update(fields)
    out["params"] = resolved
    if "kv_cache_elements" in out:
        out["kv_cache_elements"] = _resolve_value(out["kv_cache_elements"], resolved, src, "kv_cache_elements")
    out["layers"] = _expand_layers(data.get("layers"), resolved, "", src, "layers", [0], Budget())
    return out


def parse_sets(items: list[str], src: str = "--set") -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings (values as YAML scalars; YAML 1.1 number forms are marked, not trusted)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(src, short_repr(item), "expected KEY=VALUE, e.g. batch=16")
        try:
            value = yamlload.load(raw)
        except yamlload.Refused as exc:
            raise ConfigError(src, key, f"--set value: {exc.problem}") from None
        except yaml.YAMLError:
            raise ConfigError(src, key, f"cannot parse value {short_repr(raw)}") from None
        yamlload.check_extent(value, f"{src}: {key}")
        out[key.strip()] = value
    return out
