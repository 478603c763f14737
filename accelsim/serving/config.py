"""Serving-model settings (:class:`RuntimeConfig`: batching, instances, shape buckets, LLM limits,
variability sources), their bounds, the seed streams, and :class:`ServingError`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from accelsim.config import schema as configio
from accelsim.errors import AccelsimError
from accelsim.hardware.model import PosInt, Strict

__all__ = [
    "ServingError", "DoesNotFitError", "JitterSource", "ThrottleSource", "Variability", "RuntimeConfig",
    "MAX_INSTANCES", "MAX_BATCH", "MAX_JITTER_SIGMA",
    "MAX_WAIT_MS", "SEED_STREAMS", "DEFAULT_OUTPUT_TOKENS", "DEFAULT_REQUESTS_PER_EVAL", "DEFAULT_DURATION_S",
    "pad_to", "batch_key",
]

MAX_INSTANCES = 1024
MAX_BATCH = 1024
MAX_WAIT_MS = 3_600_000.0  # one hour

SEED_STREAMS = {"arrivals": 0, "sizes": 1, "output_tokens": 2, "service_dist": 3, "jitter": 4, "throttle": 5}
DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_REQUESTS_PER_EVAL = 20_000
DEFAULT_DURATION_S = 10.0  # simulated seconds of Poisson arrivals when none is given
MAX_JITTER_SIGMA = 2.0  # lognormal sigma of the jitter factor; see JitterSource.sigma


class ServingError(AccelsimError):
    """A serving-model input is invalid (bad size spec, trace, rate, variants file)."""


class DoesNotFitError(ServingError):
    """An LLM's weights as deployed leave no room for a KV cache on one instance of the hardware.

    ``weights_bytes``: the weights as deployed (per device of a tensor-parallel group); ``capacity_bytes``:
    one device's ``dram.capacity_bytes``, of which ``memory_utilization`` is usable for weights and KV cache."""

    def __init__(self, hardware: str, weights_bytes: int, capacity_bytes: int, memory_utilization: float) -> None:
        self.hardware = hardware
        self.weights_bytes = int(weights_bytes)
        self.capacity_bytes = int(capacity_bytes)
        self.memory_utilization = float(memory_utilization)
        super().__init__(f"{hardware}: weights as deployed ({self.weights_bytes:,} bytes) leave no room for a KV "
                         f"cache in dram.capacity_bytes {self.capacity_bytes:,} x memory_utilization "
                         f"{self.memory_utilization}")

    @property
    def short(self) -> str:
        """``does not fit (weights 93.41 GB, device 85.90 GB x memory_utilization 0.9)`` (GB: 1e9 bytes)."""
        return (f"does not fit (weights {_size(self.weights_bytes)}, device {_size(self.capacity_bytes)} x "
                f"memory_utilization {self.memory_utilization:g})")

    def to_dict(self) -> dict[str, Any]:
        """The figures and :attr:`short`, as serve.json and report.json record a deployment that does not fit."""
        return {"weights_deployed_bytes": self.weights_bytes, "dram_capacity_bytes": self.capacity_bytes,
                "memory_utilization": self.memory_utilization, "message": self.short}


def _size(n: int) -> str:
    """``93.41 GB``, ``12.58 MB``: decimal units (1 GB = 1e9 bytes), two decimals."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,} B"


class JitterSource(Strict):
    """Service-time jitter: each batch's time x exp(sigma*Z - sigma^2/2), Z ~ N(0, 1) (mean factor 1)."""

    enabled: bool = False
    sigma: float = Field(0.05, ge=0.0, le=MAX_JITTER_SIGMA, allow_inf_nan=False,
                         description="Lognormal sigma of the per-batch service-time factor (at most 2: the median "
                         "factor is exp(-sigma^2/2), 0.14 at sigma 2, so above it nearly every batch runs at a "
                         "sliver of its simulated time and the mean-1 factor rests on rare huge draws).")


class ThrottleSource(Strict):
    """Clock-throttle episodes: Poisson arrivals of episodes during which the clock is slowed."""

    enabled: bool = False
    episodes_per_s: float = Field(0.2, gt=0.0, description="Mean episode starts per simulated second.")
    duration_ms: float = Field(100.0, gt=0.0, description="Length of one episode.")
    clock_factor: float = Field(0.7, gt=0.0, le=1.0, description="Clock during an episode, as a share of "
                                "nominal: a batch starting inside one takes 1/clock_factor as long.")


class Variability(Strict):
    """Named, seeded variability sources; all off by default."""

    jitter: JitterSource = JitterSource()
    throttle: ThrottleSource = ThrottleSource()

    @property
    def any_enabled(self) -> bool:
        """Whether any source is on."""
        return self.jitter.enabled or self.throttle.enabled


Instances = Annotated[int, Field(gt=0, le=MAX_INSTANCES)]
BatchSize = Annotated[int, Field(gt=0, le=MAX_BATCH)]


class RuntimeConfig(Strict):
    """Serving-model settings: batching, instances, shape buckets, LLM limits, variability.

    A plain, dict-able value (``to_dict`` / ``from_dict``; unknown keys rejected), so it can later move
    into the hardware schema unchanged.
    """

    instances: Instances = Field(1, description="Identical accelerator instances serving one FIFO "
                              "queue.")
    max_batch: BatchSize = Field(8, description="Largest batch (one-shot) / decode batch (LLM).")
    max_wait_ms: float = Field(2.0, ge=0.0, le=MAX_WAIT_MS, allow_inf_nan=False,
                               description="Longest the oldest request waits for a batch to fill.")
    size_bucket: PosInt = Field(64, description="Request sizes (seq, prompt tokens) are padded up to a "
                                "multiple of this for the service-time lookup (1 = exact).")
    batch_bucket: Literal["exact", "pow2"] = Field("exact", description="Batch sizes for the service-time "
                                                   "lookup: exact, or padded up to a power of two (<= max_batch).")
    kv_bucket: PosInt = Field(128, description="LLM: decode steps run at the batch's longest context padded "
                              "up to a multiple of this.")
    max_prefill_tokens: PosInt = Field(8192, description="LLM: padded prompt tokens per prefill iteration "
                                       "(at least one request).")
    memory_utilization: float = Field(0.9, gt=0.0, le=1.0, description="LLM: share of dram.capacity_bytes "
                                      "usable for weights + KV cache (the rest: activations, workspace).")
    variability: Variability = Variability()

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able data."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, source: str = "<runtime config>") -> RuntimeConfig:
        """Validate plain data (missing keys take their defaults)."""
        return configio.validate(cls, dict(data or {}), source)

    def replace(self, **changes: Any) -> RuntimeConfig:
        """A copy with some fields changed (validated)."""
        return RuntimeConfig.from_dict({**self.to_dict(), **changes})


def pad_to(value: int, step: int) -> int:
    """``value`` rounded up to a multiple of ``step`` (a size bucket)."""
    return -(-int(value) // step) * step


def batch_key(b: int, mode: str, max_batch: int) -> int:
    """The batch size a batch of ``b`` is looked up at: ``b`` (exact) or the next power of two (pow2)."""
    if mode == "exact" or b <= 1:
        return b
    return min(1 << (b - 1).bit_length(), max(max_batch, b))
