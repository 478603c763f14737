"""The host's per-call floor (host.call_floor_us): a call takes at least the floor, in wall time."""

from __future__ import annotations

import math

import numpy as np
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


def _synthetic_tables(floor: float, launch: tuple[float, float], eff: tuple[float, float], loop_rows: int = 0):
    """Body tables whose bodies are exactly W / efficiency (linear in 1 / efficiency, as the fit interpolates),
    and rows measured with ``floor``, ``launch`` and ``eff``; the last ``loop_rows`` rows are kernel-loop timed
    (measured without the launch cost and the floor, as scoring predicts them)."""
    from accelsim.analysis.calibration.fitting import BodyTables
    from accelsim.analysis.measurements import parse_measurements

    work = [200.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 64000.0, 256000.0]
    grid = np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    dense = np.array([[w / e for w in work] for e in grid])
    sparse = np.array([[0.55 * w / e for w in work] for e in grid])
    lines = ["gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes"]
    for i, w in enumerate(work):
        loop = i >= len(work) - loop_rows  # a kernel loop: no host call per kernel, so no launch cost, no floor
        f, (ld, ls) = (0.0, (0.0, 0.0)) if loop else (floor, launch)
        d = max(f, ld + w / eff[0])
        s = max(f, ls + 0.55 * w / eff[1])
        lines.append(f"X,fp16,{64 * (i + 1)},64,64,{d / 1000:.6f},{s / 1000:.6f},{d / s:.6f},src,"
                     f"kernel-gemm{'; timing=kernel-loop' if loop else ''}")
    rows = tuple(parse_measurements("\n".join(lines) + "\n", "x.csv"))
    return BodyTables(grid, dense, sparse, np.ones(len(work), dtype=bool), rows, 1.0, 0.75)


def test_the_fit_recovers_a_host_floor_and_keeps_it_below_the_fastest_call() -> None:
    from accelsim.analysis.calibration.fitting import fit

    tables = _synthetic_tables(6000.0, (1500.0, 3000.0), (0.8, 0.7))
    res = fit(tables, floor_groups=np.zeros(len(tables.rows), dtype=int), floor_max=20000)
    assert res.host_floors == (6000,)
    assert (res.calibration.launch_dense, res.calibration.launch_sparse) == (1500, 3000)
    assert (res.calibration.efficiency_dense, res.calibration.efficiency_sparse) == (0.8, 0.7)
    assert res.mae < 1e-3
    # without a floor the fixed costs absorb the host's share, and the fit is worse
    plain = fit(tables)
    assert plain.host_floors == () and plain.mae > res.mae + 0.01
    # a floor is never above the fastest measured call, even when a higher one would fit the other rows better
    import dataclasses

    rows = list(tables.rows)
    rows[0] = dataclasses.replace(rows[0], dense_us=5.0, sparse_us=5.0, speedup=1.0)
    quick = dataclasses.replace(tables, rows=tuple(rows))
    capped = fit(quick, floor_groups=np.zeros(len(rows), dtype=int), floor_max=20000)
    assert capped.host_floors[0] <= 5000


def test_kernel_loop_rows_take_no_floor_in_the_fit() -> None:
    from accelsim.analysis.calibration.fitting import fit

    tables = _synthetic_tables(6000.0, (1500.0, 3000.0), (0.8, 0.7), loop_rows=3)
    groups = np.array([-1 if r.timing == "kernel-loop" else 0 for r in tables.rows])
    assert (groups == -1).sum() == 3
    res = fit(tables, floor_groups=groups, floor_max=20000)
    assert res.host_floors == (6000,) and res.mae < 1e-3
    assert (res.calibration.launch_dense, res.calibration.launch_sparse) == (1500, 3000)
    # the fit itself keeps kernel-loop rows out of every floor group, whatever the caller passes
    again = fit(tables, floor_groups=np.zeros(len(tables.rows), dtype=int), floor_max=20000)
    assert again.host_floors == (6000,) and again.mae < 1e-3


def test_a_sweep_over_the_host_floor_shows_its_zero() -> None:
    """host at call_floor_us 0 is left out of a resolved config (it hashes as before the field): a sweep's column
    still reads the point's value, not a blank."""
    from conftest import ROOT

    from accelsim.sweep import spec_from_dict

    spec = spec_from_dict({"name": "floor", "hardware": str(HW / "rtx4090-like.yaml"),
                           "workloads": [str(ROOT / "workloads" / "gemm-microbench.yaml")],
                           "grid": {"host.call_floor_us": [0, 4.0]}, "sparsity": ["2:4"]})
    column = spec.swept.index("host.call_floor_us")
    assert [p.values[column] for p in spec.points] == [0.0, 4.0]


def test_a_host_timed_only_as_kernel_loops_gets_no_floor_and_no_crash() -> None:
    """Its rows make no host call per kernel: no floor is fitted for it (the crash the review found), and a GPU
    left out takes the least floor of the hosts that have one."""
    from accelsim.analysis.calibration import COARSE_GRID
    from accelsim.analysis.calibration.across_gpus import fit_shared
    from accelsim.analysis.measurements import parse_measurements

    head = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"
    rows = parse_measurements(head + "".join(
        f"{gpu},fp16,{s},{s},{s},{d},{d / sp:.4f},{sp},src,kernel-gemm{tag}\n"
        for gpu, tag in (("RTX 4090", ""), ("RTX 3090", "; timing=kernel-loop"))
        for s, d, sp in ((256, 10.0, 1.0), (2048, 115.0, 1.8), (4096, 818.0, 1.85))), "x.csv")
    hws = {"RTX 4090": RTX4090, "RTX 3090": load_hardware(HW / "rtx3090-like.yaml")}
    by_key = {k: [r for r in rows if r.gpu == k] for k in hws}
    cal = fit_shared(by_key, hws, grid=COARSE_GRID, host_of=lambda k: k)
    assert [h for h, _ in cal.host_floors_ns] == ["RTX 4090"]
    assert cal.host_floor_ns("RTX 3090") == cal.host_floor_ns("RTX 4090") <= 10_000


def test_under_a_binding_power_cap_the_wait_is_in_nominal_cycles_like_the_launch() -> None:
    from accelsim.simulation import Simulator

    hw = load_hardware(HW / "rtx4090-like.yaml", ["energy.power_cap.tdp_w=30"])  # even the clock floor exceeds it
    res = Simulator(hw).settled(_kernel(hw, 64))
    fraction = res.clock["ghz"] / hw.clock_ghz
    assert res.clock["limit"] == "clock_floor" and fraction < 0.5
    assert res.cycles["total"] == math.ceil(hw.host.call_floor_us * 1e3 * hw.clock_ghz - 1e-6)  # still 8.5 us
    # the GPU's own launch cost runs at the lowered clock (more nominal cycles); the rest of the launch is the wait
    own_launch = res.cycles["launch"] - res.tiling["host_wait_cycles"]
    assert own_launch == pytest.approx(hw.launch_overhead_cycles.dense / fraction, abs=2)


def test_the_sensitivity_report_perturbs_a_fitted_host_floor() -> None:
    from accelsim.analysis.sensitivity import sensitivity

    wl = workload_from_dict({"name": "small", "dtype": "fp16", "layers": [
        {"name": "tiny", "op": "gemm", "m": 64, "n": 64, "k": 64}]})
    sens = sensitivity(wl, RTX4090, "2:4", "sparse-if-supported", 1.0)
    assert sens.fields[-1] == "host.call_floor_us"
    floor_runs = [r for r in sens.runs if r.field == "host.call_floor_us"]
    assert [r.perturbed for r in floor_runs] == pytest.approx([r.value * r.factor for r in floor_runs])
    a100 = load_hardware(HW / "a100-like.yaml")  # no floor: nothing to perturb
    assert "host.call_floor_us" not in sensitivity(wl, a100, "2:4", "sparse-if-supported", 1.0).fields


@pytest.mark.parametrize(("value", "message"), [("-1", "greater than or equal to 0"),
                                                ("2000000", "less than or equal to 1000000"),
                                                (".nan", "host.call_floor_us")])
def test_a_bad_host_floor_is_refused_naming_the_key(value: str, message: str) -> None:
    from accelsim.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"host\.call_floor_us: .*{message}|{message}"):
        load_hardware(HW / "rtx4090-like.yaml", [f"host.call_floor_us={value}"])


def test_the_reality_ladder_names_the_host_floor_instead_of_hiding_it_in_later_rungs() -> None:
    from accelsim.analysis.reality import reality_check

    wl = workload_from_dict({"name": "mix", "dtype": "fp16", "layers": [
        {"name": f"tiny{i}", "op": "gemm", "m": 128, "n": 64, "k": 128} for i in range(4)] + [
        {"name": "big", "op": "gemm", "m": 4096, "n": 2048, "k": 4096}]})
    floored = reality_check(wl, RTX4090, "2:4")
    free = reality_check(wl, with_host_floor(RTX4090, 0.0), "2:4")
    keys = [r.rung for r in floored.rungs]
    assert keys[:4] == ["nominal", "executed_pattern", "amdahl", "host_floor"]  # the floor of the ops that ran sparse
    assert "host_floor" not in [r.rung for r in free.rungs]
    floor_rung = floored.rungs[3]
    assert floor_rung.change is not None and floor_rung.change < -0.05  # the floored tiny calls gain nothing
    amdahl = floored.rungs[2]  # ops that did not run sparse can only take speedup away, never add it
    assert amdahl.change is not None and amdahl.change <= 1e-12
    # the ladder still ends at the real run, and the simulated rungs do not take the floor's loss as their gain
    assert floored.rungs[-1].speedup == pytest.approx(floored.bars.real_speedup, rel=1e-9)
    by_key = {r.rung: r.change for r in floored.rungs}
    free_key = {r.rung: r.change for r in free.rungs}
    assert by_key["data_movement"] == pytest.approx(free_key["data_movement"], abs=0.02)


def test_validation_says_which_rows_the_host_floor_set() -> None:
    from accelsim.analysis.gpu_validation import validate_hw
    from accelsim.analysis.measurements import parse_measurements

    head = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"
    rows = parse_measurements(head + "RTX 4090,fp16,64,64,64,9.4,9.4,1.0,src,kernel-gemm\n"
                                     "RTX 4090,fp16,4096,4096,4096,818,447,1.83,src,kernel-gemm\n", "x.csv")
    res = validate_hw(rows, {"RTX 4090": RTX4090})
    small, large = (r.predicted for r in res.rows)
    assert small is not None and large is not None
    assert small.host_bound == ("dense", "sparse") and small.speedup == 1.0 and large.host_bound == ()
    assert any(n.startswith("1 row(s) predicted at the host's per-call floor") and "1 of them dense and 2:4 alike" in n
               for n in res.notes)
