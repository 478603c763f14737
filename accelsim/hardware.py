"""Hardware description: validated, frozen value objects loaded from YAML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from . import configio
from .errors import ConfigError
from .sparsity import Pattern, parse_pattern

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Unlimited = Literal["unlimited"]


class Strict(BaseModel):
    """Base for config values: unknown keys rejected, YAML types taken as they are, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SystolicCompute(Strict):
    """An R x C systolic array with SCALE-Sim dataflow semantics."""

    kind: Literal["systolic"] = Field(description="Compute model: a systolic array of PEs.")
    rows: PosInt = Field(description="PE rows (SCALE-Sim ArrayHeight).")
    cols: PosInt = Field(description="PE columns (SCALE-Sim ArrayWidth).")
    dataflow: Literal["os", "ws", "is"] = Field(
        "ws", description="Which operand stays in the PEs: os = outputs, ws = weights (A), is = inputs (B).")
    output_drain: Literal["serial", "overlapped"] = Field(
        "serial",
        description="os only: 'serial' adds a rows-cycle output drain per fold (physical, as in the "
                    "SCALE-Sim paper); 'overlapped' hides it behind the next fold (as SCALE-Sim v3's code counts).")
    accumulator_bytes: PosInt = Field(
        4, description="Bytes per partial sum when partial outputs spill to DRAM between reduction folds.")


ComputeSpec = Annotated[SystolicCompute, Field(discriminator="kind")]


class SramSpec(Strict):
    """On-chip buffers feeding the array."""

    bytes: PosInt | None = Field(
        None, description="One unified SRAM, split equally into ifmap / filter / ofmap thirds.")
    ifmap_bytes: PosInt | None = Field(None, description="Buffer for operand B (activations).")
    filter_bytes: PosInt | None = Field(None, description="Buffer for operand A (weights: values + metadata).")
    ofmap_bytes: PosInt | None = Field(None, description="Buffer for C (outputs and partial sums).")
    bandwidth_bytes_per_cycle: PosFloat | Unlimited = Field(
        "unlimited", description="SRAM fill/drain port: DRAM<->SRAM transfers run at min(DRAM, this). "
                                 "The array-side read ports are assumed to feed the array edge every cycle.")
    double_buffered: bool = Field(
        True, description="Each buffer is split in two halves so the next tile loads while this one computes.")
    im2col: Literal["on_chip", "in_dram"] = Field(
        "on_chip", description="Convolutions: 'on_chip' reads the ifmap from DRAM once and expands windows in "
                               "the SRAM address generator (DRAM bytes of B scale by ifmap / im2col size); "
                               "'in_dram' streams the expanded im2col matrix (k x n elements).")

    @model_validator(mode="after")
    def _one_layout(self) -> SramSpec:
        split = [self.ifmap_bytes, self.filter_bytes, self.ofmap_bytes]
        if self.bytes is not None and any(v is not None for v in split):
            raise ValueError("give either 'bytes' (unified) or ifmap_bytes/filter_bytes/ofmap_bytes, not both")
        if self.bytes is None and any(v is None for v in split):
            raise ValueError("give either 'bytes' (unified) or all three of ifmap_bytes, filter_bytes, ofmap_bytes")
        return self

    def buffer_bytes(self) -> dict[str, int]:
        """Capacity of each operand buffer (unified SRAM split in thirds)."""
        if self.bytes is not None:
            third = self.bytes // 3
            return {"ifmap": third, "filter": third, "ofmap": third}
        return {"ifmap": int(self.ifmap_bytes), "filter": int(self.filter_bytes), "ofmap": int(self.ofmap_bytes)}

    def buffer_key(self, which: str) -> str:
        """Config key that sets the capacity of buffer ``which``."""
        return "core.sram.bytes" if self.bytes is not None else f"core.sram.{which}_bytes"


class PatternSupport(Strict):
    """One N:M pattern the sparse datapath runs natively."""

    metadata_bits_per_value: NonNegInt | None = Field(
        None, description="Metadata bits stored per kept value; default ceil(log2(M)) (2 for 2:4, 3 for 4:8).")
    speedup: PosFloat | None = Field(
        None, description="Sparse datapath MAC rate relative to dense; default M/N (2.0 for 2:4).")


class SparseSpec(Strict):
    """The sparse datapath on operand A: native patterns and the metadata-decode stage."""

    patterns: dict[str, PatternSupport] = Field(description="Native N:M patterns, e.g. {\"2:4\": {}}.")
    decode_groups_per_cycle: PosFloat | Unlimited = Field(
        description="Metadata-decode throughput: N:M groups decoded per cycle per core.")
    decode_latency_cycles: NonNegInt = Field(0, description="Cycles from a tile's decode end to its data being usable.")

    @field_validator("patterns")
    @classmethod
    def _patterns_valid(cls, value: dict[str, PatternSupport]) -> dict[str, PatternSupport]:
        if not value:
            raise ValueError("list at least one pattern, or remove the 'sparse' block")
        for key in value:
            pat = parse_pattern(key)
            if pat is None:
                raise ValueError(f"pattern {key!r} is dense; list only N:M patterns with N < M")
        return value

    def native(self) -> dict[Pattern, PatternSupport]:
        """Native patterns keyed by parsed Pattern."""
        return {parse_pattern(k): v for k, v in self.patterns.items()}  # type: ignore[misc]

    def metadata_bits(self, pattern: Pattern) -> int:
        """Metadata bits per kept value for a native pattern."""
        spec = self.native()[pattern]
        return pattern.default_metadata_bits if spec.metadata_bits_per_value is None else spec.metadata_bits_per_value


class CoreSpec(Strict):
    """One core: compute array, its SRAM and optional sparse datapath."""

    compute: ComputeSpec
    sram: SramSpec
    sparse: SparseSpec | None = Field(None, description="Absent: no sparse datapath (N:M layers run dense).")


class DramSpec(Strict):
    """Off-chip memory."""

    bandwidth_gb_s: PosFloat | Unlimited = Field(
        description="GB/s (1e9 bytes/s) shared by all cores; 'unlimited' never stalls.")
    latency_ns: NonNegFloat = Field(0.0, description="Time from a transfer's issue to its last byte being usable; "
                                                     "transfers are pipelined, latency does not occupy bandwidth.")
    capacity_bytes: PosInt | None = Field(None, description="DRAM capacity, for footprint warnings.")


class LaunchOverhead(Strict):
    """Fixed cost per kernel (layer), before its first tile."""

    dense: NonNegInt = Field(0, description="Cycles per dense kernel.")
    sparse: NonNegInt = Field(0, description="Cycles per sparse kernel.")


class Hardware(Strict):
    """A complete accelerator description."""

    name: str = Field(min_length=1, description="Short name shown in results and charts.")
    clock_ghz: PosFloat = Field(description="Core clock in GHz: converts cycles to seconds.")
    cores: PosInt = Field(1, description="Identical cores sharing DRAM.")
    core: CoreSpec
    dram: DramSpec
    launch_overhead_cycles: LaunchOverhead = Field(default_factory=LaunchOverhead)

    @model_validator(mode="after")
    def _cores_supported(self) -> Hardware:
        if self.cores != 1 and self.core.compute.kind == "systolic":
            raise ValueError("systolic parts are modelled with cores: 1")
        return self

    # -- derived, in cycles ------------------------------------------------
    def dram_bytes_per_cycle(self) -> float:
        """DRAM bandwidth in bytes per core clock cycle (inf when unlimited)."""
        bw = self.dram.bandwidth_gb_s
        return float("inf") if bw == "unlimited" else float(bw) / self.clock_ghz

    def fill_bytes_per_cycle(self) -> float:
        """DRAM -> SRAM transfer rate for one core: min(DRAM, SRAM port)."""
        sram = self.core.sram.bandwidth_bytes_per_cycle
        sram_bw = float("inf") if sram == "unlimited" else float(sram)
        return min(self.dram_bytes_per_cycle(), sram_bw)

    def dram_latency_cycles(self) -> float:
        return self.dram.latency_ns * self.clock_ghz

    def to_dict(self) -> dict[str, Any]:
        """Resolved config (defaults filled in) as plain JSON-able data."""
        return self.model_dump(mode="json")

    def config_hash(self) -> str:
        return configio.canonical_hash(self.to_dict())


def hardware_from_dict(data: dict[str, Any], source: str = "<hardware>") -> Hardware:
    """Validate a plain dict into Hardware."""
    return configio.validate(Hardware, data, source)


def load_hardware(path: str | Path, overrides: list[str] | None = None) -> Hardware:
    """Load and validate a hardware YAML; ``overrides`` are ``dotted.path=value`` strings."""
    data, _ = configio.read_yaml(path)
    src = str(path)
    for item in overrides or []:
        data = apply_override(data, item, src)
    return hardware_from_dict(data, src)


def apply_override(data: dict[str, Any], item: str, source: str) -> dict[str, Any]:
    """Return a copy of ``data`` with one ``dotted.path=value`` override (value parsed as YAML)."""
    import copy

    import yaml

    if "=" not in item:
        raise ConfigError(source, item, "override must look like dotted.path=VALUE")
    path, _, raw = item.partition("=")
    keys = [k for k in path.strip().split(".") if k]
    if not keys:
        raise ConfigError(source, item, "override needs a key path before '='")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        raise ConfigError(source, path, f"cannot parse override value {raw!r}") from None
    out = copy.deepcopy(data)
    node = out
    for i, key in enumerate(keys[:-1]):
        nxt = node.get(key) if isinstance(node, dict) else None
        if nxt is None:
            nxt = {}
            node[key] = nxt
        elif not isinstance(nxt, dict):
            raise ConfigError(source, ".".join(keys[: i + 1]), "is a value, cannot set a key below it")
        node = nxt
    node[keys[-1]] = value
    return out


def hardware_schema() -> str:
    """JSON Schema of the hardware config, for editor completion."""
    return json.dumps(Hardware.model_json_schema(), indent=2, sort_keys=True)
