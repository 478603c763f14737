"""Huge kernels in bounded time and memory: classes of identical tiles, simulated once and counted.

A kernel's tiles come in a few classes of identical shape: the first, middle and last fold of each
loop of a systolic schedule, the k-steps of a CTA, the waves of a CTA grid. Up to ``TILE_CAP``
systolic tiles (``KSTEP_CAP`` k-steps per CTA) the engine simulates every tile. Past that it
simulates reduced copies of the kernel, with ``A`` and ``B`` middle iterations in each long loop
instead of millions, and extends every total (end time, cycles, stalls, bytes) linearly in each
loop's count: once the pipeline is in its steady state each further middle iteration adds the same
amounts, so the totals are affine in the counts. Waves of a large CTA grid are counted in closed
form (floor sums) instead of one array row per wave. Sizes are Python ints throughout: numba sees
only the reduced shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from accelsim.engine import pipeline as pl
from accelsim.engine import tiling as tl
from accelsim.limits import INT64_MAX, SizeLimitError, check_total
from accelsim.results import KernelTotals

TILE_CAP = 1 << 20  # systolic tiles simulated one by one; more are extrapolated from classes
KSTEP_CAP = 1 << 16  # k-steps of one CTA simulated one by one
WAVE_CAP = 1 << 16  # waves of a CTA grid listed one by one (then: one period, or floor sums)
_A_MID = 8  # middle iterations of a long loop in the smaller reduced copy
_SPLIT_CAP = 1 << 16  # split-k slices the closed-form wave count walks (one plane boundary each)
_SPAN = 24  # the larger copy has this many more (a multiple of any alignment period up to 8)


def check_totals(name: str, t: KernelTotals) -> None:
    """Refuse a kernel whose cycle or byte count passes 2^63 - 1."""
    if max(t.total, t.compute, t.busy_memory, t.busy_decode, t.launch, t.dram_a_values, t.dram_a_metadata, t.dram_b,
           t.dram_c, t.sram_a_values, t.sram_a_metadata, t.sram_b, t.sram_c) <= INT64_MAX:
        return
    named = {"cycles": t.total} | {f"busy {k} cycles": v for k, v in t.busy().items()} \
        | {f"DRAM bytes of {k}": v for k, v in t.dram().items()} \
        | {f"SRAM bytes of {k}": v for k, v in t.sram().items()}
    key, value = max(named.items(), key=lambda kv: kv[1])
    check_total(f"layer '{name}'", key, value)


# -- the sums _assemble takes of a segment -------------------------------------------------------

@dataclass(slots=True)
class Sums:
    """The totals of one simulated tile sequence that a KernelResult is built from."""

    end: float
    cycles: float
    stall_decode: float
    busy: float  # DRAM busy cycles: load transfer time (latency excluded) plus write-backs
    groups: float
    col: np.ndarray  # work.sum(axis=0): bytes and counts per tile-work column
    stall_gather: float = 0.0  # cycles computes waited for the gather stage

    def vector(self) -> np.ndarray:
        """The layout of ``pipeline.segment_sums``."""
        return np.concatenate([[self.end, self.cycles, self.stall_decode, self.busy, self.groups, self.stall_gather],
                               self.col])

    @classmethod
    def from_vector(cls, v: np.ndarray) -> Sums:
        head = v[:pl.N_SUM_SCALARS].tolist()
        return cls(head[pl.S_END], head[pl.S_CYCLES], head[pl.S_STALL_DECODE], head[pl.S_BUSY], head[pl.S_GROUPS],
                   v[pl.N_SUM_SCALARS:], head[pl.S_STALL_GATHER])


def end_of(times: np.ndarray) -> float:
    """When the last tile's compute or write-back finishes."""
    if not len(times):
        return 0.0
    return _end_of(times)


@njit(cache=True)
def _column_max(times: np.ndarray, col: int) -> float:
    """``times[:, col].max()``: the largest value, NaN if any is (as numpy's)."""
    out = times[0, col]
    for i in range(times.shape[0]):
        v = times[i, col]
        if math.isnan(v):
            return v
        if v > out:
            out = v
    return out


@njit(cache=True)
def _end_of(times: np.ndarray) -> float:
    """``max(compute ends' max, write-back ends' max)`` as Python's max of the two numpy maxima (one call)."""
    c = _column_max(times, pl.P_COMPUTE_END)
    w = _column_max(times, pl.P_WB_END)
    return w if w > c else c


def sums_of(work: np.ndarray, times: np.ndarray, latency: float) -> Sums:
    """The Sums of one simulated sequence (``pipeline.segment_sums``)."""
    return Sums.from_vector(pl.segment_sums(work, times, latency))


# -- extrapolation over long loops -----------------------------------------------------------------

@dataclass(frozen=True)
class Loop:
    """One loop of a tile schedule: ``count`` iterations, each covering ``unit`` of GEMM dim ``dim``."""

    count: int
    unit: int
    dim: str  # 'm', 'n' or 'k' (k counted in compressed positions: ``unit`` kept values)
    period: int = 1  # middle iterations repeat with this period (N:M group alignment)

    def points(self) -> tuple[int, int] | None:
        """The two reduced counts to simulate, or None when the loop is short enough to run whole."""
        a = _A_MID + (self.count - _A_MID) % self.period
        b = a + math.lcm(self.period, _SPAN)
        return (a, b) if self.count > b + 8 else None


def reduced_shape(loops: list[Loop], counts: list[int], m: int, n: int, k: int, keep: int,
                  group: int) -> tuple[int, int, int]:
    """(m, n, k) with each loop cut from ``loop.count`` to ``counts[i]`` iterations (middle ones removed)."""
    dims = {"m": m, "n": n, "k": k}
    for loop, c in zip(loops, counts, strict=True):
        cut = (loop.count - c) * loop.unit
        if loop.dim == "k":
            assert cut % keep == 0
            dims["k"] -= cut // keep * group
        else:
            dims[loop.dim] -= cut
    return dims["m"], dims["n"], dims["k"]


def extrapolate(loops: list[Loop], simulate: Callable[[list[int]], Sums]) -> tuple[Sums, int]:
    """Sums of the full schedule from reduced copies: linear in each long loop's count.

    ``simulate(counts)`` runs the schedule with those loop counts. Returns the Sums and how many
    tiles the reduced copies held in all.
    """
    pts = [loop.points() for loop in loops]
    long_idx = [i for i, p in enumerate(pts) if p is not None]
    corners = []
    simulated = 0
    for mask in range(1 << len(long_idx)):
        counts = [loop.count for loop in loops]
        for bit, i in enumerate(long_idx):
            counts[i] = pts[i][1 if mask >> (len(long_idx) - 1 - bit) & 1 else 0]  # type: ignore[index]
        corners.append(simulate(counts).vector())
        simulated += math.prod(counts)
    vals = np.array(corners).reshape((2,) * len(long_idx) + (-1,))
    for i in long_idx:  # the first remaining axis is loop i's
        a, b = pts[i]  # type: ignore[misc]
        vals = vals[0] + (vals[1] - vals[0]) * ((loops[i].count - a) / (b - a))
    return Sums.from_vector(vals), simulated


def _systolic_dims(dataflow: int, m: int, n: int, k_eff: int) -> tuple[tuple[int, str], ...]:
    """(extent, GEMM dim) of the column folds, row folds and stream of a dataflow."""
    if dataflow == 0:  # os: rows <- n, cols <- m, stream k
        return (m, "m"), (n, "n"), (k_eff, "k")
    if dataflow == 1:  # ws: rows <- k, cols <- m, stream n
        return (m, "m"), (k_eff, "k"), (n, "n")
    return (n, "n"), (k_eff, "k"), (m, "m")  # is: rows <- k, cols <- n, stream m


def systolic_tile_count(rows: int, cols: int, dataflow: int, m: int, n: int, k: int, keep: int, group: int,
                        chunk: int) -> int:
    """Tiles of a systolic schedule: column folds x row folds x stream chunks (a Python int)."""
    (s_c, _), (s_r, _), (t_len, _) = _systolic_dims(dataflow, m, n, -(-k // group) * keep)
    return -(-s_c // cols) * -(-s_r // rows) * -(-t_len // chunk)


def systolic_loops(rows: int, cols: int, dataflow: int, m: int, n: int, k: int, keep: int, group: int,
                   chunk: int) -> list[Loop]:
    """The three loops of a systolic schedule, outermost first: column folds, row folds, stream chunks."""
    dims = _systolic_dims(dataflow, m, n, -(-k // group) * keep)
    return [Loop(-(-extent // unit), unit, dim, keep // math.gcd(unit, keep) if dim == "k" else 1)
            for (extent, dim), unit in zip(dims, (cols, rows, chunk), strict=True)]


def systolic_sums(rows: int, cols: int, dataflow: int, serial_drain: bool, m: int, n: int, k: int, keep: int,
                  group: int, elem_bytes: float, meta_bits: float, acc_bytes: float, chunk: int,
                  b_dram_scale: float, a_resident: bool, b_resident: bool, c_resident: bool, sparse: bool,
                  b_group: int, gather: bool, a_scale: float, fill: float, latency: float, decode_rate: float,
                  decode_latency: float, stages: int, gather_rate: float) -> tuple[Sums, int, int]:
    """Sums of a systolic GEMM too large to hold tile by tile (plan fixed by the full shape).

    Returns the Sums, the tiles the reduced copies held and the number of folds.
    """
    loops = systolic_loops(rows, cols, dataflow, m, n, k, keep, group, chunk)

    def run(counts: list[int]) -> Sums:
        mr, nr, kr = reduced_shape(loops, counts, m, n, k, keep, group)
        work = tl.systolic_tiles(rows, cols, dataflow, serial_drain, mr, nr, kr, keep, group, elem_bytes, meta_bits,
                                 acc_bytes, chunk, b_dram_scale, a_resident, b_resident, c_resident, sparse, b_group,
                                 gather, a_scale)
        assert len(work) == math.prod(counts)
        times = pl.run_pipeline(work, np.full(len(work), fill), latency, decode_rate, decode_latency, stages, 0.0,
                                gather_rate)
        return sums_of(work, times, latency)

    summed, simulated = extrapolate(loops, run)
    return summed, simulated, loops[0].count * loops[1].count


# -- waves of a CTA grid ---------------------------------------------------------------------------

def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum(floor((a*i + b) / m) for i in range(n)) for n, a, b >= 0, m >= 1, in O(log m)."""
    ans = 0
    while True:
        if a >= m:
            ans += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            ans += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return ans
        n, b = divmod(y_max, m)
        m, a = a, m


def _wave_keys(w: np.ndarray, grid_m: int, plane: int, ctas: int, slots: int, all_fit: bool) -> np.ndarray:
    """(active CTAs, new A blocks, new B blocks) of waves ``w`` (tensorcore.wave_classes' formulas)."""
    s = w * slots
    e = np.minimum(s + slots, ctas)
    active = e - s
    if all_fit:
        def seen_a(x: np.ndarray) -> np.ndarray:
            return (x // plane) * grid_m + np.minimum(grid_m, x % plane)

        new_a = seen_a(e) - seen_a(s)
        new_b = -(-e // grid_m) - (-(-s // grid_m))
    else:
        slices = (e - 1) // plane - s // plane + 1
        new_a = np.minimum(grid_m * slices, active)
        new_b = (e - 1) // grid_m - s // grid_m + 1
    return np.stack([active, new_a, new_b], axis=1)


def _wave_key(w: int, grid_m: int, plane: int, ctas: int, slots: int, all_fit: bool) -> tuple[int, int, int]:
    """One wave's key, in Python ints."""
    s = w * slots
    e = min(s + slots, ctas)
    if all_fit:
        def seen_a(x: int) -> int:
            return (x // plane) * grid_m + min(grid_m, x % plane)

        return e - s, seen_a(e) - seen_a(s), -(-e // grid_m) - -(-s // grid_m)
    slices = (e - 1) // plane - s // plane + 1
    return e - s, min(grid_m * slices, e - s), (e - 1) // grid_m - s // grid_m + 1


def wave_classes_large(grid_m: int, grid_n: int, split: int, slots: int, a_block: float, b_block: float,
                       all_fit_l2: bool, cap: int = WAVE_CAP) -> list[tuple[int, float, float, int, int]]:
    """``tensorcore.wave_classes`` without one row per wave: the same classes, counts and order.

    A wave's key depends only on its first CTA modulo the (m, n) plane, so keys repeat with period
    plane / gcd(slots, plane). A short period is listed once and counted; a long one means few plane
    boundaries, and between boundaries the key takes two values set by the first CTA modulo grid_m,
    counted with floor sums (and their first waves found by bisection on those counts).
    """
    plane = grid_m * grid_n
    ctas = plane * split
    last = -(-ctas // slots) - 1  # the last wave may be partial: always keyed on its own
    found: dict[tuple[int, int, int], list[int]] = {}

    def add(key: tuple[int, int, int], count: int, first: int) -> None:
        got = found.get(key)
        if got is None:
            found[key] = [count, first]
        else:
            got[0] += count
            got[1] = min(got[1], first)

    period = plane // math.gcd(slots, plane)
    if period <= cap:
        n = min(period, last)
        if n:
            keys = _wave_keys(np.arange(n, dtype=np.int64), grid_m, plane, ctas, slots, all_fit_l2)
            uniq, first, inverse, counts = np.unique(keys, axis=0, return_index=True, return_inverse=True,
                                                     return_counts=True)
            full, rem = divmod(last, n)
            rem_counts = np.bincount(inverse.ravel()[:rem], minlength=len(uniq))
            for i in range(len(uniq)):
                add((int(uniq[i, 0]), int(uniq[i, 1]), int(uniq[i, 2])), full * int(counts[i]) + int(rem_counts[i]),
                    int(first[i]))
    else:
        _ranges(grid_m, plane, ctas, split, slots, last, all_fit_l2, add)
    add(_wave_key(last, grid_m, plane, ctas, slots, all_fit_l2), 1, last)
    order = sorted(found.items(), key=lambda kv: kv[1][1])
    return [(k[0], float(k[1]) * a_block, float(k[2]) * b_block, c, f) for k, (c, f) in order]


def _ranges(grid_m: int, plane: int, ctas: int, split: int, slots: int, last: int, all_fit: bool,
            add: Callable[[tuple[int, int, int], int, int], None]) -> None:
    """Count the keys of waves 0..last-1 between the grid's boundaries (plane starts, A-reuse edges)."""
    if split > _SPLIT_CAP:
        raise SizeLimitError(f"split-k of {split:,} slices over a grid of {plane:,} CTAs: too many wave classes")
    bounds = {0, ctas} | {p * plane for p in range(1, split)}
    if all_fit:
        bounds |= {p * plane + grid_m for p in range(split) if grid_m < plane}
    edges = sorted(bounds)
    for w in sorted({b // slots for b in edges if 0 < b < ctas and b % slots and b // slots < last}):
        add(_wave_key(w, grid_m, plane, ctas, slots, all_fit), 1, w)  # a boundary strictly inside: one by one
    # between boundaries: new B blocks = plus + floor((x + alpha) / g) - floor((x + beta) / g) at x = w * slots,
    # which is plus + d // g or one more (d = alpha - beta)
    alpha, beta, plus = (slots + grid_m - 1, grid_m - 1, 0) if all_fit else (slots - 1, 0, 1)
    v0 = (alpha - beta) // grid_m

    def high(w0: int, t: int) -> int:
        """Waves among w0 .. w0+t-1 with the larger count of new B blocks."""
        return floor_sum(t, grid_m, slots, w0 * slots + alpha) - floor_sum(t, grid_m, slots, w0 * slots + beta) - v0 * t

    def first(w0: int, n: int, want_high: bool) -> int:
        lo, hi = 1, n  # smallest t with one wanted wave among the first t
        while lo < hi:
            mid = (lo + hi) // 2
            got = high(w0, mid) if want_high else mid - high(w0, mid)
            lo, hi = (lo, mid) if got >= 1 else (mid + 1, hi)
        return w0 + lo - 1

    for b0, b1 in zip(edges, edges[1:], strict=False):
        w0, w1 = -(-b0 // slots), min(b1 // slots, last)
        if w1 <= w0:
            continue
        n = w1 - w0
        new_a = (slots if b0 % plane < grid_m else 0) if all_fit else min(grid_m, slots)
        n_high = high(w0, n)
        if n - n_high:
            add((slots, new_a, plus + v0), n - n_high, first(w0, n, False))
        if n_high:
            add((slots, new_a, plus + v0 + 1), n_high, first(w0, n, True))

