"""Published sparse-format speedups (validation/formats/, issue 18) read and scored by validate-hw.

One block of tests per source (validation/formats/README.md). Each guards the source's current figures (median
relative error, right side of 1.0x, MAE on the rows accelsim models) and states the issue's target
(median <= 20 %, >= 90 % right side, nothing fitted) as a test, strict-xfail where it is not met, with the cause.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from conftest import HW, ROOT

from accelsim import load_hardware
from accelsim.analysis.gpu_validation import kernel_loop_hardware, predict_row, validate_hw
from accelsim.analysis.measurements import MeasurementError, parse_measurements, read_measurements
from accelsim.analysis.validation_results import RowResult, ValidationResult
from accelsim.hardware.model import hardware_from_dict

FORMATS = ROOT / "validation" / "formats"
VENOM = FORMATS / "venom_spatha_rtx3090.csv"
HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes,format\n"
TARGET_MEDIAN_PCT, TARGET_RIGHT = 20.0, 0.9


def test_the_format_column_is_read_and_optional() -> None:
    rows = parse_measurements(HEADER + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,64:2:8\n"
                                       "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,\n", "x.csv")
    assert [r.format for r in rows] == ["64:2:8", None]
    assert "format" not in rows[1].to_dict() and rows[0].to_dict()["format"] == "64:2:8"


# -- the timing attribute ------------------------------------------------------------------------------

def test_timing_comes_from_the_column_or_a_notes_tag_and_defaults_to_framework() -> None:
    rows = parse_measurements(HEADER.replace("format\n", "format,timing\n")
                              + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm; timing=kernel-loop,,\n"
                                "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,,kernel-loop\n"
                                "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,,\n", "x.csv")
    assert [r.timing for r in rows] == ["kernel-loop", "kernel-loop", "framework"]
    assert rows[0].to_dict()["timing"] == "kernel-loop" and "timing" not in rows[2].to_dict()
    with pytest.raises(MeasurementError, match=r"x.csv: line 2, column notes \(timing=\).*unknown timing 'cudagraph'"):
        parse_measurements(HEADER + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm; timing=cudagraph,\n", "x.csv")


def test_a_kernel_loop_row_has_no_fixed_launch_cost_and_a_framework_row_keeps_it() -> None:
    hw = load_hardware(HW / "rtx3090-like.yaml")
    (loop, frame) = parse_measurements(HEADER + "RTX 3090,fp16,768,4096,768,,,9.0,s,kernel-gemm; timing=kernel-loop,"
                                                "128:2:100\nRTX 3090,fp16,768,4096,768,,,9.0,s,kernel-gemm,128:2:100\n",
                                       "x.csv")
    res = validate_hw([loop, frame], {"RTX 3090": hw})
    p_loop, p_frame = (r.predicted for r in res.rows)
    assert p_loop is not None and p_frame is not None
    assert (p_loop.dense_launch_cycles, p_loop.sparse_launch_cycles) == (0, 0)
    assert (p_frame.dense_launch_cycles, p_frame.sparse_launch_cycles) == (hw.launch_overhead_cycles.dense,
                                                                           hw.launch_overhead_cycles.sparse)
    assert p_loop.sparse_cycles == p_frame.sparse_cycles - hw.launch_overhead_cycles.sparse  # only the fixed cost
    assert [r.timing for r in res.rows] == ["kernel-loop", "framework"]
    assert any("1 row(s) timed as a back-to-back kernel loop" in n for n in res.notes)
    assert kernel_loop_hardware(hw).core == hw.core  # nothing else changes


def test_vnm_waves_run_back_to_back_when_a_core_holds_two_or_more_ctas() -> None:
    """128:2:100 on 1024 x 8192 x 4096 (6 k-steps per CTA, memory-bound): with the default residency (as many
    CTAs as shared memory holds) the next CTA's loads overlap the current one's write-back; resident_ctas = 1
    pays a prologue and a write-back per wave. Same DRAM bytes either way (the same waves)."""
    hw = load_hardware(HW / "rtx3090-like.yaml")
    d = hw.to_dict()
    assert "resident_ctas" not in d["core"]["sparse"]["vnm"]  # absent: left out of the echo
    d["core"]["sparse"]["vnm"]["resident_ctas"] = 1
    one = hardware_from_dict(d, "<one>")
    (row,) = parse_measurements(HEADER + "RTX 3090,fp16,1024,8192,4096,,,26.5,s,kernel-gemm,128:2:100\n", "x.csv")
    fast, slow = predict_row(row, hw, sparsity="128:2:100"), predict_row(row, one, sparsity="128:2:100")
    assert fast.sparse_cycles < 0.95 * slow.sparse_cycles
    assert fast.dense_cycles == slow.dense_cycles


# -- source 1: the VENOM / Spatha artifact (RTX 3090, fp16) ---------------------------------------------

@pytest.fixture(scope="module")
def venom() -> ValidationResult:
    return validate_hw(read_measurements(VENOM), {"RTX 3090": load_hardware(HW / "rtx3090-like.yaml")})


def _scored(res: ValidationResult, keep: Callable[[RowResult], bool]) -> tuple[int, float, float, float]:
    rows = [r for r in res.rows if r.scored and r.format is not None and keep(r)]
    ape = np.array([r.ape for r in rows])
    return (len(rows), float(np.median(ape)), float(np.mean([r.right_side for r in rows])),
            float(np.mean([r.abs_error for r in rows])))


def _vnm(r: RowResult) -> bool:
    return r.format is not None and r.format.count(":") == 2


def _tensor_core(r: RowResult) -> bool:  # the kernels accelsim models: Spatha V:N:M, Spatha / cuSPARSELt 2:4
    return _vnm(r) or r.format == "2:4"


def test_venom_every_row_is_timed_as_a_kernel_loop(venom: ValidationResult) -> None:
    assert {r.timing for r in venom.rows} == {"kernel-loop"}
    assert all(r.predicted is None or r.predicted.sparse_launch_cycles == 0 for r in venom.rows)


def test_venom_tensor_core_rows_meet_the_target(venom: ValidationResult) -> None:
    """V:N:M and 2:4 rows (178 scored, none fitted; 2 rows above the 2x bound reported): median 11.2 %, 100 %
    right side, MAE 0.751 (the large-speedup V:N:M rows weigh in the MAE)."""
    n, med, right, mae = _scored(venom, _tensor_core)
    assert n == 178 and right == 1.0
    assert med == pytest.approx(11.2, abs=1.0) and mae == pytest.approx(0.751, abs=0.05)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


@pytest.mark.parametrize(("m_group", "median_pct"), [(7, 8.5), (8, 7.1), (10, 6.4), (20, 8.6), (40, 18.7)])
def test_venom_vnm_by_m_meets_the_target(venom: ValidationResult, m_group: int, median_pct: float) -> None:
    n, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(f":{m_group}"))  # type: ignore[union-attr]
    assert n == 24 and right == 1.0 and med == pytest.approx(median_pct, abs=1.0)
    assert med <= TARGET_MEDIAN_PCT


def test_venom_24_rows(venom: ValidationResult) -> None:
    n, med, right, mae = _scored(venom, lambda r: r.format == "2:4")
    assert n == 34 and right == 1.0 and med == pytest.approx(12.4, abs=1.0) and mae == pytest.approx(0.229, abs=0.02)


@pytest.mark.xfail(strict=True, reason="M = 100 under-predicted (median 22.4 %): at 98 % sparsity the Spatha kernel "
                   "streams C at the DRAM rate, while each core's C write-back into the write-back L2 and its loads "
                   "(which carry the drain of C to DRAM) share one memory channel in the tile pipeline, so C's "
                   "bytes are charged twice in time")
def test_venom_vnm_m100_meets_the_target(venom: ValidationResult) -> None:
    n, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(":100"))  # type: ignore[union-attr]
    assert n == 24 and right == 1.0
    assert med == pytest.approx(22.4, abs=1.0)  # the guard inside the xfail: fails the test only if it moves
    assert med <= TARGET_MEDIAN_PCT


def test_venom_m100_guard(venom: ValidationResult) -> None:
    _, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(":100"))  # type: ignore[union-attr]
    assert right == 1.0 and med == pytest.approx(22.4, abs=1.0)


@pytest.mark.xfail(strict=True, reason="CLASP column-vector kernels (block2x1..block8x1, tensor cores) are not "
                   "modelled: v x 1 blocks are not whole 16 x 16 MMA tiles, so accelsim runs them dense "
                   "(block_shape_misaligned, 1.0x), and their cuBLAS baseline runs with fp16 accumulation (twice "
                   "the fp32-accumulate rate the GeForce config holds)")
def test_venom_clasp_block_rows_meet_the_target(venom: ValidationResult) -> None:
    n, med, right, _ = _scored(venom, lambda r: r.format.startswith("block"))  # type: ignore[union-attr]
    assert n == 252 and med == pytest.approx(79.8, abs=2.0) and right == pytest.approx(0.746, abs=0.01)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


@pytest.mark.xfail(strict=True, reason="Sputnik runs unstructured SpMM on CUDA cores; rtx3090-like declares "
                   "unstructured as load-sparse-compute-dense on the tensor cores (Flash-LLM's way), and the rows' "
                   "cuBLAS baseline runs with fp16 accumulation")
def test_venom_sputnik_unstructured_rows_meet_the_target(venom: ValidationResult) -> None:
    n, med, right, _ = _scored(venom, lambda r: r.format.startswith("unstructured"))  # type: ignore[union-attr]
    assert n == 84 and med == pytest.approx(231.6, abs=5.0) and right == pytest.approx(0.286, abs=0.01)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


# -- sources 2 and 3: whole-model and aggregate figures (no GEMM shapes) -----------------------------------

@pytest.mark.parametrize("name", ["torchao_superblock_vit_a100.csv", "flashllm_blog_a100.csv"])
def test_sources_without_shapes_are_not_per_shape_rows(name: str) -> None:
    """The torchao SuperBlock ViT rows (whole-model latency) and Flash-LLM's three blog figures (one number per
    sparsity over many shapes) have empty m / n / k: validate-hw refuses them with the line and column, so they
    cannot be scored per shape (their target is open: no per-shape block-sparse or unstructured-on-tensor-core
    table was found)."""
    with pytest.raises(MeasurementError, match=r"line 2, column m.*is empty"):
        read_measurements(FORMATS / name)
