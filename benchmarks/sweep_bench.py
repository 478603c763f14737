"""Sweep throughput: 10,000 hardware configs of BERT-base (seq 128, batch 16), dense and 2:4.

The configs vary fields that change every layer's result -- array height and width
(core.compute.rows / cols), weight SRAM, DRAM bandwidth (continuous) and metadata-decode
throughput (continuous) -- on the systolic tpu-like base, so no kernel result is reused across
configs (each config simulates its ~20 distinct kernels afresh). Prints configs/s and the total
wall time (spec validation + the sweep + writing results). Goal (issue 8): <= 60 s on 2 cores.

Run:  .venv/bin/python benchmarks/sweep_bench.py [--n 10000] [--workers 2] [--profile 300]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench_spec(n: int) -> dict:
    return {
        "name": "sweep-bench",
        "hardware": str(ROOT / "hwconfigs/tpu-like.yaml"),
        "workloads": [str(ROOT / "workloads/bert-base.yaml")],
        "set": {"batch": [16], "seq": [128]},
        "sparsity": ["dense", "2:4"],
        "random": {
            "n": n, "seed": 2024,
            "core.compute.rows": {"choice": [32, 48, 64, 96, 128, 192, 256]},
            "core.compute.cols": {"choice": [32, 48, 64, 96, 128, 192, 256]},
            "core.sram.filter_bytes": {"log_uniform": [1048576, 16777216]},
            "dram.bandwidth_gb_s": {"uniform": [100, 2000]},
            "core.sparse.decode_groups_per_cycle": {"log_uniform": [8, 512]},
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="configs (hardware points)")
    ap.add_argument("--workers", type=int, default=2, help="local pool processes (default 2)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="instead: cProfile N configs in this process, lean path and run() path")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from accelsim.sweep import run_sweep, spec_from_dict

    if args.profile:
        profile(args.profile)
        return
    out = Path(tempfile.mkdtemp(prefix="accelsim-sweep-bench-"))
    try:
        t0 = time.perf_counter()
        spec = spec_from_dict(bench_spec(args.n), source="sweep_bench")
        t_spec = time.perf_counter() - t0
        res = run_sweep(spec, out / "results", workers=args.workers)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"configs: {res.points:,} ({res.rows:,} rows: BERT-base seq 128 batch 16, dense and 2:4; "
          f"{res.infeasible_rows} infeasible), {args.workers} workers, chunks of {res.chunk_size}")
    print(f"spec validation {t_spec:.2f} s | sweep {res.run_s:.2f} s | results written, total wall "
          f"{wall:.2f} s")
    print(f"{res.points / wall:,.0f} configs/s overall ({res.configs_per_s:,.0f} configs/s in the sweep)")


def profile(n: int) -> None:
    """Where one process spends its time: the lean path, then (for comparison) run() per row."""
    from accelsim.sweep import spec_from_dict, work_context
    from accelsim.sweep.rows import run_points

    spec = spec_from_dict(bench_spec(n), source="sweep_bench")
    pts = [(p.index, p.overrides) for p in spec.points]
    for lean in (True, False):
        ctx = work_context(spec, lean)
        run_points(ctx, pts[:2])  # warm: workload expansion, numba dispatch
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        run_points(ctx, pts)
        prof.disable()
        dt = time.perf_counter() - t0
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
        print(f"== {'lean batch path' if lean else 'run() path'}: {dt / n * 1e3:.2f} ms per config "
              "(dense + 2:4) in one process, under cProfile")
        print("\n".join(buf.getvalue().splitlines()[4:]))


if __name__ == "__main__":
    main()
