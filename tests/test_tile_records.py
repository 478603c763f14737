"""Per-tile records: the compiled filler (engine.tilerecords) writes what the field-by-field numpy fill wrote."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import HW, WL

from accelsim import load_hardware, load_workload
from accelsim.engine import EngineHardware, _records, _segments, _totals
from accelsim.engine import pipeline as pl
from accelsim.engine import tiling as tl
from accelsim.engine.segment import Segment
from accelsim.lowering import lower
from accelsim.results import TILE_DTYPE

_WORK = (("compute_cycles", tl.T_CYCLES), ("decode_groups", tl.T_GROUPS), ("dram_a_values", tl.T_DRAM_A_VALUES),
         ("dram_a_metadata", tl.T_DRAM_A_META), ("dram_b", tl.T_DRAM_B), ("dram_c_read", tl.T_DRAM_C_READ),
         ("dram_c_write", tl.T_DRAM_C_WRITE), ("sram_a_values", tl.T_SRAM_A_VALUES),
         ("sram_a_metadata", tl.T_SRAM_A_META), ("sram_b", tl.T_SRAM_B), ("sram_c", tl.T_SRAM_C),
         ("gather_rows", tl.T_GATHER))
_TIME = (("load_start", pl.P_LOAD_START), ("load_end", pl.P_LOAD_END), ("decode_start", pl.P_DECODE_START),
         ("decode_end", pl.P_DECODE_END), ("compute_start", pl.P_COMPUTE_START), ("compute_end", pl.P_COMPUTE_END),
         ("wb_start", pl.P_WB_START), ("wb_end", pl.P_WB_END), ("gather_start", pl.P_GATHER_START),
         ("gather_end", pl.P_GATHER_END))


def _numpy_records(segments: list[Segment], launch: int) -> np.ndarray:
    """The records as the engine filled them before the compiled filler, column by column."""
    tiled = [(s, s.work, s.times) for s in segments if s.work is not None and s.times is not None]
    n = sum(len(work) for _, work, _ in tiled)
    rec = np.zeros(n, dtype=TILE_DTYPE)
    rec["tile"] = np.arange(n)
    i, offset = 0, float(launch)
    for s, work, times in tiled:
        j = i + len(work)
        one = s.active == 1 and s.count == 1
        rec["fold_r"][i:j] = work[:, tl.T_FOLD_R] if one else 0
        rec["fold_c"][i:j] = work[:, tl.T_FOLD_C] if one else 0
        rec["chunk"][i:j] = work[:, tl.T_CHUNK]
        rec["wave_class"][i:j] = s.wave_class
        rec["wave_count"][i:j] = s.count
        rec["active_cores"][i:j] = s.active
        for name, col in _TIME:
            rec[name][i:j] = times[:, col] + offset
        rec["stall_memory"][i:j] = times[:, pl.P_STALL_MEMORY]
        rec["stall_decode"][i:j] = times[:, pl.P_STALL_DECODE]
        rec["stall_gather"][i:j] = times[:, pl.P_STALL_GATHER]
        rec["binding"][i:j] = times[:, pl.P_BINDING]
        for name, col in _WORK:
            rec[name][i:j] = work[:, col]
        offset += s.end
        i = j
    return rec


@pytest.mark.parametrize(("hw_name", "sparsity"), [("tpu-like", "2:4"), ("a100-like", "2:4"), ("h100-like", "dense"),
                                                   ("flex-nm", "64:2:8"), ("a100-like", "unstructured:70%")])
def test_compiled_records_are_the_numpy_fill_byte_for_byte(hw_name: str, sparsity: str) -> None:
    hw = load_hardware(HW / f"{hw_name}.yaml")
    eh = EngineHardware(hw)
    checked = 0
    for kernel in lower(load_workload(WL / "bert-base.yaml", {"batch": 1, "seq": 64}), hw, sparsity):
        segments, _, _, launch = _segments(kernel, eh, "<hardware>", detail=True)
        totals = _totals(kernel, eh, segments, launch)
        got = _records(segments, totals.launch)
        if got is None:
            continue
        assert got.tobytes() == _numpy_records(segments, totals.launch).tobytes(), kernel.name
        checked += len(segments)
    assert checked
