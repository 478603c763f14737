"""Probe: does a power limit explain the SlideSparse large-size drop? (issue 17; an experiment, not a model change)

The finding it tests (../shared/reference/gpu, SlideSparse rows, PCIe parts): A100 80GB PCIe (300 W) fp16 2:4
falls from 421 TFLOPS at 4096^3 to 287 at 16384^3 while dense holds 233-235; A100 int8 2:4 does not fall;
H100 PCIe (350 W) dense bf16 falls 475 -> 394; the RTX 4090 (450 W) does not fall. The candidate: the 2:4
tensor core consumes B at twice the dense rate per cycle and draws more power, and the board limits a
time-averaged power, so a short measurement runs at boost and a long one at the capped clock.

Two ingredients, both applied here *outside* the shipped model (it is left unchanged):

(a) Sparse datapath energy. An executed sparse MAC reads two B elements (2x logical k per instruction: the
    operand-select mux keeps one) where a dense MAC reads one. Its extra energy is the B operand's share of
    the dense MAC energy (``mac_pj``), estimated per dtype from operand bytes x register-file energy against
    the arithmetic (Horowitz, ISSCC 2014, 45 nm; only ratios are used): per MAC an fp16 tensor core
    (m16n8k16 per warp, fp32 accumulate) moves A 0.25 B, B 0.25 B and C 0.5 B (read + write) at 1.25 pJ/B
    (8 KB SRAM, 64-bit read 10 pJ) against a 1.1 pJ fp16 multiply + 0.9 pJ fp32 add: B share
    0.31 / 3.25 = 0.096; int8 (m16n8k32, int32 accumulate): A, B 0.125 B, C 0.25 B, 0.2 pJ multiply +
    0.1 pJ add: 0.156 / 0.925 = 0.17; fp8: 0.156 / 1.825 = 0.086. With the shipped operand-select +10 %
    (``sparse_mac_pj``) an executed sparse MAC costs 1.196x (fp16/bf16), 1.27x (int8), 1.186x (fp8) a dense
    MAC. (The same table puts an int8 MAC at 0.28x an fp16 one; the shipped ``mac_pj`` has 0.5x.)
(b) Duration. The limiter holds an exponential average of power (time constant ``--tau``) at the TDP. A kernel
    run back to back from idle (static power) at nominal power P1 > TDP runs at the nominal clock for
    t* = tau ln((P1 - P_idle) / (P1 - TDP)), then at the steady capped clock (``energy.settle_clock``). The
    SlideSparse benchmark (github:bcacdwk/vllmbench slidesparse/benchmark_kernel/benchmark_entry.py and
    cuSPARSELt/alg_search.py, cuBLASLt/alg_search.py: ``--warmup 25 --repeat 100``; cusparselt_gemm.cu times
    the 100 calls after 25 warm-up calls with CUDA events, per algorithm / split-k candidate, and keeps the
    fastest) gives the measurement protocol: the reported time is the mean of calls WARMUP .. WARMUP+REPEAT.

Variants: ``base`` (shipped), ``physical`` (a), ``physical-transient`` (a)+(b), ``needed-transient`` (the
sparse MAC energy factor, ``--needed``, that reproduces A100 PCIe fp16 16384^3 with (b)). Each refits the
calibrated fields per family with the governor inside the fitting tables, then scores the A100 fp16
calibration set. Usage: python benchmarks/power_duration_probe.py [--tau 0.2] [--needed 2.6] [--variants a,b]
[--logo]; minutes per variant on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import accelsim.analysis.calibration.fitting as fitting
import accelsim.analysis.gpu_validation as gpu_validation
from accelsim.analysis.calibration.across_gpus import FAMILY_HOST, fit_family, leave_one_gpu_out
from accelsim.analysis.measurements import read_measurements
from accelsim.energy import kernel_power, power_cap_of, static_watts
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.lowering import Kernel, lower
from accelsim.results import KernelResult
from accelsim.simulation import Simulator
from accelsim.workloads.model import workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT.parent / "shared" / "reference" / "gpu"
FAMILIES = {"ampere-datacenter": {"A100": "a100-like", "A100@vllmbench": "a100-pcie-like"},
            "hopper": {"H100": "h100-like", "H100@vllmbench": "h100-pcie-like"},
            "ada": {"RTX 4090": "rtx4090-like"}}
B_SHARE = {"fp16": 0.096, "bf16": 0.096, "tf32": 0.096, "fp32": 0.096, "fp8": 0.086, "int8": 0.17, "int4": 0.17}
MUX = 0.10  # the shipped sparse_mac_pj = mac_pj x 1.1
WARMUP, REPEAT = 25, 100  # SlideSparse alg_search defaults


class GovernedSimulator(Simulator):
    """A simulator whose kernels run under the back-to-back protocol; ``governed`` makes ``sim(kernel)`` (what
    the fitting tables call) the governed result too."""

    tau: float | None = None  # None: steady state (the shipped governor)
    governed: bool = True

    def settled(self, kernel: Kernel) -> KernelResult:
        self.governed = False  # Simulator.settled calls self(kernel) for the nominal run
        try:
            res = super().settled(kernel)
        finally:
            self.governed = True
        if self.tau is None or res.clock is None or not res.clock.get("power_capped"):
            return res
        hw = self.hw
        nominal = super().__call__(kernel)
        cap = power_cap_of(hw)
        assert cap is not None
        p1, p0 = kernel_power(hw, kernel, nominal.layer_totals().totals, 1.0), static_watts(hw)
        t_star = self.tau * math.log((p1 - p0) / (p1 - cap.tdp_w))
        n_star = t_star * hw.clock_ghz * 1e9 / nominal.cycles["total"]
        share = min(1.0, max(0.0, (n_star - WARMUP) / REPEAT))  # timed calls that ran at the nominal clock
        cycles = dict(res.cycles)
        cycles["total"] = round(share * nominal.cycles["total"] + (1 - share) * res.cycles["total"])
        return res.replace(cycles=cycles, clock={**res.clock, "boost_share": share})

    def __call__(self, kernel: Kernel) -> KernelResult:
        return self.settled(kernel) if self.governed else super().__call__(kernel)


def _make(tau: float | None) -> Any:
    def make(hw: Hardware, source: str = "<hardware>", keep_tiles: bool = False) -> Simulator:
        sim = GovernedSimulator(hw, source, keep_tiles)
        sim.tau = tau
        return sim
    return make


@contextlib.contextmanager
def governed(tau: float | None) -> Iterator[None]:
    """Fitting tables and validation run each kernel at its governed clock (steady, or the protocol's)."""
    saved = fitting.Simulator, gpu_validation.Simulator
    fitting.Simulator = gpu_validation.Simulator = _make(tau)  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        fitting.Simulator, gpu_validation.Simulator = saved  # type: ignore[misc]


def overrides(name: str, factor: float | None) -> list[str]:
    """``energy.sparse_mac_pj`` per dtype: mac_pj x (1 + mux + B share), or x ``factor``."""
    hw = load_hardware(ROOT / "hwconfigs" / f"{name}.yaml")
    assert hw.energy is not None
    return [f"energy.sparse_mac_pj.{d}={round(v * (factor or 1 + MUX + B_SHARE.get(d, 0.096)), 4)}"
            for d, v in hw.energy.mac_pj.items()]


def squares(hw: Hardware, dtype: str, tau: float | None) -> list[str]:
    """The SlideSparse squares of ``hw``'s GPU: nominal power, steady clock, governed speedup vs measured."""
    gpu = "A100" if hw.name.startswith("a100") else "H100" if hw.name.startswith("h100") else "RTX 4090"
    rows = [r for r in read_measurements(REF / "a100_fp16_24_speedups.csv")
            + read_measurements(REF / "a100_h100_rtx4090_more_24_speedups.csv")
            if r.gpu == gpu and r.dtype == dtype and "vllmbench" in r.source and r.m == r.n == r.k and r.m >= 4096]
    sim = _make(tau)(hw)
    out = []
    for r in rows:
        model = workload_from_dict({"name": "g", "dtype": dtype, "layers": [
            {"name": "gemm", "op": "gemm", "m": r.m, "n": r.n, "k": r.k}]})
        cells = []
        res = {}
        for path in ("dense", "2:4"):
            kern = lower(model, hw, path)[0]
            nominal = Simulator.__call__(sim, kern)
            res[path] = sim.settled(kern)
            p1 = kernel_power(hw, kern, nominal.layer_totals().totals, 1.0)
            f = res[path].clock["ghz"] / hw.clock_ghz
            cells.append(f"{path} {p1:4.0f} W f={f:.2f}")
        pred = res["dense"].cycles["total"] / res["2:4"].cycles["total"]
        out.append(f"    {r.m:>5}^3 {' | '.join(cells)} | speedup measured {r.speedup:.2f} predicted {pred:.2f}")
    return out


def variant(name: str, tau: float, needed: float, logo: bool) -> None:
    factor = {"base": None, "physical": None, "physical-transient": None, "needed-transient": needed}[name]
    energy = name != "base"
    t_gov = tau if name.endswith("transient") else None
    rows = read_measurements(REF / "a100_fp16_24_speedups.csv") + read_measurements(
        REF / "a100_h100_rtx4090_more_24_speedups.csv")
    t0 = time.time()
    every: dict[str, Hardware] = {}
    lines, total, weighted = [], 0, 0.0
    with governed(t_gov):
        for family, keys in FAMILIES.items():
            hws = {k: load_hardware(ROOT / "hwconfigs" / f"{n}.yaml", overrides(n, factor) if energy else [])
                   for k, n in keys.items()}
            every.update(hws)
            fit = fit_family(rows, hws)
            c, m = fit.calibration, fit.after.metrics
            total += m.n
            weighted += (m.mae or 0.0) * m.n
            lines.append(f"  {family:18s} eff {c.efficiency_dense:.2f}/{c.efficiency_sparse:.2f} fixed "
                         f"{c.launch_dense_ns / 1000:.2f}/{c.launch_sparse_ns / 1000:.2f} us  MAE {m.mae:.3f} "
                         f"(rule {m.rule_mae:.3f}, right side {m.right_side:.0%}, {m.n} rows)")
            calibrated = {k: c.apply(hw, FAMILY_HOST) for k, hw in hws.items()}
            if family == "ampere-datacenter":
                a16 = read_measurements(REF / "a100_fp16_24_speedups.csv")
                sxm = gpu_validation.validate_hw(a16, {"A100": calibrated["A100"]}).overall.mae
                pcie = gpu_validation.validate_hw(a16, calibrated).overall.mae
                lines.append(f"    A100 fp16 calibration set MAE: every row on a100-like {sxm:.3f}; "
                             f"SlideSparse rows on a100-pcie-like {pcie:.3f}")
                lines += squares(calibrated["A100@vllmbench"], "fp16", t_gov)
                lines += squares(calibrated["A100@vllmbench"], "int8", t_gov)
            elif family == "hopper":
                lines += squares(calibrated["H100@vllmbench"], "bf16", t_gov)
        lines.append(f"  pooled by family MAE {weighted / total:.3f}")
        if logo:
            res = leave_one_gpu_out(rows, every)
            lines.append("  leave one GPU out: " + ", ".join(
                f"{f.left_out} {f.score.metrics.mae:.3f} ({f.score.metrics.right_side:.0%})" for f in res.folds))
    head = f"== {name}" + (f" (tau {tau:g} s)" if t_gov else "") + (f" (x{needed:g})" if factor else "")
    print(f"{head}, {time.time() - t0:.0f} s", *lines, sep="\n", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tau", type=float, default=0.2, help="limiter averaging time constant, s (estimate)")
    ap.add_argument("--needed", type=float, default=2.6, help="sparse MAC energy factor of needed-transient")
    ap.add_argument("--variants", default="base,physical,physical-transient,needed-transient")
    ap.add_argument("--logo", action="store_true", help="also leave one GPU out (slower)")
    args = ap.parse_args()
    for name in args.variants.split(","):
        variant(name.strip(), args.tau, args.needed, args.logo)


if __name__ == "__main__":
    main()
