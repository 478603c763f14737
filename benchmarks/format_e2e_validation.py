"""Predicted vs published whole-model speedups of block-sparse and 2:4 ViTs (issue 18 must-show 3; nothing fitted).

Reads validation/formats/torchao_superblock_vit_a100.csv (torchao SuperBlock benchmark: torchvision vit_h_14 and
vit_b_16, batch 256, 224x224, A100 80GB, bf16 or int8 dynamic quantization; the MLP Linears as 64x64 BSR at
80 / 84 / 90 % or 2:4; whole-model latency) and simulates each row on a100-like:

- vit_h_14 -> validation/formats/vit-h14.yaml, vit_b_16 -> workloads/vit-b16.yaml, batch 256, every layer in
  bf16 (the benchmark's activation dtype in both modes).
- Only fc1 / fc2 (torchvision's mlp.0 / mlp.3, the Linears whose name contains "mlp") run the row's format;
  every other layer stays dense, as the benchmark converts them.
- int8 rows: the benchmark's int8 dynamic-activation / int8-weight quantization (torchao
  ``int8_dynamic_activation_int8_weight``) as the workload's ``quantization`` section (accelsim.workloads.quantize):
  weights int8, activations bf16, a per-call quantize layer before each quantized Linear, the dequantize fused
  into the GEMM epilogue (``DEQUANTIZE``). Which Linears, as torchao's superblock ``accelerate_with_sparsity``
  (superblock/utils.py) picks them: dense and BSR rows quantize the MLP Linears only (``mlp_only`` /
  ``superblock_only``); the 2:4 row quantizes mlp.0 (fc1, int8 2:4 through cuSPARSELt) and runs mlp.3 (fc2) as
  bf16 2:4 (``semi_sparse_weight``). Attention, q/k/v, the output projection, the head stay bf16.
- speedup = the dense model's time / the model's time with the sparse MLPs (both from one run, the same
  quantization).
Usage: python benchmarks/format_e2e_validation.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from accelsim import load_hardware, run
from accelsim.config.schema import read_yaml
from accelsim.hardware.model import Hardware
from accelsim.workloads.model import Workload, load_workload, workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "validation" / "formats" / "torchao_superblock_vit_a100.csv"
MODELS = {"vit_h_14": ROOT / "validation" / "formats" / "vit-h14.yaml", "vit_b_16": ROOT / "workloads" / "vit-b16.yaml"}
SPARSE_LAYERS = ("fc1", "fc2")  # torchvision mlp.0 / mlp.3
DEQUANTIZE = "fused"  # accelsim.workloads.quantize's default (int8 rescale in the GEMM epilogue)


def model_of(row: dict[str, str]) -> str:
    """The torchvision model a row's notes name."""
    return next(name for name in MODELS if name in row["notes"])


def quantized_layers(row: dict[str, str]) -> list[str]:
    """The Linears torchao quantizes in an int8 row (none in bf16): fc1 only for 2:4, fc1 and fc2 otherwise."""
    if row["dtype"] != "int8":
        return []
    return ["*.fc1"] if row["format"] == "2:4" else [f"*.{name}" for name in SPARSE_LAYERS]


def mlp_only(workload: Workload, fmt: str) -> Workload:
    """``workload`` with ``fmt`` on the MLP Linears and every other weight layer dense."""
    layers = [layer.model_copy(update={"sparsity": fmt if layer.name.split(".")[-1] in SPARSE_LAYERS else "dense"})
              if hasattr(layer, "sparsity") else layer for layer in workload.layers]
    return workload.model_copy(update={"layers": layers, "sparsity": None})


def workload_of(row: dict[str, str], dequantize: str = DEQUANTIZE) -> Workload:
    """The row's model at batch 256 in bf16, its int8 Linears quantized (dynamic, ``dequantize``)."""
    path = MODELS[model_of(row)]
    data, _ = read_yaml(path)
    data = {**data, "dtype": "bf16"}
    layers = quantized_layers(row)
    if layers:
        data["quantization"] = {"weights": "int8", "mode": "dynamic", "dequantize": dequantize, "layers": layers}
    return workload_from_dict(data, str(path), {"batch": 256})


def predict(row: dict[str, str], hw: Hardware, dequantize: str = DEQUANTIZE) -> float:
    """The predicted whole-model speedup of one row."""
    res = run(mlp_only(workload_of(row, dequantize), row["format"]), hw, None)
    return res.dense_total_cycles / res.total_cycles


def dense_ratio(model: str, hw: Hardware, dequantize: str = DEQUANTIZE) -> float:
    """The dense int8-quantized model's time over the dense bf16 model's (measured: the quantization=True,
    sparsity=None row over the baseline)."""
    row = {"notes": model, "dtype": "int8", "format": "block64x64:80%"}
    quant = run(workload_of(row, dequantize), hw, "dense").total_cycles
    return quant / run(workload_of({**row, "dtype": "bf16"}), hw, "dense").total_cycles


def all_int8(row: dict[str, str], hw: Hardware) -> float:
    """The speedup accelsim predicted before quantization was modelled: every layer and activation in the row's
    dtype (int8 rows: no quantize layers, attention and norms in int8). For comparison only."""
    model = load_workload(MODELS[model_of(row)], {"batch": 256})
    res = run(mlp_only(model.model_copy(update={"dtype": row["dtype"]}), row["format"]), hw, None)
    return res.dense_total_cycles / res.total_cycles


def main() -> None:
    hw = load_hardware(ROOT / "hwconfigs" / "a100-like.yaml")
    rows = list(csv.DictReader(SOURCE.open()))
    print(f"{'model':9s} {'dtype':5s} {'format':15s} {'meas':>6s} {'pred':>6s} {'rel err':>8s} {'unfused':>8s} "
          f"{'all-int8':>8s}")
    by: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        pred, meas = predict(row, hw), float(row["speedup"])
        extra = (f" {predict(row, hw, 'unfused'):8.3f} {all_int8(row, hw):8.3f}" if row["dtype"] == "int8" else "")
        print(f"{model_of(row):9s} {row['dtype']:5s} {row['format']:15s} {meas:6.3f} {pred:6.3f} "
              f"{100 * (pred - meas) / meas:+7.1f}%{extra}")
        for key in ("all", row["dtype"]):
            by.setdefault(key, []).append((pred, meas))
    for key, pairs in by.items():
        p, m = np.array(pairs).T
        print(f"{key:5s} {len(p):3d} rows: median rel err {100 * np.median(abs(p - m) / m):.1f} %, MAE "
              f"{np.mean(abs(p - m)):.3f}, right side of 1.0x {int(((p > 1) == (m > 1)).sum())}/{len(p)}")
    for model in MODELS:
        print(f"{model}: int8-quantized dense / bf16 dense time, fused {dense_ratio(model, hw):.3f}, unfused "
              f"{dense_ratio(model, hw, 'unfused'):.3f}")


if __name__ == "__main__":
    main()
