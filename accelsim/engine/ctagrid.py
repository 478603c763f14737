"""Tensor-core kernels: CTA tiles in waves over the cores (the ``cta_waves`` simulation).

Candidate kernels (CTA tile, split-k, stages; V:N:M and block grids from ``engine.structured``) are each
simulated as wave classes through the tile pipeline (``engine.tensorcore``, ``engine.pipeline``) and the
fastest is kept; its raster is then chosen among the configured candidates (fewest DRAM bytes).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from accelsim.engine import classes as cl
from accelsim.engine import ctabound as cb
from accelsim.engine import ctaclass as cc
from accelsim.engine import loadsparse as ls
from accelsim.engine import structured as st
from accelsim.engine import tensorcore as tc
from accelsim.engine import tiling as tl
from accelsim.engine.segment import Segment, decode_params
from accelsim.errors import InfeasibleError
from accelsim.hardware.model import Hardware
from accelsim.hardware.tensor_core import StreamK, TensorCoreCompute
from accelsim.limits import SizeLimitError
from accelsim.lowering import Kernel

# One candidate kernel: (CTA tile, the GEMM its CTAs run, datapath, metadata bits per kept value, V:N:M / block extras)
_Candidate = tuple[tuple[int, int, int], Kernel, str, float, "st.GridExtras | None"]


def tensor_core(kernel: Kernel, hw: Hardware, source: str, fold: bool = False) -> tuple[list[Segment], dict, float]:
    """The fastest candidate kernel (CTA tile, split-k, raster) of ``kernel`` on ``hw``: its segments, tiling, peak.

    ``fold``: keep each wave class's sums instead of its tile arrays (the same totals; memory of one class at a
    time instead of every class of two candidates)."""
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    dtype = kernel.dtype
    if dtype not in comp.macs_per_cycle:
        raise InfeasibleError(source, "core.compute.macs_per_cycle",
                              f"no {dtype} rate: layer '{kernel.name}' needs one "
                              f"(this part lists {', '.join(comp.macs_per_cycle)})", kernel.name)
    path = "sparse" if kernel.sparse_datapath else "dense"  # tiles, MMA shape, efficiency, split-k
    e = float(kernel.dtype_bytes)
    stages = hw.core.sram.n_stages()
    smem = hw.core.sram.buffer_bytes()
    unified_bytes = hw.core.sram.bytes
    unified = unified_bytes is not None
    best: tuple[float, list[Segment], dict] | None = None
    # (candidate, split, stages, the first raster's wave classes unless no raster reads fewer DRAM bytes) of the best
    chosen: tuple[_Candidate, int, int, list[tc.WaveClass] | None] | None = None
    smallest_need = None
    cands: list[_Candidate]
    if kernel.sparse and kernel.row_block:  # V:N:M, block: the CTA grids they run (engine.structured)
        cands = [(c.tile, c.inner, c.path, c.mbits, c.extras) for c in st.candidates(kernel, hw)]
    else:
        mbits0 = float(kernel.metadata_bits) if kernel.sparse_datapath else 0.0
        cands = [((t[0], t[1], t[2]), kernel, path, mbits0, None) for t in comp.cta_tiles.for_path(path, dtype)]
    rasters = comp.raster.candidates()
    for cand in cands:
        (bm, bn, bk), inner, path, mbits, extras = cand
        mma = getattr(comp.mma, path)
        a_tile, b_tile = _tile_bytes(cand, e)
        rate, feed = _fed_rate(inner, hw, path, comp.macs_per_cycle[dtype], cand[0], a_tile, b_tile)

        def fits(st: int, a_tile: float = a_tile, b_tile: float = b_tile) -> bool:
            if unified_bytes is not None:
                return st * (a_tile + b_tile) <= unified_bytes
            return st * a_tile <= smem["filter"] and st * b_tile <= smem["ifmap"]

        # libraries ship fewer-stage variants of a tile for wide dtypes: use the deepest that fits
        tile_stages = extras.stages if extras is not None and extras.stages else stages  # block: the kernel's own
        while tile_stages > 1 and not fits(tile_stages):
            tile_stages -= 1
        if not fits(tile_stages):
            total_need = a_tile + b_tile
            smallest_need = total_need if smallest_need is None else min(smallest_need, total_need)
            continue
        steps = -(-inner.k_padded // bk)
        if extras is not None and extras.resident != 1:  # V:N:M: CTAs a core holds (engine.structured.residency)
            extras = st.with_residency(extras, unified_bytes, tile_stages * (a_tile + b_tile))
            cand = (cand[0], cand[1], cand[2], cand[3], extras)
        if extras is not None and extras.concurrent:  # block: CTAs a core runs at once, as many as shared memory holds
            extras = st.with_concurrency(extras, unified_bytes if unified else smem["filter"] + smem["ifmap"],
                                         tile_stages * (a_tile + b_tile))
            cand = (cand[0], cand[1], cand[2], cand[3], extras)
        for split in sorted(set(_split_options(inner, comp, path))) if extras is None else [1]:
            if split > 1 and split > steps:
                continue
            floor = None if best is None else cb.compute_floor(inner, hw, (bm, bn, bk), split, mma[2], rate, e, mbits,
                                                                        extras)
            if best is not None and floor is not None and floor >= best[0] - 1e-9:
                continue  # its compute alone outlasts the best so far: it cannot be kept (engine.ctabound)
            segs, tiling, unsettled = _cta_grid(inner, hw, (bm, bn, bk), split, mma, rate, e, mbits, tile_stages,
                                                rasters[:1], extras=extras, fold=fold)
            total = sum(s.count * s.end for s in segs)
            if feed is not None:
                tiling["smem_operand_share"] = round(feed, 6)
            if best is None or total < best[0] - 1e-9:
                best = (total, segs, tiling)
                chosen = (cand, split, tile_stages, unsettled)
    if best is None:
        raise InfeasibleError(source, hw.core.sram.buffer_key("filter") if not unified else "core.sram.bytes",
                              f"shared memory too small for every {path} CTA tile of layer '{kernel.name}': "
                              f"the smallest needs {math.ceil(smallest_need or 0)} bytes even single-staged",
                              kernel.name)
    if chosen is not None and chosen[3] is not None and len(rasters) > 1:  # the kernel chosen, then its raster
        tile, inner, path, mbits, extras = chosen[0]
        rate, feed = _fed_rate(inner, hw, path, comp.macs_per_cycle[dtype], tile, *_tile_bytes(chosen[0], e))
        segs, tiling, _ = _cta_grid(inner, hw, tile, chosen[1], getattr(comp.mma, path), rate, e, mbits, chosen[2],
                                    rasters, (chosen[3], best[1], best[2]), extras, fold)
        if feed is not None:
            tiling["smem_operand_share"] = round(feed, 6)
        best = (sum(s.count * s.end for s in segs), segs, tiling)
    peak = comp.macs_per_cycle[dtype] * hw.cores
    best[2]["candidates"] = len(cands) * (1 if kernel.row_block else len(set(_split_options(kernel, comp, path))))
    return best[1], best[2], peak


def _split_options(kernel: Kernel, comp: TensorCoreCompute, path: str) -> list[int]:
    """Split-k factors searched: the path's, none for a vector-unit SpMM."""
    return [1] if kernel.sparse and kernel.compute_on == "vector" else list(getattr(comp.split_k, path))


def _tile_bytes(cand: _Candidate, e: float) -> tuple[float, float]:
    """Bytes one k-step of a candidate's CTA tile fills into shared memory: A (values + metadata) and B."""
    (bm, bn, bk), inner, _, mbits, extras = cand
    return (bm * (bk * inner.keep_n / inner.group_m) * (e + mbits / 8),
            bk * bn * e * (extras.b_panels if extras is not None else 1))


def _fed_rate(kernel: Kernel, hw: Hardware, path: str, peak: float, tile: tuple[int, int, int] | list[int],
              a_tile: float, b_tile: float) -> tuple[float, float | None]:
    """The CTA rate of ``_compute_rate`` scaled by the share of it the shared-memory banks feed
    (``core.compute.operand_feed``), and that share (None where not modelled: the feed unset, a load-sparse
    or vector-unit kernel)."""
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    rate = _compute_rate(kernel, hw, path, peak)
    if comp.operand_feed.smem_bytes_per_cycle is None or kernel.load_sparse or \
            (kernel.sparse and kernel.compute_on == "vector"):
        return rate, None
    bm, bn, bk = tile
    full = _compute_rate(kernel, hw, path, peak, efficiency=False)
    share = comp.operand_feed.share((bm, bn, bk), a_tile, b_tile, bm * bn * bk / full)
    return rate * share, share


def _compute_rate(kernel: Kernel, hw: Hardware, path: str, peak: float, efficiency: bool = True) -> float:
    """MACs per cycle per core of ``kernel``'s CTAs on the tensor cores' ``path`` (``peak``: the dtype's dense
    MACs per cycle per core), or the vector unit's SpMM rate."""
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    if kernel.sparse and kernel.compute_on == "vector":
        return kernel.compute_rate  # the SpMM's sustained rate on the vector unit
    rate = peak * (getattr(comp.efficiency, path) if efficiency else 1.0)
    if kernel.sparse_datapath:
        rate *= hw.core.sparse.rate(kernel.executed_format)  # type: ignore[union-attr, arg-type]
    return rate


def _cta_grid(kernel: Kernel, hw: Hardware, tile: tuple[int, int, int], split: int, mma: list[int], rate: float,
              e: float, mbits: float, stages: int, rasters: list[tuple[str, int]],
              known: tuple[list[tc.WaveClass], list[Segment], dict] | None = None,
              extras: st.GridExtras | None = None,
              fold: bool = False) -> tuple[list[Segment], dict, list[tc.WaveClass] | None]:
    """One candidate kernel: ``tile`` and ``split``, launched in the raster (order, width) of ``rasters`` whose
    waves read the fewest DRAM bytes (the first wins a tie). Also returns the wave classes, or None when no raster
    could read fewer DRAM bytes (``tc.raster_classes``). ``known``: the first raster's classes and result.
    ``extras``: what a V:N:M or block grid adds (engine.structured)."""
    comp = hw.core.compute
    assert isinstance(comp, TensorCoreCompute)
    bm, bn, bk = tile
    m, n, k_total = kernel.m_exec, kernel.n_exec, kernel.k_padded
    batch = kernel.batch  # independent products: more CTAs along m, each with its own A and B
    grid_m, grid_n = -(-m // bm) * batch, -(-n // bn)
    steps = -(-k_total // bk)
    k_slice = -(-steps // split) * bk  # logical k per CTA
    ctas = grid_m * grid_n * split
    # V:N:M with 2+ CTAs resident per core: a core starts its next CTA's loads while the current one finishes,
    # so the consecutive waves of a class run back to back through one pipeline per core (engine.structured)
    overlap = extras is not None and extras.resident > 1
    conc = extras.concurrent if extras is not None and extras.concurrent else 0  # block: CTAs sharing a core
    slots = hw.cores * (conc or comp.ctas_per_core)
    if conc:  # each gets its share of the core's tensor cores and fill port
        rate = rate / conc
    k_c = kernel.k_compressed
    if kernel.load_sparse:  # values and index per dense position (unstructured)
        a_total = m * batch * k_total * (kernel.a_density * e + kernel.a_index_bits / 8)
    else:
        a_total = m * batch * k_c * (e + mbits / 8)
    b_total = k_total * n * e * batch
    if extras is not None:  # V:N:M, block: their own distinct A and B bytes (engine.structured)
        a_total, b_total = extras.a_total, extras.b_total
    if hw.core.sram.im2col == "on_chip":  # implicit GEMM (a conv): B's DRAM bytes are the ifmap's, read once; the
        b_total *= kernel.b_elements / (kernel.k * kernel.n)  # tiles still hold the expanded windows (as systolic)
    c_total = m * kernel.n * (kernel.c_bytes or e) * batch  # a quantized Linear writes C in its own type
    # split-k: every CTA writes a partial tile (core.compute.accumulator_bytes per element, fp32 by default); a
    # reduction reads them back and writes C
    acc = float(comp.accumulator_bytes)
    c_traffic = c_total if split == 1 else (m * batch * n * acc * split * 2 + c_total)
    l2 = hw.l2
    l2_bytes = l2.bytes if l2 is not None else 0
    all_fit = l2 is not None and a_total + b_total <= l2_bytes
    b_in_l2 = hw.activations == "l2_if_fits" and l2 is not None and b_total <= l2_bytes
    c_footprint = c_total + (m * batch * n * acc * split if split > 1 else 0.0)  # C plus split-k partials
    c_in_l2 = hw.activations == "l2_if_fits" and l2 is not None and c_footprint <= l2_bytes
    waves = -(-ctas // slots)
    reuse = comp.l2_reuse
    # cluster partners are cut to the grid (a one-row grid has no partner along m to multicast B to)
    cluster = (min(comp.cluster.m, grid_m // batch), min(comp.cluster.n, grid_n))
    pair = comp.cluster.pair_mma and cluster[0] > 1 and extras is None and not kernel.load_sparse
    order, band = rasters[0][0], tc.raster_band(*rasters[0], grid_m // batch, grid_n, *cluster)
    capacity = 0.0
    settled = True
    if l2 is None:  # no cache between cores and DRAM: every CTA reads its own blocks
        classes = tc.legacy_classes(1, 1, ctas, slots, a_total * grid_n / ctas, b_total * grid_m / ctas, False)
        classes = [(a, a * a_total * grid_n / ctas, a * b_total * grid_m / ctas, c, f)
                   for a, _, _, c, f in classes]
        l2_reuse = "none"
    elif reuse.across_waves == "all_or_nothing" and order == "m_fastest":  # the model before issue 17
        classes = tc.legacy_classes(grid_m, grid_n, split, slots, a_total / (grid_m * split),
                                    0.0 if b_in_l2 else b_total / (grid_n * split), all_fit)
        l2_reuse = "kernel" if all_fit else "wave"
        capacity = float(l2_bytes) if all_fit else 0.0
    else:  # batch entries and split-k slices are planes with their own A and B panels
        planes = batch * split
        if reuse.across_waves == "all_or_nothing":
            capacity, l2_reuse = (math.inf, "kernel") if all_fit else (0.0, "wave")
        else:
            capacity, l2_reuse = reuse.usable_fraction * l2_bytes, "reuse_distance"
        c_written = c_total if split == 1 else m * batch * n * acc * split  # into L2 during the kernel
        try:
            pick, order, band, classes, settled = tc.pick_raster(
                rasters, cluster, grid_m // batch, grid_n, planes, slots, a_total / (grid_m * split),
                b_total / (grid_n * planes), c_written / ctas, capacity, not b_in_l2,
                known[0] if known is not None else None)
        except SizeLimitError as err:
            raise SizeLimitError(f"layer '{kernel.name}': {err}") from None
        if known is not None and pick == 0:  # the first raster, already simulated
            return known[1], known[2], None
    k_cta = min(k_slice, k_total)

    def k_loop(k_len: int, c_cta: float = c_traffic / ctas) -> np.ndarray:
        """One CTA's (or stream-K unit's) k-steps over ``k_len``, writing ``c_cta`` bytes of C."""
        if kernel.load_sparse:
            return ls.cta_k_loop_load_sparse(bm, bn, bk, k_len, mma[2], e, kernel.a_density, kernel.a_index_bits,
                                             c_cta, rate, kernel.compute_on == "vector")
        out = tc.cta_k_loop(bm, bn, bk, k_len, kernel.keep_n, kernel.group_m, mma[2], e, mbits, c_cta,
                            rate, kernel.sparse_datapath)
        if pair:  # an MMA pair: each CTA holds its 1/m share of the B tile (tcgen05 cta_group::2)
            out[:, tl.T_SRAM_B] /= cluster[0]
        if extras is not None:  # rows of B gathered by index per k-step (its k length, per panel), block indices
            out[:, tl.T_SRAM_B] *= extras.b_panels
            out[:, tl.T_GATHER] = out[:, tl.T_SRAM_B] / (bn * e)
            out[:, tl.T_SRAM_A_META] += extras.meta_per_step
        return out

    fill = hw.fill_bytes_per_cycle() / (conc or 1)
    l2_bw = l2.bandwidth_bytes_per_cycle if l2 is not None else math.inf
    dram_bw = hw.dram_bytes_per_cycle()
    dec_rate, dec_lat = decode_params(kernel, hw)
    g_rate = extras.gather_rate if extras is not None else math.inf
    latency = hw.dram_latency_cycles() * (extras.load_trips if extras is not None else 1)

    def run_class(base: np.ndarray, idx: int, active: int, count: int, fa: float, fb: float, fc: float,
                  drain: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One wave class; ``drain``: DRAM bytes of C write-back per load byte, drained behind the loads.

        V:N:M, block: DRAM holds A as stored, so its values / metadata split is stored's. A pair's B shares are
        distinct: each is read from L2 for its CTA alone. Transfers move the SRAM-side bytes (the DRAM columns only
        say where they came from). C goes to DRAM (or stays in L2): its own share of the memory system, not the
        loads'; a write-back L2 takes the stores at its port rate and drains them to DRAM meanwhile and behind the
        next loads (``drain``: only what the store time leaves undrained, ``tc.write_back_drain``). One numba call
        (``engine.ctaclass``), the same operations as the array steps it stands for."""
        return cc.run_wave_class(base, idx, count, fa, fb, fc, drain,
                                 extras.a_meta_share if extras is not None else 0.0, extras is not None,
                                 1 if pair else cluster[0], cluster[1], active, fill, l2_bw, dram_bw, write_back,
                                 latency, dec_rate, dec_lat, stages, g_rate)

    def segment(work: np.ndarray, times: np.ndarray, bw: np.ndarray, count: int, active: int,
                wave_class: int) -> Segment:
        """A class's Segment: its arrays, or (``fold``) only their sums, which are what its totals read."""
        if fold:
            return Segment(None, None, None, count, active, wave_class, cl.sums_of(work, times, latency))
        return Segment(work, times, bw, count, active, wave_class)

    fc = 0.0 if c_in_l2 else 1.0
    # a write-back L2 absorbs a wave's C stores (when they fit) and writes them to DRAM meanwhile and while the next
    # wave loads
    write_back = l2 is not None and l2.write_policy == "write_back" and fc > 0 and slots * c_traffic / ctas <= l2_bytes

    def drain_of(active: int, load_cta: float) -> float:
        """DRAM bytes of C drained behind the loads per load byte (0 without a write-back L2)."""
        return tc.write_back_drain(fc * c_traffic / ctas, load_cta, active, fill, l2_bw, dram_bw) \
            if write_back else 0.0

    k_steps = -(-k_cta // bk)
    segs = []
    if k_steps <= cl.KSTEP_CAP:
        base = k_loop(k_cta)
        a_cta = base[:, tl.T_SRAM_A_VALUES].sum() + base[:, tl.T_SRAM_A_META].sum()
        b_cta = base[:, tl.T_SRAM_B].sum()
        for idx, (active, dram_a, dram_b, count, _first) in enumerate(classes):
            fa = min(1.0, dram_a / (active * a_cta)) if a_cta else 0.0
            fb = min(1.0, dram_b / (active * b_cta)) if b_cta else 0.0
            drain = drain_of(active, a_cta + b_cta)
            if overlap:  # the class's waves back to back per core, in runs of at most KSTEP_CAP k-steps
                for run_waves, repeats in st.wave_runs(count, max(1, cl.KSTEP_CAP // max(1, len(base)))):
                    work, times, bw = run_class(st.back_to_back(base, run_waves), idx, active, repeats, fa, fb, fc,
                                                drain)
                    segs.append(segment(work, times, bw, count=repeats, active=active, wave_class=idx))
                continue
            work, times, bw = run_class(base, idx, active, count, fa, fb, fc, drain)
            segs.append(segment(work, times, bw, count=count, active=active, wave_class=idx))
        sk = _stream_k_plan(comp.stream_k, kernel, split, extras, ctas, slots, k_steps)
        tail = next((i for i, c in enumerate(classes) if c[0] < slots and c[3] == 1), None)
        if sk is not None and tail is None:  # no partial last wave among the raster's classes
            sk = None
        if sk is not None and tail is not None:  # the last two waves' tiles (or all) as one wave of stream-K units
            sk_tiles, units, unit_steps = sk
            active, dram_a, dram_b, _, _ = classes[tail]
            full = None
            if sk_tiles > active:  # the last full wave joins the stream-K units: its DRAM bytes with the tail's
                full = max(i for i, c in enumerate(classes) if c[0] == slots and i != tail)
                dram_a, dram_b = dram_a + classes[full][1], dram_b + classes[full][2]
            # the units write the stream-K tiles' C between them; the fix-up's fp32 partial tiles (units x BM x BN
            # x 4 B of workspace) stay in L2 and are not timed (echoed as tiling.stream_k.fixup)
            c_unit = c_traffic / ctas * sk_tiles / units
            sk_base = k_loop(unit_steps * bk, c_unit)  # no extras / load-sparse grid runs stream-K
            a_unit = sk_base[:, tl.T_SRAM_A_VALUES].sum() + sk_base[:, tl.T_SRAM_A_META].sum()
            b_unit = sk_base[:, tl.T_SRAM_B].sum()
            # the units read from DRAM what the waves they replace read, no more (their k-steps round up)
            fa = min(1.0, dram_a / (units * a_unit)) if a_unit else 0.0
            fb = min(1.0, dram_b / (units * b_unit)) if b_unit else 0.0
            work, times, bw = run_class(sk_base, tail, units, 1, fa, fb, fc, drain_of(units, a_unit + b_unit))
            sk_segs = list(segs)
            if full is not None:
                sk_segs[full] = dataclasses.replace(sk_segs[full], count=sk_segs[full].count - 1)
            sk_segs = [s for i, s in enumerate(sk_segs) if i != tail and s.count > 0]
            sk_segs.append(segment(work, times, bw, count=1, active=units, wave_class=tail))
            if sum(s.count * s.end for s in sk_segs) < sum(s.count * s.end for s in segs):
                segs = sk_segs
            else:  # data-parallel is faster for this tile
                sk = None
    else:  # a k-loop too long to hold: reduced loops, extended linearly in the number of k-steps
        sk = None
        loop = cl.Loop(k_steps, bk, "k")
        bases: dict[int, np.ndarray] = {}

        def reduced(steps_run: int) -> np.ndarray:
            if steps_run not in bases:
                bases[steps_run] = k_loop(k_cta - (k_steps - steps_run) * bk)
            return bases[steps_run]

        def operand_bytes(counts: list[int]) -> cl.Sums:
            return cl.Sums(0.0, 0.0, 0.0, 0.0, 0.0, reduced(counts[0]).sum(axis=0))

        col = cl.extrapolate([loop], operand_bytes)[0].col
        a_cta = col[tl.T_SRAM_A_VALUES] + col[tl.T_SRAM_A_META]
        b_cta = col[tl.T_SRAM_B]
        for idx, (active, dram_a, dram_b, count, _first) in enumerate(classes):
            fa = min(1.0, dram_a / (active * a_cta)) if a_cta else 0.0
            fb = min(1.0, dram_b / (active * b_cta)) if b_cta else 0.0
            drain = drain_of(active, a_cta + b_cta)

            def one(counts: list[int], idx: int = idx, active: int = active, count: int = count, fa: float = fa,
                    fb: float = fb, drain: float = drain) -> cl.Sums:
                work, times, _ = run_class(reduced(counts[0]), idx, active, count, fa, fb, fc, drain)
                return cl.sums_of(work, times, latency)

            summed = cl.extrapolate([loop], one)[0]
            segs.append(Segment(None, None, None, count=count, active=active, wave_class=idx, summed=summed))
    last = ctas - (waves - 1) * slots
    tiling = {"tiles": int(ctas * k_steps), "cta_tile": [bm, bn, bk], "split_k": split, "stages": stages,
              "ctas": ctas, "grid": [grid_m, grid_n, split], "slots": slots, "waves": waves, "last_wave_ctas": last,
              "idle_slot_fraction": round(1 - ctas / (waves * slots), 6), "k_steps": int(k_steps),
              "wave_classes": len(classes), "raster": {"order": order, "group_width": band},
              "cluster": list(cluster),
              "l2_reuse": l2_reuse, "l2_bytes_used": int(capacity) if math.isfinite(capacity) else l2_bytes,
              "dram_reread": {"a": round(sum(c * da for _, da, _, c, _ in classes) / a_total, 6) if a_total else 0.0,
                              "b": round(sum(c * db for _, _, db, c, _ in classes) / b_total, 6) if b_total else 0.0},
              "b_from_l2": b_in_l2, "c_to_l2": c_in_l2, "c_write_back": write_back}
    if comp.stream_k is not None and comp.stream_k.on("sparse" if kernel.sparse_datapath else "dense"):
        tiling["stream_k"] = "data_parallel" if sk is None else {"tiles": sk[0], "units": sk[1], "k_steps": sk[2],
                                                                  "fixup": "partials_in_l2_not_timed"}
    if k_steps > cl.KSTEP_CAP:
        tiling["extrapolated"] = True
    if extras is not None:
        tiling.update(extras.tiling)
        if conc:
            tiling["resident_ctas"] = conc
        elif extras.resident >= 1:
            tiling["resident_ctas"] = extras.resident
            tiling["waves_back_to_back"] = overlap and k_steps <= cl.KSTEP_CAP
    return segs, tiling, None if settled else classes


def _stream_k_plan(stream_k: StreamK | None, kernel: Kernel, split: int, extras: st.GridExtras | None, tiles: int,
                   slots: int, k_steps: int) -> tuple[int, int, int] | None:
    """The stream-K decomposition of one candidate, as CUTLASS 3's sm90 stream-K scheduler lays it out
    (tile_scheduler_params.h, v3.4): (stream-K tiles, units, k-steps per unit), or None where it runs
    data-parallel: stream-K off for the path, split-k, a V:N:M / block / load-sparse grid, no partial last wave, or
    too few k-steps. CUTLASS's own heuristic also stays data-parallel when the tail is at least half a wave; here the
    faster of the two is kept (``_cta_grid``), as a library that times its algorithms (or a harness that searches
    them) would."""
    path = "sparse" if kernel.sparse_datapath else "dense"
    if stream_k is None or not stream_k.on(path) or split != 1 or extras is not None or kernel.load_sparse:
        return None
    full, tail = divmod(tiles, slots)
    if tail == 0 or k_steps <= stream_k.min_k_steps_per_unit:
        return None
    sk_tiles = tiles - max(full - 1, 0) * slots  # the last full wave and the tail, or every tile
    units = min(slots, sk_tiles * k_steps // stream_k.min_k_steps_per_unit)
    if units <= 0:
        return None
    return sk_tiles, units, -(-sk_tiles * k_steps // units)
