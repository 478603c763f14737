"""Stream-K decomposition of persistent GEMM kernels (core.compute.stream_k; issue 17, Hopper family)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsim.engine.ctagrid import _stream_k_plan
from accelsim.hardware.model import load_hardware
from accelsim.hardware.tensor_core import StreamK
from accelsim.lowering import lower
from accelsim.simulation import Simulator
from accelsim.workloads.model import workload_from_dict

HW = Path(__file__).resolve().parents[1] / "hwconfigs"


def _gemm(size: int, dtype: str = "bf16") -> object:
    return workload_from_dict({"name": "g", "dtype": dtype, "layers": [
        {"name": "g", "op": "gemm", "m": size, "n": size, "k": size}]})


def _run(overrides: list[str], path: str = "dense", size: int = 1024):
    hw = load_hardware(HW / "h100-pcie-like.yaml", overrides)
    return Simulator(hw)(lower(_gemm(size), hw, path)[0])


class _K:
    sparse_datapath = False
    load_sparse = False


def test_plan_follows_cutlass_layout() -> None:
    sk = StreamK(dense=True)
    # under one wave: every tile is stream-K, 64 tiles x 16 k-steps over 114 units -> 9 k-steps each
    assert _stream_k_plan(sk, _K(), 1, None, 64, 114, 16) == (64, 114, 9)
    # over two waves: the last full wave and the tail (256 = 2 x 114 + 28 -> 114 + 28 tiles), 32 k-steps each
    assert _stream_k_plan(sk, _K(), 1, None, 256, 114, 32) == (142, 114, 40)
    # few k-steps: fewer units, each at least min_k_steps_per_unit
    assert _stream_k_plan(sk, _K(), 1, None, 10, 114, 16) == (10, 20, 8)
    # data-parallel: full waves only, split-k, too few k-steps, the path off
    assert _stream_k_plan(sk, _K(), 1, None, 228, 114, 32) is None
    assert _stream_k_plan(sk, _K(), 2, None, 64, 114, 16) is None
    assert _stream_k_plan(sk, _K(), 1, None, 64, 114, 8) is None
    assert _stream_k_plan(StreamK(sparse=True), _K(), 1, None, 64, 114, 16) is None


def test_hopper_dense_mid_size_fills_every_sm() -> None:
    """bf16 1024^3 on 114 SMs: 128 x 128 tiles are 64 CTAs; stream-K runs them as 114 units of 9 k-steps."""
    on = _run(["core.compute.cta_tiles.dense=[[128,128,64]]", "core.compute.split_k.dense=[1]"])
    off = _run(["core.compute.cta_tiles.dense=[[128,128,64]]", "core.compute.split_k.dense=[1]",
                "core.compute.stream_k=null"])
    assert on.tiling["stream_k"] == {"tiles": 64, "units": 114, "k_steps": 9, "fixup": "partials_in_l2_not_timed"}
    assert "stream_k" not in off.tiling
    assert on.cycles["compute"] == pytest.approx(off.cycles["compute"] * 9 / 16, abs=1)  # 9 of 16 k-steps
    assert on.cycles["total"] < off.cycles["total"]


def test_sparse_kernels_stay_data_parallel_and_other_families_leave_it_out() -> None:
    sparse = _run([], path="2:4")
    assert "stream_k" not in sparse.tiling  # cuSPARSELt: split-k search only (hopper.yaml)
    a100 = load_hardware(HW / "a100-like.yaml")
    assert a100.core.compute.stream_k is None  # type: ignore[union-attr]
    assert "stream_k" not in a100.to_dict()["core"]["compute"]  # resolved configs read back as before
    assert "stream_k" in load_hardware(HW / "h100-like.yaml").to_dict()["core"]["compute"]


def test_stream_k_reads_what_the_waves_it_replaces_read() -> None:
    """2048^3: the last full wave and the tail (142 tiles) become 114 units; they read from DRAM what those two
    waves read (A and B once here), and write the same C."""
    tiles = ["core.compute.cta_tiles.dense=[[128,128,64]]", "core.compute.split_k.dense=[1]"]
    on = _run(tiles, size=2048)
    off = _run([*tiles, "core.compute.stream_k=null"], size=2048)
    assert on.tiling["stream_k"]["tiles"] == 142
    for tensor in ("a_values", "b", "c"):
        assert on.bytes["dram"][tensor] == pytest.approx(off.bytes["dram"][tensor], rel=1e-6), tensor
    assert on.cycles["total"] < off.cycles["total"]
