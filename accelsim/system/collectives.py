"""Collective times on an interconnect: all-reduce and all-gather, from message size, devices and topology.

``bytes`` is the whole message (what every device holds before an all-reduce, or after an all-gather);
B is a device's port rate per direction (:attr:`Interconnect.port_bytes_per_s`), L the step latency.
Registered algorithms (``interconnect.algorithm``):

- ``ring`` (ring or switch): reduce-scatter then all-gather around a ring, N - 1 steps each. All-reduce
  2(N-1)/N x bytes / B + 2(N-1) x L; all-gather (N-1)/N x bytes / B + (N-1) x L (Patarasuk and Yuan, "Bandwidth
  optimal all-reduce algorithms for clusters of workstations", JPDC 2009; NCCL's ring).
- ``direct`` (switch; the switch default): the same reduce-scatter and all-gather, each done in one step in
  which every device sends its (N-1) shards straight to their owners through the switch. Bytes as the ring,
  latency 2 x L (all-gather: L), since a switch gives each device its full port rate to all others at once.
- ``in_switch`` (switch): reduction in the switch (NVSwitch gen 3 NVLink SHARP, "NVLS"; NVIDIA developer blog
  "Upgrading Multi-GPU Interconnectivity with the Third-Generation NVIDIA NVSwitch", 2022): each device sends its
  bytes up once and receives the reduced bytes once, the two directions at once: bytes / B + 2 x L; all-gather
  by switch multicast, each device receiving the (N-1)/N x bytes it lacks: (N-1)/N x bytes / B + L.

One device (N = 1) communicates nothing: 0 s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelsim.system.interconnect import Interconnect

COLLECTIVES = ("all_reduce", "all_gather")
Formula = Callable[[float, int, float, float], float]  # (bytes, devices, bytes per second, latency s) -> s


@dataclass(frozen=True)
class Algorithm:
    """A collective algorithm: the topologies it runs on and its time formula per collective."""

    name: str
    topologies: tuple[str, ...]
    all_reduce: Formula
    all_gather: Formula


ALGORITHMS: dict[str, Algorithm] = {}


def register_algorithm(algo: Algorithm) -> None:
    """Make ``algo`` available as ``interconnect.algorithm: <name>``."""
    ALGORITHMS[algo.name] = algo


register_algorithm(Algorithm(
    "ring", ("ring", "switch"),
    lambda b, n, bw, lat: 2 * (n - 1) / n * b / bw + 2 * (n - 1) * lat,
    lambda b, n, bw, lat: (n - 1) / n * b / bw + (n - 1) * lat))
register_algorithm(Algorithm(
    "direct", ("switch",),
    lambda b, n, bw, lat: 2 * (n - 1) / n * b / bw + 2 * lat,
    lambda b, n, bw, lat: (n - 1) / n * b / bw + lat))
register_algorithm(Algorithm(
    "in_switch", ("switch",),
    lambda b, n, bw, lat: b / bw + 2 * lat,
    lambda b, n, bw, lat: (n - 1) / n * b / bw + lat))


def collective_seconds(kind: str, message_bytes: float, devices: int, ic: Interconnect) -> float:
    """Seconds for one ``kind`` collective (all_reduce, all_gather) of ``message_bytes`` over ``devices``."""
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; expected one of {COLLECTIVES}")
    if devices <= 1 or message_bytes <= 0:
        return 0.0
    algo = ALGORITHMS[ic.algorithm_name]
    formula = algo.all_reduce if kind == "all_reduce" else algo.all_gather
    return formula(float(message_bytes), devices, ic.port_bytes_per_s, ic.latency_us * 1e-6)
