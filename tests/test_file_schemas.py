"""`accelsim schema hardware|workload` describe the files as written: every shipped file validates against its
kind's schema (Draft 2020-12), and files the loader refuses for a wrong type or an unknown key are refused too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import ROOT, cli

from accelsim.cli.file_kinds import detect_kind, schema_text, validate_file
from accelsim.config.schema import read_yaml
from accelsim.errors import ConfigError

SHIPPED = sorted([*ROOT.glob("workloads/*.yaml"), *ROOT.glob("hwconfigs/*.yaml"),
                  *ROOT.glob("hwconfigs/families/*.yaml"), *ROOT.glob("examples/**/*.yaml")])
FAMILY = ROOT / "hwconfigs/families/hopper.yaml"


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(schema_text(kind))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


VALIDATORS = {k: _validator(k) for k in ("hardware", "workload")}


def _errors(kind: str, data: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATORS[kind].iter_errors(data)]


def test_the_shipped_files_cover_both_kinds() -> None:
    kinds = [detect_kind(read_yaml(p)[0], str(p)) for p in SHIPPED]
    assert kinds.count("workload") >= 24 and kinds.count("hardware") >= 26  # systems and families included


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_validates_against_its_schema(path: Path) -> None:
    data, _ = read_yaml(path)
    kind = detect_kind(data, str(path))
    if kind in VALIDATORS:
        assert _errors(kind, data) == []


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


GEMM = {"name": "g", "op": "gemm", "m": 4, "n": "batch", "k": 4}
BAD_WORKLOADS = {
    "size of the wrong type": {"name": "w", "params": {"batch": 2}, "layers": [{**GEMM, "m": [4]}]},
    "unknown layer key": {"name": "w", "params": {"batch": 2}, "layers": [{**GEMM, "rows": 4}]},
    "unknown op": {"name": "w", "layers": [{"name": "g", "op": "gemv", "m": 4}]},
    "unknown top-level key": {"name": "w", "params": {"batch": 2}, "layers": [GEMM], "bogus": 1},
    "dtype of the wrong type": {"name": "w", "dtype": 16, "params": {"batch": 2}, "layers": [GEMM]},
    "params not numbers": {"name": "w", "params": {"batch": "2"}, "layers": [GEMM]},
    "repeat block with an unknown key": {"name": "w", "params": {"batch": 2},
                                         "layers": [{"repeat": 2, "name": "b", "layers": [GEMM], "extra": 1}]},
    "layer missing a size": {"name": "w", "layers": [{"name": "g", "op": "gemm", "m": 4, "n": 4}]},
}


def test_workload_schema_takes_expressions_repeat_blocks_and_moe() -> None:
    data = {"name": "w", "params": {"batch": 2, "layers": 3}, "kv_cache_elements": "batch * 16",
            "layers": [GEMM, {"repeat": "layers", "name": "blk", "layers": [
                {**GEMM, "m": "64 * (i + 1)"}, {"repeat": 2, "name": "inner", "layers": [GEMM]},
                {"name": "moe", "op": "moe", "tokens": "batch", "hidden": 8, "intermediate": 16, "experts": 4,
                 "top_k": 2}]}]}
    assert _errors("workload", data) == []


@pytest.mark.parametrize("what", sorted(BAD_WORKLOADS))
def test_workload_schema_refuses_what_the_loader_refuses(what: str, tmp_path: Path) -> None:
    data = BAD_WORKLOADS[what]
    assert _errors("workload", data), what
    with pytest.raises(ConfigError):
        validate_file(_write(tmp_path, data))


def test_hardware_schema_takes_a_partial_file_only_with_extends(tmp_path: Path) -> None:
    partial = {"extends": str(FAMILY), "name": "p", "clock_ghz": 1.5, "dram": {"bandwidth_gb_s": 1000}}
    assert _errors("hardware", partial) == []
    rest = {k: v for k, v in partial.items() if k != "extends"}
    assert any("'core' is a required property" in e for e in _errors("hardware", rest))
    family = {"family": "f", "core": {"compute": {"kind": "tensor_core"}}}
    assert _errors("hardware", family) == []


BAD_HARDWARE = {
    "clock of the wrong type": {"extends": str(FAMILY), "name": "p", "clock_ghz": "fast"},
    "unknown key in a partial file": {"extends": str(FAMILY), "name": "p", "cor": {}},
    "unknown key below a partial file's section": {"extends": str(FAMILY), "name": "p", "dram": {"speed": 1}},
    "unknown top-level key": {**yaml.safe_load((ROOT / "hwconfigs/tpu-like.yaml").read_text()), "bogus": 1},
    "system without provenance": {"name": "s", "devices": 2, "device": str(ROOT / "hwconfigs/h100-like.yaml"),
                                  "interconnect": {"topology": "switch", "link_bandwidth_gbs": 25,
                                                   "links_per_device": 18, "latency_us": 2.0}},
    "system with a device count of the wrong type": {
        **yaml.safe_load((ROOT / "hwconfigs/8xh100-like.yaml").read_text()), "devices": "eight",
        "device": str(ROOT / "hwconfigs/h100-like.yaml")},
}


@pytest.mark.parametrize("what", sorted(BAD_HARDWARE))
def test_hardware_schema_refuses_what_the_loader_refuses(what: str, tmp_path: Path) -> None:
    data = BAD_HARDWARE[what]
    assert _errors("hardware", data), what
    with pytest.raises(ConfigError):
        validate_file(_write(tmp_path, data))


def test_schema_command_prints_the_file_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "schema", "workload")
    body = json.loads(out)
    assert rc == 0 and body["$schema"].endswith("2020-12/schema") and "RepeatBlock" in body["$defs"]
    rc, out, _ = cli(capsys, "schema", "hardware")
    body = json.loads(out)
    assert rc == 0 and {"HardwareFile", "PartialHardwareFile", "SystemFile"} <= set(body["$defs"])
