"""A write-back L2 charges C's bytes once on a core's channel: the DRAM drains C while the core stores it into L2,
so C's channel time is max(its L2 store time, its DRAM time), not their sum (the double charge found validating
V:N:M at M = 100 on rtx3090-like). Checked against a hand-computed schedule of a one-wave, C-dominated GEMM."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsim import load_hardware
from accelsim.engine import simulate
from accelsim.engine import tensorcore as tc
from accelsim.lowering import lower
from accelsim.workloads.model import workload_from_dict

HW = Path(__file__).resolve().parents[1] / "hwconfigs"
FIXED = ["core.compute.cta_tiles.dense=[[256, 128, 32]]", "core.compute.split_k.dense=[1]",
         "core.compute.efficiency.dense=0.75", "core.compute.operand_feed.smem_bytes_per_cycle=null"]


def _gemm(m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": "t", "dtype": "fp16", "layers": [{"name": "g", "op": "gemm", "m": m, "n": n,
                                                                         "k": k}]})


def test_one_wave_of_c_dominated_gemm_matches_the_hand_schedule() -> None:
    """a100-like, 2048 x 1536 x 64 fp16 in 256 x 128 x 32 CTAs: 8 x 12 = 96 CTAs in one wave, 2 k-steps each."""
    hw = load_hardware(HW / "a100-like.yaml", overrides=FIXED)
    res = simulate(lower(_gemm(2048, 1536, 64), hw, "dense")[0], hw, keep_tiles=False)
    assert res.tiling["c_write_back"] and res.tiling["ctas"] == 96 and res.tiling["waves"] == 1
    active, fill, l2, dram = 96, 64.0, 5120.0, 2039 * 0.75 / 1.41  # B/clk: SM port, L2, DRAM at its sustained share
    a_step, b_step, c_cta = 256 * 32 * 2, 32 * 128 * 2, 256 * 128 * 2
    store = c_cta * max(1 / fill, active / l2)  # C into L2: 96 SMs share the L2 port, 1228.8 cycles
    drained = store * dram / active  # DRAM bytes of C drained meanwhile (this core's share)
    load_bytes = 2 * (a_step + b_step)
    # each A panel is read from DRAM once by its 12 CTAs, each B panel once by its 8
    share = (a_step / 12 + b_step / 8) / (a_step + b_step) + (c_cta - drained) / load_bytes
    per_byte = max(1 / fill, active / l2, active * share / dram)
    step_load = (a_step + b_step) * per_byte
    mma = 256 * 128 * 32 / (1024 * 0.75)  # one k-step on the tensor cores
    latency = 450 * 1.41
    # both k-steps load back to back; the second computes after the first and its own data, then C is stored
    end = max(step_load + latency + mma, 2 * step_load + latency) + mma + store
    assert res.cycles["total"] - res.cycles["launch"] == round(end)  # 8224 (before the fix: 9453)
    # the channel's transfer time is DRAM's time for every byte it moves, C once (the write-back is L2-bound)
    assert res.busy["memory"] == round(2 * step_load + store)
    dram_bytes = sum(res.bytes["dram"].values())
    assert 2 * step_load + store == pytest.approx(active * dram_bytes / 96 / dram, rel=1e-9)


def test_the_drain_is_what_the_store_time_leaves() -> None:
    # the store takes 1000 cycles at 64 B/clk; DRAM at 8 B/clk per core drains 8000 of the 64000 bytes meanwhile
    assert tc.write_back_drain(64000, 1000, 10, 64.0, 1e9, 80.0) == pytest.approx(56.0)
    # a slow L2 port lets DRAM drain all of C during the store: nothing left for the loads
    assert tc.write_back_drain(64000, 1000, 10, 64.0, 10.0, 80.0) == 0.0
    assert tc.write_back_drain(64000, 1000, 10, 64.0, 1e9, float("inf")) == 0.0


@pytest.mark.parametrize("shape", [(4096, 4096, 64), (8192, 8192, 256), (2048, 16384, 128)])
@pytest.mark.parametrize("name", ["a100-like", "rtx3090-like"])
def test_a_write_back_l2_is_never_slower_than_write_through(name: str, shape: tuple[int, int, int]) -> None:
    wb = load_hardware(HW / f"{name}.yaml")
    wt = load_hardware(HW / f"{name}.yaml", overrides=["l2.write_policy=write_through"])
    kern = lower(_gemm(*shape), wb, "dense")[0]
    r_wb, r_wt = simulate(kern, wb, keep_tiles=False), simulate(kern, wt, keep_tiles=False)
    assert r_wb.tiling["c_write_back"] and r_wb.bytes == r_wt.bytes
    assert r_wb.cycles["total"] <= r_wt.cycles["total"]
    assert r_wb.busy["memory"] <= r_wt.busy["memory"] * (1 + 1e-9)
