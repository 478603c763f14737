"""Validation against published 2:4 measurements of GPUs the model was not fitted on: the CSV's dtype
spellings, and the FLOPs rule of thumb every validation table shows next to the model."""

from __future__ import annotations

import csv
import io

import pytest
from conftest import HW, REFERENCE

from accelsim import load_hardware
from accelsim.analysis.calibration import COARSE_GRID
from accelsim.analysis.calibration.across_gpus import leave_one_gpu_out
from accelsim.analysis.calibration.fields import with_calibration
from accelsim.analysis.gpu_validation import rule_of_thumb, validate_hw, with_host_floor
from accelsim.analysis.measurements import (
    MeasurementError,
    canonical_dtype,
    match_row,
    parse_measurements,
    read_measurements,
)
from accelsim.cli import main
from accelsim.errors import AccelsimError
from accelsim.report.validation_text import format_logo, format_report, logo_csv

MORE = REFERENCE / "gpu" / "a100_h100_rtx4090_more_24_speedups.csv"
HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"


@pytest.mark.parametrize(("m", "n", "k", "expected"), [
    (64, 64, 64, 0.8), (512, 512, 512, 0.8), (793, 793, 793, 0.8),   # 2*793^3 = 0.997 GFLOP
    (1024, 1024, 1024, 1.2), (3684, 3684, 3684, 1.2),                 # 99.99 GFLOP
    (4096, 4096, 4096, 1.55), (16384, 16384, 16384, 1.55),
])
def test_rule_of_thumb_by_flops(m: int, n: int, k: int, expected: float) -> None:
    assert rule_of_thumb(m, n, k) == expected


def test_dtype_spellings_of_the_published_rows() -> None:
    assert canonical_dtype("fp8_e4m3") == "fp8" and canonical_dtype("FP8_E5M2") == "fp8"
    assert canonical_dtype("fp16 (presumed)") == "fp16"
    rows = read_measurements(MORE)
    assert len(rows) == 85
    fp8 = [r for r in rows if r.dtype == "fp8"]
    assert len(fp8) == 18 and all(r.dtype_written == "fp8_e4m3" for r in fp8)
    presumed = [r for r in rows if r.dtype_written and "presumed" in r.dtype_written]
    assert [(r.gpu, r.dtype) for r in presumed] == [("H100", "fp16")]
    assert rows[0].dtype == "fp16" and "dtype_written" not in rows[0].to_dict()


def test_unknown_dtype_names_the_spellings() -> None:
    with pytest.raises(MeasurementError, match=r"line 2, column dtype.*unknown dtype 'fp3'.*fp8_e4m3"):
        parse_measurements(HEADER + "A100,fp3,64,64,64,,,1.0,src,kernel-gemm\n", "x.csv")


def test_rule_of_thumb_is_scored_on_the_same_rows_as_the_model() -> None:
    rows = read_measurements(MORE)
    hw = {"A100": load_hardware(HW / "a100-like.yaml"), "H100": load_hardware(HW / "h100-like.yaml"),
          "RTX 4090": load_hardware(HW / "rtx4090-like.yaml")}
    result = validate_hw(rows, hw)
    scored = [r for r in result.rows if r.scored and r.main]
    rule = sum(abs(rule_of_thumb(r.m, r.n, r.k) - r.measured.speedup) for r in scored) / len(scored)
    assert result.overall.n == len(scored) and result.overall.rule_mae == pytest.approx(rule)
    for group in result.main:
        assert group.metrics.rule_mae is not None and 0.0 <= group.metrics.rule_right_side <= 1.0
    text = format_report(result, with_rows=False)
    assert "rule MAE" in text and "rule of thumb by FLOPs" in text
    assert f"overall ({len(scored)} scored rows)" in text


def test_rows_whose_time_is_not_a_kernel_are_named() -> None:
    rows = read_measurements(REFERENCE / "gpu" / "a100_fp16_24_speedups.csv")
    result = validate_hw(rows, {"A100": load_hardware(HW / "a100-like.yaml")})
    flagged = [n for n in result.notes if "outside the one GEMM kernel" in n]
    decode = next(r for r in result.rows if r.n == 1)
    assert any(n.startswith(f"line {decode.line} (4096x1x4096, decode-regime linear): measured sparse 196 us")
               for n in flagged)
    # no kernel-gemm row is flagged: their measured times are kernel times the model is judged on
    assert not any("kernel-gemm" in n for n in flagged)


def _small_logo_inputs():
    rows = read_measurements(REFERENCE / "gpu" / "a100_fp16_24_speedups.csv")[:6] + [
        r for r in read_measurements(MORE) if r.dtype in ("fp16", "bf16") and r.m == r.n == r.k and r.m in (512, 4096)]
    hw = {"A100": load_hardware(HW / "a100-like.yaml"), "H100": load_hardware(HW / "h100-like.yaml"),
          "RTX 4090": load_hardware(HW / "rtx4090-like.yaml")}
    return rows, hw


def test_leave_one_gpu_out_fits_without_the_gpu_it_scores() -> None:
    rows, hw = _small_logo_inputs()
    res = leave_one_gpu_out(rows, hw, grid=COARSE_GRID)
    assert [f.left_out for f in res.folds] == list(hw)
    for fold in res.folds:
        assert fold.left_out not in fold.calibration.fitted_on and len(fold.calibration.fitted_on) == 2
        part = hw[fold.left_out]
        cal = fold.calibration.for_part(part)
        # fixed costs are shared in ns and become each part's own cycles at its clock
        assert cal.launch_dense == round(fold.calibration.launch_dense_ns * part.clock_ghz)
        assert cal.dram_sustained_fraction == part.dram.sustained_fraction
        # the left-out GPU's host was never measured: it takes the least floor of the hosts fitted on
        floors = dict(fold.calibration.host_floors_ns)
        assert set(floors) == set(fold.calibration.fitted_on)
        assert fold.calibration.host_floor_ns(fold.left_out) == min(floors.values())
        # the fold's score is exactly the validation of the left-out config with those values
        applied = with_host_floor(with_calibration(part, cal), min(floors.values()) / 1000)
        assert fold.calibration.apply(part, fold.left_out) == applied
        again = validate_hw(rows, {fold.left_out: applied}).overall
        assert (fold.score.metrics.n, fold.score.metrics.mae) == (again.n, again.mae)
        assert fold.score.metrics.rule_mae is not None
    assert res.in_sample.fitted_on == tuple(hw)
    assert res.in_sample_overall.n == sum(s.metrics.n for s in res.in_sample_scores)
    text = format_logo(res)
    assert "Leave one GPU out" in text and "In-sample" in text and "A100 + H100" in text
    # leave_one_gpu_out.csv: each left-out GPU's rows as its fold predicts them, then the in-sample fit's rows;
    # the rows' errors average to the fold's MAE (the main-regime rows it scored)
    table = list(csv.DictReader(io.StringIO(logo_csv(res))))
    for fold in res.folds:
        mine = [r for r in table if r["fit"] == f"without {fold.left_out}"]
        assert mine and {r["gpu"].partition("@")[0] for r in mine} == {fold.left_out}
        assert {float(r["eff_dense"]) for r in mine} == {fold.calibration.efficiency_dense}
        assert {int(r["fixed_sparse_ns"]) for r in mine} == {fold.calibration.launch_sparse_ns}
        assert {int(r["host_floor_ns"]) for r in mine} == {fold.calibration.host_floor_ns(fold.left_out)}
        scored = [float(r["abs_error"]) for r in mine if r["scored"] == "1" and r["main"] == "1"]
        assert len(scored) == fold.score.metrics.n
        assert sum(scored) / len(scored) == pytest.approx(fold.score.metrics.mae, rel=1e-5)
    assert sum(r["fit"] == "in-sample" for r in table) == sum(len(s.rows) for s in res.in_sample_scores)


def test_leave_one_gpu_out_needs_two_gpus() -> None:
    rows, hw = _small_logo_inputs()
    with pytest.raises(AccelsimError, match="at least two GPUs"):
        leave_one_gpu_out(rows, {"A100": hw["A100"]})


def test_a_source_qualified_key_maps_those_rows_to_another_sku() -> None:
    rows = read_measurements(REFERENCE / "gpu" / "a100_fp16_24_speedups.csv")
    keys = ["A100", "A100@vllmbench"]
    slidesparse = [r for r in rows if "vllmbench" in r.source]
    assert slidesparse and all(match_row(r, keys) == "A100@vllmbench" for r in slidesparse)
    assert all(match_row(r, keys) == "A100" for r in rows if "vllmbench" not in r.source)
    assert match_row(rows[0], ["H100@vllmbench"]) is None  # the GPU must match too
    result = validate_hw(rows, {"A100": load_hardware(HW / "a100-like.yaml"),
                                "A100@vllmbench": load_hardware(HW / "a100-pcie-like.yaml")})
    by_line = {r.line: r for r in result.rows}
    assert {by_line[r.line].hw for r in slidesparse} == {"a100-pcie-like"}
    assert {r.hw for r in result.rows if r.line not in {s.line for s in slidesparse}} == {"a100-like"}


def test_leave_one_gpu_out_leaves_a_gpu_out_with_all_its_keys() -> None:
    rows, hw = _small_logo_inputs()
    hw = {"A100": hw["A100"], "A100@vllmbench": load_hardware(HW / "a100-pcie-like.yaml"), "H100": hw["H100"]}
    res = leave_one_gpu_out(rows, hw, grid=COARSE_GRID)
    assert [f.left_out for f in res.folds] == ["A100", "H100"]
    assert res.folds[0].calibration.fitted_on == ("H100",)
    assert set(res.folds[1].calibration.fitted_on) <= {"A100", "A100@vllmbench"}
    assert res.folds[0].score.hardware == "a100-like + a100-pcie-like"


@pytest.mark.parametrize("item", ["@vllmbench=hwconfigs/a100-pcie-like.yaml", "A100@=hwconfigs/a100-like.yaml"])
def test_a_source_key_needs_both_parts(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate-hw", str(REFERENCE / "gpu" / "a100_fp16_24_speedups.csv"), "--hw-map", item])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "GPU@SOURCE=CONFIG with both parts named" in err
