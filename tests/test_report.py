"""The sparsity deployment report: offline HTML, schedule curve, counterfactual directions, guardrail, determinism."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import HW, ROOT, WL

from accelsim import AccelsimError, load_hardware, load_workload, run
from accelsim.analysis.deployment import build_report
from accelsim.analysis.deployment_fallback import FallbackImpact, ReasonImpact, fallback_impact
from accelsim.analysis.deployment_quality import SYNTHETIC_LABEL as ANALYSIS_SYNTHETIC_LABEL
from accelsim.cli.analysis import report_command, write_report
from accelsim.hardware.model import hardware_from_dict
from accelsim.report.deploy import HEADER_BEGIN, HEADER_END, SYNTHETIC_LABEL, group_name, strip_header
from accelsim.workloads.model import workload_from_dict

A100 = load_hardware(HW / "a100-like.yaml")
STRICT = ROOT / "examples" / "workloads" / "bert-base-2to4-strict.yaml"
QUALITY = ROOT / "examples" / "workloads" / "bert-base-2to4-quality.yaml"
SMALL_BERT = {"batch": 2, "seq": 64}
_CACHE: dict[str, tuple] = {}


def _report(name: str) -> tuple:
    """(model, hw, report) built once per session."""
    if name not in _CACHE:
        if name == "bert":
            model = load_workload(WL / "bert-base.yaml", SMALL_BERT)
            rep = build_report(model, A100, "2:4", command=["accelsim", "report"], hw_source=str(HW / "a100-like.yaml"),
                               workload_source=str(WL / "bert-base.yaml"))
        elif name == "bert-fastest":
            model = load_workload(WL / "bert-base.yaml", SMALL_BERT)
            rep = build_report(model, A100, "2:4", policy="fastest")
        elif name == "mobilenet":
            model = load_workload(WL / "mobilenetv2.yaml")
            rep = build_report(model, A100, "2:4", patterns=["2:4", "1:4", "4:8"])
        elif name == "strict":
            model = load_workload(STRICT, SMALL_BERT)
            rep = build_report(model, A100, "2:4", workload_source=str(STRICT))
        else:  # pragma: no cover
            raise KeyError(name)
        _CACHE[name] = (model, A100, rep)
    return _CACHE[name]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("bert", "strict"):
        d = tmp_path_factory.mktemp(name)
        write_report(_report(name)[2], d)
        out[name] = d
    return out


# ------------------------------------------------------------------------------------------- offline HTML

def test_html_opens_offline(written: dict[str, Path]) -> None:
    for d in written.values():
        text = (d / "report.html").read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text
        assert not re.search(r"(?i)<(script|link|iframe|object|embed)\b", text)
        assert "url(" not in text and "@import" not in text
        srcs = re.findall(r"""<img[^>]*\bsrc=['"]([^'"]*)['"]""", text)
        assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
        hrefs = re.findall(r"""\bhref=['"]([^'"]*)['"]""", text)
        assert all(h.startswith("#") for h in hrefs)
        assert text.lstrip().lower().startswith("<!doctype html>") and text.rstrip().endswith("</html>")


def test_html_defuses_urls_in_user_text(tmp_path: Path) -> None:
    model = workload_from_dict({
        "name": "g", "dtype": "fp16",
        "quality": {"metric": "acc", "dense": 80.0, "patterns": {"2:4": 79.5}, "max_drop": 1.0,
                    "source": "see https://example.org/run and http://x.y"},
        "layers": [{"name": "g", "op": "gemm", "m": 1024, "n": 1024, "k": 1024}]})
    rep = build_report(model, A100, "2:4")
    write_report(rep, tmp_path)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and "example.org/run" in html
    assert rep.guardrail.status == "ok"


def test_files_written_and_listed(written: dict[str, Path]) -> None:
    names = {p.name for p in written["bert"].iterdir()}
    assert {"report.md", "report.html", "report.json", "pruning_schedule.png", "reality_check.png"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    data = json.loads((written["bert"] / "report.json").read_text())
    assert set(data["header"]) >= {"accelsim_version", "git_commit", "python", "numpy", "numba", "host_cpu",
                                   "command", "inputs", "date_utc"}
    assert data["header"]["inputs"]["hardware"]["config_hash"] == A100.config_hash()


# ------------------------------------------------------------------------------------------- schedule

@pytest.mark.parametrize("name", ["bert", "bert-fastest", "mobilenet"])
def test_schedule_ends_at_run_speedup(name: str) -> None:
    model, hw, rep = _report(name)
    res = run(model, hw, "2:4", policy=rep.subject.policy)
    expected = res.dense_total_cycles / res.total_cycles
    sched = rep.pruning_schedule
    assert sched.curve[0] == 1.0
    assert abs(sched.curve[-1] - expected) <= 1e-12 * expected
    assert abs(rep.summary.speedup - expected) <= 1e-12 * expected
    saved = [r.saved_cycles for r in sched.rows]
    assert saved == sorted(saved, reverse=True)
    assert len(saved) == sum(1 for lay in res.layers if lay.path == "sparse")


def test_schedule_flattening_point() -> None:
    rep = _report("bert")[2]
    sched = rep.pruning_schedule
    if sched.final_speedup > 1.0:
        j = sched.layers_to_flatten
        gain = sched.final_speedup - 1.0
        assert sched.curve[j] - 1.0 >= 0.9 * gain - 1e-12
        assert all(s - 1.0 < 0.9 * gain for s in sched.curve[:j])
    else:
        assert sched.layers_to_flatten is None


# ------------------------------------------------------------------------------------------- counterfactuals

def _reasons(impact: FallbackImpact) -> dict[str, ReasonImpact]:
    return {r.reason: r for r in impact.reasons}


def test_counterfactual_bert_attention_is_reported_and_explained() -> None:
    # BERT's attention matmuls have k = 64 (QK^T) or n = 64 (AV): with the library's 128x128 sparse tile
    # they would not gain, and the report must say so instead of promising a speedup
    model = load_workload(WL / "bert-base.yaml", {"batch": 16, "seq": 512})
    res = run(model, A100, "2:4")
    r = _reasons(fallback_impact(model, A100, res, "sparse-if-supported"))["activation_operands"]
    assert r.count == 24
    moved = r.speedup_if_removed - r.speedup_now
    assert r.direction == ("up" if moved > 0 else "down")
    if r.direction == "down":
        assert not r.as_expected


def test_counterfactual_every_real_reason_up_on_large_ops() -> None:
    def model(dtype: str = "fp16") -> object:
        return workload_from_dict({"name": "cf", "dtype": dtype, "layers": [
            {"name": "big", "op": "gemm", "m": 4096, "n": 4096, "k": 4096},
            {"name": "odd_rows", "op": "gemm", "m": 4100, "n": 4096, "k": 4096},
            {"name": "attn", "op": "matmul", "m": 4096, "n": 4096, "k": 4096, "batch": 2},
            {"name": "grouped", "op": "conv2d", "ifmap": [56, 56], "kernel": [3, 3], "channels": 1024,
             "filters": 1024, "padding": 1, "groups": 2, "batch": 16}]})

    d = copy.deepcopy(A100.to_dict())
    d["core"]["sparse"] = None
    no_sparse = hardware_from_dict(d)
    seen = set()
    for wl, hw, pattern in [(model(), A100, "2:4"), (model(), A100, "4:8"), (model("tf32"), A100, "2:4"),
                            (model(), no_sparse, "2:4")]:
        res = run(wl, hw, pattern)
        for reason, r in _reasons(fallback_impact(wl, hw, res, "sparse-if-supported")).items():
            assert r.expected == "up" and r.direction == "up", (pattern, reason, r.change)
            seen.add(reason)
    assert seen == {"activation_operands", "op_no_sparse_kernel", "shape_below_minimum", "pattern_unsupported",
                    "dtype_unsupported", "no_sparse_support"}


def test_counterfactual_slower_than_dense_goes_down() -> None:
    rep = _report("bert-fastest")[2]
    r = _reasons(rep.fallback_impact)["slower_than_dense"]
    assert r.expected == "down" and r.direction == "down" and r.as_expected
    assert r.speedup_if_removed < r.speedup_now
    assert r.mode == "forced sparse"
    # under 'fastest' the real reasons keep the faster kernel: never below the run's speedup
    for x in rep.fallback_impact.reasons:
        if x.reason != "slower_than_dense":
            assert x.speedup_if_removed >= x.speedup_now


def test_counterfactual_mobilenet_reported_with_affected_layers() -> None:
    # On a100-like most of these small ops are slower sparse than dense (lower sparse efficiency on a few
    # CTAs, 64-row minimum CTA tile): removing the reason would not help, and the report must say so.
    _, _, rep = _report("mobilenet")
    reasons = _reasons(rep.fallback_impact)
    assert set(reasons) == {"op_no_sparse_kernel", "shape_below_minimum"}
    assert len(reasons["op_no_sparse_kernel"].layers) == 17
    assert "classifier" in reasons["shape_below_minimum"].layers
    flagged = {c.reason for c in rep.contradictions if c.kind == "fallback_fix_would_not_help"}
    for name, r in reasons.items():
        assert r.speedup_if_removed_best >= r.speedup_now
        if r.direction != "up":
            assert name in flagged
            # the layers that would run faster sparse gain the model under 1 % (so the fix would not help)
            assert r.speedup_if_removed_best - r.speedup_now < 0.01 * r.speedup_now or r.direction == "none"


# ------------------------------------------------------------------------------------------- guardrail

def _first_lines(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[:n])


def test_guardrail_breach_flagged_at_the_top(written: dict[str, Path]) -> None:
    rep = _report("strict")[2]
    g = rep.guardrail
    assert g.status == "breach" and g.threshold == 0.1 and g.drop == pytest.approx(0.44)
    assert g.threshold_source == "workload quality.max_drop"
    md = (written["strict"] / "report.md").read_text(encoding="utf-8")
    html = (written["strict"] / "report.html").read_text(encoding="utf-8")
    assert "GUARDRAIL: BREACH" in _first_lines(md, 3)
    assert "GUARDRAIL: BREACH" in _first_lines(html, 8)
    assert "[BREACH]" in html.split("</title>")[0]
    data = json.loads((written["strict"] / "report.json").read_text())
    assert data["guardrail"]["status"] == "breach"
    assert list(data)[:3] == ["header", "schema_version", "subject"] and list(data)[3] == "guardrail"


def test_guardrail_threshold_argument_wins_and_missing_states() -> None:
    model = load_workload(STRICT, SMALL_BERT)
    tiny = workload_from_dict({"name": "t", "dtype": "fp16", "quality": model.quality.model_dump(),
                               "layers": [{"name": "g", "op": "gemm", "m": 512, "n": 512, "k": 512}]})
    assert build_report(tiny, A100, "2:4", quality_threshold=0.5).guardrail.status == "ok"
    assert build_report(tiny, A100, "2:4", quality_threshold=0.25).guardrail.status == "breach"
    for bad in (math.inf, 1e309, math.nan, -1.0):  # inf used to pass, simulate everything, then fail writing JSON
        with pytest.raises(AccelsimError, match="finite number >= 0"):
            build_report(tiny, A100, "2:4", quality_threshold=bad)
    g = build_report(tiny, A100, "1:4").guardrail  # no figure for 1:4
    assert g.status == "missing"
    rep = _report("bert")[2]  # no quality block at all
    assert rep.guardrail.status == "missing"
    assert any(c.kind == "quality_figures_missing" for c in rep.contradictions)


def test_quality_example_is_ok() -> None:
    model = load_workload(QUALITY, SMALL_BERT)
    q = model.quality
    assert q is not None and q.delta("2:4") == pytest.approx(-0.44) and q.max_drop == 1.0


# ------------------------------------------------------------------------------------------- determinism

def test_everything_but_the_header_is_deterministic(tmp_path: Path) -> None:
    model = load_workload(WL / "mobilenetv2.yaml")
    a = build_report(model, A100, "2:4", command=["first"])
    b = build_report(model, A100, "2:4", command=["second", "run"])
    assert a.header.command != b.header.command
    body = {k: v for k, v in a.to_dict().items() if k != "header"}
    assert json.dumps(body) == json.dumps({k: v for k, v in b.to_dict().items() if k != "header"})
    write_report(a, tmp_path / "a")
    write_report(b, tmp_path / "b")
    for name in ("report.md", "report.html"):
        ta = (tmp_path / "a" / name).read_text(encoding="utf-8")
        tb = (tmp_path / "b" / name).read_text(encoding="utf-8")
        assert ta != tb and HEADER_BEGIN in ta and HEADER_END in ta
        assert strip_header(ta) == strip_header(tb)
    for name in ("pruning_schedule.png", "reality_check.png", "reality_check.svg"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    ja = json.loads((tmp_path / "a" / "report.json").read_text())
    jb = json.loads((tmp_path / "b" / "report.json").read_text())
    ja.pop("header")
    jb.pop("header")
    assert ja == jb


# ------------------------------------------------------------------------------------------- proxy / weights

def _gemm_model(layers: list[dict]) -> object:
    return workload_from_dict({"name": "w", "dtype": "fp16", "layers": layers})


def test_weights_shape_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    model = _gemm_model([{"name": "fc1", "op": "gemm", "m": 256, "n": 256, "k": 512},
                         {"name": "fc2", "op": "gemm", "m": 128, "n": 256, "k": 256}])
    path = tmp_path / "w.npz"
    np.savez(path, fc1=np.zeros((512, 256)), fc2=np.zeros((128, 256)))
    with pytest.raises(AccelsimError) as err:
        build_report(model, A100, "2:4", weights=path)
    text = str(err.value)
    assert "fc1" in text and "(512, 256)" in text and "256 x 512" in text
    npy = tmp_path / "one.npy"
    np.save(npy, np.zeros((256, 512)))
    with pytest.raises(AccelsimError, match="2 weight layers"):
        build_report(model, A100, "2:4", weights=npy)
    with pytest.raises(AccelsimError, match="not found"):
        build_report(model, A100, "2:4", weights=tmp_path / "missing.npz")


def test_user_weights_and_grouped_conv_shapes(tmp_path: Path) -> None:
    model = _gemm_model([{"name": "fc1", "op": "gemm", "m": 256, "n": 256, "k": 512},
                         {"name": "fc2", "op": "gemm", "m": 128, "n": 256, "k": 256}])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512))
    a[:, 1::2] *= 1e-3  # already nearly 2:4: pruning removes almost nothing
    np.savez(tmp_path / "w.npz", fc1=a, extra=np.zeros(3))
    rep = build_report(model, A100, "2:4", weights=tmp_path / "w.npz")
    proxy = rep.quality.proxy
    by = {x.name: x for x in proxy.layers}
    assert by["fc1"].weights == "user weights" and by["fc1"].relative_error < 0.01
    assert by["fc2"].weights == SYNTHETIC_LABEL and by["fc2"].relative_error > 0.2
    assert proxy.unused_arrays == ("extra",) and "user weights" in proxy.label
    # a single-layer workload takes a .npy; grouped convs: filters x (k / groups), or PyTorch's 4-D layout
    conv = _gemm_model([{"name": "c", "op": "conv2d", "ifmap": [16, 16], "kernel": [3, 3], "channels": 64,
                         "filters": 128, "padding": 1, "batch": 64}])
    np.save(tmp_path / "c.npy", rng.standard_normal((128, 64, 3, 3)))
    rep = build_report(conv, A100, "2:4", weights=tmp_path / "c.npy")
    assert rep.quality.proxy.layers[0].weights == "user weights"


@pytest.mark.parametrize(("sparsity", "rule"), [
    ("2:4", "2:4: the 2 largest |values| of every 4 along k"),
    ("unstructured:50%", "unstructured:50%: the largest |values| over the whole of A kept (no structure)"),
    ("channel:50%", "channel:50%: the rows (output channels) of smallest L2 norm zeroed, whole rows (not along k)"),
    ("64:2:8", "64:2:8: in each 64-row block and group of 8 along k, the 4 columns of largest L2 norm, then each "
               "row's 2 largest |values| among them")])
def test_the_proxy_method_names_the_format_it_pruned(sparsity: str, rule: str) -> None:
    """Audit: the proxy's method said "magnitude N:M pruning along k" for unstructured, channel and 64:2:8 runs
    too. It names the rule of the format each op was pruned to."""
    model = _gemm_model([{"name": "fc1", "op": "gemm", "m": 256, "n": 256, "k": 512}])
    proxy = build_report(model, A100, sparsity).quality.proxy
    assert proxy.layers and {x.pattern for x in proxy.layers} == {sparsity}
    assert f"magnitude pruning of A to the format each op runs ({rule}), per op that runs sparse" in proxy.method
    assert "N:M" not in proxy.method  # no family named but the one run


def test_synthetic_weights_labelled_everywhere(written: dict[str, Path]) -> None:
    rep = _report("bert")[2]
    proxy = rep.quality.proxy
    assert proxy.label == SYNTHETIC_LABEL and proxy.layers
    assert all(x.weights == SYNTHETIC_LABEL for x in proxy.layers)
    assert proxy.layers[0].rows_sampled <= 256 and proxy.layers[0].b_columns <= 64
    for name in ("report.md", "report.html"):
        text = (written["bert"] / name).read_text(encoding="utf-8")
        section = text[text.index("Numeric proxy"):]
        assert section.count(SYNTHETIC_LABEL) >= 3


# ------------------------------------------------------------------------------------------- contents

def test_matrix_across_patterns() -> None:
    rep = _report("mobilenet")[2]
    pats = {p.pattern: p for p in rep.matrix.patterns}
    assert set(pats) == {"2:4", "1:4", "4:8"}
    assert pats["1:4"].executed_as == ("2:4",)
    assert pats["4:8"].sparse_ops == 0
    rows = [r for r in rep.matrix.rows if r.pattern == "4:8" and r.op_type == "conv2d"]
    assert rows and rows[0].fallback == {"pattern_unsupported": rows[0].layers}
    dw = [r for r in rep.matrix.rows if r.pattern == "2:4" and r.op_type == "conv2d depthwise"][0]
    assert dw.fallback == {"op_no_sparse_kernel": 17}
    for p in pats:
        cells = [r for r in rep.matrix.rows if r.pattern == p]
        assert all(c.sparse + c.padded + sum(c.fallback.values()) == c.layers for c in cells)


def test_summary_and_contradictions() -> None:
    rep = _report("bert")[2]
    s = rep.summary
    assert s.dense.cycles > 0 and s.sparse.cycles > 0
    assert s.metadata.dram_bytes > 0
    rungs = {r.rung: r.sparse_cycles for r in rep.reality_check.rungs}
    assert s.metadata.cycles == rungs["metadata"] - rungs["data_movement"]
    assert s.energy is not None and s.energy.perf_per_watt_vs_dense > 0
    assert 0 < s.fallback.share_of_time < 1
    kinds = {c.kind for c in rep.contradictions}
    slower = [r for r in rep.layers if r.path == "sparse" and r.cycles > r.dense_cycles]
    assert ("sparse_slower_than_dense" in kinds) == bool(slower)
    assert ("model_slower_than_dense" in kinds) == (s.speedup < 1.0)
    sens = rep.sensitivity
    assert len(sens.runs) == 10  # 5 calibrated fields x (-10 %, +10 %)
    assert sens.range[0] <= sens.speedup <= sens.range[1]
    if sens.crosses_one or sens.wider_than_gain:
        assert "speedup_within_calibration_sensitivity" in kinds


def test_report_command_and_summary_lines(tmp_path: Path) -> None:
    paths, lines = report_command(str(HW / "a100-like.yaml"), str(STRICT), str(tmp_path / "r"), "2:4",
                                  ["batch=1", "seq=32"], policy="sparse-if-supported")
    assert lines[0].startswith("QUALITY GUARDRAIL: BREACH")
    assert {p.name for p in paths} >= {"report.md", "report.html", "report.json"}
    header = json.loads((tmp_path / "r" / "report.json").read_text())["header"]
    assert "--set batch=1" in header["command"] and header["inputs"]["workload"]["file_sha256"]
    with pytest.raises(AccelsimError, match="needs a pattern"):
        report_command(str(HW / "a100-like.yaml"), str(WL / "mobilenetv2.yaml"), str(tmp_path / "d"), "dense")


def test_hw_set_overrides_are_named_in_the_title_subject_and_run_table(tmp_path: Path, capsys) -> None:
    """A report on a changed config was titled as if it were the shipped a100-like (the override only in the
    header's command line); so was run's table."""
    from conftest import cli

    from accelsim.analysis.reality import RealityCheck

    gemms = WL / "bert-base-gemms.yaml"
    report_command(str(HW / "a100-like.yaml"), str(gemms), str(tmp_path / "r"), "2:4", [],
                   hw_set=["dram.bandwidth_gb_s=100"])
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["subject"]["hw_set"] == ["dram.bandwidth_gb_s=100"]
    assert " on a100-like (--hw-set dram.bandwidth_gb_s=100), 2:4" in data["subject"]["title"]
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert data["subject"]["title"] in md.splitlines()[0] or data["subject"]["title"] in md
    report_command(str(HW / "a100-like.yaml"), str(gemms), str(tmp_path / "s"), "2:4", [])
    assert "hw_set" not in json.loads((tmp_path / "s" / "report.json").read_text())["subject"]
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", gemms, "--sparsity", "2:4",
                       "--hw-set", "dram.bandwidth_gb_s=100")
    assert code == 0 and "on a100-like (1.41 GHz, --hw-set dram.bandwidth_gb_s=100), sparsity: 2:4" in out
    code, out, _ = cli(capsys, "serve", "--hw", HW / "a100-like.yaml", "--workload", gemms, "--rate", "100",
                       "--duration", "2", "--hw-set", "dram.bandwidth_gb_s=100")
    assert code == 0 and out.startswith("SERVING  bert-base-gemms on a100-like (--hw-set dram.bandwidth_gb_s=100), ")
    code, out, _ = cli(capsys, "serve", "--hw", HW / "a100-like.yaml", "--workload", gemms, "--rate", "100",
                       "--duration", "2", "--hw-set", "dram.bandwidth_gb_s=100", "--format", "json")
    assert code == 0 and json.loads(out)["hw_set"] == ["dram.bandwidth_gb_s=100"]  # serve.json keeps them too
    rc = data["reality_check"]
    assert rc["hw_set"] == ["dram.bandwidth_gb_s=100"]
    code, out, _ = cli(capsys, "reality-check", "--hw", HW / "a100-like.yaml", "--workload", gemms, "--sparsity",
                       "2:4", "--hw-set", "dram.bandwidth_gb_s=100", "-o", tmp_path / "rc")
    assert code == 0 and "fp16 on a100-like (--hw-set dram.bandwidth_gb_s=100), 2:4" in out.splitlines()[0]
    back = json.loads((tmp_path / "rc" / "reality_check.json").read_text())
    assert RealityCheck.from_dict(back).hw_set == ("dram.bandwidth_gb_s=100",)


def test_group_names() -> None:
    assert group_name(["encoder.0.q", "encoder.1.q", "encoder.2.q"]) == "encoder.{0..2}.q"
    assert group_name(["a.0.q", "a.1.k"]) == "a.0.q, a.1.k"  # not a.{0..1}.{q,k}: a.0.k is not in the set
    assert group_name(["x"]) == "x"


def test_the_analysis_is_frozen_and_its_dict_is_the_json(written: dict[str, Path]) -> None:
    rep = _report("bert")[2]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.summary.speedup = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        rep.hardware["name"] = "x"  # type: ignore[index]
    data = json.loads((written["bert"] / "report.json").read_text())
    body = rep.to_dict()
    assert list(body) == list(data)
    body.pop("header"), data.pop("header")
    assert body == data
    assert SYNTHETIC_LABEL == ANALYSIS_SYNTHETIC_LABEL  # the renderer's label is the analysis's

    def mutable(value: object, where: str) -> list[str]:  # no dict or list anywhere in the record tree
        if isinstance(value, dict | list | set):
            return [where]
        if dataclasses.is_dataclass(value):
            return [w for f in dataclasses.fields(value) for w in mutable(getattr(value, f.name), f"{where}.{f.name}")]
        if isinstance(value, tuple):
            return [w for i, v in enumerate(value) for w in mutable(v, f"{where}[{i}]")]
        if hasattr(value, "items"):
            return [w for k, v in value.items() for w in mutable(v, f"{where}[{k!r}]")]
        return []

    assert mutable(rep, "report") == []
