"""Audit fixes to ``accelsim serve`` (nothing silently wrong): the capacity search is bounded by the
deployment's capacity and never divides lower bounds; a per-layer sparsity plan is served; trace runs say
their own duration and keep booleans; variability bounds; size-spec errors in the flag's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, one_line_error

from accelsim.cli.serve import format_serve
from accelsim.serving import RuntimeConfig, ServeRequest, ServingModel, find_max_rate, serve
from accelsim.serving.results import CapacityResult, CapacitySummary

ROOT = Path(__file__).resolve().parents[1]
A100 = str(ROOT / "hwconfigs/a100-like.yaml")
BERT = str(ROOT / "workloads/bert-base.yaml")


# -- 1: capacity at SLA is bounded by the capacity ---------------------------------------------------------

def _synthetic() -> ServingModel:
    return ServingModel(lambda b, s: 1e-3 + 2e-4 * b, RuntimeConfig(max_batch=8, max_wait_ms=0.0))


def test_loose_budget_search_stops_at_capacity() -> None:
    """A 10 s budget outlasts the drain of 2,000 requests at any rate (~0.65 s at 3,077 req/s), so the
    quantile alone never fails: the search used to double to ~1e18 req/s and call it 'unbounded'."""
    model = _synthetic()
    capacity = 8 / (1e-3 + 2e-4 * 8)  # full batches back to back: 3,077 req/s
    cap = find_max_rate(model, 10_000.0, requests=2_000)
    assert cap.status == "ok" and not cap.lower_bound_only
    assert 0.5 * capacity < cap.max_rate_rps <= capacity * (1 + 1e-6)
    assert all(e.rate_rps < 4.1 * capacity for e in cap.evaluations)
    failing = [e for e in cap.evaluations if not e.holds]
    assert failing and all(e.overloaded for e in failing)
    assert all(e.to_dict()["overloaded"] == e.overloaded for e in cap.evaluations)
    assert cap.limited_by == "capacity" == cap.to_dict()["limited_by"]
    tight = find_max_rate(model, 5.0, requests=2_000)  # a budget that binds below the capacity
    assert tight.status == "ok" and tight.limited_by == "budget" and tight.max_rate_rps < capacity


def _cap(status: str, rate: float) -> CapacityResult:
    return CapacityResult(name="m", sparsity=None, metric="latency", quantile="p99", budget_ms=10.0,
                          max_rate_rps=rate, bracket_rps=(rate, None), value_at_max_ms=1.0, rtol=0.005,
                          requests_per_eval=100, seed=0, status=status, evaluations=())


def test_unbounded_capacity_is_a_lower_bound_with_no_ratio() -> None:
    summary = CapacitySummary(budget_ms=10.0, metric="latency",
                              results={"dense": _cap("unbounded", 2.9e18), "2:4": _cap("ok", 14.0)},
                              sparse_over_dense=None)
    d = summary.to_dict()
    assert d["sparse_over_dense"] is None and "lower bound" in d["ratio_note"]
    assert d["results"]["dense"]["lower_bound_only"] is True and d["results"]["2:4"]["lower_bound_only"] is False
    text = "\n".join(ln for ln in _capacity_lines(summary))
    assert "> 2,900,000,000,000,000,000.0 req/s (unbounded)" in text and "sparse / dense" not in text
    assert "no sparse/dense ratio" in text


def _capacity_lines(summary: CapacitySummary) -> list[str]:
    """The capacity block of the serve table for ``summary`` (the rest of the table from a tiny real run)."""
    import dataclasses

    result = serve(ServeRequest(A100, BERT, 50.0, None, 0.2, 0, 1, 0.0))
    text = format_serve(dataclasses.replace(result, capacity=summary))
    return text.split("capacity at p99", 1)[1].splitlines()


def test_serve_find_max_rate_loose_budget_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    """Repro B: bert-base, p99 <= 10 s: capacity near the full-batch figure (~3,354 req/s), not 1.9e21."""
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "500", "--duration", "1",
                       "--sparsity", "2:4", "--sla-p99", "10000", "--find-max-rate", "--format", "json")
    assert code == 0
    cap = json.loads(out)["capacity"]
    for lab, c in cap["results"].items():
        full = json.loads(out)["results"][lab]["load"]["capacity_rps"]
        assert c["status"] == "ok" and c["max_rate_rps"] <= full * (1 + 1e-6)
    assert cap["sparse_over_dense"] is not None


# -- 2: a per-layer sparsity plan is served beside dense ----------------------------------------------------

LAYER_PLAN = """name: gemms
dtype: fp16
params: {batch: 1}
layers:
  - {name: a, op: gemm, m: 4096, n: "batch*128", k: 4096, sparsity: "2:4"}
  - {name: b, op: gemm, m: 4096, n: "batch*128", k: 4096, sparsity: "2:4"}
"""


def test_per_layer_plan_is_served_beside_dense(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Layers that each say 2:4 (no top-level sparsity) used to be served dense only, silently."""
    from accelsim.hardware.model import load_hardware
    from accelsim.simulation import run
    from accelsim.workloads.model import load_workload

    wl = tmp_path / "gemms.yaml"
    wl.write_text(LAYER_PLAN)
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", wl, "--rate", "300", "--duration", "0.5",
                       "--max-batch", "1", "--format", "json")
    assert code == 0
    res = json.loads(out)
    assert res["sparsities"] == ["dense", "workload plan"]
    assert any(n.startswith("workload plan: the workload's own per-layer sparsity plan") for n in res["notes"])
    hw = load_hardware(A100)
    planned = run(load_workload(str(wl)), hw, None)  # what `accelsim run` does with no --sparsity
    dense = run(load_workload(str(wl)), hw, "dense")
    svc = {lab: r["service_ms"]["mean_per_batch"] for lab, r in res["results"].items()}
    assert svc["workload plan"] == pytest.approx(planned.total_cycles / (hw.clock_ghz * 1e9) * 1e3, abs=1e-6)
    assert svc["dense"] == pytest.approx(dense.total_cycles / (hw.clock_ghz * 1e9) * 1e3, abs=1e-6)
    assert res["results"]["workload plan"]["sparsity"] == "workload plan"


TOP_LEVEL_WITH_EXCEPTION = """
name: gemms-top
dtype: fp16
sparsity: "2:4"
params: {batch: 1}
layers:
  - {name: a, op: gemm, m: 4096, n: "batch*128", k: 4096}
  - {name: b, op: gemm, m: 4096, n: "batch*128", k: 4096, sparsity: dense}
"""


@pytest.mark.parametrize("exception", [True, False])
def test_top_level_sparsity_serves_the_plan_with_its_layer_exceptions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], exception: bool) -> None:
    """A top-level 2:4 with a layer kept dense used to be served as 2:4 on every layer (the dense layer too),
    unlike `accelsim run` and `accelsim report` with no --sparsity; without the exception the label stays 2:4."""
    from accelsim.hardware.model import load_hardware
    from accelsim.simulation import run
    from accelsim.workloads.model import load_workload

    wl = tmp_path / "gemms.yaml"
    wl.write_text(TOP_LEVEL_WITH_EXCEPTION if exception else TOP_LEVEL_WITH_EXCEPTION.replace(", sparsity: dense", ""))
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", wl, "--rate", "300", "--duration", "0.5",
                       "--max-batch", "1", "--format", "json")
    assert code == 0
    res = json.loads(out)
    label = "workload plan" if exception else "2:4"
    assert res["sparsities"] == ["dense", label]
    notes = [n for n in res["notes"] if n.startswith("workload plan:")]
    assert notes == (["workload plan: the workload's sparsity 2:4 on every weight layer but b (dense) (their own "
                      "sparsity:), as 'accelsim run' runs it with no --sparsity"] if exception else [])
    hw = load_hardware(A100)
    planned = run(load_workload(str(wl)), hw, None)
    every = run(load_workload(str(wl)), hw, "2:4")
    assert (planned.total_cycles != every.total_cycles) is exception
    svc = res["results"][label]["service_ms"]["mean_per_batch"]
    assert svc == pytest.approx(planned.total_cycles / (hw.clock_ghz * 1e9) * 1e3, abs=1e-6)
    assert res["results"][label]["sparsity"] == label
    # --sparsity 2:4 overrides every layer, as `accelsim run --sparsity 2:4` does
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", wl, "--rate", "300", "--duration", "0.5",
                       "--max-batch", "1", "--sparsity", "2:4", "--format", "json")
    forced = json.loads(out)["results"]["2:4"]["service_ms"]["mean_per_batch"]
    assert forced == pytest.approx(every.total_cycles / (hw.clock_ghz * 1e9) * 1e3, abs=1e-6)


# -- 3: a replayed trace: booleans stay booleans, the duration is the trace's own --------------------------

@pytest.mark.parametrize("gap_s", [0.02, 1e-5])
def test_trace_run_overloaded_is_bool_and_duration_is_its_span(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               gap_s: float) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,size\n" + "".join(f"{i * gap_s:.6f},128\n" for i in range(200)))
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--trace", trace, "--format", "json")
    assert code == 0
    res = json.loads(out)
    over = res["results"]["dense"]["load"]["overloaded"]
    assert over is (gap_s < 1e-4) and res["overloaded"] is over  # a bool, as in Poisson mode, not 0.0 / 1.0
    assert res["duration_s"] == pytest.approx(199 * gap_s, abs=1e-6)  # not the --duration default (10 s)
    assert res["results"]["dense"]["arrivals"]["span_s"] == res["duration_s"]


def test_duration_with_a_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--duration was accepted with --trace and silently ignored (the trace is replayed over its own span)."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,size\n" + "".join(f"{i * 0.02:.6f},128\n" for i in range(20)))
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--trace", trace, "--duration", "5")
    assert code == 2 and out == ""
    assert "--duration 5 does not apply with --trace" in one_line_error(err)


# -- 4: jitter sigma is bounded ------------------------------------------------------------------------------

def test_jitter_sigma_above_two_is_refused_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sigma 100 used to run: every batch's factor ~exp(-5000), service 0.0 ms, utilisation 0.0."""
    cfg = tmp_path / "rt.yaml"
    cfg.write_text("variability: {jitter: {enabled: true, sigma: 100}}\n")
    code, _, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "100", "--duration", "0.2",
                       "--runtime-config", cfg)
    line = one_line_error(err)
    assert code == 2 and str(cfg) in line and "variability.jitter.sigma" in line and "2" in line
    edge = RuntimeConfig.from_dict({"variability": {"jitter": {"enabled": True, "sigma": 2.0}}})
    assert edge.variability.jitter.sigma == 2.0


# -- 5: size-spec errors quote the flag's own text ----------------------------------------------------------

@pytest.mark.parametrize(("spec", "why"), [("fixed:0", "value must be >= 1"),
                                           ("uniform:5:2", "need 1 <= low <= high"),
                                           ("choice:0,3", "choice needs values >= 1")])
def test_size_spec_errors_quote_the_flag_text(capsys: pytest.CaptureFixture[str], spec: str, why: str) -> None:
    code, _, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "10", "--sizes", spec)
    line = one_line_error(err)
    assert code == 2 and line == f"accelsim: error: --sizes: size spec {spec!r}: {why}"  # no dict repr


# -- 6: decide on a tensor-parallel system says what an instance is ----------------------------------------

def test_decide_on_a_tensor_parallel_system_notes_the_group(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    variants = tmp_path / "v.yaml"
    variants.write_text(f"metric: accuracy\nbudget_ms: 50\nrate_rps: 20\nrequests: 100\nvariants:\n"
                        f"  - {{name: bert-dense, workload: {BERT}, sparsity: dense}}\n")
    code, out, _ = cli(capsys, "decide", "--hw", ROOT / "hwconfigs/8xa100-like.yaml", "--hw-set", "system.devices=4",
                       "--variants", variants, "--format", "json")  # BERT's 12 heads: 4 devices split them whole
    assert code == 0
    notes = json.loads(out)["notes"]
    assert notes[0].startswith("8xa100-like: each instance is a tensor-parallel group of 4 devices")
    code, out, _ = cli(capsys, "decide", "--hw", A100, "--variants", variants, "--format", "json")
    assert code == 0 and not any("tensor-parallel" in n for n in json.loads(out)["notes"])


def test_budget_without_variants_and_find_max_rate_without_sla_are_refused_up_front(capsys) -> None:
    """--budget-ms without --variants was accepted and checked nothing; --find-max-rate without --sla-p99 failed
    only after the side-by-side run."""
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "100", "--duration", "1",
                         "--budget-ms", "5")
    assert code == 2 and out == "" and "--budget-ms 5 applies to --variants" in one_line_error(err)
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "100", "--find-max-rate")
    assert code == 2 and "--find-max-rate needs a p99 budget" in one_line_error(err)


def test_the_comparison_says_which_way_its_ratios_read(capsys) -> None:
    code, out, _ = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "50", "--duration", "0.5",
                       "--sparsity", "2:4", "--format", "json")
    cmp = json.loads(out)["comparison"]
    assert code == 0 and cmp["reading"].startswith("above 1 means 2:4 is better")
    p50 = {k: v["latency_ms"]["p50"] for k, v in json.loads(out)["results"].items()}
    assert cmp["latency_p50_ratio"] == pytest.approx(p50["dense"] / p50["2:4"], rel=1e-3)
