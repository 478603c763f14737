"""Dynamic quantization (accelsim.workloads.quantize): weights int8 / fp8, activations in the workload dtype,
a quantize layer before each quantized Linear, the dequantize fused into the GEMM epilogue or run on its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HW

from accelsim.cli import main
from accelsim.errors import ConfigError
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.simulation import run
from accelsim.workloads.model import with_dtype, workload_from_dict

# a pre-norm MLP block: tokens n = 64, hidden 128, MLP 512
M1, N, K1 = 512, 64, 128  # fc1: 512 x 64 x 128
M2, K2 = 128, 512  # fc2: 128 x 64 x 512


def mlp(**quantization: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "q-mlp", "dtype": "bf16", "layers": [
        {"name": "norm", "op": "layernorm", "elements": N * K1},
        {"name": "fc1", "op": "gemm", "m": M1, "n": N, "k": K1},
        {"name": "gelu", "op": "activation", "function": "gelu", "elements": M1 * N},
        {"name": "fc2", "op": "gemm", "m": M2, "n": N, "k": K2},
        {"name": "add", "op": "elementwise", "elements": M2 * N, "inputs": 2}]}
    if quantization:
        data["quantization"] = quantization
    return data


@pytest.fixture(scope="module")
def a100() -> Any:
    return load_hardware(HW / "a100-like.yaml")


def test_lowering_inserts_one_quantize_per_linear_with_hand_computed_bytes(a100: Any) -> None:
    w = workload_from_dict(mlp(weights="int8"))
    kernels = {k.name: k for k in lower(w, a100)}
    assert list(kernels) == ["norm", "fc1.quantize", "fc1", "gelu", "fc2.quantize", "fc2", "add"]
    q1, q2 = kernels["fc1.quantize"], kernels["fc2.quantize"]
    # reads k x n bf16 (2 B), writes k x n int8 (1 B) + one fp32 scale per token (n = 64)
    assert (q1.path, q1.read_bytes, q1.write_bytes) == ("vector", K1 * N * 2, K1 * N + N * 4)
    assert (q2.read_bytes, q2.write_bytes) == (K2 * N * 2, K2 * N + N * 4)
    assert q1.vector_ops == 4.0 * K1 * N  # quantize_ops_per_element
    for name in ("fc1", "fc2"):  # int8 A and B and rate, C written in bf16 (fused dequantize)
        g = kernels[name]
        assert (g.dtype, g.dtype_bytes, g.c_bytes, g.path) == ("int8", 1, 2, "dense")
    for name in ("norm", "gelu", "add"):  # vector ops stay in the activation dtype
        assert (kernels[name].dtype, kernels[name].dtype_bytes) == ("bf16", 2)
    res = run(w, a100, None)
    rows = {r.name: r for r in res.layers}
    assert rows["fc1.quantize"].bytes["dram"] == {"a_values": 0, "a_metadata": 0, "b": K1 * N * 2,
                                                  "c": K1 * N + N * 4}
    assert rows["fc1"].bytes["dram"]["b"] == K1 * N and rows["fc1"].bytes["dram"]["a_values"] == M1 * K1
    assert rows["fc1"].bytes["dram"]["c"] == M1 * N * 2  # no split-k on this shape
    assert res.footprint["weights_dense_bytes"] == M1 * K1 + M2 * K2  # int8 weights
    mac_pj = a100.energy.mac_pj
    assert rows["fc1"].energy["by_component_j"]["mac"] == pytest.approx(M1 * N * K1 * mac_pj["int8"] * 1e-12)


def test_unfused_dequantize_writes_the_accumulator_and_rescales_it(a100: Any) -> None:
    kernels = {k.name: k for k in lower(workload_from_dict(mlp(weights="int8", dequantize="unfused")), a100)}
    assert list(kernels) == ["norm", "fc1.quantize", "fc1", "fc1.dequantize", "gelu", "fc2.quantize", "fc2",
                             "fc2.dequantize", "add"]
    assert kernels["fc1"].c_bytes == 4  # int32
    d = kernels["fc1.dequantize"]
    assert (d.read_bytes, d.write_bytes, d.vector_ops) == (M1 * N * 4 + (M1 + N) * 4, M1 * N * 2, 2.0 * M1 * N)
    fp8 = {k.name: k for k in lower(workload_from_dict(mlp(weights="fp8", dequantize="unfused")), a100)}
    assert fp8["fc1"].dtype == "fp8" and fp8["fc1.quantize"].write_bytes == K1 * N + N * 4


def test_layer_globs_pick_the_linears_and_the_result_echoes_the_resolved_section(a100: Any) -> None:
    w = workload_from_dict(mlp(weights="int8", layers=["fc1"]))
    names = [x.name for x in w.layers]
    assert "fc1.quantize" in names and "fc2.quantize" not in names
    assert [k.dtype for k in lower(w, a100) if k.name in ("fc1", "fc2")] == ["int8", "bf16"]
    echo = run(w, a100, None).workload["quantization"]
    assert echo["activations"] == "bf16" and echo["quantized_layers"] == 1 and echo["dequantize"] == "fused"
    assert echo["mode"] == "dynamic" and echo["granularity"] == "per_token"


def test_a_workload_without_quantization_is_unchanged(a100: Any) -> None:
    w = workload_from_dict(mlp())
    assert "quantization" not in w.summary() and len(w.layers) == 5
    assert all(k.c_bytes == 0 and k.dtype == "bf16" for k in lower(w, a100))
    assert "dtype" not in w.to_dict()["layers"][1]  # unset layer fields stay out of the hash


def test_reloading_an_expanded_workload_does_not_quantize_twice() -> None:
    w = workload_from_dict(mlp(weights="int8"))
    again = workload_from_dict(w.to_dict())
    assert [x.name for x in again.layers] == [x.name for x in w.layers]
    assert again.config_hash() == w.config_hash()


def test_a_results_echoed_section_reloads_and_a_disagreeing_count_is_refused(a100: Any) -> None:
    """A result echoes the resolved section (quantized_layers included): pasted back into the workload, or
    reloaded with the expanded layers, it loads the same workload; a count that disagrees is refused."""
    w = workload_from_dict(mlp(weights="int8", layers=["fc1"]))
    echo = run(w, a100, None).workload["quantization"]
    assert echo["quantized_layers"] == 1
    assert workload_from_dict(mlp(**echo)).config_hash() == w.config_hash()
    expanded = w.to_dict()
    assert expanded["quantization"]["quantized_layers"] == 1
    assert workload_from_dict(expanded).config_hash() == w.config_hash()
    expanded["quantization"]["quantized_layers"] = 2
    with pytest.raises(ConfigError, match=r"^r\.yaml: quantization\.quantized_layers: 2 disagrees with the 1 gemm"):
        workload_from_dict(expanded, "r.yaml")


def test_dtype_flag_replaces_the_activation_dtype_only() -> None:
    w = with_dtype(workload_from_dict(mlp(weights="int8")), "fp16")
    assert w.dtype == "fp16" and w.quantization is not None and w.quantization.activations == "fp16"
    assert [x.dtype for x in w.layers if x.op == "gemm"] == ["int8", "int8"]  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="int8 cannot be the activation dtype"):
        with_dtype(workload_from_dict(mlp(weights="int8")), "int8")


@pytest.mark.parametrize(("section", "message"), [
    ({"weights": "int4"}, r"q\.yaml: quantization: weights: .*'int8' or 'fp8'"),
    ({"weights": "int8", "mode": "static"}, r"quantization: mode: .*'dynamic'"),
    ({"weights": "int8", "activations": "fp16"}, r"quantization\.activations: fp16 is not the workload dtype bf16"),
    ({"weights": "int8", "layers": ["nope*"]}, r"quantization\.layers: \['nope\*'\] select no gemm layer"),
    ({"weights": "int8", "dequantize": "maybe"}, r"quantization: dequantize: .*'fused' or 'unfused'"),
    # the loader writes quantized_layers; a hand-written one that disagrees used to be silently recomputed
    ({"weights": "int8", "quantized_layers": 5},
     r"q\.yaml: quantization\.quantized_layers: 5 disagrees with the 2 gemm layers `quantization\.layers` selects "
     r"\(the loader writes this count; drop the key\)$"),
    ({"weights": "int8", "layers": ["fc2"], "quantized_layers": 2},
     r"quantization\.quantized_layers: 2 disagrees with the 1 gemm layers"),
    ({"weights": "int8", "quantized_layers": "all"},
     r"quantization\.quantized_layers: expected a whole number, got 'all' \(the loader writes this count"),
    ({"weights": "int8", "quantized_layers": True}, r"quantization\.quantized_layers: expected a whole number"),
])
def test_bad_quantization_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              section: dict[str, Any], message: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(mlp(**section)))
    rc = main(["run", "--hw", str(HW / "a100-like.yaml"), "--workload", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(message, err), err


def test_run_quantize_flag_quantizes_every_linear_and_the_title_says_so(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(mlp()))
    assert main(["run", "--hw", str(HW / "a100-like.yaml"), "--workload", str(path), "--quantize", "int8"]) == 0
    out = capsys.readouterr().out
    assert "quantized: int8 weights x bf16 activations on 2 linears (dynamic per_token quantize layers, " \
           "dequantize fused)" in out.splitlines()[0]
    assert "fc1.quantize" in out and "fc2.quantize" in out
    path.write_text(yaml.safe_dump(mlp(weights="int8")))
    rc = main(["run", "--hw", str(HW / "a100-like.yaml"), "--workload", str(path), "--quantize", "fp8"])
    err = capsys.readouterr().err
    assert rc == 2 and "--quantize: workload 'q-mlp' already declares quantization" in err


def test_a_systolic_part_says_it_writes_c_at_the_weight_dtype() -> None:
    tpu = load_hardware(HW / "tpu-like.yaml")
    res = run(workload_from_dict(mlp(weights="int8")), tpu, None)
    assert any("2 quantized linear(s) on a systolic part" in w for w in res.warnings)
    assert not any("systolic" in w for w in run(workload_from_dict(mlp()), tpu, None).warnings)
