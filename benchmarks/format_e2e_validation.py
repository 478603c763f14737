"""Predicted vs published whole-model speedups of block-sparse and 2:4 ViTs (issue 18 must-show 3; nothing fitted).

Reads validation/formats/torchao_superblock_vit_a100.csv (torchao SuperBlock benchmark: torchvision vit_h_14 and
vit_b_16, batch 256, 224x224, A100 80GB, bf16 or int8 dynamic quantization; the MLP Linears as 64x64 BSR at
80 / 84 / 90 % or 2:4; whole-model latency) and simulates each row on a100-like:

- vit_h_14 -> validation/formats/vit-h14.yaml, vit_b_16 -> workloads/vit-b16.yaml, batch 256, the row's dtype
  for every layer (int8: the GEMMs in int8; the dynamic quantization kernels that quantize each Linear's input
  at run time are not modelled: a named gap).
- Only fc1 / fc2 (torchvision's mlp.0 / mlp.3, the Linears whose name contains "mlp") run the row's format;
  every other layer stays dense, as the benchmark converts them.
- speedup = the dense model's time / the model's time with the sparse MLPs (both from one run).
Usage: python benchmarks/format_e2e_validation.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from accelsim import load_hardware, run
from accelsim.hardware.model import Hardware
from accelsim.workloads.model import Workload, load_workload

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "validation" / "formats" / "torchao_superblock_vit_a100.csv"
MODELS = {"vit_h_14": ROOT / "validation" / "formats" / "vit-h14.yaml", "vit_b_16": ROOT / "workloads" / "vit-b16.yaml"}
SPARSE_LAYERS = ("fc1", "fc2")  # torchvision mlp.0 / mlp.3


def model_of(row: dict[str, str]) -> str:
    """The torchvision model a row's notes name."""
    return next(name for name in MODELS if name in row["notes"])


def mlp_only(workload: Workload, fmt: str, dtype: str) -> Workload:
    """``workload`` in ``dtype`` with ``fmt`` on the MLP Linears and every other weight layer dense."""
    layers = [layer.model_copy(update={"sparsity": fmt if layer.name.split(".")[-1] in SPARSE_LAYERS else "dense"})
              if hasattr(layer, "sparsity") else layer for layer in workload.layers]
    return workload.model_copy(update={"layers": layers, "dtype": dtype, "sparsity": None})


def predict(row: dict[str, str], hw: Hardware) -> float:
    """The predicted whole-model speedup of one row."""
    model = mlp_only(load_workload(MODELS[model_of(row)], {"batch": 256}), row["format"], row["dtype"])
    res = run(model, hw, None)
    return res.dense_total_cycles / res.total_cycles


def main() -> None:
    hw = load_hardware(ROOT / "hwconfigs" / "a100-like.yaml")
    rows = list(csv.DictReader(SOURCE.open()))
    print(f"{'model':9s} {'dtype':5s} {'format':15s} {'meas':>6s} {'pred':>6s} {'rel err':>8s}")
    by: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        pred, meas = predict(row, hw), float(row["speedup"])
        print(f"{model_of(row):9s} {row['dtype']:5s} {row['format']:15s} {meas:6.3f} {pred:6.3f} "
              f"{100 * (pred - meas) / meas:+7.1f}%")
        for key in ("all", row["dtype"]):
            by.setdefault(key, []).append((pred, meas))
    for key, pairs in by.items():
        p, m = np.array(pairs).T
        print(f"{key:5s} {len(p):3d} rows: median rel err {100 * np.median(abs(p - m) / m):.1f} %, MAE "
              f"{np.mean(abs(p - m)):.3f}, right side of 1.0x {int(((p > 1) == (m > 1)).sum())}/{len(p)}")


if __name__ == "__main__":
    main()
