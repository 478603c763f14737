"""Service times from accelsim: a batch's time is the simulated plan's cycles at the clock.

``service(b, s)`` = ``run(load_workload(path, {batch: b, seq: s}), hw, sparsity).total_cycles /
(clock_ghz * 1e9)`` seconds, cached per distinct (batch, size) for each sparsity (one
:class:`SimulatedService` per sparsity), so a long run simulates each shape once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.results import RunResult
from accelsim.serving.config import ServingError
from accelsim.simulation import Simulator, run
from accelsim.workloads.model import Workload, workload_from_dict
from accelsim.workloads.moe import routing_records
from accelsim.workloads.plan import PLAN_LABEL
from accelsim.workloads.tensor_parallel import split

__all__ = ["ServedWorkload", "SimulatedService", "assign_set_params", "check_served", "canonical_pattern",
           "resolve_hardware", "kv_bytes_per_token", "PLAN_LABEL",
           "WorkloadPlan", "workload_plan", "group_note"]



class ServedWorkload:
    """A workload file as serving reads it, no hardware: its parameters, the one each request varies
    (``size_param``), the batch parameter and the set ones; :meth:`workload` expands it at one shape."""

    def __init__(self, workload: str | Path, *, size_param: str | None = "auto",
                 set_params: Mapping[str, Any] | None = None) -> None:
        self.source = str(workload)
        data, _ = configio.read_yaml(workload)
        if "layers" not in data:
            raise ConfigError(self.source, None, "expected a workload file (with 'layers')")
        if "quality" not in Workload.model_fields:  # a serving-only key until the schema has one
            data = {k: v for k, v in data.items() if k != "quality"}
        self.data = data
        self.defaults = dict(self.data.get("params") or {})
        self.set_params = dict(set_params or {})
        if size_param == "auto":
            size_param = next((p for p in ("seq", "kv_len") if p in self.defaults), None)
        if size_param is not None and size_param not in self.defaults:
            raise ConfigError(self.source, "params", f"has no parameter {size_param!r} to vary per request "
                              f"(parameters: {', '.join(self.defaults) or 'none'})")
        self.size_param = size_param
        # A workload without a 'batch' parameter (e.g. a GEMM list, resnet18.yaml) is one request's work:
        # a batch of b such requests runs them back to back (b x one request's time).
        self.batch_param = "batch" if "batch" in self.defaults else None
        self.name = str(self.data.get("name", Path(self.source).stem))

    def check_set_params(self, how: str = "--set") -> None:
        """Refuse set parameters serving would override or truncate without a word: the batch (the scheduler
        picks each batch's size) and a size parameter that is not a whole number."""
        if self.batch_param is not None and self.batch_param in self.set_params:
            raise ConfigError(self.source, self.batch_param, f"{how} gives {self.set_params[self.batch_param]!r}, "
                              "but serving sets the batch per batch (the scheduler's, up to max_batch): drop it "
                              "and use --max-batch")
        value = self.set_params.get(self.size_param) if self.size_param is not None else None
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not float(value).is_integer() or value < 1):
            raise ConfigError(self.source, str(self.size_param), f"{how} gives {value!r}: expected a whole "
                              "number of tokens >= 1")

    @property
    def default_size(self) -> int | None:
        """The per-request size when none is given: the set or declared value of the size parameter."""
        name = self.size_param
        if name is None:
            return None
        return int(self.set_params[name] if name in self.set_params else self.defaults[name])

    def params(self, batch: int, size: Any) -> dict[str, Any]:
        """Workload parameters for a batch of ``batch`` requests of ``size``."""
        out = dict(self.set_params)
        if self.batch_param is not None:
            out[self.batch_param] = int(batch)
        if self.size_param is not None and size is not None:
            out[self.size_param] = int(size)
        return out

    def workload(self, batch: int, size: Any) -> Workload:
        """The workload at this batch and size (with the set parameters)."""
        return workload_from_dict(self.data, self.source, self.params(batch, size))

    def moe_routing(self) -> list[dict[str, Any]] | None:
        """The routing of the workload's moe ops at its own parameters (with the set ones), as ``run`` records it
        under ``workload.moe``; None without moe ops. Each simulated batch and size is routed the same way."""
        return routing_records(workload_from_dict(self.data, self.source, self.set_params).moe)


def assign_set_params(svc: ServedWorkload, dec: ServedWorkload | None, sets: Mapping[str, Any]) -> None:
    """Give each set parameter to the workload(s) that declare it (an LLM: prefill ``svc``, decode ``dec``;
    one-shot: all to ``svc``) and refuse what serving would override or truncate without a word."""
    if dec is None:
        svc.set_params = dict(sets)
        svc.check_set_params()
        return
    unknown = sorted(set(sets) - set(svc.defaults) - set(dec.defaults))
    if unknown:
        raise ConfigError(svc.source, unknown[0], "--set names a parameter neither the prefill nor the "
                          f"decode workload has ({', '.join(sorted({*svc.defaults, *dec.defaults}))})")
    svc.set_params = {k: v for k, v in sets.items() if k in svc.defaults}
    dec.set_params = {k: v for k, v in sets.items() if k in dec.defaults}
    if dec.size_param in dec.set_params:  # each decode step's kv_len is the request's own
        raise ConfigError(dec.source, str(dec.size_param), f"--set gives "
                          f"{dec.set_params[dec.size_param]!r}, but each decode step's kv_len is its "
                          "request's prompt plus the tokens generated so far: drop it (--prompt-tokens "
                          "sets the prompts)")
    dec.check_set_params()
    svc.check_set_params()


def check_served(workload: str | Path, set_params: Mapping[str, Any] | None = None,
                 decode_workload: str | Path | None = None) -> None:
    """What :meth:`ServingModel.from_files` refuses in a workload pair and its set parameters, checked without
    hardware or simulation: the parameters assigned as serving assigns them, then each workload expanded at
    batch 1 and its default size with them (an unknown parameter, a bad expression: ConfigError)."""
    svc = ServedWorkload(workload, size_param="auto" if decode_workload is None else "seq")
    dec = None if decode_workload is None else ServedWorkload(decode_workload, size_param="kv_len")
    assign_set_params(svc, dec, dict(set_params or {}))
    for w in (svc, dec):
        if w is not None:
            w.workload(1, w.default_size)


class SimulatedService(ServedWorkload):
    """Batch service time (s) from accelsim's simulation of the lowered plan; cached per (batch, size).

    ``service(b, s)`` = ``run(workload at {batch: b, size_param: s, **set_params}, hw, sparsity)
    .total_cycles / (clock_ghz * 1e9)``. One object per (workload, sparsity); share ``simulator``
    across objects on the same hardware to reuse kernel simulations.
    """

    def __init__(self, hw: Hardware, workload: str | Path, sparsity: str | None = None, *,
                 size_param: str | None = "auto", set_params: Mapping[str, Any] | None = None,
                 policy: str = "sparse-if-supported", simulator: Simulator | None = None,
                 hw_source: str = "<hardware>") -> None:
        super().__init__(workload, size_param=size_param, set_params=set_params)
        self.hw = hw
        self.sparsity = canonical_pattern(sparsity)
        self.policy = policy
        self.sim = simulator or Simulator(hw, hw_source)
        self._cache: dict[tuple[int, Any], float] = {}
        self._footprints: dict[tuple[int, Any], Mapping[str, Any]] = {}
        self.simulations = 0
        self.warnings: tuple[str, ...] | None = None  # the first simulated run's (the workload's structure: TP split)
        self.runs: list[RunResult] = []  # every shape's run, once each (the clocks they ran at: energy.run_clock)

    def __call__(self, batch: int, size: Any = None) -> float:
        """Service time (s) of a batch of ``batch`` requests of ``size``."""
        if self.batch_param is None and batch != 1:
            return int(batch) * self(1, size)
        key = (int(batch), None if size is None else int(size))
        hit = self._cache.get(key)
        if hit is None:
            res = run(self.workload(batch, size), self.hw, self.sparsity, policy=self.policy, simulator=self.sim)
            self.simulations += 1
            self.runs.append(res)
            if self.warnings is None:
                self.warnings = tuple(res.warnings)
            hit = res.total_cycles / (self.hw.clock_ghz * 1e9)
            self._cache[key] = hit
            self._footprints[key] = res.footprint
        return hit

    def footprint(self, batch: int = 1, size: Any = None) -> Mapping[str, Any]:
        """The run's memory footprint (weights as deployed, activations, KV cache) at this shape."""
        key = (int(batch) if self.batch_param is not None else 1, None if size is None else int(size))
        if key not in self._footprints:
            self(batch, size)
        return self._footprints[key]

    @property
    def cache_entries(self) -> int:
        """Distinct (batch, size) shapes simulated so far."""
        return len(self._cache)


@dataclass(frozen=True)
class WorkloadPlan:
    """A workload file's own sparsity plan, at its default parameters (what 'accelsim run' runs with no --sparsity)."""

    top: str | None  # the top-level ``sparsity:`` (None: none)
    planned: bool  # some layer asks for an N:M pattern
    exceptions: tuple[str, ...]  # layers whose own ``sparsity:`` differs from a top-level pattern, 'name (pattern)'

    @property
    def label(self) -> str | None:
        """What serve calls the plan's run: the top-level pattern when every layer takes it, ``PLAN_LABEL`` when
        layers say their own; None when the plan runs dense."""
        if self.top not in (None, "dense"):
            return PLAN_LABEL if self.exceptions else self.top
        return PLAN_LABEL if self.planned else None


def workload_plan(workload: str | Path) -> WorkloadPlan:
    """Read ``workload``'s own sparsity plan (one read, one expansion at the file's default parameters)."""
    data, _ = configio.read_yaml(workload)
    top = canonical_pattern(data.get("sparsity"))
    if "layers" not in data:
        return WorkloadPlan(top, False, ())
    data = {k: v for k, v in data.items() if k != "quality" or "quality" in Workload.model_fields}
    wl = workload_from_dict(data, str(workload), {})
    exceptions = tuple(f"{lay.name} ({lay.sparsity})" for lay in wl.layers
                       if top not in (None, "dense") and lay.sparsity is not None and lay.sparsity != top)
    return WorkloadPlan(top, wl.planned_patterns(), exceptions)


def canonical_pattern(value: Any) -> str | None:
    """Canonical pattern text ('2:4', 'dense'), None for None; a bad pattern is a ServingError."""
    if value is None:
        return None
    try:
        return normalize_format(value)
    except ValueError as exc:
        raise ServingError(f"sparsity: {exc}") from None


def resolve_hardware(hw: Hardware | str | Path, hw_set: Sequence[str] | None = None) -> tuple[Hardware, str]:
    """A loaded Hardware and its source: ``hw`` itself, or the file at ``hw`` with ``hw_set`` overrides."""
    if isinstance(hw, Hardware):
        if hw_set:
            raise ServingError("hw_set needs a hardware path, not a loaded Hardware")
        return hw, hw.name
    return load_hardware(hw, list(hw_set or [])), str(hw)


def group_note(hw: Hardware) -> str | None:
    """What an instance is on a tensor-parallel system (None on one device): serve and decide say it."""
    if hw.devices == 1:
        return None
    return (f"{hw.name}: each instance is a tensor-parallel group of {hw.devices} devices (Megatron split, "
            "collectives on the interconnect); weights and the KV budget are per device")


def kv_bytes_per_token(dec: SimulatedService) -> float:
    """KV-cache bytes per context token of one sequence, from the decode workload's kv_cache_elements (on a
    tensor-parallel system: one device's share, the K/V heads it holds)."""
    a = dec.workload(1, 256)
    b = dec.workload(1, 257)
    if dec.hw.devices > 1:
        a, b = split(a, dec.hw.devices, dec.sim.source).workload, split(b, dec.hw.devices, dec.sim.source).workload
    return float((b.kv_cache_elements - a.kv_cache_elements) * a.kv_dtype_bytes)  # the cache's own dtype

