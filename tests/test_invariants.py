"""Physical invariants of the engine, on every shipped hardware config."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml
from conftest import HW, WL

from accelsim import load_hardware, load_workload, lower, run
from accelsim.hardware.model import hardware_from_dict
from accelsim.workloads.model import workload_from_dict

SYSTOLIC = sorted(p.name for p in HW.glob("*.yaml")  # system files (8xh100-like...) name a device: no core
                  if yaml.safe_load(p.read_text()).get("core", {}).get("compute", {}).get("kind") == "systolic")
MICRO = load_workload(WL / "gemm-microbench.yaml")
RESNET = load_workload(WL / "resnet18.yaml")


def _hw_dict(name: str) -> dict:
    return yaml.safe_load((HW / name).read_text())


def _gemm(m: int, n: int, k: int, sparsity: str | None = None) -> object:
    layer = {"name": "g", "op": "gemm", "m": m, "n": n, "k": k}
    if sparsity:
        layer["sparsity"] = sparsity
    return workload_from_dict({"name": "one", "dtype": "fp16", "layers": [layer]})


@pytest.mark.parametrize("hw_name", SYSTOLIC)
@pytest.mark.parametrize("sparsity", ["dense", "2:4"])
def test_cycles_bytes_and_tiles_are_consistent(hw_name: str, sparsity: str) -> None:
    hw = load_hardware(HW / hw_name)
    pes = hw.core.compute.rows * hw.core.compute.cols
    for model in (MICRO, RESNET):
        res = run(model, hw, sparsity, keep_tiles=True)
        for lay, kern in zip(res.layers, lower(model, hw, sparsity), strict=True):
            c = lay.cycles
            assert c["total"] == c["compute"] + c["stall_memory"] + c["stall_decode"] + c["launch"]
            # roofline: the array cannot do more than rows*cols MACs per cycle
            assert c["compute"] >= lay.macs_executed / pes
            assert c["total"] >= lay.macs_executed / pes
            # compulsory traffic: A (compressed + metadata) once, B once, C once
            m, n, k = lay.shape["m"], lay.shape["n"], lay.shape["k"]
            d = lay.bytes["dram"]
            if lay.path == "sparse":
                keep, group = map(int, lay.pattern_executed.split(":"))
                kept = m * (-(-k // group) * keep)
                assert d["a_values"] >= kept * 2
                assert d["a_metadata"] >= kept * 2 / 8
            else:
                assert d["a_values"] >= m * k * 2 and d["a_metadata"] == 0
            # convs read the ifmap once (im2col expands it on chip): B's compulsory bytes
            assert d["b"] >= kern.b_elements * 2 - 1
            assert lay.bytes["sram"]["b"] >= k * n * 2
            assert d["c"] >= m * n * 2
            # per-tile records add up to the layer's totals
            t = lay.tiles
            assert t["compute_cycles"].sum() == c["compute"]
            assert round(t["stall_decode"].sum()) == c["stall_decode"]
            assert abs(t["stall_memory"].sum() + (max(t["compute_end"].max(), t["wb_end"].max())
                                                  - t["compute_end"].max()) - c["stall_memory"]) <= 1
            assert abs(t["dram_a_values"].sum() - d["a_values"]) < 1
            assert abs(t["dram_c_read"].sum() + t["dram_c_write"].sum() - d["c"]) < 1
            assert abs(t["sram_b"].sum() - lay.bytes["sram"]["b"]) < 1
            # stages never overlap on a track and respect data dependencies
            assert np.all(t["compute_start"][1:] >= t["compute_end"][:-1] - 1e-9)
            assert np.all(t["compute_start"] >= t["load_end"] - 1e-9)
            assert np.all(t["wb_start"] >= t["compute_end"] - 1e-9)


def test_m_to_m_pattern_equals_dense() -> None:
    hw = load_hardware(HW / "flex-nm.yaml")
    for pat in ("4:4", "8:8", "dense"):
        a = run(_gemm(512, 384, 1000, pat), hw).body()
        b = run(_gemm(512, 384, 1000), hw).body()
        assert a["layers"][0]["cycles"] == b["layers"][0]["cycles"]
        assert a["layers"][0]["bytes"] == b["layers"][0]["bytes"]
        assert a["layers"][0]["path"] == "dense" and a["layers"][0]["pattern_executed"] is None
        assert a["layers"][0]["speedup_vs_dense"] == 1.0


def test_bandwidth_starved_config_is_memory_bound() -> None:
    data = _hw_dict("tpu-like.yaml")
    data["dram"]["bandwidth_gb_s"] = 2.0
    res = run(_gemm(1024, 1024, 1024), hardware_from_dict(data)).layers[0]
    assert res.binding == "memory"
    assert res.cycles["stall_memory"] > 0.5 * res.cycles["total"]
    moved = sum(res.bytes["dram"].values())
    assert res.cycles["total"] >= moved / (2.0 / 0.94)  # cannot beat the bandwidth


def test_no_sparse_datapath_runs_dense_with_reason() -> None:
    data = _hw_dict("tpu-like.yaml")
    del data["core"]["sparse"]
    hw = hardware_from_dict(data)
    lay = run(_gemm(256, 256, 256, "2:4"), hw).layers[0]
    assert (lay.path, lay.reason, lay.pattern_requested, lay.pattern_executed) == \
        ("dense", "no_sparse_support", "2:4", None)
    assert lay.speedup_vs_dense == 1.0


def test_pattern_promotion_and_fallback_on_2to4_engine() -> None:
    hw = load_hardware(HW / "tpu-like.yaml")
    promoted = run(_gemm(256, 256, 256, "1:4"), hw).layers[0]
    assert (promoted.path, promoted.pattern_executed, promoted.reason) == ("sparse", "2:4", "pattern_promoted")
    fallback = run(_gemm(256, 256, 256, "4:8"), hw).layers[0]
    assert (fallback.path, fallback.pattern_executed, fallback.reason) == ("dense", None, "pattern_unsupported")
    flex = load_hardware(HW / "flex-nm.yaml")
    for pat in ("1:4", "2:4", "4:8", "2:8"):
        lay = run(_gemm(256, 256, 256, pat), flex).layers[0]
        assert (lay.path, lay.pattern_executed, lay.reason) == ("sparse", pat, None)


def test_k_not_multiple_of_m_is_padded_and_says_so() -> None:
    lay = run(_gemm(128, 128, 1001, "2:4"), load_hardware(HW / "tpu-like.yaml")).layers[0]
    assert lay.path == "sparse" and lay.reason == "k_padded" and lay.padding == {"k": [1001, 1004]}


def test_decode_starved_config_is_decode_bound() -> None:
    data = _hw_dict("tpu-like.yaml")
    data["core"]["sparse"]["decode_groups_per_cycle"] = 0.5
    lay = run(_gemm(1024, 1024, 1024, "2:4"), hardware_from_dict(data), keep_tiles=True).layers[0]
    assert lay.binding == "decode"
    assert lay.cycles["stall_decode"] > 0.5 * lay.cycles["total"]
    groups = 1024 * 1024 // 4
    assert lay.cycles["total"] >= groups / 0.5
    assert lay.speedup_vs_dense < 1.0  # decode makes 2:4 slower than dense here


def test_ideal_sparse_compute_bound_gemm_halves_cycles() -> None:
    data = _hw_dict("tpu-like.yaml")
    data["dram"]["bandwidth_gb_s"] = "unlimited"
    data["core"]["sram"]["bandwidth_bytes_per_cycle"] = "unlimited"
    data["core"]["sparse"]["decode_groups_per_cycle"] = "unlimited"
    data["core"]["sparse"]["decode_latency_cycles"] = 0
    hw = hardware_from_dict(data)
    lay = run(_gemm(4096, 4096, 4096, "2:4"), hw).layers[0]
    assert 1.9 < lay.speedup_vs_dense <= 2.0


def test_more_bandwidth_never_slower() -> None:
    base = _hw_dict("edge-npu.yaml")
    prev = None
    for bw in (1, 4, 16, 64, 256, "unlimited"):
        d = copy.deepcopy(base)
        d["dram"]["bandwidth_gb_s"] = bw
        total = run(RESNET, hardware_from_dict(d), "2:4").total_cycles
        if prev is not None:
            assert total <= prev
        prev = total


def test_same_inputs_give_identical_bodies() -> None:
    hw = load_hardware(HW / "tpu-like.yaml")
    a = json.dumps(run(RESNET, hw, "2:4").body(), sort_keys=True)
    b = json.dumps(run(RESNET, hw, "2:4").body(), sort_keys=True)
    assert a == b


def test_speedup_vs_dense_is_dense_total_over_total() -> None:
    hw = load_hardware(HW / "tpu-like.yaml")
    sparse = run(MICRO, hw, "2:4")
    dense = run(MICRO, hw, "dense")
    for s, d in zip(sparse.layers, dense.layers, strict=True):
        assert s.speedup_vs_dense == pytest.approx(d.cycles["total"] / s.cycles["total"])
    assert sparse.totals["dense_total_cycles"] == dense.total_cycles


def test_run_table_explains_weights_re_read_and_partial_sums_spilled() -> None:
    """A wider array that is slower (edge-npu 16x128 vs 16x64 at 50 GB/s on ResNet-50) says why in the table."""
    from accelsim.analysis.explain import traffic_notes
    from accelsim.cli import format_table

    wl = load_workload(WL / "resnet50.yaml")
    by_cols = {}
    for cols in (64, 128):
        hw = load_hardware(HW / "edge-npu.yaml", [f"core.compute.cols={cols}", "core.compute.rows=16",
                                                  "dram.bandwidth_gb_s=50"])
        by_cols[cols] = run(wl, hw, None)
    assert by_cols[128].total_cycles > by_cols[64].total_cycles  # the surprise
    notes = {c: traffic_notes(r.body()) for c, r in by_cols.items()}
    for cols, result in by_cols.items():
        (note,) = notes[cols]
        body = result.body()
        assert note.tensor == "weights"
        named = [lay for lay in body["layers"] if lay["name"] in note.layers]
        assert {lay["name"] for lay in body["layers"] if lay["tiling"].get("a_reads", 1) > 1} == set(note.layers)
        assert note.dram_bytes == sum(lay["bytes"]["dram"]["a_values"] for lay in named)  # dense: no metadata
        # the re-read layers' weights read once: what they are stored in (fp16 m x k, a conv's groups)
        stored = sum(lay["shape"]["m"] * lay["shape"]["k"] * lay["shape"].get("batch", 1) * 2 for lay in named)
        assert note.reference_bytes == stored
        fp = body["footprint"]
        assert note.buffer == "a third of core.sram.bytes" and note.buffer_bytes == 262144 // 3
        table = format_table(result)
        assert f"why: {note.text()}" in table
        assert f"footprint {fp['total_bytes']:,} bytes: weights as deployed {fp['weights_deployed_bytes']:,}" in table
    # the explanation of the surprise: the wider array re-reads more weights
    assert notes[128][0].dram_bytes > notes[64][0].dram_bytes
    assert len(notes[128][0].layers) > len(notes[64][0].layers)
    # a ws array whose ofmap buffer cannot hold a column block spills partial sums, and says so
    spilled = traffic_notes(run(load_workload(WL / "gemm-microbench.yaml"),
                                load_hardware(HW / "scalesim-32x32-ws.yaml"), None).body())
    assert [n.tensor for n in spilled] == ["partial sums"] and spilled[0].buffer == "core.sram.ofmap_bytes"
    # and a run where everything stays on chip has nothing to explain
    assert traffic_notes(run(load_workload(WL / "gemm-microbench.yaml"), load_hardware(HW / "tpu-like.yaml"),
                             None).body()) == ()


def test_element_counts_past_2p31_are_counts_not_dimensions() -> None:
    """Attention scores at long context hold more than 2^31 elements (32 heads x 32768^2): they run."""
    model = load_workload(WL / "llama2-7b-prefill.yaml", {"seq": 32768})
    big = [lay for lay in model.layers if getattr(lay, "elements", 0) > 2**31]
    assert big, "the case needs a vector op past 2^31 elements"
    result = run(model, load_hardware(HW / "a100-like.yaml"), None)
    assert result.total_cycles > 0
    json.loads(result.to_json())
