"""System configs: N copies of a device plus an interconnect, loaded wherever --hw is; bad ones fail in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsim.cli import main
from accelsim.hardware.model import hardware_from_dict, load_hardware

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
DECODE = ROOT / "workloads" / "llama3-8b-decode.yaml"


@pytest.mark.parametrize(("name", "device", "links"),
                         [("8xh100-like", "h100-like", 18), ("8xa100-like", "a100-like", 12)])
def test_shipped_systems_are_eight_devices_on_nvswitch(name: str, device: str, links: int) -> None:
    hw = load_hardware(HW / f"{name}.yaml")
    dev = load_hardware(HW / f"{device}.yaml")
    assert hw.name == name and hw.devices == 8 and hw.system is not None
    ic = hw.system.interconnect
    assert (ic.topology, ic.links_per_device, ic.link_bandwidth_gbs) == ("switch", links, 25.0)
    # per direction: half NVIDIA's bidirectional 900 / 600 GB/s, at the share NCCL sustains (calibrated on
    # validation/interconnect/, tests/test_collective_validation.py)
    assert ic.port_bytes_per_s == pytest.approx(links * 25e9 * ic.bandwidth_efficiency) and ic.bandwidth_efficiency < 1
    # the device is the device config, unchanged
    assert {k: v for k, v in hw.to_dict().items() if k not in ("name", "system")} == \
        {k: v for k, v in dev.to_dict().items() if k != "name"}
    assert hardware_from_dict(hw.to_dict()) == hw  # a result's hardware section reads back as the system


def test_a_device_config_is_one_device_and_serialises_as_before() -> None:
    hw = load_hardware(HW / "h100-like.yaml")
    assert hw.devices == 1 and hw.system is None and "system" not in hw.to_dict()


def test_hw_set_reaches_the_system_and_the_device() -> None:
    hw = load_hardware(HW / "8xh100-like.yaml", ["system.devices=4", "system.interconnect.latency_us=0.5",
                                                 "dram.bandwidth_gb_s=3000"])
    assert hw.devices == 4 and hw.system is not None and hw.system.interconnect.latency_us == 0.5
    assert hw.dram.bandwidth_gb_s == 3000


def _system(tmp_path: Path, old: str, new: str) -> Path:
    text = (HW / "8xh100-like.yaml").read_text().replace("device: h100-like.yaml", f"device: {HW / 'h100-like.yaml'}")
    assert old in text
    path = tmp_path / "sys.yaml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(("old", "new", "key", "problem"), [
    ("topology: switch ", "topology: mesh ", "interconnect.topology", "should be 'switch' or 'ring'"),
    ("latency_us: 15.17 ", "latency_us: -1 ", "interconnect.latency_us", "greater than or equal to 0"),
    ("devices: 8 ", "devices: 0 ", "devices", "greater than 0"),
    ("  overlap: none ", "  overlapp: none ", "interconnect.overlapp", "unknown key"),
    ("algorithm: in_switch ", "algorithm: tree ", "interconnect.algorithm", "unknown algorithm 'tree'"),
    ("topology: switch ", "topology: ring ", "interconnect.algorithm", "in_switch runs on a switch topology, not ring"),
    ("    interconnect.latency_us:", "    interconnect.latency_usx:", "provenance.fields.interconnect.latency_usx",
     "no number of this file is at or below this path"),
])
def test_a_bad_system_config_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str,
                                                new: str, key: str, problem: str) -> None:
    path = _system(tmp_path, old, new)
    assert main(["run", "--hw", str(path), "--workload", str(DECODE)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"accelsim: error: {path}: {key}") and problem in err


def test_a_missing_device_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sys.yaml"
    path.write_text((HW / "8xh100-like.yaml").read_text())  # device: h100-like.yaml, not next to it
    assert main(["run", "--hw", str(path), "--workload", str(DECODE)]) == 2
    assert f"{path}: device: 'h100-like.yaml': file not found" in capsys.readouterr().err
