"""Tensor parallelism splits whole attention heads (Megatron-LM, vLLM): degrees that would split a head are refused
on system.devices; accepted splits keep attention fused and the KV cache in whole heads; decode footprints count
the KV cache once."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import HW, WL, cli, one_line_error

from accelsim.errors import InfeasibleError
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.simulation import footprint
from accelsim.workloads.attention import attention_groups
from accelsim.workloads.model import load_workload, workload_from_dict
from accelsim.workloads.tensor_parallel import split


def test_bert_base_on_8_devices_is_refused_not_split_into_half_heads(capsys: pytest.CaptureFixture[str]) -> None:
    """12 heads over 8 devices used to run q/k/v at m = 96 (1.5 heads of 64) without a word."""
    code, out, err = cli(capsys, "run", "--hw", HW / "8xa100-like.yaml", "--workload", WL / "bert-base.yaml",
                         "--set", "batch=16", "--sparsity", "2:4")
    line = one_line_error(err)
    assert code == 2 and out == ""
    assert line == (f"accelsim: error: {HW / '8xa100-like.yaml'}: system.devices: 8 devices do not divide the 12 "
                    "query heads of workload 'bert-base' (layer 'encoder.0.scores', head dim 64): tensor parallelism "
                    "splits whole attention heads, as Megatron-LM and vLLM do; use 2, 3, 4, 6 or 12 devices")


def test_more_devices_than_query_heads_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """64 devices on 32 heads used to give each device half a query head yet a whole 4-head attention group."""
    code, _, err = cli(capsys, "run", "--hw", HW / "8xh100-like.yaml", "--hw-set", "system.devices=64",
                       "--workload", WL / "llama3-8b-decode.yaml")
    assert code == 2
    assert "system.devices: 64 devices do not divide the 32 query heads of workload 'llama3-8b-decode'" in \
        one_line_error(err)
    with pytest.raises(InfeasibleError) as info:
        split(load_workload(WL / "llama3-8b-decode.yaml"), 64, "sys.yaml")
    assert (info.value.source, info.value.key) == ("sys.yaml", "system.devices")


def test_devices_must_divide_the_kv_heads_or_be_a_multiple_of_them() -> None:
    model = load_workload(WL / "qwen2.5-7b-decode.yaml")  # 28 query heads, 4 K/V heads
    for n in (7, 14):  # divide the query heads, but neither divide 4 K/V heads nor are a multiple of 4
        with pytest.raises(InfeasibleError, match=f"system.devices: {n} devices neither divide the 4 K/V heads of "
                                                  "workload 'qwen2.5-7b-decode'.*use 2, 4 or 28 devices"):
            split(model, n)
    plan = split(model, 28)  # a multiple of 4: one query head and one (replicated) K/V head per device
    by = {lay.name: lay for lay in plan.workload.layers}
    assert (by["layers.0.q_proj"].m, by["layers.0.k_proj"].m, by["layers.0.o_proj"].k) == (128, 128, 128)
    assert (by["layers.0.scores"].m, by["layers.0.scores"].batch) == (1, 1)
    assert by["layers.0.kv_write"].elements == 2 * 128 and plan.kv_replicated


def test_uneven_tp_no_longer_cancels_2_4_on_the_attention_projections(capsys: pytest.CaptureFixture[str]) -> None:
    """3 devices used to cut 32 heads into 1366-row shards (1.004x: every projection dense, shape_below_minimum)."""
    code, _, err = cli(capsys, "run", "--hw", HW / "8xh100-like.yaml", "--hw-set", "system.devices=3", "--workload",
                       WL / "llama3-8b-prefill.yaml", "--set", "seq=512", "--sparsity", "2:4")
    assert code == 2 and "3 devices do not divide the 32 query heads" in one_line_error(err)
    # 5 devices split Llama-2-13B's 40 heads whole (8 x 128 = 1024 rows); only the MLP (13824) is uneven
    plan = split(load_workload(WL / "llama2-13b-prefill.yaml", {"seq": 512}), 5)
    kernels = {k.name: k for k in lower(plan.workload, load_hardware(HW / "h100-like.yaml"), "2:4")}
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        kern = kernels[f"layers.0.{name}"]
        assert kern.path == "sparse" and 1024 in (kern.m, kern.k), name
    assert kernels["layers.0.gate_proj"].m == 2765  # the largest shard of 13824 / 5, rounded up and said
    assert any(n.startswith("gate_proj m 13824 is not divisible by 5 devices: rounded up") for n in plan.notes)


@pytest.mark.parametrize(("workload", "devices"), [
    ("llama3-8b-prefill", 2), ("llama3-8b-prefill", 8), ("llama3-8b-prefill", 32), ("llama3-8b-decode", 16),
    ("bert-base", 3), ("bert-base", 12), ("llama2-13b-prefill", 5), ("qwen2.5-7b-decode", 28)])
def test_every_accepted_split_keeps_attention_fused(workload: str, devices: int) -> None:
    model = load_workload(WL / f"{workload}.yaml")
    plan = split(model, devices)
    before, after = attention_groups(model.layers), attention_groups(plan.workload.layers)
    assert after == before
    for first, _ in after:  # each device computes 1 / N of the scores, in whole heads
        full, shard = model.layers[first], plan.workload.layers[first]
        assert shard.m * shard.n * shard.batch * devices == full.m * full.n * full.batch
    kernels = lower(plan.workload, load_hardware(HW / "h100-like.yaml"))
    assert sum(k.op == "attention" for k in kernels) == len(before)
    assert not any("no longer match" in n for n in plan.notes)


def _headless(batch: int) -> dict:
    """Attention whose heads the split cannot see (no q / k / v / o names): products split by ``batch``."""
    return {"name": "headless", "dtype": "fp16", "kv_cache_elements": 1001, "layers": [
        {"name": "fc1", "op": "gemm", "m": 256, "n": 64, "k": 256},
        {"name": "scores", "op": "matmul", "m": 64, "n": 64, "k": 32, "batch": batch},
        {"name": "softmax", "op": "softmax", "elements": 64 * 64 * batch},
        {"name": "context", "op": "matmul", "m": 64, "n": 32, "k": 64, "batch": batch},
        {"name": "fc2", "op": "gemm", "m": 256, "n": 64, "k": 256}]}


def test_an_uneven_fallback_split_keeps_the_group_and_says_what_it_rounded() -> None:
    """Score ops take the QK^T shard's size: ceil(3 / 2) = 2 products, softmax 2 x 64 x 64 (it used to be
    ceil(3 x 64 x 64 / 2), and the group silently ran unfused)."""
    plan = split(workload_from_dict(_headless(3), "headless.yaml"), 2)
    by = {lay.name: lay for lay in plan.workload.layers}
    assert by["scores"].batch == by["context"].batch == 2 and by["softmax"].elements == 2 * 64 * 64
    assert attention_groups(plan.workload.layers) == [(1, 3)]
    assert "attention batch x heads 3 is not divisible by 2 devices: rounded up to the largest shard (2 layer(s))" \
        in plan.notes
    # a KV cache whose heads are unknown: rounded up too, and said (it used to be rounded without a word)
    assert plan.workload.kv_cache_elements == 501
    assert "kv_cache_elements 1001 is not divisible by 2 devices: rounded up to the largest shard" in plan.notes


def test_the_kv_cache_is_split_in_whole_kv_heads() -> None:
    """At 3 devices the per-device cache used to be exactly 1/3 (not the 3 of 8 heads the largest shard holds);
    now 3 is refused, and every accepted degree holds whole K/V heads."""
    model = load_workload(WL / "llama3-8b-decode.yaml", {"batch": 4, "kv_len": 1024})  # 8 K/V heads
    per_head = model.kv_cache_elements // 8
    for n, heads in ((2, 4), (4, 2), (8, 1), (16, 1), (32, 1)):
        plan = split(model, n)
        assert plan.workload.kv_cache_elements == heads * per_head, n
        assert plan.assumptions()["kv_heads_per_device"] == heads
    with pytest.raises(InfeasibleError, match="3 devices do not divide the 32 query heads"):
        split(model, 3)


def test_decode_activations_leave_the_kv_cache_to_kv_cache_bytes() -> None:
    """Fused decode attention used to count one layer's whole K and V as activations (537,460,736 B for
    llama3-70b at kv_len 8192, batch 16): they are the KV cache, already in kv_cache_bytes."""
    model = load_workload(WL / "llama3-70b-decode.yaml", {"kv_len": 8192, "batch": 16})
    for hw_name in ("h100-like", "tpu-like"):  # fused attention, and the matmuls one by one
        hw = load_hardware(HW / f"{hw_name}.yaml")
        fp = footprint(model, lower(model, hw, None), hw)
        assert fp["kv_cache_bytes"] == 2 * 80 * 16 * 8193 * 1024 * 2
        one_layer_k = 16 * 8 * 8193 * 128 * 2
        assert fp["activations_peak_bytes"] < one_layer_k / 4, hw_name
    hw = load_hardware(HW / "h100-like.yaml")
    fp = footprint(model, lower(model, hw, None), hw)
    assert fp["activations_peak_bytes"] == (8192 + 128256) * 16 * 2  # the lm_head's input and logits


def test_sweep_marks_a_head_splitting_point_infeasible_and_serve_refuses(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"name: tp\nhardware: {HW / '8xa100-like.yaml'}\nworkloads: [{WL / 'bert-base.yaml'}]\n"
                    "set: {seq: [32]}\nsparsity: [dense]\ngrid:\n  system.devices: [4, 8]\n")
    code, _, _ = cli(capsys, "sweep", spec, "-o", tmp_path / "out")
    assert code == 0
    rows = {r["system.devices"]: r for r in csv.DictReader((tmp_path / "out" / "results.csv").open())}
    assert rows["4"]["feasible"] == "True"
    assert rows["8"]["feasible"] == "False"
    assert rows["8"]["reason"].startswith("system.devices: 8 devices do not divide the 12 query heads of workload "
                                          "'bert-base'")
    code, out, err = cli(capsys, "serve", "--hw", HW / "8xa100-like.yaml", "--workload", WL / "bert-base.yaml",
                         "--rate", "20", "--duration", "1")
    assert code == 2 and out == ""
    assert one_line_error(err).startswith(f"accelsim: error: {HW / '8xa100-like.yaml'}: system.devices: 8 devices "
                                          "do not divide the 12 query heads of workload 'bert-base'")


def _gqa_block(tokens: int) -> dict:
    """One GQA attention block: 16 query heads, 2 K/V heads of 64 (hidden 1024), ``tokens`` tokens, rotary on
    q and k (``tokens x (16 + 2) x 64`` elements), the 8 query heads of a K/V head stacked in QK^T's m."""
    return {"name": "gqa16x2", "dtype": "fp16", "layers": [
        {"name": "layers.0.q_proj", "op": "gemm", "m": 1024, "n": tokens, "k": 1024},
        {"name": "layers.0.k_proj", "op": "gemm", "m": 128, "n": tokens, "k": 1024},
        {"name": "layers.0.v_proj", "op": "gemm", "m": 128, "n": tokens, "k": 1024},
        {"name": "layers.0.rotary", "op": "elementwise", "elements": tokens * (1024 + 128), "inputs": 3},
        {"name": "layers.0.scores", "op": "matmul", "m": 8 * tokens, "n": tokens, "k": 64, "batch": 2},
        {"name": "layers.0.softmax", "op": "softmax", "elements": 8 * tokens * tokens * 2},
        {"name": "layers.0.context", "op": "matmul", "m": 8 * tokens, "n": 64, "k": tokens, "batch": 2},
        {"name": "layers.0.o_proj", "op": "gemm", "m": 1024, "n": tokens, "k": 1024}]}


def test_rotary_runs_on_the_kv_heads_each_device_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2 K/V heads over 8 devices: each device holds one (replicated 4-fold) and rotates it with its 2 query heads,
    64 tokens x (2 + 1) x 64 = 12,288 elements. The split used to give rotary 1 / 8 of its elements, 64 x 18 x 64
    / 8 = 9,216, as if the 2 K/V heads were cut into quarters."""
    wl = tmp_path / "gqa.yaml"
    wl.write_text(json.dumps(_gqa_block(64)))
    code, out, err = cli(capsys, "run", "--hw", HW / "8xa100-like.yaml", "--workload", wl, "--format", "json")
    assert code == 0, err
    assert "replicated on 4 devices (projection, rotary, cache and cache reads)" in err
    by = {r["name"]: r for r in json.loads(out)["layers"]}
    assert by["layers.0.rotary"]["shape"]["elements"] == 64 * (16 // 8 + 1) * 64 == 12_288
    assert by["layers.0.rotary"]["tiling"]["ops"] == 12_288  # the vector unit's work on each device
    assert by["layers.0.k_proj"]["shape"]["m"] == 64  # the one K/V head it rotates
    # Llama-3-8B (32 query / 8 K/V heads x 128) at 16 devices: 2 query heads and 1 K/V head per device
    plan = split(load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 512}), 16)
    rotary = next(lay for lay in plan.workload.layers if lay.name == "layers.0.rotary")
    assert rotary.elements == 512 * (2 + 1) * 128 == 196_608  # 1 / 16 of it, 163,840, before
    # K/V heads split evenly (8 devices: 1 each): exactly 1 / N, as before
    plan = split(load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 512}), 8)
    rotary = next(lay for lay in plan.workload.layers if lay.name == "layers.0.rotary")
    assert rotary.elements == 512 * (4096 + 1024) // 8 == 327_680
    # a rotary of another size (here q only) keeps 1 / N and, with K/V heads replicated, says what it assumed
    q_only = _gqa_block(64)
    q_only["layers"][3]["elements"] = 64 * 1024
    plan = split(workload_from_dict(q_only, "q_only.yaml"), 8)
    assert plan.workload.layers[3].elements == 64 * 1024 // 8
    assert "rotary elements are not tokens x (heads + K/V heads) x head dim 64: split 1 / 8, its part on the " \
           "replicated K/V heads under-counted" in plan.notes
