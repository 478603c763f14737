"""Modelling assumptions that were literals in the engine, now named config fields: each defaults to the old
constant (goldens unchanged, left out of the resolved config), moves its number the way the physics says when
set, is echoed when set, and is refused out of range or where it would be silently ignored."""

from __future__ import annotations

from conftest import HW

from accelsim import load_hardware
from accelsim.engine import simulate
from accelsim.lowering import lower
from accelsim.workloads.model import workload_from_dict

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
