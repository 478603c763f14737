"""Modelling assumptions that were literals in the engine, now named config fields: each defaults to the old
constant (goldens unchanged, left out of the resolved config), moves its number the way the physics says when
set, is echoed when set, and is refused out of range or where it would be silently ignored."""

from __future__ import annotations

import pytest
from conftest import HW

from accelsim import load_hardware
from accelsim.engine import simulate
from accelsim.errors import ConfigError
from accelsim.lowering import lower
from accelsim.workloads.model import load_workload, workload_from_dict

ROOT = HW.parent
A100 = load_hardware(HW / "a100-like.yaml")


def _kernel(hw, layer: dict):
    return lower(workload_from_dict({"name": "w", "dtype": "fp16", "layers": [layer]}), hw, "dense")[0]


def _run(sets: list[str], layer: dict, config: str = "a100-like.yaml"):
    hw = load_hardware(HW / config, sets)
    return simulate(_kernel(hw, layer), hw), hw


GELU = {"name": "act", "op": "activation", "function": "gelu", "elements": 1 << 20}  # 2 MiB in, 2 MiB out (fp16)
SPLIT_K = {"name": "g", "op": "gemm", "m": 256, "n": 256, "k": 16384}  # small m n, long k: a100-like splits k


# -- split-k partial sums ---------------------------------------------------------------------------------------

def test_split_k_partials_in_half_the_bytes_halve_their_traffic() -> None:
    fp32, _ = _run([], SPLIT_K)
    fp16, _ = _run(["core.compute.accumulator_bytes=2"], SPLIT_K)
    split = fp32.tiling["split_k"]
    assert split > 1 and fp16.tiling["split_k"] == split
    c_out = 256 * 256 * 2  # C in fp16
    assert fp32.bytes["dram"]["c"] == c_out + 256 * 256 * 4 * split * 2  # each slice writes, the reduction reads
    assert fp16.bytes["dram"]["c"] == c_out + 256 * 256 * 2 * split * 2
    assert fp16.cycles["total"] <= fp32.cycles["total"]


def test_systolic_and_tensor_core_share_the_key() -> None:
    for config in ("tpu-like.yaml", "a100-like.yaml"):
        assert load_hardware(HW / config, ["core.compute.accumulator_bytes=2"]).core.compute.accumulator_bytes == 2


# -- fused attention split-KV ---------------------------------------------------------------------------------

def _decode_attention(sets: list[str]):
    hw = load_hardware(HW / "a100-like.yaml", sets)
    wl = load_workload(ROOT / "workloads" / "llama2-7b-decode.yaml", {"kv_len": 2048})
    kernel = next(k for k in lower(wl, hw, "dense") if k.op == "attention")
    return simulate(kernel, hw)


def test_split_kv_heuristic_constants_pick_the_splits() -> None:
    """Llama-2-7B decode on a100-like: 32 query blocks on 108 slots; the heuristic splits each 3 ways."""
    base = _decode_attention([])
    assert base.tiling["split_kv"] == 3 and base.tiling["ctas"] == 96
    assert _decode_attention(["attention.split_kv_max_splits=2"]).tiling["split_kv"] == 2
    assert _decode_attention(["attention.split_kv_occupancy=0.25"]).tiling["split_kv"] == 1  # 32 >= 0.25 x 108
    assert _decode_attention(["attention.split_kv_tolerance=1.0"]).tiling["split_kv"] > 3  # the best efficiency


def test_split_kv_partials_and_combine_cost_what_the_fields_say() -> None:
    base = _decode_attention([])
    half = _decode_attention(["attention.partial_bytes=2"])
    o_bytes = 32 * 128 * 2  # O: 32 heads x 1 row x 128 in fp16
    for r, width in ((base, 4), (half, 2)):  # 96 CTAs each write 1 x (128 + 1) partials, the combine reads them
        assert r.bytes["dram"]["c"] == o_bytes + 2 * 96 * 129 * width
    assert half.cycles["total"] < base.cycles["total"]
    slow = _decode_attention(["attention.combine_ops_per_element=20"])
    assert slow.cycles["compute"] > base.cycles["compute"] and slow.bytes == base.bytes


def test_the_fused_kernel_takes_its_own_launch_overhead() -> None:
    base = _decode_attention([])
    assert base.cycles["launch"] == A100.launch_overhead_cycles.dense
    own = _decode_attention(["launch_overhead_cycles.attention=1000"])
    assert own.cycles["launch"] == 1000
    assert own.cycles["total"] - base.cycles["total"] == 1000 - A100.launch_overhead_cycles.dense


@pytest.mark.parametrize("item", ["launch_overhead_cycles.attention=10", "attention.partial_bytes=2",
                                  "attention.split_kv_max_splits=8"])
def test_fused_attention_fields_on_an_unfused_part_are_refused(item: str) -> None:
    with pytest.raises(ConfigError, match=rf"{item.partition('=')[0]}: applies to "):
        load_hardware(HW / "tpu-like.yaml", [item])
