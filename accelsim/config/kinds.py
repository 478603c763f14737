"""The kinds of YAML file accelsim reads: recognise one, validate it with its own loader, print its schema.

``accelsim validate`` and ``accelsim schema`` use this. Each kind keeps its loader where it lives
(hardware.py, workload.py, sweep.py, runtime.py); this module only dispatches.

The sweep spec's schema is the model that validates it (``sweep.schema.SweepSpecModel``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from accelsim.errors import ConfigError

KINDS = ("hardware", "workload", "sweep", "runtime", "variants")
_SWEEP_KEYS = frozenset({"workloads", "grid", "random"})


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
        from accelsim.sweep import load_spec

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
    model: type[BaseModel]
    if kind == "sweep":
        from accelsim.sweep.schema import SweepSpecModel

        model = SweepSpecModel
    elif kind == "runtime":
        from accelsim.serving.config import RuntimeConfig

        model = RuntimeConfig
    elif kind == "variants":
        from accelsim.serving.variants import VariantsFile

        model = VariantsFile
    else:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True)
