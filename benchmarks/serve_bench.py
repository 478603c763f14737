"""Serving-model speed: 10^6 requests through the simpy runtime (issue 9: under a minute on 2 cores).

Scenarios (BERT-base on a100-like, service times simulated by accelsim and cached per shape):
  batched  - Poisson 800 requests/s (utilisation ~0.85), seq uniform 32..512 padded to 64,
             max batch 16, max wait 2 ms, 2:4
  batch-1  - Poisson 600 requests/s, seq 128, max batch 1 (one simpy event per request), dense
  llm      - Llama-2-7B prefill + decode, 2,000 requests (continuous batching, one event per iteration)
Prints wall time (including the one-off kernel simulations, shown separately), requests/s of wall time.

Run: .venv/bin/python benchmarks/serve_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from accelsim.serving import RuntimeConfig, ServingModel

    hw = ROOT / "hwconfigs/a100-like.yaml"
    bert = ROOT / "workloads/bert-base.yaml"
    scenarios = [
        ("batched", bert, "2:4", RuntimeConfig(max_batch=16, max_wait_ms=2.0), 800.0, "uniform:32:512", {}),
        ("batch-1", bert, "dense", RuntimeConfig(max_batch=1, max_wait_ms=0.0), 600.0, None, {}),
    ]
    print(f"{'scenario':<10} {'requests':>10} {'warm-up s':>10} {'run s':>8} {'requests/s':>12} "
          f"{'p99 ms':>9} {'shapes':>7}")
    for label, wl, sp, cfg, rate, sizes, extra in scenarios:
        model = ServingModel.from_files(hw, wl, sp, config=cfg)
        t0 = time.perf_counter()
        model.run(rate, requests=1000, seed=1, sizes=sizes, **extra)  # simulate (and cache) the shapes
        if sizes:  # touch every padded size at every batch so the timed run is pure runtime
            for s in range(64, 513, 64):
                for b in range(1, cfg.max_batch + 1):
                    model.service(b, s)
        warm = time.perf_counter() - t0
        t1 = time.perf_counter()
        res = model.run(rate, requests=args.requests, seed=0, sizes=sizes, **extra)
        wall = time.perf_counter() - t1
        print(f"{label:<10} {res.requests:>10,} {warm:>10.2f} {wall:>8.2f} {res.requests / wall:>12,.0f} "
              f"{res.latency_ms.p99:>9.3f} {res.service_cache.shapes:>7}")
    llm = ServingModel.from_files(hw, ROOT / "workloads/llama2-7b-prefill.yaml", "2:4",
                                  decode_workload=ROOT / "workloads/llama2-7b-decode.yaml",
                                  config=RuntimeConfig(max_batch=64, batch_bucket="pow2"))
    t2 = time.perf_counter()
    res = llm.run(8.0, requests=2000, seed=0, output_tokens="uniform:16:256", prompt_tokens="uniform:64:1024")
    wall = time.perf_counter() - t2
    assert res.ttft_ms is not None and res.decode_batch is not None  # an LLM run
    print(f"{'llm':<10} {res.requests:>10,} {'(incl.)':>10} {wall:>8.2f} {res.requests / wall:>12,.0f} "
          f"{res.ttft_ms.p99:>9.3f} {res.service_cache.shapes:>7}   "
          f"(TTFT p99; {res.decode_batch.steps:,} decode steps, mean batch {res.decode_batch.mean:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
