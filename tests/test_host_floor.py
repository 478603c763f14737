"""The host's per-call floor (host.call_floor_us): a call takes at least the floor, in wall time."""

from __future__ import annotations

import math

import pytest
from conftest import HW

from accelsim import load_hardware
from accelsim.analysis.gpu_validation import kernel_loop_hardware, with_host_floor
from accelsim.energy import at_clock
from accelsim.engine import simulate, simulate_totals
from accelsim.lowering import lower
from accelsim.workloads.model import workload_from_dict

RTX4090 = load_hardware(HW / "rtx4090-like.yaml")


def _kernel(hw, m: int, sparsity: str = "dense"):
    wl = workload_from_dict({"name": "g", "dtype": "fp16", "layers": [{"name": "g", "op": "gemm", "m": m, "n": m,
                                                                        "k": m}]})
    return lower(wl, hw, sparsity)[0]


def test_a_short_call_waits_for_the_host_and_says_so() -> None:
    floor_us = RTX4090.host.call_floor_us
    assert floor_us > 0  # the Ada family's fitted floor
    for sparsity in ("dense", "2:4"):
        kernel = _kernel(RTX4090, 64, sparsity)
        free = simulate(kernel, with_host_floor(RTX4090, 0.0))
        floored = simulate(kernel, RTX4090)
        floor_cycles = math.ceil(floor_us * 1e3 * RTX4090.clock_ghz - 1e-6)
        assert free.cycles["total"] < floor_cycles  # the GPU alone would finish sooner
        assert floored.cycles["total"] == floor_cycles
        # the wait is counted as launch cycles, and named in the tiling echo
        wait = floored.cycles["launch"] - free.cycles["launch"]
        assert wait == floor_cycles - free.cycles["total"] == floored.tiling["host_wait_cycles"]
        assert floored.cycles["compute"] == free.cycles["compute"] and floored.binding == "launch"
        # the per-tile records start after the wait
        assert floored.tiles["load_start"].min() == pytest.approx(free.tiles["load_start"].min() + wait)


def test_a_long_call_is_untouched_by_the_floor() -> None:
    kernel = _kernel(RTX4090, 2048, "2:4")
    free = simulate(kernel, with_host_floor(RTX4090, 0.0))
    floored = simulate(kernel, RTX4090)
    assert floored.cycles == free.cycles and "host_wait_cycles" not in floored.tiling


def test_the_floor_is_wall_time_whatever_the_clock() -> None:
    kernel = _kernel(RTX4090, 64)
    half = simulate_totals(kernel, at_clock(RTX4090, 0.5))
    nominal = half.in_nominal_cycles(0.5)
    # cycles of the halved clock hold the same microseconds: in nominal cycles, the floor at the nominal clock
    assert nominal.total == pytest.approx(RTX4090.host.call_floor_us * 1e3 * RTX4090.clock_ghz, abs=2)


def test_a_kernel_loop_timing_has_no_host_call_per_kernel() -> None:
    loop = kernel_loop_hardware(RTX4090)
    assert loop.host.call_floor_us == 0.0 and loop.launch_overhead_cycles.dense == 0


def test_configs_without_a_floor_hash_as_before() -> None:
    a100 = load_hardware(HW / "a100-like.yaml")  # the Ampere datacenter fit found no floor above the GPU's own
    assert a100.host.call_floor_us == 0.0 and "host" not in a100.to_dict()
    assert "host" in RTX4090.to_dict()


def test_a_run_says_how_many_layers_took_the_host_floor() -> None:
    from accelsim import run

    wl = workload_from_dict({"name": "small", "dtype": "fp16", "layers": [
        {"name": "tiny", "op": "gemm", "m": 64, "n": 64, "k": 64},
        {"name": "big", "op": "gemm", "m": 4096, "n": 4096, "k": 4096}]})
    res = run(wl, RTX4090, "2:4")
    note = [w for w in res.warnings if "host's per-call floor" in w]
    assert len(note) == 1 and note[0].startswith("1 layer(s)") and "host.call_floor_us 8.5 us" in note[0]
    free = run(wl, with_host_floor(RTX4090, 0.0), "2:4")
    assert not any("per-call floor" in w for w in free.warnings)
    assert free.layers[0].cycles["total"] < res.layers[0].cycles["total"]
    assert free.layers[1].cycles == res.layers[1].cycles
