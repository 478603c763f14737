"""The sparse reality check: a ladder of counterfactual runs from the nominal M/N to the real speedup.

Every rung keeps the real dense run as the baseline and changes only the sparse run, adding
one real effect at a time, so the speedups telescope exactly from nominal to real:

1. nominal             M/N of the requested pattern (the datasheet figure)
2. + executed pattern  a pattern the hardware runs on a coarser native one (1:4 as 2:4) gains only
                       the native ratio
3. + non-sparse ops    only ops that run sparse gain; fallbacks, activation x activation matmuls and
                       vector ops keep their dense time (Amdahl over ops)
4. + non-MAC time      inside sparse ops only the MAC time (compute cycles) shrinks; their stalls and
                       fixed costs stay (the issue's "non-sparse work" rung is 3 + 4)
5. + padding / shape   that MAC time becomes the real sparse kernel's (padding, alignment, fold /
                       CTA-tile quantisation), at the dense kernel's efficiency
6. + data movement     sparse ops simulated with real memory, compressed values, no metadata (no N:M
                       indices, no unstructured bitmap / CSR index), the dense kernel's efficiency and
                       fixed cost: memory-bound ops gain the byte ratio
7. + metadata          metadata bytes, decode throughput and latency (unstructured: its index bytes and
                       decompress stage)
8. + kernel efficiency the sparse kernel's sustained share of its peak (tensor-core parts)
9. + fixed costs       the sparse kernel's extra launch / prologue cost = the real run

A run on the workload's own plan (``sparsity`` None) whose layers ask for different patterns has no one datasheet
figure: its nominal is what the ops that ask for a pattern would gain if each ran at its own M/N, weighted by their
dense time (their dense cycles over the sum of dense cycles / (M/N)). Every other op is taken at that ratio too (as
every op is at the one M/N of a uniform run; rung 3 takes it back), so rung 2 moves only where a layer runs another
pattern than it asked for. ``plan`` names the plan (:func:`accelsim.workloads.plan.plan_text`) and ``plan_executed``
maps each requested pattern to the patterns its sparse layers ran.

On a tensor-parallel system (a system config) the ladder runs on one device's shard and gains a rung after
2, ``communication``: the collectives (all-reduces after each block, accelsim.workloads.tensor_parallel) keep
their time, since sparsity shrinks the GEMMs and the weights but not the activations they all-reduce.
Where a host per-call floor (``host.call_floor_us`` > 0) binds an op, a ``host_floor`` rung follows 3 (the ops
that ran sparse): no op's call finishes before the host issues the next, so a sparse op that the floor binds
gains nothing; the arithmetic rungs shrink the GPU's own time (the dense run without the floor) and floor each
op again, and the simulated rungs run with the floor, as the real run does.

Where a power cap (``energy.power_cap.tdp_w``) slows a kernel of either real run, every rung up to 9 runs without
the cap (each kernel at the nominal clock) and a last rung, ``power_clock``, is the real run: dense and sparse
kernels each at the clock the cap lets them sustain (the dense baseline changes with it; ``clock`` echoes both).
Each rung stores the dense cycles it divides by (``dense_cycles``: the dense run at the nominal clock, then the real
dense run ``dense_total_cycles`` for ``power_clock``), so ``speedup = dense_cycles / sparse_cycles`` on every rung.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from accelsim.energy import uncapped
from accelsim.errors import AccelsimError
from accelsim.formats import parse_format
from accelsim.hardware.kinds import kind_of
from accelsim.hardware.model import Hardware, hardware_from_dict, with_host_floor
from accelsim.lowering import FALLBACK_REASONS, Kernel, lower
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.results import RunResult
from accelsim.simulation import Simulator, run
from accelsim.textsafe import speedup_text
from accelsim.workloads.model import Workload
from accelsim.workloads.plan import plan_patterns, plan_text
from accelsim.workloads.tensor_parallel import split

__all__ = ["RUNGS", "Bars", "Loss", "RealityCheck", "RealityEnergy", "RealityFallback", "RealityInputs",
           "RealityQuantization", "ReasonCount", "Rung", "reality_check"]

RUNGS = [
    ("nominal", "nominal (datasheet M/N)"),
    ("executed_pattern", "+ pattern the hardware runs"),
    ("amdahl", "+ non-sparse ops (Amdahl)"),
    ("non_mac_time", "+ non-MAC time of sparse ops"),
    ("padding", "+ padding, alignment, tile shape"),
    ("data_movement", "+ compressed data movement"),
    ("metadata", "+ metadata bytes and decode"),
    ("efficiency", "+ sparse kernel efficiency"),
    ("fixed_cost", "+ sparse kernel fixed cost = real"),
]

PLAN_NOMINAL_LABEL = "nominal (M/N each op asked for)"  # a plan that asks different layers for different patterns
COMMUNICATION_RUNG = ("communication", "+ communication (all-reduces do not shrink)")  # systems only, after 2
HOST_FLOOR_RUNG = ("host_floor", "+ host per-call floor (no call beats it)")  # host.call_floor_us > 0, after 3
POWER_RUNG = ("power_clock", "+ power-limited clocks = real")  # a power cap slows a kernel: the last rung
_HUGE = 1e18


# ----------------------------------------------------------------------------------------------- records

@dataclasses.dataclass(frozen=True, kw_only=True)
class Rung(Record):
    """One rung of the ladder: the sparse run's cycles with the effects up to this one, and its speedup over
    ``dense_cycles`` (``speedup = dense_cycles / sparse_cycles``): the real dense run, or under a power cap the dense
    run at the nominal clock for every rung but ``power_clock`` (None: read from a file written before it was
    stored)."""

    rung: str
    label: str
    dense_cycles: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    sparse_cycles: float
    speedup: float
    change: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # vs the rung before


@dataclasses.dataclass(frozen=True, kw_only=True)
class Loss(Record):
    """The speedup one rung costs (negative: a gain) and its share of the gap nominal - real."""

    rung: str
    label: str
    loss: float
    share_of_gap: float
    kind: str  # "loss", "gain" or "none"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bars(Record):
    """The three bars: nominal and real speedup, fallback ops' share of the sparse run's time."""

    nominal_speedup: float
    real_speedup: float
    fallback_overhead: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReasonCount(Record):
    layers: int
    cycles: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class RealityFallback(Record):
    """Ops that asked for a pattern and did not run sparse, by reason code."""

    layers: int
    cycles: int
    by_reason: Mapping[str, ReasonCount]
    reason_codes: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RealityEnergy(Record):
    """Dense vs sparse energy of the two real runs (on a tensor-parallel system, all its devices')."""

    dense_j: float
    sparse_j: float
    perf_per_watt_vs_dense: float
    sparse_by_component_j: Mapping[str, float]
    sparse_metadata_j: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class RealityQuantization(Record):
    """A quantized workload's section as loading resolved it: its Linears ran at ``weights``' type and rate,
    so its speedups are those of int8 / fp8 Linears, not of the workload dtype's."""

    weights: str
    activations: str
    quantized_layers: int
    dequantize: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class RealityInputs(Record):
    hardware_hash: str
    workload_hash: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class RealityCheck(Record):
    """The reality check of one workload on one config; ``to_dict()`` is ``reality_check.json``."""

    schema_version: int = 1
    hardware: str
    workload: str
    params: Mapping[str, Any]
    dtype: str | None = None  # the workload's element type (None: read from a file written before it was echoed)
    quantization: RealityQuantization | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    sparsity: str | None
    # the workload's own plan, run without a --sparsity (plan_text: '2:4', '2:4 on g0; unstructured:75% on g2'),
    # and the patterns each requested pattern's sparse layers ran
    plan: str | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    plan_executed: Mapping[str, tuple[str, ...]] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    policy: str
    patterns_executed: tuple[str, ...]
    inputs: RealityInputs
    dense_total_cycles: int
    sparse_total_cycles: int
    clock_ghz: float
    rungs: tuple[Rung, ...]
    losses: tuple[Loss, ...]
    gap: float
    bars: Bars
    fallback: RealityFallback
    energy: RealityEnergy | None
    sparse_layers: int
    layers: int
    slower_sparse_layers: tuple[str, ...]
    explanation: tuple[str, ...]
    # the real runs' clocks where a power cap slowed a kernel (the run's totals.clock, dense run's beside it)
    clock: Mapping[str, Any] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    warnings: tuple[str, ...] = ()  # the real sparse run's warnings (fallbacks, host floor, memory)
    hw_set: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)  # --hw-set overrides

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RealityCheck:
        """Read back :meth:`to_dict`'s data (a ``reality_check.json``)."""
        try:
            fb = data["fallback"]
            energy = data["energy"]
            return cls(
                schema_version=int(data["schema_version"]), hardware=data["hardware"], workload=data["workload"],
                params=freeze(data["params"]), dtype=data.get("dtype"), sparsity=data["sparsity"],
                plan=data.get("plan"),
                plan_executed=None if data.get("plan_executed") is None else freeze(
                    {k: tuple(v) for k, v in data["plan_executed"].items()}),
                policy=data["policy"],
                quantization=None if data.get("quantization") is None else RealityQuantization(
                    **data["quantization"]),
                patterns_executed=tuple(data["patterns_executed"]), inputs=RealityInputs(**data["inputs"]),
                dense_total_cycles=data["dense_total_cycles"], sparse_total_cycles=data["sparse_total_cycles"],
                clock_ghz=data["clock_ghz"], rungs=tuple(Rung(**r) for r in data["rungs"]),
                losses=tuple(Loss(**x) for x in data["losses"]), gap=data["gap"], bars=Bars(**data["bars"]),
                fallback=RealityFallback(
                    layers=fb["layers"], cycles=fb["cycles"], reason_codes=tuple(fb["reason_codes"]),
                    by_reason=freeze({k: ReasonCount(**v) for k, v in fb["by_reason"].items()})),
                energy=None if energy is None else RealityEnergy(
                    **{**energy, "sparse_by_component_j": freeze(energy["sparse_by_component_j"])}),
                sparse_layers=data["sparse_layers"], layers=data["layers"],
                slower_sparse_layers=tuple(data["slower_sparse_layers"]), explanation=tuple(data["explanation"]),
                clock=None if data.get("clock") is None else freeze(data["clock"]),
                warnings=tuple(data.get("warnings", ())),
                hw_set=None if data.get("hw_set") is None else tuple(data["hw_set"]))
        except (KeyError, TypeError) as exc:
            raise AccelsimError(f"reality-check data: missing or unexpected field ({exc})") from None


def _variant(hw: Hardware, *, ideal_memory: bool = False, free_metadata: bool = False,
             dense_efficiency: bool = False, dense_launch: bool = False, no_launch: bool = False) -> Hardware:
    """A counterfactual copy of ``hw`` with some real effects switched off."""
    d = copy.deepcopy(hw.to_dict())
    if ideal_memory:
        d["dram"]["bandwidth_gb_s"] = "unlimited"
        d["dram"]["latency_ns"] = 0.0
        d["core"]["sram"]["bandwidth_bytes_per_cycle"] = "unlimited"
        if d.get("l2"):
            d["l2"]["bandwidth_bytes_per_cycle"] = _HUGE
    sp = d["core"].get("sparse")
    if free_metadata and sp:
        for spec in sp["patterns"].values():
            spec["metadata_bits_per_value"] = 0
        sp["decode_groups_per_cycle"] = "unlimited"
        sp["decode_latency_cycles"] = 0
        unstructured = (sp.get("formats") or {}).get("unstructured")
        if unstructured:  # its index (bitmap or CSR) is metadata too, its decompress stage the decoder's analogue
            unstructured.update(index="csr", index_bits=0, pointer_bits=0, decompress_values_per_cycle="unlimited")
    if dense_efficiency:
        d["core"]["compute"] = kind_of(hw).sparse_at_dense_efficiency(d["core"]["compute"])
    if dense_launch:
        d["launch_overhead_cycles"]["sparse"] = d["launch_overhead_cycles"]["dense"]
    if no_launch:
        d["launch_overhead_cycles"] = {"dense": 0, "sparse": 0}
        d["vector"]["launch_overhead_cycles"] = 0
    return hardware_from_dict(d, f"<{hw.name} counterfactual>")


def _energy_summary(real: RunResult, dense: RunResult) -> RealityEnergy | None:
    """Dense vs sparse energy of the two real runs (None when the config has no energy model)."""
    t_real, t_dense = real.totals, dense.totals
    if "energy" not in t_real or "energy" not in t_dense:
        return None
    e_s, e_d = t_real["energy"], t_dense["energy"]
    return RealityEnergy(dense_j=e_d["total_j"], sparse_j=e_s["total_j"],
                         perf_per_watt_vs_dense=e_d["total_j"] / e_s["total_j"] if e_s["total_j"] else 1.0,
                         sparse_by_component_j=freeze(e_s["by_component_j"]),
                         sparse_metadata_j=e_s["by_tensor_j"]["a_metadata"])


def _quantization(model: Workload) -> RealityQuantization | None:
    """The workload's resolved quantization section, for the chart's title (None: not quantized)."""
    q = model.quantization
    if q is None:
        return None
    return RealityQuantization(weights=q.weights, activations=q.activations or model.dtype,
                               quantized_layers=q.quantized_layers, dequantize=q.dequantize)


def _ideal_ratio(executed: str | None) -> float:
    """Dense work over executed work of the format a sparse op runs (1 / density)."""
    fmt = parse_format(executed)
    assert fmt is not None  # a sparse op runs a format
    return 1.0 / fmt.density


def reality_check(model: Workload, hw: Hardware, sparsity: str | None = "2:4", *,
                  policy: str = "sparse-if-supported", hw_source: str = "<hardware>",
                  hw_set: Sequence[str] = ()) -> RealityCheck:
    """Simulate the ladder; return rungs, losses, the three bars and the reasons. ``hw_set``: the ``--hw-set``
    overrides ``hw`` was loaded with, echoed (and named in the chart's title)."""
    real_run = run(model, hw, sparsity, policy=policy, hw_source=hw_source)
    dense_run = run(model, hw, "dense", hw_source=hw_source)
    capped = _capped(real_run) or _capped(dense_run)
    # the rungs before the last compare kernels at the nominal clock; a power cap is the last rung's
    base_hw = uncapped(hw) if capped else hw
    dense = run(model, base_hw, "dense", hw_source=hw_source) if capped else dense_run
    real_layers = real_run.layers
    if capped:  # each layer on the path the real (capped) run chose ('fastest' may choose by the capped clocks)
        every = run(model, base_hw, sparsity, hw_source=hw_source).layers  # every layer that can, sparse
        real_layers = [s if r.path == "sparse" else d for r, s, d in zip(real_run.layers, every, dense.layers,
                                                                         strict=True)]
    dense_t = [lay.cycles["total"] for lay in dense.layers]
    dense_total = sum(dense_t)
    sparse_total = sum(lay.cycles["total"] for lay in real_layers)
    is_comm = [lay.path == "communication" for lay in real_layers]  # collectives of a system's shard
    shard_model = split(model, base_hw.devices).workload if base_hw.devices > 1 else model  # one device's share
    shard = iter(lower(shard_model, base_hw, sparsity))
    kernels: list[Kernel | None] = [None if c else next(shard) for c in is_comm]
    on_sparse = [lay.path == "sparse" for lay in real_layers]
    patterns = sorted({lay.pattern_executed for lay in real_layers if lay.path == "sparse" and lay.pattern_executed})
    requested = sorted({lay.pattern_requested for lay in real_run.layers if lay.pattern_requested})
    mixed = sparsity is None and len(requested) > 1  # the workload's own plan asks for several patterns
    nominal_pat = parse_format(sparsity) if sparsity not in (None, "dense") else (
        parse_format(requested[0]) if requested and not mixed else None)
    nominal = nominal_pat.dense_speedup if nominal_pat else 1.0
    # each op's nominal ratio: the one M/N of a uniform run; in a mixed plan, the M/N the op asks for, and the plan's
    # dense-time-weighted ratio for the ops that ask for none (so that rung 1 is that ratio, exactly)
    nom_ratio = [nominal] * len(real_layers)
    if mixed:
        asked = [_dense_speedup(lay.pattern_requested) for lay in real_run.layers]
        asked_time = sum(dense_t[i] for i, r in enumerate(asked) if r is not None)
        asked_sparse_time = sum(dense_t[i] / r for i, r in enumerate(asked) if r is not None)
        plan_ratio = asked_time / asked_sparse_time if asked_sparse_time else 1.0
        nom_ratio = [plan_ratio if r is None else r for r in asked]
        nominal = dense_total / sum(dense_t[i] / nom_ratio[i] for i in range(len(real_layers)))

    dense_compute = [lay.cycles["compute"] for lay in dense.layers]
    # the host's per-call floor is a max, not a sum: from its own rung on, the arithmetic rungs shrink the GPU's own
    # time (the dense run without the floor) and floor each op again, so a host-bound op gains nothing
    floor = math.ceil(base_hw.host.call_floor_us * 1e3 * base_hw.clock_ghz - 1e-6) if base_hw.host.call_floor_us else 0
    gpu_t = dense_t if not floor else [lay.cycles["total"] for lay in
                                       run(model, with_host_floor(base_hw, 0.0), "dense", hw_source=hw_source).layers]
    op_floor = [0 if is_comm[i] or kernels[i] is None or kernels[i].absorbed else floor  # type: ignore[union-attr]
                for i in range(len(kernels))]

    def floored(i: int, t: float) -> float:
        return max(float(op_floor[i]), t)

    # the executed pattern's ideal ratio per op (M'/N' of the native pattern it runs on; non-sparse ops: nominal)
    exec_ratio = [nom_ratio[i] if lay.path != "sparse" else _ideal_ratio(lay.pattern_executed)
                  for i, lay in enumerate(real_layers)]
    sparse_eff_ratio = kind_of(base_hw).sparse_efficiency_ratio(base_hw.core.compute)

    def sparse_times(variant: Hardware) -> list[float]:
        """Per-op times of the sparse run under ``variant`` (fallback / vector ops: real dense time). The ops are
        lowered on the variant: metadata bits and index bytes are kernel inputs fixed at lowering."""
        sim = Simulator(variant)
        shard_ops = iter(lower(shard_model, variant, sparsity))
        variant_kernels = [None if c else next(shard_ops) for c in is_comm]
        return [float(sim(kern).cycles["total"]) if on_sparse[i] and kern is not None else float(dense_t[i])
                for i, kern in enumerate(variant_kernels)]

    def per_op(sparse_time: Callable[[int], float]) -> float:
        return sum(sparse_time(i) if on_sparse[i] else float(dense_t[i]) for i in range(len(kernels)))

    real_compute = [lay.cycles["compute"] for lay in real_layers]
    totals = {
        "nominal": dense_total / nominal if not mixed else sum(dense_t[i] / nom_ratio[i] for i in range(len(kernels))),
        # every op gains the ratio of the pattern it really runs (non-sparse ops: their nominal one)
        "executed_pattern": sum(dense_t[i] / exec_ratio[i] for i in range(len(kernels))),
        # the collectives keep their time (systems only; the other ops as in executed_pattern)
        "communication": sum(dense_t[i] if is_comm[i] else dense_t[i] / exec_ratio[i] for i in range(len(kernels))),
        # only ops that run sparse gain; the others keep their dense time
        "amdahl": per_op(lambda i: dense_t[i] / exec_ratio[i]),
        # no call beats the host's floor (host.call_floor_us > 0 only): a floored sparse op gains nothing
        "host_floor": per_op(lambda i: floored(i, gpu_t[i] / exec_ratio[i])),
        # only the MAC time of sparse ops shrinks; their stalls and fixed costs stay
        "non_mac_time": per_op(lambda i: floored(i, gpu_t[i] - dense_compute[i] * (1.0 - 1.0 / exec_ratio[i]))),
        # the MAC time becomes the real sparse kernel's (padding, tile shape), at dense efficiency
        "padding": per_op(lambda i: floored(i, gpu_t[i] - dense_compute[i] + real_compute[i] * sparse_eff_ratio)),
        "data_movement": sum(sparse_times(_variant(base_hw, free_metadata=True, dense_efficiency=True,
                                                   dense_launch=True))),
        "metadata": sum(sparse_times(_variant(base_hw, dense_efficiency=True, dense_launch=True))),
        "efficiency": sum(sparse_times(_variant(base_hw, dense_launch=True))),
        "fixed_cost": float(sparse_total),
        "power_clock": float(real_run.total_cycles),
    }
    rungs: list[Rung] = []
    prev = None
    floor_binds = bool(floor) and totals["host_floor"] != totals["amdahl"]  # a rung only where an op waits
    ladder = [*RUNGS[:2], *([COMMUNICATION_RUNG] if any(is_comm) else []), RUNGS[2],
              *([HOST_FLOOR_RUNG] if floor_binds else []), *RUNGS[3:], *([POWER_RUNG] if capped else [])]
    baseline = {"power_clock": dense_run.total_cycles}  # the last rung compares the two real runs
    for key, label in ladder:
        if capped and key == "fixed_cost":  # the real run is the power rung's
            label = label.removesuffix(" = real")
        if mixed and key == "nominal":
            label = PLAN_NOMINAL_LABEL
        # both stored with the rung, unrounded: its speedup is dense_cycles / sparse_cycles of the JSON, exactly
        base, cycles = baseline.get(key, dense_total), totals[key]
        speedup = base / cycles if cycles else 1.0
        rungs.append(Rung(rung=key, label=label, dense_cycles=base, sparse_cycles=cycles, speedup=speedup,
                          change=None if prev is None else speedup - prev))
        prev = speedup
    gap = nominal - rungs[-1].speedup
    losses = []
    for rung in rungs[1:]:
        assert rung.change is not None
        loss = -rung.change
        if abs(loss) < 1e-12:
            loss = 0.0
        losses.append(Loss(rung=rung.rung, label=rung.label, loss=loss,
                           share_of_gap=loss / gap if abs(gap) > 1e-12 else 0.0,
                           kind="gain" if loss < 0 else ("loss" if loss > 0 else "none")))
    sparse_total, dense_total = real_run.total_cycles, dense_run.total_cycles  # the real runs, as the bars say
    fallback = [lay for lay in real_run.layers if lay.pattern_requested and lay.path != "sparse"]
    fallback_cycles = sum(lay.cycles["total"] for lay in fallback)
    reasons: dict[str, list[int]] = {}
    for lay in fallback:
        r = reasons.setdefault(lay.reason or "none", [0, 0])
        r[0] += 1
        r[1] += lay.cycles["total"]
    slower = [lay.name for lay in real_run.layers if lay.path == "sparse" and lay.speedup_vs_dense < 1.0]
    explanation = []
    real_speedup = rungs[-1].speedup
    if fallback and not any(on_sparse):
        codes = ", ".join(f"{k} ({n})" for k, (n, _) in sorted(reasons.items()))
        explanation.append(f"no layer ran sparse: all {len(fallback)} layer(s) that asked for a pattern fell back "
                           f"to dense ({codes}); see the warnings")
    if real_speedup < 1.0:
        worst = max(losses, key=lambda x: x.loss)
        explanation.append(f"sparse is slower than dense ({speedup_text(real_speedup, 3)}); the largest loss is "
                           f"'{worst.label}' ({worst.loss:.3f}x)")
        if slower:
            explanation.append(f"{len(slower)} sparse layer(s) run slower than their dense kernel: "
                               + ", ".join(slower[:5]) + (" ..." if len(slower) > 5 else ""))
    return RealityCheck(
        hw_set=tuple(hw_set) or None,
        schema_version=1,
        hardware=hw.name,
        workload=model.name,
        params=freeze(model.params),
        dtype=model.dtype,
        quantization=_quantization(model),
        sparsity=sparsity,
        plan=plan_text(real_run.layers) if sparsity is None else None,
        plan_executed=_plan_executed(real_run) if sparsity is None else None,
        policy=policy,
        patterns_executed=tuple(patterns),
        inputs=RealityInputs(hardware_hash=hw.config_hash(), workload_hash=model.config_hash()),
        dense_total_cycles=dense_total,
        sparse_total_cycles=sparse_total,
        clock_ghz=hw.clock_ghz,
        rungs=tuple(rungs),
        losses=tuple(losses),
        gap=gap,
        bars=Bars(nominal_speedup=nominal, real_speedup=real_speedup,
                  fallback_overhead=fallback_cycles / sparse_total if sparse_total else 0.0),
        fallback=RealityFallback(layers=len(fallback), cycles=fallback_cycles,
                                 by_reason=freeze({k: ReasonCount(layers=n, cycles=c)
                                                   for k, (n, c) in sorted(reasons.items())}),
                                 reason_codes=tuple(FALLBACK_REASONS)),
        energy=_energy_summary(real_run, dense_run),
        sparse_layers=sum(on_sparse),
        layers=len(kernels) - sum(is_comm),
        slower_sparse_layers=tuple(slower),
        explanation=tuple(explanation),
        clock=freeze({"sparse_run": real_run.totals["clock"], "dense_run": dense_run.totals["clock"]})
        if capped else None,
        warnings=tuple(real_run.warnings),
    )


def _dense_speedup(pattern: str | None) -> float | None:
    """The nominal M/N of a requested pattern (None: the op asks for none)."""
    fmt = parse_format(pattern) if pattern else None
    return fmt.dense_speedup if fmt is not None else None


def _plan_executed(res: RunResult) -> Mapping[str, tuple[str, ...]]:
    """Each pattern the plan asks for -> the patterns its layers that ran sparse executed (empty: none ran sparse)."""
    by_name = {lay.name: lay for lay in res.layers}
    return freeze({pattern: tuple(sorted({str(by_name[n].pattern_executed) for n in names
                                          if by_name[n].path == "sparse" and by_name[n].pattern_executed}))
                   for pattern, names in plan_patterns(res.layers).items()})


def _capped(res: RunResult) -> bool:
    """Whether a power cap slowed any kernel of the run."""
    return any(lay.clock is not None and lay.clock.get("power_capped") for lay in res.layers)
