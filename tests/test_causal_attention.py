"""Causal attention: the workload's ``attention: {mask: causal}``; fused kernels stream only the K / V tiles at or
below the diagonal, unfused (eager) attention computes the full product and masks it, and results say which."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest
from conftest import HW, WL

from accelsim.cli.run import format_table
from accelsim.config.schema import read_yaml
from accelsim.engine import simulate
from accelsim.engine.attention import kv_tiles_needed
from accelsim.errors import ConfigError
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.simulation import run
from accelsim.workloads.attention import visible_pairs
from accelsim.workloads.model import load_workload, workload_from_dict


@cache
def hw(name: str = "a100-like", *sets: str):
    return load_hardware(HW / f"{name}.yaml", list(sets))


def attention_kernel(wl, target):
    return next(k for k in lower(wl, target) if k.op == "attention")


def with_attention(path, params, attention):
    data, _ = read_yaml(path)
    data = {**data, "attention": attention}
    if attention is None:
        del data["attention"]
    return workload_from_dict(data, str(path), params)


@pytest.mark.parametrize(("m", "n", "q", "rows", "bc", "need"), [
    (256, 256, 256, 64, 64, [1, 2, 3, 4]),  # seq 256, 64 x 64 tiles: 10 of 16
    (512, 256, 256, 64, 64, [1, 2, 3, 4] * 2),  # two query heads stacked (GQA): each head's blocks alike
    (200, 100, 100, 64, 64, [1, 2, 2, 2]),  # the second block holds head 0's last token (position 99)
    (256, 256, 256, 128, 32, [4, 8]),  # the block's last row 127 sees keys 0..127: 4 blocks of 32
    (64, 256, 64, 64, 64, [4]),  # chunked prefill: 192 cached keys ahead, the chunk's last token sees all 256
    (4, 513, 1, 16, 64, [9]),  # decode: one query token (4 heads stacked) sees every key
    (256, 256, 0, 64, 64, [4, 4, 4, 4]),  # bidirectional
])
def test_tiles_by_hand(m, n, q, rows, bc, need):
    assert kv_tiles_needed(m, n, q, rows, bc).tolist() == need


def test_visible_pairs():
    assert visible_pairs(4, 4) == 10 and visible_pairs(1, 513) == 513 and visible_pairs(2, 5) == 4 + 5


def test_seq_32768_on_a100_like_about_half():
    """llama3-8b-prefill at seq 32768: the causal kernel takes 0.50-0.55 of the bidirectional one's cycles (half
    the tiles, plus the diagonal ones, less wave quantisation); MACs executed are the mask's kept products."""
    seq = 32768
    causal = attention_kernel(load_workload(WL / "llama3-8b-prefill.yaml", {"seq": seq}), hw())
    assert causal.causal_q == seq and causal.m == 4 * seq
    full = replace(causal, causal_q=0)
    rc, rf = simulate(causal, hw(), keep_tiles=False), simulate(full, hw(), keep_tiles=False)
    assert 0.5 <= rc.cycles["total"] / rf.cycles["total"] <= 0.55
    assert rc.macs == rf.macs == 2 * 4 * seq * seq * 128 * 8
    assert rc.macs_executed == 2 * 4 * visible_pairs(seq, seq) * 128 * 8
    t = rc.tiling["causal"]
    rows, bc = rc.tiling["q_rows"], rc.tiling["kv_block"]
    q_blocks, kv_blocks = 4 * seq // rows, seq // bc
    run_ = 8 * 4 * sum(min(kv_blocks, ((i + 1) * rows - 1) // bc + 1) for i in range(seq // rows))
    assert t["kv_tiles"] == 8 * q_blocks * kv_blocks and t["kv_tiles_run"] == run_
    assert t["kv_tiles_skipped"] == t["kv_tiles"] - run_ and t["schedule"] == "longest_first"
    assert t["macs_computed"] == run_ * 2 * rows * bc * 128 >= rc.macs_executed
    kv_step = 2 * bc * 128 * 2  # K and V blocks, bf16
    assert rc.bytes["sram"]["b"] == pytest.approx(run_ * kv_step, rel=1e-9)  # streamed K / V follow the count
    assert abs(rc.bytes["dram"]["b"] - rf.bytes["dram"]["b"]) <= 1  # K, V once per head (L2); +-1: a float sum
    assert "causal" not in rf.tiling


def test_decode_unchanged():
    """One query token sees every cached key: nothing to skip, the same kernel as without the mask."""
    path, params = WL / "llama3-8b-decode.yaml", {"kv_len": 4096}
    causal = run(with_attention(path, params, {"mask": "causal", "q_heads_stacked": 4}), hw())
    plain = run(load_workload(path, params), hw())
    a = next(r for r in causal.layers if r.op == "attention")
    b = next(r for r in plain.layers if r.op == "attention")
    assert a.cycles == b.cycles and a.bytes == b.bytes and a.macs_executed == b.macs_executed
    assert a.tiling["causal"]["kv_tiles_skipped"] == 0 and a.tiling["causal"]["kv_offset"] == 4096
    assert causal.total_cycles == plain.total_cycles


def test_bidirectional_unchanged():
    """BERT declares no mask; mask: none is the same; results carry no causal echo."""
    path, params = WL / "bert-base.yaml", {"seq": 128}
    plain = run(load_workload(path, params), hw())
    none = run(with_attention(path, params, {"mask": "none"}), hw())
    assert plain.total_cycles == none.total_cycles
    assert all("causal" not in r.tiling for r in plain.layers)
    assert none.workload["attention"] == {"mask": "none", "q_heads_stacked": 1}


def test_unfused_computes_the_full_product_and_says_so():
    path, params = WL / "llama3-8b-prefill.yaml", {"seq": 1024}
    target = hw("a100-like", "attention.form=unfused")
    causal = run(load_workload(path, params), target)
    plain = run(with_attention(path, params, None), target)
    assert causal.total_cycles == plain.total_cycles
    by = {r.name: r for r in causal.layers}
    for name in ("scores", "scale_mask", "softmax", "context"):
        echo = by[f"layers.0.{name}"].tiling["causal"]
        assert echo == {"mask": "causal", "form": "unfused", "masked_after_full_product": True,
                        "kv_tiles_skipped": 0}
    assert "causal" not in by["layers.0.q_proj"].tiling
    assert causal.workload["attention"] == {"mask": "causal", "q_heads_stacked": 4}
    rows = {line.split()[0]: line for line in format_table(causal).splitlines() if line.startswith("layers.0.")}
    assert "causal (full)" in rows["layers.0.scores"] and "causal" not in rows["layers.0.q_proj"]


def test_fused_causal_prefill_is_faster_and_echoed():
    path, params = WL / "llama3-8b-prefill.yaml", {"seq": 2048}
    causal = run(load_workload(path, params), hw())
    plain = run(with_attention(path, params, None), hw())
    assert causal.total_cycles < plain.total_cycles
    att = next(r for r in causal.layers if r.op == "attention")
    assert att.tiling["causal"]["kv_tiles_skipped"] > 0 and att.tiling["form"] == "fused"
    table = format_table(causal).splitlines()
    assert any(line.startswith(att.name) and "causal" in line and "(full)" not in line for line in table)


@pytest.mark.parametrize(("path", "attention", "match"), [
    ("resnet18.yaml", {"mask": "causal"}, r"attention\.mask: causal, but no attention group"),
    ("llama3-8b-prefill.yaml", {"mask": "causal", "q_heads_stacked": 3},
     r"attention\.q_heads_stacked: 3 query heads stacked in layer 'layers\.0\.scores' \(m = 2048"),
    ("llama3-8b-prefill.yaml", {"mask": "causal", "q_heads_stacked": 2}, r"must divide m and leave no more tokens"),
    ("llama3-8b-prefill.yaml", {"mask": "sliding"}, r"attention\.mask"),
    # q_heads_stacked only means something to a causal mask: with none (or no mask) it was silently unused
    ("llama3-8b-prefill.yaml", {"mask": "none", "q_heads_stacked": 4},
     r"attention\.q_heads_stacked: 4 query heads stacked, but stacking applies to mask: causal only .*mask is none"),
    ("bert-base.yaml", {"q_heads_stacked": 2}, r"attention\.q_heads_stacked: 2 query heads stacked, but stacking"),
])
def test_bad_declarations_name_the_key(path, attention, match):
    with pytest.raises(ConfigError, match=match):
        with_attention(WL / path, {"seq": 512} if "llama" in path else None, attention)
