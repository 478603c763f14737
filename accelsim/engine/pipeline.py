"""The tile pipeline: load -> gather -> metadata decode -> compute -> write-back, one recurrence over tiles.

Each stage is a resource that serves tiles in order. A stage starts a tile at
max(its input ready, the stage free, a buffer free). DRAM is one channel shared by loads and
write-backs (transfers pipelined: latency delays readiness but does not occupy bandwidth).
With ``n_buffers`` = s >= 2 the loads of tiles up to i+s-1 are in flight while tile i computes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from accelsim.engine.tiling import (
    T_CYCLES,
    T_DRAM_A_META,
    T_DRAM_A_VALUES,
    T_DRAM_B,
    T_DRAM_C_READ,
    T_DRAM_C_WRITE,
    T_GATHER,
    T_GROUPS,
    systolic_tiles,
    vector_tiles,
)

# Columns of the timing array.
P_LOAD_START, P_LOAD_END, P_DECODE_START, P_DECODE_END = 0, 1, 2, 3
P_COMPUTE_START, P_COMPUTE_END, P_WB_START, P_WB_END = 4, 5, 6, 7
P_STALL_MEMORY, P_STALL_DECODE, P_BINDING = 8, 9, 10
P_GATHER_START, P_GATHER_END, P_STALL_GATHER = 11, 12, 13
N_TIME_COLS = 14

BIND_COMPUTE, BIND_MEMORY, BIND_DECODE = 0, 1, 2
BIND_GATHER = 4  # results.BINDING_NAMES index (3 is launch, never a tile's)


@njit(cache=True)
def _load(tiles: np.ndarray, times: np.ndarray, i: int, ready: float, dram_free: float,
          bw: np.ndarray, latency: float) -> float:
    nbytes = (tiles[i, T_DRAM_A_VALUES] + tiles[i, T_DRAM_A_META] + tiles[i, T_DRAM_B]
              + tiles[i, T_DRAM_C_READ])
    start = max(ready, dram_free)
    xfer = nbytes / bw[i] if nbytes > 0.0 else 0.0
    times[i, P_LOAD_START] = start
    times[i, P_LOAD_END] = start + xfer + (latency if nbytes > 0.0 else 0.0)
    return start + xfer


@njit(cache=True)
def run_pipeline(tiles: np.ndarray, bw: np.ndarray, latency: float, decode_rate: float, decode_latency: float,
                 n_buffers: int, start: float, gather_rate: float) -> np.ndarray:
    """Schedule every tile with one transfer rate per tile for loads and write-backs alike."""
    return run_pipeline_split(tiles, bw, bw, latency, decode_rate, decode_latency, n_buffers, start, gather_rate)


@njit(cache=True)
def run_pipeline_split(tiles: np.ndarray, bw: np.ndarray, wb_bw: np.ndarray, latency: float, decode_rate: float,
                       decode_latency: float, n_buffers: int, start: float, gather_rate: float) -> np.ndarray:
    """Schedule every tile; return the timing array (one row per tile, P_* columns).

    ``bw[i]`` is the bytes/cycle tile i's loads get (its share of the memory system); ``wb_bw[i]`` its
    write-back's (where C goes may differ from where A and B come from). A tile with rows of B to gather
    (T_GATHER) passes the gather stage (``gather_rate`` rows per cycle, in order) between its load and its
    decode; a wait for it is a gather stall.
    """
    n = tiles.shape[0]
    times = np.zeros((n, N_TIME_COLS), dtype=np.float64)
    if n == 0:
        return times
    dram_free = start
    decode_free = start
    gather_free = start
    compute_free = start
    ahead = max(1, n_buffers - 1)  # tiles loaded ahead of the one computing
    for j in range(min(ahead, n)):
        dram_free = _load(tiles, times, j, start, dram_free, bw, latency)
    for i in range(n):
        j = i + ahead
        if n_buffers >= 2 and j < n:  # buffer of tile i-1 frees when it finishes computing
            buffer_free = times[i - 1, P_COMPUTE_END] if i >= 1 else start
            dram_free = _load(tiles, times, j, buffer_free, dram_free, bw, latency)
        load_end = times[i, P_LOAD_END]
        rows = tiles[i, T_GATHER]
        if rows > 0.0:
            gs = max(load_end, gather_free)
            ge = gs + rows / gather_rate
            gather_free = ge
        else:
            gs = load_end
            ge = load_end
        times[i, P_GATHER_START] = gs
        times[i, P_GATHER_END] = ge
        groups = tiles[i, T_GROUPS]
        if groups > 0.0:
            ds = max(ge, decode_free)
            de = ds + groups / decode_rate
            decode_free = de
            ready = de + decode_latency
        else:
            ds = ge
            de = ge
            ready = ge
        times[i, P_DECODE_START] = ds
        times[i, P_DECODE_END] = de
        out_free = start
        if i >= n_buffers:
            out_free = times[i - n_buffers, P_WB_END]
        data_ready = max(load_end, out_free)
        cs = max(compute_free, data_ready, ready)
        gap = cs - compute_free
        stall_front = 0.0  # waiting for the gather and decode stages past the data and the compute unit
        if ready > data_ready and ready > compute_free:
            stall_front = ready - max(data_ready, compute_free)
        stall_gat = 0.0  # the part of it until the gather ended
        if stall_front > 0.0 and ge > max(data_ready, compute_free):
            stall_gat = min(ge, ready) - max(data_ready, compute_free)
        stall_dec = stall_front - stall_gat
        stall_mem = gap - stall_front
        if stall_mem < 1e-9:
            stall_mem = 0.0
        times[i, P_STALL_MEMORY] = stall_mem
        times[i, P_STALL_DECODE] = stall_dec
        times[i, P_STALL_GATHER] = stall_gat
        if stall_gat > stall_dec and stall_gat > stall_mem:
            times[i, P_BINDING] = BIND_GATHER
        elif stall_dec > stall_mem:
            times[i, P_BINDING] = BIND_DECODE
        elif stall_mem > 0.0:
            times[i, P_BINDING] = BIND_MEMORY
        else:
            times[i, P_BINDING] = BIND_COMPUTE
        ce = cs + tiles[i, T_CYCLES]
        times[i, P_COMPUTE_START] = cs
        times[i, P_COMPUTE_END] = ce
        compute_free = ce
        if n_buffers < 2 and i + 1 < n:
            dram_free = _load(tiles, times, i + 1, ce, dram_free, bw, latency)
        wbytes = tiles[i, T_DRAM_C_WRITE]
        if wbytes > 0.0:
            ws = max(ce, dram_free)
            we = ws + wbytes / wb_bw[i]
            dram_free = we
            times[i, P_WB_START] = ws
            times[i, P_WB_END] = we + 0.0
        else:
            times[i, P_WB_START] = ce
            times[i, P_WB_END] = ce
    return times


# Layout of the sums vector ``segment_sums`` returns (``classes.Sums.vector()``): five scalars, then
# the per-column sums of the tile-work array.
S_END, S_CYCLES, S_STALL_DECODE, S_BUSY, S_GROUPS, S_STALL_GATHER = 0, 1, 2, 3, 4, 5
N_SUM_SCALARS = 6


@njit(cache=True)
def segment_sums(work: np.ndarray, times: np.ndarray, latency: float) -> np.ndarray:
    """The totals of one scheduled tile sequence.

    end (last compute or write-back), compute cycles, decode stalls, DRAM busy cycles (load transfer
    time without ``latency``, plus write-backs), decode groups, then every work column summed.
    Every sum runs over the tiles in order, so a sequence gives the same floats however it is reached.
    """
    n_cols = work.shape[1]
    out = np.zeros(N_SUM_SCALARS + n_cols, dtype=np.float64)
    n = work.shape[0]
    if n == 0:
        return out
    end = max(times[0, P_COMPUTE_END], times[0, P_WB_END])
    busy = 0.0
    stall = 0.0
    stall_gather = 0.0
    for i in range(n):
        end = max(end, times[i, P_COMPUTE_END], times[i, P_WB_END])
        stall += times[i, P_STALL_DECODE]
        stall_gather += times[i, P_STALL_GATHER]
        moved = times[i, P_LOAD_END] - times[i, P_LOAD_START]
        if moved > latency:
            busy += moved - latency
        busy += times[i, P_WB_END] - times[i, P_WB_START]
    for j in range(n_cols):
        acc = 0.0
        for i in range(n):
            acc += work[i, j]
        out[N_SUM_SCALARS + j] = acc
    out[S_END] = end
    out[S_CYCLES] = out[N_SUM_SCALARS + T_CYCLES]
    out[S_STALL_DECODE] = stall
    out[S_BUSY] = busy
    out[S_GROUPS] = out[N_SUM_SCALARS + T_GROUPS]
    out[S_STALL_GATHER] = stall_gather
    return out


@njit(cache=True)
def systolic_segment_sums(rows: int, cols: int, dataflow: int, serial_drain: bool, m: int, n: int, k: int,
                          keep: int, group: int, elem_bytes: float, meta_bits: float, acc_bytes: float, chunk: int,
                          b_dram_scale: float, a_resident: bool, b_resident: bool, c_resident: bool, sparse: bool,
                          b_group: int, gather: bool, a_scale: float, fill: float, latency: float,
                          decode_rate: float, decode_latency: float, n_stages: int, gather_rate: float) -> np.ndarray:
    """``segment_sums`` of a systolic schedule, generated and run in one call (no arrays kept)."""
    work = systolic_tiles(rows, cols, dataflow, serial_drain, m, n, k, keep, group, elem_bytes, meta_bits, acc_bytes,
                          chunk, b_dram_scale, a_resident, b_resident, c_resident, sparse, b_group, gather, a_scale)
    times = run_pipeline(work, np.full(work.shape[0], fill), latency, decode_rate, decode_latency, n_stages, 0.0,
                         gather_rate)
    return segment_sums(work, times, latency)


@njit(cache=True)
def vector_segment_sums(n_tiles: int, col_in: int, sram_in: int, in_l2: bool, in_bytes: float, out_bytes: float,
                        cycles: float, rate: float, pipe_latency: float, latency: float,
                        n_stages: int) -> np.ndarray:
    """``segment_sums`` of a vector kernel's chunks, ``n_stages`` in flight, generated and run in one call (no
    arrays kept)."""
    work, xfer = vector_tiles(n_tiles, col_in, sram_in, in_l2, in_bytes, out_bytes, cycles)
    times = run_pipeline(xfer, np.full(n_tiles, rate), pipe_latency, np.inf, 0.0, n_stages, 0.0, np.inf)
    return segment_sums(work, times, latency)
