"""Regression of simulator outputs: compare result files (or directories of them), bless baselines.

Library code: nothing here prints or exits. The CLI (``accelsim regress``) calls
:func:`regress_command`, which returns ``(exit code, text)``: 0 within tolerance, 1 drift (a metric
beyond tolerance, a changed string, or a layer / file / metric present on one side only), 2 error
(unreadable input, not a result, schema mismatch, bad tolerances).

What is compared: every layer (matched by name) metric by metric, flattened to dotted keys
(``cycles.total``, ``bytes.dram.a_values``, ``utilization``, ``path``, ``binding``, ``padding.k[0]``),
and every run-level section under its own prefix (``totals.cycles.total``, ``hardware.dram.bandwidth_gb_s``,
``workload.layers[g1024].m``, ``by_op_type[gemm/sparse].cycles``, ``footprint.*``, ``warnings[0]``,
``sparsity``, ``policy``). ``meta`` is never compared. Numbers move within tolerance when
``|candidate - baseline| <= max(atol, rtol * |baseline|)``; any other value (string, bool, null, or a
number turning into one of those) that changes is drift regardless of tolerance.

Baselines ("goldens") are result *bodies*: the result JSON without ``meta``, keys sorted, indented by
2, with a trailing newline — no timestamps, versions, commits or paths, so a reviewer can read a
golden diff. :func:`bless` writes them from candidate results.
"""

from __future__ import annotations

import copy
import difflib
import fnmatch
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError, ConfigError
from accelsim.results import SCHEMA_VERSION

REPORT_FORMAT = "accelsim-regress/1"
REPORT_NAME = "regress.json"

# Sections of a result body that are compared run-wide (``layers`` is compared per layer).
# ``meta`` is machine- and time-specific and is never compared; ``schema_version`` is checked on load.
_NOT_COMPARED = ("meta", "schema_version", "layers")

DEFAULT_RTOL = 1e-9
DEFAULT_ATOL = 0.0

# Run-level sections that echo the inputs: drift there is the cause of the rest.
INPUT_SECTIONS = ("hardware", "workload", "sparsity", "policy")

# The model totals a drift report leads with.
HEADLINE_TOTALS = ("totals.cycles.total", "totals.latency_us")

# Layer label used for run-level rows (totals, hardware, workload, ...).
RUN_LEVEL = "(run)"


# ----------------------------------------------------------------------------------------------- errors

class ResultFileError(AccelsimError):
    """A result or baseline file cannot be used: unreadable, not JSON, or not an accelsim result."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class SchemaVersionError(ResultFileError):
    """A result's schema_version is newer than this accelsim's, or older without a migration."""


class RegressInputError(AccelsimError):
    """The two sides cannot be compared or blessed (e.g. a file against a directory)."""


# ----------------------------------------------------------------------------------------------- loading

# Migrations of result bodies between schema versions: MIGRATIONS[v] turns a version-v body into a
# version-(v + 1) body (a pure function on the dict, which it may modify and must return with
# "schema_version" set to v + 1). Only version 1 exists, so there are none yet. When SCHEMA_VERSION
# becomes 2, register MIGRATIONS[1] here (renamed/moved fields), or leave it out to refuse v1 files.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def migrate(data: dict[str, Any], source: str = "<result>") -> dict[str, Any]:
    """Bring a result of an older schema_version up to :data:`SCHEMA_VERSION`, or refuse it."""
    version = data["schema_version"]
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(source, f"schema_version {version} is newer than this accelsim's "
                                         f"{SCHEMA_VERSION}; upgrade accelsim to compare it")
    if version < SCHEMA_VERSION:
        data = copy.deepcopy(data)  # migrations edit in place; leave the caller's dict alone
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise SchemaVersionError(source, f"schema_version {version} is older than this accelsim's "
                                             f"{SCHEMA_VERSION} and has no migration; re-run the simulation "
                                             "or bless new baselines")
        data = step(data)
        if data.get("schema_version") != version + 1:  # pragma: no cover - a migration bug
            raise SchemaVersionError(source, f"migration from schema_version {version} did not produce "
                                             f"version {version + 1}")
        version += 1
    return data


def _check_result(data: Any, source: str) -> dict[str, Any]:
    """The decoded JSON is an accelsim result (or golden body): return it, else raise one clear line."""
    hint = "expected the output of 'accelsim run --format json' or a golden body"
    if not isinstance(data, dict):
        raise ResultFileError(source, f"not an accelsim result (top level is a JSON {_json_type(data)}); {hint}")
    version = data.get("schema_version")
    if version is None or "layers" not in data:
        missing = " and ".join(k for k in ("schema_version", "layers") if k not in data)
        raise ResultFileError(source, f"not an accelsim result (no {missing}); {hint}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ResultFileError(source, f"not an accelsim result (schema_version {version!r} is not a "
                                      "non-negative integer)")
    try:
        bad = _non_finite(data)
    except RecursionError:  # pragma: no cover - pathological nesting
        raise ResultFileError(source, "not an accelsim result (nested too deeply)") from None
    if bad is not None:
        path, value = bad
        raise ResultFileError(source, f"{path}: non-finite number {_json_text(value)}; accelsim results hold finite "
                                      "numbers only (a hand-edited or corrupted file?)")
    data = migrate(data, source)
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise ResultFileError(source, f"not an accelsim result ('layers' is a JSON {_json_type(layers)}, "
                                      "expected a list)")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict) or not isinstance(layer.get("name"), str):
            raise ResultFileError(source, f"not an accelsim result (layers[{i}] has no 'name')")
    return data


def _non_finite(value: Any, path: str = "") -> tuple[str, float] | None:
    """The key path and value of the first NaN or infinity in a decoded JSON value, else None.

    Python's json module reads ``NaN``, ``Infinity`` and overflowing literals such as ``1e999``; a
    baseline holding one would pass any candidate (every comparison with NaN or inf is False), so
    results must be finite. Paths label layers by name, like the report's rows.
    """
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "(top level)", value)
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(value, list):
        label = _list_key(value)
        for i, v in enumerate(value):
            found = _non_finite(v, f"{path}[{label(i, v) if label else i}]")
            if found:
                return found
    return None


def _json_text(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result JSON (``accelsim run --format json``, with ``meta``) or a golden body (without).

    Returns the decoded dict, migrated to the current schema. Raises :class:`ResultFileError` (or its
    subclass :class:`SchemaVersionError`) with one line naming the file and the problem.
    """
    src = str(path)
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ResultFileError(src, "no such file") from None
    except IsADirectoryError:
        raise ResultFileError(src, "is a directory, expected a result JSON file") from None
    except OSError as exc:
        raise ResultFileError(src, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(src, "not JSON (not UTF-8 text)") from None
    if not text.strip():
        raise ResultFileError(src, "not JSON (the file is empty)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        tail = text.rstrip()
        hint = " (truncated?)" if exc.pos >= len(tail) - 64 or not tail.endswith(("}", "]")) else ""
        raise ResultFileError(src, f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}{hint}") from None
    except RecursionError:  # pragma: no cover - pathological nesting
        raise ResultFileError(src, "not JSON (nested too deeply)") from None
    return _check_result(data, src)


def golden_body(result: Any) -> dict[str, Any]:
    """The body to store as a golden: the result without ``meta``.

    ``result`` is a :class:`~accelsim.results.RunResult` or a result dict (as loaded from JSON).
    ``RunResult.body()`` holds nothing machine-specific (no paths, versions, commits or times: those
    live in ``meta``), so this is the body itself.
    """
    if hasattr(result, "body") and callable(result.body):
        return result.body()
    if not isinstance(result, dict):
        raise TypeError(f"golden_body() takes a RunResult or a result dict, not {type(result).__name__}")
    return {k: v for k, v in result.items() if k != "meta"}


def golden_text(body: dict[str, Any]) -> str:
    """Canonical text of a golden body: valid JSON, keys sorted, one top-level key per line and one
    layer / op-type group per line, so a golden diff shows exactly which layer moved."""
    def one(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"]
    keys = sorted(body)
    for i, key in enumerate(keys):
        value = body[key]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"  {json.dumps(key)}: [")
            lines.extend(f"    {one(v)}{',' if j < len(value) - 1 else ''}" for j, v in enumerate(value))
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------- tolerances

@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass
class Tolerances:
    """Per-metric tolerances and ignore patterns (glob patterns, :mod:`fnmatch`).

    A metric's tolerance: the ``metrics`` entry whose key equals the metric name, else the first
    ``metrics`` pattern (in file order) that matches it, else the defaults; a field an entry leaves
    out takes the default. ``ignore`` drops metrics, ``ignore_layers`` drops whole layers (by name).
    Layer metrics are named within the layer (``cycles.total``); run-level ones carry their section
    (``totals.cycles.total``, ``hardware.dram.bandwidth_gb_s``).
    """

    default_rtol: float = DEFAULT_RTOL
    default_atol: float = DEFAULT_ATOL
    metrics: dict[str, Tolerance] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    ignore_layers: list[str] = field(default_factory=list)
    source: str = "<defaults>"
    _cache: dict[str, Tolerance | None] = field(default_factory=dict, repr=False, compare=False)

    KEYS = ("default_rtol", "default_atol", "metrics", "ignore", "ignore_layers")

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, source: str = "<tolerances>") -> Tolerances:
        data = data or {}
        if not isinstance(data, dict):
            raise ConfigError(source, None, "top level must be a mapping of keys")
        for key in data:
            if key not in cls.KEYS:
                near = difflib.get_close_matches(str(key), cls.KEYS, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f"; expected one of {', '.join(cls.KEYS)}"
                raise ConfigError(source, str(key), f"unknown key{hint}")
        rtol = _tol_number(data.get("default_rtol", DEFAULT_RTOL), source, "default_rtol")
        atol = _tol_number(data.get("default_atol", DEFAULT_ATOL), source, "default_atol")
        metrics: dict[str, Tolerance] = {}
        raw_metrics = data.get("metrics") or {}
        if not isinstance(raw_metrics, dict):
            raise ConfigError(source, "metrics", "must be a mapping of metric name or pattern to {rtol, atol}")
        for name, entry in raw_metrics.items():
            where = f"metrics.{name}"
            if isinstance(entry, int | float) and not isinstance(entry, bool):
                entry = {"rtol": entry}
            if not isinstance(entry, dict) or not entry:
                raise ConfigError(source, where, "must be a mapping with rtol and/or atol, e.g. {rtol: 0.01}")
            for k in entry:
                if k not in ("rtol", "atol"):
                    raise ConfigError(source, f"{where}.{k}", "unknown key; expected rtol or atol")
            metrics[str(name)] = Tolerance(_tol_number(entry.get("rtol", rtol), source, f"{where}.rtol"),
                                           _tol_number(entry.get("atol", atol), source, f"{where}.atol"))
        return cls(default_rtol=rtol, default_atol=atol, metrics=metrics,
                   ignore=_patterns(data.get("ignore"), source, "ignore"),
                   ignore_layers=_patterns(data.get("ignore_layers"), source, "ignore_layers"), source=source)

    @classmethod
    def load(cls, path: str | Path) -> Tolerances:
        """Read a tolerance YAML (``safe_load``); errors name the file and the key."""
        from accelsim.config.schema import read_yaml

        data, _ = read_yaml(path)
        return cls.from_dict(data, str(path))

    def for_metric(self, metric: str) -> Tolerance | None:
        """The tolerance of ``metric``, or None when it is ignored."""
        try:
            return self._cache[metric]
        except KeyError:
            pass
        tol: Tolerance | None
        if any(metric == pat or fnmatch.fnmatchcase(metric, pat) for pat in self.ignore):
            tol = None
        elif metric in self.metrics:
            tol = self.metrics[metric]
        else:
            tol = next((t for pat, t in self.metrics.items() if fnmatch.fnmatchcase(metric, pat)),
                       Tolerance(self.default_rtol, self.default_atol))
        self._cache[metric] = tol
        return tol

    def layer_ignored(self, name: str) -> bool:
        return any(name == pat or fnmatch.fnmatchcase(name, pat) for pat in self.ignore_layers)

    def to_dict(self) -> dict[str, Any]:
        return {"default_rtol": self.default_rtol, "default_atol": self.default_atol,
                "metrics": {k: asdict(v) for k, v in self.metrics.items()}, "ignore": list(self.ignore),
                "ignore_layers": list(self.ignore_layers)}


def _tol_number(value: Any, source: str, key: str) -> float:
    if isinstance(value, str):  # YAML 1.1 reads "1e-9" (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(source, key, f"{value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(source, key, f"{value!r} is not a non-negative number")
    return float(value)


def _patterns(value: Any, source: str, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(source, key, "must be a list of metric names or glob patterns, e.g. ['tiling.*']")
    return list(value)


def as_tolerances(tolerances: Tolerances | dict[str, Any] | str | Path | None) -> Tolerances:
    if tolerances is None:
        return Tolerances()
    if isinstance(tolerances, Tolerances):
        return tolerances
    if isinstance(tolerances, dict):
        return Tolerances.from_dict(tolerances)
    return Tolerances.load(tolerances)


# ----------------------------------------------------------------------------------------------- flattening

def _list_key(items: list[Any]) -> Callable[[int, Any], str] | None:
    """How to label the elements of a list of objects: by name, by (op, path), else by index."""
    if items and all(isinstance(x, dict) for x in items):
        names = [x.get("name") for x in items]
        if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return lambda _i, x: x["name"]
        pairs = [(x.get("op"), x.get("path")) for x in items]
        if all(isinstance(a, str) and isinstance(b, str) for a, b in pairs) and len(set(pairs)) == len(pairs):
            return lambda _i, x: f"{x['op']}/{x['path']}"
    return None


def flatten(obj: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaves of a JSON value as ``{dotted.key: value}``; list elements as ``[name]`` or ``[index]``."""
    if out is None:
        out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list):
        label = _list_key(obj)
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}[{label(i, v) if label else i}]", out)
    else:
        out[prefix] = obj
    return out


def _layers_by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
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


def _run_level(result: dict[str, Any]) -> dict[str, Any]:
    return flatten({k: v for k, v in result.items() if k not in _NOT_COMPARED})


# ----------------------------------------------------------------------------------------------- report

DRIFT = "drift"        # a number beyond tolerance
CHANGED = "changed"    # a string / bool / null value changed (drift regardless of tolerance)
ADDED = "added"        # the metric exists only in the candidate (drift)
REMOVED = "removed"    # the metric exists only in the baseline (drift)
WITHIN = "within"      # a number moved, within tolerance
DRIFT_STATUSES = (DRIFT, CHANGED, ADDED, REMOVED)


@dataclass
class Row:
    """One metric of one layer (or of the run) that moved."""

    file: str
    layer: str
    metric: str
    baseline: Any
    candidate: Any
    status: str
    abs_change: float | None = None
    rel_change: float | None = None   # |change| / |baseline|; None for non-numeric; inf from zero
    rtol: float | None = None
    atol: float | None = None
    share: float | None = None  # |change| / the model's total of the same kind (cycles, bytes, MACs, J)
    weight: float | None = None  # ranking weight: share, else relative change x the layer's share of time

    @property
    def is_drift(self) -> bool:
        return self.status in DRIFT_STATUSES

    @property
    def severity(self) -> float:
        """The ranking weight (inf from zero); -1 for a non-numeric change or a metric on one side only."""
        if self.rel_change is None:
            return -1.0
        return self.weight if self.weight is not None else self.rel_change

    @property
    def rank(self) -> tuple[int, int, float]:
        """Worst first: model totals beyond tolerance, then other numbers beyond tolerance, both by
        weight (their change as a share of the model's total of that kind, so a stall counter going
        from 132 to 5,086 cycles in one layer ranks by those 4,954 cycles against the model's
        total, not by its +3,753 %), then non-numeric changes and one-sided metrics, then numbers
        within tolerance. The model's total cycles and latency lead the totals."""
        if not self.is_drift:
            group = 3
        elif self.rel_change is None:
            group = 2
        else:
            group = 0 if self.layer == RUN_LEVEL and self.metric.startswith("totals.") else 1
        return group, 0 if group == 0 and self.metric in HEADLINE_TOTALS else 1, -self.severity

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rel_change"] = _json_number(self.rel_change)
        d["abs_change"] = _json_number(self.abs_change)
        d["share"] = _json_number(self.share)
        d["weight"] = _json_number(self.weight)
        d["baseline"] = _json_value(self.baseline)
        d["candidate"] = _json_value(self.candidate)
        return d


@dataclass
class OneSided:
    """A layer or a result file present on one side only (drift)."""

    kind: str   # "layer" or "file"
    file: str
    layer: str | None
    side: str   # "baseline" or "candidate": where it is present

    def describe(self) -> str:
        where = f"layer {self.layer!r} in {self.file or 'the result'}" if self.kind == "layer" else f"file {self.file}"
        return f"{where}: only in the {self.side}"


@dataclass
class Report:
    """The outcome of :func:`compare`. ``exit_code`` is 0 (within tolerance) or 1 (drift)."""

    baseline: str
    candidate: str
    rows: list[Row]
    one_sided: list[OneSided]
    counts: dict[str, int]
    tolerances: Tolerances
    single_file: bool = True

    @property
    def drift_rows(self) -> list[Row]:
        return [r for r in self.rows if r.is_drift]

    @property
    def has_drift(self) -> bool:
        return bool(self.one_sided) or any(r.is_drift for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 1 if self.has_drift else 0

    @property
    def status(self) -> str:
        return "drift" if self.has_drift else "ok"

    def by_metric(self) -> list[dict[str, Any]]:
        """Drift rows grouped by metric name: how many layers, the worst (heaviest) change, where.

        Groups come in the table's order: model totals first, then by their heaviest row's weight.
        """
        groups: dict[str, dict[str, Any]] = {}
        for r in self.rows:
            if not r.is_drift:
                continue
            g = groups.setdefault(r.metric, {"metric": r.metric, "rows": 0, "worst_rel_change": None,
                                             "worst_file": r.file, "worst_layer": r.layer, "_sev": (9, 9, 0.0)})
            g["rows"] += 1
            if r.rank < g["_sev"]:
                g["_sev"] = r.rank
                g["worst_rel_change"] = r.rel_change
                g["worst_file"], g["worst_layer"] = r.file, r.layer
        out = sorted(groups.values(), key=lambda g: (g["_sev"], -g["rows"], g["metric"]))
        for g in out:
            del g["_sev"]
        return out

    def input_rows(self) -> list[Row]:
        """Drift in the inputs echoed by the results (hardware, workload, sparsity, policy): the cause."""
        return [r for r in self.rows if r.is_drift and r.layer == RUN_LEVEL
                and r.metric.split(".", 1)[0].split("[", 1)[0] in INPUT_SECTIONS]

    def inputs_line(self) -> str:
        rows = self.input_rows()
        if not rows:
            return ""
        seen: list[str] = []
        for r in rows:
            text = f"{r.metric} {_fmt_value(r.baseline)} -> {_fmt_value(r.candidate)}"
            if text not in seen:
                seen.append(text)
        more = f", ... ({len(seen) - 5} more)" if len(seen) > 5 else ""
        return "inputs changed: " + ", ".join(seen[:5]) + more

    def summary_line(self) -> str:
        c = self.counts
        files = "" if self.single_file else f"{_plural(c['files'], 'file')}, "
        one = ""
        if self.one_sided:
            n_layers = sum(1 for o in self.one_sided if o.kind == "layer")
            n_files = len(self.one_sided) - n_layers
            one = f"; on one side only: {_plural(n_layers, 'layer')}, {_plural(n_files, 'file')}"
        return (f"{files}{_plural(c['layers'], 'layer')}, {_plural(c['metrics'], 'metric')} compared: "
                f"{c['drift']:,} drift, "
                f"{c['within']:,} within tolerance, {c['unchanged']:,} unchanged, {c['ignored']:,} ignored{one}")

    def headline(self) -> str:
        if not self.has_drift:
            return f"accelsim regress: OK, within tolerance (exit 0): {self.candidate} vs baseline {self.baseline}"
        return f"accelsim regress: DRIFT (exit 1): {self.candidate} vs baseline {self.baseline}"

    # -- renderings

    def _cells(self, r: Row) -> list[str]:
        cells = [r.status]
        if not self.single_file:
            cells.append(r.file)
        cells += [r.layer, r.metric, _fmt_value(r.baseline), _fmt_value(r.candidate), _fmt_change(r),
                  _fmt_rel(r), _fmt_share(r), _fmt_tol(r)]
        return cells

    def _head(self) -> list[str]:
        return ["status", *([] if self.single_file else ["file"]), "layer", "metric", "baseline", "candidate",
                "change", "rel", "of model", "tolerance"]

    def to_table(self, max_rows: int = 40, headline: str | None = None) -> str:
        """Readable text: headline, the moved metrics worst first, one-sided layers/files, counts."""
        lines = [headline or self.headline(), self.summary_line()]
        if self.inputs_line():
            lines.append(self.inputs_line())
        if self.rows:
            head = self._head()
            shown = self.rows[:max_rows]
            cells = [self._cells(r) for r in shown]
            widths = [max(len(row[i]) for row in [head, *cells]) for i in range(len(head))]
            right = {len(head) - 6, len(head) - 5, len(head) - 4, len(head) - 3, len(head) - 2}

            def line(row: list[str]) -> str:
                return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                                 for i, (v, w) in enumerate(zip(row, widths, strict=True))).rstrip()

            lines += ["", "moved (worst first)", line(head), "  ".join("-" * w for w in widths), *map(line, cells)]
            if len(self.rows) > max_rows:
                lines.append(f"... and {len(self.rows) - max_rows:,} more rows (all of them in regress.json)")
            groups = self.by_metric()
            if groups:
                lines += ["", "drift by metric"]
                for g in groups[:max_rows]:
                    where = g["worst_layer"] if self.single_file else f"{g['worst_file']}: {g['worst_layer']}"
                    lines.append(f"  {g['metric']}: {_plural(g['rows'], 'row')}, worst "
                                 f"{_fmt_rel_value(g['worst_rel_change'])} in {where}")
                if len(groups) > max_rows:
                    lines.append(f"  ... and {len(groups) - max_rows:,} more metrics")
        if self.one_sided:
            lines += ["", "present on one side only (drift)"]
            lines += [f"  {o.describe()}" for o in self.one_sided[:max_rows]]
            if len(self.one_sided) > max_rows:
                lines.append(f"  ... and {len(self.one_sided) - max_rows:,} more")
        return "\n".join(lines) + "\n"

    def to_markdown(self, max_rows: int = 100) -> str:
        """A pull-request comment: summary line, table of what moved, one-sided layers and files."""
        verdict = "✅ within tolerance" if not self.has_drift else "❌ drift"
        lines = [f"### accelsim regress: {verdict}", "",
                 f"Candidate `{self.candidate}` against baseline `{self.baseline}`: {self.summary_line()}.", ""]
        if self.inputs_line():
            lines += [f"**{_md_cell('I' + self.inputs_line()[1:])}** (the results were simulated from different "
                      "inputs).", ""]
        groups = self.by_metric()
        if groups:
            lines += ["**Drift by metric:** " + "; ".join(
                f"`{g['metric']}` {g['rows']:,}x (worst {_fmt_rel_value(g['worst_rel_change'])})"
                for g in groups[:20]) + (f"; … {len(groups) - 20} more" if len(groups) > 20 else ""), ""]
        if self.rows:
            head = self._head()
            lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if h in ("baseline", "candidate", "change",
                                                                                  "rel", "of model") else "---"
                                                                       for h in head) + "|"]
            for r in self.rows[:max_rows]:
                lines.append("| " + " | ".join(_md_cell(c, code=i in (1, 2) if self.single_file else i in (1, 2, 3))
                                               for i, c in enumerate(self._cells(r))) + " |")
            if len(self.rows) > max_rows:
                lines.append("")
                lines.append(f"… and {len(self.rows) - max_rows:,} more rows (see `regress.json`).")
            lines.append("")
        else:
            lines += ["No metric moved.", ""]
        if self.one_sided:
            lines += ["**Present on one side only:**", ""]
            for o in self.one_sided[:max_rows]:
                if o.kind == "layer":
                    where = f" in `{o.file}`" if o.file else ""
                    lines.append(f"- layer `{o.layer}`{where}: only in the {o.side}")
                else:
                    lines.append(f"- file `{o.file}`: only in the {o.side}")
            if len(self.one_sided) > max_rows:
                lines.append(f"- … and {len(self.one_sided) - max_rows:,} more")
            lines.append("")
        tol = self.tolerances
        lines.append(f"<sub>tolerances: {tol.source}; default rtol {tol.default_rtol:g}, atol {tol.default_atol:g}"
                     f"{'; ignored: ' + ', '.join(tol.ignore) if tol.ignore else ''}</sub>")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"format": REPORT_FORMAT, "status": self.status, "exit_code": self.exit_code,
                "baseline": self.baseline, "candidate": self.candidate, "counts": dict(self.counts),
                "tolerances": self.tolerances.to_dict(), "by_metric": [
                    {**g, "worst_rel_change": _json_number(g["worst_rel_change"])} for g in self.by_metric()],
                "rows": [r.to_dict() for r in self.rows], "one_sided": [asdict(o) for o in self.one_sided]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _json_number(v: float | None) -> float | str | None:
    if v is None:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
    return v


def _json_value(v: Any) -> Any:
    if v is _MISSING:
        return None  # the row's status (added / removed) says which side lacks it
    return _json_number(v) if isinstance(v, float) else v


def _fmt_value(v: Any) -> str:
    if v is _MISSING:
        return "(absent)"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1e6 else f"{v:.6g}"
    return str(v)


def _fmt_change(r: Row) -> str:
    if r.abs_change is None:
        return "-"
    delta = r.candidate - r.baseline
    if isinstance(delta, int):
        return f"{delta:+,}"
    return f"{delta:+.6g}"


def _fmt_rel_value(rel: float | None) -> str:
    if rel is None:
        return "value changed"
    if math.isinf(rel):
        return "inf"
    if rel >= 1:
        return f"{rel * 100:,.0f}%"
    return f"{rel * 100:.3g}%"


def _fmt_rel(r: Row) -> str:
    if r.rel_change is None:
        return "-"
    if math.isinf(r.rel_change):
        return "from 0" if r.baseline == 0 else "inf"
    sign = "+" if r.candidate >= r.baseline else "-"
    return sign + _fmt_rel_value(r.rel_change)


def _fmt_share(r: Row) -> str:
    if r.share is None:
        return "-"
    if math.isinf(r.share):
        return "inf"
    return f"{r.share * 100:.3g}%"


def _fmt_tol(r: Row) -> str:
    if r.rtol is None:
        return "exact"
    parts = [f"rtol {r.rtol:g}"]
    if r.atol:
        parts.append(f"atol {r.atol:g}")
    return ", ".join(parts)


def _md_cell(text: str, code: bool = False) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if code and text and "`" not in text else text


# ----------------------------------------------------------------------------------------------- comparing

class _Missing:
    def __repr__(self) -> str:
        return "<absent>"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Missing:
        return self


_MISSING: Any = _Missing()


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _family(metric: str) -> str | None:
    """The kind of quantity a metric counts, when the model has a total of it (else None: unitless)."""
    if metric.startswith("totals."):
        metric = metric[len("totals."):]
    elif metric.startswith("by_op_type["):
        metric = metric.split("].", 1)[-1]
    head, _, rest = metric.partition(".")
    if head in ("dense_total_cycles", "dense_cycles"):
        return "dense_cycles"
    if head in ("cycles", "busy") or metric == "fallback.cycles":
        return "cycles"
    if head == "bytes":
        return rest.partition(".")[0] or None  # dram / sram
    if head in ("macs", "macs_executed"):
        return "macs"
    if head == "energy" and any(p.endswith("_j") and not p.endswith("per_j") for p in rest.split(".")):
        return "energy"  # total_j, dense_total_j, by_component_j.*, by_tensor_j.* (not inferences_per_j)
    if head == "latency_us":
        return "latency"
    if head == "footprint" and metric.endswith("_bytes"):
        return "footprint"
    return None


def _family_totals(result: dict[str, Any]) -> dict[str, float]:
    """The model's total of each kind of quantity (what a change is a share of)."""
    flat = {k: v for k, v in flatten({"totals": result.get("totals"), "footprint": result.get("footprint")}).items()
            if _is_number(v) and math.isfinite(v)}
    out = {"cycles": flat.get("totals.cycles.total"), "dense_cycles": flat.get("totals.dense_total_cycles"),
           "macs": flat.get("totals.macs"),
           "energy": flat.get("totals.energy.total_j"), "latency": flat.get("totals.latency_us"),
           "footprint": flat.get("footprint.total_bytes")}
    for level in ("dram", "sram"):
        parts = [v for k, v in flat.items() if k.startswith(f"totals.bytes.{level}.")]
        out[level] = sum(parts) if parts else None
    return {k: abs(float(v)) for k, v in out.items() if v is not None}


class _Weigher:
    """Ranking weights of one result pair: a change as a share of the model's total of its kind."""

    def __init__(self, base: dict[str, Any], cand: dict[str, Any]) -> None:
        b, c = _family_totals(base), _family_totals(cand)
        self.totals = {k: b[k] if b.get(k) else c.get(k, 0.0) for k in b.keys() | c.keys()}  # baseline's, if any

    def layer_share(self, b_layer: dict[str, Any], c_layer: dict[str, Any]) -> float:
        """A layer's share of the model's time (baseline, else candidate): weighs its unitless metrics."""
        total = self.totals.get("cycles")
        for layer in (b_layer, c_layer):
            cycles = layer.get("cycles")
            t = cycles.get("total") if isinstance(cycles, dict) else None
            if total and _is_number(t) and math.isfinite(t):
                return min(1.0, abs(t) / total)
        return 1.0

    def weigh(self, row: Row, scope: float) -> None:
        family = _family(row.metric)
        total = self.totals.get(family) if family else None
        if family and total is not None and row.abs_change is not None:
            row.share = row.abs_change / total if total else (math.inf if row.abs_change else 0.0)
            if math.isnan(row.share):
                row.share = math.inf
            row.weight = row.share
        elif row.rel_change is not None:
            row.weight = row.rel_change * scope


def _compare_metrics(base: dict[str, Any], cand: dict[str, Any], tol: Tolerances, file: str, layer: str,
                     prefix: str, rows: list[Row], counts: dict[str, int], weigher: _Weigher | None = None,
                     scope: float = 1.0) -> None:
    keys = list(base)
    keys += [k for k in cand if k not in base]
    for key in keys:
        metric = f"{prefix}{key}"
        t = tol.for_metric(metric)
        if t is None:
            counts["ignored"] += 1
            continue
        counts["metrics"] += 1
        b = base.get(key, _MISSING)
        c = cand.get(key, _MISSING)
        if b is _MISSING or c is _MISSING:
            rows.append(Row(file, layer, metric, b, c, ADDED if b is _MISSING else REMOVED))
            counts["drift"] += 1
            continue
        if _is_number(b) and _is_number(c):
            if b == c or (isinstance(b, float) and isinstance(c, float) and math.isnan(b) and math.isnan(c)):
                counts["unchanged"] += 1
                continue
            diff = abs(c - b)
            if math.isnan(diff):
                rel = math.inf
            elif b == 0:
                rel = math.inf
            else:
                rel = diff / abs(b)
            ok = diff <= max(t.atol, t.rtol * abs(b))  # False for NaN / inf differences
            status = WITHIN if ok else DRIFT
            row = Row(file, layer, metric, b, c, status, diff, rel, t.rtol, t.atol)
            if weigher is not None:
                weigher.weigh(row, scope)
            rows.append(row)
            counts["within" if ok else "drift"] += 1
        elif b == c and type(b) is type(c):
            counts["unchanged"] += 1
        else:
            rows.append(Row(file, layer, metric, b, c, CHANGED))
            counts["drift"] += 1


def _compare_results(base: dict[str, Any], cand: dict[str, Any], tol: Tolerances, file: str,
                     rows: list[Row], one_sided: list[OneSided], counts: dict[str, int]) -> None:
    counts["files"] += 1
    weigher = _Weigher(base, cand)
    _compare_metrics(_run_level(base), _run_level(cand), tol, file, RUN_LEVEL, "", rows, counts, weigher)
    b_layers = _layers_by_name(base)
    c_layers = _layers_by_name(cand)
    for name, b_layer in b_layers.items():
        if tol.layer_ignored(name):
            continue
        c_layer = c_layers.get(name)
        if c_layer is None:
            one_sided.append(OneSided("layer", file, name, "baseline"))
            continue
        counts["layers"] += 1
        strip = {k: v for k, v in b_layer.items() if k != "name"}
        _compare_metrics(flatten(strip), flatten({k: v for k, v in c_layer.items() if k != "name"}), tol, file,
                         name, "", rows, counts, weigher, weigher.layer_share(b_layer, c_layer))
    for name in c_layers:
        if name not in b_layers and not tol.layer_ignored(name):
            one_sided.append(OneSided("layer", file, name, "candidate"))


def _result_files(root: Path) -> dict[str, Path]:
    """``*.json`` under ``root`` by relative POSIX path (hidden files and folders skipped, and
    ``regress.json``: this command's own report, in case ``-o`` pointed into a result directory)."""
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*.json")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or p.name == REPORT_NAME or not p.is_file():
            continue
        out[rel.as_posix()] = p
    return out


def _kind(path: Path, role: str) -> str:
    if path.is_dir():
        return "dir"
    if path.exists():
        return "file"
    raise ResultFileError(str(path), f"no such file or directory ({role})")


def compare(baseline: str | Path | dict[str, Any], candidate: str | Path | dict[str, Any],
            tolerances: Tolerances | dict[str, Any] | str | Path | None = None) -> Report:
    """Compare two results (paths to files, loaded dicts) or two directories of results.

    Directories are matched by relative path of their ``*.json`` files; a file on one side only is
    drift. Rows (the metrics that moved) come worst first (:attr:`Row.rank`): model totals beyond
    tolerance, then other drift by its share of the model's total of the same kind (cycles, DRAM or
    SRAM bytes, MACs, joules; unitless metrics by relative change x the layer's share of time), then
    non-numeric changes and metrics on one side only, then changes within tolerance.
    Raises :class:`ResultFileError` / :class:`SchemaVersionError` / :class:`RegressInputError`.
    """
    tol = as_tolerances(tolerances)
    rows: list[Row] = []
    one_sided: list[OneSided] = []
    counts = dict.fromkeys(("files", "layers", "metrics", "unchanged", "within", "drift", "ignored"), 0)
    b_label = "<baseline>" if isinstance(baseline, dict) else str(baseline)
    c_label = "<candidate>" if isinstance(candidate, dict) else str(candidate)
    single = True
    if isinstance(baseline, dict) or isinstance(candidate, dict):
        b = _check_result(baseline, b_label) if isinstance(baseline, dict) else load_result(baseline)
        c = _check_result(candidate, c_label) if isinstance(candidate, dict) else load_result(candidate)
        _compare_results(b, c, tol, "", rows, one_sided, counts)
    else:
        bp, cp = Path(baseline), Path(candidate)
        bk, ck = _kind(bp, "baseline"), _kind(cp, "candidate")
        if bk != ck:
            raise RegressInputError(f"baseline {bp} is a {'directory' if bk == 'dir' else 'file'} but candidate "
                                    f"{cp} is a {'directory' if ck == 'dir' else 'file'}; compare a file with a "
                                    "file or a directory with a directory")
        if bk == "file":
            _compare_results(load_result(bp), load_result(cp), tol, "", rows, one_sided, counts)
        else:
            single = False
            b_files, c_files = _result_files(bp), _result_files(cp)
            if not b_files and not c_files:
                raise RegressInputError(f"no result files (*.json) in {bp} or {cp}")
            for rel, path in b_files.items():
                if rel not in c_files:
                    load_result(path)  # a broken baseline is an error even when it has no partner
                    one_sided.append(OneSided("file", rel, None, "baseline"))
                    continue
                _compare_results(load_result(path), load_result(c_files[rel]), tol, rel, rows, one_sided, counts)
            for rel, path in c_files.items():
                if rel not in b_files:
                    load_result(path)
                    one_sided.append(OneSided("file", rel, None, "candidate"))
    rows.sort(key=lambda r: (r.rank, r.file, r.layer != RUN_LEVEL, r.layer, r.metric))
    one_sided.sort(key=lambda o: (o.kind != "file", o.file))  # stable: layers stay in result order
    return Report(b_label, c_label, rows, one_sided, counts, tol, single_file=single)


# ----------------------------------------------------------------------------------------------- blessing

@dataclass
class BlessChange:
    """One baseline file touched (or left alone) by :func:`bless`."""

    file: str
    action: str                 # "added", "changed", "removed", "unchanged"
    moved: int | None = None    # metrics that differ from the old baseline (exact compare); None: not comparable
    note: str = ""

    def describe(self) -> str:
        extra = f", {_plural(self.moved, 'metric')} moved" if self.moved else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.action:9s} {self.file}{extra}{note}"


def write_atomic(path: str | Path, text: str) -> None:
    """Write a file in one step (temp file + rename): a failure leaves the old file or nothing."""
    from accelsim.fileio import write_atomic as _write

    _write(path, text)


def _bless_one(old_path: Path, new: dict[str, Any], label: str) -> BlessChange:
    text = golden_text(golden_body(new))
    if not old_path.exists():
        write_atomic(old_path, text)
        return BlessChange(label, "added")
    try:
        old_raw = old_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        old_raw = None
    if old_raw == text:
        return BlessChange(label, "unchanged", 0)
    moved: int | None
    note = ""
    try:
        old = load_result(old_path)
        rep = compare(old, golden_body(new), Tolerances(default_rtol=0.0, default_atol=0.0))
        moved = sum(1 for r in rep.rows if r.status != WITHIN) + len(rep.one_sided)
        if moved == 0:
            note = "reformatted"
    except ResultFileError as exc:
        moved, note = None, f"old baseline replaced: {exc.problem}"
    write_atomic(old_path, text)
    return BlessChange(label, "changed", moved, note)


def bless(baseline_path: str | Path, candidate_path: str | Path) -> list[BlessChange]:
    """Rewrite the baselines from the candidate (a file, or a directory of ``*.json`` results).

    Baselines are stored as golden bodies (:func:`golden_text`: no ``meta``, keys sorted, indent 2).
    A directory baseline ends up holding exactly the candidate's files: new ones are added, stale
    ones removed. Every candidate is validated first, so an invalid candidate changes nothing.
    Returns one :class:`BlessChange` per file, changes first.
    """
    bp, cp = Path(baseline_path), Path(candidate_path)
    ck = _kind(cp, "candidate")
    if ck == "file":
        if bp.is_dir():
            raise RegressInputError(f"candidate {cp} is a file but baseline {bp} is a directory; bless a file "
                                    "into a file or a directory into a directory")
        new = load_result(cp)
        return [_bless_one(bp, new, bp.name)]
    if bp.exists() and not bp.is_dir():
        raise RegressInputError(f"candidate {cp} is a directory but baseline {bp} is a file; bless a file into a "
                                "file or a directory into a directory")
    c_files = _result_files(cp)
    if not c_files:
        raise RegressInputError(f"no result files (*.json) in candidate {cp}; refusing to empty the baselines")
    loaded = {rel: load_result(path) for rel, path in c_files.items()}  # validate all before writing any
    changes = [_bless_one(bp / rel, data, rel) for rel, data in loaded.items()]
    if bp.is_dir():
        for rel, path in _result_files(bp).items():
            if rel not in c_files:
                path.unlink()
                changes.append(BlessChange(rel, "removed"))
    order = {"added": 1, "changed": 0, "removed": 2, "unchanged": 3}
    changes.sort(key=lambda ch: (order[ch.action], ch.file))
    return changes


_bless_files = bless  # regress_command's ``bless`` flag shadows the function's name


def bless_summary(changes: Iterable[BlessChange]) -> str:
    changes = list(changes)
    n = {a: sum(1 for c in changes if c.action == a) for a in ("added", "changed", "removed", "unchanged")}
    moved = sum(c.moved or 0 for c in changes)
    return (f"{n['added']} added, {n['changed']} changed ({_plural(moved, 'metric')} moved), {n['removed']} removed, "
            f"{n['unchanged']} unchanged")


# ----------------------------------------------------------------------------------------------- CLI handler

def regress_command(baseline: str | Path, candidate: str | Path, tolerances: str | Path | None = None,
                    out_dir: str | Path | None = None, bless: bool = False) -> tuple[int, str]:
    """``accelsim regress BASELINE CANDIDATE [--tolerances tol.yaml] [-o DIR] [--bless]``.

    Returns ``(exit code, text)``. 0/1: ``text`` is the report (to stdout). 2: ``text`` is one line
    ``accelsim: error: ...`` (to stderr). With ``out_dir``, also writes ``regress.json`` and
    ``regress.md`` there. With ``bless``, compares first (the report says what the bless changes),
    then rewrites the baselines from the candidate and returns 0 with the list of changed files;
    if the baselines cannot be read, they are rewritten all the same.
    """
    try:
        tol = as_tolerances(tolerances)
        report: Report | None
        if bless:
            try:
                report = compare(baseline, candidate, tol)
            except ResultFileError as exc:
                if Path(exc.source) == Path(candidate) or _under(exc.source, candidate):
                    raise
                report = None  # an unreadable / old baseline is what blessing replaces
            except RegressInputError:
                report = None
        else:
            report = compare(baseline, candidate, tol)
        text = ""
        if report is not None:
            text = report.to_table(headline=f"accelsim regress --bless: what moved from baseline {baseline} to "
                                            f"candidate {candidate}" if bless else None)
        if out_dir is not None and report is not None:
            out = Path(out_dir)
            write_atomic(out / REPORT_NAME, report.to_json())
            write_atomic(out / "regress.md", report.to_markdown())
            text += f"wrote {out / REPORT_NAME}\nwrote {out / 'regress.md'}\n"
        if not bless:
            assert report is not None
            return report.exit_code, text
        changes = _bless_files(baseline, candidate)
        touched = [c for c in changes if c.action != "unchanged"]
        lines = [f"blessed {baseline} from {candidate}: {bless_summary(changes)}", *(f"  {c.describe()}"
                                                                                   for c in touched)]
        return 0, (text + "\n" if text else "") + "\n".join(lines) + "\n"
    except AccelsimError as exc:
        return 2, f"accelsim: error: {exc}\n"
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return 2, f"accelsim: error: {where}{exc.strerror or exc}\n"


def _under(path: str, root: str | Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False
