"""The sweep spec as written: one pydantic model that validates it and is its JSON schema.

:class:`SweepSpecModel` checks each key of a spec on its own (shapes, patterns, distributions) and
holds the normalised values; ``accelsim schema sweep`` prints its JSON schema, which describes what
a user may write (a single pattern or a list, say). Reading the files a spec names, and building its
points, is :mod:`accelsim.sweep.spec`'s work.

Errors keep the order in which a spec is read: :class:`SpecShape` ranks the model's problems by
key (:data:`STAGES`), so that :func:`accelsim.sweep.spec.spec_from_dict` reports, of several
problems, the same first one whether it is found in the spec itself or in a file it names.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from accelsim.errors import ConfigError
from accelsim.formats import normalize_format
from accelsim.lowering import POLICIES as RUN_POLICIES
from accelsim.sweep.columns import PLAN
from accelsim.sweep.sampling import Draw
from accelsim.textsafe import short_repr

DISTRIBUTIONS = ("choice", "uniform", "log_uniform", "int_uniform")
# The order in which a spec's keys are checked (with the files they name read in between, see
# spec_from_dict): of several problems, the first in this order is the one reported.
STAGES = ("top", "name", "hardware-missing", "workloads-missing", "hardware", "set", "workloads", "sparsity",
          "policy", "grid", "random", "chunk_size", "cost", "description")
_MISSING = {"name": ("name", "required: a short name for the sweep"),
            "hardware": ("hardware-missing", "required key is missing (a base hardware config file)"),
            "workloads": ("workloads-missing", "required key is missing (a list of workload files)")}

Number = int | float
Distribution = dict[Literal["choice", "uniform", "log_uniform", "int_uniform"], list[Any]]
KindOf = Callable[[str], str | None]  # dotted hardware path -> 'int' | 'float' | 'other' | None


class SpecProblem(ValueError):
    """A problem with one key of a spec: the dotted key, the message, and its place among the key's items."""

    def __init__(self, key: str | None, message: str, index: int = 0) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.index = index  # e.g. workloads[3]: reported after the files of workloads[0..2] are read


@dataclass(frozen=True)
class RandomSpec:
    """The random section: n samples from a seeded stream, each drawing every distribution in order."""

    n: int
    seed: int
    draws: tuple[Draw, ...]

    def as_dict(self) -> dict[str, Any]:
        """As written in meta.json: n, seed, then {path: {distribution: argument}}."""
        return {"n": self.n, "seed": self.seed, **{d.path: {d.name: d.arg} for d in self.draws}}


def _short(value: Any) -> str:
    return short_repr(value, 60)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _count(value: Any) -> TypeGuard[int]:
    """An integer that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_path(path: Any, key: str) -> str:
    """A dotted path into the hardware config (blank keys refused); ``key`` names it in errors."""
    if not isinstance(path, str) or not path.strip():
        raise SpecProblem(key, f"expected a dotted path into the hardware config, got {path!r}")
    if any(not k for k in path.strip().split(".")):
        raise SpecProblem(key, f"empty key in dotted path {path!r}")
    return path.strip()


def check_distribution(path: str, dist: Any, kind: str | None) -> tuple[str, list[Any]]:
    """(name, argument) of one random distribution; integer fields need an integer in range."""
    key = f"random.{path}"
    if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
        raise SpecProblem(key, "expected one distribution: {choice: [...]}, {uniform: [a, b]}, "
                          f"{{log_uniform: [a, b]}} or {{int_uniform: [a, b]}}, got {_short(dist)}")
    name, arg = next(iter(dist.items()))
    if name == "choice":
        if not isinstance(arg, list) or not arg:
            raise SpecProblem(f"{key}.choice", "expected a non-empty list of values")
        return name, list(arg)
    if not isinstance(arg, list) or len(arg) != 2 or not all(_number(v) for v in arg):
        raise SpecProblem(f"{key}.{name}", f"expected [low, high] numbers, got {_short(arg)}")
    lo, hi = arg
    if lo > hi:
        raise SpecProblem(f"{key}.{name}", f"low {lo} is above high {hi}")
    if name == "log_uniform" and lo <= 0:
        raise SpecProblem(f"{key}.{name}", f"log_uniform needs low > 0, got {lo}")
    if name == "int_uniform" and not all(isinstance(v, int) for v in arg):
        raise SpecProblem(f"{key}.{name}", f"int_uniform needs integer bounds, got {arg}")
    if kind == "other":
        raise SpecProblem(key, f"{name} draws numbers, but {path} is not a number field (use choice)")
    if kind == "int" and math.ceil(lo) > math.floor(hi):
        raise SpecProblem(f"{key}.{name}", f"{path} is an integer field and [{lo}, {hi}] holds no integer")
    return name, [lo, hi]


# -- one check per key: each raises SpecProblem at the first problem, or returns the normalised value ------

def check_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecProblem("name", "required: a short name for the sweep")
    return value.strip()


def check_description(value: Any) -> str | None:
    return value if isinstance(value, str) else None  # free text; anything else is ignored


def check_hardware(value: Any) -> str | dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str) or not value.strip():
        raise SpecProblem("hardware", f"expected a file path, got {_short(value)}")
    return value


def check_workloads(value: Any) -> list[str]:
    items = _as_list(value)
    if not items:
        raise SpecProblem("workloads", "expected at least one workload file")
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise SpecProblem(f"workloads[{i}]", f"expected a file path, got {_short(item)}", index=i)
    return items


def check_set(value: Any) -> dict[str, list[Number]]:
    value = value or {}
    if not isinstance(value, dict):
        raise SpecProblem("set", "expected a mapping of workload parameters to lists of values")
    sets: dict[str, list[Number]] = {}
    for key, values in value.items():
        vals = _as_list(values)
        if not vals:
            raise SpecProblem(f"set.{key}", "expected a non-empty list of values")
        for v in vals:
            if not _number(v) or v <= 0:
                raise SpecProblem(f"set.{key}", f"expected positive numbers, got {_short(v)}")
        if len(set(vals)) != len(vals):
            raise SpecProblem(f"set.{key}", f"a value is listed twice: {vals}")
        sets[str(key)] = vals
    return sets


def check_sparsity(value: Any) -> list[str | None]:
    sparsity: list[str | None] = []
    for i, item in enumerate(_as_list(value)):
        if item is None or item == PLAN:
            norm = None
        else:
            try:
                norm = normalize_format(item)
            except ValueError as exc:
                raise SpecProblem(f"sparsity[{i}]", str(exc)) from None
        if norm in sparsity:
            raise SpecProblem(f"sparsity[{i}]", f"{norm or PLAN!r} is listed twice")
        sparsity.append(norm)
    if not sparsity:
        raise SpecProblem("sparsity", "expected at least one of dense, N:M or plan")
    return sparsity


def check_policy(value: Any) -> str:
    if value not in RUN_POLICIES:
        raise SpecProblem("policy", f"expected one of {', '.join(RUN_POLICIES)}, got {value!r}")
    return str(value)


def check_grid(value: Any) -> dict[str, list[Any]]:
    value = value or {}
    if not isinstance(value, dict):
        raise SpecProblem("grid", "expected a mapping of dotted hardware paths to lists of values")
    grid: dict[str, list[Any]] = {}
    for path, values in value.items():
        check_path(path, f"grid.{path}")
        if not isinstance(values, list) or not values:
            raise SpecProblem(f"grid.{path}", f"expected a non-empty list of values, got {_short(values)}")
        grid[str(path).strip()] = values
    return grid


def check_random(value: Any, kind_of: KindOf | None) -> RandomSpec | None:
    """The random section; ``kind_of`` (from the base hardware) says which paths are integer fields."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecProblem("random", "expected a mapping: n, seed and dotted paths to distributions")
    n = value.get("n")
    if not _count(n) or n < 0:
        raise SpecProblem("random.n", f"expected a number of samples (integer >= 0), got {n!r}")
    seed = value.get("seed", 0)
    if not _count(seed) or seed < 0:
        raise SpecProblem("random.seed", f"expected an integer >= 0, got {seed!r}")
    draws = []
    for raw, dist in value.items():
        if raw in ("n", "seed"):
            continue
        path = check_path(raw, f"random.{raw}")
        kind = kind_of(path) if kind_of is not None else None
        name, arg = check_distribution(path, dist, kind)
        draws.append(Draw(path, name, arg, kind))
    if not draws:
        raise SpecProblem("random", "list at least one dotted path with a distribution")
    return RandomSpec(n, seed, tuple(draws))


def check_chunk_size(value: Any) -> int | None:
    if value is not None and (not _count(value) or value < 1):
        raise SpecProblem("chunk_size", f"expected a positive integer (points per chunk), got {value!r}")
    return value


def check_cost(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SpecProblem("cost", "expected an expression of result columns, e.g. "
                          "\"peak_macs_per_cycle * sram_bytes\"")
    return value.strip()


class SweepSpecModel(BaseModel):
    """A sweep spec (sweeps/*.yaml): one base hardware config, workloads, and the points to run.

    ``accelsim validate`` and ``accelsim sweep`` also read the files it names and validate every point.
    """

    # The validated values are normalised: lists where one value may be written, patterns in canonical
    # form (None = the workload's own plan), dotted paths stripped, random draws parsed. Which random
    # paths are integer fields is known with a validation context {"field_kind": KindOf} only.
    model_config = ConfigDict(extra="forbid", frozen=True, title="SweepSpec")

    name: str = Field(min_length=1, description="Short name of the sweep (results folder, plots).")
    description: str | None = Field(None, description="Free text.")
    hardware: str | dict[str, Any] = Field(description="Base hardware config: a file (relative to the current "
                                           "directory, the spec's folder or its parent) or an inline config.")
    workloads: list[str] = Field(description="Workload files, each run at every point.")
    set: dict[str, list[Number]] = Field(default_factory=dict, description="Workload parameters and "
                                         "their values (product); each applies to the workloads that "
                                         "declare it.")
    sparsity: list[str | None] = Field(["plan"], validate_default=True, description="Patterns run at every "
                                       "point: dense, N:M, or plan (the workload's own plan).")
    policy: Literal["sparse-if-supported", "fastest"] = "sparse-if-supported"
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="Dotted hardware paths to lists of "
                                       "values; the grid is their product.")
    random: RandomSpec | None = Field(None, title="Random", description="n (samples), seed, and dotted "
                                      "hardware paths to one distribution each: {choice: [...]}, {uniform: "
                                      "[a, b]}, {log_uniform: [a, b]} or {int_uniform: [a, b]}; unioned with "
                                      "the grid.")
    chunk_size: int | None = Field(None, ge=1, description="Points per result chunk (default: automatic).")
    cost: str | None = Field(None, description="Cost expression over result columns for the Pareto plot.")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise SpecProblem(None, f"top level must be a mapping of keys, got {type(data).__name__}")
        for key in data:
            if key not in SPEC_KEYS:
                hint = difflib.get_close_matches(str(key), SPEC_KEYS, n=1)
                raise SpecProblem(str(key), "unknown key" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                                  + f"; allowed: {', '.join(SPEC_KEYS)}")
        return data

    # Wrap validators that never call pydantic's own: each key's messages are the spec's own words.
    # json_schema_input_type keeps the schema describing what may be written.
    @field_validator("name", mode="wrap")
    @classmethod
    def _name(cls, value: Any, handler: Any) -> str:
        return check_name(value)

    @field_validator("description", mode="wrap")
    @classmethod
    def _description(cls, value: Any, handler: Any) -> str | None:
        return check_description(value)

    @field_validator("hardware", mode="wrap")
    @classmethod
    def _hardware(cls, value: Any, handler: Any) -> str | dict[str, Any]:
        return check_hardware(value)

    @field_validator("workloads", mode="wrap", json_schema_input_type=str | list[str])
    @classmethod
    def _workloads(cls, value: Any, handler: Any) -> list[str]:
        return check_workloads(value)

    @field_validator("set", mode="wrap", json_schema_input_type=dict[str, Number | list[Number]])
    @classmethod
    def _set(cls, value: Any, handler: Any) -> dict[str, list[Number]]:
        return check_set(value)

    @field_validator("sparsity", mode="wrap", json_schema_input_type=str | None | list[str | None])
    @classmethod
    def _sparsity(cls, value: Any, handler: Any) -> list[str | None]:
        return check_sparsity(value)

    @field_validator("policy", mode="wrap")
    @classmethod
    def _policy(cls, value: Any, handler: Any) -> str:
        return check_policy(value)

    @field_validator("grid", mode="wrap")
    @classmethod
    def _grid(cls, value: Any, handler: Any) -> dict[str, list[Any]]:
        return check_grid(value)

    @field_validator("random", mode="wrap", json_schema_input_type=dict[str, int | Distribution] | None)
    @classmethod
    def _random(cls, value: Any, handler: Any, info: ValidationInfo) -> RandomSpec | None:
        context = info.context if isinstance(info.context, dict) else {}
        return check_random(value, context.get("field_kind"))

    @field_serializer("random")
    def _random_as_written(self, value: RandomSpec | None) -> dict[str, Any] | None:
        return value.as_dict() if value is not None else None  # model_dump() gives a spec that validates again

    @field_validator("chunk_size", mode="wrap")
    @classmethod
    def _chunk_size(cls, value: Any, handler: Any) -> int | None:
        return check_chunk_size(value)

    @field_validator("cost", mode="wrap")
    @classmethod
    def _cost(cls, value: Any, handler: Any) -> str | None:
        return check_cost(value)


SPEC_KEYS = tuple(SweepSpecModel.model_fields)
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "name": check_name, "description": check_description, "hardware": check_hardware, "workloads": check_workloads,
    "set": check_set, "sparsity": check_sparsity, "policy": check_policy, "grid": check_grid,
    "chunk_size": check_chunk_size, "cost": check_cost}


class SpecShape:
    """A spec checked against :class:`SweepSpecModel`, its problems ranked by :data:`STAGES`.

    :meth:`value` gives one key's validated value once no problem ranked up to that key remains
    (and raises the first such problem as a ConfigError); :meth:`raise_through` only raises.
    """

    def __init__(self, data: dict[str, Any], source: str, kind_of: KindOf | None = None) -> None:
        self.data = data
        self.source = source
        self.kind_of = kind_of
        self.model: SweepSpecModel | None = None
        self.problems: list[tuple[tuple[int, int], str | None, str]] = []  # (rank, key, message)
        try:
            self.model = SweepSpecModel.model_validate(data, context={"field_kind": kind_of})
        except ValidationError as exc:
            self.problems = sorted((_problem(err) for err in exc.errors(include_url=False)), key=lambda p: p[0])

    def raise_through(self, stage: str, index: float = math.inf) -> None:
        """Raise the first problem ranked at or before ``stage`` (and, within it, ``index``)."""
        if self.problems:
            (rank, sub), key, message = self.problems[0]
            if (rank, sub) <= (STAGES.index(stage), index):
                raise ConfigError(self.source, key, message)

    def value(self, name: str) -> Any:
        """The validated value of key ``name``, after raising any problem reported before it."""
        self.raise_through(name)
        if self.model is not None:
            return getattr(self.model, name)
        raw = self.data[name] if name in self.data else \
            SweepSpecModel.model_fields[name].get_default(call_default_factory=True)
        return check_random(raw, self.kind_of) if name == "random" else _CHECKS[name](raw)


def _problem(err: Any) -> tuple[tuple[int, int], str | None, str]:
    """(rank, key, message) of one pydantic error of SweepSpecModel."""
    loc = tuple(err["loc"])
    field = str(loc[0]) if loc else "top"
    exc = (err.get("ctx") or {}).get("error")
    if isinstance(exc, SpecProblem):
        return (STAGES.index(field), exc.index), exc.key, exc.message
    if err["type"] == "missing" and field in _MISSING:
        stage, message = _MISSING[field]
        return (STAGES.index(stage), 0), field, message
    return (STAGES.index(field) if field in STAGES else 0, 0), ".".join(map(str, loc)) or None, err["msg"]
