"""V:N:M and block sparsity through lowering, the engine and results: reasons, executed MACs, bytes per tensor,
the gather stage (busy, stall, binding, traces), load imbalance, systolic parts, and the other commands."""

from __future__ import annotations

import json
import math

import pytest
from conftest import HW

from accelsim import lower, run
from accelsim.engine import simulate
from accelsim.engine.structured import block_imbalance, coverage, expected_max_binomial
from accelsim.errors import ConfigError
from accelsim.formats.block import BlockSparsity
from accelsim.formats.vnm import VnmPattern
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.lowering import FALLBACK_REASONS, REASON_CODES
from accelsim.results import RunResult
from accelsim.workloads.model import workload_from_dict


def _gemm(sparsity: str, m: int = 1024, n: int = 4096, k: int = 1024, dtype: str = "fp16") -> object:
    return workload_from_dict({"name": "one", "dtype": dtype, "sparsity": sparsity,
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})


@pytest.fixture(scope="module")
def rtx3090() -> object:
    return load_hardware(HW / "rtx3090-like.yaml")


@pytest.fixture(scope="module")
def tpu() -> object:
    return load_hardware(HW / "tpu-like.yaml")


def test_new_reason_codes_sit_in_the_documented_order() -> None:
    order = list(REASON_CODES)
    assert order.index("no_sparse_support") < order.index("format_unsupported") < order.index("pattern_unsupported")
    assert order.index("dtype_unsupported") < order.index("block_shape_misaligned") < order.index(
        "shape_below_minimum")
    assert {"format_unsupported", "block_shape_misaligned"} <= set(FALLBACK_REASONS)


@pytest.mark.parametrize("hw_name, sparsity, dtype, path, executed, reason", [
    ("rtx3090-like.yaml", "64:2:8", "fp16", "sparse", "64:2:8", None),
    ("rtx3090-like.yaml", "64:1:8", "fp16", "sparse", "64:2:8", "pattern_promoted"),
    ("rtx3090-like.yaml", "64:3:8", "fp16", "dense", None, "pattern_unsupported"),  # N = 3 does not fit 2:4
    ("rtx3090-like.yaml", "48:2:8", "fp16", "dense", None, "block_shape_misaligned"),  # no CTA M tile divides 48
    ("rtx3090-like.yaml", "64:2:8", "int4", "dense", None, "pattern_unsupported"),  # int4 runs 4:8-paired only
    ("rtx3090-like.yaml", "64:2:8", "tf32", "dense", None, "dtype_unsupported"),
    ("h100-like.yaml", "32:2:8", "fp16", "dense", None, "block_shape_misaligned"),  # wgmma.sp: M tiles 64, 128
    ("tpu-like.yaml", "128:2:8", "fp16", "sparse", "128:2:8", None),
    ("tpu-like.yaml", "64:2:8", "fp16", "dense", None, "block_shape_misaligned"),  # a fold is 128 columns wide
    ("flex-nm.yaml", "64:2:8", "fp16", "dense", None, "format_unsupported"),
    ("edge-npu.yaml", "64:2:8", "int8", "dense", None, "format_unsupported"),
    ("rtx3090-like.yaml", "block32x32:75%", "fp16", "sparse", "block32x32:75%", None),
    ("rtx3090-like.yaml", "block32x32:75%", "tf32", "sparse", "block32x32:75%", None),  # dense tensor cores: any type
    ("rtx3090-like.yaml", "block8x32:75%", "fp16", "dense", None, "block_shape_misaligned"),
    ("tpu-like.yaml", "block8x8:75%", "fp16", "sparse", "block8x8:75%", None),
    ("flex-nm.yaml", "block32x32:75%", "fp16", "sparse", "block32x32:75%", None),
    ("scalesim-32x32-ws.yaml", "block32x32:75%", "fp16", "dense", None, "format_unsupported"),
])
def test_lowering_says_how_each_part_runs_the_formats(hw_name: str, sparsity: str, dtype: str, path: str,
                                                       executed: str | None, reason: str | None) -> None:
    (kern,) = lower(_gemm(sparsity, dtype=dtype), load_hardware(HW / hw_name))
    assert (kern.path, kern.pattern_executed, kern.reason) == (path, executed, reason)


def test_vnm_kernel_fields_and_padding(rtx3090: object) -> None:
    (kern,) = lower(_gemm("64:2:8", m=1000, k=770), rtx3090)
    assert (kern.keep_n, kern.group_m, kern.metadata_bits, kern.row_block, kern.col_select) == (2, 8, 2, 64, 4)
    assert kern.selection_bits == pytest.approx(4 * 3 / (64 * 2))
    assert kern.padding == {"m": [1000, 1024], "k": [770, 776]} and kern.reason == "k_padded"
    assert kern.macs_executed == 1000 * 4096 * 97 * 2  # N/M of the dense MACs, k padded to whole groups
    (blk,) = lower(_gemm("block32x32:75%", m=1000, k=770), rtx3090)
    assert (blk.keep_n, blk.group_m, blk.row_block, blk.col_block, blk.metadata_bits) == (1, 4, 32, 32, 32)
    assert blk.k_padded == 800 and blk.macs_executed == 1000 * 4096 * 200
    assert blk.cache_key() != kern.cache_key()


def test_vnm_on_2to4_tensor_cores_runs_the_gathered_k(rtx3090: object) -> None:
    """DESIGN: 128:2:8 on 1024 x 4096 x 1024: 4 of every 8 columns gathered -> a 2:4 GEMM over k_g = 512 at the
    2:4 rate; A's values N/M of dense, metadata 2 bits per value + 4 x 3-bit indices per 128 rows and group."""
    (kern,) = lower(_gemm("128:2:8"), rtx3090)
    res = simulate(kern, rtx3090, keep_tiles=False)
    assert res.macs_executed * 4 == res.macs
    assert res.tiling["gathered_k"] == 512 and res.tiling["cta_tile"][0] == 128 and res.tiling["runs_on"] == "2:4"
    dram = res.bytes["dram"]
    assert dram["a_values"] == 1024 * 1024 // 4 * 2
    assert dram["a_metadata"] == pytest.approx(VnmPattern(128, 2, 8).metadata_bytes(1024, 1024), rel=0.01)
    assert "gather" in res.busy and "stall_gather" in res.cycles
    assert res.counts["gather_rows"] == 1024 * 4096 // (128 * 64) * 512  # every CTA gathers k_g rows of B
    comp = rtx3090.core.compute
    ideal = 1024 * 4096 * 512 / (comp.macs_per_cycle["fp16"] * comp.efficiency.sparse * 2 * rtx3090.cores)
    assert res.cycles["compute"] >= ideal  # one core's 2:4 MMAs on the gathered k, waves rounded up
    slow = hardware_from_dict({**rtx3090.to_dict(), "core": {**rtx3090.to_dict()["core"], "sparse": {
        **rtx3090.to_dict()["core"]["sparse"], "vnm": {**rtx3090.to_dict()["core"]["sparse"]["vnm"],
                                                        "gather_rows_per_cycle": 0.01}}}})
    res_slow = simulate(kern, slow, keep_tiles=False)
    assert res_slow.binding == "gather" and res_slow.busy["gather"] > res_slow.busy["compute"]
    assert res_slow.cycles["stall_gather"] > 0 and res_slow.cycles["total"] > res.cycles["total"]
    parts = ("compute", "stall_memory", "stall_decode", "stall_gather", "launch")
    assert sum(res_slow.cycles[p] for p in parts) == res_slow.cycles["total"]


def test_b_coverage_is_the_rows_some_selection_uses() -> None:
    assert coverage(4 / 100, 1) == pytest.approx(0.04)
    assert coverage(4 / 100, 6) == pytest.approx(1 - 0.96 ** 6)
    assert coverage(0.5, 64) == pytest.approx(1.0)


def test_expected_max_of_binomials_by_hand() -> None:
    """Two Binomial(2, 1/2): P(0, 1, 2) = 1/4, 1/2, 1/4; E[max] = (1 - (1/4)^2) + (1 - (3/4)^2) = 1.375."""
    assert expected_max_binomial(2, 0.5, 2) == pytest.approx(1.375)
    assert expected_max_binomial(24, 0.25, 1) == pytest.approx(6.0)
    assert block_imbalance(2, 0.5, 2, None) == pytest.approx(1.375)
    assert block_imbalance(24, 0.25, 1, None) == pytest.approx(1.0)
    assert block_imbalance(24, 0.25, 4, 1.5) == 1.5  # the configured value wins
    assert 1.0 < block_imbalance(96, 0.1, 8, None) < block_imbalance(96, 0.1, 16, None)


def test_block_runs_dense_tiles_over_nonzero_blocks(rtx3090: object) -> None:
    (kern,) = lower(_gemm("block64x64:75%", m=2048, n=2048, k=2048), rtx3090)
    res = simulate(kern, rtx3090, keep_tiles=False)
    dense = simulate(kern.as_dense(), rtx3090, keep_tiles=False)
    fmt = BlockSparsity(64, 64, 7500)
    assert res.macs_executed * 4 == res.macs and res.tiling["cta_tile"][0] == 64  # one block row per CTA (default)
    assert res.tiling["block_rows_per_cta"] == 1 and res.tiling["imbalance"] == 1.0
    assert res.bytes["dram"]["a_values"] + res.bytes["dram"]["a_metadata"] == pytest.approx(
        fmt.value_bytes(2048, 2048, 2) + fmt.metadata_bytes(2048, 2048), rel=1e-3)
    assert res.counts["decode_groups"] == 0 and "gather" in res.busy
    assert 2.0 < dense.cycles["total"] / res.cycles["total"] < 4.0
    lib = load_hardware(HW / "rtx3090-like.yaml", ["core.sparse.block.cta_m=library"])
    (small,) = lower(_gemm("block16x16:75%", m=2048, n=2048, k=2048), lib)
    res_lib = simulate(small, lib, keep_tiles=False)
    r = res_lib.tiling["block_rows_per_cta"]
    assert r == res_lib.tiling["cta_tile"][0] // 16
    assert res_lib.tiling["imbalance"] == pytest.approx(block_imbalance(128, 0.25, r, None), rel=1e-5)


def test_systolic_parts_gather_and_pack_block_columns(tpu: object) -> None:
    (kern,) = lower(_gemm("128:2:8", m=1024, n=512, k=2048), tpu)
    res = simulate(kern, tpu, keep_tiles=True)
    assert res.path == "sparse" and "gather" in res.busy and res.tiles is not None
    assert res.tiles["gather_rows"].sum() == res.counts["gather_rows"] > 0
    dense = simulate(kern.as_dense(), tpu, keep_tiles=False)
    assert res.cycles["total"] < dense.cycles["total"] / 2
    (blk,) = lower(_gemm("block32x32:75%", m=1024, n=512, k=2048), tpu)
    bres = simulate(blk, tpu, keep_tiles=False)
    union = 1 - 0.75 ** (128 / 32)  # a 128-wide fold covers 4 block rows: the union of their block columns
    assert bres.tiling["union_share"] == pytest.approx(round(64 * union) / 64)
    assert bres.counts["decode_groups"] == 0 and bres.bytes["dram"]["a_metadata"] > 0


def test_results_traces_and_json_show_the_stage(rtx3090: object, tmp_path: object) -> None:
    res = run(_gemm("64:2:8", m=512, n=512, k=512), rtx3090, keep_tiles=True)
    layer = res.layers[0]
    assert layer.busy["gather"] >= 0 and "stall_gather" in res.totals["cycles"]
    back = RunResult.from_json(res.to_json())
    assert back == res and back.layers[0].busy == layer.busy
    dense = run(_gemm("dense", m=512, n=512, k=512), rtx3090)
    assert "gather" not in dense.layers[0].busy and "stall_gather" not in dense.totals["cycles"]
    from accelsim.report.trace import stream_trace
    path = tmp_path / "t.json"  # type: ignore[operator]
    with open(path, "w") as f:
        stream_trace(res, rtx3090, f)
    events = json.loads(path.read_text())["traceEvents"]
    gathers = [e for e in events if e.get("cat") == "gather"]
    assert gathers and all(e["args"]["rows"] > 0 for e in gathers)


def test_config_rules_for_the_sections(rtx3090: object) -> None:
    data = rtx3090.to_dict()
    data["core"]["sparse"]["vnm"]["runs_on"] = "1:4"
    with pytest.raises(ConfigError, match=r"core.sparse.vnm.runs_on: '1:4' is not one of core.sparse.patterns"):
        hardware_from_dict(data)
    data = rtx3090.to_dict()
    data["core"]["sparse"]["patterns"]["64:2:8"] = {}
    with pytest.raises(ConfigError, match="'64:2:8' is a V:N:M pattern, not a native one: say how the part runs "
                                          "V:N:M under core.sparse.vnm"):
        hardware_from_dict(data)
    plain = load_hardware(HW / "edge-npu.yaml").to_dict()["core"]["sparse"]
    assert "vnm" not in plain and "block" not in plain  # absent sections stay out of the echo
    assert math.isfinite(rtx3090.core.sparse.vnm.gather_rows_per_cycle)


def test_sweep_spec_and_regress_take_the_spellings(tmp_path: object) -> None:
    from accelsim.sweep.spec import spec_from_dict
    spec = spec_from_dict({"name": "f", "hardware": str(HW / "rtx3090-like.yaml"),
                           "workloads": [str(HW.parent / "workloads" / "gemm-microbench.yaml")],
                           "sparsity": ["dense", "64:2:8", "block32x32:75%"],
                           "grid": {"core.sparse.vnm.gather_rows_per_cycle": [1, 4]}})
    assert [str(s) for s in spec.sparsity] == ["dense", "64:2:8", "block32x32:75%"]


@pytest.mark.parametrize("spelling, problem", [
    ("64:5:8", "N must be between 1 and 4 in '64:5:8'"),
    ("block32x32:75", "expected a block pattern like \"block32x32:75%\""),
])
def test_the_cli_refuses_a_bad_spelling_in_one_line(capsys: pytest.CaptureFixture[str], spelling: str,
                                                      problem: str) -> None:
    from accelsim.cli import main
    code = main(["run", "--hw", str(HW / "tpu-like.yaml"), "--workload",
                 str(HW.parent / "workloads" / "gemm-microbench.yaml"), "--sparsity", spelling])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and problem in err[0]


def test_block_macs_cost_the_dense_datapath_energy(rtx3090: object) -> None:
    res = run(_gemm("block64x64:75%", m=512, n=512, k=512), rtx3090)
    layer = res.layers[0]
    spec = rtx3090.energy
    assert layer.energy["by_component_j"]["mac"] == pytest.approx(layer.macs_executed * spec.mac_pj["fp16"] * 1e-12)
    vnm = run(_gemm("64:2:8", m=512, n=512, k=512), rtx3090).layers[0]
    assert vnm.energy["by_component_j"]["mac"] == pytest.approx(vnm.macs_executed * spec.sparse_mac_pj["fp16"] * 1e-12)


def test_vnm_tiles_must_be_whole_sparse_mma_tiles() -> None:
    data = load_hardware(HW / "h100-like.yaml").to_dict()
    data["core"]["sparse"]["vnm"]["cta_tiles"] = [[32, 64, 32]]  # wgmma.sp is m64
    with pytest.raises(ConfigError, match=r"core.sparse.vnm.cta_tiles\[0\]: CTA tile \[32, 64, 32\] is not a multiple "
                                          r"of the sparse MMA tile \[64, 8, 32\]"):
        hardware_from_dict(data)
