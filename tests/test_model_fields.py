"""Modelling assumptions that were literals in the engine, now named config fields: each defaults to the old
constant (goldens unchanged, left out of the resolved config), moves its number the way the physics says when
set, is echoed when set, and is refused out of range or where it would be silently ignored."""

from __future__ import annotations

import pytest
from conftest import HW, cli, one_line_error

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


# -- defaults: the old constants, out of the resolved config ----------------------------------------------------

def test_defaults_are_the_old_constants_and_stay_out_of_the_echo() -> None:
    hw = A100
    assert (hw.vector.chunk_bytes, hw.vector.max_chunks, hw.vector.stages) == (65536, 64, 2)
    assert hw.core.compute.accumulator_bytes == 4  # type: ignore[union-attr]
    att = hw.attention
    assert (att.split_kv_occupancy, att.split_kv_tolerance, att.split_kv_max_splits) == (0.8, 0.85, 128)
    assert (att.partial_bytes, att.combine_ops_per_element) == (4, 2.0)
    assert hw.launch_overhead_cycles.attention is None
    assert hw.launch_overhead_cycles.fused_attention() == hw.launch_overhead_cycles.dense
    echo = hw.to_dict()
    for section, keys in (("vector", ("chunk_bytes", "max_chunks", "stages")),
                          ("attention", ("split_kv_occupancy", "split_kv_tolerance", "split_kv_max_splits",
                                         "partial_bytes", "combine_ops_per_element")),
                          ("launch_overhead_cycles", ("attention",))):
        assert not set(keys) & set(echo[section]), section
    assert "accumulator_bytes" not in echo["core"]["compute"]


@pytest.mark.parametrize("item", ["vector.stages=4", "vector.chunk_bytes=131072", "vector.max_chunks=8",
                                  "core.compute.accumulator_bytes=2", "attention.partial_bytes=2",
                                  "attention.split_kv_occupancy=0.5", "attention.split_kv_tolerance=0.9",
                                  "attention.split_kv_max_splits=4", "attention.combine_ops_per_element=3",
                                  "launch_overhead_cycles.attention=100"])
def test_a_set_field_is_echoed_and_changes_the_hash(item: str) -> None:
    hw = load_hardware(HW / "a100-like.yaml", [item])
    keys, _, value = item.partition("=")
    node = hw.to_dict()
    for key in keys.split("."):
        node = node[key]
    assert float(node) == float(value)
    assert hw.config_hash() != A100.config_hash()


# -- vector streaming -----------------------------------------------------------------------------------------------

def test_deeper_vector_streaming_hides_dram_latency() -> None:
    """A 4 MiB GELU on a100-like: 64 chunks of 64 KiB, one in flight, pays the DRAM latency per chunk (about 15 %
    of the DRAM bandwidth); 4 in flight hide most of it. The bytes do not move."""
    two, hw = _run([], GELU)
    four, _ = _run(["vector.stages=4"], GELU)
    assert two.tiling["tiles"] == four.tiling["tiles"] == 64
    assert four.bytes["dram"] == two.bytes["dram"]
    assert four.cycles["total"] < 0.7 * two.cycles["total"]
    share = sum(two.bytes["dram"].values()) / two.cycles["total"] / hw.dram_bytes_per_cycle()
    assert 0.1 < share < 0.2  # the audit's finding: a large GELU far from the DRAM roofline at the default


def test_vector_chunk_size_and_count_set_the_chunks() -> None:
    base, _ = _run([], GELU)
    big, _ = _run(["vector.chunk_bytes=1048576"], GELU)
    few, _ = _run(["vector.max_chunks=8"], GELU)
    assert big.tiling["tiles"] == 4 and few.tiling["tiles"] == 8  # 4 MiB / 1 MiB; the cap
    assert big.cycles["total"] < base.cycles["total"] and few.cycles["total"] < base.cycles["total"]  # fewer latencies
    small, _ = _run(["vector.chunk_bytes=1048576"], {**GELU, "elements": 1024})
    assert small.tiling["tiles"] == 1


def test_vector_fields_move_a_whole_model() -> None:
    """bert-base batch 8 on a100-like: its norms, GELUs and adds stream faster 4 deep (the audit measured -18 %)."""
    wl = load_workload(ROOT / "workloads" / "bert-base.yaml", {"batch": 8})

    def total(hw) -> int:
        return sum(simulate(k, hw, keep_tiles=False).cycles["total"] for k in lower(wl, hw, "dense"))

    deep = total(load_hardware(HW / "a100-like.yaml", ["vector.stages=4"]))
    assert deep < 0.9 * total(A100)


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


# -- refusals -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("item", "message"), [
    ("vector.stages=0", "vector.stages: should be greater than 0"),
    ("vector.chunk_bytes=0", "vector.chunk_bytes: should be greater than 0"),
    ("vector.max_chunks=100000", "vector.max_chunks: should be less than or equal to 65536"),
    ("core.compute.accumulator_bytes=32", "core.compute.accumulator_bytes: should be less than or equal to 16"),
    ("attention.split_kv_occupancy=1.5", "attention.split_kv_occupancy: should be less than or equal to 1"),
    ("attention.split_kv_tolerance=0", "attention.split_kv_tolerance: should be greater than 0"),
    ("attention.split_kv_max_splits=0", "attention.split_kv_max_splits: should be greater than 0"),
    ("attention.partial_bytes=0", "attention.partial_bytes: should be greater than 0"),
    ("attention.combine_ops_per_element=-1", "attention.combine_ops_per_element: should be greater than 0"),
    ("launch_overhead_cycles.attention=-1", "launch_overhead_cycles.attention: "),
])
def test_a_bad_value_is_one_line_naming_the_key(capsys, item: str, message: str) -> None:
    code, _, err = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", ROOT / "workloads" /
                       "gemm-microbench.yaml", "--hw-set", item)
    assert code == 2
    line = one_line_error(err)
    assert message in line and "a100-like.yaml" in line


# -- double buffering vs stages -----------------------------------------------------------------------------

def test_double_buffered_false_contradicting_stages_is_a_one_line_error(capsys) -> None:
    """Every GPU family sets core.sram.stages, which sets the pipeline depth: double_buffered=false used to move
    no number and say nothing."""
    code, _, err = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", ROOT / "workloads" /
                       "gemm-microbench.yaml", "--hw-set", "core.sram.double_buffered=false")
    assert code == 2
    line = one_line_error(err)
    assert "a100-like.yaml: core.sram.double_buffered: false contradicts core.sram.stages: 4 (stages sets the " \
           "pipeline depth; give stages: 1 for no double buffering)" in line
    assert "--hw-set core.sram.double_buffered=false" in line


def test_consistent_buffering_settings_load() -> None:
    one = load_hardware(HW / "a100-like.yaml", ["core.sram.double_buffered=false", "core.sram.stages=1"])
    assert one.core.sram.n_stages() == 1
    assert load_hardware(HW / "tpu-like.yaml", ["core.sram.double_buffered=false"]).core.sram.n_stages() == 1
    assert load_hardware(HW / "a100-like.yaml", ["core.sram.stages=1"]).core.sram.n_stages() == 1


def test_no_shipped_config_contradicts_itself() -> None:
    for path in sorted(HW.glob("*.yaml")):
        sram = load_hardware(path).core.sram
        assert sram.double_buffered or sram.stages in (None, 1), path.name


# -- im2col on tensor_core parts ---------------------------------------------------------------------------------

CONV = {"name": "c", "op": "conv2d", "ifmap": [56, 56], "kernel": [3, 3], "channels": 64, "filters": 64,
        "stride": 1, "padding": 1, "batch": 8}


@pytest.mark.parametrize("config", ["a100-like.yaml", "h100-like.yaml", "rtx4090-like.yaml"])
def test_tensor_core_honours_im2col(config: str) -> None:
    """core.sram.im2col was echoed but ignored on tensor_core parts (B always the k x n im2col matrix in DRAM).
    on_chip (implicit GEMM, the default): B's DRAM bytes are the ifmap's, once; in_dram: the expanded matrix.
    The SRAM side is the expanded tiles either way."""
    on, hw = _run([], CONV, config)
    off, _ = _run(["core.sram.im2col=in_dram"], CONV, config)
    kernel = _kernel(hw, CONV)
    assert kernel.b_unique == 56 * 56 * 64 * 8 < kernel.k * kernel.n
    assert off.bytes["dram"]["b"] == kernel.k * kernel.n * 2 * off.tiling["dram_reread"]["b"]
    assert on.bytes["dram"]["b"] == pytest.approx(kernel.b_unique * 2 * on.tiling["dram_reread"]["b"], rel=1e-9)
    assert on.tiling["dram_reread"]["b"] >= 1.0  # every ifmap element at least once
    assert on.bytes["dram"]["b"] < off.bytes["dram"]["b"] and on.cycles["total"] <= off.cycles["total"]
    assert on.bytes["sram"] == off.bytes["sram"]
    gemm, _ = _run([], SPLIT_K, config)  # a GEMM's B has no duplicates: the setting moves nothing
    assert _run(["core.sram.im2col=in_dram"], SPLIT_K, config)[0].cycles == gemm.cycles
