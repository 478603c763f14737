"""Whole-set speed and memory: ResNet-18 + the four reference GEMMs, dense and 2:4, on the
SCALE-Sim configs and a100-like. Prints warm time (in-process, repeated), cold time (a fresh
process with the numba cache present: imports + config loading + simulation) and peak RSS.

Targets (issue 3): whole set < 1 s warm, < 3 s cold, < 500 MB.
Run: .venv/bin/python benchmarks/bench_suite.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HW = ["scalesim-32x32-os", "scalesim-32x32-ws", "a100-like"]
WORKLOADS = ["resnet18", "gemm-microbench"]


def run_set() -> int:
    """Simulate the whole set once; return the number of layer simulations."""
    sys.path.insert(0, str(ROOT))
    from accelsim import load_hardware, load_workload, run
    from accelsim.workloads.model import workload_from_dict

    micro = load_workload(ROOT / "workloads/gemm-microbench.yaml")
    four = workload_from_dict({**micro.to_dict(), "layers": micro.to_dict()["layers"][:4]})
    models = [load_workload(ROOT / "workloads/resnet18.yaml"), four]
    count = 0
    for name in HW:
        hw = load_hardware(ROOT / f"hwconfigs/{name}.yaml")
        for model in models:
            for sp in ("dense", "2:4"):
                run(model, hw, sp)
                count += len(model.layers)
    return count


def child() -> None:
    t0 = time.perf_counter()
    n = run_set()
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"layers": n, "wall_s": wall, "rss_mb": rss}))


def main() -> None:
    if "--child" in sys.argv:
        child()
        return
    subprocess.run([sys.executable, __file__, "--child"], check=True, capture_output=True)  # warm the cache
    colds = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--child"], check=True, capture_output=True, text=True)
        colds.append((time.perf_counter() - t0, json.loads(out.stdout)))
    best_cold, info = min(colds, key=lambda c: c[0])
    n = run_set()
    warms = []
    for _ in range(5):
        t0 = time.perf_counter()
        run_set()
        warms.append(time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"set: ResNet-18 (21 layers) + 4 reference GEMMs, dense and 2:4, on {', '.join(HW)}: "
          f"{n} layer runs (each sparse layer also simulates its dense baseline)")
    print(f"warm (in-process, best of 5):            {min(warms):.3f} s   target < 1 s")
    print(f"cold (fresh process, numba cache, best of 3): {best_cold:.3f} s   target < 3 s "
          f"(simulation part {info['wall_s']:.3f} s)")
    print(f"peak RSS: cold process {info['rss_mb']:.0f} MB, warm process {rss:.0f} MB   target < 500 MB")


if __name__ == "__main__":
    main()
