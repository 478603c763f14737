"""A run's clocks taken together (``totals.clock``) and the words ``run`` says about them: the governor is the
config's, layers without energy figures and collectives are named, not counted at a clock they did not run at."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import HW, WL, cli

from accelsim import load_hardware, load_workload, run
from accelsim.hardware.model import Hardware, hardware_from_dict
from accelsim.report.clock_text import clock_line

A100 = load_hardware(HW / "a100-like.yaml")


def _with_cap(hw: Hardware, **cap: Any) -> Hardware:
    d = copy.deepcopy(hw.to_dict())
    d["energy"]["power_cap"].update(cap)
    return hardware_from_dict(d)


def _clock_line(out: str) -> str:
    return next(x for x in out.splitlines() if x.startswith("clock "))


def test_a_throttled_dense_baseline_is_named_when_no_layer_of_the_run_was_capped(capsys) -> None:
    # bert-base-gemms 2:4 on a100-like: the 2:4 kernels draw at most ~96 W, their dense baselines up to ~154 W
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", WL / "bert-base-gemms.yaml",
                       "--sparsity", "2:4", "--hw-set", "energy.power_cap.tdp_w=120", "--format", "json")
    assert code == 0
    c = json.loads(out)["totals"]["clock"]
    assert c["power_capped_layers"] == 0 and c["dense_baseline_ghz"] < c["nominal_ghz"]
    line = clock_line(c, 5)
    assert "not reached by this run" in line
    assert f"dense baseline: its layers ran at {c['dense_baseline_ghz']:.3f} GHz" in line
    # a cap nothing reaches, dense baselines included, says only that
    free = run(load_workload(WL / "bert-base-gemms.yaml"), _with_cap(A100, tdp_w=400.0), "2:4")
    assert "dense baseline" not in clock_line(free.totals["clock"], len(free.layers))


def test_a_mixed_dtype_run_keeps_the_configs_governor_and_names_the_dtype_without_energy(capsys) -> None:
    # edge-npu has no fp8 MAC energy: the fp8 linears run at nominal, the fp16 rest under the 0.3 W cap
    argv = ["run", "--hw", HW / "edge-npu.yaml", "--workload", WL / "bert-base.yaml", "--quantize", "fp8",
            "--hw-set", "energy.power_cap.tdp_w=0.3"]
    code, out, _ = cli(capsys, *argv, "--format", "json")
    assert code == 0
    body = json.loads(out)
    c = body["totals"]["clock"]
    fp8 = [lay for lay in body["layers"] if lay.get("dtype") == "fp8"]
    assert fp8 and all(lay["clock"]["limit"] == "no_energy" and lay["clock"]["ghz"] == 0.8 for lay in fp8)
    capped = sum(lay["clock"]["power_capped"] for lay in body["layers"])
    assert c["governor"] == "power_cap" and c["tdp_w"] == 0.3
    assert c["no_energy_layers"] == {"fp8": len(fp8)} and c["power_capped_layers"] == capped > 0
    code, out, _ = cli(capsys, *argv)
    line = _clock_line(out)
    assert f"power cap 0.3 W bound {capped} of {len(body['layers'])} layers" in line
    assert f"{len(fp8)} fp8 layer(s) at nominal: the config's energy figures have no fp8 entry" in line
    assert "(fp16)" not in line


def test_a_config_without_energy_figures_says_so_without_naming_a_dtype() -> None:
    res = run(load_workload(WL / "gemm-microbench.yaml"), load_hardware(HW / "scalesim-32x32-os.yaml"), "dense")
    c = res.totals["clock"]
    assert c["governor"] == "no_energy" and c["no_energy_layers"] == {} and c["tdp_w"] is None
    assert clock_line(c, len(res.layers)).endswith("every layer at it: the config has no energy figures, so no "
                                                   "power cap can apply")


def test_collectives_are_left_out_of_the_effective_clocks() -> None:
    hw = load_hardware(HW / "8xh100-like.yaml")
    d = copy.deepcopy(hw.to_dict())
    d["energy"]["power_cap"]["tdp_w"] = 150.0
    model = load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 128})
    res = run(model, hardware_from_dict(d), "2:4")
    c = res.totals["clock"]
    comm = [lay for lay in res.layers if lay.path == "communication"]
    clocked = [lay for lay in res.layers if lay.clock is not None]
    assert comm and all(lay.clock is None for lay in comm) and len(clocked) + len(comm) == len(res.layers)
    assert c["power_capped_layers"] > 0 and c["unclocked_layers"] == len(comm)
    at_clock = sum(lay.clock["cycles_at_clock"] for lay in clocked)
    time = sum(lay.cycles["total"] for lay in clocked)
    assert c["effective_ghz"] == pytest.approx(res.clock_ghz * at_clock / time, abs=1e-6)
    comm_time = sum(lay.cycles["total"] for lay in comm)  # counted at nominal, it would lift the effective clock
    assert c["effective_ghz"] < res.clock_ghz * (at_clock + comm_time) / (time + comm_time) - 1e-3
    assert "communication" not in c["by_path"]
    dense_time = sum(lay.baseline_cycles for lay in clocked)
    dense_at = sum(lay.clock.get("dense_ghz", lay.clock["ghz"]) * lay.baseline_cycles for lay in clocked)
    assert c["dense_baseline_ghz"] == pytest.approx(dense_at / dense_time, abs=1e-6)
    assert f"{len(comm)} collective(s) left out" in clock_line(c, len(res.layers))


def test_a_floor_at_the_nominal_clock_caps_nothing_and_says_no_throttling_is_possible(capsys) -> None:
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", WL / "bert-base-gemms.yaml",
                       "--hw-set", "energy.power_cap.min_clock_fraction=1", "--hw-set", "energy.power_cap.tdp_w=50",
                       "--format", "json")
    assert code == 0
    body = json.loads(out)
    c = body["totals"]["clock"]
    assert all(lay["clock"]["ghz"] == 1.41 and not lay["clock"]["power_capped"] for lay in body["layers"])
    assert c["power_capped_layers"] == 0 and c["over_cap_layers"] == 5 and c["effective_ghz"] == 1.41
    line = clock_line(c, 5)
    assert "bound" not in line and "5 of 5 layers draw more than the power cap 50 W" in line
    assert "no throttling possible" in line


def test_a_zero_time_layer_echoes_no_power() -> None:
    # bert-base on a100-like fuses its attention: scale_mask and softmax take no time of their own
    res = run(load_workload(WL / "bert-base.yaml"), A100, "2:4")
    zero = [lay for lay in res.layers if lay.cycles["total"] == 0]
    assert zero and all("power_w" not in lay.clock and lay.energy["avg_power_w"] == 0.0 for lay in zero)
    timed = [lay for lay in res.layers if lay.cycles["total"] > 0]
    assert all(lay.clock["power_w"] > 0 for lay in timed)
