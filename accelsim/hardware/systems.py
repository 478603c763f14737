"""System config files: ``devices`` copies of one hardware config plus an ``interconnect``.

A system file names its device config (``device:``, a path relative to the file) instead of describing a
part::

    name: 8xh100-like
    devices: 8
    device: h100-like.yaml
    interconnect: {topology: switch, link_bandwidth_gbs: 25, links_per_device: 18, latency_us: 2.0}
    provenance: {sources: {...}, fields: {...}}   # every number, as in a hardware config

Loading it (:func:`accelsim.hardware.model.load_hardware`) gives the device's :class:`Hardware` with the
system's name and a ``system`` section (:class:`accelsim.system.SystemSpec`); ``--hw-set`` then reaches the
device's fields as usual and the system's under ``system.`` (e.g. ``system.interconnect.latency_us=1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.hardware.families import EXTENDS_KEY, PROVENANCE_KEY, HardwareData, read_hardware_data
from accelsim.hardware.provenance import Provenance, provenance
from accelsim.system import SystemSpec
from accelsim.textsafe import short_repr

SYSTEM_KEYS = ("devices", "device", "interconnect")


def is_system_data(data: dict[str, Any]) -> bool:
    """Whether merged config data is a system file's (it names devices / a device / an interconnect, no core)."""
    return "core" not in data and any(k in data for k in SYSTEM_KEYS)


def read_system(path: str | Path, hd: HardwareData) -> tuple[SystemSpec, HardwareData, Provenance]:
    """The system of the file ``path`` (read as ``hd``), its device's data and the system file's provenance."""
    src = str(path)
    if len(hd.layers) > 1:
        raise ConfigError(src, EXTENDS_KEY, "a system file names its device with device: PATH; it extends nothing")
    if hd.layers[0].provenance is None:
        raise ConfigError(src, PROVENANCE_KEY, "missing: a system file says where each interconnect number comes "
                                               "from (provenance: sources and fields, as a hardware config)")
    spec = configio.validate(SystemSpec, hd.data, src)  # before provenance: a mistyped number is named as such
    prov = provenance(hd)
    device = Path(spec.device)
    device_path = device if device.is_absolute() else Path(src).parent / device
    if not device_path.is_file():
        raise ConfigError(src, "device", f"{short_repr(spec.device)}: file not found (looked for {device_path})")
    dev = read_hardware_data(device_path)
    if is_system_data(dev.data):
        raise ConfigError(src, "device", f"{short_repr(spec.device)} is a system file; a system's device is one "
                                         "hardware config")
    return spec, dev, prov


def refuse_device_override(path: str, data: dict[str, Any], source: str, how: str) -> None:
    """ConfigError for an override (``--hw-set``, a sweep key) of a loaded system's ``system.device`` or whole
    ``system`` section: the device's config was read when the system file loaded, so the run would keep it and
    only the echoed name would change."""
    keys = [k for k in path.split(".") if k]
    if "system" in data and keys[:1] == ["system"] and (len(keys) == 1 or keys[1] == "device"):
        raise ConfigError(source, path, f"{how} cannot swap a system's device (its config was read with the system "
                                        "file): point the system file's device: at another config")


def system_data(spec: SystemSpec, device: HardwareData) -> dict[str, Any]:
    """The config data a system validates as: the device's, named after the system, with a ``system`` section."""
    return {**device.data, "name": spec.name, "system": spec.model_dump(mode="json")}
