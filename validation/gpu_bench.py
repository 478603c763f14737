#!/usr/bin/env python3
"""Time dense vs 2:4-sparse GEMMs on an NVIDIA GPU; write a CSV in accelsim's calibration format.

Run on a machine with an NVIDIA GPU (Ampere or newer) and PyTorch with CUDA::

    python validation/gpu_bench.py --out validation/h200_fp16_bf16_24.csv

It times, for fp16 and bf16,

* square GEMMs 512^3 ... 16384^3 (regime ``kernel-gemm``: ``torch.mm(A_sparse, B)``), and
* the BERT-base linear layers (768->2304 fused QKV, 768->768, 768->3072, 3072->768) at
  128 x {1, 8, 32, 64} tokens (regime ``inference-linear``: ``F.linear(x, W_sparse)``),

dense (the same call on the dense, masked weight) vs 2:4 (``torch.sparse.to_sparse_semi_structured``),
with CUDA events, a warm-up, and the median of repeated timings. Convention (as the calibration
CSV): m = rows of the sparse operand (out_features), n = columns of the dense operand (tokens),
k = the reduction. The GPU name, driver, CUDA and torch versions and the sparse backend go into
every row's ``notes`` and into a JSON sidecar. A wall-clock budget (default 270 s) stops the run
early; what was measured is written. Not imported by the test suite (it needs torch and a GPU).
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

SQUARES = (512, 1024, 2048, 4096, 8192, 16384)
BERT_LINEARS = (("qkv", 2304, 768), ("attn_out", 768, 768), ("ffn_up", 3072, 768), ("ffn_down", 768, 3072))
BERT_TOKENS = (128, 1024, 4096, 8192)  # seq 128 x batch 1, 8, 32, 64
COLUMNS = ("gpu", "dtype", "m", "n", "k", "dense_time_us", "sparse_time_us", "speedup", "source", "notes")


def driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def prune_2_4(w, torch):
    """Keep the 2 largest-magnitude values of every 4 consecutive along k (the last dim)."""
    m, k = w.shape
    groups = w.reshape(m, k // 4, 4)
    idx = groups.abs().topk(2, dim=-1).indices
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, idx, True)
    return (groups * mask).reshape(m, k)


def time_call(fn, torch, warmup: int, iters: int) -> float:
    """Median time of ``fn()`` in microseconds over ``iters`` CUDA-event-timed calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def iterations_for(flops: float, peak_tflops: float = 500.0) -> tuple[int, int]:
    """Warm-up and timed iterations: more for small kernels, at least 5 timed for the largest."""
    est_us = max(5.0, flops / (peak_tflops * 1e12) * 1e6)
    iters = int(min(200, max(5, 200_000 / est_us)))
    return max(3, iters // 4), iters


def bench_case(torch, dtype, m: int, n: int, k: int, regime: str, budget_end: float) -> dict | None:
    from torch.sparse import to_sparse_semi_structured

    gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
    w = prune_2_4(torch.randn(m, k, device="cuda", dtype=dtype, generator=gen), torch)
    w_sparse = to_sparse_semi_structured(w)
    if regime == "kernel-gemm":
        b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)

        def dense():
            return torch.mm(w, b)

        def sparse():
            return torch.mm(w_sparse, b)
    else:
        x = torch.randn(n, k, device="cuda", dtype=dtype, generator=gen)

        def dense():
            return torch.nn.functional.linear(x, w)

        def sparse():
            return torch.nn.functional.linear(x, w_sparse)
    ref, got = dense(), sparse()
    err = (ref.float() - got.float()).abs().max().item() / max(1e-6, ref.float().abs().max().item())
    if err > 2e-2:
        raise RuntimeError(f"2:4 result differs from dense by {err:.3g} (relative) at {m}x{n}x{k}")
    if time.monotonic() > budget_end:
        return None
    warmup, iters = iterations_for(2.0 * m * n * k)
    d = time_call(dense, torch, warmup, iters)
    s = time_call(sparse, torch, warmup, iters)
    return {"dense_us": d, "sparse_us": s, "iters": iters, "rel_err": err}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--out", required=True, help="CSV to write (calibration format); a .json sidecar goes beside it")
    ap.add_argument("--dtypes", default="fp16,bf16", help="comma-separated: fp16, bf16")
    ap.add_argument("--budget-s", type=float, default=270.0, help="stop starting new cases after this many seconds")
    ap.add_argument("--force-cutlass", action="store_true", help="use PyTorch's CUTLASS 2:4 backend (sm8x only)")
    args = ap.parse_args(argv)

    import torch
    from torch.sparse import SparseSemiStructuredTensor

    if not torch.cuda.is_available():
        print("gpu_bench: no CUDA device", file=sys.stderr)
        return 2
    SparseSemiStructuredTensor._FORCE_CUTLASS = bool(args.force_cutlass)
    backend = "CUTLASS" if args.force_cutlass else "cuSPARSELt"
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    wanted = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in wanted if d not in dtypes]
    if bad:
        print(f"gpu_bench: unknown dtype(s) {bad}; choose from {list(dtypes)}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    name = torch.cuda.get_device_name(0)
    short = name.removeprefix("NVIDIA ").strip()
    meta = {"gpu_name": name, "driver": driver_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "capability": ".".join(map(str, torch.cuda.get_device_capability(0))), "backend": backend,
            "python": platform.python_version(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    source = f"validation/gpu_bench.py on {name} (driver {meta['driver']}, torch {meta['torch']}, CUDA {meta['cuda']})"
    cases = [("kernel-gemm", s, s, s) for s in SQUARES]
    cases += [("inference-linear", out_f, tokens, in_f) for _, out_f, in_f in BERT_LINEARS for tokens in BERT_TOKENS]
    t0 = time.monotonic()
    budget_end = t0 + args.budget_s
    rows, skipped = [], []
    for dname in wanted:
        for regime, m, n, k in cases:
            if time.monotonic() > budget_end:
                skipped.append((dname, m, n, k))
                continue
            res = bench_case(torch, dtypes[dname], m, n, k, regime, budget_end)
            if res is None:
                skipped.append((dname, m, n, k))
                continue
            call = "torch.mm(A_sparse, B)" if regime == "kernel-gemm" else "F.linear(x, W_sparse), no bias"
            notes = (f"{regime}; backend={backend}; {call}; median of {res['iters']} CUDA-event timings after "
                     f"warm-up; GPU {name}; driver {meta['driver']}; torch {meta['torch']}; CUDA {meta['cuda']}")
            rows.append({"gpu": short, "dtype": dname, "m": m, "n": n, "k": k,
                         "dense_time_us": f"{res['dense_us']:.3f}", "sparse_time_us": f"{res['sparse_us']:.3f}",
                         "speedup": f"{res['dense_us'] / res['sparse_us']:.4f}", "source": source, "notes": notes})
            print(f"{dname} {regime:16s} {m:6d} {n:6d} {k:6d}  dense {res['dense_us']:10.1f} us  "
                  f"sparse {res['sparse_us']:10.1f} us  {res['dense_us'] / res['sparse_us']:.3f}x", file=sys.stderr)
            torch.cuda.empty_cache()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    meta.update(rows=len(rows), skipped=[list(s) for s in skipped], seconds=round(time.monotonic() - t0, 1))
    out.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {out} ({len(rows)} rows, {len(skipped)} skipped by the budget)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
