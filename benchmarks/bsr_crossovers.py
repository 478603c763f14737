"""Where block-sparse GEMMs start to beat dense: the model's crossover sparsity per block size vs the Quansight blog.

Reads validation/formats/quansight_bsr_crossovers_a100.csv (PyTorch 2.1 Triton ``bsr_dense_mm`` on an A100-80G,
text statements "block B beats dense from P %"; nothing was read off a plot) and, per fp16 row, simulates the
row's GEMM (4096 x 4096 x 4096 assumed, see the CSV's notes) as ``block{B}x{B}:P%`` at the sparsity ``LEVELS``
on two configs:

- ``hwconfigs/a100-like.yaml``: its own block kernel (library-tiled BSR: CTA M = the block, N and the stages of
  the dense library tiles, the block index prefetched with the tile);
- ``validation/formats/a100-bsr-triton-pt21.yaml``: a100-like running PyTorch 2.1's kernel as its source code
  launches it (``core.sparse.block``: square block-side output tile, one stage, the B load waiting for its
  block index, 16 CTAs of 4 warps per SM). Nothing is fitted.

The crossover is the sparsity where speedup over the same GEMM run dense crosses 1.0x, interpolated linearly
between the two levels around it (below the lowest level: reported as ``< lowest``; never: ``> highest``).
fp32 rows are not simulated: a100-like has no fp32 GEMM datapath (the CSV says why).
Usage: python benchmarks/bsr_crossovers.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from accelsim import load_hardware, lower
from accelsim.engine import simulate
from accelsim.hardware.model import Hardware
from accelsim.workloads.model import workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "validation" / "formats" / "quansight_bsr_crossovers_a100.csv"
CONFIGS = {"a100-like": ROOT / "hwconfigs" / "a100-like.yaml",
           "a100-bsr-triton-pt21": ROOT / "validation" / "formats" / "a100-bsr-triton-pt21.yaml"}
LEVELS = (40, 50, 60, 70, 80, 85, 90, 95, 97, 99)


def speedup(hw: Hardware, dtype: str, m: int, n: int, k: int, block: int, level: float) -> float:
    """Dense cycles / block-sparse cycles of one GEMM (A = the m x k sparse weights), launch costs included."""
    wl = workload_from_dict({"name": "bsr", "dtype": dtype, "sparsity": f"block{block}x{block}:{level:g}%",
                             "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})
    (kernel,) = lower(wl, hw)
    sparse = simulate(kernel, hw, keep_tiles=False).cycles["total"]
    dense = simulate(kernel.as_dense(), hw, keep_tiles=False).cycles["total"]
    return dense / sparse


def crossover(hw: Hardware, dtype: str, m: int, n: int, k: int, block: int,
              levels: tuple[float, ...] = LEVELS) -> tuple[float, list[float]]:
    """(sparsity % where speedup crosses 1.0x, the speedups at ``levels``): interpolated between the levels around
    the first one at or above 1.0x; ``levels[0]`` if it already is, ``inf`` if none is."""
    ups = [speedup(hw, dtype, m, n, k, block, p) for p in levels]
    for i, s in enumerate(ups):
        if s >= 1.0:
            if i == 0:
                return float(levels[0]), ups
            lo, hi = ups[i - 1], s
            return levels[i - 1] + (levels[i] - levels[i - 1]) * (1.0 - lo) / (hi - lo), ups
    return float("inf"), ups


def rows() -> list[dict[str, str]]:
    with SOURCE.open() as f:
        return list(csv.DictReader(f))


def main() -> None:
    hws = {name: load_hardware(path) for name, path in CONFIGS.items()}
    print(f"{'config':22s} {'dtype':5s} {'block':>5s} {'published':>9s} {'band':>9s} {'model':>7s}  speedup at "
          + " ".join(f"{p}%" for p in LEVELS))
    for row in rows():
        if row["role"] == "not-modelled":
            continue
        for name, hw in hws.items():
            x, ups = crossover(hw, row["dtype"], int(row["m"]), int(row["n"]), int(row["k"]), int(row["block"]))
            band = f"{row['band_low_pct']}-{row['band_high_pct']}"
            shown = f"{x:.1f}" if x != float("inf") else "never"
            if x == LEVELS[0]:
                shown = f"<{LEVELS[0]}"
            print(f"{name:22s} {row['dtype']:5s} {row['block']:>5s} {row['crossover_pct']:>8s}% {band:>9s} "
                  f"{shown:>7s}  " + " ".join(f"{s:.2f}" for s in ups))


if __name__ == "__main__":
    main()
