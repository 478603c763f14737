"""Every op lands on a kernel path with a reason: fallback rules, policies, by-op-type, footprint."""

from __future__ import annotations

import pytest
import yaml
from conftest import HW

from accelsim import ConfigError, load_hardware, lower, run
from accelsim.hardware.model import hardware_from_dict
from accelsim.lowering import REASON_CODES
from accelsim.workloads.model import workload_from_dict

TPU = load_hardware(HW / "tpu-like.yaml")
FLEX = load_hardware(HW / "flex-nm.yaml")
A100 = load_hardware(HW / "a100-like.yaml")

MODEL = {
    "name": "mixed", "dtype": "fp16", "params": {"batch": 2, "seq": 64},
    "layers": [
        {"name": "embed", "op": "embedding", "vocab": 1000, "dim": 256, "tokens": "batch*seq"},
        {"name": "q", "op": "gemm", "m": 256, "n": "batch*seq", "k": 256},
        {"name": "qk", "op": "matmul", "m": "seq", "n": "seq", "k": 64, "batch": "batch*4"},
        {"name": "softmax", "op": "softmax", "elements": "batch*4*seq*seq"},
        {"name": "ffn", "op": "gemm", "m": 1024, "n": "batch*seq", "k": 256},
        {"name": "gelu", "op": "activation", "function": "gelu", "elements": "batch*seq*1024"},
        {"name": "head", "op": "gemm", "m": 10, "n": "batch", "k": 256, "sparsity": "dense"},
        {"name": "dw", "op": "conv2d", "ifmap": [28, 28], "kernel": [3, 3], "channels": 64, "filters": 64,
         "groups": 64, "padding": 1},
        {"name": "pw", "op": "conv2d", "ifmap": [28, 28], "kernel": [1, 1], "channels": 64, "filters": 128},
    ],
}


def _model(**changes):
    return workload_from_dict({**MODEL, **changes})


def _by_name(result):
    return {lay.name: lay for lay in result.layers}


def test_paths_and_reason_codes_on_a_mixed_model() -> None:
    lays = _by_name(run(_model(sparsity="2:4"), TPU))
    assert (lays["q"].path, lays["q"].pattern_executed, lays["q"].reason) == ("sparse", "2:4", None)
    assert (lays["qk"].path, lays["qk"].reason, lays["qk"].pattern_requested) == \
        ("dense", "activation_operands", "2:4")
    assert (lays["dw"].path, lays["dw"].reason) == ("dense", "op_no_sparse_kernel")
    assert (lays["head"].path, lays["head"].reason, lays["head"].pattern_requested) == ("dense", "kept_dense", None)
    assert lays["pw"].path == "sparse"
    for name in ("embed", "softmax", "gelu"):
        assert lays[name].path == "vector" and lays[name].reason is None and lays[name].macs == 0
        assert lays[name].speedup_vs_dense == 1.0
    for lay in lays.values():
        assert lay.reason is None or lay.reason in REASON_CODES


def test_sparsity_override_wins_over_the_plan_including_dense() -> None:
    kernels = lower(_model(sparsity="2:4"), TPU, "dense")
    assert all(k.path != "sparse" for k in kernels)
    assert all(k.reason is None for k in kernels)  # nothing was requested, nothing fell back
    over = {k.name: k for k in lower(_model(), TPU, "2:4")}
    assert over["head"].path == "sparse"  # --sparsity also overrides a layer's own 'dense'


def test_patterns_on_2to4_and_flexible_engines() -> None:
    k14 = {k.name: k for k in lower(_model(), TPU, "1:4")}
    assert (k14["q"].path, k14["q"].pattern_executed, k14["q"].reason) == ("sparse", "2:4", "pattern_promoted")
    k48 = {k.name: k for k in lower(_model(), TPU, "4:8")}
    assert (k48["q"].path, k48["q"].reason) == ("dense", "pattern_unsupported")
    for pat in ("1:4", "2:4", "4:8"):
        flex = {k.name: k for k in lower(_model(), FLEX, pat)}
        assert (flex["q"].path, flex["q"].pattern_executed, flex["q"].reason) == ("sparse", pat, None)


def test_a_dtype_the_sparse_datapath_does_not_run_is_said() -> None:
    """tf32 with a pattern on a100-like: every config lists no tf32 under core.sparse.dtypes, so those layers run
    dense (dtype_unsupported), and the run says so and names the key (as fp4 / int4 2:4 runs do)."""
    gemm = {"name": "g", "dtype": "tf32", "layers": [{"name": "g", "op": "gemm", "m": 512, "n": 512, "k": 512},
                                                      {"name": "n", "op": "layernorm", "elements": 512}]}
    for pat in ("1:2", "2:4"):
        res = run(workload_from_dict(gemm), A100, pat)
        assert res.layers[0].reason == "dtype_unsupported" and res.layers[0].path == "dense"
        (note,) = [w for w in res.warnings if "dtype_unsupported" in w]
        assert note.startswith("the sparse datapath does not run tf32 in this config (core.sparse.dtypes: fp16, "
                               f"bf16, int8, int4): 1 layer(s) asking for {pat} ran dense (dtype_unsupported)")
        assert "would have to list tf32 to run them sparse" in note
    fp16 = run(workload_from_dict({**gemm, "dtype": "fp16"}), A100, "2:4")
    assert fp16.layers[0].path == "sparse" and not any("dtype_unsupported" in w for w in fp16.warnings)


def test_dtype_and_shape_rules_of_the_sparse_library() -> None:
    data = yaml.safe_load((HW / "tpu-like.yaml").read_text())
    data["core"]["sparse"]["dtypes"] = ["int8"]
    hw = hardware_from_dict(data)
    assert {k.name: k for k in lower(_model(), hw, "2:4")}["q"].reason == "dtype_unsupported"
    data["core"]["sparse"]["dtypes"] = None
    data["core"]["sparse"]["weight_shape_multiple"] = {"m": 32, "k": 64}
    hw = hardware_from_dict(data)
    kernels = {k.name: k for k in lower(_model(), hw, "2:4")}
    assert kernels["q"].path == "sparse"
    odd = workload_from_dict({"name": "o", "layers": [{"name": "g", "op": "gemm", "m": 100, "n": 8, "k": 256}]})
    assert lower(odd, hw, "2:4")[0].reason == "shape_below_minimum"


def test_depthwise_runs_on_the_vector_unit_where_configured() -> None:
    lays = _by_name(run(_model(), A100, "2:4"))
    assert (lays["dw"].path, lays["dw"].reason, lays["dw"].pattern_requested) == \
        ("vector", "op_no_sparse_kernel", "2:4")


def test_fastest_policy_keeps_dense_where_sparse_is_slower() -> None:
    small = workload_from_dict({"name": "s", "layers": [
        {"name": "tiny", "op": "gemm", "m": 256, "n": 256, "k": 256},
        {"name": "big", "op": "gemm", "m": 8192, "n": 8192, "k": 8192}]})
    default = _by_name(run(small, A100, "2:4"))
    assert default["tiny"].path == "sparse" and default["tiny"].speedup_vs_dense < 1.0
    fastest = run(small, A100, "2:4", policy="fastest")
    lays = _by_name(fastest)
    assert (lays["tiny"].path, lays["tiny"].reason, lays["tiny"].speedup_vs_dense) == \
        ("dense", "slower_than_dense", 1.0)
    assert lays["big"].path == "sparse" and lays["big"].speedup_vs_dense > 1.3
    assert fastest.total_cycles < run(small, A100, "2:4").total_cycles
    with pytest.raises(ConfigError, match="^accelsim.run: policy: unknown policy 'sometimes'"):
        run(small, A100, "2:4", policy="sometimes")


def test_by_op_type_summary_adds_up() -> None:
    res = run(_model(sparsity="2:4"), TPU)
    groups = res.by_op_type()
    assert sum(g["count"] for g in groups) == len(res.layers)
    assert sum(g["cycles"] for g in groups) == res.total_cycles
    keys = {(g["op"], g["path"]) for g in groups}
    assert ("matmul", "dense") in keys and ("gemm", "sparse") in keys and ("softmax", "vector") in keys
    mm = next(g for g in groups if g["op"] == "matmul")
    assert mm["reasons"] == {"activation_operands": 1}


def test_footprint_and_capacity_warning() -> None:
    res = run(_model(sparsity="2:4"), TPU)
    fp = res.footprint
    assert fp["weights_deployed_bytes"] < fp["weights_dense_bytes"]
    assert fp["weights_metadata_bytes"] > 0 and fp["fits"] is True and not res.warnings
    data = yaml.safe_load((HW / "tpu-like.yaml").read_text())
    data["dram"]["capacity_bytes"] = 1000
    res = run(_model(sparsity="2:4"), hardware_from_dict(data))
    assert fp["total_bytes"] > 1000 and res.footprint["fits"] is False
    assert len(res.warnings) == 1 and "exceeds dram.capacity_bytes" in res.warnings[0]


def test_vector_ops_are_bandwidth_or_vector_bound() -> None:
    lays = _by_name(run(_model(), TPU))
    sm = lays["softmax"]
    elements = 2 * 4 * 64 * 64
    assert sm.shape == {"elements": elements}
    assert sm.bytes["dram"]["b"] == elements * 2 and sm.bytes["dram"]["c"] == elements * 2
    assert sm.cycles["total"] >= elements * 6 / 1024  # ops / vector rate
    assert sm.cycles["total"] >= 2 * elements * 2 / min(256, 600 / 0.94) - 1  # bytes / bandwidth


def test_shipped_models_fall_back_for_the_right_reasons() -> None:
    from conftest import WL

    from accelsim import load_workload

    mnet = run(load_workload(WL / "mobilenetv2.yaml"), TPU, "2:4")
    dw = [lay for lay in mnet.layers if lay.op == "conv2d" and lay.name.endswith(".dw")]
    assert len(dw) == 17 and all((lay.path, lay.reason) == ("dense", "op_no_sparse_kernel") for lay in dw)
    on_gpu = run(load_workload(WL / "mobilenetv2.yaml"), A100, "2:4")
    assert all(lay.reason == "op_no_sparse_kernel" and lay.path == "vector"
               for lay in on_gpu.layers if lay.name.endswith(".dw"))
    bert = run(load_workload(WL / "bert-base.yaml", {"seq": 64}), TPU, "2:4")
    mm = [lay for lay in bert.layers if lay.op == "matmul"]
    assert len(mm) == 24 and all((lay.path, lay.reason) == ("dense", "activation_operands") for lay in mm)
    assert {lay.path for lay in bert.layers if lay.op == "gemm"} == {"sparse"}
