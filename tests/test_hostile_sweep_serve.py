"""Issue 15 (nothing silently wrong, nothing crashes): sweep, sweep-plot, serve and report on hostile input.

Each test reproduces an input that used to crash, hang or mislead, and checks the one-line error (exit 2)
or the corrected output.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import simpy
from conftest import cli, one_line_error

from accelsim import fileio
from accelsim.cli import main
from accelsim.errors import AccelsimError, ConfigError, InfeasibleError
from accelsim.report.sweep_plots import choose_slice, heatmap_figure
from accelsim.serving import RuntimeConfig, ServingModel, find_max_rate
from accelsim.sweep import load_results, spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
A100 = str(ROOT / "hwconfigs/a100-like.yaml")
GEMMS = str(ROOT / "workloads/gemm-microbench.yaml")
RESNET18 = str(ROOT / "workloads/resnet18.yaml")
BERT = str(ROOT / "workloads/bert-base.yaml")
SMALL = str(CORPUS / "sweep-small.yaml")


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small three-key sweep, run once (8 points x 2 patterns, 2 rows infeasible)."""
    out = tmp_path_factory.mktemp("sweep") / "res"
    assert main(["sweep", SMALL, "-o", str(out), "--workers", "1"]) == 0
    return out


# -- A1: the sweep summary counts the infeasible rows ---------------------------------------------------

def test_sweep_summary_counts_the_infeasible_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "sweep", SMALL, "-o", tmp_path / "res", "--workers", "1")
    rows = (tmp_path / "res" / "results.csv").read_text().splitlines()
    col = rows[0].split(",").index("feasible")
    infeasible = sum(1 for r in rows[1:] if r.split(",")[col] == "False")
    assert code == 0 and infeasible == 2
    assert f"16 rows ({infeasible} infeasible)" in out


# -- A2: sweep-plot axes and slices ----------------------------------------------------------------------

def test_sweep_plot_says_which_values_are_held(small_sweep: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "sweep-plot", small_sweep, "-o", tmp_path / "a")
    assert code == 0
    assert ("heatmaps: core.sram.filter_bytes (y) by dram.bandwidth_gb_s (x); held: core.compute.rows=64 "
            "(first value)") in out
    table = load_results(small_sweep)
    fig = heatmap_figure(table, table.settings()[0], choose_slice(table))
    assert "held: core.compute.rows=64 (first value)" in fig._suptitle.get_text()

    code, out, _ = cli(capsys, "sweep-plot", small_sweep, "-o", tmp_path / "b", "--x", "core.compute.rows",
                       "--y", "dram.bandwidth_gb_s", "--at", "core.sram.filter_bytes=1048576")
    assert code == 0 and "dram.bandwidth_gb_s (y) by core.compute.rows (x); held: core.sram.filter_bytes=1 MiB" in out
    sl = choose_slice(table, x="core.compute.rows", y="dram.bandwidth_gb_s", at={"core.sram.filter_bytes": "1048576"})
    assert sl is not None and sl.held == {"core.sram.filter_bytes": 1048576}
    fig = heatmap_figure(table, table.settings()[0], sl)
    assert "held: core.sram.filter_bytes=1 MiB" in fig._suptitle.get_text()
    assert "(first value)" not in fig._suptitle.get_text()
    assert {p.name for p in (tmp_path / "b").iterdir()} >= {"heatmap_gemm-microbench.png",
                                                             "sparsity_pays_gemm-microbench.png"}


@pytest.mark.parametrize(("args", "expect"), [
    (["--at", "dram.bw=400"], "--at dram.bw: not a grid parameter of this sweep (grid: core.sram.filter_bytes, "
                              "dram.bandwidth_gb_s, core.compute.rows)"),
    (["--at", "dram.bandwidth_gb_s=7"], "--at dram.bandwidth_gb_s=7: not a value of the grid (values: 100, 400)"),
    (["--x", "nope"], "--x nope: not a grid parameter"),
    (["--x", "core.compute.rows", "--y", "core.compute.rows"], "--x and --y are both core.compute.rows"),
    (["--at", "core.compute.rows"], "expected KEY=VALUE"),
])
def test_sweep_plot_bad_axis_or_slice(small_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      args: list[str], expect: str) -> None:
    code, _, err = cli(capsys, "sweep-plot", small_sweep, "-o", tmp_path / "p", *args)
    assert code == 2 and expect in one_line_error(err)
    assert not (tmp_path / "p").exists()


def test_sweep_plot_corrupt_results(small_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(small_sweep, bad)
    (bad / "meta.json").write_text("[1, 2")
    code, _, err = cli(capsys, "sweep-plot", bad)
    assert code == 2 and "meta.json: unreadable sweep metadata" in one_line_error(err)
    shutil.copy(small_sweep / "meta.json", bad / "meta.json")
    with open(bad / "results.csv", "a") as fh:
        fh.write("1,2,3\n")
    code, _, err = cli(capsys, "sweep-plot", bad)
    assert code == 2 and "results.csv: line 18: 3 cells" in one_line_error(err)


# -- B5: sweep sizes are counted before anything is built; corrupt resume state --------------------------

@pytest.mark.parametrize(("name", "expect"), [
    ("sweep-huge-grid.yaml", "grid: 1,001,000,000 hardware points (grid 1000 x 1001 x 1000 = 1,001,000,000)"),
    ("sweep-huge-random.yaml", "random.n: 1,000,000,000 hardware points (random n 1,000,000,000)"),
])
def test_sweep_refuses_huge_specs(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                  expect: str) -> None:
    code, _, err = cli(capsys, "sweep", CORPUS / name, "-o", tmp_path / "out")
    line = one_line_error(err)
    assert code == 2 and name in line and expect in line and "--max-points" in line
    assert not (tmp_path / "out").exists()


def test_max_points_limit_and_rows_limit() -> None:
    base = {"name": "m", "hardware": A100, "workloads": [GEMMS], "sparsity": ["dense"],
            "grid": {"dram.bandwidth_gb_s": [100, 200, 300], "clock_ghz": [1.0, 1.2]}}
    with pytest.raises(ConfigError, match=r"grid: 6 hardware points \(grid 3 x 2 = 6\): more than the limit of 5"):
        spec_from_dict(base, max_points=5)
    assert len(spec_from_dict(base, max_points=6).points) == 6
    with pytest.raises(ConfigError, match=r"sparsity: 6 hardware points x 1 workload settings x 11 sparsity patterns"):
        spec_from_dict({**base, "sparsity": ["dense", *[f"{n}:16" for n in range(1, 11)]]}, max_points=6)


def test_resume_with_a_corrupt_plan(small_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res"
    shutil.copytree(small_sweep, out)
    plan = json.loads((out / "plan.json").read_text())
    for text, expect in [("[]", "a sweep plan is a JSON object, got list"),
                         ("{\"spec", "unreadable sweep plan"),
                         (json.dumps({**plan, "chunk_size": "x"}), "chunk_size: expected a positive integer"),
                         (json.dumps({**plan, "chunk_size": 1000}), "chunks: 8 chunks of 1000 points do not cover")]:
        (out / "plan.json").write_text(text)
        code, _, err = cli(capsys, "sweep", SMALL, "-o", out, "--resume")
        line = one_line_error(err)
        assert code == 2 and str(out / "plan.json") in line and expect in line
    (out / "plan.json").write_text(json.dumps(plan))
    for chunk in (out / "chunks").iterdir():
        chunk.write_text("not json\n")
    code, out_text, _ = cli(capsys, "sweep", SMALL, "-o", out, "--resume")  # corrupt chunks are redone
    assert code == 0 and "16 rows (2 infeasible)" in out_text


def test_sweep_write_failure_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = cli(capsys, "sweep", SMALL, "-o", blocker / "res", "--workers", "1")
    assert code == 2 and str(blocker / "res") in one_line_error(err)


# -- B1: errors survive simpy; workloads without a batch parameter -------------------------------------

def test_errors_rebuild_from_their_args() -> None:
    for exc in (ConfigError("f.yaml", "a.b", "bad"), ConfigError("f.yaml", None, "bad"),
                InfeasibleError("hw", "core.sram", "too small", "layer1"), AccelsimError("plain")):
        again = type(exc)(*exc.args)
        assert str(again) == str(exc) == str(pickle.loads(pickle.dumps(exc)))
    assert ConfigError("f.yaml", "a.b", "bad").key == "a.b"

    def service(b: int, s: object) -> float:
        raise ConfigError("wl.yaml", "batch", "unknown parameter")

    model = ServingModel(service, RuntimeConfig())
    with pytest.raises(ConfigError, match="wl.yaml: batch: unknown parameter"):  # was: TypeError from simpy
        model.run(10.0, requests=10)
    assert simpy  # the serving model runs on simpy


def test_report_on_a_workload_without_batch(tmp_path: Path) -> None:
    from accelsim.cli.analysis import report_command

    calls: list[tuple[int, int]] = []
    paths, lines = report_command(A100, RESNET18, str(tmp_path / "r"), "2:4",
                                  progress=lambda d, t: calls.append((d, t)))
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    sv = report["serving"]
    assert sv["status"] == "ok" and sv["config"]["max_batch"] == 1
    assert "resnet18 has no 'batch' parameter: requests are served one at a time" in sv["note"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert "served one at a time" in md and "batches of up to 8" not in md
    assert calls and calls[-1][0] == calls[-1][1] == len(calls)  # D4: progress per stage


def test_serve_on_a_workload_without_batch(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", GEMMS, "--rate", "10", "--duration", "1")
    assert code == 0 and "Traceback" not in err
    assert "note: gemm-microbench has no 'batch' parameter: requests are served one at a time (max_batch 1)" in out
    assert "mean batch                 1.000" in out
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", GEMMS, "--rate", "10", "--duration", "1",
                       "--format", "json")
    data = json.loads(out)
    assert data["runtime_config"]["max_batch"] == 1 and data["notes"]


# -- A8: overload is said ----------------------------------------------------------------------------------

def test_serve_overload_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", GEMMS, "--rate", "1000000",
                         "--duration", "0.01", "--format", "json")
    data = json.loads(out)
    load = data["results"]["dense"]["load"]
    assert code == 0 and data["overloaded"] is True and load["overloaded"] is True
    assert load["offered_over_capacity"] > 100 and load["capacity_rps"] < 10_000
    assert "not steady-state" in load["note"]
    assert "accelsim: warning: dense: offered load 1,000,000 req/s is" in err and "not steady-state" in err
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", GEMMS, "--rate", "1000000", "--duration", "0.01")
    assert "OVERLOADED (dense)" in out and "offered / capacity" in out
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", GEMMS, "--rate", "100", "--duration", "2",
                         "--format", "json")  # 2 s: enough requests (>= 100) for a p99, so no sample warning
    data = json.loads(out)
    assert data["overloaded"] is False and data["results"]["dense"]["load"]["offered_over_capacity"] < 0.1
    assert data["results"]["dense"]["measured"] >= 100
    assert "warning" not in err
    # a run's own warnings (here the host's per-call floor, on bert-base) are not an overload
    code, out, err = cli(capsys, "serve", "--hw", ROOT / "hwconfigs/rtx5090-like.yaml", "--workload", BERT,
                         "--rate", "50", "--duration", "0.5", "--set", "seq=128", "--format", "json")
    data = json.loads(out)
    assert data["warnings"] and "per-call floor" in data["warnings"][0] and "per-call floor" in err
    assert data["overloaded"] is False and not any(r["load"]["overloaded"] for r in data["results"].values())


# -- B6: serve's numeric arguments are bounded ---------------------------------------------------------------

@pytest.mark.parametrize(("args", "expect"), [
    (["--instances", "10000000"], "--instances 10000000: expected an integer from 1 to 1,024"),
    (["--duration", "1e12"], "expected requests; at most 10,000,000 per run"),
    (["--duration", "inf"], "--duration inf: expected a finite number"),
    (["--sizes", "fixed:100000000"], "--sizes: size spec 'fixed:100000000': a request of 100,000,000 tokens"),
    (["--seed", "-1"], "--seed -1: expected an integer from 0 to 4294967295"),
    (["--seed", "4294967296"], "--seed 4294967296"),
    (["--rate", "nan"], "--rate nan: expected a finite number"),
    (["--rate", "0"], "--rate 0.0: expected a finite number"),
    (["--max-batch", "0"], "--max-batch 0: expected an integer from 1 to 1,024"),
    (["--max-batch", "100000000"], "--max-batch 100000000"),
    (["--max-wait-ms", "inf"], "--max-wait-ms inf"),
    (["--max-wait-ms", "-1"], "--max-wait-ms -1.0"),
    (["--sla-p99", "nan", "--find-max-rate"], "--sla-p99 nan"),
])
def test_serve_arguments_are_bounded(capsys: pytest.CaptureFixture[str], args: list[str], expect: str) -> None:
    argv = ["serve", "--hw", A100, "--workload", BERT, "--rate", "10", "--duration", "1"]
    for flag in ("--rate", "--duration"):
        if flag in args:
            i = argv.index(flag)
            del argv[i:i + 2]
    code, _, err = cli(capsys, *argv, *args)
    assert code == 2 and expect in one_line_error(err)


def test_runtime_config_file_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "rt.yaml"
    cfg.write_text("instances: 10000000\n")
    code, _, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "10", "--duration", "1",
                       "--runtime-config", cfg)
    assert code == 2 and "instances" in one_line_error(err)


# -- D4: progress of the capacity search and sweep-plot ------------------------------------------------------

def test_progress_callbacks(small_sweep: Path, tmp_path: Path) -> None:
    from accelsim.cli.sweep import sweep_plot_command

    calls: list[tuple[int, int]] = []
    model = ServingModel(lambda b, s: 1e-3 + 2e-4 * b, RuntimeConfig(max_batch=8))
    res = find_max_rate(model, 20.0, requests=2000, progress=lambda d, t: calls.append((d, t)))
    assert len(calls) == len(res.evaluations) + 1 and calls[-1] == (len(calls) - 1, len(calls) - 1)
    assert all(d <= t for d, t in calls)
    plots: list[tuple[int, int]] = []
    paths, _ = sweep_plot_command(small_sweep, tmp_path / "p", progress=lambda d, t: plots.append((d, t)))
    assert plots[-1] == (len(paths), len(paths)) == (4, 4)


# -- A7: NaN weights; B8: escaping in report.md; B4: all-or-nothing report files ----------------------------

def test_report_rejects_nan_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = np.ones((256, 256), dtype=np.float32)
    w[3, 5] = np.nan
    np.savez(tmp_path / "w.npz", g256=w)
    code, _, err = cli(capsys, "report", "--sparsity", "2:4", "--hw", A100, "--workload", GEMMS,
                       "--weights", tmp_path / "w.npz", "-o", tmp_path / "r")
    line = one_line_error(err)
    assert code == 2 and f"weights {tmp_path / 'w.npz'}: layer 'g256': 1 NaN or Inf values" in line
    assert not (tmp_path / "r").exists()


def test_report_md_escapes_user_strings(tmp_path: Path) -> None:
    from accelsim.cli.analysis import report_command

    report_command(A100, str(CORPUS / "report-html-injection.yaml"), str(tmp_path / "r"), "2:4")
    md = (tmp_path / "r" / "report.md").read_text()
    fence = md.index("````text") if "````text" in md else md.index("```text")
    outside = md[:fence] + md[md.index("## Supported-layer matrix"):]
    for raw in ("<script>", "<b>", "<img", "</b>", "<i>"):
        assert raw not in outside
    assert "&lt;script&gt;alert(2)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in md
    assert "| &lt;b&gt;g1\\|x\\`y&lt;/b&gt; |" in md  # a table cell: | and backtick escaped too
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<script>" not in html and "<b>g1" not in html


def test_report_files_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accelsim.cli.analysis import report_command

    real_open = open
    opened: list[str] = []

    def failing_open(path: object, *a: object, **k: object):  # the third file hits a full disk
        opened.append(str(path))
        if len(opened) == 3:
            raise OSError(28, "No space left on device", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(fileio, "open", failing_open, raising=False)
    with pytest.raises(AccelsimError, match="No space left on device"):
        report_command(A100, GEMMS, str(tmp_path / "r"), "2:4")
    assert list((tmp_path / "r").iterdir()) == []  # no report file, no temporary left


def test_sweep_point_reports_every_problem_of_the_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A grid point with two bad values names both grid keys (it used to keep only the first problem)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: t\nhardware: {ROOT / 'hwconfigs/tpu-like.yaml'}\nworkloads: [{GEMMS}]\n"
                    "grid:\n  core.compute.rows: [0, 64]\n  dram.bandwidth_gb_s: [-5]\n")
    code, _, err = cli(capsys, "sweep", str(spec), "-o", str(tmp_path / "out"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2
    assert "grid.core.compute.rows: grid point 0" in lines[0] and "greater than 0, got 0" in lines[0]
    assert "grid.dram.bandwidth_gb_s: grid point 0" in lines[1] and "got -5" in lines[1]
    assert not (tmp_path / "out").exists()


def test_the_sweep_summary_says_when_repeated_points_were_dropped(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "dup.yaml"
    spec.write_text(f"name: dup\nhardware: {ROOT / 'hwconfigs' / 'tpu-like.yaml'}\n"
                    f"workloads: [{ROOT / 'workloads' / 'gemm-microbench.yaml'}]\nsparsity: [dense]\n"
                    "grid: {dram.bandwidth_gb_s: [100, 100, 200]}\n")
    code, out, _ = cli(capsys, "sweep", spec, "-o", tmp_path / "res", "--workers", "1")
    assert code == 0 and "sweep: 2 configs" in out and "1 repeated point(s) dropped" in out


def test_sweep_plot_refuses_a_table_without_its_spec(small_sweep: Path, tmp_path: Path, capsys) -> None:
    """A bare results.csv (no meta.json) would pool every grid dimension in one front: refused, naming the file."""
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "results.csv").write_text((small_sweep / "results.csv").read_text())
    code, out, err = cli(capsys, "sweep-plot", bare)
    assert code == 2 and out == "" and "meta.json: not found" in one_line_error(err)
    assert not (bare / "plots").exists()
