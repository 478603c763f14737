"""The deployed-LLM workloads (issue 19): Llama-3 8B / 70B and Mixtral-8x7B as templates, grouped-query
attention, the KV cache in its own dtype, MoE expansion with a named routing assumption, and models
that do not fit one device."""

from __future__ import annotations

import json
from functools import cache

import pytest
import yaml
from conftest import HW, ROOT, WL

from accelsim.cli import main
from accelsim.errors import ConfigError
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.simulation import footprint, run
from accelsim.workloads.model import Workload, load_workload, with_dtype, workload_from_dict
from accelsim.workloads.moe import tokens_per_expert

LLM = ["llama3-8b-prefill.yaml", "llama3-8b-decode.yaml", "llama3-70b-prefill.yaml", "llama3-70b-decode.yaml",
       "mixtral-8x7b-prefill.yaml", "mixtral-8x7b-decode.yaml"]


@cache
def a100():
    return load_hardware(HW / "a100-like.yaml")


@cache
def wl(name: str, **params: int) -> Workload:
    return load_workload(WL / name, params or None)


def layer(w: Workload, name: str):
    return next(x for x in w.layers if x.name == name)


def parameters(w: Workload) -> int:
    """Weights of the lowered weight GEMMs (m x k each) plus the embedding tables."""
    kernels = lower(w, a100())
    gemms = sum(k.m * k.k for k in kernels if k.op == "gemm")
    tables = sum(x.vocab * x.dim for x in w.layers if x.op == "embedding")
    return gemms + tables


# Published sizes: HF model pages of meta-llama/Meta-Llama-3-8B (8.03B) and -70B (70.6B); Mixtral of
# Experts, arXiv:2401.04088 (46.7B total, 12.9B active per token).
@pytest.mark.parametrize(("name", "params", "published"), [
    ("llama3-8b-prefill.yaml", {}, 8.03e9), ("llama3-8b-decode.yaml", {}, 8.03e9),
    ("llama3-70b-prefill.yaml", {}, 70.6e9), ("llama3-70b-decode.yaml", {}, 70.6e9),
    ("mixtral-8x7b-prefill.yaml", {}, 46.7e9), ("mixtral-8x7b-decode.yaml", {"batch": 4}, 46.7e9),
    ("mixtral-8x7b-decode.yaml", {}, 12.9e9),  # batch 1: the two routed experts are what runs
    # Qwen2.5 Technical Report (arXiv:2412.15115), Table 1: 7.61B and 14.7B (validation/llm rows)
    ("qwen2.5-7b-prefill.yaml", {}, 7.61e9), ("qwen2.5-7b-decode.yaml", {}, 7.61e9),
    ("qwen2.5-14b-prefill.yaml", {}, 14.7e9), ("qwen2.5-14b-decode.yaml", {}, 14.7e9),
])
def test_parameter_counts_match_published(name, params, published):
    assert parameters(wl(name, **params)) == pytest.approx(published, rel=0.01)


def test_parameter_counts_by_hand():
    h, kv, inter, vocab = 4096, 1024, 14336, 128256
    assert parameters(wl("llama3-8b-prefill.yaml")) == 32 * (2 * h * h + 2 * kv * h + 3 * h * inter) + 2 * vocab * h
    h, inter = 8192, 28672
    assert parameters(wl("llama3-70b-decode.yaml")) == 80 * (2 * h * h + 2 * kv * h + 3 * h * inter) + 2 * vocab * h
    h, inter, vocab = 4096, 14336, 32000
    attn = 2 * h * h + 2 * kv * h
    assert parameters(wl("mixtral-8x7b-prefill.yaml")) == 32 * (attn + 8 * h + 8 * 3 * h * inter) + 2 * vocab * h
    assert parameters(wl("mixtral-8x7b-decode.yaml")) == 32 * (attn + 8 * h + 2 * 3 * h * inter) + 2 * vocab * h


@pytest.mark.parametrize("name", LLM)
def test_templates(name):
    w = wl(name)
    assert w.dtype == "bf16" and w.kv_dtype == "bf16"
    tokens = "seq" if "prefill" in name else "kv_len"
    assert set(w.params) == {"batch", tokens}
    big = load_workload(WL / name, {"batch": 2, tokens: 1024})
    assert big.kv_cache_elements > 2 * w.kv_cache_elements
    assert load_workload(WL / name, {"kv_dtype": "fp8"}).kv_dtype == "fp8"


@pytest.mark.parametrize(("name", "group", "heads"), [("llama3-8b", 4, 32), ("llama3-70b", 8, 64)])
def test_grouped_query_attention(name, group, heads):
    pre = wl(f"{name}-prefill.yaml", seq=256, batch=2)
    assert layer(pre, "layers.0.k_proj").gemm_shape() == (1024, 512, pre.layers[2].k)  # 8 KV heads x 128
    s = layer(pre, "layers.3.scores")
    assert (s.m, s.n, s.k, s.batch) == (group * 256, 256, 128, 2 * 8)  # query heads of a group share K
    c = layer(pre, "layers.3.context")
    assert (c.m, c.n, c.k, c.batch) == (group * 256, 128, 256, 2 * 8)
    assert s.m * s.n * s.k * s.batch == 2 * heads * 256 * 256 * 128  # the MACs of per-query-head attention
    assert layer(pre, "layers.0.softmax").elements == 2 * heads * 256 * 256
    dec = wl(f"{name}-decode.yaml", kv_len=1000, batch=3)
    s = layer(dec, "layers.0.scores")
    assert (s.m, s.n, s.k, s.batch, s.kv_cache) == (group, 1001, 128, 3 * 8, True)
    assert layer(dec, "layers.0.kv_write").elements == 2 * 3 * 1024


@pytest.mark.parametrize(("kv_dtype", "kv_bytes"), [("bf16", 2), ("fp8", 1), ("int8", 1), ("fp4", 0.5)])
def test_kv_cache_in_its_own_dtype(kv_dtype, kv_bytes):
    w = load_workload(WL / "llama3-8b-decode.yaml", {"kv_len": 2047, "batch": 4, "kv_dtype": kv_dtype})
    kernels = {k.name: k for k in lower(w, a100())}
    write = kernels["layers.0.kv_write"]
    assert write.read_bytes == 2 * 4 * 1024 * 2 and write.write_bytes == 2 * 4 * 1024 * kv_bytes
    scores = kernels["layers.0.scores"]
    assert scores.dtype == "bf16" and scores.dtype_bytes == kv_bytes  # cache bytes, bf16 MMA rate
    assert kernels["layers.0.q_proj"].dtype_bytes == 2
    fp = footprint(w, list(kernels.values()), a100())
    assert fp["kv_cache_bytes"] == 2 * 32 * 4 * 2048 * 1024 * kv_bytes


@pytest.mark.parametrize("form", ["unfused", "fused"])
def test_kv_dtype_halves_the_cache_reads(form):
    hw = load_hardware(HW / "a100-like.yaml", [f"attention.form={form}"])
    res = {kv: run(load_workload(WL / "llama3-8b-decode.yaml", {"kv_len": 4095, "batch": 8, "kv_dtype": kv}), hw)
           for kv in ("bf16", "fp8")}
    b = {kv: {r.name: r.bytes["dram"]["b"] for r in res[kv].layers} for kv in res}
    k_elems = 8 * 8 * 4096 * 128  # batch x KV heads x tokens x head dim
    read = k_elems if form == "unfused" else 2 * k_elems  # QK^T reads K; the fused kernel K and V
    assert b["bf16"]["layers.0.scores"] == pytest.approx(2 * read, rel=0.01)
    assert b["fp8"]["layers.0.scores"] == pytest.approx(read, rel=0.01)
    assert res["fp8"].workload["kv_dtype"] == "fp8"
    assert sum(r.cycles["total"] for r in res["fp8"].layers) < sum(r.cycles["total"] for r in res["bf16"].layers)


def test_set_kv_dtype_is_checked():
    with pytest.raises(ConfigError, match="kv_dtype"):
        load_workload(WL / "llama3-8b-decode.yaml", {"kv_dtype": "fp7"})
    with pytest.raises(ConfigError, match="unknown parameter.*batch, kv_dtype, kv_len"):
        load_workload(WL / "llama3-8b-decode.yaml", {"heads": 4})
    with pytest.raises(ConfigError, match="unknown parameter"):  # only where the file declares one
        load_workload(WL / "bert-base.yaml", {"kv_dtype": "fp8"})


# -- mixture of experts ----------------------------------------------------------------------

def test_uniform_routing():
    assert tokens_per_expert(512, 8, 2) == [128] * 8
    assert tokens_per_expert(1, 8, 2) == [1, 1, 0, 0, 0, 0, 0, 0]  # decode batch 1: two experts run
    assert tokens_per_expert(3, 8, 2) == [1, 1, 1, 1, 1, 1, 0, 0]
    assert tokens_per_expert(5, 4, 1) == [2, 1, 1, 1]


def test_zipf_routing():
    counts = tokens_per_expert(1000, 8, 2, "zipf", 1.0)
    shares = [1 / (e + 1) for e in range(8)]
    assert sum(counts) == 2000 and counts == sorted(counts, reverse=True)
    assert counts[0] == round(2000 * shares[0] / sum(shares))  # 735 of 2000
    assert tokens_per_expert(100, 8, 2, "zipf", 0.0) == tokens_per_expert(100, 8, 2)
    capped = tokens_per_expert(100, 4, 3, "zipf", 3.0)  # the hottest expert would get 250: capped at 100
    assert capped[0] == 100 and sum(capped) == 300 and max(capped) <= 100
    assert tokens_per_expert(10, 4, 4, "zipf", 2.0) == [10, 10, 10, 10]


def _moe_model(**moe):
    spec = {"name": "moe", "op": "moe", "tokens": 64, "hidden": 256, "intermediate": 512, "experts": 4,
            "top_k": 2, **moe}
    return workload_from_dict({"name": "t", "layers": [spec]})


def test_moe_expansion():
    w = _moe_model(routing="zipf", skew=1.0)
    counts = tokens_per_expert(64, 4, 2, "zipf", 1.0)
    names = [x.name for x in w.layers]
    assert names[:3] == ["moe.gate", "moe.routing", "moe.dispatch"] and names[-1] == "moe.combine"
    assert layer(w, "moe.gate").gemm_shape() == (4, 64, 256)
    for e, t in enumerate(counts):
        assert layer(w, f"moe.experts.{e}.w1").gemm_shape() == (512, t, 256)
        assert layer(w, f"moe.experts.{e}.w3").gemm_shape() == (512, t, 256)
        assert layer(w, f"moe.experts.{e}.w2").gemm_shape() == (256, t, 512)
        assert layer(w, f"moe.experts.{e}.act").function == "silu"
    assert layer(w, "moe.combine").inputs == 2
    assert w.summary()["moe"] == [{"layers": ["moe"], "routing": "zipf", "skew": 1.0, "tokens": 64, "experts": 4,
                                   "top_k": 2, "tokens_per_expert": counts, "experts_run": 4}]
    ungated = _moe_model(gated=False, function="gelu", tokens=1)
    assert [x.name for x in ungated.layers] == ["moe.gate", "moe.routing", "moe.dispatch", "moe.experts.0.w1",
                                                "moe.experts.0.act", "moe.experts.0.w2", "moe.experts.1.w1",
                                                "moe.experts.1.act", "moe.experts.1.w2", "moe.combine"]


@pytest.mark.parametrize(("moe", "message"), [
    ({"top_k": 5}, "top_k 5 is more than the 4 experts"),
    ({"routing": "zipf"}, "needs a skew"),
    ({"skew": 1.0}, "skew applies to routing 'zipf' only"),
    ({"routing": "hashed"}, "routing"),
    ({"experts": 0}, "experts"),
])
def test_moe_errors(moe, message):
    with pytest.raises(ConfigError, match=message):
        _moe_model(**moe)


def test_each_expert_is_its_own_kernel():
    """Mixtral decode at batch 8 with 2:4 on a100-like: expert GEMMs run sparse (n padded to the library's
    alignment), the 8-row router falls back (shape_below_minimum), attention stays dense."""
    w = wl("mixtral-8x7b-decode.yaml", batch=8)
    res = run(w, a100(), "2:4")
    by = {r.name: r for r in res.layers}
    assert w.moe is not None and w.moe[0].tokens_per_expert == [2] * 8 and len(w.moe[0].layers) == 32
    experts = [r for r in res.layers if ".experts." in r.name and r.op == "gemm"]
    assert len(experts) == 32 * 8 * 3
    assert all(r.path == "sparse" and r.reason == "n_padded" and r.shape["n"] == 2 for r in experts)
    assert by["layers.0.block_sparse_moe.gate"].reason == "shape_below_minimum"
    assert by["layers.0.scores"].reason == "activation_operands"
    assert res.workload["moe"][0]["routing"] == "uniform"


def test_skewed_decode_runs_fewer_tokens_on_cold_experts():
    data = (WL / "mixtral-8x7b-prefill.yaml").read_text().replace("routing: uniform", "routing: zipf, skew: 1.2")
    w = workload_from_dict(yaml.safe_load(data), params={"seq": 64})
    n = [layer(w, f"layers.5.block_sparse_moe.experts.{e}.w1").n for e in range(8)]
    assert sum(n) == 128 and n == sorted(n, reverse=True) and n[0] > 3 * n[7]


# -- footprint --------------------------------------------------------------------------------

def test_llama3_70b_does_not_fit_one_a100_and_says_by_how_much():
    w = wl("llama3-70b-decode.yaml")
    res = run(w, a100())
    fp = res.footprint
    cap = 80 * 2**30
    assert fp["fits"] is False and fp["dram_capacity_bytes"] == cap
    assert fp["weights_dense_bytes"] == 2 * parameters(w)  # bf16
    assert fp["over_capacity_bytes"] == fp["total_bytes"] - cap > 50e9 and fp["min_devices"] == 2
    (warning,) = [x for x in res.warnings if "footprint" in x]
    assert f"by {fp['over_capacity_bytes']:,} bytes" in warning and "at least 2 such devices" in warning
    assert res.layers and res.total_cycles > 0
    fits = run(wl("llama3-8b-decode.yaml"), a100()).footprint
    assert fits["fits"] is True and "over_capacity_bytes" not in fits


def test_a_sparse_run_says_when_its_dense_baseline_does_not_fit(capsys):
    """llama3-8b at bf16 on a 12 GiB rtx3060-like: 2:4 weights fit, dense ones do not. The sparse run's speedup is
    against that dense run, simulated as if it fit: the run warns, as the dense run itself does."""
    hw = load_hardware(HW / "rtx3060-like.yaml")
    w = with_dtype(wl("llama3-8b-decode.yaml"), "bf16")
    sparse, dense = run(w, hw, "2:4"), run(w, hw, "dense")
    assert sparse.footprint["fits"] is True and dense.footprint["fits"] is False
    over = dense.footprint["over_capacity_bytes"]
    assert sparse.footprint["dense_baseline_over_capacity_bytes"] == over
    (warning,) = [x for x in sparse.warnings if "footprint" in x]
    assert warning.startswith(f"the dense baseline's memory footprint {dense.footprint['total_bytes']:,} bytes")
    assert f"exceeds dram.capacity_bytes {hw.dram.capacity_bytes:,} by {over:,} bytes" in warning
    assert "(the speedup compares against it)" in warning
    assert "dense baseline" not in " ".join(dense.warnings)
    assert "dense_baseline_over_capacity_bytes" not in run(wl("llama3-8b-decode.yaml"), a100(), "2:4").footprint
    assert main(["run", "--hw", str(HW / "rtx3060-like.yaml"), "--workload", str(WL / "llama3-8b-decode.yaml"),
                 "--dtype", "bf16", "--sparsity", "2:4"]) == 0
    out, err = capsys.readouterr()
    assert f"fits; its dense baseline DOES NOT FIT (over by {over:,})" in out
    assert "warning: the dense baseline's memory footprint" in err


def test_idle_experts_still_take_memory():
    """Mixtral decode at batch 1 runs two experts per layer, but all eight are resident: the footprint holds
    all 46.7B parameters (93.4 GB at bf16, more than one 80 GiB a100-like), as deployed under 2:4 too."""
    w = wl("mixtral-8x7b-decode.yaml")
    fp = footprint(w, lower(w, a100()), a100())
    assert fp["weights_dense_bytes"] == 2 * parameters(wl("mixtral-8x7b-prefill.yaml"))
    assert fp["fits"] is False and fp["over_capacity_bytes"] > 7e9
    sparse_kernels = lower(w, a100(), "2:4")
    sp = footprint(w, sparse_kernels, a100())
    full = footprint(wl("mixtral-8x7b-decode.yaml", batch=8), lower(wl("mixtral-8x7b-decode.yaml", batch=8), a100(),
                                                                     "2:4"), a100())
    assert sp["weights_deployed_bytes"] == full["weights_deployed_bytes"] < sp["weights_dense_bytes"]


def test_run_text_names_the_routing(capsys):
    assert main(["run", "--hw", str(HW / "h100-like.yaml"), "--workload", str(WL / "mixtral-8x7b-decode.yaml"),
                 "--set", "batch=3"]) == 0
    out = capsys.readouterr().out
    assert ("moe routing: uniform, top-2 of 8 experts over 3 tokens: tokens per expert [1, 1, 1, 1, 1, 1, 0, 0] "
            "(32 moe layer(s), 6 experts run in each)") in out


def test_sweep_and_reality_check_run_on_the_llm_workloads(tmp_path, monkeypatch):
    """Issue 19 must-show 5: a sweep over formats on Llama-3-8B decode gives the same totals as `run`, and the
    reality-check ladder ends at the run's real speedup on a prefill."""
    from accelsim.analysis.reality import reality_check
    from accelsim.sweep import load_results, run_sweep, spec_from_dict

    monkeypatch.chdir(ROOT)
    spec = spec_from_dict({"name": "llm", "hardware": "hwconfigs/a100-like.yaml",
                           "workloads": "workloads/llama3-8b-decode.yaml", "set": {"kv_len": [256]},
                           "sparsity": ["2:4", "64:2:8", "unstructured:75%"]}, "python", base_dir=ROOT)
    run_sweep(spec, tmp_path / "out", workers=1)
    table = load_results(tmp_path / "out")
    assert sorted(rec["sparsity"] for rec in table.records()) == ["2:4", "64:2:8", "unstructured:75%"]
    hw = load_hardware(HW / "a100-like.yaml")
    for rec in table.records():
        direct = run(wl("llama3-8b-decode.yaml", kv_len=256), hw, rec["sparsity"])
        assert rec["cycles"] == direct.total_cycles, rec["sparsity"]
    prefill = wl("llama3-8b-prefill.yaml", seq=128)
    check = reality_check(prefill, hw, "2:4")
    real = run(prefill, hw, "2:4")
    assert check.rungs[-1].speedup == pytest.approx(real.dense_total_cycles / real.total_cycles)


MOE_SMALL = """\
name: moe-small
dtype: fp16
params: {batch: 2, seq: 16}
layers:
  - {name: moe, op: moe, tokens: "batch * seq", hidden: 128, intermediate: 256, experts: 4, top_k: 2, routing: zipf,
     skew: 1.0}
"""
MOE_SMALL_LINE = ("moe routing: zipf skew 1, top-2 of 4 experts over 32 tokens: tokens per expert [31, 15, 10, 8] "
                  "(1 moe layer(s), 4 experts run in each)")


@pytest.fixture
def moe_small(tmp_path):
    path = tmp_path / "moe-small.yaml"
    path.write_text(MOE_SMALL)
    return path


def _routing(tmp_path) -> list[dict]:
    return load_workload(tmp_path / "moe-small.yaml").summary()["moe"]


def test_patterns_names_the_routing(moe_small, tmp_path, capsys):
    """Audit: the routing assumption (zipf, skew, tokens per expert) reached run's output only, though the moe
    module says it is written into every result: patterns' table and patterns.json had no word of it."""
    out = tmp_path / "p"
    assert main(["patterns", "--hw", str(HW / "a100-like.yaml"), "--workload", str(moe_small), "--levels", "50%",
                 "-o", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == MOE_SMALL_LINE  # under the title, in run's words
    assert json.loads((out / "patterns.json").read_text())["moe"] == _routing(tmp_path)


def test_serve_names_the_routing(moe_small, tmp_path, capsys):
    argv = ["serve", "--hw", str(HW / "a100-like.yaml"), "--workload", str(moe_small), "--rate", "50",
            "--duration", "0.2"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"{MOE_SMALL_LINE} [moe-small at its own parameters; each simulated batch is routed by the same rule]")
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["moe"] == {"moe-small": _routing(tmp_path)}


def test_report_names_the_routing(moe_small, tmp_path):
    from accelsim.analysis.deployment import build_report
    from accelsim.report.deploy import report_files, summary_lines

    rep = build_report(load_workload(moe_small), load_hardware(HW / "a100-like.yaml"), "2:4")
    assert summary_lines(rep)[2] == MOE_SMALL_LINE  # under the title line
    files = report_files(rep)
    sentence = "M" + MOE_SMALL_LINE[1:] + "."  # in the summary's subject paragraph
    assert sentence in files["report.md"].decode() and sentence in files["report.html"].decode()
    assert json.loads(files["report.json"])["subject"]["moe"] == _routing(tmp_path)
