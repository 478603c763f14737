"""Design-space sweeps: many hardware points x workloads x settings x sparsity patterns, in parallel.

Library code: nothing here prints or exits. Entry points: :func:`load_spec` (parse and validate a
sweep spec, before anything runs), :func:`run_sweep` (execute it on a local process pool or a
Dask cluster, writing results incrementally and resumably), :func:`load_results` (read a results
folder back), and the CLI handlers :func:`sweep_command` and :func:`sweep_plot_command`.

Spec (YAML, read with ``safe_load``)::

    name: sram-vs-bandwidth
    hardware: hwconfigs/tpu-like.yaml     # base config (a path, or an inline mapping)
    workloads: [workloads/bert-base.yaml]
    set: {batch: [1, 16], seq: [128]}     # workload parameters: product of the lists
    sparsity: [dense, "2:4", "1:4"]       # 'plan' = the workload's own plan
    policy: sparse-if-supported           # or 'fastest'
    grid:                                 # dotted paths into the hardware config: product
      core.sram.filter_bytes: [262144, 1048576]
      dram.bandwidth_gb_s: [100, 400]
    random:                               # n seeded samples, added to the grid (a union)
      n: 20
      seed: 7
      core.compute.rows: {choice: [32, 64, 128]}
      core.sparse.decode_groups_per_cycle: {log_uniform: [4, 256]}
    cost: "pes * 0.0005 + sram_bytes / 1048576 * 0.45"   # optional area model for the Pareto plot

Rows: one per (hardware point, workload, set-parameter combination, sparsity), ordered by point,
then workload, then parameters (product order), then sparsity (spec order): deterministic, and
the same for every executor.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import os
import re
import sys
import time
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from accelsim.config import schema as configio
from accelsim.energy import energy_tables_cover, kernel_energy
from accelsim.engine import EngineHardware, hardware_key, simulate_totals
from accelsim.errors import AccelsimError, ConfigError, InfeasibleError
from accelsim.formats.nm import normalize_pattern
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.lowering import Kernel, lower, lowering_target
from accelsim.results import KernelTotals, LayerTotals, ModelTotals, dumps_finite, model_totals
from accelsim.simulation import Simulator, choose_path, peak_macs_per_cycle, run

FORMAT_VERSION = 1
SPEC_KEYS = ("name", "description", "hardware", "workloads", "set", "sparsity", "policy", "grid", "random",
             "chunk_size", "cost")
DISTRIBUTIONS = ("choice", "uniform", "log_uniform", "int_uniform")
PLAN = "plan"  # sparsity label: the workload's own plan

# Metric columns, in table order (after the point, workload, parameter and sparsity columns).
METRICS = (
    "feasible", "reason", "latency_us", "cycles", "dense_cycles", "speedup_vs_dense", "utilization",
    "peak_macs_per_cycle", "cycles_compute", "cycles_stall_memory", "cycles_stall_decode", "cycles_launch",
    "macs", "macs_executed", "dram_bytes", "dram_a_values", "dram_a_metadata", "dram_b", "dram_c",
    "metadata_bytes", "metadata_share", "layers", "layers_sparse", "fallback_layers", "fallback_rate",
    "fallback_time_share", "binding", "binding_share", "energy_j", "dense_energy_j", "perf_per_watt_vs_dense",
)
POINT_COLUMNS = ("point", "origin", "hw_hash")
TEXT_COLUMNS = {"origin", "hw_hash", "workload", "sparsity", "reason", "binding"}

MAX_POINTS = 100_000  # hardware points a spec may ask for (--max-points raises it)
ROWS_PER_POINT_LIMIT = 10  # rows may be at most this many times max_points
_CHUNK_RE = re.compile(r"^chunk-(\d{6})\.(\d+)\.([0-9a-f]{16})\.jsonl$")
_DEFAULT_COST = "peak_macs_per_cycle * sram_bytes"


# -------------------------------------------------------------------------------------------- spec

@dataclass(frozen=True)
class Point:
    """One hardware point: the overrides applied to the base config and what they resolve to."""

    index: int
    origin: str  # "grid" | "random" | "base"
    overrides: dict[str, Any]
    hw_hash: str
    values: tuple[Any, ...]  # resolved value at each swept path (SweepSpec.swept order)
    sram_bytes: int


@dataclass(frozen=True)
class WorkloadEntry:
    """A workload file and the parameter combinations it is run with."""

    source: str
    label: str
    data: dict[str, Any]
    combos: tuple[dict[str, Any], ...]  # one per set-parameter combination (only params it declares)


@dataclass
class SweepSpec:
    """A validated sweep: every point's hardware config has been validated."""

    name: str
    source: str
    text: str  # the spec as written (copied to spec.yaml beside the results)
    hardware_source: str
    hardware_data: dict[str, Any]
    workloads: list[WorkloadEntry]
    set_keys: list[str]
    sparsity: list[str | None]
    policy: str
    grid: dict[str, list[Any]]
    random: dict[str, Any] | None
    swept: list[str]
    points: list[Point]
    chunk_size: int | None = None
    cost: str | None = None
    duplicates_dropped: int = 0
    spec_hash: str = ""
    description: str | None = None
    kinds: dict[str, str | None] = field(default_factory=dict)

    @property
    def rows_per_point(self) -> int:
        return sum(len(w.combos) for w in self.workloads) * len(self.sparsity)

    @property
    def columns(self) -> list[str]:
        return [*POINT_COLUMNS, *self.swept, "sram_bytes", "workload", *self.set_keys, "sparsity", *METRICS]


def _resolve_file(value: Any, base_dir: Path | None, source: str, key: str) -> Path:
    """A path from the spec: absolute, or relative to the current directory, the spec's folder or its parent."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(source, key, f"expected a file path, got {configio._short(value)}")
    p = Path(value)
    if p.is_absolute():
        cands = [p]
    else:
        cands = [Path.cwd() / p]
        if base_dir is not None:
            cands += [base_dir / p, base_dir.parent / p]
    for c in cands:
        if c.is_file():
            return Path(os.path.relpath(c)) if _is_below_cwd(c) else c.resolve()
    raise ConfigError(source, key, f"file not found: {value} (looked in the current directory"
                      + (", the spec's folder and its parent)" if base_dir is not None else ")"))


def _is_below_cwd(p: Path) -> bool:
    try:
        p.resolve().relative_to(Path.cwd().resolve())
        return True
    except ValueError:
        return False


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


# -- field kinds (integer fields get rounded samples) ---------------------------------------------

def _unwrap(ann: Any) -> list[Any]:
    """Leaf annotations of ``ann`` through Annotated and unions (None dropped)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return [leaf for a in typing.get_args(ann) if a is not type(None) for leaf in _unwrap(a)]
    return [ann]


def _model_for(ann: Any, node: Any) -> type[BaseModel] | None:
    models = [a for a in _unwrap(ann) if isinstance(a, type) and issubclass(a, BaseModel)]
    if not models:
        return None
    if len(models) > 1 and isinstance(node, dict):
        for m in models:
            f = m.model_fields.get("kind")
            if f is not None and node.get("kind") in typing.get_args(f.annotation):
                return m
    return models[0]


def field_kind(path: str, base: dict[str, Any]) -> str | None:
    """'int', 'float' or 'other' for a dotted hardware path; None when the schema has no such field.

    Union members are chosen by the base config's ``kind`` (systolic / tensor_core).
    """
    ann: Any = Hardware
    node: Any = base
    for key in path.split("."):
        model = _model_for(ann, node)
        if model is not None:
            f = model.model_fields.get(key)
            if f is None:
                return None
            ann = f.annotation
        else:
            dicts = [a for a in _unwrap(ann) if typing.get_origin(a) is dict]
            if not dicts:
                return None
            ann = typing.get_args(dicts[0])[1]
        node = node.get(key) if isinstance(node, dict) else None
    types: set[type] = set()
    for leaf in _unwrap(ann):
        if typing.get_origin(leaf) is typing.Literal:
            types |= {type(v) for v in typing.get_args(leaf)}
        elif isinstance(leaf, type):
            types.add(leaf)
    if float in types:
        return "float"
    if int in types:
        return "int"
    return "other"


# -- sampling ------------------------------------------------------------------------------------

def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_distribution(path: str, dist: Any, kind: str | None, source: str) -> tuple[str, Any]:
    key = f"random.{path}"
    if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
        raise ConfigError(source, key, "expected one distribution: {choice: [...]}, {uniform: [a, b]}, "
                          f"{{log_uniform: [a, b]}} or {{int_uniform: [a, b]}}, got {configio._short(dist)}")
    name, arg = next(iter(dist.items()))
    if name == "choice":
        if not isinstance(arg, list) or not arg:
            raise ConfigError(source, f"{key}.choice", "expected a non-empty list of values")
        return name, list(arg)
    if not isinstance(arg, list) or len(arg) != 2 or not all(_number(v) for v in arg):
        raise ConfigError(source, f"{key}.{name}", f"expected [low, high] numbers, got {configio._short(arg)}")
    lo, hi = arg
    if lo > hi:
        raise ConfigError(source, f"{key}.{name}", f"low {lo} is above high {hi}")
    if name == "log_uniform" and lo <= 0:
        raise ConfigError(source, f"{key}.{name}", f"log_uniform needs low > 0, got {lo}")
    if name == "int_uniform" and not all(isinstance(v, int) for v in arg):
        raise ConfigError(source, f"{key}.{name}", f"int_uniform needs integer bounds, got {arg}")
    if kind == "other":
        raise ConfigError(source, key, f"{name} draws numbers, but {path} is not a number field (use choice)")
    if kind == "int" and math.ceil(lo) > math.floor(hi):
        raise ConfigError(source, f"{key}.{name}", f"{path} is an integer field and [{lo}, {hi}] holds no integer")
    return name, [lo, hi]


def round_to_field(x: float, lo: float, hi: float) -> int:
    """The rounding rule for integer fields sampled from uniform / log_uniform.

    Round half to even (Python's ``round``), then clamp to the integers inside [lo, hi]
    (ceil(lo) .. floor(hi)), so a sample never leaves the stated range.
    """
    return min(max(round(x), math.ceil(lo)), math.floor(hi))


def _sample(dists: list[tuple[str, str, Any, str | None]], n: int, seed: int) -> list[dict[str, Any]]:
    """n samples; each draws every distribution in spec order from one seeded PCG64 stream."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        point: dict[str, Any] = {}
        for path, name, arg, kind in dists:
            if name == "choice":
                value = copy.deepcopy(arg[int(rng.integers(len(arg)))])
            elif name == "int_uniform":
                value = int(rng.integers(arg[0], arg[1] + 1))
            else:
                lo, hi = arg
                x = float(rng.uniform(lo, hi)) if name == "uniform" else \
                    float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
                value = round_to_field(x, lo, hi) if kind == "int" else x
            point[path] = value
        out.append(point)
    return out


# -- overrides -----------------------------------------------------------------------------------

def _split_path(path: Any, source: str, key: str) -> list[str]:
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(source, key, f"expected a dotted path into the hardware config, got {path!r}")
    keys = path.strip().split(".")
    if any(not k for k in keys):
        raise ConfigError(source, key, f"empty key in dotted path {path!r}")
    return keys


def with_overrides(base: dict[str, Any], overrides: dict[str, Any], source: str = "<sweep>") -> dict[str, Any]:
    """A copy of ``base`` with ``{dotted.path: value}`` set (as ``hardware.apply_override``; base is untouched)."""
    out = dict(base)
    for path, value in overrides.items():
        keys = path.split(".")
        node = out
        for i, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = {}
            elif not isinstance(child, dict):
                raise ConfigError(source, ".".join(keys[: i + 1]), f"is a value, so {path} cannot set a key below it")
            else:
                child = dict(child)
            node[key] = child
            node = child
        node[keys[-1]] = copy.deepcopy(value) if isinstance(value, dict | list) else value
    return out


def _lookup(data: Any, path: str) -> Any:
    node = data
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _cell(value: Any) -> Any:
    """A table cell: scalars as they are, mappings and lists as compact JSON text."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


# -- loading -------------------------------------------------------------------------------------

def load_spec(path: str | Path, max_points: int = MAX_POINTS) -> SweepSpec:
    """Read and validate a sweep spec file (YAML ``safe_load``); every point is validated here."""
    data, raw = configio.read_yaml(path)
    p = Path(path)
    return spec_from_dict(data, source=str(path), base_dir=p.resolve().parent,
                          text=raw.decode("utf-8", errors="replace"), max_points=max_points)


def _check_size(source: str, data: dict[str, Any], max_points: int) -> int:
    """The number of hardware points the spec asks for (grid product + random n, before duplicates are
    dropped), counted without building them; past ``max_points`` a ConfigError says how many."""
    grid = data.get("grid") or {}
    sizes = [len(v) for v in grid.values() if isinstance(v, list)] if isinstance(grid, dict) else []
    n_grid = math.prod(sizes) if sizes else 0
    rnd = data.get("random")
    n_random = rnd.get("n") if isinstance(rnd, dict) else 0
    n_random = n_random if isinstance(n_random, int) and not isinstance(n_random, bool) and n_random > 0 else 0
    total = max(1, n_grid + n_random)
    if total > max_points:
        parts = [f"grid {' x '.join(map(str, sizes))} = {n_grid:,}"] if sizes else []
        parts += [f"random n {n_random:,}"] if n_random else []
        raise ConfigError(source, "grid" if n_grid > n_random else "random.n",
                          f"{total:,} hardware points ({' + '.join(parts)}): more than the limit of {max_points:,} "
                          "(raise it with --max-points N)")
    return total


def spec_from_dict(data: dict[str, Any], source: str = "<sweep>", base_dir: str | Path | None = None,
                   text: str | None = None, max_points: int = MAX_POINTS) -> SweepSpec:
    """Validate a sweep spec given as plain data. Raises ConfigError naming the key (and point).

    ``max_points`` bounds the hardware points (counted before any is built) and the rows: at most
    ``ROWS_PER_POINT_LIMIT`` x ``max_points`` (points x workload settings x sparsity patterns).
    """
    from accelsim.lowering import POLICIES as RUN_POLICIES
    from accelsim.workloads.model import workload_from_dict

    if not isinstance(data, dict):
        raise ConfigError(source, None, f"top level must be a mapping of keys, got {type(data).__name__}")
    base = Path(base_dir) if base_dir is not None else None
    for key in data:
        if key not in SPEC_KEYS:
            import difflib

            hint = difflib.get_close_matches(str(key), SPEC_KEYS, n=1)
            raise ConfigError(source, str(key), "unknown key" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                              + f"; allowed: {', '.join(SPEC_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(source, "name", "required: a short name for the sweep")
    if "hardware" not in data:
        raise ConfigError(source, "hardware", "required key is missing (a base hardware config file)")
    if "workloads" not in data:
        raise ConfigError(source, "workloads", "required key is missing (a list of workload files)")
    n_points = _check_size(source, data, max_points)

    # hardware
    hw_value = data["hardware"]
    if isinstance(hw_value, dict):
        hw_source, hw_data = f"{source}: hardware", copy.deepcopy(hw_value)
    else:
        hw_path = _resolve_file(hw_value, base, source, "hardware")
        hw_data, _ = configio.read_yaml(hw_path)
        hw_source = str(hw_path)
        if "layers" in hw_data and "core" not in hw_data:
            raise ConfigError(source, "hardware", f"{hw_value} is a workload file, expected a hardware config")
    hardware_from_dict(hw_data, hw_source)  # the base config itself must be valid

    # workloads and set parameters
    sets_raw = data.get("set") or {}
    if not isinstance(sets_raw, dict):
        raise ConfigError(source, "set", "expected a mapping of workload parameters to lists of values")
    sets: dict[str, list[Any]] = {}
    for key, values in sets_raw.items():
        vals = _as_list(values)
        if not vals:
            raise ConfigError(source, f"set.{key}", "expected a non-empty list of values")
        for v in vals:
            if not _number(v) or v <= 0:
                raise ConfigError(source, f"set.{key}", f"expected positive numbers, got {configio._short(v)}")
        if len(set(vals)) != len(vals):
            raise ConfigError(source, f"set.{key}", f"a value is listed twice: {vals}")
        sets[str(key)] = vals
    wl_values = _as_list(data["workloads"])
    if not wl_values:
        raise ConfigError(source, "workloads", "expected at least one workload file")
    read: list[tuple[Path, dict[str, Any], list[str]]] = []
    declared_any: set[str] = set()
    for i, value in enumerate(wl_values):
        wl_path = _resolve_file(value, base, source, f"workloads[{i}]")
        wl_data, _ = configio.read_yaml(wl_path)
        if "core" in wl_data and "layers" not in wl_data:
            raise ConfigError(source, f"workloads[{i}]", f"{value} is a hardware config, expected a workload file")
        declared = set((wl_data.get("params") or {}).keys()) if isinstance(wl_data.get("params"), dict) else set()
        keys = [k for k in sets if k in declared]
        declared_any |= set(keys)
        read.append((wl_path, wl_data, keys))
    settings = sum(math.prod(len(sets[k]) for k in keys) for _, _, keys in read)
    patterns = len(_as_list(data.get("sparsity", [PLAN])))
    if n_points * settings * patterns > ROWS_PER_POINT_LIMIT * max_points:
        raise ConfigError(source, "set" if settings > patterns else "sparsity",
                          f"{n_points:,} hardware points x {settings:,} workload settings x {patterns} "
                          f"sparsity patterns = {n_points * settings * patterns:,} rows: more than the limit of "
                          f"{ROWS_PER_POINT_LIMIT * max_points:,} ({ROWS_PER_POINT_LIMIT} x --max-points "
                          f"{max_points:,})")
    workloads: list[WorkloadEntry] = []
    for i, (wl_path, wl_data, keys) in enumerate(read):
        combos = tuple(dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sets[k] for k in keys)))
        label = wl_data.get("name") if isinstance(wl_data.get("name"), str) else wl_path.stem
        for combo in combos:
            workload_from_dict(wl_data, str(wl_path), combo)  # validates the workload with these parameters
        if any(w.label == label for w in workloads):
            raise ConfigError(source, f"workloads[{i}]", f"workload {label!r} is listed twice")
        workloads.append(WorkloadEntry(str(wl_path), label, wl_data, combos))
    for key in sets:
        if key not in declared_any:
            have = "; ".join(f"{w.label}: {', '.join(sorted(w.data.get('params') or {})) or 'none'}"
                             for w in workloads)
            raise ConfigError(source, f"set.{key}", f"no workload declares this parameter ({have})")

    # sparsity and policy
    sparsity: list[str | None] = []
    for i, value in enumerate(_as_list(data.get("sparsity", [PLAN]))):
        if value is None or value == PLAN:
            norm = None
        else:
            try:
                norm = normalize_pattern(value)
            except ValueError as exc:
                raise ConfigError(source, f"sparsity[{i}]", str(exc)) from None
        if norm in sparsity:
            raise ConfigError(source, f"sparsity[{i}]", f"{norm or PLAN!r} is listed twice")
        sparsity.append(norm)
    if not sparsity:
        raise ConfigError(source, "sparsity", "expected at least one of dense, N:M or plan")
    policy = data.get("policy", "sparse-if-supported")
    if policy not in RUN_POLICIES:
        raise ConfigError(source, "policy", f"expected one of {', '.join(RUN_POLICIES)}, got {policy!r}")

    # grid
    grid_raw = data.get("grid") or {}
    if not isinstance(grid_raw, dict):
        raise ConfigError(source, "grid", "expected a mapping of dotted hardware paths to lists of values")
    grid: dict[str, list[Any]] = {}
    for path, values in grid_raw.items():
        _split_path(path, source, f"grid.{path}")
        if not isinstance(values, list) or not values:
            raise ConfigError(source, f"grid.{path}", f"expected a non-empty list of values, got "
                              f"{configio._short(values)}")
        grid[str(path).strip()] = values

    # random
    random_raw = data.get("random")
    kinds: dict[str, str | None] = {}
    samples: list[dict[str, Any]] = []
    random_spec: dict[str, Any] | None = None
    if random_raw is not None:
        if not isinstance(random_raw, dict):
            raise ConfigError(source, "random", "expected a mapping: n, seed and dotted paths to distributions")
        n = random_raw.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ConfigError(source, "random.n", f"expected a number of samples (integer >= 0), got {n!r}")
        seed = random_raw.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError(source, "random.seed", f"expected an integer >= 0, got {seed!r}")
        dists = []
        for path, dist in random_raw.items():
            if path in ("n", "seed"):
                continue
            _split_path(path, source, f"random.{path}")
            path = str(path).strip()
            kind = field_kind(path, hw_data)
            kinds[path] = kind
            dname, arg = _check_distribution(path, dist, kind, source)
            dists.append((path, dname, arg, kind))
        if not dists:
            raise ConfigError(source, "random", "list at least one dotted path with a distribution")
        samples = _sample(dists, n, seed)
        random_spec = {"n": n, "seed": seed, **{p: {d: a} for p, d, a, _ in dists}}
    for path in grid:
        kinds.setdefault(path, field_kind(path, hw_data))

    # points: grid product, then random samples (a union: later duplicates dropped)
    swept = list(grid) + [p for p in (random_spec or {}) if p not in ("n", "seed") and p not in grid]
    raw_points: list[tuple[str, dict[str, Any]]] = []
    if grid:
        keys = list(grid)
        raw_points += [("grid", dict(zip(keys, combo, strict=True))) for combo in itertools.product(*grid.values())]
    raw_points += [("random", s) for s in samples]
    if not raw_points:
        raw_points = [("base", {})]
    points: list[Point] = []
    seen: set[str] = set()
    dropped = 0
    n_grid = len(raw_points) - len(samples)
    for i, (origin, overrides) in enumerate(raw_points):
        hw = _validate_point(hw_data, overrides, origin, i if origin != "random" else i - n_grid, source,
                             hw_source)
        resolved = hw.to_dict()
        h = configio.canonical_hash(resolved)
        if h in seen:
            dropped += 1
            continue
        seen.add(h)
        sram = sum(hw.core.sram.buffer_bytes().values()) * hw.cores
        points.append(Point(len(points), origin, overrides, h,
                            tuple(_cell(_lookup(resolved, p)) for p in swept), sram))

    # optional settings
    chunk_size = data.get("chunk_size")
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1):
        raise ConfigError(source, "chunk_size", f"expected a positive integer (points per chunk), got {chunk_size!r}")
    set_keys = list(sets)
    spec = SweepSpec(name=name.strip(), source=source, text=text if text is not None else _dump_yaml(data),
                     hardware_source=hw_source, hardware_data=hw_data, workloads=workloads, set_keys=set_keys,
                     sparsity=sparsity, policy=policy, grid=grid, random=random_spec, swept=swept, points=points,
                     chunk_size=chunk_size, duplicates_dropped=dropped,
                     description=data.get("description") if isinstance(data.get("description"), str) else None,
                     kinds=kinds)
    clash = [c for c in [*swept, *set_keys] if c in (*POINT_COLUMNS, *METRICS, "sram_bytes", "workload", "sparsity")]
    if clash:
        raise ConfigError(source, clash[0], "this name is also a result column; it cannot be swept")
    cost = data.get("cost")
    if cost is not None:
        spec.cost = _check_cost(cost, spec.columns, source)
    spec.spec_hash = configio.canonical_hash({
        "format": FORMAT_VERSION, "name": spec.name, "hardware": hw_data,
        "workloads": [[w.label, w.data, list(w.combos)] for w in workloads], "set_keys": set_keys,
        "sparsity": sparsity, "policy": policy, "swept": swept,
        "points": [[p.origin, p.overrides] for p in points]})
    return spec


def _dump_yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def _validate_point(hw_data: dict[str, Any], overrides: dict[str, Any], origin: str, index: int, source: str,
                    hw_source: str) -> Hardware:
    try:
        data = with_overrides(hw_data, overrides, source)
        return hardware_from_dict(data, hw_source)
    except ConfigError as exc:
        label = "random sample" if origin == "random" else f"{origin} point"
        values = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        where = f"{label} {index}" + (f" ({values})" if overrides else "")
        section = "grid" if origin == "grid" else "random"
        problems = []
        for key, problem in exc.problems:  # every problem of the point, each named by the key that caused it
            key = key or ""
            culprit = next((p for p in overrides if key == p or key.startswith(p + ".") or p.startswith(key + ".")),
                           None)
            if culprit is None and overrides:
                culprit = next(iter(overrides))
            problems.append((f"{section}.{culprit}" if culprit else None,
                             f"{where}: {key + ': ' if key and key != culprit else ''}{problem}"))
        raise ConfigError.many(source, problems, exc.unlisted) from None


def cost_names(columns: Iterable[str]) -> dict[str, str]:
    """Expression name -> column: dotted paths with '.' as '_' (core.compute.rows -> core_compute_rows)."""
    names = {re.sub(r"[^0-9A-Za-z_]", "_", c): c for c in columns}
    names["pes"] = "peak_macs_per_cycle"
    return names


def _check_cost(expr: Any, columns: list[str], source: str) -> str:
    from accelsim.config.templating import evaluate

    if not isinstance(expr, str) or not expr.strip():
        raise ConfigError(source, "cost", "expected an expression of result columns, e.g. "
                          f"\"{_DEFAULT_COST}\"")
    try:
        evaluate(expr, {n: 3.0 for n in cost_names(columns)})
    except ValueError as exc:
        if "division by zero" not in str(exc):
            raise ConfigError(source, "cost", str(exc).replace("parameter", "column")) from None
    return expr.strip()


# ---------------------------------------------------------------------------------------- workers

@dataclass
class _Group:
    kernel: Any
    base: Any
    count: int


@dataclass
class _Lowered:
    groups: list[_Group]


class _WorkerState:
    """Per-process caches, valid for one sweep context."""

    MAX_TOTALS = 200_000
    MAX_LOWERED = 2_000

    def __init__(self, ctx_id: str) -> None:
        self.ctx_id = ctx_id
        self.models: dict[tuple[int, int], Any] = {}
        self.lowered: dict[tuple, _Lowered] = {}
        self.totals: dict[tuple, Any] = {}


_STATE: _WorkerState | None = None
_CTX: dict[str, Any] | None = None


def _state(ctx: dict[str, Any]) -> _WorkerState:
    global _STATE
    if _STATE is None or _STATE.ctx_id != ctx["id"]:
        _STATE = _WorkerState(ctx["id"])
    return _STATE


def _model(ctx: dict[str, Any], st: _WorkerState, wi: int, ci: int) -> Any:
    from accelsim.workloads.model import workload_from_dict

    m = st.models.get((wi, ci))
    if m is None:
        src, data, combos = ctx["workloads"][wi]
        m = workload_from_dict(data, src, combos[ci])
        st.models[(wi, ci)] = m
    return m


def _lower_groups(model: Any, target: Any, sparsity: str | None) -> _Lowered:
    """Lower ``model`` and fold identical kernels: (kernel, dense baseline) pairs with their layer count."""
    groups: dict[tuple, _Group] = {}
    for k in lower(model, target, sparsity):
        base = k.as_dense() if k.sparse else None
        key = (k.cache_key(), k.pattern_requested, base.cache_key() if base is not None else None)
        g = groups.get(key)
        if g is None:
            groups[key] = _Group(k, base, 1)
        else:
            g.count += 1
    return _Lowered(list(groups.values()))


def _sig(x: float | None, digits: int = 6) -> float | None:
    """Round to ``digits`` significant digits (energies summed in different orders agree to ~1e-15)."""
    return None if x is None else float(f"{x:.{digits}g}")


def _metrics(t: ModelTotals, peak: float, clock_ghz: float, energy: float | None, dense_energy: float | None) -> tuple:
    """A feasible row's METRICS from its model totals (``results.ModelTotals``)."""
    dram = (t.dram["a_values"], t.dram["a_metadata"], t.dram["b"], t.dram["c"])
    dram_total = sum(dram)
    binding, share = t.binding()
    return (True, None, t.latency_us(clock_ghz), t.total, t.dense_total_cycles, t.speedup_vs_dense(),
            t.utilization(peak), peak, t.cycles["compute"], t.cycles["stall_memory"], t.cycles["stall_decode"],
            t.cycles["launch"], t.macs, t.macs_executed, dram_total, *dram, dram[1],
            round(dram[1] / dram_total, 6) if dram_total else 0.0, t.layers, t.layers_by_path.get("sparse", 0),
            t.fallback_layers, round(t.fallback_layers / t.requested_layers, 6) if t.requested_layers else 0.0,
            t.fallback_share_of_time(), binding, share, _sig(energy), _sig(dense_energy),
            _sig(dense_energy / energy) if energy and dense_energy is not None else None)


def _infeasible(exc: InfeasibleError) -> tuple:
    return (False, f"{exc.key}: {exc.problem}") + (None,) * (len(METRICS) - 2)


class _Point:
    """One hardware point as the caches see it: what lowering reads, and what the engine reads."""

    def __init__(self, hw: Hardware, source: str) -> None:
        self.hw = hw
        self.source = source
        self.target = lowering_target(hw)  # the lowering cache key
        self.engine = hardware_key(hw)  # with a kernel's cache_key(), the simulation cache key
        self.prepared = EngineHardware(hw)  # what every kernel's simulation reads of hw, computed once
        self.energy: dict[tuple, float] = {}  # (dtype, kernel cache key) -> J, on this point's hardware

    def kernel_energy(self, dtype: str, kernel: Kernel, totals: KernelTotals) -> float:
        key = (dtype, kernel.cache_key())
        e = self.energy.get(key)
        if e is None:
            e = self.energy[key] = kernel_energy(self.hw, dtype, kernel, totals)
        return e


def _row(model: Any, keys: _Point, sparsity: str | None, policy: str, st: _WorkerState,
         model_key: tuple[int, int]) -> tuple:
    """One row: each distinct kernel simulated once (cached on what the engine reads), then summed."""
    hw = keys.hw
    key = (model_key, sparsity, keys.target)
    low = st.lowered.get(key)
    if low is None:
        if len(st.lowered) >= st.MAX_LOWERED:
            st.lowered.clear()
        low = _lower_groups(model, keys.target, sparsity)
        st.lowered[key] = low
    cache = st.totals
    if len(cache) >= st.MAX_TOTALS:
        cache.clear()

    def sim(kernel: Kernel) -> KernelTotals:
        k = (keys.engine, kernel.cache_key())
        hit = cache.get(k)
        if hit is None:
            # an InfeasibleError is not cached: it names the layer
            hit = simulate_totals(kernel, hw, keys.source, keys.prepared)
            cache[k] = hit
        return hit

    with_energy = energy_tables_cover(hw, model.dtype)
    energy = dense_energy = 0.0
    dense_total = 0
    layers = []
    for g in low.groups:
        kernel = g.kernel
        res = sim(kernel)
        base = sim(g.base) if kernel.sparse else res
        run = choose_path(kernel, res.total, base.total, policy)
        if run is not kernel:
            res = base
        n = g.count
        dense_total += n * base.total
        layers.append(LayerTotals(res, run.path, bool(run.pattern_requested), run.macs, run.macs_executed, n))
        if with_energy:
            e = keys.kernel_energy(model.dtype, run, res)
            energy += n * e
            dense_energy += n * (keys.kernel_energy(model.dtype, g.base, base) if run.sparse else e)
    return _metrics(model_totals(layers, dense_total), peak_macs_per_cycle(hw, model.dtype), hw.clock_ghz,
                    energy if with_energy else None, dense_energy if with_energy else None)


def _reference_row(model: Any, hw: Hardware, sparsity: str | None, policy: str, sim: Any) -> tuple:
    """The same row from :func:`accelsim.simulation.run` (the check path; slower)."""
    res = run(model, hw, sparsity, policy=policy, simulator=sim)
    t = res.totals
    return _metrics(res.model_totals(), res.peak_macs_per_cycle, hw.clock_ghz,
                    t["energy"]["total_j"] if "energy" in t else None,
                    t["energy"]["dense_total_j"] if "energy" in t else None)


def _run_points(ctx: dict[str, Any], points: list[tuple[int, dict[str, Any]]]) -> list[list[tuple]]:
    """Metric rows for each point: (workload, combo, sparsity) order."""
    st = _state(ctx)
    lean = ctx["lean"]
    out = []
    for index, overrides in points:
        src = f"{ctx['hw_source']} (point {index})"
        hw = hardware_from_dict(with_overrides(ctx["hardware"], overrides, src), src)
        rows: list[tuple] = []
        if lean:
            keys = _Point(hw, src)
        else:
            sim = Simulator(hw, src)
        for wi, (_, _, combos) in enumerate(ctx["workloads"]):
            for ci in range(len(combos)):
                model = _model(ctx, st, wi, ci)
                for sp in ctx["sparsity"]:
                    try:
                        if lean:
                            rows.append(_row(model, keys, sp, ctx["policy"], st, (wi, ci)))
                        else:
                            rows.append(_reference_row(model, hw, sp, ctx["policy"], sim))
                    except InfeasibleError as exc:
                        rows.append(_infeasible(exc))
        out.append(rows)
    return out


def _pool_init(ctx: dict[str, Any]) -> None:
    global _CTX
    _CTX = ctx


def _pool_chunk(index: int, points: list[tuple[int, dict[str, Any]]]) -> tuple[int, list[list[tuple]]]:
    assert _CTX is not None
    return index, _run_points(_CTX, points)


def _dask_chunk(ctx: dict[str, Any], index: int,
                points: list[tuple[int, dict[str, Any]]]) -> tuple[int, list[list[tuple]]]:
    return index, _run_points(ctx, points)


# ------------------------------------------------------------------------------------ chunk files

def _write_atomic(path: Path, data: bytes) -> None:
    from accelsim.fileio import write_atomic

    write_atomic(path, data, fsync=True)


def _encode_rows(rows: list[list[Any]]) -> bytes:
    return "".join(json.dumps(r, separators=(",", ":"), allow_nan=False) + "\n" for r in rows).encode()


def _write_chunk(chunks: Path, index: int, rows: list[list[Any]]) -> Path:
    data = _encode_rows(rows)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = chunks / f"chunk-{index:06d}.{len(rows)}.{digest}.jsonl"
    _write_atomic(path, data)
    return path


def _read_chunk(path: Path) -> list[list[Any]] | None:
    """Rows of a chunk file, or None when its bytes do not match the checksum and row count in its name."""
    m = _CHUNK_RE.match(path.name)
    if m is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest()[:16] != m.group(3):
        return None
    try:
        rows = [json.loads(line) for line in data.decode().splitlines()]
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if len(rows) != int(m.group(2)) or not all(isinstance(r, list) for r in rows):
        return None
    return rows


def _scan_chunks(chunks: Path, expected_rows: dict[int, int], n_cols: int) -> tuple[dict[int, Path], list[str]]:
    """Valid chunk files by index; anything partial, corrupt or stray is removed (and listed)."""
    valid: dict[int, Path] = {}
    removed: list[str] = []
    if not chunks.is_dir():
        return valid, removed
    for path in sorted(chunks.iterdir()):
        if not path.is_file():
            continue
        m = _CHUNK_RE.match(path.name)
        ok = False
        if m is not None:
            idx = int(m.group(1))
            rows = _read_chunk(path) if idx in expected_rows and idx not in valid else None
            ok = rows is not None and len(rows) == expected_rows[idx] and all(len(r) == n_cols for r in rows)
            if ok:
                valid[idx] = path
        if not ok and (m is not None or path.name.endswith(".tmp")):
            removed.append(path.name)
            path.unlink()
    return valid, removed


# ------------------------------------------------------------------------------------------ running

def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _auto_chunk(n_points: int, workers: int) -> int:
    """Points per chunk: about 8 chunks per worker, at most 64 points each."""
    return max(1, min(64, math.ceil(n_points / max(1, workers * 8))))


def _context(spec: SweepSpec, lean: bool) -> dict[str, Any]:
    return {"id": spec.spec_hash + ("" if lean else "-ref"), "hardware": spec.hardware_data,
            "hw_source": spec.hardware_source,
            "workloads": [(w.source, w.data, list(w.combos)) for w in spec.workloads],
            "sparsity": list(spec.sparsity), "policy": spec.policy, "lean": lean}


def _full_rows(spec: SweepSpec, point: Point, metrics: list[tuple]) -> list[list[Any]]:
    head = [point.index, point.origin, point.hw_hash, *point.values, point.sram_bytes]
    rows = []
    it = iter(metrics)
    for w in spec.workloads:
        for combo in w.combos:
            params = [combo.get(k) for k in spec.set_keys]
            for sp in spec.sparsity:
                rows.append([*head, w.label, *params, sp if sp is not None else PLAN, *next(it)])
    return rows


def _mp_context() -> Any:
    """fork on Linux: workers inherit imports and loaded numba kernels (they start in milliseconds, and a
    script calling run_sweep needs no ``if __name__ == "__main__"`` guard). The workers only compute:
    they touch no lock of the parent's other threads (a progress bar's monitor thread, say).
    Elsewhere the platform default (spawn)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _execute_local(ctx: dict[str, Any], tasks: list[tuple[int, list]], workers: int,
                   on_done: Callable[[int, list[list[tuple]]], None]) -> None:
    if workers <= 1 or len(tasks) <= 1:
        for idx, pts in tasks:
            on_done(idx, _run_points(ctx, pts))
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ex = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=_mp_context(),
                             initializer=_pool_init, initargs=(ctx,))
    try:
        pending = {ex.submit(_pool_chunk, idx, pts) for idx, pts in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=id):
                idx, res = fut.result()
                on_done(idx, res)
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _require_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise AccelsimError("the Dask executor needs dask.distributed, which is not installed: "
                            "pip install 'dask[distributed]'") from None


def _execute_dask(ctx: dict[str, Any], tasks: list[tuple[int, list]], address: str | None, workers: int | None,
                  on_done: Callable[[int, list[list[tuple]]], None]) -> str:
    _require_dask()
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address in (None, "", "local"):
        cluster = LocalCluster(n_workers=workers or _default_workers(), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        where = f"LocalCluster({len(cluster.workers)} workers)"
    else:
        try:
            client = Client(address, timeout="30s")
        except OSError as exc:
            raise AccelsimError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        where = f"dask scheduler {address}"
    try:
        ctx_future = client.scatter(ctx, broadcast=True, hash=False)
        futures = [client.submit(_dask_chunk, ctx_future, idx, pts, pure=False, retries=3) for idx, pts in tasks]
        for fut in as_completed(futures):
            idx, res = fut.result()
            on_done(idx, res)
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return where


def _plan(spec: SweepSpec, chunk_size: int) -> dict[str, Any]:
    from accelsim import __version__
    from accelsim.results import build_meta

    return {"format": FORMAT_VERSION, "name": spec.name, "spec_hash": spec.spec_hash,
            "accelsim_version": __version__, "git_commit": build_meta()["git_commit"], "points": len(spec.points),
            "rows_per_point": spec.rows_per_point,
            "chunk_size": chunk_size, "chunks": math.ceil(len(spec.points) / chunk_size) if spec.points else 0,
            "columns": spec.columns}


def run_sweep(spec: SweepSpec | str | Path, out_dir: str | Path, executor: str = "local",
              dask_address: str | None = None, workers: int | None = None, resume: bool = False,
              progress: Callable[[int, int], None] | None = None, *, chunk_size: int | None = None,
              lean: bool = True, command: list[str] | None = None) -> dict[str, Any]:
    """Run a sweep into ``out_dir``; return a summary dict.

    ``executor``: 'local' (a process pool over ``workers`` processes, default all cores; 1 = in this
    process) or 'dask' (``dask_address`` = a scheduler address like 'tcp://host:8786', or None /
    'local' for a LocalCluster of ``workers`` processes). Each finished chunk of points is written
    at once (atomically, its checksum and row count in its name). ``resume``: keep the valid
    chunks already in ``out_dir`` (of the same spec), remove partial or corrupt ones, run the rest.
    ``progress(done, total)`` counts hardware points. ``lean=False`` builds every row through
    :func:`accelsim.simulation.run` instead of the lean batch path (same numbers, much slower). A file that
    cannot be written or read (chunks, plan.json, results) is an AccelsimError naming it.
    """
    try:
        return _run_sweep(spec, out_dir, executor, dask_address, workers, resume, progress, chunk_size, lean, command)
    except OSError as exc:
        raise AccelsimError(fs_error(exc, out_dir)) from None


def fs_error(exc: OSError, default: str | Path) -> str:
    """One line for a failed file operation: the path and the reason."""
    where = exc.filename if exc.filename is not None else default
    return f"{where}: {exc.strerror or exc}"


def _run_sweep(spec: SweepSpec | str | Path, out_dir: str | Path, executor: str, dask_address: str | None,
               workers: int | None, resume: bool, progress: Callable[[int, int], None] | None,
               chunk_size: int | None, lean: bool, command: list[str] | None) -> dict[str, Any]:
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    if executor not in ("local", "dask"):
        raise ValueError(f"executor must be 'local' or 'dask', got {executor!r}")
    if dask_address is not None and executor == "local":
        executor = "dask"
    if executor == "dask":
        _require_dask()  # before anything is written
    t0 = time.perf_counter()
    out = Path(out_dir)
    chunks = out / "chunks"
    plan_path = out / "plan.json"
    existing = plan_path.exists() or (chunks.is_dir() and any(chunks.iterdir()))
    n_workers = workers or _default_workers()
    warnings: list[str] = []
    if existing and not resume:
        raise AccelsimError(f"{out} already holds a sweep; resume it (--resume) or choose another directory")
    if resume and plan_path.exists():
        plan = _read_plan(plan_path)
        if plan.get("spec_hash") != spec.spec_hash or plan.get("format") != FORMAT_VERSION:
            raise ConfigError(str(plan_path), "spec_hash", f"{out} holds a different sweep (spec "
                              f"{plan.get('name')!r}, hash {plan.get('spec_hash')}); the spec, its hardware or "
                              "workload files changed since. Use another directory to run this one")
        size = plan["chunk_size"]
        now = _plan(spec, size)
        if plan["chunks"] != now["chunks"]:
            raise ConfigError(str(plan_path), "chunks", f"{plan['chunks']} chunks of {size} points do not cover this "
                              f"spec's {len(spec.points)} points (expected {now['chunks']}); the plan was edited")
        if (plan.get("accelsim_version"), plan.get("git_commit")) != (now["accelsim_version"], now["git_commit"]):
            warnings.append(f"resumed with accelsim {now['accelsim_version']} ({now['git_commit']}); the chunks "
                            f"already written came from {plan.get('accelsim_version')} ({plan.get('git_commit')})")
    else:
        size = chunk_size or spec.chunk_size or _auto_chunk(len(spec.points), n_workers)
        plan = _plan(spec, size)
        chunks.mkdir(parents=True, exist_ok=True)
        for stale in chunks.iterdir():  # resume without a plan: chunks of an unknown plan are not data
            if stale.is_file() and (_CHUNK_RE.match(stale.name) or stale.name.endswith(".tmp")):
                stale.unlink()
        _write_atomic(out / "spec.yaml", spec.text.encode())
        _write_atomic(plan_path, (dumps_finite(plan, "sweep plan", indent=2) + "\n").encode())
    chunks.mkdir(parents=True, exist_ok=True)
    n_chunks = plan["chunks"]
    per_point = spec.rows_per_point
    bounds = [(i * size, min(len(spec.points), (i + 1) * size)) for i in range(n_chunks)]
    expected = {i: (hi - lo) * per_point for i, (lo, hi) in enumerate(bounds)}
    valid, removed = _scan_chunks(chunks, expected, len(spec.columns))
    todo = [i for i in range(n_chunks) if i not in valid]
    total_points = len(spec.points)
    done_points = sum(bounds[i][1] - bounds[i][0] for i in valid)
    if progress is not None:
        progress(done_points, total_points)

    def on_done(idx: int, metrics: list[list[tuple]]) -> None:
        nonlocal done_points
        lo, hi = bounds[idx]
        rows = [r for p, m in zip(spec.points[lo:hi], metrics, strict=True) for r in _full_rows(spec, p, m)]
        valid[idx] = _write_chunk(chunks, idx, rows)
        done_points += hi - lo
        if progress is not None:
            progress(done_points, total_points)

    ctx = _context(spec, lean)
    tasks = [(i, [(p.index, p.overrides) for p in spec.points[bounds[i][0]:bounds[i][1]]]) for i in todo]
    t_run = time.perf_counter()
    where = "in-process" if n_workers <= 1 else f"process pool ({n_workers} workers)"
    if tasks:
        if executor == "dask":
            where = _execute_dask(ctx, tasks, dask_address, workers, on_done)
        else:
            _execute_local(ctx, tasks, n_workers, on_done)
    run_s = time.perf_counter() - t_run
    points_run = sum(bounds[i][1] - bounds[i][0] for i in todo)
    files, infeasible = _finish(spec, out, [valid[i] for i in range(n_chunks)])
    wall = time.perf_counter() - t0
    rows_total = len(spec.points) * per_point
    summary = {
        "name": spec.name, "out": str(out), "points": len(spec.points), "rows": rows_total,
        "chunks": n_chunks, "chunk_size": size, "chunks_run": len(tasks), "chunks_resumed": n_chunks - len(tasks),
        "removed_files": removed, "duplicates_dropped": spec.duplicates_dropped, "executor": where,
        "wall_s": round(wall, 3), "run_s": round(run_s, 3),
        "points_run": points_run, "configs_per_s": round(points_run / run_s, 1) if points_run and run_s > 0 else 0.0,
        "files": [str(f) for f in files], "warnings": warnings,
    }
    summary["infeasible_rows"] = infeasible
    meta = _meta(spec, summary, command)
    _write_atomic(out / "meta.json", (dumps_finite(meta, "sweep meta", indent=2, default=str) + "\n").encode())
    summary["files"].append(str(out / "meta.json"))
    return summary


def _read_plan(path: Path) -> dict[str, Any]:
    """plan.json of a sweep folder, checked for the fields a resume needs (ConfigError naming the file)."""
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), None, f"unreadable sweep plan ({exc}); remove the folder or use another "
                          "one") from None
    if not isinstance(plan, dict):
        raise ConfigError(str(path), None, f"a sweep plan is a JSON object, got {type(plan).__name__}; remove the "
                          "folder or use another one")
    for key in ("chunk_size", "chunks"):
        v = plan.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "chunk_size" else 0):
            raise ConfigError(str(path), key, f"expected a {'positive' if key == 'chunk_size' else 'non-negative'} "
                              f"integer, got {configio._short(v)}; the plan is corrupt")
    return plan


def _finish(spec: SweepSpec, out: Path, paths: list[Path]) -> tuple[list[Path], int]:
    """Assemble the chunks into results.csv (and results.parquet when pyarrow is importable)."""
    cols = spec.columns
    rows: list[list[Any]] = []
    for p in paths:
        part = _read_chunk(p)
        if part is None:
            raise AccelsimError(f"{p} changed while the sweep was finishing (checksum mismatch); run with --resume")
        rows += part
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    files = [out / "results.csv"]
    _write_atomic(files[0], buf.getvalue().encode())
    parquet = _write_parquet(out / "results.parquet", cols, rows)
    if parquet is not None:
        files.append(parquet)
    return files, sum(1 for r in rows if r[cols.index("feasible")] is False)


def _write_parquet(path: Path, cols: list[str], rows: list[list[Any]]) -> Path | None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    arrays = []
    for j, _ in enumerate(cols):
        values = [r[j] for r in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], type=pa.string()))
    table = pa.Table.from_arrays(arrays, names=cols)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    _write_atomic(path, sink.getvalue())
    return path


def _meta(spec: SweepSpec, summary: dict[str, Any], command: list[str] | None) -> dict[str, Any]:
    from accelsim.results import build_meta

    base_hash = configio.canonical_hash(hardware_from_dict(spec.hardware_data, spec.hardware_source).to_dict())
    meta = build_meta(command, {"hardware": base_hash, "spec": spec.spec_hash})
    return {"meta": meta, "sweep": {
        "name": spec.name, "description": spec.description, "source": spec.source,
        "hardware": spec.hardware_source, "workloads": [w.source for w in spec.workloads],
        "set": spec.set_keys, "sparsity": [s or PLAN for s in spec.sparsity], "policy": spec.policy,
        "grid": spec.grid, "random": spec.random, "swept": spec.swept, "field_kinds": spec.kinds,
        "rounding": "integer fields sampled from uniform / log_uniform: round half to even, then clamp to "
                    "[ceil(low), floor(high)]",
        "cost": spec.cost or _DEFAULT_COST, "columns": spec.columns,
        **{k: v for k, v in summary.items() if k not in ("files",)}}}


# ------------------------------------------------------------------------------------------ reading

def _parse_cell(col: str, text: str) -> Any:
    if text == "":
        return None
    if col in TEXT_COLUMNS:
        return text
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def load_results(results_dir: str | Path) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) of a finished sweep's results.csv, with numbers, booleans and None restored."""
    path = Path(results_dir) / "results.csv"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AccelsimError(f"{path} not found: is {results_dir} a finished sweep folder?") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AccelsimError(f"{path}: cannot read ({exc})") from None
    reader = csv.reader(io.StringIO(text))
    try:
        cols = next(reader)
        rows = []
        for r in reader:
            if len(r) != len(cols):
                raise AccelsimError(f"{path}: line {reader.line_num}: {len(r)} cells for {len(cols)} columns; the "
                                    "file is corrupt (rerun the sweep, or --resume it)")
            rows.append([_parse_cell(c, v) for c, v in zip(cols, r, strict=True)])
    except StopIteration:
        raise AccelsimError(f"{path} is empty") from None
    except csv.Error as exc:
        raise AccelsimError(f"{path}: line {reader.line_num}: {exc}") from None
    for need in ("workload", "sparsity", "feasible", "latency_us", "origin"):
        if need not in cols:
            raise AccelsimError(f"{path}: no '{need}' column: not an accelsim sweep's results.csv")
    return cols, rows


# ------------------------------------------------------------------------------------- CLI handlers

def sweep_command(spec_path: str | Path, out: str | Path, dask: str | None = None, resume: bool = False,
                  workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                  command: list[str] | None = None, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """``accelsim sweep SPEC -o OUT [--dask ADDRESS|local] [--resume] [--workers N] [--max-points N]``: the
    summary dict."""
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise AccelsimError(f"--max-points {max_points!r}: expected a positive integer")
    spec = load_spec(spec_path, max_points)
    return run_sweep(spec, out, executor="dask" if dask else "local", dask_address=dask, workers=workers,
                     resume=resume, progress=progress, command=command)


def sweep_plot_command(results_dir: str | Path, out: str | Path | None = None, *, x: str | None = None,
                       y: str | None = None, at: list[str] | None = None,
                       progress: Callable[[int, int], None] | None = None) -> tuple[list[Path], list[str]]:
    """``accelsim sweep-plot RESULTS [-o DIR] [--x KEY] [--y KEY] [--at KEY=VALUE]...``: the PNG files
    written (default RESULTS/plots) and notes saying which grid slice the heatmaps show."""
    from accelsim.report.sweep_plots import sweep_plot

    held: dict[str, str] = {}
    for item in at or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise AccelsimError(f"sweep-plot --at {item!r}: expected KEY=VALUE, e.g. dram.bandwidth_gb_s=400")
        if key.strip() in held:
            raise AccelsimError(f"sweep-plot --at {key.strip()}: given twice")
        held[key.strip()] = value.strip()
    return sweep_plot(results_dir, out if out is not None else Path(results_dir) / "plots", x=x, y=y, at=held,
                      progress=progress)
