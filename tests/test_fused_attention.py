"""Fused attention (issue 19, must-show 1): a lowering choice named in the hardware config, one kernel that
streams Q, K, V and writes only O, its shared-memory tiling limit, and the separate ops it replaces."""

from __future__ import annotations

from functools import cache

import pytest
from conftest import HW, WL

from accelsim.errors import ConfigError, InfeasibleError
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.simulation import run
from accelsim.workloads.attention import attention_groups
from accelsim.workloads.model import load_workload, workload_from_dict


@cache
def hw(name: str = "a100-like", *sets: str):
    return load_hardware(HW / f"{name}.yaml", list(sets))


def by_name(res):
    return {r.name: r for r in res.layers}


def test_form_is_named_in_the_hardware_config():
    assert hw().attention.form == "fused" and hw("h100-like").attention.form == "fused"
    assert hw("tpu-like").attention.form == "unfused" and hw("scalesim-32x32-os").attention.form == "unfused"
    assert hw("a100-like", "attention.form=unfused").attention.form == "unfused"
    with pytest.raises(ConfigError, match="attention.form: a systolic part runs attention unfused"):
        load_hardware(HW / "tpu-like.yaml", ["attention.form=fused"])
    assert run(load_workload(WL / "bert-base.yaml", {"seq": 64}), hw()).hardware["attention"]["form"] == "fused"


def test_groups_are_recognised():
    llama = load_workload(WL / "llama2-7b-prefill.yaml")
    groups = attention_groups(llama.layers)
    assert len(groups) == 32
    assert [llama.layers[i].name for i in range(groups[0][0], groups[0][1] + 1)] == [
        "layers.0.scores", "layers.0.scale_mask", "layers.0.softmax", "layers.0.context"]
    assert len(attention_groups(load_workload(WL / "llama3-8b-decode.yaml").layers)) == 32
    assert len(attention_groups(load_workload(WL / "bert-base.yaml").layers)) == 12
    assert attention_groups(load_workload(WL / "resnet50.yaml").layers) == []


def _attn(*middle, context=None, scores=None):
    s = {"name": "s", "op": "matmul", "m": 64, "n": 64, "k": 32, "batch": 2, **(scores or {})}
    c = {"name": "c", "op": "matmul", "m": 64, "n": 32, "k": 64, "batch": 2, **(context or {})}
    mid = [{"name": f"v{i}", "elements": 64 * 64 * 2, **x} for i, x in enumerate(middle)]
    return workload_from_dict({"name": "t", "layers": [s, *mid, c]}).layers


@pytest.mark.parametrize(("layers", "found"), [
    (_attn({"op": "elementwise"}, {"op": "softmax"}), [(0, 3)]),
    (_attn({"op": "softmax"}), [(0, 2)]),
    (_attn({"op": "elementwise"}), []),  # no softmax
    (_attn({"op": "softmax"}, context={"n": 64, "k": 32}), []),  # the second matmul does not read the scores
    (_attn({"op": "softmax"}, context={"batch": 1}), []),
    (_attn({"op": "softmax", "elements": 100}), []),  # not score-sized
    (_attn({"op": "softmax"}, scores={"kv_cache": True}), []),  # one reads the cache, the other not
    (_attn({"op": "rmsnorm"}, {"op": "softmax"}), []),
])
def test_group_rules(layers, found):
    assert attention_groups(layers) == found


def test_one_kernel_writes_only_o():
    """llama2-7b-prefill at seq 4096 on a100-like: the scores kernel is the fused one; it reads Q, K, V and
    writes O once (K and V fit L2, so every query block of a head shares them); the other three run nothing."""
    seq, d, heads = 4096, 128, 32
    res = by_name(run(load_workload(WL / "llama2-7b-prefill.yaml", {"seq": seq}), hw()))
    att = res["layers.5.scores"]
    assert att.op == "attention" and att.path == "dense" and att.tiling["form"] == "fused"
    assert att.tiling["scores_in_dram"] is False and att.tiling["kv_dram_reads"] == 1.0
    assert att.macs == 2 * seq * seq * d * heads  # QK^T and PV
    one = seq * d * heads * 2  # one of Q, K, V, O in fp16
    assert att.bytes["dram"] == {"a_values": one, "a_metadata": 0, "b": 2 * one, "c": one}
    for name in ("scale_mask", "softmax", "context"):
        r = res[f"layers.5.{name}"]
        assert r.cycles["total"] == 0 and r.macs == 0 and sum(r.bytes["dram"].values()) == 0
        assert r.tiling == {"form": "fused", "absorbed": True}
    assert att.counts["vector_ops"] == seq * seq * heads * (1 + 6)  # scale_mask + softmax per score


def test_tiling_by_hand():
    """Per K / V block: 2 x 128 rows x 32 x 128 MACs at 1024 x the dense efficiency per cycle, the softmax's
    7 ops per score at 13824 / 108 per cycle; shared memory holds Q (128 x 128) and 4 stages of K and V blocks
    (2 x 32 x 128)."""
    wl = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 2048}).model_copy(update={"attention": None})
    res = by_name(run(wl, hw()))  # bidirectional: every Q block streams every K / V block
    t = res["layers.0.scores"].tiling
    assert (t["q_block"], t["kv_block"], t["stages"], t["split_kv"]) == (128, 32, 4, 1)
    assert t["smem_bytes"] == 128 * 128 * 2 + 4 * 2 * 32 * 128 * 2 <= 167936
    eff = hw().core.compute.efficiency.dense  # the ampere-datacenter family fit (0.74)
    assert t["cycles_per_block"]["mma"] == pytest.approx(2 * 128 * 32 * 128 / (1024 * eff), abs=1e-3)
    assert t["cycles_per_block"]["softmax"] == pytest.approx(128 * 32 * 7 / (13824 / 108), abs=1e-3)
    assert t["ctas"] == 32 * 2048 // 128 and t["waves"] == -(-t["ctas"] // 108)


def test_shared_memory_limits_the_tile():
    wl = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 1024})
    small = by_name(run(wl, hw("a100-like", "core.sram.bytes=40000")))["layers.0.scores"].tiling
    assert (small["q_block"], small["kv_block"], small["stages"]) == (64, 32, 1)  # 16 KiB of Q + 16 KiB of K, V
    with pytest.raises(InfeasibleError, match="shared memory too small for every fused attention tile"):
        run(wl, hw("a100-like", "core.sram.bytes=30000"))


def test_seq_32768_on_a100_like():
    """The issue's case: unfused, the scores make 6.8 TB of C traffic; fused, C stays far below 1 TB."""
    wl = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 32768})
    fused = run(wl, hw())
    c = sum(r.bytes["dram"]["c"] for r in fused.layers)
    assert c < 1e12
    unfused = run(wl, hw("a100-like", "attention.form=unfused"))
    assert sum(r.bytes["dram"]["c"] for r in unfused.layers) > 6.5e12
    assert fused.total_cycles < unfused.total_cycles
    assert sum(r.macs for r in fused.layers) == sum(r.macs for r in unfused.layers)


def test_attention_bytes_grow_as_seq_times_d():
    def attention_bytes(seq):
        wl = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": seq}).model_copy(update={"attention": None})
        res = by_name(run(wl, hw()))  # bidirectional (causal: tests/test_causal_attention.py)
        return sum(res["layers.0.scores"].bytes["dram"].values())
    b = [attention_bytes(s) for s in (4096, 8192, 16384, 32768)]
    assert [round(y / x, 3) for x, y in zip(b, b[1:], strict=False)] == [2.0, 2.0, 2.0]
    assert b[-1] == 4 * 32768 * 128 * 32 * 2  # Q, K, V and O once


def test_decode_splits_the_kv_length():
    """llama2-7b-decode at kv_len 4096 (32 heads, one query row each): 32 CTAs would leave most of the 108
    SMs idle, so the KV length is split 3 ways (FlashAttention-2's heuristic); the partial O's go through DRAM."""
    kv, d, heads = 4096, 128, 32
    res = by_name(run(load_workload(WL / "llama2-7b-decode.yaml", {"kv_len": kv}), hw()))
    att = res["layers.0.scores"]
    assert att.tiling["split_kv"] == 3 and att.tiling["ctas"] == 96 and att.tiling["q_rows"] == 16
    assert att.bytes["dram"]["b"] == 2 * kv * d * heads * 2  # K and V once
    partials = 96 * (d + 1) * 4  # one row of O and its row sum, fp32, per CTA
    assert att.bytes["dram"]["c"] == 2 * partials + heads * d * 2  # written, read back, final O


def test_stays_dense_under_weight_sparsity():
    res = by_name(run(load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 256}), hw(), "2:4"))
    att = res["layers.0.scores"]
    assert att.path == "dense" and att.reason == "activation_operands" and att.pattern_requested == "2:4"
    assert res["layers.0.context"].reason == "activation_operands" and res["layers.0.context"].cycles["total"] == 0
    assert res["layers.0.q_proj"].path == "sparse"


def test_unfused_is_unchanged():
    wl = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 256})
    kernels = {k.name: k for k in lower(wl, hw("a100-like", "attention.form=unfused"))}
    assert kernels["layers.0.scores"].op == "matmul" and kernels["layers.0.softmax"].elements == 32 * 256 * 256
    assert [k.op for k in lower(wl, hw("tpu-like")) if k.name.startswith("layers.0.")] == [
        x.op for x in wl.layers if x.name.startswith("layers.0.")]
