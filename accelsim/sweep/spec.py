"""A sweep spec, resolved: its files read, every point's hardware config validated, before anything runs.

Spec (YAML, read with ``safe_load``; or a dict, see :func:`spec_from_dict`)::

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

Each key is checked by :class:`accelsim.sweep.schema.SweepSpecModel`; this module reads the files
the spec names and builds the points. Rows: one per (hardware point, workload, set-parameter
combination, sparsity), ordered by point, then workload, then parameters (product order), then
sparsity (spec order): deterministic, and the same for every executor.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from accelsim.config.schema import canonical_hash, read_yaml
from accelsim.config.templating import evaluate
from accelsim.errors import ConfigError
from accelsim.hardware.families import read_hardware_data
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.hardware.systems import is_system_data
from accelsim.sweep.columns import FIXED_COLUMNS, FORMAT_VERSION, PLAN, cost_names, table_columns
from accelsim.sweep.points import Point, build_points
from accelsim.sweep.sampling import field_kind, grid_product, sample
from accelsim.sweep.schema import RandomSpec, SpecShape
from accelsim.textsafe import short_repr
from accelsim.workloads.model import workload_from_dict

MAX_POINTS = 100_000  # hardware points a spec may ask for (--max-points raises it)
ROWS_PER_POINT_LIMIT = 10  # rows may be at most this many times max_points


@dataclass(frozen=True)
class WorkloadEntry:
    """A workload file and the parameter combinations it is run with."""

    source: str
    label: str
    data: dict[str, Any]
    combos: tuple[dict[str, Any], ...]  # one per set-parameter combination (only params it declares)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: every point's hardware config has been validated."""

    name: str
    source: str
    text: str  # the spec as written (copied to spec.yaml beside the results)
    hardware_source: str
    hardware_data: dict[str, Any]
    workloads: tuple[WorkloadEntry, ...]
    set_keys: tuple[str, ...]
    sparsity: tuple[str | None, ...]
    policy: str
    grid: dict[str, list[Any]]
    random: RandomSpec | None
    swept: tuple[str, ...]
    points: tuple[Point, ...]
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
        return table_columns(self.swept, self.set_keys)


def load_spec(path: str | Path, max_points: int = MAX_POINTS) -> SweepSpec:
    """Read and validate a sweep spec file (YAML ``safe_load``); every point is validated here."""
    data, raw = read_yaml(path)
    p = Path(path)
    return spec_from_dict(data, source=str(path), base_dir=p.resolve().parent,
                          text=raw.decode("utf-8", errors="replace"), max_points=max_points)


def spec_from_dict(data: dict[str, Any], source: str = "<sweep>", base_dir: str | Path | None = None,
                   text: str | None = None, max_points: int = MAX_POINTS) -> SweepSpec:
    """Validate a sweep spec given as plain data. Raises ConfigError naming the key (and point).

    ``max_points`` bounds the hardware points (counted before any is built) and the rows: at most
    ``ROWS_PER_POINT_LIMIT`` x ``max_points`` (points x workload settings x sparsity patterns).
    Relative file paths are looked up in the current directory, then ``base_dir`` and its parent.
    """
    if not isinstance(data, dict):
        raise ConfigError(source, None, f"top level must be a mapping of keys, got {type(data).__name__}")
    base = Path(base_dir) if base_dir is not None else None
    hardware = _Hardware(data.get("hardware"), base, source)
    shape = SpecShape(data, source, hardware.kind_of)
    shape.raise_through("workloads-missing")
    name: str = shape.value("name")
    n_points = _check_size(source, data, max_points)
    shape.raise_through("hardware")
    hw_source, hw_data = hardware.resolved()
    sets: dict[str, list[Any]] = shape.value("set")
    workloads = _workloads(data, shape, sets, base, source, n_points, max_points)

    sparsity: list[str | None] = shape.value("sparsity")
    policy: str = shape.value("policy")
    grid: dict[str, list[Any]] = shape.value("grid")
    random: RandomSpec | None = shape.value("random")
    kinds: dict[str, str | None] = {d.path: d.kind for d in random.draws} if random is not None else {}
    for path in grid:
        kinds.setdefault(path, field_kind(path, hw_data))
    swept = list(grid) + [p for p in (random.as_dict() if random is not None else {})
                          if p not in ("n", "seed") and p not in grid]
    samples = sample(random.draws, random.n, random.seed) if random is not None else []
    points, dropped = build_points(hw_data, grid_product(grid), samples, swept, source, hw_source)

    chunk_size: int | None = shape.value("chunk_size")
    set_keys = list(sets)
    clash = [c for c in [*swept, *set_keys] if c in FIXED_COLUMNS]
    if clash:
        raise ConfigError(source, clash[0], "this name is also a result column; it cannot be swept")
    cost: str | None = shape.value("cost")
    if cost is not None:
        _check_cost(data["cost"], table_columns(swept, set_keys), source)  # as written: errors quote it
    spec_hash = canonical_hash({
        "format": FORMAT_VERSION, "name": name, "hardware": hw_data,
        "workloads": [[w.label, w.data, list(w.combos)] for w in workloads], "set_keys": set_keys,
        "sparsity": sparsity, "policy": policy, "swept": swept,
        "points": [[p.origin, p.overrides] for p in points]})
    return SweepSpec(name=name, source=source, text=text if text is not None else _dump_yaml(data),
                     hardware_source=hw_source, hardware_data=hw_data, workloads=tuple(workloads),
                     set_keys=tuple(set_keys), sparsity=tuple(sparsity), policy=policy, grid=grid, random=random,
                     swept=tuple(swept), points=tuple(points), chunk_size=chunk_size, cost=cost,
                     duplicates_dropped=dropped, spec_hash=spec_hash, description=shape.value("description"),
                     kinds=kinds)


class _Hardware:
    """The base hardware config, read before the spec's keys are checked (``random`` needs to know which
    fields are integers); a failure is kept and raised in its turn (:meth:`resolved`)."""

    def __init__(self, value: Any, base: Path | None, source: str) -> None:
        self.error: ConfigError | None = None
        self.source = ""
        self.data: dict[str, Any] | None = None
        if not (isinstance(value, dict) or (isinstance(value, str) and value.strip())):
            return  # the spec's check of 'hardware' says what is wrong
        try:
            if isinstance(value, dict):
                self.source, self.data = f"{source}: hardware", copy.deepcopy(value)
            else:
                path = resolve_file(value, base, source, "hardware")
                self.data = read_hardware_data(path).data  # extends: resolved, the families merged in
                if is_system_data(self.data):  # a system file: its device's config with a system section
                    self.data = load_hardware(path).to_dict()
                self.source = str(path)
                if "layers" in self.data and "core" not in self.data:
                    raise ConfigError(source, "hardware", f"{value} is a workload file, expected a hardware config")
            hardware_from_dict(self.data, self.source)  # the base config itself must be valid
        except ConfigError as exc:
            self.error = exc

    def kind_of(self, path: str) -> str | None:
        return field_kind(path, self.data) if self.data is not None else None

    def resolved(self) -> tuple[str, dict[str, Any]]:
        if self.error is not None:
            raise self.error
        assert self.data is not None
        return self.source, self.data


def _workloads(data: dict[str, Any], shape: SpecShape, sets: dict[str, list[Any]], base: Path | None,
               source: str, n_points: int, max_points: int) -> list[WorkloadEntry]:
    """Read each workload file and validate it with every set-parameter combination it declares."""
    shape.raise_through("workloads", 0)
    values = data["workloads"] if isinstance(data["workloads"], list) else [data["workloads"]]
    read: list[tuple[Path, dict[str, Any], list[str]]] = []
    declared_any: set[str] = set()
    for i, value in enumerate(values):
        shape.raise_through("workloads", i)
        wl_path = resolve_file(value, base, source, f"workloads[{i}]")
        wl_data, _ = read_yaml(wl_path)
        if "core" in wl_data and "layers" not in wl_data:
            raise ConfigError(source, f"workloads[{i}]", f"{value} is a hardware config, expected a workload file")
        declared = set((wl_data.get("params") or {}).keys()) if isinstance(wl_data.get("params"), dict) else set()
        keys = [k for k in sets if k in declared]
        declared_any |= set(keys)
        read.append((wl_path, wl_data, keys))
    settings = sum(math.prod(len(sets[k]) for k in keys) for _, _, keys in read)
    raw_sparsity = data.get("sparsity", [PLAN])
    patterns = len(raw_sparsity) if isinstance(raw_sparsity, list) else 1
    if n_points * settings * patterns > ROWS_PER_POINT_LIMIT * max_points:
        raise ConfigError(source, "set" if settings > patterns else "sparsity",
                          f"{n_points:,} hardware points x {settings:,} workload settings x {patterns} "
                          f"sparsity patterns = {n_points * settings * patterns:,} rows: more than the limit of "
                          f"{ROWS_PER_POINT_LIMIT * max_points:,} ({ROWS_PER_POINT_LIMIT} x --max-points "
                          f"{max_points:,})")
    workloads: list[WorkloadEntry] = []
    for i, (wl_path, wl_data, keys) in enumerate(read):
        combos = tuple(dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sets[k] for k in keys)))
        name = wl_data.get("name")
        label = name if isinstance(name, str) else wl_path.stem
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
    return workloads


def resolve_file(value: Any, base_dir: Path | None, source: str, key: str) -> Path:
    """A path from the spec: absolute, or relative to the current directory, the spec's folder or its parent."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(source, key, f"expected a file path, got {short_repr(value, 60)}")
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


def _check_cost(expr: str, columns: list[str], source: str) -> None:
    """The cost expression names only result columns (evaluated with every column at 3) and does not divide by
    zero whatever the columns hold (a zero at 3 is tried again at 7 and 0.37: a column may be 0 at some points)."""
    names = cost_names(columns)
    for trial in (3.0, 7.0, 0.37):
        try:
            evaluate(expr, {n: trial for n in names})
            return
        except ValueError as exc:
            if "division by zero" not in str(exc):
                raise ConfigError(source, "cost", str(exc).replace("parameter", "column")) from None
    raise ConfigError(source, "cost", f"{short_repr(expr)} divides by zero whatever the columns hold: no row would "
                                      "have a cost")


def _dump_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False)
