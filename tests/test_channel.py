"""channel:P% (issue 18): whole output rows pruned, run as a smaller dense GEMM on every compute kind."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from conftest import HW

from accelsim import lower, run
from accelsim.analysis.functional_check import execute_compressed, functional_check
from accelsim.engine import simulate
from accelsim.errors import FunctionalError
from accelsim.formats import normalize_format, parse_format
from accelsim.formats.channel import ChannelPruning
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.lowering import Kernel
from accelsim.workloads.model import workload_from_dict


def _gemm(sparsity: str, m: int, n: int, k: int, op: str = "gemm") -> object:
    layer = {"name": "g", "op": op, "m": m, "n": n, "k": k} | ({"batch": 2} if op == "matmul" else {})
    return workload_from_dict({"name": "one", "dtype": "fp16", "sparsity": sparsity, "layers": [layer]})


@pytest.mark.parametrize("text, canonical", [
    ("channel:50%", "channel:50%"), (" Channel : 37.50 % ", "channel:37.5%"), ("CHANNEL:0.25%", "channel:0.25%"),
    ("channel:99.9999%", "channel:99.9999%")])
def test_spellings_round_trip(text: str, canonical: str) -> None:
    fmt = parse_format(text)
    assert isinstance(fmt, ChannelPruning) and str(fmt) == canonical and parse_format(canonical) == fmt
    assert normalize_format(text) == canonical


def test_zero_percent_is_dense() -> None:
    assert parse_format("channel:0%") is None and normalize_format("channel:0.0%") == "dense"


@pytest.mark.parametrize("text, message", [
    ("channel:150%", "sparsity 150% in 'channel:150%' must be below 100% (the share of zeros; 100% keeps nothing)"),
    ("channel:100%", "sparsity 100% in 'channel:100%' must be below 100%"),
    ("channel:abc", "expected channel:P% with P the percentage of zeros (e.g. \"channel:50%\"), got 'channel:abc'"),
    ("channel:-5%", "got 'channel:-5%'"), ("channel:50", "got 'channel:50'"), ("channel50%", "got 'channel50%'"),
    ("channel:1.123456%", "sparsity 1.123456% in 'channel:1.123456%' has more than 4 decimals"),
])
def test_bad_spellings_say_what_is_wrong_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_format(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_rows_kept_rounding_rule() -> None:
    """DESIGN: floor(m x P / 100) rows pruned (never more than asked), at least one kept; exact decimals."""
    half = ChannelPruning(Fraction(50))
    assert [half.rows_kept(m) for m in (768, 37, 3, 2, 1)] == [384, 19, 2, 1, 1]
    assert ChannelPruning(Fraction("33.3")).rows_kept(1000) == 667  # 333.0 pruned exactly, no float shortfall
    assert ChannelPruning(Fraction("99.9")).rows_kept(10) == 1
    assert half.density == 0.5 and half.dense_speedup == 2.0 and half.keep == half.group == 1
    assert half.value_bytes(37, 10, 2) == 19 * 10 * 2 and half.metadata_bytes(37, 10) == 0
    assert half.contains(ChannelPruning(Fraction(75))) and not half.contains(ChannelPruning(Fraction(25)))
    assert not half.contains(parse_format("2:4"))  # type: ignore[arg-type]


@pytest.mark.parametrize("hw_name", ["tpu-like.yaml", "a100-like.yaml", "flex-nm.yaml"])
def test_lowers_to_a_smaller_dense_gemm_on_every_kind(hw_name: str) -> None:
    hw = load_hardware(HW / hw_name)
    (kern,) = lower(_gemm("channel:50%", 1024, 512, 2048), hw)
    assert (kern.path, kern.pattern_executed, kern.reason, kern.rows_kept, kern.compute_on) == \
        ("sparse", "channel:50%", None, 512, "dense")
    assert (kern.keep_n, kern.group_m, kern.metadata_bits, kern.padding) == (1, 1, 0, {})
    assert kern.macs_executed * 2 == kern.macs and kern.as_dense().m_exec == 1024 and kern.as_dense().rows_kept == 0


def test_runs_without_a_sparse_datapath_and_keeps_the_op_rules() -> None:
    data = load_hardware(HW / "tpu-like.yaml").to_dict()
    data["core"]["sparse"] = None
    bare = hardware_from_dict(data, "<no sparse>")
    (kern,) = lower(_gemm("channel:50%", 256, 64, 256), bare)
    assert kern.path == "sparse" and kern.rows_kept == 128
    (mm,) = lower(_gemm("channel:50%", 64, 64, 64, op="matmul"), bare)
    assert (mm.path, mm.reason) == ("dense", "activation_operands")
    conv = workload_from_dict({"name": "c", "sparsity": "channel:50%", "layers": [
        {"name": "dw", "op": "conv2d", "ifmap": [8, 8], "channels": 16, "filters": 16, "kernel": [3, 3],
         "groups": 16}]})
    assert lower(conv, bare)[0].reason == "op_no_sparse_kernel"


@pytest.mark.parametrize("hw_name", ["tpu-like.yaml", "a100-like.yaml"])
def test_times_as_the_dense_gemm_of_the_kept_rows(hw_name: str) -> None:
    """The engine runs exactly the dense kernel of rows_kept rows: same cycles, bytes and tiling."""
    hw = load_hardware(HW / hw_name)
    (kern,) = lower(_gemm("channel:50%", 1024, 512, 2048), hw)
    small = Kernel("g", "gemm", 512, 512, 2048, "fp16", 2, "dense", None, None, None)
    got, want = simulate(kern, hw, keep_tiles=False), simulate(small, hw, keep_tiles=False)
    assert got.cycles == want.cycles and got.bytes == want.bytes and got.busy == want.busy
    assert got.shape == {"m": 1024, "n": 512, "k": 2048} and got.macs == 2 * got.macs_executed
    assert got.tiling["rows_kept"] == 512 and got.tiling["downstream_input"] == "not_shrunk"
    assert {k: v for k, v in got.tiling.items() if k not in ("rows_kept", "downstream_input", "compute_on")} == \
        want.tiling


@pytest.mark.parametrize("hw_name, low, high", [("tpu-like.yaml", 1.9, 2.0), ("a100-like.yaml", 1.8, 2.05)])
def test_compute_bound_gemm_gains_near_two_at_half_the_rows(hw_name: str, low: float, high: float) -> None:
    hw = load_hardware(HW / hw_name)
    res = run(_gemm("channel:50%", 4096, 4096, 4096), hw)
    layer = res.layers[0]
    dense = run(_gemm("dense", 4096, 4096, 4096), hw).layers[0]
    assert dense.binding == "compute" and low <= layer.speedup_vs_dense <= high
    # the half-height GEMM may pick a tile whose memory and compute busy times are level (a100-like: 64 x 64),
    # but it barely waits on memory
    assert layer.cycles["stall_memory"] < 0.1 * layer.cycles["total"]
    assert layer.dense_cycles == dense.cycles["total"]


def test_bytes_footprint_and_the_named_assumption() -> None:
    hw = load_hardware(HW / "tpu-like.yaml")
    m, n, k = 768, 64, 3072
    res = run(_gemm("channel:50%", m, n, k), hw)
    layer = res.layers[0]
    assert layer.bytes["dram"]["a_values"] == 384 * k * 2 and layer.bytes["dram"]["a_metadata"] == 0
    assert layer.bytes["dram"]["c"] == 384 * n * 2  # only the kept rows of C are written
    fp = res.footprint
    assert (fp["weights_dense_bytes"], fp["weights_deployed_bytes"], fp["weights_metadata_bytes"]) == \
        (m * k * 2, 384 * k * 2, 0)
    assert any("downstream_input: not_shrunk" in w for w in res.warnings)
    back = type(res).from_json(res.to_json())
    assert back == res and back.layers[0].tiling["downstream_input"] == "not_shrunk"


@pytest.mark.parametrize("tiling", [None, "a100-like.yaml", "tpu-like.yaml", (5, 3, 7)])
@pytest.mark.parametrize("dtype", ["fp16", "int8"])
def test_functional_check_on_odd_shapes(tiling: object, dtype: str) -> None:
    where = HW / tiling if isinstance(tiling, str) else tiling
    out = functional_check(37, 13, 45, "channel:50%", seed=5, dtype=dtype, tiling=where)
    e = 2 if dtype == "fp16" else 1
    assert out.passed and out.exercised and out.pattern_executed == "channel:50%" and out.max_abs_error == 0
    assert (out.value_bytes, out.metadata_bytes, out.dense_bytes) == (19 * 45 * e, 0, 37 * 45 * e)
    assert out.to_dict()["padding"] == {} and out.k_padded == 45


def test_prune_keeps_rows_by_l2_norm_and_compress_checks_the_mask() -> None:
    fmt = ChannelPruning(Fraction(50))
    a = np.array([[1.0, 1.0], [3.0, 0.0], [0.0, -2.0], [0.5, 0.5], [2.0, 2.0]])
    pruned, mask = fmt.prune(a)  # norms 1.41, 3, 2, 0.71, 2.83: keep 3 of 5 (floor(2.5) = 2 pruned)
    assert mask[:, 0].tolist() == [False, True, True, False, True]
    c = fmt.compress(pruned, mask)
    assert c.row_index.tolist() == [1, 2, 4] and c.rows == 5 and c.rows_kept == 3 and c.metadata_bytes == 0
    np.testing.assert_array_equal(c.dense(), pruned)
    b = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(execute_compressed(c, b, 2, 1, 2), pruned @ b)
    partial = mask.copy()
    partial[1, 1] = False
    with pytest.raises(FunctionalError, match="row 1 of the mask is partly pruned; channel:50% drops whole rows"):
        fmt.compress(a, partial)
    with pytest.raises(FunctionalError, match="the mask keeps 5 of 5 rows; channel:50% keeps at most 3"):
        fmt.compress(a, None)
    filled = fmt.compress(a * [[1], [0], [0], [0], [1]], None)  # 2 rows kept: the lowest pruned row fills
    assert filled.row_index.tolist() == [0, 1, 4] and not filled.values[1].any()


def test_kernel_fields_are_part_of_the_cache_key() -> None:
    hw = load_hardware(HW / "a100-like.yaml")
    (kern,) = lower(_gemm("channel:50%", 1024, 512, 2048), hw)
    assert kern.cache_key() != replace(kern, rows_kept=0).cache_key()
