"""Serving figures that do not mean what they say are flagged: a percentile from too few completed requests,
an offered load near capacity (not steady-state: the short run's p99 is far below the latency-vs-load
curve's at the same rate), a latency-vs-load curve's requests per point, a decide verdict on too few
requests, near-saturation rows of the report's serving table, and an LLM batch capped by the KV cache."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import cli

from accelsim.analysis.deployment_serving import Percentiles, ServingConfig, ServingLatency, ServingRow, ServingSection
from accelsim.cli.serve import format_serve
from accelsim.report.deploy_tables import serving_cells
from accelsim.report.deploy_text import serving_line
from accelsim.report.serving_plots import load_curve_xlabel
from accelsim.serving import RuntimeConfig, ServeRequest, ServingModel, compare, latency_vs_load, serve
from accelsim.serving.limits import (
    NEAR_CAPACITY,
    kv_limit_notes,
    min_samples,
    near_capacity,
    near_capacity_warnings,
    overload_warnings,
    sample_warnings,
    thin_quantiles,
)
from accelsim.serving.results import ServeResult
from accelsim.serving.stats import stats_ms

ROOT = Path(__file__).resolve().parents[1]
A100 = str(ROOT / "hwconfigs/a100-like.yaml")
BERT = str(ROOT / "workloads/bert-base.yaml")


def _synthetic(**cfg: float) -> ServingModel:
    """Batches of b take 1 ms + 0.2 ms x b; 8 at most: capacity 8 / 2.6 ms = 3,077 req/s."""
    return ServingModel(lambda b, s: 1e-3 + 2e-4 * b, RuntimeConfig(max_batch=8, max_wait_ms=0.0, **cfg))


CAPACITY = 8 / (1e-3 + 2e-4 * 8)


# -- (a) too few samples --------------------------------------------------------------------------------

def test_the_sample_rule_is_one_over_the_tail() -> None:
    """A pQ needs 1 / (1 - Q) completed requests: with fewer, none lies above it, so it is the max."""
    assert (min_samples(0.99), min_samples(0.95), min_samples(0.5)) == (100, 20, 2)
    assert thin_quantiles(99) == ["p99"] and thin_quantiles(19) == ["p95", "p99"] and thin_quantiles(100) == []
    assert thin_quantiles(1) == ["p50", "p95", "p99"]


def test_a_short_run_says_its_p99_is_from_too_few_requests() -> None:
    model = _synthetic()
    runs = compare({"dense": model}, 0.3 * CAPACITY, requests=23).results
    run = runs["dense"]
    assert run.measured == 23
    # the claim behind the rule: from 23 samples the "p99" lies above every sample but the largest
    x = np.arange(1, 24, dtype=float) / 1e3
    assert stats_ms(x).p99 > 22.0
    (line,) = sample_warnings(runs)
    assert line.startswith("dense: p99 from only 23 completed requests") and "needs >= 100" in line
    assert "p95" not in line.split(":")[1]  # 23 >= 20: the p95 stands
    assert sample_warnings(compare({"dense": model}, 0.3 * CAPACITY, requests=100).results) == []


def test_serve_warns_and_notes_a_two_request_p99(capsys: pytest.CaptureFixture[str]) -> None:
    """Repro: --rate 100 --duration 0.05 reported a p99 from 2 requests with no word."""
    code, out, err = cli(capsys, "serve", "--hw", A100, "--workload", BERT, "--rate", "100", "--duration", "0.05",
                         "--sparsity", "dense", "--max-batch", "1")
    assert code == 0
    assert "warning: dense: p95 and p99 from only 2 completed requests" in err
    assert "note: dense: p95 and p99 from only 2 completed requests" in out
    assert "completed requests" in out.split("note:")[0]


# -- (b) near capacity ------------------------------------------------------------------------------------

def test_near_capacity_threshold() -> None:
    assert NEAR_CAPACITY == 0.9
    assert near_capacity(0.9) and near_capacity(0.996) and near_capacity(1.0)
    assert not near_capacity(0.899) and not near_capacity(1.01) and not near_capacity(None)


def test_a_near_capacity_run_says_how_far_the_curve_disagrees() -> None:
    """At 0.97 of capacity, 150 requests from an empty system see a fraction of the queueing that 6,000 do:
    the warning gives the curve's p99 at the same rate and the ratio."""
    model = _synthetic()
    rate = 0.97 * CAPACITY
    runs = compare({"dense": model}, rate, requests=150).results
    assert runs["dense"].load.offered_over_capacity == pytest.approx(0.97, abs=1e-4)
    curve = latency_vs_load(model, [0.5 * CAPACITY, rate], requests=6_000)
    assert curve.requests_per_point == 6_000
    far = curve.points[1].latency_ms("latency", "p99")
    here = runs["dense"].latency_ms.p99
    assert far is not None and far > 2 * here  # the disagreement the warning is about
    (line,) = near_capacity_warnings(runs, {"dense": curve}, 6_000)
    assert line.startswith("dense: offered load is 0.97 of the capacity (>= 0.9")
    assert f"(6,000 requests) gives latency p99 {far:,.1f} ms against {here:,.1f} ms here ({far / here:,.3g}x)" \
        in line
    assert "grow with the run length" in near_capacity_warnings(runs)[0]  # no curve: only that it grows
    assert "curve" not in near_capacity_warnings(runs)[0]


def test_overloaded_and_light_runs_get_no_near_capacity_warning() -> None:
    model = _synthetic()
    light = compare({"dense": model}, 0.5 * CAPACITY, requests=200).results
    over = compare({"dense": model}, 1.2 * CAPACITY, requests=200).results
    assert near_capacity_warnings(light) == [] and near_capacity_warnings(over) == []
    assert overload_warnings(over)  # the overload has its own warning


# -- (c) the curve's requests per point -------------------------------------------------------------------

def test_serve_json_and_plot_say_the_curve_requests_per_point() -> None:
    result = serve(ServeRequest(A100, BERT, 400.0, "dense", 0.2, 0, 1, 0.0, load_curves=True,
                                requests_per_eval=300))
    assert result.latency_vs_load is not None
    d = result.to_dict()
    assert d["latency_vs_load_requests_per_point"] == 300
    assert load_curve_xlabel(result.latency_vs_load) == \
        "arrival rate (requests/s); each point 300 requests from an empty system"


# -- (d) decide -------------------------------------------------------------------------------------------

BERT_LARGE_24 = "asp_mishra2021:bert-large:squad-v1.1:2:4:asp-one-shot-magnitude-2-4-pruning-then-retraining"
TINY = {"name": "tiny", "dtype": "fp16", "params": {"batch": 1, "seq": 128},
        "layers": [{"name": "fc1", "op": "gemm", "m": 1024, "n": "batch * seq", "k": 1024}]}


def test_decide_warns_a_verdict_rests_on_too_few_requests(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"rate_rps": 200, "variants": [
        {"name": "d", "workload": "tiny.yaml", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}}]}))
    code, out, err = cli(capsys, "decide", "--hw", A100, "--variants", str(path), "--budget-ms", "50",
                         "--requests", "20", "--format", "json")
    assert code == 0
    d = json.loads(out)
    assert d["variants"][0]["note"].startswith("too few requests: p99 from only 20 completed requests")
    assert d["warnings"][-1] == "verdict at 50 ms rests on d: it may change with more requests"
    assert "warning: verdict at 50 ms rests on d" in err
    code, out, err = cli(capsys, "decide", "--hw", A100, "--variants", str(path), "--budget-ms", "50",
                         "--requests", "200", "--format", "json")
    assert code == 0 and json.loads(out)["warnings"] == [] and "warning" not in err


# -- report: near-saturation rows are marked --------------------------------------------------------------

def _latency(ratio: float) -> ServingLatency:
    return ServingLatency(p50=1.0, p95=2.0, p99=3.0, utilisation=0.5, offered_over_capacity=ratio,
                          overloaded=ratio > 1.0, ttft=Percentiles(p50=1.0, p95=2.0, p99=3.0),
                          tpot=Percentiles(p50=0.1, p95=0.2, p99=0.3))


def test_report_marks_near_saturation_rows() -> None:
    row = ServingRow(load=0.8, rate_rps=10.0, duration_s=400.0, requests=4000,
                     by_label={"dense": _latency(0.8), "2:4": _latency(0.991)})
    sv = ServingSection(status="ok", mode="llm", labels=("dense", "2:4"), decode_workload="dec",
                        capacity_rps={"dense": 12.5, "2:4": 10.09}, rows=(row,), kv_limited=("2:4",),
                        config=ServingConfig(max_batch=8, max_wait_ms=2.0, prompt_tokens=128, output_tokens=128),
                        note="n")
    head, body = serving_cells(sv)
    dense, sparse = body
    assert sparse[3] == "2:4" and all(c.endswith(" ms ~") for c in sparse[4:])
    assert dense[3] == "dense" and all(c.endswith(" ms") for c in dense[4:])
    line = serving_line(sv)
    assert "NEAR CAPACITY (not steady-state): 2:4" in line and "KV-cache limited: 2:4" in line
    over = dataclasses.replace(row, by_label={"dense": _latency(0.8), "2:4": _latency(1.2)})
    _, body = serving_cells(dataclasses.replace(sv, rows=(over,)))
    assert all(c.endswith(" ms *") for c in body[1][4:])  # overloaded keeps its own mark


# -- 2: the KV cache limiting the batch is said ------------------------------------------------------------

def _llm(budget_tokens: int) -> ServingModel:
    """Prefill 1 ms per request, decode 1 ms per step; 1 KV byte per token, a budget of ``budget_tokens``."""
    return ServingModel(lambda b, s: 1e-3 * b, RuntimeConfig(max_batch=16, max_wait_ms=0.0), default_size=64,
                        decode_service=lambda b, k: 1e-3, kv_bytes_per_token=1.0, kv_budget_bytes=budget_tokens,
                        default_output_tokens=8)


def test_a_kv_limited_llm_run_says_so() -> None:
    runs = compare({"dense": _llm(4 * 71)}, 200.0, requests=200).results  # 4 requests of 64 + 8 - 1 tokens fit
    kv = runs["dense"].kv_cache
    assert kv is not None and kv.limits_batch and kv.cap_requests == 4
    (line,) = kv_limit_notes(runs)
    assert line.startswith("dense: the KV cache limits the decode batch to 4 of the largest requests "
                           "(max_batch 16; budget 284 B, 71 B per request)")
    assert f"{kv.blocked_admissions:,} admissions waited for KV room" in line and kv.blocked_admissions > 0
    assert kv_limit_notes(compare({"dense": _llm(100 * 71)}, 200.0, requests=200).results) == []


def test_serve_table_says_the_kv_cache_caps_the_batch() -> None:
    base = serve(ServeRequest(A100, BERT, 50.0, "dense", 0.2, 0, 1, 0.0))
    runs = compare({"dense": _llm(4 * 71)}, 200.0, requests=200)
    result: ServeResult = dataclasses.replace(base, mode="llm", comparison=runs, notes=tuple(kv_limit_notes(
        runs.results)))
    text = format_serve(result)
    assert re.search(r"^KV-cache batch cap +4$", text, re.M)
    assert "KV-CACHE LIMITED (dense): the KV cache, not --max-batch, caps the decode batch" in text
    assert "note: dense: the KV cache limits the decode batch to 4" in text
