"""Energy accounting, power over time and the power-cap governor."""

from __future__ import annotations

import copy

import pytest
from conftest import HW, WL

from accelsim import load_hardware, load_workload, run
from accelsim.energy import COMPONENTS, TENSORS, power_profile, static_watts, uncapped
from accelsim.hardware.families import read_hardware_data
from accelsim.hardware.model import hardware_from_dict
from accelsim.workloads.model import workload_from_dict

A100 = load_hardware(HW / "a100-like.yaml")
TPU = load_hardware(HW / "tpu-like.yaml")


@pytest.mark.parametrize("hw", [A100, TPU], ids=["a100-like", "tpu-like"])
@pytest.mark.parametrize("sparsity", ["dense", "2:4"])
def test_components_add_up_and_static_is_power_times_time(hw, sparsity) -> None:
    model = load_workload(WL / "bert-base.yaml", {"batch": 2, "seq": 64})
    res = run(model, hw, sparsity)
    for lay in res.layers:
        e = lay.energy
        assert sum(e["by_component_j"].values()) == pytest.approx(e["total_j"], rel=1e-9)
        seconds = lay.cycles["total"] / (hw.clock_ghz * 1e9)
        assert e["by_component_j"]["static"] == pytest.approx(static_watts(hw) * seconds, rel=1e-9)
        memory = sum(e["by_component_j"][c] for c in ("sram", "l2", "dram", "decode"))
        assert sum(e["by_tensor_j"].values()) == pytest.approx(memory, rel=1e-9)
    tot = res.totals["energy"]
    assert set(tot["by_component_j"]) == set(COMPONENTS) and set(tot["by_tensor_j"]) == set(TENSORS)
    assert sum(tot["by_component_j"].values()) == pytest.approx(tot["total_j"], rel=1e-9)
    assert tot["total_j"] == pytest.approx(sum(lay.energy["total_j"] for lay in res.layers), rel=1e-9)


def test_energy_scales_linearly_with_repeated_identical_layers() -> None:
    layer = {"op": "gemm", "m": 1024, "n": 512, "k": 1024}
    one = workload_from_dict({"name": "x", "layers": [{"name": "g0", **layer}]})
    five = workload_from_dict({"name": "x", "layers": [{"name": f"g{i}", **layer} for i in range(5)]})
    for hw in (A100, TPU):
        e1 = run(one, hw, "2:4").totals["energy"]
        e5 = run(five, hw, "2:4").totals["energy"]
        assert e5["total_j"] == pytest.approx(5 * e1["total_j"], rel=1e-9)
        for c in COMPONENTS:
            assert e5["by_component_j"][c] == pytest.approx(5 * e1["by_component_j"][c], rel=1e-9, abs=1e-15)


def test_sparse_saves_mac_energy_and_pays_for_metadata() -> None:
    model = load_workload(WL / "bert-base.yaml", {"batch": 16})
    dense = run(model, TPU, "dense").totals["energy"]
    sparse = run(model, TPU, "2:4").totals["energy"]
    assert sparse["by_component_j"]["mac"] < 0.6 * dense["by_component_j"]["mac"]
    assert dense["by_tensor_j"]["a_metadata"] == 0 and sparse["by_tensor_j"]["a_metadata"] > 0
    assert sparse["by_tensor_j"]["a_values"] < dense["by_tensor_j"]["a_values"]
    assert sparse["perf_per_watt_vs_dense"] == pytest.approx(dense["total_j"] / sparse["total_j"], rel=1e-9)


def _capped(tdp: float) -> object:
    d = copy.deepcopy(A100.to_dict())
    d["energy"]["power_cap"]["tdp_w"] = tdp
    return hardware_from_dict(d)


def test_power_cap_throttles_a_long_run_and_latency_rises() -> None:
    model = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 256})
    hw = _capped(130.0)
    res = run(model, uncapped(hw), "2:4", keep_tiles=True)  # the transient starts from the nominal clock
    prof = power_profile(res, hw, repeats=4)
    # the uncapped run draws well over the cap (158 W since the A100 family re-fit of the L2 / port physics)
    assert prof["uncapped"]["avg_power_w"] > 1.1 * 130.0
    capped = prof["capped"]
    assert capped["throttled"] and capped["min_clock_fraction"] < 0.95
    assert capped["latency_s"] > 1.05 * prof["uncapped"]["latency_s"]
    assert capped["avg_power_w"] < prof["uncapped"]["avg_power_w"]
    # energy is conserved in the trace: windows hold the run's dynamic energy
    dyn = sum(v for k, v in res.totals["energy"]["by_component_j"].items() if k != "static")
    assert prof["trace"]["dynamic_j"].sum() == pytest.approx(4 * dyn, rel=1e-6)


def test_same_run_without_a_cap_does_not_throttle() -> None:
    model = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 256})
    d = read_hardware_data(HW / "a100-like.yaml").data  # the config with its family merged in
    del d["energy"]["power_cap"]
    hw = hardware_from_dict(d)
    res = run(model, hw, "2:4", keep_tiles=True)
    prof = power_profile(res, hw, repeats=4)
    assert not prof["capped"]["throttled"]
    assert prof["capped"]["latency_s"] == pytest.approx(prof["uncapped"]["latency_s"], rel=1e-12)
    # a high cap does not throttle either
    hi = _capped(10_000.0)
    prof = power_profile(run(model, hi, "2:4", keep_tiles=True), hi, repeats=4)
    assert not prof["capped"]["throttled"]


def test_short_burst_stays_under_the_moving_average() -> None:
    model = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 256})
    d = copy.deepcopy(A100.to_dict())
    d["energy"]["power_cap"] = {"tdp_w": 150.0, "time_constant_s": 10.0}  # a slow envelope
    hw = hardware_from_dict(d)
    prof = power_profile(run(model, uncapped(hw), "2:4", keep_tiles=True), hw, repeats=1)
    assert prof["uncapped"]["peak_power_w"] > 150.0
    assert prof["capped"]["latency_s"] < 1.02 * prof["uncapped"]["latency_s"]
