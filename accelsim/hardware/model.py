"""Hardware description: validated, frozen value objects loaded from YAML."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from accelsim.config import schema as configio
from accelsim.config import yamlsafe as yamlload
from accelsim.errors import ConfigError
from accelsim.formats import SparsityFormat, parse_format, parse_spelling
from accelsim.hardware import kinds
from accelsim.hardware.attention import AttentionSpec, default_form
from accelsim.hardware.base import (  # noqa: F401 (re-exported: config sections elsewhere use them)
    BigNonNegInt,
    BigPosInt,
    ClockGHz,
    DtypeName,
    Fraction,
    NonNegFloat,
    NonNegInt,
    OmitsDefaults,
    PosFloat,
    PosFloatOrUnlimited,
    PosInt,
    Rate,
    RateOrUnlimited,
    Strict,
    Triple,
    Unlimited,
)
from accelsim.hardware.families import (
    META_KEYS,
    HardwareData,
    read_hardware_data,
)
from accelsim.hardware.formats_support import FormatsSpec, UnstructuredSupport  # noqa: F401 (re-exported)
from accelsim.hardware.provenance import Provenance, peak_problems, provenance
from accelsim.hardware.systems import is_system_data, read_system, refuse_device_override, system_data
from accelsim.hardware.systolic import SystolicCompute  # noqa: F401 (re-exported)
from accelsim.hardware.tensor_core import TensorCoreCompute  # noqa: F401 (re-exported)
from accelsim.hardware.vnm_block import BlockSupport, VnmSupport
from accelsim.system import SystemSpec
from accelsim.textsafe import short_repr

if TYPE_CHECKING:  # the shipped kinds, for type checkers; at run time the registry's union
    ComputeSpec = SystolicCompute | TensorCoreCompute
else:
    ComputeSpec = kinds.compute_union()  # the registered kinds' schemas, told apart by ``kind``


class SramSpec(Strict):
    """On-chip buffers feeding the array."""

    bytes: PosInt | None = Field(
        None, description="One unified SRAM, split equally into ifmap / filter / ofmap thirds.")
    ifmap_bytes: PosInt | None = Field(None, description="Buffer for operand B (activations).")
    filter_bytes: PosInt | None = Field(None, description="Buffer for operand A (weights: values + metadata).")
    ofmap_bytes: PosInt | None = Field(None, description="Buffer for C (outputs and partial sums).")
    bandwidth_bytes_per_cycle: RateOrUnlimited = Field(
        "unlimited", description="SRAM fill/drain port: DRAM<->SRAM transfers run at min(DRAM, this). "
                                 "The array-side read ports are assumed to feed the array edge every cycle.")
    double_buffered: bool = Field(
        True, description="Each buffer is split in two halves so the next tile loads while this one computes.")
    stages: PosInt | None = Field(
        None, description="Tiles in flight per buffer (software pipeline depth); default 2 when "
                          "double_buffered else 1. GPU kernels use 3-5 stages to hide DRAM latency.")
    im2col: Literal["on_chip", "in_dram"] = Field(
        "on_chip", description="Convolutions: 'on_chip' reads the ifmap from DRAM once and expands windows in "
                               "the SRAM address generator (tensor_core: implicit GEMM; DRAM bytes of B scale by "
                               "ifmap / im2col size, SRAM bytes stay the expanded tiles); "
                               "'in_dram' streams the expanded im2col matrix (k x n elements).")

    @model_validator(mode="after")
    def _stages_agree(self) -> SramSpec:
        if not self.double_buffered and self.stages is not None and self.stages > 1:
            raise configio.FieldError(("double_buffered",), f"false contradicts core.sram.stages: {self.stages} "
                                      "(stages sets the pipeline depth; give stages: 1 for no double buffering)")
        return self

    @model_validator(mode="after")
    def _one_layout(self) -> SramSpec:
        split = [self.ifmap_bytes, self.filter_bytes, self.ofmap_bytes]
        if self.bytes is not None and any(v is not None for v in split):
            raise ValueError("give either 'bytes' (unified) or ifmap_bytes/filter_bytes/ofmap_bytes, not both")
        if self.bytes is None and any(v is None for v in split):
            raise ValueError("give either 'bytes' (unified) or all three of ifmap_bytes, filter_bytes, ofmap_bytes")
        return self

    def n_stages(self) -> int:
        """Tiles in flight per buffer."""
        return self.stages if self.stages is not None else (2 if self.double_buffered else 1)

    def buffer_bytes(self) -> dict[str, int]:
        """Capacity of each operand buffer (unified SRAM split in thirds)."""
        if self.bytes is not None:
            third = self.bytes // 3
            return {"ifmap": third, "filter": third, "ofmap": third}
        ifmap, filt, ofmap = self.ifmap_bytes, self.filter_bytes, self.ofmap_bytes
        assert ifmap is not None and filt is not None and ofmap is not None  # _one_layout: all three without 'bytes'
        return {"ifmap": ifmap, "filter": filt, "ofmap": ofmap}

    def buffer_key(self, which: str) -> str:
        """Config key that sets the capacity of buffer ``which``."""
        return "core.sram.bytes" if self.bytes is not None else f"core.sram.{which}_bytes"


class PatternSupport(Strict):
    """One N:M pattern the sparse datapath runs natively."""

    metadata_bits_per_value: NonNegInt | None = Field(
        None, description="Metadata bits stored per kept value; default ceil(log2(M)) (2 for 2:4, 3 for 4:8).")
    speedup: Rate | None = Field(
        None, description="tensor_core only: sparse MAC rate (logical MACs) relative to dense; default M/N.")
    dtypes: list[DtypeName] | None = Field(
        None, description="Element types this pattern runs (e.g. 4:8-paired only for int4 / fp4); absent = every "
                          "type the sparse datapath supports (core.sparse.dtypes). A type no listed pattern runs "
                          "falls back (pattern_unsupported).")


class WeightMultiple(Strict):
    """Multiples the sparse operand's rows and columns must be (1 = any)."""

    m: PosInt = 1
    k: PosInt = 1


_OPTIONAL_FORMAT_SECTIONS = ("vnm", "block")


class SparseSpec(OmitsDefaults):
    """The sparse datapath on operand A: native patterns and the metadata-decode stage."""

    patterns: dict[str, PatternSupport] = Field(description="Native N:M patterns, e.g. {\"2:4\": {}}.")
    formats: FormatsSpec | None = Field(
        None, description="Formats that are not native patterns (unstructured), by family: how this part runs each "
                          "(accelsim/formats/<family>.py). Absent: they fall back dense (format_unsupported).")
    decode_groups_per_cycle: RateOrUnlimited = Field(
        description="Metadata-decode throughput: N:M groups decoded per cycle per core.")
    decode_latency_cycles: NonNegInt = Field(0, description="Cycles from a tile's decode end to its data being usable.")
    dtypes: list[DtypeName] | None = Field(
        None, description="Element types the sparse datapath supports; absent = all. Others fall back "
                          "(dtype_unsupported).")
    weight_shape_multiple: WeightMultiple = Field(
        default_factory=lambda: WeightMultiple(), description="Library rule: the sparse operand's rows (m) and "
        "columns (k) must be positive multiples of these, else the layer runs dense (shape_below_minimum).")
    dense_operand_align: PosInt = Field(
        1, description="Library rule: on the sparse path the dense operand B is padded so n is a multiple of "
                       "this (PyTorch/cuSPARSELt pads fp16 to 32 columns: a 1-token GEMM computes 32).")
    vnm: VnmSupport | None = Field(
        None, description="V:N:M (e.g. 64:2:8) on a native N:M pattern with a column-gather stage; absent: V:N:M "
                          "layers run dense (format_unsupported).")
    block: BlockSupport | None = Field(
        None, description="Block sparsity (e.g. block32x32:75%) on the dense datapath over the nonzero blocks; "
                          "absent: block-sparse layers run dense (format_unsupported).")

    @field_validator("patterns", mode="before")
    @classmethod
    def _keys_are_text(cls, value: Any) -> Any:
        for key in value if isinstance(value, dict) else ():
            if not isinstance(key, str):
                parse_spelling(key)  # raises a hint (an unquoted 2:4 key is the number 124)
                raise ValueError(f"pattern keys must be quoted text like \"2:4\", got {key!r}")
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns_valid(cls, value: dict[str, PatternSupport]) -> dict[str, PatternSupport]:
        if not value:
            raise ValueError("list at least one pattern, or remove the 'sparse' block")
        for key in value:
            pat = parse_format(key)
            if pat is None:
                raise ValueError(f"pattern {key!r} is dense; list only N:M patterns with N < M")
            if pat.key in _OPTIONAL_FORMAT_SECTIONS:
                raise ValueError(f"{key!r} is a {pat.title} pattern, not a native one: say how the part runs "
                                 f"{pat.title} under core.sparse.{pat.key}")
            if not pat.native:
                where = "core.sparse.formats" if pat.needs_support else "no entry: every part runs it dense"
                raise ValueError(f"{key!r} is not a native pattern of the sparse datapath ({where})")
        return value

    # ``formats`` and the V:N:M / block sections stay out of the resolved config when absent (configs written
    # before them read the same)
    omitted = dict.fromkeys(("formats", *_OPTIONAL_FORMAT_SECTIONS))

    @model_validator(mode="after")
    def _vnm_runs_on_a_native_pattern(self) -> SparseSpec:
        if self.vnm is not None and self.vnm.runs_on not in self.patterns:
            raise configio.FieldError(("vnm", "runs_on"), f"{self.vnm.runs_on!r} is not one of core.sparse.patterns "
                                      f"({', '.join(self.patterns)})")
        if self.vnm is not None and parse_format(self.vnm.runs_on).group != 4:  # type: ignore[union-attr]
            raise configio.FieldError(("vnm", "runs_on"), f"{self.vnm.runs_on!r}: V:N:M runs its 4 selected columns "
                                      "on an N:4 pattern (e.g. 2:4)")
        return self

    @model_validator(mode="after")
    def _pattern_dtypes_supported(self) -> SparseSpec:
        if self.dtypes is None:
            return self
        for key, spec in self.patterns.items():
            extra = [d for d in spec.dtypes or () if d not in self.dtypes]
            if extra:
                raise configio.FieldError(("patterns", key, "dtypes"), f"{extra[0]} is not in core.sparse.dtypes "
                                          f"({', '.join(self.dtypes)}): list it there too, or leave it out here")
        return self

    def runs(self, pattern: SparsityFormat, dtype: str) -> bool:
        """Whether native ``pattern`` runs element type ``dtype`` (its own ``dtypes``, then core.sparse.dtypes)."""
        spec = self.native()[pattern]
        if spec.dtypes is not None:
            return dtype in spec.dtypes
        return self.dtypes is None or dtype in self.dtypes

    def native(self) -> dict[SparsityFormat, PatternSupport]:
        """Native formats keyed by the parsed format (config order)."""
        return {parse_format(k): v for k, v in self.patterns.items()}  # type: ignore[misc]

    def rate(self, pattern: SparsityFormat) -> float:
        """Sparse datapath rate in logical MACs relative to dense."""
        spec = self.native()[pattern]
        return pattern.dense_speedup if spec.speedup is None else float(spec.speedup)

    def metadata_bits(self, pattern: SparsityFormat) -> int:
        """Metadata bits per kept value for a native format."""
        spec = self.native()[pattern]
        return pattern.default_metadata_bits if spec.metadata_bits_per_value is None else spec.metadata_bits_per_value


class CoreSpec(Strict):
    """One core: compute array, its SRAM and optional sparse datapath."""

    compute: ComputeSpec
    sram: SramSpec
    sparse: SparseSpec | None = Field(None, description="Absent: no sparse datapath (N:M layers run dense).")


class DramSpec(Strict):
    """Off-chip memory."""

    bandwidth_gb_s: RateOrUnlimited = Field(
        description="GB/s (1e9 bytes/s) shared by all cores; 'unlimited' never stalls.")
    latency_ns: NonNegFloat = Field(0.0, description="Time from a transfer's issue to its last byte being usable; "
                                                     "transfers are pipelined, latency does not occupy bandwidth.")
    capacity_bytes: BigPosInt | None = Field(None, description="DRAM capacity, for footprint warnings.")
    sustained_fraction: Fraction = Field(
        1.0, description="Share of the peak bandwidth a kernel's access stream sustains (row-buffer and "
                         "refresh losses, request scheduling); CALIBRATED where not 1.")


VECTOR_OPS_PER_ELEMENT: dict[str, float] = {
    "embedding": 0.0, "batchnorm": 2.0, "layernorm": 8.0, "rmsnorm": 6.0, "softmax": 6.0, "elementwise": 1.0,
    "pool": 1.0, "depthwise": 2.0, "unsupported": 1.0, "relu": 1.0, "relu6": 2.0, "clip": 2.0, "gelu": 10.0,
    "silu": 5.0, "sigmoid": 4.0, "tanh": 4.0, "hardswish": 4.0,
}


class VectorSpec(OmitsDefaults):
    """The vector unit (SIMD lanes / CUDA cores) that runs ops sparsity does not touch.

    A vector kernel streams its bytes through the unit in chunks (``chunk_bytes``, at most ``max_chunks`` of
    them), ``stages`` deep: each chunk pays the DRAM latency, so the depth sets how much of it is hidden."""

    # the streaming fields stay out of the resolved config at their defaults (configs hash as before them)
    omitted = {"chunk_bytes": 65536, "max_chunks": 64, "stages": 2}

    ops_per_cycle: Rate = Field(256.0, description="Element operations per cycle, whole part (all cores).")
    ops_per_element: dict[str, NonNegFloat] = Field(
        default_factory=lambda: dict(VECTOR_OPS_PER_ELEMENT),
        description="Operations per output element by op (activations by function; pool and depthwise per "
                    "window element). Keys given here override the defaults; the resolved table is echoed.")
    launch_overhead_cycles: NonNegInt = Field(0, description="Fixed cost per vector kernel.")
    depthwise: Literal["array", "vector"] = Field(
        "array", description="Where depthwise convs run: on the array as per-group GEMMs, or on the vector unit "
                             "(as GPU libraries do).")
    chunk_bytes: Annotated[int, Field(gt=0, le=1 << 30)] = Field(
        65536, description="Bytes (read + written) per streamed chunk of a vector kernel (at most 1 GiB); a kernel "
                           "runs ceil(bytes / chunk_bytes) chunks, at most max_chunks (then larger ones).")
    max_chunks: Annotated[int, Field(gt=0, le=1 << 16)] = Field(
        64, description="Most chunks one vector kernel is cut into (at most 65536).")
    stages: Annotated[int, Field(gt=0, le=64)] = Field(
        2, description="Chunks in flight per vector kernel (software pipeline depth, at most 64): 2 loads the next "
                       "chunk while this one computes, so one chunk's DRAM latency is exposed per chunk; deeper "
                       "hides more of it (GPU element-wise kernels keep many loads in flight).")

    @field_validator("ops_per_element", mode="before")
    @classmethod
    def _merge_defaults(cls, value: Any) -> Any:
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(VECTOR_OPS_PER_ELEMENT))
            if unknown:
                raise configio.FieldError((unknown[0],), "unknown op; known: " + ", ".join(VECTOR_OPS_PER_ELEMENT))
            return {**VECTOR_OPS_PER_ELEMENT, **value}
        return value


class L2Spec(Strict):
    """Cache shared by all cores, between their SRAM and DRAM."""

    bytes: PosInt = Field(description="Capacity.")
    bandwidth_bytes_per_cycle: Rate = Field(description="Total L2 -> core bandwidth, shared by active cores.")
    write_policy: Literal["write_back", "write_through"] = Field(
        "write_back", description="'write_back': a GEMM wave's output stores land in L2 at its port rate and are "
        "written to DRAM while they are stored and while the next wave loads (what the stores' time leaves undrained "
        "shares the loads' DRAM bandwidth: C is charged once, max of its store and DRAM times), when one "
        "wave's C fits in l2.bytes (NVIDIA's L2 is a write-back cache); 'write_through': each CTA's stores wait "
        "for DRAM (the model before issue 17's follow-up, ablation). Tensor-core parts only.")


class StaticPower(Strict):
    """Leakage / static power, drawn for the whole run."""

    core_w: NonNegFloat = Field(0.0, description="Watts per core.")
    l2_w: NonNegFloat = Field(0.0, description="Watts for the L2.")
    dram_w: NonNegFloat = Field(0.0, description="Watts for DRAM (refresh, PHY, background).")


class PowerCap(Strict):
    """A sustained power limit: each kernel settles at the highest clock whose power fits (``energy.py``)."""

    tdp_w: PosFloat = Field(description="Power limit in watts, compared with the moving-average power.")
    time_constant_s: PosFloat = Field(0.005, description="Time constant of the exponential moving average.")
    min_clock_fraction: Fraction = Field(0.3, description="Lowest clock the governor may set, as a fraction.")
    voltage_at_min_clock: Fraction = Field(
        0.7, description="Core voltage at min_clock_fraction, as a fraction of the voltage at the nominal clock; "
                         "voltage is linear in clock between the two (DVFS), and core dynamic energy per "
                         "operation scales with voltage squared. 1.0: frequency-only scaling. ESTIMATE: GPU "
                         "boards run ~0.7-0.8 V at their lowest clocks and ~1.0-1.1 V at boost.")
    gain: PosFloat = Field(0.5, description="Governor step: clock *= 1 + gain * (tdp - avg) / tdp per window.")
    window_s: PosFloat = Field(2e-5, description="Governor update interval (power is binned at this width; plot "
                               "power refuses one that cuts its trace into more than 10^6 windows).")


class EnergySpec(Strict):
    """Per-access energies and static power (pJ, W): the energy model."""

    mac_pj: dict[DtypeName, NonNegFloat] = Field(description="pJ per MAC on the dense datapath, by dtype.")
    sparse_mac_pj: dict[DtypeName, NonNegFloat] | None = Field(
        None, description="pJ per executed MAC on the sparse datapath (operand muxing included); default mac_pj.")
    sram_read_pj_per_byte: NonNegFloat = Field(description="pJ per byte read from SRAM / shared memory.")
    sram_write_pj_per_byte: NonNegFloat = Field(description="pJ per byte written to SRAM / shared memory.")
    l2_pj_per_byte: NonNegFloat = Field(0.0, description="pJ per byte through the L2.")
    dram_pj_per_byte: NonNegFloat = Field(description="pJ per byte read from or written to DRAM.")
    decode_pj_per_group: NonNegFloat = Field(0.0, description="pJ per N:M metadata group decoded.")
    vector_pj_per_op: NonNegFloat = Field(0.0, description="pJ per vector-unit element operation.")
    static: StaticPower = Field(default_factory=StaticPower)
    power_cap: PowerCap | None = Field(None, description="Optional sustained power limit (off when absent).")
    source: str = Field("", description="Where these figures come from (free text, echoed).")


class LaunchOverhead(OmitsDefaults):
    """Fixed cost per kernel (layer), before its first tile."""

    dense: NonNegInt = Field(0, description="Cycles per dense kernel.")
    sparse: NonNegInt = Field(0, description="Cycles per sparse kernel.")
    attention: NonNegInt | None = Field(
        None, description="Cycles per fused attention kernel; unset (left out of the resolved config): the "
                          "same as dense.")

    omitted = {"attention": None}

    def fused_attention(self) -> int:
        """Cycles per fused attention kernel: ``attention``, or ``dense`` when unset."""
        return self.dense if self.attention is None else self.attention


class HostSpec(Strict):
    """The host that issues the kernels: what one call costs it."""

    call_floor_us: Annotated[float, Field(ge=0, le=1e6)] = Field(
        0.0, description="Least wall time of one kernel call when a host issues calls back to back (its "
                                 "per-call cost: API, driver, harness; at most 1 s). A kernel whose launch + body is "
                                 "shorter starts that much later (the GPU waits for the call); the wait counts as "
                                 "launch cycles. 0 = not modelled (the GPU is the bottleneck).")


class Hardware(OmitsDefaults):
    """A complete accelerator description."""

    name: str = Field(min_length=1, description="Short name shown in results and charts.")
    clock_ghz: ClockGHz = Field(description="Core clock in GHz: converts cycles to seconds.")
    cores: PosInt = Field(1, description="Identical cores sharing DRAM.")
    core: CoreSpec
    dram: DramSpec
    l2: L2Spec | None = Field(None, description="Shared L2 cache (multi-core parts); absent = none.")
    vector: VectorSpec = Field(default_factory=VectorSpec)
    energy: EnergySpec | None = Field(None, description="Energy model; absent = no energy figures.")
    activations: Literal["dram", "l2_if_fits"] = Field(
        "dram", description="Where inter-layer activations live: always DRAM, or L2 when the tensor fits "
                            "(then a layer's B input and C output cost no DRAM traffic).")
    launch_overhead_cycles: LaunchOverhead = Field(default_factory=LaunchOverhead)
    host: HostSpec = Field(default_factory=HostSpec, description="The issuing host (a per-call floor); absent = "
                           "not modelled.")
    attention: AttentionSpec = Field(default_factory=AttentionSpec, description="How attention runs: fused (one "
                                     "kernel, the default on tensor_core parts) or unfused (accelsim.hardware."
                                     "attention).")
    system: SystemSpec | None = Field(None, description="Set by a system file (accelsim.hardware.systems): this "
                                      "device's copies and their interconnect; absent = one device, no "
                                      "communication.")

    # single-device configs and configs without a host floor hash as before these sections
    omitted = {"system": None, "host": {"call_floor_us": 0.0}}

    @property
    def devices(self) -> int:
        """Devices in the tensor-parallel group (1 for a plain device config)."""
        return 1 if self.system is None else self.system.devices

    @model_validator(mode="before")
    @classmethod
    def _attention_default(cls, data: Any) -> Any:
        return default_form(data)  # fused on tensor_core parts unless the config says otherwise

    @model_validator(mode="after")
    def _kind_rules(self) -> Hardware:
        kinds.kind_of(self).check(self)  # rules of the compute kind that span sections (e.g. systolic: 1 core)
        if self.attention.form == "fused" and self.core.compute.kind != "tensor_core":
            raise configio.FieldError(("attention", "form"), f"a {self.core.compute.kind} part runs attention "
                                      "unfused (QK^T and AV as array passes, scale, mask and softmax on the vector "
                                      "unit, the scores through DRAM); fused attention needs a tensor_core part")
        if self.attention.form != "fused" and self.launch_overhead_cycles.attention is not None:
            raise configio.FieldError(("launch_overhead_cycles", "attention"), "applies to fused attention "
                                      "kernels only; this part runs attention unfused (attention.form)")
        return self

    # -- derived, in cycles ------------------------------------------------
    def dram_bytes_per_cycle(self) -> float:
        """DRAM bandwidth in bytes per core clock cycle (inf when unlimited)."""
        bw = self.dram.bandwidth_gb_s
        return float("inf") if bw == "unlimited" else float(bw) * self.dram.sustained_fraction / self.clock_ghz

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
    """Validate a plain dict into Hardware (already merged: ``extends`` is resolved by :func:`load_hardware`)."""
    for key in META_KEYS:
        if isinstance(data, dict) and key in data:
            raise ConfigError(source, key, "is read from hardware config files only (extends: families resolved "
                                           "relative to the file, provenance: checked against it); load the file "
                                           "with load_hardware, or leave this key out of inline hardware data")
    return configio.validate(Hardware, data, source)


def load_hardware(path: str | Path, overrides: list[str] | None = None) -> Hardware:
    """Load and validate a hardware YAML; ``overrides`` are ``dotted.path=value`` strings.

    The file may ``extends:`` a family file (:mod:`accelsim.hardware.families`); the merged config is
    what is validated and hashed. Its ``provenance:`` section is checked (:mod:`accelsim.hardware.provenance`).
    """
    return load_hardware_with_provenance(path, overrides)[0]


def load_hardware_with_provenance(path: str | Path,
                                  overrides: list[str] | None = None) -> tuple[Hardware, Provenance]:
    """:func:`load_hardware`, also returning where each number of the file comes from.

    Without overrides, published tensor rates (``provenance.tensor_tflops``) must match
    cores x macs_per_cycle x 2 x clock within 2 %.
    """
    hd = read_hardware_data(path)
    data = hd.data
    src = str(path)
    if is_system_data(data):  # devices x one device config + an interconnect
        spec, hd, _ = read_system(path, hd)
        data = system_data(spec, hd)
    if "layers" in data and "core" not in data:
        raise ConfigError(src, None, "this is a workload file (it has 'layers'), expected a hardware config")
    set_by: dict[str, str] = {}
    had_energy = bool(data.get("energy"))
    for item in overrides or []:
        data = apply_override(data, item, src)
        set_by[".".join(k for k in item.partition("=")[0].strip().split(".") if k)] = item
    try:
        hw = hardware_from_dict(data, src)
    except ConfigError as exc:
        if not set_by and len(hd.layers) == 1:
            raise
        found = exc.problems if had_energy else _partial_energy(exc.problems, set_by)
        raise ConfigError.many(src, [(key, _from_family(key, _from_override(key, problem, set_by), hd))
                                     for key, problem in found], exc.unlisted) from None
    prov = provenance(hd)  # after the schema: a mistyped number ("1.83") is named as such, not as unaccounted for
    if not overrides:
        problems = peak_problems(hw, prov)
        if problems:
            raise ConfigError.many(src, problems)
    return hw, prov


def hardware_provenance(path: str | Path) -> Provenance:
    """Where each number of a hardware config file comes from (spec, derived, family-calibrated, estimate)."""
    return load_hardware_with_provenance(path)[1]


def _partial_energy(problems: list[tuple[str | None, str]], set_by: dict[str, str]) -> list[tuple[str | None, str]]:
    """``problems`` with the required figures a --hw-set inside ``energy:`` left missing on a config without an
    energy block (``energy.power_cap.tdp_w=1``) said once, naming the block and the override."""
    missing = [i for i, (key, problem) in enumerate(problems)
               if key and key.startswith("energy.") and problem == "required key is missing"]
    item = next((v for k, v in set_by.items() if k.startswith("energy.")), None)
    if not missing or item is None:
        return problems
    at = ".".join(item.partition("=")[0].strip().split(".")[:2])
    needed = ", ".join(k for k, f in EnergySpec.model_fields.items() if f.is_required())
    one = (at, f"needs an energy: block with {needed} (this config has none; set those too, or use a config with "
               "one)")  # load_hardware names the override
    return [one, *(p for i, p in enumerate(problems) if i not in missing)]


def _from_family(key: str | None, problem: str, hd: HardwareData) -> str:
    """``problem``, naming the family file that set ``key``, if it was not the config itself."""
    file = hd.origin_of(key)
    return f"{problem} (set in {file})" if file and "(from --hw-set" not in problem else problem


def _from_override(key: str | None, problem: str, set_by: dict[str, str]) -> str:
    """``problem``, naming the --hw-set that set ``key`` (or a key above or below it), if one did."""
    for path, item in set_by.items():  # a list item's key ends in its index: ``...cta_tiles.sparse[0]``
        if key and (key == path or key.startswith((path + ".", path + "[")) or path.startswith(key + ".")):
            return f"{problem} (from --hw-set {item})"
    return problem


def apply_override(data: dict[str, Any], item: str, source: str) -> dict[str, Any]:
    """Return a copy of ``data`` with one ``dotted.path=value`` override (value parsed as YAML)."""
    if "=" not in item:
        raise ConfigError(source, item, "--hw-set needs dotted.path=VALUE, e.g. dram.bandwidth_gb_s=100")
    path, _, raw = item.partition("=")
    keys = [k for k in path.strip().split(".") if k]
    if not keys:
        raise ConfigError(source, item, "--hw-set needs a key path before '=', e.g. dram.bandwidth_gb_s=100")
    try:
        value = yamlload.load(raw) if raw.strip() else None
    except yamlload.Refused as exc:
        raise ConfigError(source, path, f"--hw-set value: {exc.problem}") from None
    except yaml.YAMLError:
        raise ConfigError(source, path, f"--hw-set value {short_repr(raw)} is not plain YAML data") from None
    yamlload.check_extent(value, f"{source}: {path}")
    refuse_device_override(path.strip(), data, source, f"--hw-set {short_repr(item)}")
    out = copy.deepcopy(data)
    node = out
    for i, key in enumerate(keys[:-1]):
        nxt = node.get(key) if isinstance(node, dict) else None
        if nxt is None:
            nxt = {}
            node[key] = nxt
        elif not isinstance(nxt, dict):
            raise ConfigError(source, ".".join(keys[: i + 1]),
                              f"is a value, so --hw-set {short_repr(item)} cannot set a key below it")
        node = nxt
    node[keys[-1]] = value
    return out


def _rebuild_compute_union() -> None:
    """A kind registered (or left) after import: ``core.compute`` takes the registry's union again."""
    CoreSpec.model_fields["compute"] = FieldInfo.from_annotation(kinds.compute_union())
    CoreSpec.model_rebuild(force=True)
    Hardware.model_rebuild(force=True)


kinds.on_change(_rebuild_compute_union)


def with_host_floor(hw: Hardware, call_floor_us: float) -> Hardware:
    """``hw`` with ``host.call_floor_us`` set (0: the host's per-call cost not modelled)."""
    if hw.host.call_floor_us == call_floor_us:
        return hw
    return hw.model_copy(update={"host": hw.host.model_copy(update={"call_floor_us": float(call_floor_us)})})
