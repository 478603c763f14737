"""Predicted vs published end-to-end 2:4 LLM speedups on one GPU (issue 19 must-show 4; nothing fitted).

Reads validation/llm/slidesparse_vllm.csv (vLLM + SlideSparse, Qwen2.5-7B/14B, dense cuBLASLt vs 2:4
cuSPARSELt, both W8A8) and simulates each row with the shipped workloads and configs:

- GPU -> config: A100 80GB PCIe -> a100-pcie-like, H100 80GB PCIe -> h100-pcie-like, RTX 4090 -> rtx4090-like
  (the SKUs the source names); dtype int8-w8a8 -> int8, fp8-e4m3-w8a8 -> fp8 (every layer, --dtype).
- prefill rows (output_len 1): one prefill of `batch` prompts of `input_len` tokens; speedup = dense / 2:4 time.
- decode rows (16-token prompts, 256 output tokens): the decode step at the run's mean context,
  kv_len = input_len + output_len / 2, at `batch` sequences; the 16-token prefills are neglected (a named
  assumption: they are < 1 % of the tokens' time).
- vLLM's scheduler, sampling and CPU overheads are not modelled: they dilute a GPU-side speedup.
Rows tagged OUTLIER in notes are reported, not scored. Prints the table, MAE and right-side share.
Usage: python benchmarks/llm_e2e_validation.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from accelsim import load_hardware, run
from accelsim.workloads.model import load_workload

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"A100 80GB PCIe": "a100-pcie-like", "H100 80GB PCIe": "h100-pcie-like", "RTX 4090": "rtx4090-like"}
DTYPES = {"int8-w8a8": "int8", "fp8-e4m3-w8a8": "fp8"}
MODELS = {"Qwen2.5-7B": "qwen2.5-7b", "Qwen2.5-14B": "qwen2.5-14b"}


def predict(row: dict[str, str]) -> float:
    hw = load_hardware(ROOT / "hwconfigs" / f"{CONFIGS[row['gpu']]}.yaml")
    batch, inp, out = int(row["batch"]), int(row["input_len"]), int(row["output_len"])
    phase = "prefill" if row["phase"] == "prefill" else "decode"
    params = {"batch": batch, "seq": inp} if phase == "prefill" else {"batch": batch, "kv_len": inp + out // 2}
    model = load_workload(ROOT / "workloads" / f"{MODELS[row['model']]}-{phase}.yaml", params)
    model = model.model_copy(update={"dtype": DTYPES[row["dtype"]], "kv_dtype": DTYPES[row["dtype"]]})
    sparse = run(model, hw, "2:4")
    return sparse.dense_total_cycles / sparse.total_cycles


def main() -> None:
    rows = list(csv.DictReader((ROOT / "validation" / "llm" / "slidesparse_vllm.csv").open()))
    print(f"{'gpu':16s} {'model':12s} {'phase':8s} {'batch':>5s} {'in':>5s} {'meas':>6s} {'pred':>6s} {'err':>7s}")
    errs, right = [], 0
    for row in rows:
        pred = predict(row)
        meas = float(row["speedup"])
        outlier = "OUTLIER" in row["notes"]
        print(f"{row['gpu']:16s} {row['model']:12s} {row['phase']:8s} {row['batch']:>5s} {row['input_len']:>5s} "
              f"{meas:6.3f} {pred:6.3f} {pred - meas:+7.3f}" + ("  (outlier, not scored)" if outlier else ""))
        if not outlier:
            errs.append(abs(pred - meas))
            right += (pred > 1.0) == (meas > 1.0)
    print(f"scored {len(errs)} rows: MAE {sum(errs) / len(errs):.3f}, right side of 1.0x {right}/{len(errs)} "
          f"({100 * right / len(errs):.0f} %)")


if __name__ == "__main__":
    main()
