"""The interconnect of a multi-device system and the system section a hardware value carries.

Bandwidth is per direction: ``link_bandwidth_gbs`` is one link's rate each way and ``links_per_device`` how
many links a device has, so a device's port moves ``links_per_device x link_bandwidth_gbs x
bandwidth_efficiency`` GB/s out (and as much in) at once. NVIDIA quotes bidirectional totals (A100: 12 links,
600 GB/s; H100 SXM: 18 links, 900 GB/s): per direction that is half, 25 GB/s per link.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accelsim.config import schema as configio
from accelsim.system.collectives import ALGORITHMS

_Rate = Annotated[float, Field(ge=configio.MIN_RATE, le=configio.MAX_FLOAT)]  # a divisor: bounded below
_NonNegFloat = Annotated[float, Field(ge=0, le=configio.MAX_FLOAT)]
MAX_DEVICES = 4096

TOPOLOGIES = ("switch", "ring")
OVERLAPS = ("none", "producer")
MOE_SPLITS = ("tp_inside_experts",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Interconnect(_Strict):
    """How the devices of a system talk: topology, per-link bandwidth and latency, and the modelling choices."""

    topology: Literal["switch", "ring"] = Field(
        description="switch: every device reaches every other through a switch at its full port rate "
                    "(NVLink + NVSwitch); ring: each device sends to one neighbour (a ring of links).")
    link_bandwidth_gbs: _Rate = Field(description="One link's bandwidth per direction, GB/s (10^9 B/s).")
    links_per_device: Annotated[int, Field(gt=0, le=1024)] = Field(
        1, description="Links per device; a device's port rate per direction is links x link_bandwidth_gbs.")
    latency_us: _NonNegFloat = Field(description="Latency of one communication step (one hop and its "
                                                 "synchronisation), microseconds.")
    bandwidth_efficiency: Annotated[float, Field(gt=0, le=1)] = Field(
        1.0, description="Share of the port rate a collective sustains (1.0: the spec-sheet rate).")
    algorithm: str | None = Field(
        None, description="The all-reduce algorithm (accelsim.system.collectives.ALGORITHMS); None: the "
                          "topology's default (switch: direct, ring: ring).")
    overlap: Literal["none", "producer"] = Field(
        "none", description="none: each collective sits on the critical path (Megatron's tensor-parallel "
                            "all-reduces as deployed); producer: it overlaps the GEMM producing its message "
                            "(chunked GEMM + collective kernels), only the part longer than that GEMM shows.")

    @model_validator(mode="after")
    def _algorithm_fits(self) -> Interconnect:
        if self.algorithm is not None:
            algo = ALGORITHMS.get(self.algorithm)
            if algo is None:
                raise configio.FieldError(("algorithm",), f"unknown algorithm {self.algorithm!r}; expected one "
                                                          f"of {', '.join(sorted(ALGORITHMS))}")
            if self.topology not in algo.topologies:
                raise configio.FieldError(("algorithm",), f"{self.algorithm} runs on a {' or '.join(algo.topologies)}"
                                                          f" topology, not {self.topology}")
        return self

    @property
    def port_bytes_per_s(self) -> float:
        """Bytes per second one device sends (and receives) at once over all its links."""
        return self.links_per_device * self.link_bandwidth_gbs * 1e9 * self.bandwidth_efficiency

    @property
    def algorithm_name(self) -> str:
        """The all-reduce algorithm in force (the topology's default when none is named)."""
        return self.algorithm or ("direct" if self.topology == "switch" else "ring")


class SystemSpec(_Strict):
    """``devices`` copies of one hardware config, tensor-parallel over an ``interconnect``."""

    name: str = Field(min_length=1, description="The system's name (results show it as the hardware name).")
    devices: Annotated[int, Field(gt=0, le=MAX_DEVICES)] = Field(description="Devices in the tensor-parallel group.")
    device: str = Field(min_length=1, description="The device's hardware config name (as its file names it).")
    interconnect: Interconnect
    moe_split: Literal["tp_inside_experts"] = Field(
        "tp_inside_experts", description="How MoE layers are split: every expert tensor-parallel over all devices "
                                         "(Megatron's default without expert parallelism).")
