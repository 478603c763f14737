"""A tensor-parallel system's energy is every device's: totals, run's text, the report's summary, a sweep row.

The layers of a system run are one device's shard (each of the devices runs one), so the model's energy per
inference and average power are the device count x one device's figures; those stay beside them, labelled.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from conftest import HW, WL

from accelsim.analysis.deployment import build_report
from accelsim.cli import main
from accelsim.energy import static_watts
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.report.deploy_tables import tables
from accelsim.results import RunResult
from accelsim.simulation import run
from accelsim.workloads.model import load_workload

BERT = {"batch": 16}  # the audit's case: bert-base, batch 16, seq 128, 2:4 (on 8 devices, now refused: 12 heads)
DEV = 4  # bert-base's 12 heads split whole over 4 devices
SYSTEM = ["system.devices=4"]


def _system() -> Hardware:
    return load_hardware(HW / "8xa100-like.yaml", SYSTEM)


@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    model = load_workload(WL / "bert-base.yaml", BERT)
    return {"system": run(model, _system(), "2:4"),
            "one": run(model, load_hardware(HW / "a100-like.yaml"), "2:4")}


def test_system_energy_is_every_devices_and_exceeds_one_gpus(runs: dict[str, RunResult]) -> None:
    res = runs["system"]
    e = res.totals["energy"]
    each = e["per_device"]
    assert e["devices"] == DEV and e["scope"].startswith(f"system: {DEV} devices")
    # one device's figures: the sum over the layers of its shard, collectives (its static power) included
    assert each["total_j"] == pytest.approx(sum(r.energy["total_j"] for r in res.layers), rel=1e-9)
    for key in ("total_j", "dense_total_j", "avg_power_w"):
        assert e[key] == pytest.approx(DEV * each[key], rel=1e-9)
    for part in ("by_component_j", "by_tensor_j"):
        for k, v in each[part].items():
            assert e[part][k] == pytest.approx(DEV * v, rel=1e-9)
    assert e["perf_per_watt_vs_dense"] == pytest.approx(each["perf_per_watt_vs_dense"], rel=1e-9)
    assert e["inferences_per_j"] == pytest.approx(1 / e["total_j"], rel=1e-9)
    seconds = res.totals["latency_us"] * 1e-6
    assert e["avg_power_w"] == pytest.approx(e["total_j"] / seconds, rel=1e-9)
    # collectives counted once: every device idles at its static power for the whole run, compute and collectives
    hw = _system()
    assert e["by_component_j"]["static"] == pytest.approx(DEV * static_watts(hw) * seconds, rel=1e-6)
    comm = [r for r in res.layers if r.path == "communication"]
    comm_s = sum(r.cycles["total"] for r in comm) / (hw.clock_ghz * 1e9)
    assert sum(r.energy["total_j"] for r in comm) == pytest.approx(static_watts(hw) * comm_s, rel=1e-9)
    # four GPUs use more energy per inference than one running the whole model (0.43 J), not 1/4 of it
    one = runs["one"].totals["energy"]
    assert e["total_j"] > one["total_j"] > each["total_j"]
    assert e["avg_power_w"] > one["avg_power_w"]
    # the MACs: the shards' work adds up to the whole model's (replicated pooler / qa_outputs a bit more)
    assert one["by_component_j"]["mac"] <= e["by_component_j"]["mac"] < 1.01 * one["by_component_j"]["mac"]
    assert RunResult.from_json(res.to_json()).to_json() == res.to_json()


def test_one_device_energy_keeps_its_keys(runs: dict[str, RunResult]) -> None:
    e = runs["one"].totals["energy"]
    assert set(e) == {"total_j", "by_component_j", "by_tensor_j", "avg_power_w", "inferences_per_j",
                      "dense_total_j", "perf_per_watt_vs_dense"}
    assert e["total_j"] == pytest.approx(sum(r.energy["total_j"] for r in runs["one"].layers), rel=1e-9)


def test_run_text_labels_system_and_per_device_figures(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--workload", str(WL / "bert-base.yaml"), "--set", "batch=16", "--sparsity", "2:4"]
    assert main([*args, "--hw", str(HW / "8xa100-like.yaml"), "--hw-set", SYSTEM[0]]) == 0
    lines = capsys.readouterr().out.splitlines()
    energy = next(x for x in lines if x.startswith("energy"))
    found = re.fullmatch(r"energy \(system of 4 devices\) ([\d,.]+) mJ \(dense ([\d,.]+) mJ\) \| avg power ([\d,.]+) W "
                         r"\|.*\| per device ([\d,.]+) mJ \(dense ([\d,.]+) mJ\), avg power ([\d,.]+) W", energy)
    assert found, energy
    system_mj, system_dense, system_w, each_mj, each_dense, each_w = (float(g.replace(",", "")) for g in found.groups())
    assert system_mj == pytest.approx(DEV * each_mj, rel=1e-5) and system_dense == pytest.approx(DEV * each_dense,
                                                                                                  rel=1e-5)
    assert system_w == pytest.approx(DEV * each_w, abs=0.3)
    assert next(x for x in lines if x.startswith("latency")).split("|")[1].startswith(" DRAM bytes per device:")
    assert next(x for x in lines if x.startswith("footprint")).startswith("footprint per device ")
    system = next(x for x in lines if x.startswith("system:"))
    assert "layers, bytes and footprint per device (each runs its shard), energy and power for all 4" in system
    assert main([*args, "--hw", str(HW / "a100-like.yaml")]) == 0  # one device: as before
    lines = capsys.readouterr().out.splitlines()
    energy = next(x for x in lines if x.startswith("energy"))
    assert energy.startswith("energy 429.624 mJ (dense 593.242 mJ) | avg power 140.3 W |")
    assert "per device" not in "\n".join(lines)


def _summary_rows(hw: str, overrides: list[str] | None = None) -> dict[str, list[str]]:
    model = load_workload(WL / "bert-base.yaml", {"batch": 2, "seq": 64})
    rep = build_report(model, load_hardware(HW / hw, overrides), "2:4")
    return {row[0]: row[1:] for row in tables(rep)["summary"][1]}


def test_report_summary_shows_system_energy_and_labels_per_device_rows() -> None:
    rows = _summary_rows("8xa100-like.yaml", SYSTEM)
    total, each = rows["energy per inference (system of 4 devices)"], rows["energy per inference (per device of 4)"]
    for col in (0, 1):  # dense, sparse
        assert float(total[col].split()[0].replace(",", "")) == pytest.approx(
            DEV * float(each[col].split()[0].replace(",", "")), rel=1e-5)
    power, power_each = rows["average power (system of 4 devices)"], rows["average power (per device of 4)"]
    assert float(power[1].split()[0].replace(",", "")) == pytest.approx(
        DEV * float(power_each[1].split()[0].replace(",", "")), rel=2e-3)
    for label in ("bytes moved, DRAM (per device of 4)", "bytes moved, SRAM (per device of 4)",
                  "metadata bytes (DRAM, per device of 4)", "weights in memory (per device of 4)"):
        assert label in rows
    assert "energy per inference" not in rows and "average power" not in rows  # no unlabelled figure
    one = _summary_rows("a100-like.yaml")  # one device: the rows as before
    for label in ("energy per inference", "average power", "bytes moved, DRAM", "metadata bytes (DRAM)",
                  "weights in memory"):
        assert label in one
    assert not any("device" in label for label in one)


def test_a_sweep_row_on_a_system_carries_the_system_energy(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"name: tp\nhardware: {HW / '8xa100-like.yaml'}\nworkloads: [{WL / 'bert-base.yaml'}]\n"
                    "set: {batch: [2], seq: [64]}\nsparsity: ['2:4']\ngrid: {system.devices: [4]}\n")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out")]) == 0
    row = next(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    res = run(load_workload(WL / "bert-base.yaml", {"batch": 2, "seq": 64}), _system(), "2:4")
    e = res.totals["energy"]
    assert float(row["energy_j"]) == pytest.approx(e["total_j"], rel=1e-5)
    assert float(row["energy_j"]) == pytest.approx(DEV * e["per_device"]["total_j"], rel=1e-5)
