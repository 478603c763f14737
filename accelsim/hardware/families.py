"""Hardware config files that extend a family file: ``extends:`` resolved and merged, origins kept.

A config may name one file it builds on, ``extends: families/hopper.yaml`` (relative to the config's
own folder). That file may extend another, and so on. The chain is merged root-first: mappings merge
key by key, the child's value wins, and a list or scalar is replaced whole. A family file says what
it is with ``family: NAME`` and is not a complete config on its own: it holds what a GPU generation
and its software stack share (library tiles, MMA shapes, metadata rules, the family-calibrated
fields). The merged data, not the files, is what is validated, simulated and hashed.

Every leaf of the merged data remembers the file that set it (``HardwareData.origin``), so an
invalid value and its provenance entry (``accelsim.hardware.provenance``) are traced to that file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.textsafe import short_repr

EXTENDS_KEY = "extends"
FAMILY_KEY = "family"
PROVENANCE_KEY = "provenance"
META_KEYS = (EXTENDS_KEY, FAMILY_KEY, PROVENANCE_KEY)  # read here, never passed to the Hardware model
MAX_CHAIN = 8  # files in one extends chain (a config and the families above it)


@dataclass(frozen=True)
class ConfigLayer:
    """One file of an extends chain: its own keys, before merging."""

    label: str  # the file as messages name it: the path given, or the extends value joined to its folder
    path: Path  # resolved path (cycle detection, relative extends)
    data: dict[str, Any]  # the file's config keys (META_KEYS removed)
    provenance: Any  # the file's raw ``provenance`` section (None when absent)
    family: str | None  # ``family: NAME`` of a family file, else None
    extends: str | None = None  # the file's ``extends`` value


@dataclass(frozen=True)
class HardwareData:
    """A hardware config file with its extends chain merged."""

    data: dict[str, Any]  # merged config keys, child wins (what Hardware validates)
    layers: tuple[ConfigLayer, ...]  # the file itself first, then the files it extends, in order
    origin: dict[str, str] = field(default_factory=dict)  # dotted leaf path -> label of the file that set it

    @property
    def source(self) -> str:
        return self.layers[0].label

    def origin_of(self, key: str | None) -> str | None:
        """Label of the file that set ``key`` (a leaf, or the first leaf below it), if not the config itself."""
        if not key:
            return None
        label = self.origin.get(key)
        if label is None:
            label = next((v for k, v in self.origin.items() if k.startswith(key + ".")), None)
        return label if label is not None and label != self.source else None


def leaf_paths(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every leaf under ``data``: mappings are walked, lists and scalars are leaves."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaf_paths(value, f"{prefix}.{key}" if prefix else str(key))
    elif prefix:
        yield prefix, data


def read_hardware_data(path: str | Path, family: bool = False) -> HardwareData:
    """Read a hardware config and the files it extends; return the merged data (ConfigError if any is bad).

    ``family=True`` reads a family file itself (``accelsim validate``): it must say ``family: NAME``.
    """
    layers = _chain(Path(path), str(path), family)
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for layer in reversed(layers):  # the root family first, the file itself last (it wins)
        _overlay(merged, layer.data, "", layer.label, origin)
    return HardwareData(merged, tuple(layers), origin)


def _chain(path: Path, label: str, family: bool) -> list[ConfigLayer]:
    """The file and the files it extends, in that order."""
    layers: list[ConfigLayer] = []
    seen: list[Path] = []
    current, current_label = path, label
    while True:
        if layers:
            via = layers[-1]
            if current.resolve() in seen:
                loop = " -> ".join([*(lay.label for lay in layers[seen.index(current.resolve()):]), current_label])
                raise ConfigError(via.label, EXTENDS_KEY, f"cycle: {loop}")
            if len(layers) >= MAX_CHAIN:
                raise ConfigError(via.label, EXTENDS_KEY, f"more than {MAX_CHAIN} files in the extends chain")
            if not current.is_file():
                raise ConfigError(via.label, EXTENDS_KEY, f"{short_repr(via.extends)}: file not found "
                                                          f"(looked for {current_label})")
        raw, _ = configio.read_yaml(current)
        layer = _layer(raw, current_label, current.resolve(), first=not layers, family=family)
        layers.append(layer)
        seen.append(layer.path)
        if layer.extends is None:
            return layers
        relative = not Path(layer.extends).is_absolute()
        current = layer.path.parent / layer.extends if relative else Path(layer.extends)
        current_label = str(Path(layer.label).parent / layer.extends) if relative else layer.extends


def _layer(raw: dict[str, Any], label: str, resolved: Path, first: bool, family: bool) -> ConfigLayer:
    parent = raw.get(EXTENDS_KEY)
    if EXTENDS_KEY in raw and not (isinstance(parent, str) and parent.strip()):
        raise ConfigError(label, EXTENDS_KEY, f"expected the path of one family file (relative to this file's "
                                              f"folder), e.g. families/hopper.yaml; got {short_repr(parent)}")
    name = raw.get(FAMILY_KEY)
    if FAMILY_KEY in raw and not (isinstance(name, str) and name.strip()):
        raise ConfigError(label, FAMILY_KEY, f"expected the family's name, e.g. hopper; got {short_repr(name)}")
    if first and not family and name is not None:
        raise ConfigError(label, FAMILY_KEY, f"this is a family file ({name}), not a complete hardware config; "
                                             "load a config that extends it")
    if first and family and name is None:
        raise ConfigError(label, FAMILY_KEY, "missing: a family file names itself with family: NAME")
    data = {k: v for k, v in raw.items() if k not in META_KEYS}
    return ConfigLayer(label, resolved, data, raw.get(PROVENANCE_KEY), name, parent)


def _overlay(dst: dict[str, Any], src: dict[str, Any], prefix: str, label: str, origin: dict[str, str]) -> None:
    for key, value in src.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value and isinstance(dst.get(key), dict):
            _overlay(dst[key], value, path, label, origin)
            continue
        for old in [k for k in origin if k == path or k.startswith(path + ".")]:
            del origin[old]
        dst[key] = _tree_copy(value)
        for leaf, _ in leaf_paths(value, path):
            origin[leaf] = label


def _tree_copy(value: Any) -> Any:
    """A copy of the mappings and lists in ``value``; scalars (immutable, possibly the YAML loader's own int
    and float subclasses) are shared."""
    if isinstance(value, dict):
        return {k: _tree_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tree_copy(v) for v in value]
    return value
