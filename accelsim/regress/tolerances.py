"""Regression tolerances: per-metric rtol/atol and ignore patterns, validated by pydantic like the configs.

A tolerance file (YAML)::

    default_rtol: 1.0e-9          # every metric, unless an entry below says otherwise
    default_atol: 0
    metrics:                      # exact metric name or glob pattern -> {rtol, atol} (or a bare rtol)
      cycles.total: {rtol: 0.01}
      "bytes.*": 0.05
    ignore: ["tiling.*"]          # metrics never compared
    ignore_layers: ["scratch*"]   # layers never compared (by name)

A number moves within tolerance when ``|candidate - baseline| <= max(atol, rtol * |baseline|)``.
A name or pattern also covers the model totals' metric of the same name: ``cycles.total`` sets
``totals.cycles.total`` too, ``"energy.*"`` the ``totals.energy.*`` sums (unless ``totals.cycles.total``
has an entry of its own); likewise in ``ignore``.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from accelsim.config.schema import FieldError, read_yaml, validation_error
from accelsim.errors import ConfigError

DEFAULT_RTOL = 1e-9
DEFAULT_ATOL = 0.0
KEYS = ("default_rtol", "default_atol", "metrics", "ignore", "ignore_layers")


def _non_negative(value: Any) -> float:
    """A finite number >= 0; a numeric string counts (YAML 1.1 reads ``1e-9``, without a dot, as text)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{value!r} is not a non-negative number")
    return float(value)


def _as_number(value: Any) -> Any:
    """A numeric string as its float (so messages show the number, as they always have); anything else as is."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def _patterns(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of metric names or glob patterns, e.g. ['tiling.*']")
    return tuple(value)


NonNegative = Annotated[float, BeforeValidator(_non_negative)]
Patterns = Annotated[tuple[str, ...], BeforeValidator(_patterns)]


class Tolerance(BaseModel):
    """How far one metric may move: ``|candidate - baseline| <= max(atol, rtol * |baseline|)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rtol: NonNegative
    atol: NonNegative


class Tolerances(BaseModel):
    """Per-metric tolerances and ignore patterns (glob patterns, :mod:`fnmatch`).

    A metric's tolerance: the ``metrics`` entry whose key equals the metric name, else the first
    ``metrics`` pattern (in file order) that matches it, else the defaults; a field an entry leaves
    out takes the file's default. ``ignore`` drops metrics, ``ignore_layers`` drops whole layers (by
    name). Layer metrics are named within the layer (``cycles.total``); run-level ones carry their
    section (``totals.cycles.total``, ``hardware.dram.bandwidth_gb_s``). A key or pattern that names a
    layer metric also applies to the totals' metric of the same name (``totals.`` removed), after any
    key or pattern that names the totals' metric itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_rtol: NonNegative = DEFAULT_RTOL
    default_atol: NonNegative = DEFAULT_ATOL
    metrics: dict[str, Tolerance] = Field(default_factory=dict)
    ignore: Patterns = ()
    ignore_layers: Patterns = ()

    _source: str = PrivateAttr("<defaults>")
    _cache: dict[str, Tolerance | None] = PrivateAttr(default_factory=dict)
    _default: Tolerance | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        """Unknown keys, the defaults, then the shape of ``metrics``: each entry gets both fields."""
        if data is None:
            return {}
        if not isinstance(data, dict):
            return data  # pydantic: expected a mapping of keys
        for key in data:
            if key not in KEYS:
                near = difflib.get_close_matches(str(key), KEYS, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f"; expected one of {', '.join(KEYS)}"
                raise FieldError((str(key),), f"unknown key{hint}")
        defaults = {}
        for key, fallback in (("rtol", DEFAULT_RTOL), ("atol", DEFAULT_ATOL)):
            try:
                defaults[key] = _non_negative(data.get(f"default_{key}", fallback))
            except ValueError as exc:
                raise FieldError((f"default_{key}",), str(exc)) from None
        raw = data.get("metrics") or {}
        if not isinstance(raw, dict):
            raise FieldError(("metrics",), "must be a mapping of metric name or pattern to {rtol, atol}")
        metrics: dict[str, dict[str, Any]] = {}
        for name, entry in raw.items():
            if isinstance(entry, int | float) and not isinstance(entry, bool):
                entry = {"rtol": entry}
            if not isinstance(entry, dict) or not entry:
                raise FieldError(("metrics", str(name)), "must be a mapping with rtol and/or atol, e.g. {rtol: 0.01}")
            for k in entry:
                if k not in ("rtol", "atol"):
                    raise FieldError(("metrics", str(name), str(k)), "unknown key; expected rtol or atol")
            metrics[str(name)] = {k: _as_number(entry.get(k, defaults[k])) for k in ("rtol", "atol")}
        return {**data, "metrics": metrics}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, source: str = "<tolerances>") -> Tolerances:
        """Validate tolerances given as plain data; errors are one ConfigError naming ``source`` and the key."""
        if data is not None and not isinstance(data, dict):
            raise ConfigError(source, None, "top level must be a mapping of keys")
        try:
            tol = cls.model_validate(data or {})
        except ValidationError as exc:
            first = validation_error(source, exc, cls, data)  # the first problem only, as always
            raise ConfigError(source, first.key, first.problem) from None
        tol._source = source
        return tol

    @classmethod
    def load(cls, path: str | Path) -> Tolerances:
        """Read a tolerance YAML (``safe_load``); errors name the file and the key."""
        data, _ = read_yaml(path)
        return cls.from_dict(data, str(path))

    @property
    def source(self) -> str:
        """Where the tolerances came from: a file, ``<tolerances>`` (a dict) or ``<defaults>``."""
        return self._source

    def for_metric(self, metric: str) -> Tolerance | None:
        """The tolerance of ``metric``, or None when it is ignored."""
        try:
            return self._cache[metric]
        except KeyError:
            pass
        tol: Tolerance | None
        # the name itself, then (a model total) the layer metric of the same name: totals.cycles.total -> cycles.total
        names = (metric, metric.removeprefix("totals.")) if metric.startswith("totals.") else (metric,)
        if any(name == pat or fnmatch.fnmatchcase(name, pat) for name in names for pat in self.ignore):
            tol = None
        else:
            tol = None
            for name in names:  # its own key, else the first pattern matching it (in file order)
                tol = self.metrics.get(name) or next((t for pat, t in self.metrics.items()
                                                      if fnmatch.fnmatchcase(name, pat)), None)
                if tol is not None:
                    break
            if tol is None:
                if self._default is None:
                    self._default = Tolerance(rtol=self.default_rtol, atol=self.default_atol)
                tol = self._default
        self._cache[metric] = tol
        return tol

    def layer_ignored(self, name: str) -> bool:
        """Whether the layer ``name`` matches an ``ignore_layers`` pattern."""
        return any(name == pat or fnmatch.fnmatchcase(name, pat) for pat in self.ignore_layers)

    def to_dict(self) -> dict[str, Any]:
        """The tolerances as plain data (every metric entry with both fields)."""
        return {"default_rtol": self.default_rtol, "default_atol": self.default_atol,
                "metrics": {k: {"rtol": v.rtol, "atol": v.atol} for k, v in self.metrics.items()},
                "ignore": list(self.ignore), "ignore_layers": list(self.ignore_layers)}


def as_tolerances(tolerances: Tolerances | dict[str, Any] | str | Path | None) -> Tolerances:
    """Tolerances from a model, plain data, a YAML file, or None (the defaults)."""
    if tolerances is None:
        return Tolerances()
    if isinstance(tolerances, Tolerances):
        return tolerances
    if isinstance(tolerances, dict):
        return Tolerances.from_dict(tolerances)
    return Tolerances.load(tolerances)
