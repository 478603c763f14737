"""Fused attention on a tensor_core part: softmax(Q K^T) V as one kernel (``accelsim.hardware.attention``).

The kernel (lowering's ``fused_attention``: m query rows, n keys, k = d head dim, ``batch`` planes, one per
sequence and KV head) runs as FlashAttention-2 does (Dao 2023, arXiv:2307.08691, Algorithm 1):

- a CTA owns ``br`` query rows of one plane (fewer rows than ``br`` are padded to the MMA's m); it loads
  them once and keeps them in shared memory, then streams the plane's K and V in blocks of ``bc`` rows:
  per block, S = Q K_j^T (br x bc x d MACs on the tensor cores), the online softmax of S on the vector unit
  (``vector_ops`` per score: the fused scale / mask / softmax ops' ``ops_per_element``), O += P V_j
  (br x bc x d MACs); at the end it writes its br x d rows of O. The scores never leave the chip.
- shared memory must hold the Q block and ``stages`` K / V blocks: br x d + stages x 2 x bc x d elements
  (the deepest staging up to ``core.sram.stages`` that fits ``core.sram.bytes``; none fits: infeasible).
- with too few CTAs to fill the cores (decode: a few query rows per plane) and ``attention.split_kv``, the
  KV length is split over ``s`` CTAs per query block (FlashDecoding; ``s`` as FlashAttention-2's
  heuristic picks it: ``attention.split_kv_occupancy``, ``split_kv_tolerance``, ``split_kv_max_splits``), each
  writing a partial O and its row sums (``attention.partial_bytes`` per element, fp32 by default) that a
  combine step reads back before writing O (``attention.combine_ops_per_element`` vector operations per
  partial element): 2 x s x rows x (d + 1) x partial_bytes bytes of extra C traffic.
- K and V come from DRAM once per plane when the planes a wave touches (plus the one it shares with the
  next wave) fit the usable L2 (``l2_reuse.usable_fraction``); otherwise once per wave a plane spans (its
  CTAs in a wave read the same blocks in step); without L2, once per CTA.
- per CTA and block the MMAs run at ``macs_per_cycle x efficiency.dense`` of one core, the softmax at
  ``vector.ops_per_cycle / cores``, one after the other (or overlapped: ``attention.softmax_overlap``);
  each block is one step of the engine's tile pipeline (``pipeline.run_pipeline_split``: loads ``stages``
  deep, at the CTA's share of the L2 / DRAM bandwidth with the wave's CTAs, as the GEMM path's waves).
- causal attention (the workload's ``attention.mask``; lowering's ``Kernel.causal_q``): a Q block streams only
  the K / V blocks whose first key its latest query token sees (``kv_tiles_needed``; the diagonal blocks are
  computed whole and masked on chip), so Q blocks are unequal; CTAs are scheduled longest first
  (``_causal_blocks``). K and V still come from DRAM once per plane when L2 holds them (the last Q block reads
  them all); the streamed K / V bytes, the cycles and ``tiling.causal`` (tiles run and skipped, MACs computed)
  follow from the count. Decode (one query token) skips nothing and runs as bidirectional.
- candidate tiles are every (``attention.q_block_rows`` x ``attention.kv_block_rows``) pair that fits; the
  fastest is kept.

Tensors in results: ``a_values`` is Q, ``b`` is K and V, ``c`` is O (plus split partials).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from accelsim.engine import classes as cl
from accelsim.engine import pipeline as pl
from accelsim.engine import tensorcore as tc
from accelsim.engine import tiling as tl
from accelsim.errors import InfeasibleError
from accelsim.hardware.tensor_core import TensorCoreCompute
from accelsim.lowering import Kernel

# The fused path schedules one pipeline row per K / V block of each CTA class and lists causal CTAs one by one
# (no extrapolation, unlike the GEMM path's k-loops): beyond these counts its arrays would take gigabytes.
STEP_CAP = 1 << 21  # pipeline rows (K / V block steps) of one tile candidate's schedule
CTA_CAP = 1 << 24  # CTAs (or query blocks) listed one by one


def _splits(base: int, slots: int, kv_blocks: int, att: Any) -> int:
    """KV splits per query block, as FlashAttention-2's ``num_splits_heuristic`` (flash_api.cpp) picks them: none
    when the CTAs already fill ``att.split_kv_occupancy`` (80 %) of the slots; else the fewest whose wave
    efficiency (CTAs / (waves x slots)) is within ``att.split_kv_tolerance`` (85 %) of the best, up to one split
    per K / V block (and at most ``att.split_kv_max_splits``, 128)."""
    if base >= att.split_kv_occupancy * slots:
        return 1
    cands = range(1, min(kv_blocks, slots, att.split_kv_max_splits) + 1)
    eff = {s: base * s / (-(-base * s // slots) * slots) for s in cands}
    best = max(eff.values())
    return min(s for s in cands if eff[s] >= att.split_kv_tolerance * best)


def _run(work: np.ndarray, active: int, count: int, wave_class: int, hw: Any, stages: int) -> Block:
    """Schedule one CTA's steps (``work``: SRAM bytes, DRAM bytes and cycles per step) with ``active`` CTAs
    sharing L2 and DRAM, as the GEMM path's wave classes are (engine ``_cta_grid``)."""
    l2 = hw.l2
    fill = hw.fill_bytes_per_cycle()
    l2_bw = l2.bandwidth_bytes_per_cycle if l2 is not None else math.inf
    dram_bw = hw.dram_bytes_per_cycle()
    tc.tag_rows(work, wave_class, count)
    step = work[:, tl.T_SRAM_A_VALUES] + work[:, tl.T_SRAM_B]
    from_dram = work[:, tl.T_DRAM_A_VALUES] + work[:, tl.T_DRAM_B] + work[:, tl.T_DRAM_C_READ]
    step = step + work[:, tl.T_DRAM_C_READ]  # partials read back come from DRAM
    share = np.divide(from_dram, step, out=np.zeros_like(step), where=step > 0)
    bw = tc.load_rate(step, share, np.ones(len(step)), active, fill, l2_bw, dram_bw)  # no multicast
    xfer = work.copy()  # transfers move the SRAM-side bytes; the DRAM columns say where they came from
    xfer[:, tl.T_DRAM_A_VALUES] = work[:, tl.T_SRAM_A_VALUES]
    xfer[:, tl.T_DRAM_B] = work[:, tl.T_SRAM_B]
    xfer[:, tl.T_DRAM_C_WRITE] = work[:, tl.T_SRAM_C]
    wb_bw = tc.load_rate(work[:, tl.T_SRAM_C], np.ones(len(work)), np.ones(len(work)), active, fill, l2_bw, dram_bw)
    times = pl.run_pipeline_split(xfer, bw, wb_bw, hw.dram_latency_cycles(), math.inf, 0.0, stages, 0.0, math.inf)
    return work, times, bw, active, count


Block = tuple[np.ndarray, np.ndarray, np.ndarray, int, int]  # work, times, load rates, active CTAs, count


def _too_large(kernel: Kernel, source: str, what: str, count: int, cap: int) -> InfeasibleError:
    """The refusal of a fused attention schedule past STEP_CAP / CTA_CAP (bounded memory), naming the way out."""
    return InfeasibleError(source, "attention.form", f"layer '{kernel.name}' (m={kernel.m}, n={kernel.n}, "
                           f"batch={kernel.batch}): fused attention would list {count:,} {what}, more than the "
                           f"{cap:,} the fused path simulates one by one; use a shorter sequence or smaller batch, "
                           "or attention.form: unfused (its GEMMs extrapolate long loops)", kernel.name)


def _plan(kernel: Kernel, hw: Any, br: int, bc: int, stages: int, source: str = "<hardware>") -> dict[str, Any]:
    """The kernel with query blocks of ``br`` rows and K / V blocks of ``bc`` rows: its wave classes.
    InfeasibleError past STEP_CAP pipeline rows or CTA_CAP CTAs."""
    comp = hw.core.compute
    att = hw.attention
    m, n, d, planes = kernel.m, kernel.n, kernel.k, kernel.batch
    e = float(kernel.dtype_bytes)
    mma_m = comp.mma.dense[0]
    rows = min(br, -(-m // mma_m) * mma_m)  # rows a CTA computes (padded to the MMA's m)
    q_blocks = -(-m // rows)
    if q_blocks > CTA_CAP:
        raise _too_large(kernel, source, "query blocks per plane", q_blocks, CTA_CAP)
    slots = hw.cores * comp.ctas_per_core
    base = planes * q_blocks
    kv_blocks = -(-n // bc)
    split = _splits(base, slots, kv_blocks, att) if att.split_kv else 1
    ctas = base * split
    steps = -(-kv_blocks // split)  # K / V blocks per CTA
    rate = comp.macs_per_cycle[kernel.dtype] * comp.efficiency.dense / comp.ctas_per_core
    mma = 2.0 * rows * bc * d / rate
    vec_rate = hw.vector.ops_per_cycle / slots
    per_score = kernel.vector_ops / kernel.elements if kernel.elements else 0.0
    softmax = rows * bc * per_score / vec_rate
    compute = max(mma, softmax) if att.softmax_overlap else mma + softmax
    real = m / q_blocks  # rows of Q and O a CTA moves (the padding is computed, not loaded)
    q_bytes = real * d * e
    kv_step = 2.0 * bc * d * e
    o_bytes = real * d * e if split == 1 else real * (d + 1) * float(att.partial_bytes)  # O, or partial O + sums
    l2 = hw.l2
    plane_kv = 2.0 * n * d * e
    per_plane = q_blocks * split
    if split > 1:
        reads = 1.0  # each CTA streams its own slice
    elif l2 is None:
        reads = float(q_blocks)
    else:  # the planes a wave touches, plus the one it shares with the next wave, must stay in L2
        in_flight = min(planes, -(-slots // per_plane) + 1)
        usable = l2.bytes * comp.l2_reuse.usable_fraction
        reads = 1.0 if in_flight * plane_kv <= usable else float(-(-per_plane // slots))
    need = kv_tiles_needed(m, n, kernel.causal_q, rows, bc)
    causal: dict[str, Any] = {}
    if kernel.causal_q:
        causal = {"mask": "causal", "q_tokens": kernel.causal_q, "kv_offset": n - kernel.causal_q,
                  "kv_tiles": planes * q_blocks * kv_blocks, "kv_tiles_run": planes * int(need.sum()),
                  "kv_tiles_skipped": planes * int(q_blocks * kv_blocks - need.sum())}
        causal["macs_computed"] = causal["kv_tiles_run"] * 2 * rows * bc * d
    if int(need.min()) < kv_blocks:  # causal: Q blocks stream unequal numbers of K / V blocks
        if ctas > CTA_CAP:
            raise _too_large(kernel, source, "CTAs (causal CTAs are scheduled one by one)", ctas, CTA_CAP)
        cta_steps = np.tile(_slices(need, split), planes)
        blocks = _causal_blocks(cta_steps, compute, q_bytes, o_bytes, kv_step, planes * plane_kv * reads, slots,
                                hw, stages, lambda rows: _too_large(kernel, source, "pipeline steps", rows, STEP_CAP))
        steps = int(cta_steps.max())
        causal["schedule"] = "longest_first"
        waves = -(-ctas // slots)
    else:
        if steps > STEP_CAP:
            raise _too_large(kernel, source, "K / V blocks per CTA", steps, STEP_CAP)
        kv_share = min(1.0, planes * plane_kv * reads / (float(ctas) * steps * kv_step))
        work = np.zeros((steps, tl.N_TILE_COLS))
        work[:, tl.T_CHUNK] = np.arange(steps)
        work[:, tl.T_CYCLES] = compute
        work[:, tl.T_SRAM_B] = kv_step
        work[:, tl.T_DRAM_B] = kv_step * kv_share
        work[0, tl.T_SRAM_A_VALUES] = work[0, tl.T_DRAM_A_VALUES] = q_bytes
        work[-1, tl.T_SRAM_C] = work[-1, tl.T_DRAM_C_WRITE] = o_bytes
        waves = -(-ctas // slots)
        last = ctas - (waves - 1) * slots
        blocks = [_run(work.copy(), act, count, i, hw, stages)
                  for i, (act, count) in enumerate(((slots, waves - 1), (last, 1))) if count > 0]
    if split > 1:  # a combine step per query block reads the partials back and writes O
        active = min(slots, base)
        red = np.zeros((1, tl.N_TILE_COLS))
        red[0, tl.T_DRAM_C_READ] = split * o_bytes
        red[0, tl.T_CYCLES] = split * real * (d + 1) * att.combine_ops_per_element / vec_rate  # rescale and add
        red[0, tl.T_SRAM_C] = red[0, tl.T_DRAM_C_WRITE] = real * d * e
        blocks.append(_run(red, active, -(-base // active), len(blocks), hw, 2))
    total = sum(count * cl.end_of(times) for _, times, _, _, count in blocks)
    return {"total": total, "blocks": blocks, "tiling": {
        "form": "fused", "scores_in_dram": False, "q_block": br, "q_rows": rows, "kv_block": bc, "stages": stages,
        "smem_bytes": int(br * d * e + stages * kv_step), "split_kv": split, "ctas": ctas, "slots": slots,
        "waves": waves, "kv_steps": steps, "kv_dram_reads": reads, "softmax_overlap": att.softmax_overlap,
        "cycles_per_block": {"mma": round(mma, 3), "softmax": round(softmax, 3)},
        **({"causal": causal} if causal else {})}}


def kv_tiles_needed(m: int, n: int, causal_q: int, rows: int, bc: int) -> np.ndarray:
    """K / V blocks of ``bc`` keys each Q block of ``rows`` of the ``m`` stacked query rows streams over ``n`` keys
    (one plane): every block for bidirectional attention (``causal_q`` 0); under a causal mask (``causal_q``
    query tokens per head, stacked head by head in m) the blocks whose first key is at or before the last key
    its latest query token sees, offset + position (offset = keys - query tokens: the KV cache ahead of the
    fresh tokens). A Q block straddling two heads holds the earlier head's last token and needs its count."""
    kv_blocks = -(-n // bc)
    q_blocks = -(-m // rows)
    q = causal_q
    if not q:
        return np.full(q_blocks, kv_blocks, dtype=np.int64)
    starts = np.arange(q_blocks, dtype=np.int64) * rows
    ends = np.minimum(starts + rows, m) - 1  # last stacked row of each block (padding rows hold no query)
    latest = np.where(starts // q != ends // q, q - 1, ends % q)  # a block holding a head's end sees its last token
    return np.minimum(kv_blocks, (n - q + latest) // bc + 1)


def _slices(need: np.ndarray, split: int) -> np.ndarray:
    """K / V blocks of each CTA when each Q block's ``need`` blocks are split over ``split`` CTAs as evenly as
    the count allows (at least one each)."""
    if split == 1:
        return need
    j = np.arange(split)
    return np.maximum(1, need[:, None] // split + (j[None, :] < need[:, None] % split)).ravel()


def _causal_blocks(cta_steps: np.ndarray, compute: float, q_bytes: float, o_bytes: float, kv_step: float,
                   kv_dram: float, slots: int, hw: Any, stages: int,
                   too_large: Callable[[int], Exception]) -> list[Block]:
    """The schedule of CTAs streaming unequal numbers of K / V blocks (``cta_steps``). Assumption (named
    ``longest_first`` in results): CTAs are dispatched longest first and a slot that frees takes the next, so
    the slots stay evenly loaded, as FlashAttention's causal tile scheduler orders them (``SingleTileLPTScheduler``,
    Dao-AILab/flash-attention, flash_attn/cute/tile_scheduler.py: heads grouped so their K / V fit L2, longest
    Q tiles first within a group -- hence K / V reuse in L2 as the uniform grid's, ``kv_dram``). Modelled as
    waves of ``slots`` consecutive CTAs in that order, each as long as one CTA of its CTAs' mean step count (a
    fractional last step), with the CTA's Q load first and O write last, as the uniform grid's waves;
    ``kv_dram``: the K / V bytes that come from DRAM (the rest hit L2). ``too_large(rows)`` is raised before
    anything is scheduled when the classes hold more than STEP_CAP steps in all."""
    order = np.sort(cta_steps)[::-1].astype(np.float64)
    kv_share = min(1.0, kv_dram / (float(order.sum()) * kv_step))
    firsts = np.arange(0, len(order), slots)
    waves = zip(np.add.reduceat(order, firsts).tolist(), np.minimum(slots, len(order) - firsts).tolist(), strict=True)
    classes: dict[tuple[float, int], int] = {}
    for wave in waves:  # waves of equal totals are one class, run back to back
        classes[wave] = classes.get(wave, 0) + 1
    rows_total = sum(math.ceil(steps / active - 1e-9) for steps, active in classes)
    if rows_total > STEP_CAP:
        raise too_large(rows_total)
    blocks: list[Block] = []
    for (steps, active), count in classes.items():
        mean = steps / active
        full = int(mean)
        frac = mean - full
        rows = full + (frac > 1e-9)
        work = np.zeros((rows, tl.N_TILE_COLS))
        work[:, tl.T_CHUNK] = np.arange(rows)
        work[:, tl.T_CYCLES] = compute
        work[:, tl.T_SRAM_B] = kv_step
        work[:, tl.T_DRAM_B] = kv_step * kv_share
        if rows > full:  # the fractional step
            work[-1, [tl.T_CYCLES, tl.T_SRAM_B, tl.T_DRAM_B]] *= frac
        work[0, tl.T_SRAM_A_VALUES] = work[0, tl.T_DRAM_A_VALUES] = q_bytes
        work[-1, tl.T_SRAM_C] = work[-1, tl.T_DRAM_C_WRITE] = o_bytes
        blocks.append(_run(work, active, count, len(blocks), hw, stages))
    return blocks


def fused_attention(kernel: Kernel, hw: Any, source: str) -> tuple[list[Block], dict, float]:
    """The fused attention ``kernel`` on ``hw``: its scheduled wave classes (work, times, load rates, active
    CTAs, count), the tiling description and the peak rate (module docstring). InfeasibleError when no
    tile fits shared memory."""
    comp = hw.core.compute
    if not isinstance(comp, TensorCoreCompute):
        raise InfeasibleError(source, "attention.form", f"layer '{kernel.name}': fused attention needs a "
                              "tensor_core part", kernel.name)
    if kernel.dtype not in comp.macs_per_cycle:
        raise InfeasibleError(source, "core.compute.macs_per_cycle",
                              f"no {kernel.dtype} rate: layer '{kernel.name}' needs one "
                              f"(this part lists {', '.join(comp.macs_per_cycle)})", kernel.name)
    sram = hw.core.sram
    smem = sram.bytes if sram.bytes is not None else sum(sram.buffer_bytes().values())
    e = float(kernel.dtype_bytes)
    d = kernel.k
    best: dict[str, Any] | None = None
    smallest = math.inf
    for br in sorted(set(hw.attention.q_block_rows), reverse=True):
        for bc in sorted(set(hw.attention.kv_block_rows), reverse=True):
            stages = sram.n_stages()
            while stages > 1 and br * d * e + stages * 2 * bc * d * e > smem:
                stages -= 1
            need = br * d * e + stages * 2 * bc * d * e
            if need > smem:
                smallest = min(smallest, need)
                continue
            plan = _plan(kernel, hw, br, bc, stages, source)
            if best is None or plan["total"] < best["total"] - 1e-9:
                best = plan
    if best is None:
        raise InfeasibleError(source, "core.sram.bytes" if sram.bytes is not None else "core.sram.filter_bytes",
                              f"shared memory too small for every fused attention tile of layer '{kernel.name}' "
                              f"(head dim {d}): the smallest needs {math.ceil(smallest)} bytes single-staged; "
                              "use attention.form: unfused", kernel.name)
    peak = comp.macs_per_cycle[kernel.dtype] * hw.cores
    return best["blocks"], best["tiling"], float(peak)
