"""A workload whose own plan mixes patterns (no --sparsity): the reality ladder and the deployment report name the
plan, start from its own nominal and offer each layer a format at its own level (audit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HW, cli

from accelsim import load_hardware, run
from accelsim.analysis.deployment import build_report
from accelsim.analysis.deployment_quality import quality_guard
from accelsim.analysis.reality import PLAN_NOMINAL_LABEL, RUNGS, RealityCheck, reality_check
from accelsim.formats import parse_format
from accelsim.report.deploy import render_markdown
from accelsim.report.reality_chart import TITLE_CHARS, render_reality_check, subtitle, text_bars, why_lines
from accelsim.workloads.model import Workload, workload_from_dict

A100 = load_hardware(HW / "a100-like.yaml")
TPU = load_hardware(HW / "tpu-like.yaml")

# the audit's plan: 2:4 model-wide, g1 kept dense, g2 at unstructured 75 %, and a softmax
PLAN_YAML = """\
name: plan
dtype: fp16
sparsity: "2:4"
params: {batch: 4}
layers:
  - {name: g0, op: gemm, m: 2048, n: "batch * 128", k: 2048}
  - {name: g1, op: gemm, m: 2048, n: "batch * 128", k: 2048, sparsity: dense}
  - {name: g2, op: gemm, m: 4096, n: "batch * 128", k: 1024, sparsity: "unstructured:75%"}
  - {name: sm, op: softmax, elements: "batch * 128 * 2048"}
"""
PLAN_TEXT = "2:4 on g0; unstructured:75% on g2; g1 dense"
QUALITY = {"metric": "accuracy", "higher_is_better": True, "dense": 0.80, "patterns": {"2:4": 0.79}, "max_drop": 0.05}


def _model(layers: list[dict], sparsity: str | None = "2:4", name: str = "plan", **extra: object) -> Workload:
    return workload_from_dict({"name": name, "dtype": "fp16", "sparsity": sparsity, "layers": layers, **extra})


def _plan(m: int = 2048, n: int = 512, **extra: object) -> Workload:
    return _model([{"name": "g0", "op": "gemm", "m": m, "n": n, "k": m},
                   {"name": "g1", "op": "gemm", "m": m, "n": n, "k": m, "sparsity": "dense"},
                   {"name": "g2", "op": "gemm", "m": 2 * m, "n": n, "k": m // 2, "sparsity": "unstructured:75%"},
                   {"name": "sm", "op": "softmax", "elements": n * m}], **extra)


def _dense(model: Workload, hw: object) -> dict[str, int]:
    return {lay.name: lay.cycles["total"] for lay in run(model, hw, "dense").layers}


@pytest.fixture(scope="module")
def plan_rc() -> tuple[Workload, RealityCheck]:
    model = _plan()
    return model, reality_check(model, A100, None)


# ---------------------------------------------------------------------------------------------- the ladder

def test_a_mixed_plans_nominal_is_its_own_and_the_executed_rung_invents_no_gain(plan_rc) -> None:
    """Audit: the nominal rung was 2.00x (the alphabetically first pattern) although g2 asks for 4x, and
    '+ pattern the hardware runs' then gained +0.30x though every layer ran what it asked for."""
    model, rc = plan_rc
    d = _dense(model, A100)
    nominal = (d["g0"] + d["g2"]) / (d["g0"] / 2.0 + d["g2"] / 4.0)  # each asking op at its M/N, by dense time
    rungs = {r.rung: r for r in rc.rungs}
    assert [r.rung for r in rc.rungs] == [key for key, _ in RUNGS]
    assert rc.rungs[0].speedup == pytest.approx(nominal, rel=1e-12) and nominal == pytest.approx(2.6325, abs=1e-4)
    assert rc.bars.nominal_speedup == rc.rungs[0].speedup and rc.rungs[0].label == PLAN_NOMINAL_LABEL
    # both layers ran the pattern they asked for: the executed-pattern rung does not move
    assert rungs["executed_pattern"].sparse_cycles == rungs["nominal"].sparse_cycles
    assert rungs["executed_pattern"].change == 0.0 and rc.losses[0].kind == "none"
    # Amdahl: the two sparse ops at their ratios, g1 and the softmax at their dense time
    assert rungs["amdahl"].sparse_cycles == pytest.approx(d["g0"] / 2 + d["g2"] / 4 + d["g1"] + d["sm"], abs=1e-3)
    # the real speedup is what run gives, and the ladder telescopes to it
    real = run(model, A100, None)
    assert (rc.sparse_total_cycles, rc.dense_total_cycles) == (real.total_cycles, real.totals["dense_total_cycles"])
    assert (rc.sparse_total_cycles, rc.dense_total_cycles) == (141948, 147366)
    assert rc.rungs[-1].speedup == pytest.approx(147366 / 141948, rel=1e-12)
    assert sum(x.loss for x in rc.losses) == pytest.approx(rc.gap, rel=1e-9)
    assert rc.gap == pytest.approx(nominal - 147366 / 141948, rel=1e-12)


def test_the_executed_rung_moves_only_for_the_layer_that_ran_another_pattern() -> None:
    """tpu-like runs 1:4 as 2:4: in a plan of 2:4 on g0 and 1:4 on g2, rung 2 takes back g2's 4x -> 2x only."""
    model = _model([{"name": "g0", "op": "gemm", "m": 512, "n": 512, "k": 512},
                    {"name": "g1", "op": "gemm", "m": 512, "n": 512, "k": 512, "sparsity": "dense"},
                    {"name": "g2", "op": "gemm", "m": 1024, "n": 512, "k": 512, "sparsity": "1:4"}])
    rc = reality_check(model, TPU, None)
    d = _dense(model, TPU)
    assert rc.plan == "2:4 on g0; 1:4 on g2; g1 dense" and dict(rc.plan_executed or {}) == {"2:4": ("2:4",),
                                                                                             "1:4": ("2:4",)}
    assert rc.rungs[0].speedup == pytest.approx((d["g0"] + d["g2"]) / (d["g0"] / 2 + d["g2"] / 4), rel=1e-12)
    assert rc.rungs[1].sparse_cycles - rc.rungs[0].sparse_cycles == pytest.approx(d["g2"] / 2 - d["g2"] / 4,
                                                                                    abs=2e-3)
    text = text_bars(rc).splitlines()
    assert "note: 1:4 requested, executed as 2:4" in text  # 2:4 ran as asked: no note for it
    assert not any("2:4 requested" in line for line in text)


def test_a_uniform_plan_has_the_ladder_of_its_sparsity_flag_and_says_plan() -> None:
    """A plan asking every layer for 2:4 is the --sparsity 2:4 run, rung for rung; only its name differs (it said
    'None')."""
    layers = [{"name": "a", "op": "gemm", "m": 1024, "n": 256, "k": 1024},
              {"name": "b", "op": "gemm", "m": 512, "n": 256, "k": 1024},
              {"name": "s", "op": "softmax", "elements": 65536}]
    model = _model(layers)
    plan, flag = reality_check(model, A100, None), reality_check(model, A100, "2:4")
    assert [(r.label, r.sparse_cycles, r.speedup, r.change) for r in plan.rungs] == \
        [(r.label, r.sparse_cycles, r.speedup, r.change) for r in flag.rungs]
    assert plan.plan == "2:4" and "plan" not in flag.to_dict() and "plan_executed" not in flag.to_dict()
    assert text_bars(plan).splitlines()[0].endswith("on a100-like, workload plan (2:4)")
    assert text_bars(flag).splitlines()[0].endswith("on a100-like, 2:4")
    assert "None" not in text_bars(plan) and "note:" not in text_bars(plan)


def test_every_label_names_the_plan_and_none_says_none(plan_rc) -> None:
    """Audit: the title, terminal header and note said 'fp16 on a100-like, None' and 'None requested, executed as
    2:4, unstructured:75%'."""
    _, rc = plan_rc
    text = text_bars(rc)
    assert text.splitlines()[0] == f"SPARSE REALITY CHECK  plan, fp16 on a100-like, workload plan ({PLAN_TEXT})"
    assert "None" not in text and "requested, executed as" not in text
    assert "note: nominal 2.63x = the ops that ask for a pattern, each at its M/N (2:4 2x, unstructured:75% 4x), " \
           "by their dense time" in text.splitlines()
    fig, _ = render_reality_check(rc)
    assert fig._suptitle.get_text() == f"Sparse reality check: plan, fp16 on a100-like, workload plan ({PLAN_TEXT})"
    assert all("None" not in t.get_text() for t in fig.texts) and "None" not in subtitle(rc)
    back = RealityCheck.from_dict(json.loads(json.dumps(rc.to_dict())))
    assert back == rc and back.to_dict()["plan"] == PLAN_TEXT


def test_a_plan_too_long_for_the_title_is_named_below_it() -> None:
    names = ["encoder_attention_query_projection", "encoder_attention_output_projection", "encoder_feed_forward_up"]
    pats = ["2:4", "4:8", "unstructured:75%"]
    model = _model([{"name": nm, "op": "gemm", "m": 256, "n": 64, "k": 256, "sparsity": p}
                    for nm, p in zip(names, pats, strict=True)], sparsity=None, name="long")
    rc = reality_check(model, A100, None)
    full = "; ".join(f"{p} on {nm}" for nm, p in zip(names, pats, strict=True))
    assert rc.plan == full
    fig, _ = render_reality_check(rc)
    title = fig._suptitle.get_text()
    assert len(title) <= TITLE_CHARS and title.endswith("workload plan (named below)")
    assert why_lines(rc)[0] == f"workload plan: {full}"
    assert text_bars(rc).splitlines()[0].endswith(f"workload plan ({full})")  # the terminal has room


def test_reality_check_cli_on_the_plan_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wl = tmp_path / "plan.yaml"
    wl.write_text(PLAN_YAML)
    code, out, _ = cli(capsys, "reality-check", "--hw", HW / "a100-like.yaml", "--workload", wl)
    assert code == 0 and "None" not in out
    lines = out.splitlines()
    assert lines[0] == f"SPARSE REALITY CHECK  plan (batch 4), fp16 on a100-like, workload plan ({PLAN_TEXT})"
    assert lines[1].endswith("2.63x") and lines[2].endswith("1.04x")
    assert "  + pattern the hardware runs        2.63x  (\u00b10.00x, 0% of the gap)" in lines


# ---------------------------------------------------------------------------------------------- the report

@pytest.fixture(scope="module")
def plan_report() -> tuple[Workload, object]:
    model = _plan(m=512, n=128, quality=QUALITY)  # a figure measured at 2:4 only
    return model, build_report(model, A100, None)


def test_the_report_labels_a_mixed_plan_by_its_patterns(plan_report) -> None:
    """Audit: the title said 'workload plan (2:4)' (the top-level pattern) for a plan that also runs
    unstructured:75%."""
    _, rep = plan_report
    assert rep.subject.label == f"workload plan ({PLAN_TEXT})" and rep.subject.pattern is None
    md = render_markdown(rep)
    assert md.startswith(f"# Sparsity deployment report: plan on a100-like, "
                                                 f"workload plan ({PLAN_TEXT})\n")
    assert "None" not in md.split("## ")[0] and "workload plan (2:4)" not in md


def test_best_format_is_at_each_layers_own_level_and_none_for_a_kept_dense_layer(plan_report) -> None:
    """Audit: g2 (unstructured:75%) was offered 'channel:50%' and g1 (kept dense by the plan) 'channel:50%'."""
    model, rep = plan_report
    rows = {r.name: r for r in rep.layers}
    assert rows["g1"].best_format is None and rows["sm"].best_format is None
    d = _dense(model, A100)
    for name, density in (("g0", 0.5), ("g2", 0.25)):
        best, gain = rows[name].best_format, rows[name].best_format_speedup
        assert best is not None and gain is not None
        if best != "dense":
            fmt = parse_format(best)
            assert fmt is not None and fmt.density == pytest.approx(density)
            lay = next(x for x in run(model, A100, best).layers if x.name == name)  # that format, simulated alone
            assert gain == pytest.approx(d[name] / lay.cycles["total"], rel=1e-12)
    md = render_markdown(rep)
    g1 = next(line for line in md.splitlines() if line.startswith("| g1 |"))
    assert g1.endswith("| - (kept dense by the plan) |")


def test_a_mixed_plan_does_not_borrow_the_top_level_patterns_quality_figure(plan_report) -> None:
    """A quality figure measured at 2:4 is not the figure of a plan that also runs unstructured:75% on g2 (the
    report took the top-level pattern's)."""
    model, rep = plan_report
    assert rep.quality.status == "missing" and rep.quality.pattern is None
    assert "no quality figure for a plan that mixes patterns (the workload lists: 2:4" in rep.quality.message
    assert "| mixed plan |" in next(line for line in render_markdown(rep).splitlines() if "| accuracy |" in line)
    assert quality_guard(model, "2:4", None).status == "ok"  # the same figure holds a run at 2:4


def test_run_table_names_the_plan_it_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`accelsim run` with no --sparsity said only 'per workload plan', whatever the plan asked for."""
    wl = tmp_path / "plan.yaml"
    wl.write_text(PLAN_YAML)
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", wl)
    assert code == 0
    assert out.splitlines()[0].endswith(f"sparsity: per workload plan ({PLAN_TEXT})")
