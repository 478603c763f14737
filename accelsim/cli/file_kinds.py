"""The kinds of YAML file accelsim reads: recognise one, validate it with its own loader, give its schema.

``accelsim validate`` and ``accelsim schema`` use this. Each kind keeps its loader and model where it
lives (hardware/, workloads/, sweep/, serving/); this module only holds the table that maps a kind's
name to them. It sits in cli/ because it reaches into every layer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelsim.config.schema import read_yaml
from accelsim.errors import ConfigError
from accelsim.hardware.families import EXTENDS_KEY, FAMILY_KEY, PROVENANCE_KEY, read_hardware_data
from accelsim.hardware.file_schema import hardware_schema
from accelsim.hardware.model import Hardware, load_hardware_with_provenance
from accelsim.hardware.provenance import Provenance, provenance
from accelsim.report.provenance_text import format_provenance
from accelsim.serving.config import RuntimeConfig
from accelsim.serving.variants import VariantsFile, check_variants
from accelsim.sweep import load_spec
from accelsim.sweep.schema import SweepSpecModel
from accelsim.textsafe import printable
from accelsim.workloads.file_schema import workload_schema
from accelsim.workloads.model import workload_from_dict

_SWEEP_KEYS = frozenset({"workloads", "grid", "random"})


@dataclass(frozen=True)
class FileKind:
    """One kind of file: how to validate it (returning the one-line verdict) and its JSON Schema."""

    name: str
    verdict: Callable[[Path, dict[str, Any], str], str]
    schema: Callable[[], str]


def _workload(path: Path, data: dict[str, Any], src: str) -> str:
    wl = workload_from_dict(data, src)
    return f"{src}: ok (workload '{wl.name}', {len(wl.layers)} layers)"


def hardware_file_provenance(path: Path, data: dict[str, Any]) -> tuple[str, Provenance]:
    """(what the file is, its provenance) of a hardware config or family file; ConfigError if invalid."""
    if FAMILY_KEY in data:
        hd = read_hardware_data(path, family=True)
        prov = provenance(hd)
        return f"hardware family '{data[FAMILY_KEY]}'", prov
    hw, prov = load_hardware_with_provenance(path)
    extends = f", extends {data[EXTENDS_KEY]}" if EXTENDS_KEY in data else ""
    if hw.system is not None:  # a system file: the provenance listed is its device's
        return f"system '{hw.name}': {hw.devices} x {hw.system.device}, {hw.system.interconnect.topology}; device", prov
    return f"hardware '{hw.name}'{extends}", prov


def _hardware(path: Path, data: dict[str, Any], src: str) -> str:
    what, prov = hardware_file_provenance(path, data)
    return f"{src}: ok ({what}; {prov.summary()})" if prov.declared else f"{src}: ok ({what})"


def _sweep(path: Path, data: dict[str, Any], src: str) -> str:
    spec = load_spec(path)
    return f"{src}: ok (sweep '{spec.name}', {len(spec.points)} hardware points x {spec.rows_per_point} rows each)"


def _variants(path: Path, data: dict[str, Any], src: str) -> str:
    checked = check_variants(path)  # what decide and serve check before simulating
    return f"{src}: ok (variants, {len(checked.file.variants)})"


def _runtime(path: Path, data: dict[str, Any], src: str) -> str:
    RuntimeConfig.from_dict(data, src)
    return f"{src}: ok (runtime config)"


def _json_schema(model: Any) -> Callable[[], str]:
    return lambda: json.dumps(model.model_json_schema(), indent=2, sort_keys=True)


FILE_KINDS: dict[str, FileKind] = {k.name: k for k in (
    FileKind("hardware", _hardware, hardware_schema),
    FileKind("workload", _workload, workload_schema),
    FileKind("sweep", _sweep, _json_schema(SweepSpecModel)),
    FileKind("runtime", _runtime, _json_schema(RuntimeConfig)),
    FileKind("variants", _variants, _json_schema(VariantsFile)),
)}
KINDS = tuple(FILE_KINDS)


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
    if keys & ((set(Hardware.model_fields) - {"name"}) | {EXTENDS_KEY, FAMILY_KEY, PROVENANCE_KEY}):
        return "hardware"
    if keys & set(RuntimeConfig.model_fields):  # validation then names any other key (a typo) as unknown
        return "runtime"
    raise ConfigError(source, None, "not a file accelsim knows: expected a hardware config (core, dram, ...), a "
                      "workload (layers), a sweep spec (workloads), a runtime config (max_batch, variability, "
                      f"...) or a variants file (variants); top-level keys: {', '.join(map(str, data)) or 'none'}")


def validate_file(path: str | Path) -> str:
    """Validate one file with the loader of its kind; return the one-line verdict (ConfigError if invalid).

    The verdict quotes names from the file (and the path): control characters are escaped, as run does."""
    src = str(path)
    data, _ = read_yaml(path)
    return printable(FILE_KINDS[detect_kind(data, src)].verdict(Path(path), data, src))


def provenance_text(path: str | Path) -> str | None:
    """The per-value provenance table of a hardware config or family file (None for other kinds)."""
    data, _ = read_yaml(path)
    if detect_kind(data, str(path)) != "hardware":
        return None
    _, prov = hardware_file_provenance(Path(path), data)
    return format_provenance(prov, str(path))


def schema_text(kind: str) -> str:
    """JSON Schema of one file kind (see KINDS), as indented JSON."""
    if kind not in FILE_KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return FILE_KINDS[kind].schema()
