"""The deployment report's serving section serves a workload as `accelsim serve` does: an LLM with its paired
decode workload (TTFT / TPOT), the workload's own sparsity plan, the headline's batch as the batch limit, and a
skipped section that says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HW, WL, cli, one_line_error

from accelsim import load_hardware, load_workload
from accelsim.analysis import deployment_serving
from accelsim.analysis.deployment import build_report
from accelsim.report.deploy import render_markdown, summary_lines
from accelsim.serving.request import ServeRequest, serve

A100 = HW / "a100-like.yaml"

TINY_PREFILL = """\
name: tiny-prefill
dtype: fp16
params: {batch: 1, seq: 128}
kv_cache_elements: "2 * 2 * batch * seq * 512"
layers:
  - repeat: 2
    name: layers
    layers:
      - {name: qkv, op: gemm, m: 1536, n: "batch * seq", k: 512}
      - {name: scores, op: matmul, m: seq, n: seq, k: 64, batch: "batch * 8"}
      - {name: context, op: matmul, m: seq, n: 64, k: seq, batch: "batch * 8"}
      - {name: o_proj, op: gemm, m: 512, n: "batch * seq", k: 512}
      - {name: up, op: gemm, m: 2048, n: "batch * seq", k: 512}
      - {name: down, op: gemm, m: 512, n: "batch * seq", k: 2048}
"""

TINY_DECODE = """\
name: tiny-decode
dtype: fp16
params: {batch: 1, kv_len: 128}
kv_cache_elements: "2 * 2 * batch * (kv_len + 1) * 512"
layers:
  - repeat: 2
    name: layers
    layers:
      - {name: qkv, op: gemm, m: 1536, n: batch, k: 512}
      - {name: scores, op: matmul, m: 1, n: kv_len, k: 64, batch: "batch * 8"}
      - {name: context, op: matmul, m: 1, n: 64, k: kv_len, batch: "batch * 8"}
      - {name: o_proj, op: gemm, m: 512, n: batch, k: 512}
      - {name: up, op: gemm, m: 2048, n: batch, k: 512}
      - {name: down, op: gemm, m: 512, n: batch, k: 2048}
"""


@pytest.fixture
def few_requests(monkeypatch: pytest.MonkeyPatch) -> int:
    """Fewer requests per serving run (the section and serve must still agree figure for figure)."""
    monkeypatch.setattr(deployment_serving, "SERVING_REQUESTS", 300)
    return 300


def _llm_pair(tmp_path: Path) -> Path:
    (tmp_path / "tiny-decode.yaml").write_text(TINY_DECODE)
    prefill = tmp_path / "tiny-prefill.yaml"
    prefill.write_text(TINY_PREFILL)
    return prefill


def _served(sv: dict, hw: Path, workload: Path, sparsity: str | None, sets: dict) -> None:
    """Every row of the report's serving section (as report.json has it) equals `accelsim serve` at that rate and
    duration: the requests, each variant's capacity and its percentiles."""
    for row in sv["rows"]:
        res = serve(ServeRequest(hw=hw, workload=workload, rate=row["rate_rps"], duration_s=row["duration_s"],
                                 sparsity=sparsity, max_batch=sv["config"]["max_batch"], set_params=sets))
        runs = list(res.comparison.results.values())
        assert len(runs) == len(sv["labels"])
        for lab, theirs in zip(sv["labels"], runs, strict=True):
            ours = row[lab]
            assert theirs.requests == row["requests"]
            assert theirs.load.capacity_rps == pytest.approx(sv["capacity_rps"][lab], rel=1e-5)
            assert ours["offered_over_capacity"] == theirs.load.offered_over_capacity
            metrics = {"latency": theirs.latency_ms}
            if sv["mode"] == "llm":
                metrics |= {"ttft": theirs.ttft_ms, "tpot": theirs.tpot_ms}
            for name, stats in metrics.items():
                part = ours if name == "latency" else ours[name]
                assert (part["p50"], part["p95"], part["p99"]) == (stats.p50, stats.p95, stats.p99), (lab, name)


def test_llm_prefill_report_serves_prefill_plus_decode_as_serve_does(tmp_path: Path, few_requests: int) -> None:
    """Audit: a *-prefill report served prefill-only requests (147 req/s for llama2-7b where serve, pairing the
    decode workload, finds ~7.7): the section pairs the decode workload, reports TTFT / TPOT and equals serve."""
    prefill = _llm_pair(tmp_path)
    hw = load_hardware(A100)
    model = load_workload(prefill, {"seq": 128})
    rep = build_report(model, hw, "2:4", hw_source=str(A100), workload_source=str(prefill))
    sv = rep.serving
    assert sv.status == "ok" and sv.mode == "llm" and sv.decode_workload == "tiny-decode"
    assert sv.config.prompt_tokens == 128 and sv.config.output_tokens == 128
    # a request is a prefill plus 127 decode steps: far fewer requests/s than prefill passes back to back
    prefill_only = 1e6 / rep.summary.dense.latency_us
    assert sv.saturation_rps < prefill_only / 8
    row = sv.rows[0]
    assert row.by_label["dense"].ttft is not None and row.by_label["dense"].tpot is not None
    assert row.by_label["dense"].offered_over_capacity == pytest.approx(0.5, rel=1e-4)
    _served(sv.to_dict(), A100, prefill, "2:4", {"seq": 128})
    md = render_markdown(rep)
    assert "## Serving: TTFT and TPOT" in md and "| deployment | TTFT p50 |" in md
    assert "the headline above is the prefill pass alone" in md
    line = next(x for x in summary_lines(rep) if x.startswith("serving"))
    assert "LLM prefill + tiny-decode" in line and "p99 TTFT" in line and "p99 TPOT" in line
    data = rep.to_dict()["serving"]
    assert set(data["rows"][0]["dense"]) >= {"ttft", "tpot", "p99"}


def test_prefill_without_a_decode_sibling_says_decode_is_not_served(tmp_path: Path, few_requests: int) -> None:
    prefill = tmp_path / "tiny-prefill.yaml"
    prefill.write_text(TINY_PREFILL)
    rep = build_report(load_workload(prefill), load_hardware(A100), "2:4", hw_source=str(A100),
                       workload_source=str(prefill))
    assert rep.serving.status == "ok" and rep.serving.mode == "batch"
    assert "has no *-decode workload beside it" in rep.serving.note and "decode is not served" in rep.serving.note


def test_report_on_the_workloads_own_plan_serves_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           few_requests: int) -> None:
    """Audit: no --sparsity on a workload with `sparsity: "2:4"` skipped the section ("got 'plan'") without a word
    on the terminal. Now the plan is served, labelled as the report labels it, and equals serve (no --sparsity)."""
    wl = tmp_path / "bert-plan.yaml"
    wl.write_text('sparsity: "2:4"\n' + (WL / "bert-base.yaml").read_text())
    code, out, _ = cli(capsys, "report", "--hw", A100, "--workload", wl, "--set", "batch=2", "--set", "seq=64",
                       "-o", tmp_path / "r")
    assert code == 0
    data = json.loads((tmp_path / "r" / "report.json").read_text())["serving"]
    assert data["status"] == "ok", data["note"]
    assert data["labels"] == ["dense", "workload plan (2:4)"]
    assert "no --sparsity (the workload's own plan)" in data["note"]
    assert "serving, batches of up to 2" in out and "workload plan (2:4)" in out
    _served(data, A100, wl, None, {"seq": 64})


def test_headline_batch_is_the_serving_batch_limit_and_the_note_says_so(tmp_path: Path, few_requests: int) -> None:
    """Audit: `--set batch=16` gave a headline at batch 16 and serving rows at batches of up to 8 without a word.
    The headline's batch is now the batch limit, so the dense capacity is that batch over the headline's time."""
    hw = load_hardware(A100)
    src = str(WL / "bert-base-gemms.yaml")
    rep = build_report(load_workload(src, {"batch": 16, "seq": 64}), hw, "2:4", hw_source=str(A100),
                       workload_source=src)
    sv = rep.serving
    assert sv.config.max_batch == 16 and sv.config.headline_batch == 16
    assert sv.saturation_rps == pytest.approx(16 / (rep.summary.dense.latency_us * 1e-6), rel=1e-5)
    assert "the headline's batch 16 is the serving batch limit" in sv.note and "--max-batch 16" in sv.note
    one = build_report(load_workload(src, {"batch": 1, "seq": 64}), hw, "2:4", hw_source=str(A100),
                       workload_source=src).serving
    assert one.config.max_batch == 8 and one.config.headline_batch == 1
    assert "the report's default limit, since the headline runs batch 1" in one.note


def test_skipped_serving_section_says_why_in_the_report_and_on_the_terminal(tmp_path: Path) -> None:
    hw = load_hardware(A100)
    rep = build_report(load_workload(WL / "bert-base-gemms.yaml", {"batch": 2, "seq": 64}), hw, "2:4")
    assert rep.serving.status == "skipped"
    why = "Serving section skipped: serving needs the workload file"
    assert why in render_markdown(rep)
    assert any(line.startswith(why) for line in summary_lines(rep))


def test_llm_that_does_not_fit_skips_serving_with_the_reason_on_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefill = _llm_pair(tmp_path)
    code, out, _ = cli(capsys, "report", "--hw", A100, "--hw-set", "dram.capacity_bytes=1000000", "--workload",
                       prefill, "--sparsity", "2:4", "-o", tmp_path / "r")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("Serving section skipped:"))
    assert "no deployment leaves room for a KV cache" in line  # and which: both, with their figures
    assert "dense does not fit (weights 12.58 MB, device 1.00 MB x memory_utilization 0.9)" in line
    assert "2:4 does not fit (weights " in line
    md = (tmp_path / "r" / "report.md").read_text()
    assert line in md


# a device of 12 MB (10.8 MB usable): the tiny pair's dense weights (12.58 MB) leave no room for a KV cache, its
# 2:4 weights (half the values plus metadata) do
SMALL_DEVICE = ["dram.capacity_bytes=12000000"]


def test_serve_shows_the_deployment_that_does_not_fit_and_serves_the_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: serve refused Mixtral 2:4 on a100-like (52.66 GB of weights, which fit) because the dense side
    (93.4 GB) did not, with the dense figure alone in the error. The side that does not fit is now shown, with its
    weights and the device, and the other is served, as decide does."""
    prefill = _llm_pair(tmp_path)
    argv = ["serve", "--hw", A100, "--hw-set", SMALL_DEVICE[0], "--workload", prefill, "--rate", "50",
            "--duration", "1", "--sparsity", "2:4"]
    code, out, _ = cli(capsys, *argv)
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["dense", "2:4"]
    assert lines[2].split()[:6] == ["ttft", "p50", "(ms)", "does", "not", "fit"]
    assert ("NOT SERVED: dense does not fit (weights 12.58 MB, device 12.00 MB x memory_utilization 0.9): its "
            "weights leave no room for a KV cache on one a100-like device; 2:4 served alone") in lines
    code, out, _ = cli(capsys, *argv, "--format", "json")
    data = json.loads(out)
    assert data["sparsities"] == ["dense", "2:4"] and list(data["results"]) == ["2:4"]
    assert data["does_not_fit"] == {"dense": {
        "weights_deployed_bytes": 12_582_912, "dram_capacity_bytes": 12_000_000, "memory_utilization": 0.9,
        "message": "does not fit (weights 12.58 MB, device 12.00 MB x memory_utilization 0.9)"}}
    assert data["results"]["2:4"]["measured"] > 0
    # neither fits: one line naming both, with their figures
    code, _, err = cli(capsys, *argv[:4], "dram.capacity_bytes=1000000", *argv[5:])
    assert code == 2
    line = one_line_error(err)
    assert "a100-like: no deployment leaves room for a KV cache: dense does not fit (weights 12.58 MB, " in line
    assert "; 2:4 does not fit (weights " in line


def test_report_serves_the_deployment_that_fits_as_serve_does(tmp_path: Path, few_requests: int) -> None:
    """The report's serving section skipped the whole section when the dense side did not fit (with the dense
    error alone). It now serves the sparse side, at shares of its capacity, and names the dense side's figures."""
    prefill = _llm_pair(tmp_path)
    hw = load_hardware(A100, SMALL_DEVICE)
    rep = build_report(load_workload(prefill), hw, "2:4", hw_source=str(A100), workload_source=str(prefill))
    sv = rep.serving
    assert sv.status == "ok" and sv.labels == ("2:4",) and list(sv.does_not_fit) == ["dense"]
    assert sv.saturation_rps == sv.capacity_rps["2:4"]
    assert sv.rows[0].by_label["2:4"].offered_over_capacity == pytest.approx(0.5, rel=1e-4)
    assert sv.note.startswith("dense does not fit (weights 12.58 MB, device 12.00 MB x memory_utilization 0.9): "
                              "its weights leave no room for a KV cache on one a100-like device, so it is not "
                              "served and the loads are shares of 2:4's capacity.")
    assert sv.note in render_markdown(rep)
    line = next(x for x in summary_lines(rep) if x.startswith("serving"))
    assert line.endswith("; NOT SERVED: dense does not fit (weights 12.58 MB, device 12.00 MB x memory_utilization "
                         "0.9)")
    assert rep.to_dict()["serving"]["does_not_fit"]["dense"]["weights_deployed_bytes"] == 12_582_912
