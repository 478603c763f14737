"""Run a workload on a hardware config: lower, simulate each kernel (and its dense baseline).

Every kernel runs at its power-limited clock (:func:`accelsim.energy.settle_clock`: the nominal clock
unless the config's ``energy.power_cap`` binds); cycles are nominal-clock cycles (time x clock_ghz)
and each layer echoes its clock (``KernelResult.clock``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.dtypes import stored_bytes
from accelsim.energy import at_clock, layer_energy, settle_clock
from accelsim.engine import EngineHardware, simulate, simulate_totals
from accelsim.engine.classes import KSTEP_CAP, TILE_CAP
from accelsim.errors import AccelsimError, ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.kinds import peak_macs_per_cycle
from accelsim.hardware.model import Hardware, TensorCoreCompute
from accelsim.limits import SizeLimitError, check_total
from accelsim.lowering import POLICIES, Kernel, dtype_fallback_note, dtype_unsupported_note, lower
from accelsim.records import frozen_tree
from accelsim.results import TILE_DTYPE, KernelResult, KernelTotals, RunResult, build_meta, rounded
from accelsim.system import collective_seconds
from accelsim.workloads.model import Conv2d, Gemm, Matmul, Workload
from accelsim.workloads.tensor_parallel import TensorParallelPlan, split


class Simulator:
    """Simulates kernels on one hardware config, once per distinct kernel (cached).

    ``sim(kernel)`` is the kernel at the nominal clock; ``sim.settled(kernel)`` at its power-limited
    clock, in nominal-clock cycles, with its clock echoed (what a run reports).
    """

    def __init__(self, hw: Hardware, source: str = "<hardware>", keep_tiles: bool = False) -> None:
        self.hw = hw
        self.source = source
        self.keep_tiles = keep_tiles
        self._cache: dict[tuple, KernelResult] = {}
        self._settled: dict[tuple, KernelResult] = {}
        self._at: dict[tuple[float, tuple], KernelTotals] = {}
        self._prepared: EngineHardware | None = None  # what every kernel's simulation reads of hw, built once

    def settled(self, kernel: Kernel) -> KernelResult:
        """``kernel`` at the clock the power cap lets it sustain (cycles counted at the nominal clock)."""
        key = kernel.cache_key()
        hit = self._settled.get(key)
        if hit is None:
            nominal = self(kernel)

            def totals_at(f: float) -> KernelTotals:
                if f == 1.0:
                    return nominal.layer_totals().totals
                k = (f, key)
                t = self._at.get(k)
                if t is None:
                    t = self._at[k] = simulate_totals(kernel, at_clock(self.hw, f), self.source)
                return t

            clock = settle_clock(self.hw, kernel, totals_at)
            res = nominal if clock.fraction == 1.0 else simulate(kernel, at_clock(self.hw, clock.fraction),
                                                                 self.source, keep_tiles=self.keep_tiles)
            hit = self._settled[key] = res.in_nominal_cycles(clock.fraction, clock.echo(self.hw))
        return hit

    def __call__(self, kernel: Kernel) -> KernelResult:
        key = kernel.cache_key()
        hit = self._cache.get(key)
        if hit is None:
            if self._prepared is None:  # on the first simulation, as simulate would (its errors, at that point)
                self._prepared = EngineHardware(self.hw)
            hit = simulate(kernel, self.hw, self.source, keep_tiles=self.keep_tiles, prepared=self._prepared)
            if self.keep_tiles and hit.tiles is None:
                raise SizeLimitError(f"layer '{kernel.name}': {hit.tiling['tiles']:,} tiles are too many for "
                                     f"per-tile records (traces and timelines hold up to {TILE_CAP:,} tiles, "
                                     f"{KSTEP_CAP:,} k-steps per CTA); use a smaller shape")
            self._cache[key] = hit
        return hit


_ECHOES: dict[int, tuple[Hardware, Mapping[str, Any], str]] = {}
_ECHOES_SIZE = 64


def _hardware_echo(hw: Hardware) -> tuple[Mapping[str, Any], str]:
    """``hw.to_dict()`` frozen (a result's ``hardware``) and ``hw.config_hash()``: every run echoes both, and a
    Hardware is frozen, so each is worked out once per object (the memo holds the object it keys by id)."""
    hit = _ECHOES.get(id(hw))
    if hit is None or hit[0] is not hw:
        if len(_ECHOES) >= _ECHOES_SIZE:
            _ECHOES.clear()
        hit = _ECHOES[id(hw)] = (hw, frozen_tree(hw.to_dict()), hw.config_hash())
    return hit[1], hit[2]


def choose_path(kernel: Kernel, cycles: int, dense_cycles: int, policy: str) -> Kernel:
    """The kernel that runs under ``policy``: ``kernel``, or under 'fastest' its dense twin when that is faster."""
    if kernel.sparse and policy == "fastest" and dense_cycles < cycles:
        return kernel.as_dense("slower_than_dense")
    return kernel


def _labelled(res: KernelResult, kernel: Kernel, base: KernelResult, dtype: str) -> KernelResult:
    """``res`` labelled as ``kernel``'s layer; with the element type it runs in where the array runs it in another
    than the workload's ``dtype`` (a quantized linear), as its utilization is measured against that type's peak."""
    clock = res.clock if base is res or res.clock is None or base.clock is None else \
        {**res.clock, "dense_ghz": base.clock["ghz"]}
    return res.replace(name=kernel.name, op=kernel.op, reason=kernel.reason, path=kernel.path,
                       pattern_requested=kernel.pattern_requested, pattern_executed=kernel.pattern_executed,
                       dense_cycles=base.cycles["total"], clock=clock,
                       dtype=None if kernel.vector or kernel.dtype == dtype else kernel.dtype)


def footprint(model: Workload, kernels: list[Kernel], hw: Hardware) -> dict[str, Any]:
    """Memory footprint: weights dense vs as deployed (compressed + metadata), activations, KV cache.

    Weights include every expert of a moe op, also those no token reached in this run (stored as its running
    experts are), and every group of a grouped conv (a sparse one compressed group by group, the bytes the
    engine reads for A). Activations are the largest layer's inputs and outputs; K and V that a layer reads from the KV
    cache (``kv_cache: true``) are the cache, counted once in ``kv_cache_bytes`` at kv_dtype.

    When it exceeds ``dram.capacity_bytes`` (``fits`` False) it also says by how much: ``over_capacity_bytes``
    and ``min_devices``, the fewest devices of that capacity whose memory adds up to it (a lower bound: sharding
    replicates some tensors). The run still simulates the whole model on one device and warns.
    """
    e = model.dtype_bytes
    dense_w = 0.0
    deployed = 0.0
    metadata = 0.0
    act_peak = 0
    weights: dict[str, tuple[float, float, float]] = {}  # weight layer -> (dense, deployed values, metadata)
    for layer, kern in zip(model.layers, kernels, strict=True):
        if isinstance(layer, Gemm | Conv2d):  # the weight ops (WEIGHT_OPS)
            m, _, k = layer.gemm_shape()  # a grouped conv: one group's weight, stored ``groups`` times
            we = kern.dtype_bytes  # a quantized Linear's weights in its own type (workloads.quantize)
            copies = layer.groups if isinstance(layer, Conv2d) else 1  # (a getattr miss costs pydantic's __getattr__)
            w = stored_bytes(m * k * copies, we)  # whole bytes per stored tensor
            fmt = kern.executed_format
            if fmt is not None:  # each group compressed on its own, as the engine reads it (structured.stored_a)
                # a load-sparse format's index is the hardware's encoding (Kernel.a_index_bits per position)
                meta = (m * kern.k * kern.a_index_bits / 8 if kern.load_sparse
                        else fmt.metadata_bytes(m, kern.k, kern.metadata_bits))
                weights[layer.name] = (w, fmt.value_bytes(m, kern.k, we) * copies, meta * copies)
            else:
                weights[layer.name] = (w, w, 0.0)
            dense_w += weights[layer.name][0]
            deployed += weights[layer.name][1]
            metadata += weights[layer.name][2]
        elif layer.op == "embedding":
            dense_w += stored_bytes(layer.vocab * layer.dim, e)
            deployed += stored_bytes(layer.vocab * layer.dim, e)
        cached = isinstance(layer, Matmul) and bool(layer.kv_cache)  # K / V read from the KV cache: in kv_cache_bytes
        if kern.vector:
            act = kern.read_bytes + kern.write_bytes
        elif kern.op == "attention":  # fused: Q, K, V and O (the scores stay on chip); Q and O only from a cache
            act = stored_bytes((2 * kern.m + (0 if cached else 2 * kern.n)) * kern.k * kern.batch, e)
        else:
            b = 0 if cached else stored_bytes(kern.b_elements * kern.batch, kern.dtype_bytes if kern.c_bytes else e)
            act = b + stored_bytes(kern.m_exec * kern.n * kern.batch, kern.c_bytes or e)
            if not kern.weight:
                act += stored_bytes(kern.m * kern.k * kern.batch, e)
        act_peak = max(act_peak, act)
    for extra in _idle_experts(model, weights):  # experts no token reached still sit in memory
        dense_w += extra[0]
        deployed += extra[1]
        metadata += extra[2]
    kv = stored_bytes(model.kv_cache_elements, model.kv_dtype_bytes)  # in the cache's own dtype
    total = deployed + metadata + act_peak + kv
    cap = hw.dram.capacity_bytes
    out = {"weights_dense_bytes": int(dense_w), "weights_deployed_bytes": int(deployed + metadata),
           "weights_metadata_bytes": int(metadata), "activations_peak_bytes": int(act_peak),
           "kv_cache_bytes": int(kv), "total_bytes": int(total), "dram_capacity_bytes": cap,
           "fits": fits_capacity(int(total), cap)}
    if cap is not None and out["fits"] is False:  # only when it does not fit: by how much
        out["over_capacity_bytes"] = int(total) - cap
        out["min_devices"] = -(-int(total) // cap)
    return out


def fits_capacity(total_bytes: int, capacity_bytes: int | None) -> bool | None:
    """Whether a footprint of ``total_bytes`` (:func:`footprint`'s ``total_bytes``) fits ``dram.capacity_bytes``;
    None when the config gives no capacity. One test for ``run`` and the sweep's rows."""
    return None if capacity_bytes is None else total_bytes <= capacity_bytes


def _idle_experts(model: Workload, weights: dict[str, tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Per moe op, the weights of its experts that ran no kernel (no token routed to them): each stored as the
    op's first running expert is (the same shapes and format)."""
    out: list[tuple[float, float, float]] = []
    for rec in model.moe or ():
        idle = rec.experts - rec.experts_run
        if not idle:
            continue
        first = next(e for e, t in enumerate(rec.tokens_per_expert) if t)
        for name in rec.layers:
            prefix = f"{name}.experts.{first}."
            per = [v for key, v in weights.items() if key.startswith(prefix)]
            out.append((idle * sum(x[0] for x in per), idle * sum(x[1] for x in per), idle * sum(x[2] for x in per)))
    return out


def _add_energy(results: list[KernelResult], bases: list[KernelResult], dtypes: list[str],
                hw: Hardware) -> str | None:
    """Give every result its energy at its kernel's dtype (``dtypes``, one per result: a quantized Linear's
    MACs are the weights' type), replacing it in ``results``; return a warning instead when the energy table
    lacks a dtype."""
    spec = hw.energy
    needed = [spec.mac_pj] + ([spec.sparse_mac_pj] if spec.sparse_mac_pj is not None else [])  # type: ignore[union-attr]
    missing = next((d for d, r in zip(dtypes, results, strict=True) if r.macs_executed
                    and any(d not in table for table in needed)), None)
    if missing is not None:
        return (f"no energy figures: the hardware's energy.mac_pj / sparse_mac_pj have no {missing} entry "
                "(add one to report energy)")
    # Layers of one kernel (and a dense layer and its baseline) share the read-only parts of their result that
    # the energy reads: each such set is worked out once. The ids are of objects the lists hold for the loop.
    energies: dict[tuple[Any, ...], dict[str, Any]] = {}
    finished: dict[tuple[int, float], dict[str, Any]] = {}

    def energy_of(r: KernelResult, dtype: str) -> dict[str, Any]:
        key = (id(r.cycles), id(r.bytes), id(r.busy), id(r.counts), id(r.tiling), r.path, r.macs_executed, dtype)
        e = energies.get(key)
        if e is None:
            e = energies[key] = layer_energy(r, hw, dtype)
        return e

    for i, (res, base, dtype) in enumerate(zip(results, bases, dtypes, strict=True)):
        e = energy_of(res, dtype)
        dense_j = energy_of(base, dtype)["total_j"] if base is not res else e["total_j"]
        done = finished.get((id(e), dense_j))
        if done is None:
            done = finished[(id(e), dense_j)] = frozen_tree(rounded(
                {**e, "dense_total_j": dense_j,
                 "energy_ratio_vs_dense": dense_j / e["total_j"] if e["total_j"] else 1.0}))
        results[i] = res.replace(energy=done)
    return None


def _check_model_totals(name: str, results: list[KernelResult], dense_total: int) -> None:
    """Each layer fits 64 bits; refuse a model whose reported sums would not."""
    where = f"workload '{name}'"
    check_total(where, "total cycles", max(dense_total, sum(r.cycles["total"] for r in results)))
    check_total(where, "total MACs", sum(r.macs for r in results))
    for level in ("dram", "sram"):
        for tensor in results[0].bytes[level] if results else ():
            check_total(where, f"total {level.upper()} bytes of {tensor}", sum(r.bytes[level][tensor] for r in results))


def _checked_arguments(model: object, hw: object, sparsity: object, policy: object) -> str | None:
    """``run``'s arguments as a user may get them wrong: an AccelsimError naming the argument and what to pass;
    else the sparsity in its canonical spelling (as ``--sparsity`` reads it)."""
    for name, value, want, load in (("model", model, Workload, "load_workload"), ("hw", hw, Hardware, "load_hardware")):
        if not isinstance(value, want):
            path = " (a path: load it first)" if isinstance(value, str | Path) else ""
            raise AccelsimError(f"accelsim.run: {name} must be a {want.__name__} from accelsim.{load}(path), "
                                f"not {type(value).__name__}{path}")
    if policy not in POLICIES:
        raise ConfigError("accelsim.run", "policy", f"unknown policy {policy!r}; expected one of "
                          f"{', '.join(map(repr, POLICIES))}")
    try:
        return None if sparsity is None else normalize_format(sparsity)
    except ValueError as exc:
        raise ConfigError("accelsim.run", "sparsity", str(exc)) from None


def run(model: Workload, hw: Hardware, sparsity: str | None = None, *, policy: str = "sparse-if-supported",
        hw_source: str = "<hardware>", keep_tiles: bool = False,
        progress: Callable[[int, int], None] | None = None, command: list[str] | None = None,
        simulator: Simulator | None = None) -> RunResult:
    """Simulate every op of ``model`` on ``hw`` (plus each op's dense baseline).

    ``policy``: 'sparse-if-supported' runs sparse wherever the hardware can; 'fastest' also
    simulates dense and keeps the faster kernel (reason 'slower_than_dense'). ``sparsity`` is read as
    ``--sparsity`` is (canonical spelling; "4:4" is dense). Wrong arguments raise AccelsimError.
    """
    sparsity = _checked_arguments(model, hw, sparsity, policy)
    source = simulator.source if simulator is not None else hw_source  # the hardware a refusal names
    plan = split(model, hw.devices, source) if hw.devices > 1 else None  # a system: one device's shard + collectives
    summary = model.summary()
    if plan is not None:
        model = plan.workload
    kernels = lower(model, hw, sparsity)
    sim = simulator or Simulator(hw, hw_source, keep_tiles)
    results: list[KernelResult] = []
    bases: list[KernelResult] = []
    dense_total = 0
    for i, kernel in enumerate(kernels):
        res = sim.settled(kernel)
        base = sim.settled(kernel.as_dense()) if kernel.sparse else res
        chosen = choose_path(kernel, res.cycles["total"], base.cycles["total"], policy)
        if chosen is not kernel:
            kernel = kernels[i] = chosen
            res = base
        dense_total += base.cycles["total"]
        results.append(_labelled(res, kernel, base, model.dtype))
        bases.append(base)
        if progress is not None:
            progress(i + 1, len(kernels))
    _check_model_totals(model.name, results, dense_total)
    warnings = [n for n in (dtype_fallback_note(kernels, model.dtype, hw), dtype_unsupported_note(kernels, hw)) if n]
    pruned = sum(1 for k in kernels if k.sparse and k.rows_kept)
    if pruned:
        warnings.append(f"{pruned:,} layer(s) run channel-pruned (fewer output rows); assumption "
                        "downstream_input: not_shrunk: the next layer's input (its k) stays as the workload "
                        "writes it (shrink that layer's shape in the workload to model it)")
    quantized = sum(1 for k in kernels if k.c_bytes and k.c_bytes != k.dtype_bytes)
    if quantized and not isinstance(hw.core.compute, TensorCoreCompute):
        warnings.append(f"{quantized:,} quantized linear(s) on a systolic part: their C is written at the weight "
                        "dtype's bytes, not the activation / accumulator dtype's (the systolic engine has one "
                        "element size per kernel): C traffic is under-counted")
    if hw.energy is not None:
        problem = _add_energy(results, bases, [k.dtype for k in kernels], hw)
        if problem:
            warnings.append(problem)
    waited = sum(1 for r in results if r.tiling.get("host_wait_cycles"))
    if waited:
        warnings.append(f"{waited:,} layer(s) take the host's per-call floor (host.call_floor_us "
                        f"{hw.host.call_floor_us:g} us: a call cannot finish before the host issues the next); "
                        "--hw-set host.call_floor_us=0 shows the GPU alone (e.g. CUDA graphs)")
    floor = sum(1 for r in results if r.clock is not None and r.clock["limit"] == "clock_floor")
    if floor and hw.energy is not None and hw.energy.power_cap is not None:
        cap = hw.energy.power_cap
        warnings.append(f"{floor:,} layer(s) draw more than energy.power_cap.tdp_w {cap.tdp_w:g} W even at "
                        f"min_clock_fraction {cap.min_clock_fraction:g}: they run at that floor, above the cap")
    system = None
    if plan is not None:
        results, dense_comm = with_collectives(results, bases, plan, hw)
        dense_total += sum(d.cycles["total"] for d in dense_comm.values())
        system = system_summary(plan, hw, results)
        warnings.extend(plan.notes)
        if hw.energy is not None and results and results[0].energy is not None:
            for i, d in dense_comm.items():  # the device idles at its static power while the collective runs
                e = layer_energy(results[i], hw, model.dtype)
                dense_j = layer_energy(d, hw, model.dtype)["total_j"]
                results[i] = dataclasses.replace(results[i], energy=rounded(
                    {**e, "dense_total_j": dense_j, "energy_ratio_vs_dense": dense_j / e["total_j"] if e["total_j"]
                     else 1.0}))
            warnings.append("interconnect energy is not modelled: a collective costs each device its static power "
                            "for its time, no link or switch energy")
    fp = footprint(model, kernels, hw)
    if plan is not None:  # the shard one device holds (every device holds one), and its room for KV cache
        fp["per_device"] = True
        fp["devices"] = hw.devices
        cap = fp["dram_capacity_bytes"]
        if cap is not None:
            fixed = fp["activations_peak_bytes"]
            fp["kv_room_bytes"] = cap - fp["weights_deployed_bytes"] - fixed
            fp["kv_room_dense_bytes"] = cap - fp["weights_dense_bytes"] - fixed
    if fp["fits"] is False:
        warnings.append(_over_capacity("memory footprint", "weights as deployed", fp, hw.devices))
    elif fp["fits"] and any(k.sparse for k in kernels):  # the speedup's dense baseline holds dense weights
        dense_fp = footprint(model, [k.as_dense() for k in kernels], hw)
        if dense_fp["fits"] is False:
            fp["dense_baseline_over_capacity_bytes"] = dense_fp["over_capacity_bytes"]
            warnings.append(_over_capacity("the dense baseline's memory footprint", "dense weights", dense_fp,
                                           hw.devices) + " (the speedup compares against it)")
    echo, hw_hash = _hardware_echo(hw)
    wl_hash = summary["hash"] if plan is None else model.config_hash()  # summary's: the workload as given
    meta = build_meta(command, {"hardware": hw_hash, "workload": wl_hash})
    return RunResult(hardware=echo, workload=summary, sparsity=sparsity, layers=results,
                     clock_ghz=hw.clock_ghz, peak_macs_per_cycle=peak_macs_per_cycle(hw, model.dtype), meta=meta,
                     dtype_peaks={d: peak_macs_per_cycle(hw, d) for d in sorted({r.dtype for r in results if r.dtype})},
                     dense_total_cycles=dense_total, policy=policy, footprint=fp, warnings=warnings, system=system)


def _over_capacity(what: str, weights: str, fp: dict[str, Any], devices: int) -> str:
    """The warning for a footprint that exceeds dram.capacity_bytes: by how much, and how it was simulated."""
    over, cap = fp["over_capacity_bytes"], fp["dram_capacity_bytes"]
    head = (f"{what} {fp['total_bytes']:,} bytes ({weights}, peak activations, KV cache) exceeds dram.capacity_bytes "
            f"{cap:,} by {over:,} bytes")
    if devices == 1:
        return (f"{head} ({over / cap:.1%}; at least {fp['min_devices']} such devices to hold it): simulated as if "
                "one device held it all")
    return f"{head} per device's shard of {devices} ({over / cap:.1%}): simulated as if each device held its shard"


def communication_result(name: str, kind: str, message_bytes: int, hw: Hardware, producer_cycles: int) -> KernelResult:
    """One collective as a layer of a run: its time on the system's interconnect in nominal-clock cycles
    (``cycles.communication``), less what ``interconnect.overlap: producer`` hides behind its producing GEMM."""
    assert hw.system is not None
    ic = hw.system.interconnect
    seconds = collective_seconds(kind, message_bytes, hw.devices, ic)
    full = round(seconds * hw.clock_ghz * 1e9)
    shown = max(0, full - producer_cycles) if ic.overlap == "producer" else full
    zero = {"a_values": 0, "a_metadata": 0, "b": 0, "c": 0}
    tiles = np.zeros(0, TILE_DTYPE)  # no tiles: a trace draws the collective on its own track
    tiles.setflags(write=False)
    return KernelResult(
        name=name, op=kind, shape={"message_bytes": message_bytes, "devices": hw.devices}, path="communication",
        pattern_requested=None, pattern_executed=None, reason=None, padding={},
        cycles={"total": shown, "compute": 0, "stall_memory": 0, "stall_decode": 0, "launch": 0,
                "communication": shown},
        macs=0, macs_executed=0, utilization=0.0, bytes={"dram": dict(zero), "sram": dict(zero)},
        binding="communication", busy={"compute": 0, "memory": 0, "decode": 0, "launch": 0, "communication": full},
        tiling={"topology": ic.topology, "algorithm": ic.algorithm_name, "overlap": ic.overlap,
                "seconds": float(f"{seconds:.12g}"), "hidden_cycles": full - shown}, tiles=tiles)


def with_collectives(results: list[KernelResult], bases: list[KernelResult], plan: TensorParallelPlan,
                     hw: Hardware) -> tuple[list[KernelResult], dict[int, KernelResult]]:
    """``results`` (one device's shard) with each collective of ``plan`` after its layer; and, by its index there,
    each collective as the dense baseline runs it (``bases``: each layer's dense baseline, as ``results``).

    Under ``interconnect.overlap: producer`` a collective hides behind its producer, which the sparse run and the
    dense baseline run at different speeds: each collective's ``dense_cycles`` is its time behind the dense
    producer, so the run's dense baseline is the dense run's."""
    after: dict[int, list[tuple[KernelResult, KernelResult]]] = {}
    for c in plan.collectives:
        res = communication_result(c.name, c.kind, c.message_bytes, hw, results[c.producer].cycles["total"])
        dense = communication_result(c.name, c.kind, c.message_bytes, hw, bases[c.producer].cycles["total"])
        after.setdefault(c.after, []).append((res.replace(dense_cycles=dense.cycles["total"]), dense))
    out: list[KernelResult] = []
    dense_of: dict[int, KernelResult] = {}
    for i, res in enumerate(results):
        out.append(res)
        for comm, dense in after.get(i, ()):
            dense_of[len(out)] = dense
            out.append(comm)
    return out, dense_of


def system_summary(plan: TensorParallelPlan, hw: Hardware, results: list[KernelResult]) -> dict[str, Any]:
    """The ``system`` section of a tensor-parallel run: devices, the split's assumptions, communication."""
    assert hw.system is not None
    comm = [r for r in results if r.path == "communication"]
    total = sum(r.cycles["total"] for r in results)
    cycles = sum(r.cycles["total"] for r in comm)
    return {"devices": hw.devices, "device": hw.system.device, "layers_are": "one device's shard (all run alike)",
            "split": plan.assumptions(), "interconnect": hw.system.interconnect.model_dump(mode="json"),
            "communication": {"collectives": len(comm), "cycles": cycles,
                              "hidden_cycles": sum(int(r.tiling["hidden_cycles"]) for r in comm),
                              "message_bytes": sum(int(r.shape["message_bytes"]) for r in comm),
                              "share_of_time": round(cycles / total, 6) if total else 0.0}}
