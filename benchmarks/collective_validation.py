"""Predicted vs published NCCL all-reduce times on 8-GPU NVSwitch boards (the shipped system configs).

Reads every CSV under validation/interconnect/ (one per source; nccl-tests ``all_reduce_perf`` rows: bytes,
time_us, algbw, busbw; see that folder's README) and predicts each row with
:func:`accelsim.system.collective_seconds` on the system config its file maps to (``SYSTEMS``). Prints, per row,
predicted and measured time and the relative error, then the median |error| per size regime:

- ``small``  (< 1 MiB): latency-bound, the per-step latency term dominates;
- ``mid``    (1 MiB to < 64 MiB): the ramp, where NCCL's protocols and channels change with size (not modelled:
  the model is one latency plus one bandwidth term);
- ``large``  (>= 64 MiB): bandwidth-bound, the sustained rate dominates.

``--fit FILE`` also refits ``bandwidth_efficiency`` and ``latency_us`` for that file's system, by the procedure the
shipped configs record: least squares on relative error over the **fit half** of the rows (every other message
size, starting at the smallest: :func:`fit_half`) in the small and large regimes only (the two asymptotes the two
parameters stand for), with the config's algorithm; the other half is held back and reported.
``--algorithm NAME`` predicts with another registered algorithm (what-if: ring, direct, in_switch).
Usage: python benchmarks/collective_validation.py [--fit azure_nd_h100_v5.csv] [--algorithm ring]
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accelsim import load_hardware
from accelsim.hardware.model import Hardware
from accelsim.system import collective_seconds
from accelsim.system.interconnect import Interconnect

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "validation" / "interconnect"
HW = ROOT / "hwconfigs"
# which shipped system predicts each source (H200 has the H100's 18 x NVLink4 fabric: a cross-check of 8xh100-like)
SYSTEMS = {"azure_nd_h100_v5.csv": "8xh100-like", "azure_nd_h200_v5.csv": "8xh100-like",
           "azure_nd_a100_v4.csv": "8xa100-like"}
MIB = 2 ** 20
REGIMES = ("small", "mid", "large")


def regime(message_bytes: float) -> str:
    """The size regime of a message: small (< 1 MiB), mid (< 64 MiB) or large."""
    return "small" if message_bytes < MIB else "mid" if message_bytes < 64 * MIB else "large"


@dataclass(frozen=True)
class Row:
    """One published all-reduce measurement and its prediction."""

    source: str
    message_bytes: float
    gpus: int
    measured_us: float
    predicted_us: float

    @property
    def error(self) -> float:
        """Relative error of the prediction (predicted / measured - 1)."""
        return self.predicted_us / self.measured_us - 1.0


def read_rows(path: Path) -> list[dict[str, str]]:
    """The CSV rows of one source."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def system_for(path: Path, algorithm: str | None = None) -> Hardware:
    """The shipped system config that predicts ``path`` (optionally with another all-reduce algorithm)."""
    sets = [f"system.interconnect.algorithm={algorithm}"] if algorithm else []
    return load_hardware(HW / f"{SYSTEMS[path.name]}.yaml", sets)


def interconnect(hw: Hardware) -> Interconnect:
    """The interconnect of a system config (a device config has none)."""
    if hw.system is None:
        raise ValueError(f"{hw.name} is not a system config")
    return hw.system.interconnect


def predict(path: Path, hw: Hardware) -> list[Row]:
    """Every all-reduce row of ``path`` predicted on ``hw``."""
    ic = interconnect(hw)
    out = []
    for r in read_rows(path):
        if r["collective"] != "all_reduce":
            continue
        b, n = float(r["bytes"]), int(r["gpus"])
        out.append(Row(path.name, b, n, float(r["time_us"]), collective_seconds("all_reduce", b, n, ic) * 1e6))
    return out


def regime_errors(rows: list[Row]) -> dict[str, tuple[int, float]]:
    """Per regime: (rows, median |relative error|)."""
    out = {}
    for reg in REGIMES:
        errs = [abs(r.error) for r in rows if regime(r.message_bytes) == reg]
        if errs:
            out[reg] = (len(errs), float(np.median(errs)))
    return out


def fit_half(rows: list[Row]) -> list[bool]:
    """True for the fit half: every other message size from the smallest (sizes sorted ascending)."""
    order = sorted(range(len(rows)), key=lambda i: rows[i].message_bytes)
    mask = [False] * len(rows)
    for rank, i in enumerate(order):
        mask[i] = rank % 2 == 0
    return mask


def fit(rows: list[Row], ic: Interconnect) -> tuple[float, float]:
    """(bandwidth_efficiency, latency_us) fitted on the small and large rows of the fit half.

    Every registered all-reduce formula is bytes-term / (port rate x efficiency) + steps x latency, so the two
    terms come from predictions at efficiency 1 with zero latency and with 1 us latency."""
    base = ic.model_copy(update={"bandwidth_efficiency": 1.0, "latency_us": 0.0})
    one_us = ic.model_copy(update={"bandwidth_efficiency": 1.0, "latency_us": 1.0})
    sel = [i for i, (r, f) in enumerate(zip(rows, fit_half(rows), strict=True))
           if f and regime(r.message_bytes) != "mid"]
    def seconds(ic_: Interconnect) -> np.ndarray:
        return np.array([collective_seconds("all_reduce", rows[i].message_bytes, rows[i].gpus, ic_) for i in sel])

    x_bw = seconds(base)
    x_lat = seconds(one_us) - x_bw
    t = np.array([rows[i].measured_us * 1e-6 for i in sel])
    design = np.stack([x_bw, x_lat], axis=1) / t[:, None]  # relative-error weighting
    (inv_eff, lat_us), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return float(1.0 / inv_eff), float(lat_us)


def _print_rows(rows: list[Row], held: list[bool] | None = None) -> None:
    print(f"{'bytes':>12} {'regime':>6} {'measured_us':>12} {'predicted_us':>13} {'error':>8}")
    for i, r in enumerate(rows):
        tag = "" if held is None else ("  fit" if not held[i] else "  held-back")
        print(f"{int(r.message_bytes):>12} {regime(r.message_bytes):>6} {r.measured_us:>12.2f} "
              f"{r.predicted_us:>13.2f} {r.error:>+8.1%}{tag}")


def _print_regimes(label: str, rows: list[Row]) -> None:
    parts = [f"{reg} {n} rows {med:.1%}" for reg, (n, med) in regime_errors(rows).items()]
    print(f"  {label}: median |error| " + "; ".join(parts))


def main() -> None:
    """Print predicted vs measured per row and per regime, for every source (and the fit, when asked)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", help="a CSV under validation/interconnect/ to refit its system on (half its rows)")
    ap.add_argument("--algorithm", help="predict with this all-reduce algorithm instead of the config's")
    args = ap.parse_args()
    for path in sorted(DATA.glob("*.csv")):
        hw = system_for(path, args.algorithm)
        ic = interconnect(hw)
        rows = predict(path, hw)
        print(f"\n== {path.name} on {hw.name} (algorithm {ic.algorithm_name}, efficiency "
              f"{ic.bandwidth_efficiency}, latency {ic.latency_us} us)")
        _print_rows(rows)
        _print_regimes("all rows", rows)
        if args.fit == path.name:
            eff, lat = fit(rows, ic)
            refit = hw.system.model_copy(update={"interconnect": ic.model_copy(  # type: ignore[union-attr]
                update={"bandwidth_efficiency": round(eff, 3), "latency_us": round(lat, 2)})})
            fitted = predict(path, hw.model_copy(update={"system": refit}))
            held = [not f for f in fit_half(fitted)]
            print(f"  fitted on the small + large rows of the fit half: bandwidth_efficiency {eff:.3f}, "
                  f"latency_us {lat:.2f}")
            _print_rows(fitted, held)
            _print_regimes("fit half", [r for r, h in zip(fitted, held, strict=True) if not h])
            _print_regimes("held-back half", [r for r, h in zip(fitted, held, strict=True) if h])


if __name__ == "__main__":
    main()
