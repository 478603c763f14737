"""Validation against measured GPUs (issue 11): targets, scoring rules, calibration, CLI handler, notebook."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import HW, REFERENCE, ROOT

from accelsim import load_hardware
from accelsim.analysis.calibration import (
    CALIBRATED_FIELDS,
    COARSE_GRID,
    Calibration,
    body_tables,
    calibrate,
    calibrate5,
    current_calibration,
    leave_one_source_out,
    pooled,
    select_rows,
    with_calibration,
)
from accelsim.analysis.gpu_validation import spearman, validate_hw
from accelsim.analysis.measurements import (
    MAIN_REGIMES,
    MeasurementError,
    backend_of,
    match_gpu,
    parse_measurements,
    read_measurements,
    regime_of,
    source_label,
)
from accelsim.analysis.validation_results import Unscored
from accelsim.cli import main
from accelsim.cli.validate_hw import validate_hw_command
from accelsim.errors import AccelsimError
from accelsim.hardware.model import hardware_provenance
from accelsim.report.validation_plots import save_scatter, scatter_figure
from accelsim.report.validation_text import format_report, format_search

CSV = REFERENCE / "gpu" / "a100_fp16_24_speedups.csv"
A100_YAML = HW / "a100-like.yaml"
A100 = load_hardware(A100_YAML)
HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"

MAE_TARGET = 0.12
RIGHT_SIDE_TARGET = 0.85
MAE_NOW = 0.130  # what the shipped a100-like reaches with the ampere-datacenter family fit (0.127): a guard


@pytest.fixture(scope="module")
def rows():
    return read_measurements(CSV)


@pytest.fixture(scope="module")
def result(rows):
    return validate_hw(rows, {"A100": A100})


@pytest.fixture(scope="module")
def tables(rows):
    return body_tables(select_rows(rows, "A100"), A100, COARSE_GRID)


# ------------------------------------------------------------------------------------------- the targets

def test_calibration_set_is_on_the_right_side_of_one(result) -> None:
    ov = result.overall
    assert ov.n == 51  # kernel-gemm + inference-linear rows of the calibration set
    assert ov.right_side >= RIGHT_SIDE_TARGET
    # regression guard on what the five calibrated fields reach today (docs/validation.md)
    assert ov.mae <= MAE_NOW, format_report(result, with_rows=False)
    assert ov.spearman is not None and ov.spearman > 0.3


@pytest.mark.xfail(strict=True, reason=(
    "0.127 since L2 reuse across waves (issue 17): the A100 fp16 squares 16384^3-65536^3 measured 1.16-1.29x "
    "are predicted 1.56-1.57x; dram.sustained_fraction 0.75 used to absorb that drop by making them DRAM-bound. "
    "A duration-dependent power limit was tested and rejected under physical energy estimates "
    "(benchmarks/power_duration_probe.py, docs/validation.md); the cause is not modelled"))
def test_calibration_set_meets_the_mae_target(result) -> None:
    assert result.overall.mae <= MAE_TARGET


def test_main_table_filters_regimes_and_reports_the_others(result) -> None:
    regimes = {g.regime: g for g in result.groups}
    assert set(MAIN_REGIMES) <= set(regimes)
    assert regimes["kernel-gemm"].rows == 12 and regimes["inference-linear"].rows == 39
    # reported separately, never mixed into the main table
    assert regimes["decode-regime linear"].rows == 1 and regimes["training fwd+bwd"].rows == 2
    assert all(not r.main for r in result.rows if r.regime not in MAIN_REGIMES)
    assert result.main[0].rows == 51
    assert any("scored separately" in n for n in result.notes)


def test_rows_carry_predicted_and_measured_times(result) -> None:
    for r in result.rows:
        p = r.predicted
        assert p.dense_us > 0 and p.sparse_us > 0
        assert math.isclose(p.speedup, p.dense_cycles / p.sparse_cycles)
        assert math.isclose(r.error, p.speedup - r.measured.speedup)
    decode = next(r for r in result.rows if r.n == 1)
    assert decode.predicted.padding == {"n": [1, 32]} and decode.predicted.speedup < 1.0
    assert decode.predicted.sparse_tile == [128, 128, 64]  # the single sparse tile: 32 CTAs on 108 SMs


# ------------------------------------------------------------------------------------------- scoring rules

def test_rows_above_the_2_4_bound_are_reported_not_scored() -> None:
    text = HEADER + ("A100,fp16,4096,4096,4096,600,250,2.4,synthetic,kernel-gemm; dense baseline far below peak\n"
                     "A100,fp16,4096,4096,4096,600,400,1.5,synthetic,kernel-gemm; ordinary\n")
    res = validate_hw(parse_measurements(text, "synthetic.csv"), {"A100": A100})
    above, ok = res.rows
    assert above.status == "above_bound" and not above.scored and above.predicted is not None
    assert "not scored" in above.message
    assert ok.scored and res.overall.n == 1
    assert res.unscored == (Unscored(line=2, gpu="A100", status="above_bound", message=above.message),)
    assert any("above the 2:4 bound" in n and "lines 2" in n for n in res.notes)
    report = format_report(res)
    assert "above_bound" in report and "not scored" in report


def test_metrics_and_spearman() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties take average ranks: x ranks [1.5, 1.5, 3, 4], y ranks [1, 2, 3, 4] -> Pearson of ranks
    rx, ry = np.array([1.5, 1.5, 3, 4]), np.array([1.0, 2, 3, 4])
    assert spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(np.corrcoef(rx, ry)[0, 1])
    assert spearman([1, 2], [1, 2]) is None and spearman([1, 1, 1], [1, 2, 3]) is None


def test_notes_parsing(rows) -> None:
    assert regime_of("inference-linear (nn.Linear incl. bias); backend=CUTLASS") == "inference-linear"
    assert regime_of("training fwd+bwd of one nn.Linear incl. runtime 2:4 prune+compress") == "training fwd+bwd"
    assert regime_of("my-regime (x); more") == "my-regime"
    assert backend_of("inference-linear; backend=cuSPARSELt; x") == "cuSPARSELt"
    assert backend_of("kernel-gemm; cuSPARSELt sample matmul vs CUTLASS dense") == "cuSPARSELt"
    assert source_label("https://github.com/pytorch/pytorch/pull/90119 (comments)") == "pytorch/pytorch#90119"
    assert source_label("github:bcacdwk/vllmbench@074f6c05c1 slidesparse/x.csv") == "bcacdwk/vllmbench"
    assert {r.regime for r in rows} == {"kernel-gemm", "inference-linear", "decode-regime linear", "training fwd+bwd"}


# ------------------------------------------------------------------------------------------- hw-map matching

def test_hw_map_prefix_matching() -> None:
    keys = ["A100", "A100 80GB", "H100"]
    assert match_gpu("A100", keys) == "A100"
    assert match_gpu("A100 (presumed)", keys) == "A100"
    assert match_gpu("A100 80GB", keys) == "A100 80GB"
    assert match_gpu("A100 80GB PCIe", keys) == "A100 80GB"  # the longest prefix wins
    assert match_gpu("A1000", keys) is None  # a prefix must end at a word boundary
    assert match_gpu("a100 80gb", keys) == "A100 80GB"  # case-insensitive fallback
    assert match_gpu("RTX 4090", keys) is None


def test_every_calibration_row_maps_to_the_a100_config(result) -> None:
    assert {r.gpu for r in result.rows} == {"A100", "A100 80GB", "A100 (presumed)"}
    assert all(r.hw_key == "A100" and r.hw == "a100-like" for r in result.rows)


def test_unmapped_and_infeasible_rows_are_reported() -> None:
    text = HEADER + ("H100,fp16,1024,1024,1024,10,8,1.25,s,kernel-gemm\n"
                     "A100,fp8,1024,1024,1024,10,8,1.25,s,kernel-gemm\n")
    res = validate_hw(parse_measurements(text), {"A100": A100})
    assert [r.status for r in res.rows] == ["unmapped", "infeasible"]
    assert "no fp8 rate" in res.rows[1].message
    assert res.overall.n == 0


# ------------------------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("text, where, problem", [
    ("", None, "empty file"),
    ("gpu,dtype,m,n,k,speedup,source\n", "header", "missing column(s) notes"),
    (HEADER + "A100,fp16,64,x,64,4,5,0.8,s,kernel-gemm\n", "line 2, column n", "expected an integer, got 'x'"),
    (HEADER + "A100,fp16,64,64.5,64,4,5,0.8,s,kernel-gemm\n", "line 2, column n", "expected an integer"),
    (HEADER + "A100,fp17,64,64,64,4,5,0.8,s,kernel-gemm\n", "line 2, column dtype", "unknown dtype 'fp17'"),
    (HEADER + "A100,fp16,64,64,0,4,5,0.8,s,kernel-gemm\n", "line 2, column k", "must be greater than 0"),
    (HEADER + "A100,fp16,64,64,64,,,,s,kernel-gemm\n", "line 2, column speedup", "is empty"),
    (HEADER + "A100,fp16,64,64,64,4,5,0.8,s,kernel-gemm,extra\n", "line 2", "11 fields"),
    (HEADER, None, "no measurement rows"),
])
def test_bad_csv_is_a_clear_error(text, where, problem) -> None:
    with pytest.raises(MeasurementError) as exc:
        parse_measurements(text, "bad.csv")
    msg = str(exc.value)
    assert msg.startswith("bad.csv: ") and problem in msg and "\n" not in msg
    if where:
        assert f"bad.csv: {where}: " in msg


def test_speedup_is_derived_from_times_when_missing() -> None:
    (row,) = parse_measurements(HEADER + "A100,fp16,64,64,64,4,5,,s,kernel-gemm\n")
    assert row.speedup == pytest.approx(0.8)


def test_unreadable_files_and_bad_hw_map(tmp_path) -> None:
    with pytest.raises(MeasurementError, match="file not found"):
        read_measurements(tmp_path / "nope.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(MeasurementError, match="not UTF-8"):
        read_measurements(tmp_path / "bin.csv")
    with pytest.raises(AccelsimError, match="expected GPU=CONFIG"):
        validate_hw_command(CSV, ["A100:hwconfigs/a100-like.yaml"])
    with pytest.raises(AccelsimError, match="file not found"):
        validate_hw_command(CSV, ["A100=" + str(tmp_path / "missing.yaml")])
    with pytest.raises(AccelsimError, match="at least one"):
        validate_hw_command(CSV, [])


# ------------------------------------------------------------------------------------------- CLI handler

def test_validate_hw_command_writes_its_outputs(tmp_path) -> None:
    code, text = validate_hw_command(CSV, [f"A100={A100_YAML}"], tmp_path / "out")
    assert code == 0
    assert "Main regimes (kernel-gemm, inference-linear)" in text and "Per row" in text
    out = tmp_path / "out"
    data = json.loads((out / "validation.json").read_text())
    assert data["overall"]["n"] == 51 and len(data["rows"]) == 54
    assert data["hardware"]["A100"]["source"] == str(A100_YAML)
    lines = (out / "validation.csv").read_text().splitlines()
    assert len(lines) == 55 and lines[0].startswith("line,gpu,hw,dtype,m,n,k,regime,main")
    for ext in ("png", "svg"):
        assert (out / f"validation_scatter.{ext}").stat().st_size > 1000
    assert not list(out.glob(".*.tmp"))


def test_validate_hw_command_with_no_match_is_an_error_naming_the_gpus() -> None:
    """A map that matches no row (a typo, A10 for A100) is bad input: one line naming the map and the rows' GPUs."""
    with pytest.raises(AccelsimError) as err:
        validate_hw_command(CSV, [f"H100={HW / 'h100-like.yaml'}"])
    assert "no row of the measurements matches any mapped GPU (H100)" in str(err.value)
    assert "A100" in str(err.value) and "\n" not in str(err.value)


def test_scatter_is_a_figure_without_pyplot(result, tmp_path) -> None:
    fig = scatter_figure(result)
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("measured") and ax.get_ylabel().startswith("predicted")
    from matplotlib.collections import PathCollection

    points = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    assert points == len(result.rows)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "y = x" in labels and any(label.startswith("kernel-gemm") for label in labels)
    a = save_scatter(fig, tmp_path / "a")
    b = save_scatter(fig, tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]  # deterministic files
    source = (ROOT / "accelsim" / "report" / "validation_plots.py").read_text()
    assert "pyplot" not in source.replace("no pyplot", "")  # no global matplotlib state


def test_results_are_frozen_and_renderers_import_no_analysis(result) -> None:
    import dataclasses
    import subprocess
    import sys

    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows[0].status = "scored"  # type: ignore[misc]
    assert isinstance(result.rows, tuple) and json.loads(json.dumps(result.to_dict()))["overall"]["n"] == 51
    code = ("import sys, accelsim.report.validation_text, accelsim.report.validation_plots; "
            "print(sorted(m for m in sys.modules if m.startswith(('accelsim.analysis', 'accelsim.cli'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------- calibration

def test_fit_stays_physical_and_improves_a_bad_start(rows, tables) -> None:
    bad = with_calibration(A100, Calibration(0.5, 0.9, 0, 20000, A100.dram.sustained_fraction))
    res = calibrate(rows, bad, "A100", tables=tables)
    cal = res.fitted
    assert 0.3 < cal.efficiency_dense <= 1.0 and 0.3 < cal.efficiency_sparse <= 1.0
    assert cal.launch_dense >= 0 and cal.launch_sparse >= 0
    assert res.after.mae < res.before.mae - 0.05
    assert res.after.right_side >= RIGHT_SIDE_TARGET
    assert res.rows == 51 and res.improves


FAMILY_MAPS = {
    "ampere-datacenter": {"A100": "a100-like", "A100@vllmbench": "a100-pcie-like"},
    "hopper": {"H100": "h100-like", "H100@vllmbench": "h100-pcie-like"},
    "ada": {"RTX 4090": "rtx4090-like"}}


@pytest.fixture(scope="module")
def all_rows():
    return read_measurements(CSV) + read_measurements(REFERENCE / "gpu" / "a100_h100_rtx4090_more_24_speedups.csv")


@pytest.mark.parametrize("family", FAMILY_MAPS)
def test_shipped_family_values_are_the_family_fit(family, all_rows) -> None:
    """The calibrated fields each family file ships are what `accelsim calibrate --hw-map` fits on its rows
    (re-run it after engine changes); every part of the family converts the fixed costs at its clock."""
    from accelsim.analysis.calibration.across_gpus import fit_family

    hws = {key: load_hardware(HW / f"{name}.yaml") for key, name in FAMILY_MAPS[family].items()}
    res = fit_family(all_rows, hws)
    cal = res.calibration
    for key, hw in hws.items():
        cur = current_calibration(hw)
        assert (cur.efficiency_dense, cur.efficiency_sparse) == (cal.efficiency_dense, cal.efficiency_sparse), key
        dense_cycles, sparse_cycles = next((d, s) for k, _, d, s in res.parts if k == key)
        assert (cur.launch_dense, cur.launch_sparse) == (dense_cycles, sparse_cycles), key
        assert hw.host.call_floor_us * 1000 == res.host_floor_ns, key  # the family's one host floor
    # a host's floor never exceeds its fastest measured call (dense, 2:4, or dense / speedup)
    own = [r for r in all_rows if r.gpu.startswith(tuple(k.partition("@")[0] for k in hws))]
    fastest = min(t for r in own for t in (r.dense_us, r.sparse_us,
                                           r.dense_us / r.speedup if r.dense_us else None) if t)
    assert res.host_floor_ns <= fastest * 1000
    assert res.after.metrics.mae == pytest.approx(res.before.metrics.mae, abs=2e-3)  # cycles rounded to 10
    assert res.after.metrics.mae < res.after.metrics.rule_mae  # better than the FLOPs rule on its own rows


def test_leave_one_source_out_runs_and_reports(rows, tables) -> None:
    ticks: list[int] = []
    folds = leave_one_source_out(rows, A100, "A100", tables=tables, on_fold=lambda: ticks.append(1))
    assert len(ticks) == len(folds)  # the progress callback sees every fold
    labels = [f.label for f in folds]
    assert labels == ["bcacdwk/vllmbench", "pytorch/pytorch#90119", "pytorch/tutorials",
                      "NVIDIA/CUDALibrarySamples#57"]
    assert sum(f.test_rows for f in folds) == 51
    for f in folds:
        assert f.train_rows + f.test_rows == 51
        assert f.test.n == f.test_rows and f.test.mae is not None
        assert 0.3 < f.fitted.efficiency_sparse <= 1.0
    p = pooled(folds)
    assert p.n == 51 and p.mae >= p.mae_full_fit  # held-out error is never below in-sample


def test_calibration_has_the_five_fields_and_round_trips() -> None:
    assert CALIBRATED_FIELDS[-1] == "dram.sustained_fraction" and len(CALIBRATED_FIELDS) == 5
    cur = current_calibration(A100)
    data = A100.to_dict()
    for path, value in cur.fields().items():  # every field is a real config path holding the value
        node = data
        for key in path.split("."):
            node = node[key]
        assert node == value
    new = Calibration(0.8, 0.6, 1000, 2000, 0.9)
    hw = with_calibration(A100, new)
    assert current_calibration(hw) == new
    assert hw.dram_bytes_per_cycle() == pytest.approx(A100.dram.bandwidth_gb_s * 0.9 / A100.clock_ghz)
    assert current_calibration(A100) == cur  # the input is not modified


def test_calibrate5_searches_the_dram_fraction(rows) -> None:
    """The outer search on a small subset (one source, two fractions, a two-point grid): fast, same code."""
    few = [r for r in rows if r.source.startswith("github:bcacdwk") and r.m <= 4096]
    seen: list[tuple[int, int]] = []
    res = calibrate5(few, A100, "A100", fractions=(1.0, 0.5), grid=(0.55, 0.85), loso=False,
                     progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]  # one step per fraction, ending at the total
    assert [e.fraction for e in res.search] == [0.5, 1.0]
    assert sum(e.best for e in res.search) == 1
    best = next(e for e in res.search if e.best)
    assert best.objective == min(e.objective for e in res.search)
    assert res.fitted.dram_sustained_fraction == best.fraction
    assert current_calibration(res.hardware) == res.fitted
    for e in res.search:
        assert e.fitted.dram_sustained_fraction == e.fraction
        assert e.objective >= e.after.mae
    text = format_search(res)
    assert "<- best" in text and "dram.sustained_fraction" in text
    with pytest.raises(AccelsimError, match="fractions"):
        calibrate5(few, A100, "A100", fractions=(0.0, 1.0))


def test_calibrate5_refuses_tables_of_another_fraction(rows, tables) -> None:
    with pytest.raises(AccelsimError, match="other rows or another fraction"):
        calibrate5(rows, A100, "A100", fractions=(1.0,), tables={1.0: tables})  # tables are at 0.75


def test_calibrate_command_reports_bad_input(tmp_path, capsys) -> None:
    assert main(["calibrate", str(tmp_path / "missing.csv"), "--hw", str(A100_YAML), "--gpu", "A100"]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["calibrate", str(CSV), "--hw", str(A100_YAML), "--gpu", "A100", "--fractions", "x"]) == 2
    assert capsys.readouterr().err == "accelsim: error: --fractions: expected numbers, got 'x'\n"


# ------------------------------------------------------------------------------------------- configs

@pytest.mark.parametrize("name", ["h100-like", "h200-like", "rtx4090-like"])
def test_new_configs_carry_their_family_calibration(name) -> None:
    hw = load_hardware(HW / f"{name}.yaml")
    family = "hopper" if name != "rtx4090-like" else "ada"
    ref = current_calibration(load_hardware(HW / f"{next(iter(FAMILY_MAPS[family].values()))}.yaml"))
    cur = current_calibration(hw)
    assert (cur.efficiency_dense, cur.efficiency_sparse) == (ref.efficiency_dense, ref.efficiency_sparse)
    prov = hardware_provenance(HW / f"{name}.yaml")  # marked, in the family file
    fitted = [p for p in CALIBRATED_FIELDS if p != "dram.sustained_fraction"]
    assert all(prov.of(path).kind == "family-calibrated" for path in fitted)  # type: ignore[union-attr]
    assert prov.of("dram.sustained_fraction").kind == "estimate"  # type: ignore[union-attr]
    assert set(hw.core.compute.macs_per_cycle) >= {"fp16", "bf16", "fp8", "int8"}


@pytest.mark.parametrize("name", ["h100-like", "h200-like", "rtx4090-like"])
def test_every_number_in_the_gpu_configs_has_provenance(name) -> None:
    """Each number's kind and source is machine-readable now (tests/test_gpu_configs.py checks every config)."""
    prov = hardware_provenance(HW / f"{name}.yaml")
    assert prov.declared and not prov.unaccounted and prov.values


def _speedup(name, m, n, k, dtype="fp16"):
    from accelsim import run
    from accelsim.workloads.model import workload_from_dict

    wl = workload_from_dict({"name": "g", "dtype": dtype, "layers": [{"name": "g", "op": "gemm",
                                                                       "m": m, "n": n, "k": k}]})
    return run(wl, load_hardware(HW / f"{name}.yaml"), "2:4").layers[0].speedup_vs_dense


@pytest.mark.parametrize("name", ["h100-like", "h200-like", "rtx4090-like"])
def test_new_configs_show_the_published_shape_of_2_4(name) -> None:
    assert 1.2 <= _speedup(name, 8192, 8192, 8192) <= 2.0
    assert _speedup(name, 256, 256, 256) < 1.0  # fixed costs dominate small GEMMs


@pytest.mark.parametrize("name", ["a100-like", "h200-like", "rtx4090-like"])
def test_new_configs_decode_is_no_gain(name) -> None:
    assert _speedup(name, 4096, 1, 4096) < 1.0  # decode: n padded, too few CTAs


def test_h100_decode_gain_is_the_byte_ratio_held_back_by_too_few_ctas() -> None:
    """h100-like decode 4096x1x4096 (was an xfail): the dense GEMV is DRAM-bound; the 2:4 kernel reads 0.5625
    of its weight bytes but runs 32 CTAs of 128 rows on 132 SMs at the Hopper sparse efficiency, so its tensor
    cores take as long as its byte stream and it gains a little (1.20x), far under the byte ratio 1.78x.
    h200-like's 4.8 TB/s makes the dense GEMV faster and 2:4 a loss (0.84x). No H100 decode measurement is in the
    reference set; the A100 0.11x row is flagged as outside the one-kernel model (196 us measured vs 45.6 us
    modelled)."""
    from accelsim import run
    from accelsim.workloads.model import workload_from_dict

    wl = workload_from_dict({"name": "g", "dtype": "fp16", "layers": [{"name": "g", "op": "gemm", "m": 4096,
                                                                        "n": 1, "k": 4096}]})
    hw = load_hardware(HW / "h100-like.yaml")
    dense, sparse = run(wl, hw, "dense").layers[0], run(wl, hw, "2:4").layers[0]
    assert dense.binding == "memory"
    assert sparse.busy["compute"] > 0.9 * sparse.busy["memory"]  # too few CTAs: compute as long as the bytes
    assert sparse.padding == {"n": [1, 8]}
    assert 1.0 < sparse.speedup_vs_dense < 0.75 / 0.5625


# ------------------------------------------------------------------------------------------- notebook

def test_validation_notebook_is_stored_without_outputs() -> None:
    nb = json.loads((ROOT / "notebooks" / "validation.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in code)
    assert sum(c["cell_type"] == "markdown" for c in nb["cells"]) >= len(code) // 2
