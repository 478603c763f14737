"""The kinds of YAML file accelsim reads: recognise one, validate it with its own loader, print its schema.

``accelsim validate`` and ``accelsim schema`` use this. Each kind keeps its loader where it lives
(hardware.py, workload.py, sweep.py, runtime.py); this module only dispatches.

The sweep spec is validated in code (``sweep.spec_from_dict``), not by a pydantic model:
:class:`SweepSpecSchema` describes its top-level keys for ``accelsim schema sweep`` (editor
completion) only and validates nothing; a test keeps its keys equal to ``sweep.SPEC_KEYS``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from accelsim.errors import ConfigError

KINDS = ("hardware", "workload", "sweep", "runtime", "variants")
_SWEEP_KEYS = frozenset({"workloads", "grid", "random"})

Number = int | float
Distribution = dict[Literal["choice", "uniform", "log_uniform", "int_uniform"], list[Any]]


class SweepSpecSchema(BaseModel):
    """A sweep spec (sweeps/*.yaml): one base hardware config, workloads, and the points to run.

    Schema only: ``accelsim validate`` and ``accelsim sweep`` check a spec with ``sweep.spec_from_dict``.
    """

    model_config = ConfigDict(extra="forbid", title="SweepSpec")

    name: str = Field(min_length=1, description="Short name of the sweep (results folder, plots).")
    description: str | None = Field(None, description="Free text.")
    hardware: str | dict[str, Any] = Field(description="Base hardware config: a file (relative to the current "
                                           "directory, the spec's folder or its parent) or an inline config.")
    workloads: str | list[str] = Field(description="Workload files, each run at every point.")
    set: dict[str, Number | list[Number]] = Field(default_factory=dict, description="Workload parameters and "
                                                  "their values (product); each applies to the workloads that "
                                                  "declare it.")
    sparsity: str | None | list[str | None] = Field(["plan"], description="Patterns run at every point: dense, "
                                                    "N:M, or plan (the workload's own plan).")
    policy: Literal["sparse-if-supported", "fastest"] = "sparse-if-supported"
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="Dotted hardware paths to lists of "
                                       "values; the grid is their product.")
    random: dict[str, int | Distribution] | None = Field(None, description="n (samples), seed, and dotted "
                                                         "hardware paths to one distribution each: {choice: "
                                                         "[...]}, {uniform: [a, b]}, {log_uniform: [a, b]} or "
                                                         "{int_uniform: [a, b]}; unioned with the grid.")
    chunk_size: int | None = Field(None, ge=1, description="Points per result chunk (default: automatic).")
    cost: str | None = Field(None, description="Cost expression over result columns for the Pareto plot.")


def detect_kind(data: Any, source: str) -> str:
    """Which kind of file ``data`` (a loaded YAML document) is, from its top-level keys."""
    if not isinstance(data, dict):
        raise ConfigError(source, None, f"top level must be a mapping of keys, got {type(data).__name__}")
    keys = set(data)
    if "layers" in keys:
        return "workload"
    if keys & _SWEEP_KEYS:
        return "sweep"
    if "variants" in keys:
        return "variants"
    from accelsim.hardware.model import Hardware

    if keys & (set(Hardware.model_fields) - {"name"}):
        return "hardware"
    from accelsim.serving.config import RuntimeConfig

    if keys and keys <= set(RuntimeConfig.model_fields):
        return "runtime"
    raise ConfigError(source, None, "not a file accelsim knows: expected a hardware config (core, dram, ...), a "
                      "workload (layers), a sweep spec (workloads), a runtime config (max_batch, variability, "
                      f"...) or a variants file (variants); top-level keys: {', '.join(map(str, data)) or 'none'}")


def validate_file(path: str | Path) -> str:
    """Validate one file with the loader of its kind; return the one-line verdict (ConfigError if invalid)."""
    from accelsim.config.schema import read_yaml

    src = str(path)
    data, _ = read_yaml(path)
    kind = detect_kind(data, src)
    if kind == "workload":
        from accelsim.workloads.model import workload_from_dict

        wl = workload_from_dict(data, src)
        return f"{src}: ok (workload '{wl.name}', {len(wl.layers)} layers)"
    if kind == "hardware":
        from accelsim.hardware.model import hardware_from_dict

        return f"{src}: ok (hardware '{hardware_from_dict(data, src).name}')"
    if kind == "sweep":
        from accelsim.sweep.execute import load_spec

        spec = load_spec(path)
        return (f"{src}: ok (sweep '{spec.name}', {len(spec.points)} hardware points x {spec.rows_per_point} "
                f"rows each)")
    if kind == "variants":
        from accelsim.serving.variants import load_variants

        vf, _ = load_variants(path)
        return f"{src}: ok (variants, {len(vf.variants)})"
    from accelsim.serving.config import RuntimeConfig

    RuntimeConfig.from_dict(data, src)
    return f"{src}: ok (runtime config)"


def schema_text(kind: str) -> str:
    """JSON Schema of one file kind (see KINDS), as indented JSON."""
    if kind == "hardware":
        from accelsim.hardware.model import hardware_schema

        return hardware_schema()
    if kind == "workload":
        from accelsim.workloads.model import workload_schema

        return workload_schema()
    if kind == "sweep":
        model: type[BaseModel] = SweepSpecSchema
    elif kind == "runtime":
        from accelsim.serving.config import RuntimeConfig

        model = RuntimeConfig
    elif kind == "variants":
        from accelsim.serving.variants import VariantsFile

        model = VariantsFile
    else:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True)
