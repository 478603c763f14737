"""L2 as a capacity across waves: the DRAM bytes of A and B each wave of a CTA grid reads, from its raster order.

The grid: ``planes`` (batch entries x split-k slices, outermost, each with its own A and B panels) of
``gm x gn`` CTAs. Inside a plane the raster walks bands of ``G`` CTA-rows (the last band may be narrower):
m fastest over the band's rows, then along n, then the next band (the grouped order of Triton's matmul,
``GROUP_M``; CUTLASS's identity swizzle is the same with m and n exchanged). ``G = gm`` is the m-fastest
order. CTA ``i`` of the launch runs in wave ``i // slots``.

An A panel is one CTA-row of A over the plane's k-range (``bm x k`` values + metadata), a B panel one
CTA-column of B. CTAs of a wave run their k-loops in lockstep, so a panel several of them use is read
from DRAM once per wave (within-wave sharing; their k-slabs in flight are a small part of any L2). A
panel used again in wave ``w``, last used in wave ``w'``, finds its k-slab at loop fraction ``tau`` still in
L2 when the distinct bytes that passed through L2 since -- ``(1 - tau) X + tau Y``, with ``X`` the footprint of
waves ``w'..w-1`` and ``Y`` that of waves ``w'+1..w`` (panels counted once, plus the C tiles written in between)
-- are at most the usable L2 capacity: an LRU stack distance in bytes. Linear in ``tau``, so the share of the
panel that hits is closed form. The footprint of any range of CTA ids is closed form too (rows and columns
of the bands it crosses), so each wave costs O(its panels), in numba.

Huge grids are not listed wave by wave: a wave's DRAM bytes depend only on where it starts relative to the
plane (and band) structure, so waves are counted by position (``wave_reuse_classes``): planes (and bands)
with the same phase against the wave grid are counted together, and the middle of a plane (or band), where
the structure repeats, is evaluated once per period and counted in closed form.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from accelsim.limits import SizeLimitError

LIST_CAP = 1 << 16  # waves listed one by one; more are counted by position
EVAL_BUDGET = 1 << 19  # wave positions evaluated for one grid at most (else SizeLimitError)

# int parameters (one int64 array) and float parameters (one float64 array) of the numba kernels
I_GM, I_GN, I_G, I_PLANES, I_SLOTS, I_CTAS = range(6)
F_A, F_B, F_C, F_CAP = range(4)


@njit(cache=True)
def _band(r: int, gm: int, gn: int, g: int) -> tuple[int, int, int, int]:
    """(band index, its first plane-relative id, its rows, its length) of plane-relative id ``r``."""
    nb = -(-gm // g)
    bs = g * gn
    b = min(r // bs, nb - 1)
    rows = g if b < nb - 1 else gm - (nb - 1) * g
    return b, b * bs, rows, rows * gn


@njit(cache=True)
def _plane_panels(x: int, y: int, gm: int, gn: int, g: int) -> tuple[int, int]:
    """Distinct (A rows, B columns) that plane-relative CTA ids ``[x, y)`` use (0 <= x < y <= plane)."""
    b0, st0, r0, ln0 = _band(x, gm, gn, g)
    b1, st1, r1, _ = _band(y - 1, gm, gn, g)
    if b0 == b1:
        return min(r0, y - x), (y - 1 - st0) // r0 - (x - st0) // r0 + 1
    rows = min(r0, st0 + ln0 - x) + (b1 - b0 - 1) * g + min(r1, y - st1)
    if b1 - b0 >= 2:
        return rows, gn
    c0 = (x - st0) // r0  # the first band's piece: columns c0 .. gn-1
    c1 = (y - 1 - st1) // r1  # the second band's piece: columns 0 .. c1
    return rows, gn if c1 >= c0 - 1 else (gn - c0) + (c1 + 1)


@njit(cache=True)
def _footprint(a: int, b: int, ip: np.ndarray, fp: np.ndarray) -> float:
    """Bytes of the distinct A and B panels CTA ids ``[a, b)`` use (0 when empty)."""
    if b <= a:
        return 0.0
    gm, gn, g = ip[I_GM], ip[I_GN], ip[I_G]
    plane = gm * gn
    pa = a // plane
    pb = (b - 1) // plane
    if pa == pb:
        rows, cols = _plane_panels(a - pa * plane, b - pa * plane, gm, gn, g)
    else:
        ra, ca = _plane_panels(a - pa * plane, plane, gm, gn, g)
        rb, cb = _plane_panels(0, b - pb * plane, gm, gn, g)
        rows = ra + (pb - pa - 1) * gm + rb
        cols = ca + (pb - pa - 1) * gn + cb
    return rows * fp[F_A] + cols * fp[F_B]


@njit(cache=True)
def _hit(wp: int, s: int, e: int, ip: np.ndarray, fp: np.ndarray) -> float:
    """Share of a panel last used in wave ``wp`` that wave ``[s, e)`` finds in L2 (0..1)."""
    slots = ip[I_SLOTS]
    between = (s - wp * slots) * fp[F_C]  # C tiles written by waves wp .. w-1
    x = _footprint(wp * slots, s, ip, fp) + between
    y = _footprint((wp + 1) * slots, e, ip, fp) + between
    cap = fp[F_CAP]
    lo, hi = min(x, y), max(x, y)
    if hi <= cap:
        return 1.0
    if lo > cap:
        return 0.0
    return (cap - lo) / (hi - lo)


@njit(cache=True)
def wave_misses(starts: np.ndarray, ends: np.ndarray, ip: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Per wave ``[starts[i], ends[i])``: (A panels, B panels) read from DRAM, fractional (numba)."""
    gm, gn, g, slots = ip[I_GM], ip[I_GN], ip[I_G], ip[I_SLOTS]
    plane = gm * gn
    out = np.zeros((len(starts), 2), dtype=np.float64)
    for i in range(len(starts)):
        s, e = starts[i], ends[i]
        w = s // slots
        miss_a = 0.0
        miss_b = 0.0
        pos = s
        while pos < e:  # one segment per band the wave crosses
            p = pos // plane
            b, st, rows, ln = _band(pos - p * plane, gm, gn, g)
            base = p * plane + st  # the band's first CTA id
            x = pos - base
            y = min(ln, e - base)
            last_wp = -1
            h = 0.0
            for j in range(min(rows, y - x)):  # each A row's first CTA in the segment
                u = x + j - rows  # its previous use, band-relative
                if u < 0:
                    miss_a += 1.0  # first use in this band: compulsory
                    continue
                wp = (base + u) // slots
                if wp != last_wp:
                    h = _hit(wp, s, e, ip, fp)
                    last_wp = wp
                miss_a += 1.0 - h
            for c in range(x // rows, (y - 1) // rows + 1):
                if c * rows < x:
                    wp = (base + x - 1) // slots  # the column began in the previous wave
                elif b == 0:
                    miss_b += 1.0  # first band of the plane: compulsory
                    continue
                else:
                    wp = (base - g * gn + c * g + g - 1) // slots  # its last CTA in the previous band
                    if wp == w:
                        continue  # used earlier in this same wave: shared, read once
                if wp != last_wp:
                    h = _hit(wp, s, e, ip, fp)
                    last_wp = wp
                miss_b += 1.0 - h
            pos = base + y
        out[i, 0] = miss_a
        out[i, 1] = miss_b
    return out


# -- counting waves by position ----------------------------------------------------------------

class _Entries:
    """Wave starts to evaluate and how many waves each stands for, appended in numpy blocks."""

    def __init__(self, slots: int, what: str) -> None:
        self.slots = slots
        self.what = what  # names the grid in a SizeLimitError
        self.starts: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.n = 0

    def _reserve(self, n: int) -> None:
        self.n += n
        if self.n > EVAL_BUDGET:
            raise SizeLimitError(f"{self.what}: more than {EVAL_BUDGET:,} distinct wave positions to classify "
                                 "(use a grouped raster order with a narrower band)")

    def add(self, starts: np.ndarray, counts: np.ndarray) -> None:
        self._reserve(len(starts))
        self.starts.append(starts)
        self.counts.append(counts)

    def segment(self, st: int, ln: int, head: int, tail: int, period: int, mult: int, skip: int = -1) -> None:
        """Waves starting in CTA ids ``[st, st + ln)``, ``mult`` times each; ``skip``: a start counted once less.

        The first ``head`` and last ``tail`` ids are listed wave by wave; in between, a wave's key repeats
        with ``period`` (a multiple of ``slots``): one period is evaluated and counted in closed form.
        """
        slots = self.slots
        o0 = -st % slots
        if o0 >= ln or mult <= 0:
            return
        if head + tail + 2 * period >= ln:
            self._reserve(-(-(ln - o0) // slots))
            starts = np.arange(o0, ln, slots, dtype=np.int64)
            counts = np.full(len(starts), mult, dtype=np.int64)
        else:
            self._reserve((head + tail + period) // slots + 3)
            o_h = head + (o0 - head) % slots
            o_t = ln - tail + (o0 - (ln - tail)) % slots
            listed = np.concatenate([np.arange(o0, head, slots, dtype=np.int64),
                                     np.arange(o_t, ln, slots, dtype=np.int64)])
            reps = np.arange(o_h, o_h + period, slots, dtype=np.int64)
            reps = reps[reps < ln - tail]
            starts = np.concatenate([listed, reps])
            counts = np.concatenate([np.full(len(listed), mult, dtype=np.int64),
                                     ((ln - tail - 1 - reps) // period + 1) * mult])
        starts += st
        if skip >= 0:
            counts[starts == skip] -= 1
        keep = counts > 0
        self.starts.append(starts[keep])
        self.counts.append(counts[keep])


def _plane_groups(plane: int, planes: int, slots: int) -> list[tuple[int, int]]:
    """(first plane, number of planes) of each phase of the planes against the wave grid."""
    period = slots // math.gcd(plane % slots, slots)
    return [(i, (planes - 1 - i) // period + 1) for i in range(min(period, planes))]


def _by_planes(ent: _Entries, gm: int, gn: int, g: int, groups: list[tuple[int, int, int]]) -> None:
    """Planes as the repeating unit: away from its first and last band, a plane repeats every band."""
    slots = ent.slots
    plane = gm * gn
    bs = g * gn
    last_len = (gm - (-(-gm // g) - 1) * g) * gn
    for first, mult, skip in groups:
        ent.segment(first * plane, plane, bs + 3 * slots + g, last_len + 3 * slots, math.lcm(bs, slots), mult, skip)


def _band_list(nb: int, slots: int, bs: int) -> list[tuple[int, int]]:
    """(band, how many bands of a plane it stands for): the first two and last two bands on their own,
    the middle ones grouped by their phase against the wave grid."""
    tau = slots // math.gcd(bs % slots, slots)
    n_mid = max(0, nb - 4)
    ends = sorted({b for b in (0, 1, nb - 2, nb - 1) if 0 <= b < nb})  # not set(range(nb)): nb may be ~2^31
    return [(b, 1) for b in ends] + \
        [(2 + j, (n_mid - 1 - j) // tau + 1) for j in range(min(tau, n_mid))]


def _by_bands(ent: _Entries, gm: int, gn: int, g: int, groups: list[tuple[int, int, int]]) -> None:
    """Bands as the repeating unit (wide bands): a band's middle repeats every lcm(rows, slots) CTAs."""
    slots = ent.slots
    plane = gm * gn
    bs = g * gn
    nb = -(-gm // g)
    for first, mult, skip in groups:
        for b, count in _band_list(nb, slots, bs):
            rows = g if b < nb - 1 else gm - (nb - 1) * g
            ent.segment(first * plane + b * bs, rows * gn, rows + 2 * g + 3 * slots, 2 * g + 3 * slots,
                        math.lcm(rows, slots), mult * count, skip)


def wave_reuse_classes(gm: int, gn: int, g: int, planes: int, slots: int, a_panel: float, b_panel: float,
                       c_cta: float, capacity: float, a_dram: float, b_dram: float,
                       cap: int = LIST_CAP, by: str = "") -> list[tuple[int, float, float, int, int]]:
    """Distinct waves as (active CTAs, DRAM bytes of A, DRAM bytes of B, count, first wave index), by first wave.

    ``g``: CTA-rows per raster band (``gm``: m fastest); ``a_panel``/``b_panel``: bytes one A/B panel
    occupies in L2; ``c_cta``: C bytes a CTA writes; ``capacity``: usable L2 bytes; ``a_dram``/``b_dram``:
    DRAM bytes of one panel read (0 when it never comes from DRAM). ``cap``: waves listed one by one
    before they are counted by position; ``by``: 'planes' or 'bands' forces that count (tests).
    """
    g = max(1, min(g, gm))
    plane = gm * gn
    ctas = plane * planes
    waves = -(-ctas // slots)
    final = (waves - 1) * slots
    ent = _Entries(slots, f"CTA grid of {ctas:,} CTAs ({planes:,} x {gm:,} x {gn:,}, raster bands of {g:,} rows)")
    if waves <= cap:
        ent.add(np.arange(0, ctas, slots, dtype=np.int64), np.ones(waves, dtype=np.int64))
    else:
        # planes with the same phase against the wave grid are counted together; the final wave (maybe
        # partial) is evaluated on its own and counted once less where it sits among its plane's waves
        p_final = final // plane
        period = slots // math.gcd(plane % slots, slots)
        groups = [(first, mult, first * plane + final % plane if first == p_final % period else -1)
                  for first, mult in _plane_groups(plane, planes, slots)]
        bs = g * gn
        nb = -(-gm // g)
        per_plane = bs // math.gcd(bs, slots) + (3 * bs + 8 * slots) // slots
        per_band = min(nb, 4 + slots) * (g // math.gcd(g, slots) + (3 * g + 6 * slots) // slots + 4)
        if by == "planes" or (by != "bands" and (bs < 4 * slots + 4 * g or per_plane <= per_band)):
            _by_planes(ent, gm, gn, g, groups)
        else:
            _by_bands(ent, gm, gn, g, groups)
        ent.add(np.array([final], dtype=np.int64), np.ones(1, dtype=np.int64))
    starts = np.concatenate(ent.starts)
    counts = np.concatenate(ent.counts)
    ends = np.minimum(starts + slots, ctas)
    ip = np.array([gm, gn, g, planes, slots, ctas], dtype=np.int64)
    fp = np.array([a_panel, b_panel, c_cta, capacity], dtype=np.float64)
    miss = wave_misses(starts, ends, ip, fp)
    keys = np.stack([(ends - starts).astype(np.float64), miss[:, 0] * a_dram, miss[:, 1] * b_dram], axis=1)
    order = np.lexsort(keys.T[::-1])
    k = keys[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = np.any(k[1:] != k[:-1], axis=1)
    group = np.cumsum(new) - 1
    total = np.zeros(group[-1] + 1, dtype=np.int64)
    np.add.at(total, group, counts[order])
    first = np.full(len(total), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, group, starts[order] // slots)
    uniq = k[new]
    by_first = np.argsort(first, kind="stable")
    return [(int(uniq[i, 0]), float(uniq[i, 1]), float(uniq[i, 2]), int(total[i]), int(first[i]))
            for i in by_first if total[i] > 0]
