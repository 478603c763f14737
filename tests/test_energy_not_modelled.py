"""A config without energy figures says so wherever energy would be: report (md, html, json), a sweep's
warnings and meta.json, and sweep-plot's notes (which otherwise skip the energy Pareto plot silently)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import HW, WL

from accelsim import load_hardware, load_workload
from accelsim.analysis.deployment import build_report
from accelsim.report.deploy import render_markdown
from accelsim.report.sweep_plots import sweep_plot
from accelsim.sweep import load_results, run_sweep, spec_from_dict

GEMMS = WL / "gemm-microbench.yaml"


def test_a_report_without_energy_figures_has_a_row_saying_why() -> None:
    rep = build_report(load_workload(GEMMS), load_hardware(HW / "scalesim-32x32-os.yaml"), "2:4")
    summary = rep.to_dict()["summary"]
    assert summary["energy"] is None and summary["energy_not_modelled"] == "the config has no energy: block"
    assert "| energy per inference |  |  | not modelled: the config has no energy: block |" in render_markdown(rep)
    modelled = build_report(load_workload(GEMMS), load_hardware(HW / "tpu-like.yaml"), "2:4").to_dict()["summary"]
    assert modelled["energy"] is not None and "energy_not_modelled" not in modelled


def test_a_sweep_and_its_plots_say_energy_is_not_modelled(tmp_path: Path) -> None:
    spec = spec_from_dict({"name": "noe", "hardware": str(HW / "scalesim-32x32-os.yaml"), "workloads": [str(GEMMS)],
                           "sparsity": ["dense"], "grid": {"dram.bandwidth_gb_s": [10, 100]}})
    result = run_sweep(spec, tmp_path / "out", workers=1)
    assert result.no_energy_rows == 2
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())["sweep"]
    assert meta["no_energy_rows"] == 2
    warning = next(w for w in meta["warnings"] if w.startswith("energy: not modelled"))
    assert warning.startswith("energy: not modelled on 2 of 2 rows (2 points): energy_j")
    assert "the config has no energy: block; e.g. point 0" in warning
    _, notes = sweep_plot(load_results(tmp_path / "out"), tmp_path / "plots")
    assert notes[-1].startswith("energy: not modelled (no row has energy_j") and "no energy Pareto plot" in notes[-1]


def test_a_sweep_with_energy_figures_warns_of_none_and_its_plots_add_no_energy_note(tmp_path: Path) -> None:
    spec = spec_from_dict({"name": "e", "hardware": str(HW / "tpu-like.yaml"), "workloads": [str(GEMMS)],
                           "sparsity": ["dense"], "grid": {"dram.bandwidth_gb_s": [100]}})
    result = run_sweep(spec, tmp_path / "out", workers=1)
    assert result.no_energy_rows == 0 and not any(w.startswith("energy:") for w in result.warnings)
    _, notes = sweep_plot(load_results(tmp_path / "out"), tmp_path / "plots")
    assert notes and not any(n.startswith("energy") for n in notes)
