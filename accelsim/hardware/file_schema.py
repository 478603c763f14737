"""JSON Schema of a hardware file as written (``accelsim schema hardware``): a complete config, a config or
family file that builds on another (``extends`` / ``family``), or a system file (``device`` / ``devices`` /
``interconnect``).

A file with ``extends`` (or a family file) gives only the keys it changes: its keys are checked for their
names and types, none is required (the merged config must be complete, which only loading can tell:
``accelsim validate``). A system file names its device config and an interconnect, and its provenance.
"""

from __future__ import annotations

import json
from typing import Any

from accelsim.config.file_schema import DEFS, REF_PREFIX, relaxed, split_defs
from accelsim.hardware.families import EXTENDS_KEY, FAMILY_KEY, PROVENANCE_KEY
from accelsim.hardware.model import Hardware
from accelsim.hardware.provenance import Section as ProvenanceSection
from accelsim.hardware.systems import SYSTEM_KEYS
from accelsim.system import SystemSpec

_PROVENANCE = {"$ref": REF_PREFIX + "ProvenanceSection", "description": "Where each number of this file comes "
               "from (spec, derived, family-calibrated or estimate) and its sources."}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF_PREFIX + name}


def hardware_file_schema() -> dict[str, Any]:
    """The hardware file's JSON Schema (Draft 2020-12), as a dict."""
    defs, _ = split_defs(Hardware.model_json_schema(ref_template=REF_PREFIX + "{model}"), "Hardware")
    section = ProvenanceSection.model_json_schema(ref_template=REF_PREFIX + "{model}")
    defs.update(section.pop(DEFS, {}))
    defs["ProvenanceSection"] = section
    system = SystemSpec.model_json_schema(ref_template=REF_PREFIX + "{model}")
    defs.update(system.pop(DEFS, {}))
    partial = relaxed(defs, "Hardware")
    hw = defs["Hardware"]
    defs["HardwareFile"] = {**hw, "title": "Hardware config",
                            "properties": {**hw["properties"], PROVENANCE_KEY: _PROVENANCE}}
    part = defs[partial]
    defs["PartialHardwareFile"] = {
        **part, "title": "Hardware config or family file that extends another",
        "description": "Gives only the keys it sets over the file it extends (merged key by key, its values "
                       "win): nothing is required here; the merged config must be complete.",
        "properties": {
            **part["properties"], PROVENANCE_KEY: _PROVENANCE,
            EXTENDS_KEY: {"type": "string", "minLength": 1, "description": "The file this one builds on (path "
                          "relative to this file's folder), e.g. families/hopper.yaml."},
            FAMILY_KEY: {"type": "string", "minLength": 1, "description": "Marks a family file (what a GPU "
                         "generation and its software stack share) and names it; it is extended, not loaded."}}}
    defs["SystemFile"] = {
        **system, "title": "System file",
        "description": "devices copies of one hardware config (device: its file, relative to this one), "
                       "tensor-parallel over an interconnect; it extends nothing.",
        "properties": {**system["properties"], PROVENANCE_KEY: _PROVENANCE,
                       "device": {**system["properties"]["device"],
                                  "description": "The device's hardware config file, relative to this file."}},
        "required": [*system.get("required", []), PROVENANCE_KEY]}
    extends = {"anyOf": [{"required": [EXTENDS_KEY]}, {"required": [FAMILY_KEY]}]}
    is_system = {"not": {"required": ["core"]}, "anyOf": [{"required": [k]} for k in SYSTEM_KEYS]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "accelsim hardware file",
            "description": "A hardware config; with extends or family, a file that builds on another (no key "
                           "required); with device / devices / interconnect and no core, a system file.",
            "type": "object",
            "if": extends, "then": _ref("PartialHardwareFile"),
            "else": {"if": is_system, "then": _ref("SystemFile"), "else": _ref("HardwareFile")},
            DEFS: defs}


def hardware_schema() -> str:
    """JSON Schema of the hardware file, as indented JSON."""
    return json.dumps(hardware_file_schema(), indent=2, sort_keys=True)
