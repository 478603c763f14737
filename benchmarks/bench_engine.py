"""Engine speed: warm per-layer time for the 1024^3 GEMM and ResNet-18, dense and 2:4 (ResNet-18 also on a GPU config).

Prints figures and the ratio against SCALE-Sim v3 on the same 1024^3 layer (4 min 38 s,
3.4 GB peak, measured on a 2-core machine; ../shared/reference/scalesim/README.md).
Run: .venv/bin/python benchmarks/bench_engine.py
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelsim import load_hardware, load_workload, run, simulate  # noqa: E402
from accelsim.lowering import Kernel  # noqa: E402

SCALESIM_SECONDS = 4 * 60 + 38
SCALESIM_RSS_GB = 3.4


def best_of(fn, repeat: int = 7) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    t0 = time.perf_counter()
    hw_os = load_hardware(ROOT / "hwconfigs/scalesim-32x32-os.yaml")
    hw_ws = load_hardware(ROOT / "hwconfigs/scalesim-32x32-ws.yaml")
    g = Kernel("g1024", "gemm", 1024, 1024, 1024, "fp16", 2, "dense", None, None, None)
    g24 = Kernel("g1024", "gemm", 1024, 1024, 1024, "fp16", 2, "sparse", "2:4", "2:4", None, 2, 4, 2)
    simulate(g, hw_os)  # first call: numba compile or cache load
    print(f"first call (numba compile/cache load + run): {time.perf_counter() - t0:.2f} s")
    print(f"{'case':44s} {'best ms':>9s} {'median ms':>10s} {'vs SCALE-Sim':>14s}")
    for label, kern, hw in (("1024^3 GEMM dense, 32x32 os", g, hw_os), ("1024^3 GEMM dense, 32x32 ws", g, hw_ws),
                            ("1024^3 GEMM 2:4, 32x32 os", g24, hw_os), ("1024^3 GEMM 2:4, 32x32 ws", g24, hw_ws)):
        best, med = best_of(lambda k=kern, h=hw: simulate(k, h, keep_tiles=True))
        print(f"{label:44s} {best * 1e3:9.3f} {med * 1e3:10.3f} {SCALESIM_SECONDS / best:13,.0f}x")
    resnet = load_workload(ROOT / "workloads/resnet18.yaml")
    for hw_name in ("scalesim-32x32-os", "scalesim-32x32-ws", "tpu-like", "a100-like"):
        hw = load_hardware(ROOT / f"hwconfigs/{hw_name}.yaml")
        for sp in ("dense", "2:4"):
            best, med = best_of(lambda h=hw, s=sp: run(resnet, h, s, keep_tiles=True), repeat=5)
            per_layer = best / len(resnet.layers)
            print(f"{'ResNet-18 ' + sp + ' on ' + hw_name:44s} {best * 1e3:9.3f} {med * 1e3:10.3f} "
                  f"{SCALESIM_SECONDS / per_layer:13,.0f}x  ({per_layer * 1e3:.3f} ms/layer, dense baseline included)")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {rss_mb:.0f} MB (SCALE-Sim: {SCALESIM_RSS_GB} GB for the single 1024^3 layer)")


if __name__ == "__main__":
    main()
