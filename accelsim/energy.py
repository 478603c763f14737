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

Power cap governor (documented, simple): power is binned in windows of ``window_s``; an
exponential moving average with ``time_constant_s`` tracks it; after each window the clock
fraction f becomes clamp(f * (1 + gain * (tdp - avg) / tdp), min_clock_fraction, 1). A window
of work takes its full-clock time / f (everything slows with the clock, a simplification);
dynamic energy per op is unchanged, so dynamic power scales with f; static power does not.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from accelsim.errors import ConfigError
from accelsim.hardware.model import Hardware
from accelsim.results import KernelResult, KernelTotals, rounded, sum_energy  # noqa: F401 (re-exported)

PJ = 1e-12
COMPONENTS = ("mac", "vector", "decode", "sram", "l2", "dram", "static")
TENSORS = ("a_values", "a_metadata", "b", "c")


def static_watts(hw: Hardware) -> float:
    """Static power of the whole part."""
    spec = hw.energy
    if spec is None:
        return 0.0
    return hw.cores * spec.static.core_w + (spec.static.l2_w if hw.l2 is not None else 0.0) + spec.static.dram_w


def layer_energy(res: KernelResult, hw: Hardware, dtype: str) -> dict[str, Any]:
    """Energy of one simulated op, by component and by tensor, in joules."""
    return op_energy(hw, dtype, res.path == "sparse", res.macs_executed, res.bytes["dram"], res.bytes["sram"],
                     res.cycles["total"], res.counts.get("decode_groups", 0.0), res.counts.get("vector_ops", 0.0),
                     res.name)


def energy_tables_cover(hw: Hardware, dtype: str) -> bool:
    """Whether ``hw`` has energy figures, with MAC energies for ``dtype`` on every datapath."""
    spec = hw.energy
    return spec is not None and dtype in spec.mac_pj and (spec.sparse_mac_pj is None or dtype in spec.sparse_mac_pj)


def kernel_energy(hw: Hardware, dtype: str, kernel: Any, totals: KernelTotals) -> float:
    """Total energy (J) of ``kernel`` run with ``totals`` (from ``engine.simulate_totals``)."""
    t = totals
    comp, _, _, _ = _terms(hw, dtype, kernel.sparse, kernel.macs_executed,
                           (t.dram_a_values, t.dram_a_metadata, t.dram_b, t.dram_c),
                           (t.sram_a_values, t.sram_a_metadata, t.sram_b, t.sram_c), t.total, t.decode_groups,
                           kernel.vector_ops, kernel.name)
    return sum(comp)


def op_energy(hw: Hardware, dtype: str, sparse: bool, macs_executed: int, dram: dict[str, int],
              sram: dict[str, int], cycles: int, decode_groups: float, vector_ops: float,
              name: str = "op") -> dict[str, Any]:
    """Energy of one op from its counts (MACs, bytes per level and tensor, cycles, decode groups, vector ops)."""
    comp, mem, seconds, decode_pj = _terms(hw, dtype, sparse, macs_executed, tuple(dram[t] for t in TENSORS),
                                           tuple(sram[t] for t in TENSORS), cycles, decode_groups, vector_ops, name)
    by_tensor = {t: sum(m) * PJ for t, m in zip(TENSORS, mem, strict=True)}
    by_tensor["a_metadata"] += decode_pj * PJ
    total = sum(comp)
    return {"total_j": total, "by_component_j": dict(zip(COMPONENTS, comp, strict=True)), "by_tensor_j": by_tensor,
            "avg_power_w": total / seconds if seconds else 0.0}


def _terms(hw: Hardware, dtype: str, sparse: bool, macs_executed: int, d: tuple, s: tuple, cycles: int,
           decode_groups: float, vector_ops: float, name: str) -> tuple[tuple, list[tuple], float, float]:
    """The one energy formula: components (COMPONENTS order, J), per-tensor (sram, l2, dram) pJ,
    seconds and decode pJ. Tensors are indexed in TENSORS order."""
    spec = hw.energy
    assert spec is not None
    table = spec.sparse_mac_pj if (sparse and spec.sparse_mac_pj is not None) else spec.mac_pj
    if macs_executed and dtype not in table:
        key = "sparse_mac_pj" if table is spec.sparse_mac_pj else "mac_pj"
        raise ConfigError("<hardware>", f"energy.{key}", f"no {dtype} entry: op '{name}' needs one")
    rd, wr = spec.sram_read_pj_per_byte, spec.sram_write_pj_per_byte
    has_l2 = hw.l2 is not None
    l2_pj, dram_pj = spec.l2_pj_per_byte, spec.dram_pj_per_byte
    # a_values, a_metadata, b: filled into SRAM (from DRAM, or L2), read by the array;
    # c: the array writes C into SRAM, write-back reads it out
    mem = [((s[0] if has_l2 else d[0]) * wr + s[0] * rd, s[0] * l2_pj if has_l2 else 0.0, d[0] * dram_pj),
           ((s[1] if has_l2 else d[1]) * wr + s[1] * rd, s[1] * l2_pj if has_l2 else 0.0, d[1] * dram_pj),
           ((s[2] if has_l2 else d[2]) * wr + s[2] * rd, s[2] * l2_pj if has_l2 else 0.0, d[2] * dram_pj),
           (s[3] * wr + d[3] * rd, s[3] * l2_pj if has_l2 else 0.0, d[3] * dram_pj)]
    m0, m1, m2, m3 = mem
    seconds = cycles / (hw.clock_ghz * 1e9)
    decode_pj = decode_groups * spec.decode_pj_per_group
    # the sums start at 0 and add the tensors in TENSORS order (as sum() over them did)
    rates = cast("dict[str, float]", table)  # keyed by dtype names; dtype may be any text
    comp = (macs_executed * rates.get(dtype, 0.0) * PJ,
            vector_ops * spec.vector_pj_per_op * PJ,
            decode_pj * PJ,
            (0 + m0[0] + m1[0] + m2[0] + m3[0]) * PJ,
            (0 + m0[1] + m1[1] + m2[1] + m3[1]) * PJ,
            (0 + m0[2] + m1[2] + m2[2] + m3[2]) * PJ,
            static_watts(hw) * seconds)
    return comp, mem, seconds, decode_pj


# -- power over time -------------------------------------------------------------------------

def power_trace(layers: list[KernelResult], energies: list[dict[str, Any]], hw: Hardware,
                window_s: float) -> dict[str, np.ndarray]:
    """Power in fixed windows over a run whose ops execute back to back (needs per-tile records).

    Dynamic energy is placed where the work happens: MAC / vector / decode energy over each
    tile's compute interval, memory energy over its load and write-back intervals. Rows of a
    multi-core wave class that repeats are spread over the class's whole span.
    """
    clock = hw.clock_ghz * 1e9
    total_s = sum(r.cycles["total"] for r in layers) / clock
    n_win = max(1, int(math.ceil(total_s / window_s - 1e-9)))
    energy = np.zeros(n_win)

    def deposit(start_s: np.ndarray, end_s: np.ndarray, joules: np.ndarray) -> None:
        for s0, s1, j in zip(start_s, end_s, joules, strict=True):
            if j <= 0:
                continue
            if s1 <= s0:
                energy[min(n_win - 1, int(s0 / window_s))] += j
                continue
            a, b = int(s0 / window_s), min(n_win - 1, int(s1 / window_s))
            if a == b:
                energy[a] += j
                continue
            edges = np.clip(np.arange(a, b + 2) * window_s, s0, s1)
            energy[a:b + 1] += j * np.diff(edges) / (s1 - s0)

    offset = 0.0
    for res, e in zip(layers, energies, strict=True):
        comp = e["by_component_j"]
        compute_j = comp["mac"] + comp["vector"] + comp["decode"]
        memory_j = comp["sram"] + comp["l2"] + comp["dram"]
        t = res.tiles
        dur = res.cycles["total"] / clock
        if t is None or len(t) == 0:
            deposit(np.array([offset]), np.array([offset + dur]), np.array([compute_j + memory_j]))
        else:
            weight = t["wave_count"].astype(float) * t["active_cores"]
            cw = t["compute_cycles"] * weight
            mw = (t["sram_a_values"] + t["sram_a_metadata"] + t["sram_b"] + t["sram_c"]) * weight
            cw = cw / cw.sum() * compute_j if cw.sum() > 0 else np.zeros(len(t))
            mw = mw / mw.sum() * memory_j if mw.sum() > 0 else np.zeros(len(t))
            repeated = t["wave_count"] > 1
            if repeated.any():  # spread repeated wave classes over their real span
                starts, ends = _class_spans(t, offset, clock)
                deposit(starts[repeated], ends[repeated], (cw + mw)[repeated])
            single = ~repeated
            deposit(offset + t["compute_start"][single] / clock, offset + t["compute_end"][single] / clock,
                    cw[single])
            deposit(offset + t["load_start"][single] / clock,
                    offset + np.maximum(t["load_end"], t["wb_end"])[single] / clock, mw[single])
        offset += dur
    static = static_watts(hw)
    widths = np.full(n_win, window_s)
    widths[-1] = total_s - window_s * (n_win - 1) if total_s > window_s * (n_win - 1) else window_s
    return {"t_s": np.arange(n_win) * window_s, "width_s": widths, "dynamic_j": energy,
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
    for i, (dyn, width) in enumerate(zip(trace["dynamic_j"], trace["width_s"], strict=True)):
        dt = width / f
        power = dyn / dt + static
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

    ``result`` must come from ``run(..., keep_tiles=True)`` on a config with an energy block.
    """
    if hw.energy is None:
        raise ConfigError("<hardware>", "energy", "this hardware config has no energy block")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    cap = hw.energy.power_cap
    width = window_s or (cap.window_s if cap is not None else 2e-5)
    energies = [r.energy for r in result.layers]
    if any(e is None for e in energies):
        raise ValueError("the run has no energy figures (was it run on this hardware?)")
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
