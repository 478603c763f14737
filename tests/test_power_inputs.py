"""Power inputs and the power plot: a window too narrow for the trace, a cap on a config without energy
figures, and a system's power plot, which draws one device's watts and says so."""

from __future__ import annotations

import pytest
from conftest import HW, WL, cli, one_line_error

from accelsim import load_hardware, load_workload, run
from accelsim.analysis.power import power_limited
from accelsim.energy import MAX_POWER_WINDOWS, power_profile, power_windows, uncapped
from accelsim.errors import ConfigError
from accelsim.report import plots


def test_a_window_that_cuts_the_run_into_too_many_windows_is_refused_in_one_line(capsys, tmp_path) -> None:
    out = tmp_path / "p"
    code, _, err = cli(capsys, "plot", "power", "--hw", HW / "a100-like.yaml", "--workload",
                       WL / "gemm-microbench.yaml", "--sparsity", "2:4",
                       "--hw-set", "energy.power_cap.window_s=1.0e-12", "-o", out)
    line = one_line_error(err)
    assert code == 2 and "energy.power_cap.window_s: 1e-12 s cuts the" in line and "more than 1,000,000" in line
    assert not out.exists()  # nothing half-written


def test_the_window_bound_counts_repeats_and_names_the_smallest_window_that_fits() -> None:
    assert power_windows(1.0, 1e-3) == 1000
    assert power_windows(1.0, 1.0 / MAX_POWER_WINDOWS) == MAX_POWER_WINDOWS
    with pytest.raises(ConfigError, match=r"1,000,001 windows.*use at least 1e-06 s"):
        power_windows(1.0, 1.0 / (MAX_POWER_WINDOWS + 1))
    with pytest.raises(ConfigError, match=r"x 2 repeats into 1,200,000 windows"):
        power_windows(0.6, 1e-6, repeats=2)
    hw = load_hardware(HW / "a100-like.yaml")
    res = run(load_workload(WL / "gemm-microbench.yaml"), uncapped(hw), "dense", keep_tiles=True)
    with pytest.raises(ConfigError, match=r"^<hardware>: window_s: "):  # an explicit window is named as such
        power_profile(res, hw, window_s=res.total_cycles / (hw.clock_ghz * 1e9) / (MAX_POWER_WINDOWS + 5))


def test_a_cap_on_a_config_without_energy_figures_is_one_line_naming_the_override(capsys) -> None:
    code, _, err = cli(capsys, "run", "--hw", HW / "scalesim-32x32-os.yaml", "--workload", WL / "gemm-microbench.yaml",
                       "--hw-set", "energy.power_cap.tdp_w=1")
    line = one_line_error(err)
    assert code == 2
    assert line == ("accelsim: error: " + str(HW / "scalesim-32x32-os.yaml") + ": energy.power_cap: needs an energy: "
                    "block with mac_pj, sram_read_pj_per_byte, sram_write_pj_per_byte, dram_pj_per_byte (this config "
                    "has none; set those too, or use a config with one) (from --hw-set energy.power_cap.tdp_w=1)")
    # the block built key by key still loads; a wrong figure among them is still named on its own
    figures = ["energy.mac_pj={fp16: 1}", "energy.sram_read_pj_per_byte=1", "energy.sram_write_pj_per_byte=1",
               "energy.dram_pj_per_byte=1"]
    hw = load_hardware(HW / "scalesim-32x32-os.yaml", [*figures, "energy.power_cap.tdp_w=1"])
    assert hw.energy is not None and hw.energy.power_cap is not None and hw.energy.power_cap.tdp_w == 1
    with pytest.raises(ConfigError) as exc:
        load_hardware(HW / "scalesim-32x32-os.yaml", ["energy.mac_pj={fp16: 1}", "energy.dram_pj_per_byte=x"])
    keys = [k for k, _ in exc.value.problems]
    assert keys == ["energy.mac_pj", "energy.dram_pj_per_byte"]


def test_a_systems_power_plot_says_its_watts_are_one_devices() -> None:
    hw = load_hardware(HW / "8xh100-like.yaml", ["energy.power_cap.tdp_w=250"])
    model = load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 32})
    power = power_limited(model, hw, "2:4")
    assert power.devices == 8
    fig = plots.plot_power(power)
    assert fig._suptitle.get_text().endswith(", per device (1 of 8)")
    assert fig.axes[0].get_ylabel() == "power per device (1 of 8) (W)"
    # one device's plot is titled as before (test_plots: test_power_analysis_is_a_frozen_result_the_plot_renders)
