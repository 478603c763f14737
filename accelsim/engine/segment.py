"""A simulated tile sequence, and the rate of the stage between load and compute every simulation reads.

Split from ``accelsim.engine`` so that the simulations (systolic, vector, ``engine.ctagrid``) share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accelsim.engine import classes as cl
from accelsim.hardware.model import Hardware
from accelsim.lowering import Kernel


@dataclass(slots=True)
class Segment:
    """One simulated tile sequence (a systolic kernel, or one wave class of a CTA grid).

    A sequence too long to hold tile by tile has no arrays, only ``summed``: its totals,
    extrapolated from classes of identical tiles (``classes``).
    """

    work: np.ndarray | None
    times: np.ndarray | None
    bw: np.ndarray | None
    count: int = 1  # how many times this sequence runs back to back on each core
    active: int = 1  # cores running it concurrently
    wave_class: int = 0
    summed: cl.Sums | None = None

    @property
    def end(self) -> float:
        return self.summed.end if self.summed is not None else cl.end_of(self.times)  # type: ignore[arg-type]

    def totals(self, latency: float) -> cl.Sums:
        """The sums a kernel's totals are built from."""
        if self.summed is not None:
            return self.summed
        return cl.sums_of(self.work, self.times, latency)  # type: ignore[arg-type]


def rate_value(value: object) -> float:
    """A config rate: 'unlimited' is infinity."""
    return float("inf") if value == "unlimited" else float(value)  # type: ignore[arg-type]


def decode_params(kernel: Kernel, hw: Hardware) -> tuple[float, float]:
    """``stage_params`` of ``kernel`` with ``hw``'s metadata decoder."""
    spec = hw.core.sparse
    if spec is None:
        return stage_params(kernel, math.inf, 0.0)
    return stage_params(kernel, rate_value(spec.decode_groups_per_cycle), float(spec.decode_latency_cycles))


def stage_params(kernel: Kernel, decode_rate: float, decode_latency: float) -> tuple[float, float]:
    """Rate (units per cycle per core) and latency of the kernel's stage between load and compute: the N:M
    metadata decoder on the sparse datapath, a format's own stage (``a_stage``: decompress), else none."""
    if not kernel.sparse:
        return math.inf, 0.0
    if kernel.a_stage != "decode":
        return kernel.a_stage_rate or math.inf, 0.0
    if not kernel.sparse_datapath:
        return math.inf, 0.0
    return decode_rate, decode_latency
