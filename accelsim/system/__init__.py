"""Multi-device systems: the interconnect config and the collective-time model (all-reduce, all-gather).

A system is ``devices`` copies of one hardware config joined by an ``interconnect``
(:class:`~accelsim.system.interconnect.Interconnect`); :func:`~accelsim.system.collectives.collective_seconds`
turns a message size into time on it. A plain device config is a 1-device system with no communication.
"""

from accelsim.system.collectives import ALGORITHMS, COLLECTIVES, collective_seconds, register_algorithm
from accelsim.system.interconnect import Interconnect, SystemSpec

__all__ = ["ALGORITHMS", "COLLECTIVES", "Interconnect", "SystemSpec", "collective_seconds", "register_algorithm"]
