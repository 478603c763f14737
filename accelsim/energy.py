"""Energy and power: per-access energies applied to a run's counts, power over time, a power cap.

Energy of an op (pJ, reported in joules):
- mac: executed MACs x mac_pj[dtype] (sparse_mac_pj on the sparse datapath);
- vector: vector element ops x vector_pj_per_op;  decode: metadata groups decoded x decode_pj_per_group;
- sram: bytes the array reads (A values, A metadata, B, and C on its way out) x read energy, plus
  bytes written (fills from DRAM / L2 and C from the array) x write energy;
- l2: bytes filled into core SRAM and C written, through the L2 (parts with an L2);
- dram: DRAM bytes x dram_pj_per_byte;
- static: (cores x core_w + l2_w + dram_w) x the op's time.
Memory energy is also split by tensor (A values, A metadata (+ decode), B, C). The components
add up to the total exactly.

Power-limited clock (``energy.power_cap``; one governor, two time scales). Assumptions, by name:
- clock/power relation (DVFS): at a fraction f of the nominal clock, f in [min_clock_fraction, 1],
  the core voltage is v(f) = 1 - (1 - voltage_at_min_clock) (1 - f) / (1 - min_clock_fraction)
  of nominal (linear in f); core dynamic energy per operation (mac, vector, decode, sram, l2)
  scales with v(f)^2; DRAM energy per byte (its own supply) and static power do not change.
  Dynamic power is that energy over the time, so it falls like f v(f)^2 for work that slows with
  the clock. ``voltage_at_min_clock`` 1.0 is frequency-only scaling (dynamic power ~ f).
- steady state, per kernel (``settle_clock``; every run, sweep row, serve and report): the kernel
  runs at the highest f whose power P(f) = (core J x v(f)^2 + DRAM J) / t(f) + static W is at most
  ``tdp_w``, where t(f) is the kernel re-simulated at f x clock_ghz (DRAM bandwidth and latency
  are fixed in bytes/s and ns, so a memory-bound kernel loses little time at a lower clock).
  Dense and sparse kernels settle each at their own clock. If even min_clock_fraction draws more
  than the TDP, the kernel runs at the floor (limit ``clock_floor``). Per kernel is exact for
  kernels longer than ``time_constant_s``; short kernels between low-power ones (norms, element-
  wise ops) could borrow headroom from their neighbours under a limiter that averages power, so
  there it is conservative (the transient below shows the difference). The solve brackets f and
  stops within CLOCK_TOLERANCE of the clock or POWER_TOLERANCE below the TDP; the settled
  clock's power never exceeds the TDP (but at the floor).
- transient (``apply_power_cap``; ``plot power``): power is binned in windows of ``window_s``; an
  exponential moving average with ``time_constant_s`` tracks it; after each window the clock
  fraction f becomes clamp(f * (1 + gain * (tdp - avg) / tdp), min_clock_fraction, 1). A window
  of work takes its full-clock time / f (everything slows with the clock, a simplification) and
  draws the steady state's P(f) (``power_at_clock``), so on a steady load the loop settles where
  ``settle_clock`` does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from accelsim.errors import ConfigError
from accelsim.formats import parse_format
from accelsim.hardware.model import Hardware, PowerCap
from accelsim.records import Record, freeze
from accelsim.results import CAPPED_LIMITS, KernelResult, KernelTotals, RunResult, rounded, sum_energy  # noqa: F401

PJ = 1e-12
COMPONENTS = ("mac", "vector", "decode", "sram", "l2", "dram", "static")
CORE_COMPONENTS = ("mac", "vector", "decode", "sram", "l2")  # on the core supply: scale with v(f)^2
TENSORS = ("a_values", "a_metadata", "b", "c")
CLOCK_TOLERANCE = 1e-3  # the steady-state solve stops when the clock bracket is this narrow (fraction of nominal)
POWER_TOLERANCE = 2e-3  # ... or when the settled power is within this share below the TDP
_MAX_STEPS = 40
MAX_POWER_WINDOWS = 1_000_000  # windows a power trace may hold (all its repeats together)


def static_watts(hw: Hardware) -> float:
    """Static power of the whole part."""
    spec = hw.energy
    if spec is None:
        return 0.0
    return hw.cores * spec.static.core_w + (spec.static.l2_w if hw.l2 is not None else 0.0) + spec.static.dram_w


class _PartConstants(NamedTuple):
    """What the energy formula reads of a part beyond its energy tables, worked out once per Hardware object."""

    hw: Hardware  # held: the memo's id() key cannot be reused while its entry lives
    b_reads: int  # _pair_share
    static_w: float  # static_watts
    clock_hz: float  # clock_ghz x 1e9


_PART_MEMO: dict[int, _PartConstants] = {}
_PART_MEMO_SIZE = 64


def _part(hw: Hardware) -> _PartConstants:
    """:class:`_PartConstants` of ``hw`` (a Hardware is frozen; the memo holds the object it was computed for)."""
    hit = _PART_MEMO.get(id(hw))
    if hit is None or hit.hw is not hw:
        if len(_PART_MEMO) >= _PART_MEMO_SIZE:
            _PART_MEMO.clear()
        hit = _PART_MEMO[id(hw)] = _PartConstants(hw, _pair_share(hw), static_watts(hw), hw.clock_ghz * 1e9)
    return hit


def layer_energy(res: KernelResult, hw: Hardware, dtype: str) -> dict[str, Any]:
    """Energy of one simulated op, by component and by tensor, in joules (at the op's own clock)."""
    groups, vector_ops = _stage_work(res.busy.get("decompress") is not None, res.counts.get("decode_groups", 0.0),
                                     res.counts.get("vector_ops", 0.0))
    on_sparse = res.path == "sparse" and res.tiling.get("compute_on", "sparse") == "sparse"
    return op_energy(hw, dtype, on_sparse, res.macs_executed, res.bytes["dram"], res.bytes["sram"],
                     res.cycles["total"], groups, vector_ops, res.name,
                     dynamic_scale(hw, res.counts.get("clock_fraction", 1.0)))


def _stage_work(decompress: bool, stage_units: float, vector_ops: float) -> tuple[float, float]:
    """(decode groups, vector ops) for the energy formula: a decompress stage's values (load-sparse-compute-dense)
    are placed by the core's CUDA cores / vector unit, one vector operation each (vector_pj_per_op), not decoded
    as N:M groups."""
    return (0.0, vector_ops + stage_units) if decompress else (stage_units, vector_ops)


def _on_dense_datapath(pattern: str | None) -> bool:
    """Block sparsity runs on the dense datapath (its MACs cost ``mac_pj``, not ``sparse_mac_pj``)."""
    fmt = parse_format(pattern) if pattern else None
    return fmt is not None and fmt.key == "block"


def energy_tables_cover(hw: Hardware, dtype: str) -> bool:
    """Whether ``hw`` has energy figures, with MAC energies for ``dtype`` on every datapath."""
    spec = hw.energy
    return spec is not None and dtype in spec.mac_pj and (spec.sparse_mac_pj is None or dtype in spec.sparse_mac_pj)


def kernel_energy(hw: Hardware, dtype: str, kernel: Any, totals: KernelTotals, fraction: float = 1.0) -> float:
    """Total energy (J) of ``kernel`` run with ``totals`` (from ``engine.simulate_totals``, in nominal-clock
    cycles) at ``fraction`` of the nominal clock."""
    return sum(_kernel_terms(hw, dtype, kernel, totals, dynamic_scale(hw, fraction)))


def _kernel_terms(hw: Hardware, dtype: str, kernel: Any, t: KernelTotals, scale: float) -> tuple:
    groups, vector_ops = _stage_work(t.stage == "decompress", t.decode_groups, kernel.vector_ops)
    comp, _, _, _ = _terms(hw, dtype, kernel.sparse_datapath, kernel.macs_executed,
                           (t.dram_a_values, t.dram_a_metadata, t.dram_b, t.dram_c),
                           (t.sram_a_values, t.sram_a_metadata, t.sram_b, t.sram_c), t.total, groups,
                           vector_ops, kernel.name, scale)
    return comp


def op_energy(hw: Hardware, dtype: str, sparse: bool, macs_executed: int, dram: Mapping[str, int],
              sram: Mapping[str, int], cycles: int, decode_groups: float, vector_ops: float,
              name: str = "op", scale: float = 1.0) -> dict[str, Any]:
    """Energy of one op from its counts (MACs, bytes per level and tensor, cycles in nominal-clock cycles,
    decode groups, vector ops); ``scale``: core dynamic energy per operation relative to the nominal clock's."""
    comp, mem, seconds, decode_pj = _terms(hw, dtype, sparse, macs_executed, tuple(dram[t] for t in TENSORS),
                                           tuple(sram[t] for t in TENSORS), cycles, decode_groups, vector_ops, name,
                                           scale)
    by_tensor = {t: sum(m) * PJ for t, m in zip(TENSORS, mem, strict=True)}
    by_tensor["a_metadata"] += decode_pj * PJ
    total = sum(comp)
    return {"total_j": total, "by_component_j": dict(zip(COMPONENTS, comp, strict=True)), "by_tensor_j": by_tensor,
            "avg_power_w": total / seconds if seconds else 0.0}


def _pair_share(hw: Hardware) -> int:
    """How many SMs' shares of a B tile one SM's tensor cores read: the cluster's m with 2-SM MMA pairs (each SM
    holds 1/m of B: ``bytes.sram.b`` counts those fills), else 1. A grid of one CTA-row runs unpaired: its reads
    are counted m times too (a tile of at most BM rows, where the count is small)."""
    comp = hw.core.compute
    # only tensor-core parts have the field: asked of the class (a getattr miss goes through pydantic's __getattr__)
    cluster = comp.cluster if "cluster" in type(comp).model_fields else None  # type: ignore[union-attr]
    return int(cluster.m) if cluster is not None and cluster.pair_mma else 1


def _terms(hw: Hardware, dtype: str, sparse: bool, macs_executed: int, d: tuple, s: tuple, cycles: int,
           decode_groups: float, vector_ops: float, name: str,
           scale: float = 1.0) -> tuple[tuple, list[tuple], float, float]:
    """The one energy formula: components (COMPONENTS order, J), per-tensor (sram, l2, dram) pJ,
    seconds and decode pJ. Tensors are indexed in TENSORS order. ``scale`` multiplies the energy per
    operation on the core supply (:data:`CORE_COMPONENTS`): v(f)^2 at a lowered clock."""
    spec = hw.energy
    assert spec is not None
    table = spec.sparse_mac_pj if (sparse and spec.sparse_mac_pj is not None) else spec.mac_pj
    if macs_executed and dtype not in table:
        key = "sparse_mac_pj" if table is spec.sparse_mac_pj else "mac_pj"
        raise ConfigError("<hardware>", f"energy.{key}", f"no {dtype} entry: op '{name}' needs one")
    rd, wr = spec.sram_read_pj_per_byte, spec.sram_write_pj_per_byte
    has_l2 = hw.l2 is not None
    l2_pj, dram_pj = spec.l2_pj_per_byte, spec.dram_pj_per_byte
    part = _part(hw)
    # a_values, a_metadata, b: filled into SRAM (from DRAM, or L2), read by the array;
    # c: the array writes C into SRAM, write-back reads it out
    # an MMA pair (core.compute.cluster.pair_mma) fills 1/m of B per SM and reads all of it, its partners' too
    b_reads = part.b_reads
    mem = [((s[0] if has_l2 else d[0]) * wr + s[0] * rd, s[0] * l2_pj if has_l2 else 0.0, d[0] * dram_pj),
           ((s[1] if has_l2 else d[1]) * wr + s[1] * rd, s[1] * l2_pj if has_l2 else 0.0, d[1] * dram_pj),
           ((s[2] if has_l2 else d[2]) * wr + s[2] * b_reads * rd, s[2] * l2_pj if has_l2 else 0.0, d[2] * dram_pj),
           (s[3] * wr + d[3] * rd, s[3] * l2_pj if has_l2 else 0.0, d[3] * dram_pj)]
    decode_pj = decode_groups * spec.decode_pj_per_group
    mac_pj = macs_executed * cast("dict[str, float]", table).get(dtype, 0.0)  # keyed by dtype names
    vector_pj = vector_ops * spec.vector_pj_per_op
    if scale != 1.0:
        mem = [(sr * scale, l2 * scale, dr) for sr, l2, dr in mem]
        decode_pj, mac_pj, vector_pj = decode_pj * scale, mac_pj * scale, vector_pj * scale
    m0, m1, m2, m3 = mem
    seconds = cycles / part.clock_hz
    # the sums start at 0 and add the tensors in TENSORS order (as sum() over them did)
    comp = (mac_pj * PJ,
            vector_pj * PJ,
            decode_pj * PJ,
            (0 + m0[0] + m1[0] + m2[0] + m3[0]) * PJ,
            (0 + m0[1] + m1[1] + m2[1] + m3[1]) * PJ,
            (0 + m0[2] + m1[2] + m2[2] + m3[2]) * PJ,
            part.static_w * seconds)
    return comp, mem, seconds, decode_pj


# -- the power-limited clock ------------------------------------------------------------------

def power_cap_of(hw: Hardware) -> PowerCap | None:
    return hw.energy.power_cap if hw.energy is not None else None


def voltage_fraction(cap: PowerCap, fraction: float) -> float:
    """Core voltage at ``fraction`` of the nominal clock, as a fraction of the nominal voltage (linear in the
    clock from ``voltage_at_min_clock`` at ``min_clock_fraction`` to 1 at the nominal clock)."""
    if fraction >= 1.0 or cap.min_clock_fraction >= 1.0:
        return 1.0
    return 1.0 - (1.0 - cap.voltage_at_min_clock) * (1.0 - fraction) / (1.0 - cap.min_clock_fraction)


def dynamic_scale(hw: Hardware, fraction: float) -> float:
    """Core dynamic energy per operation at ``fraction`` of the nominal clock, relative to nominal: v(f)^2."""
    cap = power_cap_of(hw)
    if cap is None or fraction == 1.0:
        return 1.0
    v = voltage_fraction(cap, fraction)
    return v * v


def power_at_clock(core_j: float, other_j: float, seconds: float, static_w: float, scale: float) -> float:
    """Power (W) of work that draws ``core_j`` on the core supply and ``other_j`` elsewhere at the nominal
    voltage, over ``seconds`` at a clock whose core energy per operation is ``scale`` of nominal."""
    return (core_j * scale + other_j) / seconds + static_w if seconds > 0 else static_w


def clock_limit(hw: Hardware, dtype: str) -> str | None:
    """Why ``hw`` runs ``dtype`` kernels at the nominal clock whatever their power ('no_energy',
    'no_power_cap'), or None when the power cap governs them."""
    if not energy_tables_cover(hw, dtype):
        return "no_energy"
    return "no_power_cap" if power_cap_of(hw) is None else None


def kernel_power(hw: Hardware, kernel: Any, totals: KernelTotals, fraction: float) -> float:
    """Power (W) of ``kernel`` at ``fraction`` of the nominal clock; ``totals`` are its totals at that clock,
    in nominal-clock cycles (:meth:`KernelTotals.in_nominal_cycles`)."""
    comp = _kernel_terms(hw, kernel.dtype, kernel, totals, 1.0)  # COMPONENTS order: core five, dram, static
    part = _part(hw)
    seconds = totals.total / part.clock_hz
    return power_at_clock(sum(comp[:5]), comp[5], seconds, part.static_w, dynamic_scale(hw, fraction))


def highest_clock(cap: PowerCap, power: Callable[[float], float], nominal_w: float) -> tuple[float, float, str]:
    """The governor's steady state: the highest clock fraction f in [min_clock_fraction, 1] with
    ``power(f)`` <= ``tdp_w`` (``nominal_w``: ``power(1.0)``). Returns (f, power(f), limit) with limit
    'nominal', 'power_cap' or 'clock_floor' (even the floor draws more than the TDP).

    A bracket [lo, hi] with power(lo) <= tdp < power(hi) narrows by regula falsi (Illinois), with a
    bisection step whenever a step fails to halve it, until it is CLOCK_TOLERANCE wide or power(lo)
    is within POWER_TOLERANCE of the TDP; the answer is lo, so its power never exceeds the TDP.
    """
    tdp = cap.tdp_w
    if nominal_w <= tdp:
        return 1.0, nominal_w, "nominal"
    lo = cap.min_clock_fraction
    p_lo = power(lo) if lo < 1.0 else nominal_w
    if p_lo > tdp:
        return lo, p_lo, "clock_floor"
    hi, g_lo, g_hi = 1.0, p_lo - tdp, nominal_w - tdp
    side = 0
    for _ in range(_MAX_STEPS):
        width = hi - lo
        if width <= CLOCK_TOLERANCE or g_lo >= -POWER_TOLERANCE * tdp:
            break
        f = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        if not lo < f < hi:
            f = 0.5 * (lo + hi)
        p = power(f)
        g = p - tdp
        if g <= 0.0:
            lo, g_lo, p_lo = f, g, p
            if side < 0:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi = f, g
            if side > 0:
                g_lo *= 0.5
            side = 1
        if hi - lo > 0.5 * width and g_lo < -POWER_TOLERANCE * tdp:  # slow: bisect once
            mid = 0.5 * (lo + hi)
            p = power(mid)
            if p <= tdp:
                lo, g_lo, p_lo = mid, p - tdp, p
            else:
                hi, g_hi = mid, p - tdp
            side = 0
    return lo, p_lo, "power_cap"


class SettledClock(NamedTuple):
    """A kernel at its power-limited clock (:func:`settle_clock`)."""

    fraction: float        # of the nominal clock
    limit: str             # results.CLOCK_LIMITS
    power_w: float | None  # the kernel's power at that clock (None: not evaluated, see limit)
    totals: KernelTotals   # its totals at that clock, in nominal-clock cycles
    actual: KernelTotals   # the same totals counted in cycles of that clock
    energy_j: float | None = None  # its energy at that clock, when the governor already computed it

    @property
    def capped(self) -> bool:
        """Whether the cap lowered the clock (a floor at the nominal clock, min_clock_fraction 1, lowers nothing)."""
        return self.limit in CAPPED_LIMITS and self.fraction < 1.0

    def echo(self, hw: Hardware) -> dict[str, Any]:
        """The clock a result echoes (``KernelResult.clock``, less ``cycles_at_clock``); ``power_w`` only for a
        kernel that takes time (a zero-cycle one draws no average power, as its energy's ``avg_power_w`` says)."""
        out: dict[str, Any] = {"ghz": round(hw.clock_ghz * self.fraction, 6), "limit": self.limit,
                               "power_capped": self.capped}
        if self.power_w is not None and self.totals.total > 0:
            out["power_w"] = round(self.power_w, 6)
        return out


def settle_clock(hw: Hardware, kernel: Any, totals_at: Callable[[float], KernelTotals]) -> SettledClock:
    """``kernel`` at the clock the power cap lets it sustain (the module docstring's steady state).

    ``totals_at(f)``: the kernel's totals simulated at ``f`` x ``hw.clock_ghz`` (cycles of that clock);
    called with 1.0 first, then only while the cap binds.
    """
    nominal = totals_at(1.0)
    limit = clock_limit(hw, kernel.dtype)
    if limit is not None:
        return SettledClock(1.0, limit, None, nominal, nominal)
    cap = power_cap_of(hw)
    assert cap is not None
    seen: dict[float, tuple[KernelTotals, KernelTotals]] = {1.0: (nominal, nominal)}

    def power(f: float) -> float:
        actual = totals_at(f)
        seen[f] = (actual.in_nominal_cycles(f), actual)
        return kernel_power(hw, kernel, seen[f][0], f)

    comp = _kernel_terms(hw, kernel.dtype, kernel, nominal, 1.0)  # at the nominal clock: kernel_power(.., 1.0)
    part = _part(hw)
    seconds = nominal.total / part.clock_hz
    nominal_w = power_at_clock(sum(comp[:5]), comp[5], seconds, part.static_w, dynamic_scale(hw, 1.0))
    f, p, limit = highest_clock(cap, power, nominal_w)
    scaled, actual = seen[f]
    return SettledClock(f, limit, p, scaled, actual, sum(comp) if f == 1.0 else None)


def uncapped(hw: Hardware) -> Hardware:
    """``hw`` without its power cap (every kernel at the nominal clock)."""
    if power_cap_of(hw) is None:
        return hw
    assert hw.energy is not None
    return hw.model_copy(update={"energy": hw.energy.model_copy(update={"power_cap": None})})


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunClock(Record):
    """The clocks one run, or several together, ran at: ``accelsim run``'s ``totals.clock``
    (:meth:`~accelsim.results.RunResult.clock_totals`) with its ``layers`` and ``runs`` counted. Over several
    runs (a service's simulated shapes, each once) the clocks are time-weighted over all their layers."""

    nominal_ghz: float
    effective_ghz: float
    by_path: Mapping[str, float]
    dense_baseline_ghz: float
    power_capped_layers: int
    over_cap_layers: int
    no_energy_layers: Mapping[str, int]
    unclocked_layers: int
    governor: str
    tdp_w: float | None
    layers: int
    runs: int = 1

    @property
    def capped(self) -> bool:
        """Whether the power cap lowered any layer's clock."""
        return self.power_capped_layers > 0


def run_clock(runs: Sequence[RunResult]) -> RunClock | None:
    """The clocks of ``runs`` (on one hardware) taken together, as one run of all their layers; None without
    runs or for results written before clocks were echoed."""
    layers = [lay for res in runs for lay in res.layers]
    if not layers or layers[0].clock is None:
        return None
    whole = dataclasses.replace(runs[0], layers=layers, dense_total_cycles=sum(r.dense_total_cycles for r in runs))
    c = whole.clock_totals()
    return RunClock(**{**c, "by_path": freeze(c["by_path"]), "no_energy_layers": freeze(c["no_energy_layers"])},
                    layers=len(layers), runs=len(runs))


def at_clock(hw: Hardware, fraction: float) -> Hardware:
    """``hw`` with its clock at ``fraction`` of nominal: what the engine simulates a settled kernel on."""
    return hw if fraction == 1.0 else hw.model_copy(update={"clock_ghz": hw.clock_ghz * fraction})


# -- power over time -------------------------------------------------------------------------

def power_windows(total_s: float, window_s: float, repeats: int = 1, key: str = "energy.power_cap.window_s") -> int:
    """How many windows of ``window_s`` one run of ``total_s`` seconds takes; refused (ConfigError naming ``key``)
    when ``repeats`` runs of it would take more than MAX_POWER_WINDOWS (memory: a few arrays of that length)."""
    n_win = max(1, int(math.ceil(total_s / window_s - 1e-9)))
    if n_win * repeats > MAX_POWER_WINDOWS:
        runs = f" x {repeats:,} repeats" if repeats > 1 else ""
        raise ConfigError("<hardware>", key, f"{window_s:g} s cuts the {total_s:.6g} s run{runs} into "
                          f"{n_win * repeats:,} windows, more than {MAX_POWER_WINDOWS:,}: use at least "
                          f"{total_s * repeats / MAX_POWER_WINDOWS:.3g} s")
    return n_win


def power_trace(layers: list[KernelResult], energies: list[dict[str, Any]], hw: Hardware,
                window_s: float) -> dict[str, np.ndarray]:
    """Power in fixed windows over a run whose ops execute back to back (needs per-tile records).

    Dynamic energy is placed where the work happens: MAC / vector / decode energy over each
    tile's compute interval, memory energy over its load and write-back intervals. Rows of a
    multi-core wave class that repeats are spread over the class's whole span. ``dram_j`` is the
    part of ``dynamic_j`` drawn by DRAM (not on the core supply).
    """
    clock = hw.clock_ghz * 1e9
    total_s = sum(r.cycles["total"] for r in layers) / clock
    n_win = power_windows(total_s, window_s)
    energy = np.zeros(n_win)
    dram = np.zeros(n_win)

    def deposit(start_s: np.ndarray, end_s: np.ndarray, joules: np.ndarray, dram_share: float = 0.0) -> None:
        for s0, s1, j in zip(start_s, end_s, joules, strict=True):
            if j <= 0:
                continue
            if s1 <= s0:
                energy[min(n_win - 1, int(s0 / window_s))] += j
                dram[min(n_win - 1, int(s0 / window_s))] += j * dram_share
                continue
            a, b = int(s0 / window_s), min(n_win - 1, int(s1 / window_s))
            if a == b:
                energy[a] += j
                dram[a] += j * dram_share
                continue
            edges = np.clip(np.arange(a, b + 2) * window_s, s0, s1)
            part = j * np.diff(edges) / (s1 - s0)
            energy[a:b + 1] += part
            dram[a:b + 1] += part * dram_share

    offset = 0.0
    for res, e in zip(layers, energies, strict=True):
        comp = e["by_component_j"]
        compute_j = comp["mac"] + comp["vector"] + comp["decode"]
        memory_j = comp["sram"] + comp["l2"] + comp["dram"]
        mem_dram = comp["dram"] / memory_j if memory_j > 0 else 0.0
        t = res.tiles
        dur = res.cycles["total"] / clock
        if t is None or len(t) == 0:
            both = compute_j + memory_j
            deposit(np.array([offset]), np.array([offset + dur]), np.array([both]),
                    comp["dram"] / both if both > 0 else 0.0)
        else:
            weight = t["wave_count"].astype(float) * t["active_cores"]
            cw = t["compute_cycles"] * weight
            mw = (t["sram_a_values"] + t["sram_a_metadata"] + t["sram_b"] + t["sram_c"]) * weight
            cw = cw / cw.sum() * compute_j if cw.sum() > 0 else np.zeros(len(t))
            mw = mw / mw.sum() * memory_j if mw.sum() > 0 else np.zeros(len(t))
            repeated = t["wave_count"] > 1
            if repeated.any():  # spread repeated wave classes over their real span
                starts, ends = _class_spans(t, offset, clock)
                deposit(starts[repeated], ends[repeated], cw[repeated])
                deposit(starts[repeated], ends[repeated], mw[repeated], mem_dram)
            single = ~repeated
            deposit(offset + t["compute_start"][single] / clock, offset + t["compute_end"][single] / clock,
                    cw[single])
            deposit(offset + t["load_start"][single] / clock,
                    offset + np.maximum(t["load_end"], t["wb_end"])[single] / clock, mw[single], mem_dram)
        offset += dur
    static = static_watts(hw)
    widths = np.full(n_win, window_s)
    widths[-1] = total_s - window_s * (n_win - 1) if total_s > window_s * (n_win - 1) else window_s
    return {"t_s": np.arange(n_win) * window_s, "width_s": widths, "dynamic_j": energy, "dram_j": dram,
            "power_w": energy / widths + static, "static_w": np.full(n_win, static)}


def _class_spans(t: np.ndarray, offset: float, clock: float) -> tuple[np.ndarray, np.ndarray]:
    """Real start/end (s) of each row's wave class, repeated wave_count times back to back."""
    starts = np.empty(len(t))
    ends = np.empty(len(t))
    first_start = float(t["compute_start"].min() if len(t) else 0.0)
    cursor = first_start
    for cls in np.unique(t["wave_class"]):
        rows = t["wave_class"] == cls
        single = float(max(t["compute_end"][rows].max(), t["wb_end"][rows].max()) - t["load_start"][rows].min())
        span = single * int(t["wave_count"][rows][0])
        starts[rows] = offset + cursor / clock
        ends[rows] = offset + (cursor + span) / clock
        cursor += span
    return starts, ends


def apply_power_cap(trace: dict[str, np.ndarray], hw: Hardware) -> dict[str, Any]:
    """Run the governor over a power trace: capped latency, clock over time, average / peak power."""
    spec = hw.energy
    uncapped_s = float(trace["width_s"].sum())
    if spec is None or spec.power_cap is None:
        p = trace["power_w"]
        return {"capped": False, "latency_s": uncapped_s, "uncapped_latency_s": uncapped_s, "throttled": False,
                "avg_power_w": float((p * trace["width_s"]).sum() / uncapped_s) if uncapped_s else 0.0,
                "peak_power_w": float(p.max()) if len(p) else 0.0, "clock_fraction": np.ones(len(p))}
    cap = spec.power_cap
    static = trace["static_w"][0] if len(trace["static_w"]) else 0.0
    f = 1.0
    avg = 0.0
    clocks = np.empty(len(trace["power_w"]))
    powers = np.empty(len(trace["power_w"]))
    elapsed = 0.0
    dram_j = trace.get("dram_j", np.zeros(len(trace["dynamic_j"])))
    for i, (dyn, dram, width) in enumerate(zip(trace["dynamic_j"], dram_j, trace["width_s"], strict=True)):
        dt = width / f
        power = power_at_clock(dyn - dram, dram, dt, static, dynamic_scale(hw, f))
        alpha = 1.0 - math.exp(-dt / cap.time_constant_s)
        avg += (power - avg) * alpha
        clocks[i] = f
        powers[i] = power
        elapsed += dt
        f = min(1.0, max(cap.min_clock_fraction, f * (1.0 + cap.gain * (cap.tdp_w - avg) / cap.tdp_w)))
    widths = trace["width_s"] / clocks
    return {"capped": True, "tdp_w": cap.tdp_w, "latency_s": elapsed, "uncapped_latency_s": uncapped_s,
            "throttled": bool((clocks < 1.0 - 1e-9).any()), "min_clock_fraction": float(clocks.min()),
            "avg_power_w": float((powers * widths).sum() / elapsed) if elapsed else 0.0,
            "peak_power_w": float(powers.max()) if len(powers) else 0.0, "clock_fraction": clocks,
            "power_w": powers}


def power_profile(result: Any, hw: Hardware, repeats: int = 1, window_s: float | None = None) -> dict[str, Any]:
    """Power over time of ``result`` run ``repeats`` times back to back, with and without the cap.

    ``result`` must come from ``run(..., keep_tiles=True)`` on a config with an energy block, at the
    nominal clock: ``run(model, uncapped(hw), ...)`` (a run on ``hw`` itself is already at its
    power-limited steady state when the cap binds, which the transient governor would apply twice).
    """
    if hw.energy is None:
        raise ConfigError("<hardware>", "energy", "this hardware config has no energy block")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    if any(r.clock is not None and r.clock["power_capped"] for r in result.layers):
        raise ValueError("the run is already power-limited (its clocks settled under the cap): profile the run "
                         "at the nominal clock, run(model, energy.uncapped(hw), ...)")
    cap = hw.energy.power_cap
    width = window_s or (cap.window_s if cap is not None else 2e-5)
    energies = [r.energy for r in result.layers]
    if any(e is None for e in energies):
        raise ValueError("the run has no energy figures (was it run on this hardware?)")
    power_windows(result.total_cycles / (hw.clock_ghz * 1e9), width, repeats,
                  "energy.power_cap.window_s" if window_s is None else "window_s")
    one = power_trace(result.layers, energies, hw, width)
    trace = {k: np.tile(v, repeats) for k, v in one.items()}
    trace["t_s"] = np.concatenate([[0.0], np.cumsum(trace["width_s"])[:-1]])
    capped = apply_power_cap(trace, hw)
    uncapped_total = float(trace["width_s"].sum())
    p = trace["power_w"]
    return {"trace": trace, "capped": capped, "repeats": repeats, "window_s": width,
            "uncapped": {"latency_s": uncapped_total,
                         "avg_power_w": float((p * trace["width_s"]).sum() / uncapped_total),
                         "peak_power_w": float(p.max())}}
