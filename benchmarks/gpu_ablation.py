"""Ablation of the GPU model's mechanisms against ../shared/reference/gpu/ (docs/validation.md, issue 17).

For each variant (all mechanisms; without L2 reuse across waves; without the power-limited clock; without the
shared-memory operand feed; without the searched 2:4 kernels, i.e. every row on the default algorithm's tile;
without stream-K, i.e. Hopper's dense kernels data-parallel only; without the harness's C types, i.e. every row's C
written in its input dtype; without the host per-call floor, i.e. no host.call_floor_us fitted; without the sm80
2:4 kernels, i.e. a row that ran Ampere binaries on Hopper (sparse_isa: sm80) runs Hopper's own) it refits
the calibrated fields per family (ampere-datacenter on A100 rows, hopper on H100, ada on RTX 4090) and
reports the in-sample MAE per family and pooled, then one fit shared by every family, then leave one GPU out.
Prints a table; takes a few minutes on 2 cores. Usage: python benchmarks/gpu_ablation.py [--no-logo] [VARIANT ...]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from accelsim.analysis.calibration.across_gpus import _score, fit_family, fit_shared, leave_one_gpu_out
from accelsim.analysis.calibration.fields import select_rows
from accelsim.analysis.measurements import MAIN_REGIMES, SPARSE_BOUND, gpu_name, read_measurements
from accelsim.energy import uncapped
from accelsim.hardware.model import Hardware, load_hardware

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT.parent / "shared" / "reference" / "gpu"
FAMILIES = {"ampere-datacenter": {"A100": "a100-like", "A100@vllmbench": "a100-pcie-like"},
            "hopper": {"H100": "h100-like", "H100@vllmbench": "h100-pcie-like"},
            "ada": {"RTX 4090": "rtx4090-like"}}
NO_L2 = ["core.compute.raster.order=m_fastest", "core.compute.l2_reuse.across_waves=all_or_nothing"]
VARIANTS: dict[str, tuple[list[str], Callable[[Hardware], Hardware]]] = {
    "all mechanisms": ([], lambda hw: hw),
    "without L2 reuse across waves": (NO_L2, lambda hw: hw),
    "without the power-limited clock": ([], uncapped),
    "without the shared-memory operand feed": (["core.compute.operand_feed.smem_bytes_per_cycle=null"], lambda hw: hw),
    "without the searched 2:4 kernels": (["core.compute.cta_tiles.sparse_searched=null"], lambda hw: hw),
    "without stream-K (Hopper dense)": (["core.compute.stream_k=null"], lambda hw: hw),
    "without the harness's C types": ([], lambda hw: hw),
    "without the host per-call floor": (["host.call_floor_us=0"], lambda hw: hw),
    "without the sm80 2:4 kernels": ([], lambda hw: hw),
}
NO_C_TYPES = "without the harness's C types"  # a property of the measurement: rows keep C in their input dtype
NO_FLOOR = "without the host per-call floor"  # no floor fitted: the fixed costs take the hosts' share
NO_SM80 = "without the sm80 2:4 kernels"  # a property of the measurement: every row's 2:4 kernels the part's own


def main() -> None:
    logo = "--no-logo" not in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]  # optional: variant names to run
    measured = read_measurements(REF / "a100_fp16_24_speedups.csv") + read_measurements(
        REF / "a100_h100_rtx4090_more_24_speedups.csv")
    print(f"{'variant':34s} {'ampere-dc':>10s} {'hopper':>8s} {'ada':>8s} {'by family':>10s} {'one fit':>8s}"
          + ("   LOGO A100   H100  RTX4090" if logo else "") + "   seconds")
    for name, (overrides, adjust) in VARIANTS.items():
        if only and name not in only:
            continue
        rows = [replace(r, c_dtypes=None) for r in measured] if name == NO_C_TYPES else measured
        rows = [replace(r, sparse_isa="native") for r in rows] if name == NO_SM80 else rows
        floors = name != NO_FLOOR
        t0 = time.time()
        maes, total, weighted = [], 0, 0.0
        every: dict[str, Hardware] = {}
        for keys in FAMILIES.values():
            hws = {k: adjust(load_hardware(ROOT / "hwconfigs" / f"{n}.yaml", overrides)) for k, n in keys.items()}
            every.update(hws)
            m = fit_family(rows, hws, host_floor=floors).after.metrics
            maes.append(m.mae or 0.0)
            total += m.n
            weighted += (m.mae or 0.0) * m.n
        keys_all = list(every)
        shared = fit_shared({k: select_rows(rows, k, keys_all) for k in keys_all}, every,
                            host_of=gpu_name if floors else None)  # each measured host its own floor
        one = _score("all", rows, every, shared, MAIN_REGIMES, SPARSE_BOUND).metrics
        line = (f"{name:34s} {maes[0]:10.3f} {maes[1]:8.3f} {maes[2]:8.3f} {weighted / total:10.3f} "
                f"{one.mae or 0.0:8.3f}")
        if logo:
            res = leave_one_gpu_out(rows, every, host_floors=floors)
            line += "   " + "  ".join(f"{f.score.metrics.mae or 0.0:.3f}" for f in res.folds)
        print(line + f"   {time.time() - t0:7.0f}", flush=True)


if __name__ == "__main__":
    main()
