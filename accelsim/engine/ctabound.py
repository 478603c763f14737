"""A floor under a candidate CTA grid's cycles, from its tensor-core work alone (``engine.ctagrid``'s search).

Every CTA of a wave runs the same k-loop through the tile pipeline, whose compute stage serves the k-steps one
after another: a wave class ends no earlier than the sum of its k-steps' compute cycles, whatever its loads do.
A candidate's total (``sum(count * end)`` over its wave classes, whose counts add up to the grid's waves) is then
at least ``waves x that sum``; the search skips a candidate whose floor already reaches the best total found so far
(it could not be kept: a later candidate wins only by more than 1e-9 cycles), so the kernel kept and every number
of it stay the same. The floor is taken a relative 1e-6 low, far more than the float rounding of the sums it
stands under (under 1e-10 for the 2^16 k-steps and 2^16 waves it is taken for).

Where stream-K may lay the last waves out as units (``ctagrid._stream_k_plan``), the floor is the lower of the
waves' and the units' layout (the waves they replace out, one wave of units, each at least its k-steps' cycles).
It is taken only where the candidate's simulation is the plain one: a dense or N:M grid (no V:N:M / block extras,
no load-sparse or vector-unit kernel), k-steps simulated one by one and waves listed one by one: elsewhere it is
None and the candidate is simulated.

The floor mirrors what ``ctagrid._cta_grid`` simulates (k-step bytes, fill and L2 rates, latency, stream-K plan):
a change there that lowers a candidate's cycles must lower the floor too (``tests/test_ctabound.py`` checks the
floor against every candidate's total).
"""

from __future__ import annotations

import math

from accelsim.engine import classes as cl
from accelsim.engine import l2reuse
from accelsim.hardware.model import Hardware
from accelsim.hardware.tensor_core import StreamK, TensorCoreCompute
from accelsim.lowering import Kernel

MARGIN = 1e-6  # the floor is taken this much (relative) below the exact product


def compute_floor(kernel: Kernel, hw: Hardware, tile: tuple[int, int, int], split: int, mma_k: int, rate: float,
                  e: float, mbits: float, extras: object | None) -> float | None:
    """Cycles a candidate (``tile``, ``split``, CTA ``rate`` in MACs per cycle, ``e`` bytes per value, ``mbits``
    metadata bits per kept value) takes at least, or None where no floor is taken (see the module's docstring)."""
    comp = hw.core.compute
    if not isinstance(comp, TensorCoreCompute) or extras is not None or kernel.load_sparse or \
            (kernel.sparse and kernel.compute_on == "vector") or not rate > 0 or rate == float("inf"):
        return None
    bm, bn, bk = tile
    m, n, k_total = kernel.m_exec, kernel.n_exec, kernel.k_padded
    grid_m, grid_n = -(-m // bm) * kernel.batch, -(-n // bn)
    steps = -(-k_total // bk)
    k_cta = min(-(-steps // split) * bk, k_total)
    k_steps = -(-k_cta // bk)
    ctas = grid_m * grid_n * split
    slots = hw.cores * comp.ctas_per_core
    waves = -(-ctas // slots)
    if k_steps < 1 or k_steps > cl.KSTEP_CAP or waves > min(cl.WAVE_CAP, l2reuse.LIST_CAP):
        return None
    last = k_cta - (k_steps - 1) * bk  # the last k-step's length (a partial step issues whole MMA k-slices)
    step = bm * bn * (-(-bk // mma_k) * mma_k) / rate
    step_last = bm * bn * (-(-last // mma_k) * mma_k) / rate
    cta = (k_steps - 1) * step + step_last
    # loads: one channel per CTA, in k-step order, each in after its transfer and the DRAM latency; the first k-step
    # computes after its own load, the last after all of them. A k-step's transfer takes its shared-memory bytes at
    # the fill rate at best, and its L2 bytes (multicast to at most the config's cluster) at the active CTAs' share
    # of the L2 port at best (DRAM shares, write-backs: left out, >= 0)
    fill = hw.fill_bytes_per_cycle()
    l2_bw = hw.l2.bandwidth_bytes_per_cycle if hw.l2 is not None else math.inf
    if not fill > 0 or not l2_bw > 0:
        return None
    latency = hw.dram_latency_cycles()
    cluster = comp.cluster
    cl_m, cl_n, pair = max(1, cluster.m), max(1, cluster.n), cluster.pair_mma
    keep, group = kernel.keep_n, kernel.group_m
    meta = mbits / 8.0 if kernel.sparse_datapath else 0.0
    l2_finite = math.isfinite(l2_bw)

    def step_bytes(kl: int) -> tuple[float, float]:
        """(cycles at the fill rate, cycles per active CTA at the L2 port) of a k-step of length ``kl``."""
        kc = -(-kl // group) * keep
        a = bm * kc * e + bm * kc * meta
        b = kl * bn * e
        # a pair's CTA holds 1/m of the B tile
        return (a + (b / cl_m if pair else b)) / fill, (a / cl_n + b / cl_m) / l2_bw if l2_finite else 0.0

    f_first, l_first = step_bytes(min(bk, k_cta))
    f_rest, l_rest = step_bytes(bk)
    f_last, l_last = step_bytes(last)

    def wave(active: int) -> float:
        """The first k-step computes once its load (transfer and latency) is in; the last once all loads are."""
        first = max(f_first, active * l_first)
        loads = first + (k_steps - 2) * max(f_rest, active * l_rest) + max(f_last, active * l_last) \
            if k_steps > 1 else first
        lat = latency if first > 0 and latency > 0 else 0.0
        return max(first + lat + cta, loads + lat + step_last)

    floor = (waves - 1) * wave(slots) + wave(ctas - (waves - 1) * slots)
    sk = _stream_k_units(comp.stream_k, kernel, split, ctas, slots, k_steps)
    if sk is not None:  # stream-K may replace the last full wave (if any) and the tail by one wave of units
        replaced, unit_steps = sk
        floor = min(floor, (waves - replaced) * wave(slots) + unit_steps * step)
    return floor * (1.0 - MARGIN)


def _stream_k_units(stream_k: StreamK | None, kernel: Kernel, split: int, tiles: int, slots: int,
                    k_steps: int) -> tuple[int, int] | None:
    """(waves the units replace, k-steps per unit) where ``ctagrid._stream_k_plan`` may lay the grid out as
    stream-K units (its units run whole k-steps), else None. The same arithmetic as that plan."""
    path = "sparse" if kernel.sparse_datapath else "dense"
    if stream_k is None or not stream_k.on(path) or split != 1:
        return None
    full, tail = divmod(tiles, slots)
    if tail == 0 or k_steps <= stream_k.min_k_steps_per_unit:
        return None
    sk_tiles = tiles - max(full - 1, 0) * slots
    units = min(slots, sk_tiles * k_steps // stream_k.min_k_steps_per_unit)
    if units <= 0:
        return None
    return (2 if full >= 1 else 1), -(-sk_tiles * k_steps // units)
