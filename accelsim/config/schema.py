"""Reading YAML configs safely and turning validation failures into one-line errors."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, WrapValidator
from pydantic.fields import FieldInfo

from accelsim.config import yamlsafe as yamlload
from accelsim.errors import MAX_PROBLEMS_SHOWN, ConfigError
from accelsim.textsafe import short_repr

ModelT = TypeVar("ModelT", bound=BaseModel)

MAX_DIM = 2**31 - 1  # largest size per dimension (m, n, k, batch, channels, rows, SRAM bytes, ...)
MAX_BIG = 2**62  # largest capacity-like count (DRAM bytes, KV-cache elements)
MAX_FLOAT = 1e18  # largest rate, energy or time in a hardware config (keeps products of sizes finite)
MIN_RATE = 1e-3  # least clock (GHz), per-cycle rate or bandwidth (GB/s) a hardware config may give: they divide
MAX_CLOCK_GHZ = 1e3  # most clock: 1 THz (cycles to seconds, and GB/s to bytes per cycle, divide by it)
LIMIT_NAMES = {MAX_DIM: "2^31-1 per dimension", MAX_BIG: "2^62", MAX_FLOAT: "10^18 for hardware figures",
               MAX_CLOCK_GHZ: "1 THz; no real clock comes near"}
FLOOR_NAMES = {MIN_RATE: "the floor for clocks in GHz, per-cycle rates and bandwidths in GB/s, far below any real "
                         "design: smaller ones make cycle counts and times overflow"}

# Labels pydantic inserts into error locations for the members of a plain (undiscriminated) union, e.g.
# 'constrained-float', 'int'; with a model's discriminator tags (``union_tags``) they are not user keys.
_MEMBER_LABEL = re.compile(r"^(constrained-|function-|literal\[|list\[|dict\[|nullable\[|tagged-union\[)")
_SCALAR_LABELS = frozenset({"str", "float", "int", "bool"})


class FieldError(ValueError):
    """A validator's ValueError that names the offending key below the validated object.

    ``loc`` is appended to the object's location, so a model-level check can point at, e.g.,
    ``cores`` or ``layers[3].name`` instead of the whole file.
    """

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


def one_message(expected: str) -> WrapValidator:
    """Validator for a union field: one clear 'expected ..., got ...' instead of one error per member."""

    def wrap(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise ValueError(f"expected {expected}, got {_short(value)}") from None

    return WrapValidator(wrap)


def _short(value: Any, limit: int = 60) -> str:
    """repr of a user value, cut short (in bounded work) so an error stays one readable line."""
    return short_repr(value, limit)


def read_yaml(path: str | Path) -> tuple[Any, bytes]:
    """Load a YAML config file safely; return (data, raw bytes) or raise ConfigError.

    Only regular files up to ``yamlload.MAX_BYTES`` are read; duplicate keys, alias bombs and
    excessive nesting are refused (see :mod:`accelsim.config.yamlsafe`).
    """
    src = str(path)
    raw = yamlload.read_bytes(path, src)
    data = yamlload.parse(raw, src)
    if data is None:
        raise ConfigError(src, None, "file is empty")
    if not isinstance(data, dict):
        raise ConfigError(src, None, f"top level must be a mapping of keys, got {type(data).__name__}")
    return data, raw


def union_tags(model: type[BaseModel]) -> frozenset[str]:
    """Tag values of every discriminated union inside ``model`` (e.g. ``kind: systolic``, ``op: gemm``).

    Read from the models themselves: each union member's ``Literal`` discriminator field.
    """
    tags: set[str] = set()
    seen: set[type[BaseModel]] = set()
    stack: list[Any] = [model]

    def members(annotation: Any, discriminator: str) -> None:
        for member in _models_in(annotation):
            field = member.model_fields.get(discriminator)
            if field is not None:
                tags.update(t for t in typing.get_args(field.annotation) if isinstance(t, str))

    while stack:
        node = stack.pop()
        if isinstance(node, type) and issubclass(node, BaseModel):
            if node in seen:
                continue
            seen.add(node)
            for field in node.model_fields.values():
                if isinstance(field.discriminator, str):
                    members(field.annotation, field.discriminator)
                stack.append(field.annotation)
            continue
        args = typing.get_args(node)
        if typing.get_origin(node) is typing.Annotated:
            for meta in args[1:]:
                if isinstance(meta, FieldInfo) and isinstance(meta.discriminator, str):
                    members(args[0], meta.discriminator)
        stack.extend(args)
    return frozenset(tags)


def key_path(loc: tuple[Any, ...], data: Any = None, tags: frozenset[str] = frozenset()) -> str:
    """Render a pydantic error location as a dotted key path, with list indexes and layer names.

    ``tags``: the discriminator values of the validated model (``union_tags``), skipped like pydantic's
    union member labels unless the data has such a key.
    """
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            label = f"[{item}]"
            if isinstance(node, list) and item < len(node):
                node = node[item]
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    label = f"[{item}]({node['name']})"
            else:
                node = None
            if parts:
                parts[-1] += label
            else:
                parts.append(label)
            continue
        if ((item in tags or item in _SCALAR_LABELS or _MEMBER_LABEL.match(str(item)))
                and not (isinstance(node, dict) and item in node)):
            continue
        parts.append(str(item))
        node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts) if parts else "(top level)"


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the sub-model at ``loc`` (best effort; for did-you-mean hints)."""
    current: Any = model
    for item in loc[:-1]:
        if isinstance(item, int):
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(item))
            if field is None:
                # a union tag: descend into the member with that tag
                continue
            current = _unwrap(field.annotation, loc, item)
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(annotation: Any, loc: tuple[Any, ...], item: Any) -> Any:
    args = typing.get_args(annotation)
    if not args:
        return annotation
    idx = loc.index(item)
    tag = loc[idx + 1] if idx + 1 < len(loc) else None
    if isinstance(tag, int) and idx + 2 < len(loc):
        tag = loc[idx + 2]
    candidates = []
    stack = list(args)
    while stack:
        a = stack.pop(0)
        sub = typing.get_args(a)
        if isinstance(a, type) and issubclass(a, BaseModel):
            candidates.append(a)
        elif sub:
            stack.extend(sub)
    for c in candidates:
        for fname in ("kind", "op"):
            f = c.model_fields.get(fname)
            if f is not None and tag in typing.get_args(f.annotation):
                return c
    return candidates[0] if len(candidates) == 1 else annotation


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Model classes inside an annotation (through Annotated, unions and lists)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def _tag_values(model: type[BaseModel], loc: tuple[Any, ...], discriminator: str) -> list[str]:
    """Values the discriminator key may take for the union at ``loc`` (best effort)."""
    models = [model]
    for item in loc:
        if isinstance(item, int):
            continue
        inner = [m for cls in models if (f := cls.model_fields.get(str(item))) is not None
                 for m in _models_in(f.annotation)]
        if inner:
            models = inner
    tags: list[str] = []
    for cls in models:
        field = cls.model_fields.get(discriminator)
        if field is not None:
            tags += [t for t in typing.get_args(field.annotation) if isinstance(t, str)]
    return tags


def _describe(err: Any, model: type[BaseModel]) -> tuple[tuple[Any, ...], str]:
    """(location, message) of one pydantic error, in the words of the config file."""
    loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    got = f", got {_short(err['input'])}" if "input" in err else ""
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc)
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        msg = "unknown key" + (f" (did you mean '{hint[0]}'?)" if hint else "")
        if allowed:
            msg += f"; allowed: {', '.join(sorted(allowed))}"
    elif kind == "missing":
        msg = "required key is missing"
    elif kind in ("value_error", "assertion_error"):
        exc = ctx.get("error")
        loc += tuple(getattr(exc, "loc", ()))
        msg = str(exc) if exc is not None else re.sub(r"^(Value|Assertion) error, ", "", err["msg"])
    elif kind == "union_tag_invalid":
        disc = str(ctx.get("discriminator", "tag")).strip("'")
        loc += (disc,)
        msg = f"unknown {disc} {ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
    elif kind == "union_tag_not_found":
        disc = str(ctx.get("discriminator", "tag")).strip("'")
        tags = _tag_values(model, loc, disc)
        loc += (disc,)
        msg = "required key is missing" + (f"; expected one of {', '.join(map(repr, tags))}" if tags else "")
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        msg = f"expected a mapping of keys{got}"
    elif kind == "list_type":
        msg = f"expected a list{got}"
    elif kind == "too_short":
        msg = f"needs at least {ctx.get('min_length')} item(s){got}"
    elif kind == "too_long":
        msg = f"takes at most {ctx.get('max_length')} item(s){got}"
    elif kind == "less_than_equal" and ctx.get("le") in LIMIT_NAMES:
        limit = ctx["le"]
        msg = f"too large{got}; the limit is {f'{limit:,}' if isinstance(limit, int) else f'{limit:g}'} "
        msg += f"({LIMIT_NAMES[limit]})"
    elif kind == "greater_than_equal" and ctx.get("ge") in FLOOR_NAMES:
        msg = f"too small{got}; the least accepted is {ctx['ge']:g} ({FLOOR_NAMES[ctx['ge']]})"
    elif kind == "finite_number":
        msg = f"must be a finite number{got}"
    else:
        msg = re.sub(r"^Input should be", "should be", err["msg"]) + got
    return loc, msg + _exponent_hint(err.get("input"))


_YAML11_TEXT_EXPONENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def _exponent_hint(value: Any) -> str:
    """YAML 1.1 reads '1e9' (no dot, or no exponent sign) as text: say how to write the number."""
    if not isinstance(value, str) or not _YAML11_TEXT_EXPONENT.match(value.strip()):
        return ""
    number = float(value)
    if not math.isfinite(number):  # '1e999': no number to suggest
        return f" (YAML 1.1 reads {value.strip()} as text; as a number it would overflow)"
    mantissa, exponent = f"{number:e}".split("e")
    dotted = f"{float(mantissa)!r}e{exponent}"  # a dot and a signed exponent: a float in YAML 1.1
    plain = f"{int(number)}" if number.is_integer() and abs(number) < 1e16 else None
    return f" (YAML 1.1 reads {value.strip()} as text; write {f'{plain} or ' if plain else ''}{dotted})"


def validation_error(src: str, exc: ValidationError, model: type[BaseModel], data: Any,
                     first: Sequence[tuple[str | None, str]] | None = None, first_unlisted: int = 0) -> ConfigError:
    """Turn pydantic's errors into one ConfigError: one problem per key path, unknown keys first.

    ``first`` (and ``first_unlisted`` more): problems found before pydantic ran, listed ahead. Only as
    many problems as are shown are described (describing is the costly part); the rest are counted.
    """
    shown = list(first or [])
    errors = exc.errors(include_url=False)
    ordered = [e for e in errors if e["type"] == "extra_forbidden"] + [e for e in errors
                                                                        if e["type"] != "extra_forbidden"]
    seen = set(shown)
    tags = union_tags(model)
    unlisted: set[tuple[Any, ...]] = set()
    for err in ordered:
        if len(shown) >= MAX_PROBLEMS_SHOWN:
            unlisted.add((tuple(map(str, err["loc"])), err["type"]))
            continue
        loc, msg = _describe(err, model)
        item = (key_path(loc, data, tags), msg)
        if item not in seen and not any(key == item[0] for key, _ in first or []):
            seen.add(item)
            shown.append(item)
    return ConfigError.many(src, shown, first_unlisted + len(unlisted))


def quirks(data: Any, skip: frozenset[str] = frozenset({"sparsity"})) -> list[tuple[tuple[Any, ...], str]]:
    """(location, problem) of every number YAML 1.1 read from a surprising form (base 60, octal, ``_``).

    Values under a key in ``skip`` are left to their own validators (an unquoted ``2:4`` pattern).
    """
    found: list[tuple[tuple[Any, ...], str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    plain = _PLAIN_LEAVES  # values of exactly these types hold no quirk: not visited (the order of the rest holds)
    while stack:
        loc, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed([((*loc, k), v) for k, v in node.items() if k not in skip and type(v) not in plain]))
        elif isinstance(node, list):
            stack.extend(reversed([((*loc, i), v) for i, v in enumerate(node) if type(v) not in plain]))
        elif (problem := yamlload.quirk(node)) is not None:
            found.append((loc, problem))
    return found


_PLAIN_LEAVES = frozenset({str, int, float, bool, type(None)})  # exact types: YAML 1.1's marked numbers subclass them


def validate(model: type[ModelT], data: Any, src: str) -> ModelT:
    """Validate plain data against ``model`` or raise a ConfigError listing its problems (one per line)."""
    odd = quirks(data)
    listed: list[tuple[str | None, str]] = [(key_path(loc, data), problem) for loc, problem in odd[:MAX_PROBLEMS_SHOWN]]
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(src, exc, model, data, listed, len(odd) - len(listed)) from None
    if odd:
        raise ConfigError.many(src, listed, len(odd) - len(listed))
    return result


def canonical_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj`` (sorted keys), first 16 hex digits."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
