"""Hostile measurement CSVs and options for validate-hw / calibrate: one line naming the file, line and column,
exit 2, nothing written, no traceback (an audit's findings, each reproduced here)."""

from __future__ import annotations

import pytest
from conftest import HW, WL

from accelsim.analysis import measurements
from accelsim.analysis.measurements import MeasurementError, parse_measurements, read_measurements
from accelsim.cli import main

HEAD = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"
ROW = "A100,fp16,4096,4096,4096,590,326,,src,kernel-gemm\n"
A100 = f"A100={HW / 'a100-like.yaml'}"


def _fails(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in err, err
    line = err.rstrip("\n")
    assert "\n" not in line and line.startswith("accelsim: error: "), err
    return line


def _refused(text: str, where: str, problem: str) -> None:
    with pytest.raises(MeasurementError) as err:
        parse_measurements(text, "x.csv")
    msg = str(err.value)
    assert where in msg and problem in msg and "\n" not in msg, msg


def test_an_unterminated_quote_is_refused_not_a_field_that_swallows_the_rows_after_it() -> None:
    _refused(HEAD + 'A100,fp16,64,64,64,4,5,,src,"kernel-gemm oops\n' + ROW * 5, "line 2", "not valid CSV")


def test_a_row_whose_quoted_notes_span_lines_is_named_by_its_first_line() -> None:
    text = HEAD + 'A100,fp16,64,64,64,4,5,,src,"kernel-gemm\nsecond line"\n' + ROW
    rows = parse_measurements(text, "x.csv")
    assert [r.line for r in rows] == [2, 4]
    _refused(HEAD + 'A100,fp16,abc,64,64,4,5,,src,"kernel-gemm\nsecond line"\n', "line 2, column m", "'abc'")


@pytest.mark.parametrize("row, column, problem", [
    ("A100,fp16,6_4,64,64,4,5,,s,kernel-gemm", "column m", "expected an integer, got '6_4'"),
    ("A100,fp16,1e12,64,64,4,5,,s,kernel-gemm", "column m", "per-dimension limit"),
    ("A100,fp16,64,64,64,5e-324,5e-324,,s,kernel-gemm", "column dense_time_us", "outside"),
    ("A100,fp16,64,64,64,1e308,1e-3,,s,kernel-gemm", "column dense_time_us", "outside"),
    ("A100,fp16,64,64,64,,,1e9,s,kernel-gemm", "column speedup", "outside"),
    ("A100,fp16,64,64,64,4,5,,s,kernel-gemm; timing=framework; TIMING=kernel-loop", "column notes",
     "given 2 times with different values"),
    ("A100,fp16,64,64,64,4,5,,s,kernel-gemm; c_dtype=fp16; c_dtype=int32", "column notes", "c_dtype="),
], ids=["underscore", "dimension", "denormal-time", "huge-time", "speedup", "tag-twice", "c-dtype-twice"])
def test_numbers_and_tags_a_user_could_not_mean_are_refused(row: str, column: str, problem: str) -> None:
    _refused(HEAD + row + "\n", f"line 2, {column}", problem)


def test_a_tag_key_in_any_case_counts_and_a_column_may_not_contradict_it() -> None:
    rows = parse_measurements(HEAD + "A100,fp16,64,64,64,4,5,,s,kernel-gemm; Timing=kernel-loop\n", "x.csv")
    assert rows[0].timing == "kernel-loop"
    _refused("gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes,timing\n"
             "A100,fp16,64,64,64,4,5,,s,kernel-gemm; timing=kernel-loop,framework\n", "line 2, column timing",
             "disagrees with the notes tag")


def test_a_file_too_large_for_a_table_of_timings_is_refused_before_it_is_read(tmp_path, monkeypatch) -> None:
    path = tmp_path / "big.csv"
    path.write_text(HEAD + ROW * 100)
    monkeypatch.setattr(measurements, "MAX_CSV_BYTES", 1000)
    with pytest.raises(MeasurementError, match=r"big\.csv: larger than"):
        read_measurements(path)


def test_validate_hw_refuses_an_out_that_would_replace_an_input_before_any_work(capsys, tmp_path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    csv = out / "validation.csv"
    csv.write_text(HEAD + ROW)
    before = csv.read_bytes()
    line = _fails(capsys, "validate-hw", csv, "--hw-map", A100, "-o", out)
    assert "validation.csv is this command's input" in line
    assert csv.read_bytes() == before and sorted(p.name for p in out.iterdir()) == ["validation.csv"]
    assert "empty path" in _fails(capsys, "validate-hw", csv, "--hw-map", A100, "-o", "")


def test_leave_one_gpu_out_names_a_mapped_gpu_without_rows(capsys, tmp_path) -> None:
    csv = tmp_path / "a.csv"
    csv.write_text(HEAD + ROW)
    line = _fails(capsys, "validate-hw", csv, "--hw-map", A100, "--hw-map", f"H100={HW / 'h100-like.yaml'}",
                  "--leave-one-gpu-out")
    assert "matches H100" in line and "A100" not in line.split("matches")[1]


def test_calibrate_fits_rows_without_times_and_prints_dashes(capsys, tmp_path) -> None:
    csv = tmp_path / "speedups.csv"
    csv.write_text("gpu,dtype,m,n,k,speedup,source,notes\nA100,fp16,4096,4096,4096,1.2,src,kernel-gemm\n")
    assert main(["calibrate", str(csv), "--hw", str(HW / "a100-like.yaml"), "--gpu", "A100", "--grid", "coarse",
                 "--fractions", "0.75"]) == 0
    out = capsys.readouterr().out
    assert "-% /     -%" in out and "<- best" in out


@pytest.mark.parametrize("extra, problem", [
    (["--loso"], "leave-one-source-out needs A100 rows from two or more sources"),
    (["--penalty", "nan"], "--penalty: expected a finite number >= 0"),
    (["--penalty=-5"], "--penalty: expected a finite number >= 0"),
    (["--fractions", "nan"], "--fractions: expected numbers in (0, 1]"),
], ids=["loso-one-source", "penalty-nan", "penalty-negative", "fractions-nan"])
def test_calibrate_refuses_options_that_cannot_mean_anything(capsys, tmp_path, extra: list[str],
                                                             problem: str) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text(HEAD + ROW)
    line = _fails(capsys, "calibrate", csv, "--hw", HW / "a100-like.yaml", "--gpu", "A100", "--grid", "coarse",
                  *extra)
    assert problem in line


def test_calibrate_family_refuses_the_one_config_options(capsys, tmp_path) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text(HEAD + ROW)
    line = _fails(capsys, "calibrate", csv, "--hw-map", A100, "--loso")
    assert "--loso apply only to one config" in line


def test_calibrate_names_a_row_its_config_cannot_run(capsys, tmp_path) -> None:
    csv = tmp_path / "fp32.csv"
    csv.write_text(HEAD + ROW + "A100,fp32,4096,4096,4096,,,1.1,src,kernel-gemm\n")
    line = _fails(capsys, "calibrate", csv, "--hw", HW / "a100-like.yaml", "--gpu", "A100", "--grid", "coarse",
                  "--fractions", "0.75")
    assert f"{csv}: line 3 (A100, fp32 4096x4096x4096) cannot run on a100-like" in line


def test_the_yaml_number_hint_never_suggests_the_refused_spelling(capsys) -> None:
    line = _fails(capsys, "run", "--workload", WL / "gemm-microbench.yaml", "--hw",
                  HW / "h100-like.yaml", "--hw-set", "energy.power_cap.tdp_w=1e-300")
    assert "write 1.0e-300)" in line and "write 1e-300" not in line


def test_a_column_spelled_like_a_known_one_is_refused_others_are_the_users_own() -> None:
    _refused(HEAD.rstrip("\n") + ",sparse_iza\n" + ROW.rstrip("\n") + ",sm80\n", "header",
             "unknown column 'sparse_iza': did you mean 'sparse_isa'?")
    rows = parse_measurements(HEAD.rstrip("\n") + ",comment\n" + ROW.rstrip("\n") + ",checked twice\n", "x.csv")
    assert len(rows) == 1


@pytest.mark.parametrize("column", ["dense_us", "sparse_us", "dense_time_ms"])
def test_a_time_column_in_another_name_or_unit_is_refused_naming_the_unit(column: str) -> None:
    _refused(HEAD.rstrip("\n") + f",{column}\n" + ROW.rstrip("\n") + ",4\n", "header",
             f"unknown column '{column}': times go in dense_time_us and sparse_time_us, in microseconds")


def test_calibrate_refuses_more_rows_than_its_search_holds(tmp_path, monkeypatch) -> None:
    from accelsim.analysis.calibration import fitting
    from accelsim.analysis.calibration.fitting import body_tables
    from accelsim.errors import AccelsimError
    from accelsim.hardware.model import load_hardware

    monkeypatch.setattr(fitting, "MAX_FIT_ROWS", 3)
    rows = parse_measurements(HEAD + ROW * 4, "x.csv")
    with pytest.raises(AccelsimError, match="4 rows to fit, at most 3"):
        body_tables(rows, load_hardware(HW / "a100-like.yaml"))


def test_calibrate_family_refuses_fractions(capsys, tmp_path) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text(HEAD + ROW)
    assert "--fractions apply only to one config" in _fails(capsys, "calibrate", csv, "--hw-map", A100,
                                                             "--fractions", "0.7")


def test_validate_hw_refuses_a_part_that_is_not_a_gpu_model(capsys, tmp_path) -> None:
    """A100 rows mapped to tpu-like were scored on a systolic array without a word (calibrate refused it)."""
    csv = tmp_path / "m.csv"
    csv.write_text(HEAD + ROW)
    line = _fails(capsys, "validate-hw", csv, "--hw-map", f"A100={HW / 'tpu-like.yaml'}")
    assert "tpu-like is a systolic part" in line and "core.compute.kind: tensor_core" in line
