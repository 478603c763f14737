"""Tile generation: split a kernel into SRAM tiles that follow the array's fold schedule.

A systolic kernel is a sequence of folds (SCALE-Sim semantics). Each fold's stream is cut
into chunks that fit half an SRAM buffer (double buffering); a tile is one (fold, chunk).
The fold's fill/drain overhead is charged once, on its first and last chunk, so SRAM tiling
changes data movement, never the array's skew.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# Columns of the tile-work array produced here and consumed by the pipeline.
T_FOLD_R, T_FOLD_C, T_CHUNK, T_CYCLES, T_GROUPS = 0, 1, 2, 3, 4
T_DRAM_A_VALUES, T_DRAM_A_META, T_DRAM_B, T_DRAM_C_READ, T_DRAM_C_WRITE = 5, 6, 7, 8, 9
T_SRAM_A_VALUES, T_SRAM_A_META, T_SRAM_B, T_SRAM_C = 10, 11, 12, 13
T_GATHER = 14  # rows of B gathered by index (V:N:M's selected columns, block-sparse block columns)
N_TILE_COLS = 15

DATAFLOW_CODE = {"os": 0, "ws": 1, "is": 2}


@njit(cache=True)
def _b_rows(x: int, keep: int, b_group: int, cap: int) -> int:
    """Rows of B the first x compressed positions of A need: ``b_group`` per group of ``keep`` (the group's
    dense rows for N:M; V:N:M's 4 gathered rows; one per position for block sparsity), at most ``cap``."""
    return min(cap, -(-x // keep) * b_group)


@njit(cache=True)
def _groups(x0: int, x1: int, keep: int) -> int:
    """N:M groups touched by compressed positions [x0, x1)."""
    if x1 <= x0:
        return 0
    return (x1 - 1) // keep - x0 // keep + 1


@njit(cache=True)
def vector_tiles(n_tiles: int, col_in: int, sram_in: int, in_l2: bool, in_bytes: float, out_bytes: float,
                 cycles: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-chunk work of element-wise ops on the vector unit, and what each chunk transfers.

    Each chunk reads ``in_bytes`` into SRAM column ``sram_in`` (from DRAM column ``col_in`` unless the
    input sits in L2), takes ``cycles`` and writes ``out_bytes`` back.
    """
    work = np.zeros((n_tiles, N_TILE_COLS), dtype=np.float64)
    xfer = np.zeros((n_tiles, N_TILE_COLS), dtype=np.float64)
    for i in range(n_tiles):
        for w in (work, xfer):
            w[i, T_CHUNK] = i
            w[i, sram_in] = in_bytes
            w[i, T_SRAM_C] = out_bytes
            w[i, T_CYCLES] = cycles
        xfer[i, col_in] = in_bytes
        xfer[i, T_DRAM_C_WRITE] = out_bytes
        if not in_l2:
            work[i, col_in] = in_bytes
            work[i, T_DRAM_C_WRITE] = out_bytes
    return work, xfer


@njit(cache=True)
def systolic_tiles(rows: int, cols: int, dataflow: int, serial_drain: bool,
                   m: int, n: int, k: int, keep: int, group: int, elem_bytes: float,
                   meta_bits: float, acc_bytes: float, chunk: int, b_dram_scale: float,
                   a_resident: bool, b_resident: bool, c_resident: bool, sparse: bool, b_group: int,
                   gather: bool, a_scale: float) -> np.ndarray:
    """Per-tile work of one GEMM on an R x C systolic array (one row per (fold, chunk)).

    ``b_group``: rows of B one group of A needs (``group`` for N:M); ``gather``: those rows are gathered by
    index (V:N:M, block sparsity), counted per tile in T_GATHER. ``a_scale``: bytes of A (values and
    metadata) moved per position the folds hold, as stored (block folds hold zero blocks that are not stored).
    """
    k_eff = -(-k // group) * keep
    b_cap = min(k, -(-k // group) * b_group)
    a_elem = elem_bytes * a_scale
    meta_b = meta_bits / 8.0 * a_scale if sparse else 0.0
    if dataflow == 0:  # os: rows <- n (pixels), cols <- m (filters), stream k
        s_r, s_c, t_len = n, m, k_eff
    elif dataflow == 1:  # ws: rows <- k, cols <- m, stream n
        s_r, s_c, t_len = k_eff, m, n
    else:  # is: rows <- k, cols <- n, stream m
        s_r, s_c, t_len = k_eff, n, m
    f_r = -(-s_r // rows)
    f_c = -(-s_c // cols)
    n_chunks = -(-t_len // chunk)
    out = np.zeros((f_r * f_c * n_chunks, N_TILE_COLS), dtype=np.float64)
    skew = rows + cols - 2
    t = 0
    for j in range(f_c):
        sc = min(cols, s_c - j * cols)
        for i in range(f_r):
            sr = min(rows, s_r - i * rows)
            r0 = i * rows
            for c in range(n_chunks):
                x0 = c * chunk
                tl = min(chunk, t_len - x0)
                x1 = x0 + tl
                last = c == n_chunks - 1
                row = out[t]
                row[T_FOLD_R] = i
                row[T_FOLD_C] = j
                row[T_CHUNK] = c
                if dataflow == 0:
                    cyc = tl
                    if last:
                        cyc += skew + (rows if serial_drain else 0)
                    a_vals = sc * tl * a_elem
                    a_meta = sc * tl * meta_b
                    groups = sc * _groups(x0, x1, keep) if sparse else 0
                    b_rows = _b_rows(x1, keep, b_group, b_cap) - _b_rows(x0, keep, b_group, b_cap)
                    b = b_rows * sr * elem_bytes
                    row[T_SRAM_A_VALUES] = a_vals
                    row[T_SRAM_A_META] = a_meta
                    row[T_SRAM_B] = b
                    if not (a_resident and i > 0):
                        row[T_DRAM_A_VALUES] = a_vals
                        row[T_DRAM_A_META] = a_meta
                    if not (b_resident and j > 0):
                        row[T_DRAM_B] = b * b_dram_scale
                    if last:
                        row[T_SRAM_C] = sr * sc * elem_bytes
                        row[T_DRAM_C_WRITE] = sr * sc * elem_bytes
                else:
                    cyc = tl
                    if c == 0:
                        cyc += rows  # preload of the stationary operand
                    if last:
                        cyc += skew
                    b_rows = _b_rows(r0 + sr, keep, b_group, b_cap) - _b_rows(r0, keep, b_group, b_cap)
                    if dataflow == 1:  # A stationary (sr x sc), B streams b_rows x tl
                        if c == 0:
                            a_vals = sr * sc * a_elem
                            a_meta = sr * sc * meta_b
                            groups = sc * _groups(r0, r0 + sr, keep) if sparse else 0
                            row[T_SRAM_A_VALUES] = a_vals
                            row[T_SRAM_A_META] = a_meta
                            row[T_DRAM_A_VALUES] = a_vals
                            row[T_DRAM_A_META] = a_meta
                        else:
                            groups = 0
                        b = b_rows * tl * elem_bytes
                        row[T_SRAM_B] = b
                        if not (b_resident and j > 0):
                            row[T_DRAM_B] = b * b_dram_scale
                    else:  # is: B stationary (b_rows x sc), A streams tl rows x sr
                        if c == 0:
                            b = b_rows * sc * elem_bytes
                            row[T_SRAM_B] = b
                            row[T_DRAM_B] = b * b_dram_scale
                        a_vals = tl * sr * a_elem
                        a_meta = tl * sr * meta_b
                        groups = tl * _groups(r0, r0 + sr, keep) if sparse else 0
                        row[T_SRAM_A_VALUES] = a_vals
                        row[T_SRAM_A_META] = a_meta
                        if not (a_resident and j > 0):
                            row[T_DRAM_A_VALUES] = a_vals
                            row[T_DRAM_A_META] = a_meta
                    outputs = sc * tl
                    final = i == f_r - 1
                    if final:
                        row[T_SRAM_C] = outputs * elem_bytes
                        row[T_DRAM_C_WRITE] = outputs * elem_bytes
                    else:
                        row[T_SRAM_C] = outputs * acc_bytes
                        if not c_resident:
                            row[T_DRAM_C_WRITE] = outputs * acc_bytes
                    if i > 0 and not c_resident:
                        row[T_DRAM_C_READ] = outputs * acc_bytes
                row[T_CYCLES] = cyc
                row[T_GROUPS] = groups
                if gather:
                    row[T_GATHER] = b_rows
                t += 1
    return out


def systolic_plan(rows: int, cols: int, dataflow: str, m: int, n: int, k: int, keep: int, group: int,
                  elem_bytes: float, meta_bits: float, acc_bytes: int, caps: dict[str, int],
                  double_buffered: bool, b_elements: int, b_group: int = 0, a_scale: float = 1.0) -> dict:
    """Choose the stream chunk length and operand residency for one GEMM.

    Returns a dict with ``chunk`` and residency flags, or ``infeasible`` = (buffer, needed, have).
    ``a_scale``: A's bytes per held position as stored (``systolic_tiles``): what the filter buffer holds.
    """
    sparse = keep < group
    k_eff = -(-k // group) * keep
    meta_b = meta_bits / 8 if sparse else 0.0
    a_elem = (elem_bytes + meta_b) * a_scale  # bytes of A (values + metadata) per held position
    per = {b: (caps[b] // 2 if double_buffered else caps[b]) for b in caps}
    expand = (b_group or group) / keep  # rows of B per compressed position of A
    if dataflow == "os":
        t_len = k_eff
        fixed: dict[str, float] = {"ofmap": min(rows, n) * min(cols, m) * elem_bytes}
        per_t: dict[str, float] = {"filter": min(cols, m) * a_elem,
                                   "ifmap": min(rows, n) * expand * elem_bytes}
    else:
        sr = min(rows, k_eff)
        b_rows = min(k, math.ceil(sr * expand))
        t_len = n if dataflow == "ws" else m
        sc = min(cols, m if dataflow == "ws" else n)
        if dataflow == "ws":
            fixed = {"filter": sr * sc * a_elem}
            per_t = {"ifmap": b_rows * elem_bytes, "ofmap": sc * acc_bytes}
        else:
            fixed = {"ifmap": b_rows * sc * elem_bytes}
            per_t = {"filter": sr * a_elem, "ofmap": sc * acc_bytes}
    for buf, need in fixed.items():
        if need > per[buf]:
            return {"infeasible": (buf, math.ceil(need + max(per_t.get(buf, 0), 0)), per[buf])}
    chunk = t_len
    for buf, unit in per_t.items():
        room = per[buf] - fixed.get(buf, 0)
        fit = int(room // unit) if unit > 0 else t_len
        if fit < 1:
            return {"infeasible": (buf, math.ceil(fixed.get(buf, 0) + unit), per[buf])}
        chunk = min(chunk, fit)
    if dataflow == "os" and sparse and chunk >= keep:
        chunk -= chunk % keep
    a_bytes = m * k_eff * a_elem
    if dataflow == "os":
        a_resident = min(cols, m) * k_eff * a_elem <= caps["filter"]
    else:
        a_resident = a_bytes <= caps["filter"]
    b_resident = b_elements * elem_bytes <= caps["ifmap"]
    c_block = min(cols, m) * n if dataflow == "ws" else m * min(cols, n)
    c_resident = dataflow != "os" and c_block * acc_bytes <= caps["ofmap"]
    return {"chunk": max(1, chunk), "a_resident": a_resident, "b_resident": b_resident,
            "c_resident": c_resident, "t_len": t_len}


def a_dram_reads(rows: int, cols: int, dataflow: str, n: int, a_resident: bool) -> int:
    """Times ``systolic_tiles`` reads all of A from DRAM: once when it stays in the filter buffer or the array
    holds it (ws: each fold's block is loaded once); else once per fold of the other dimension (os: row folds
    over n; is: column folds over n)."""
    if a_resident or dataflow == "ws":
        return 1
    return -(-n // (rows if dataflow == "os" else cols))
