"""Published sparse-format speedups (validation/formats/, issue 18) read and scored by validate-hw.

One block of tests per source (validation/formats/README.md). Each guards the source's current figures (median
relative error, right side of 1.0x, MAE on the rows accelsim models) and states the issue's target
(median <= 20 %, >= 90 % right side, nothing fitted) as a test, strict-xfail where it is not met, with the cause.
"""

from __future__ import annotations

import csv
import importlib.util
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest
from conftest import HW, ROOT

from accelsim import load_hardware
from accelsim.analysis.gpu_validation import kernel_loop_hardware, predict_row, row_kernels, validate_hw
from accelsim.analysis.measurements import MeasurementError, parse_measurements, read_measurements
from accelsim.analysis.validation_results import RowResult, ValidationResult
from accelsim.hardware.model import hardware_from_dict
from accelsim.report.validation_text import rows_csv

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


def test_kernels_come_from_the_column_a_tag_or_a_searching_harness() -> None:
    head = HEADER.replace("format\n", "format,kernels\n")
    rows = parse_measurements(head + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm; kernels=searched,,\n"
                                     "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,,searched\n"
                                     "A100,fp16,64,64,64,,,1.0,github:bcacdwk/vllmbench@46da5ca8 x,kernel-gemm,,\n"
                                     "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,,\n", "x.csv")
    assert [r.kernels for r in rows] == ["searched", "searched", "searched", "default"]
    assert rows[0].to_dict()["kernels"] == "searched" and "kernels" not in rows[3].to_dict()
    with pytest.raises(MeasurementError, match=r"x.csv: line 2, column kernels: unknown kernels 'best'"):
        parse_measurements(head + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,,best\n", "x.csv")


def test_a_searched_row_runs_the_searched_tiles_and_says_so() -> None:
    hw = load_hardware(HW / "rtx4090-like.yaml")
    rows = parse_measurements(HEADER + "RTX 4090,fp16,512,512,512,,,1.0,s,kernel-gemm; kernels=searched,\n"
                                       "RTX 4090,fp16,512,512,512,,,1.0,s,kernel-gemm,\n", "x.csv")
    res = validate_hw(rows, {"RTX 4090": hw})
    searched, default = (r.predicted for r in res.rows)
    assert searched is not None and default is not None
    assert searched.sparse_tile[:2] == [64, 64] and default.sparse_tile == [128, 128, 64]
    assert searched.dense_cycles == default.dense_cycles and searched.sparse_cycles < default.sparse_cycles
    assert [r.kernels for r in res.rows] == ["searched", "default"]
    assert any("1 row(s) from a harness that searched" in n for n in res.notes)
    assert rows_csv(res).splitlines()[1].endswith(",searched,,native")  # c_dtype empty (the input dtype), sparse_isa


def test_c_dtypes_come_from_the_column_a_tag_or_the_harness_code() -> None:
    head = HEADER.replace("format\n", "format,c_dtype\n")
    slide = "github:bcacdwk/vllmbench@46da5ca8 x"
    rows = parse_measurements(head + "H100,int8,64,64,64,,,1.0,src,kernel-gemm,,int32/bf16\n"
                                     "H100,int8,64,64,64,,,1.0,src,kernel-gemm; c_dtype=fp32,,\n"
                                     f"H100,int8,64,64,64,,,1.0,{slide},kernel-gemm,,\n"
                                     f"H100,fp8,64,64,64,,,1.0,{slide},kernel-gemm,,\n"
                                     f"H100,bf16,64,64,64,,,1.0,{slide},kernel-gemm,,\n"
                                     "H100,int8,64,64,64,,,1.0,src,kernel-gemm,,\n", "x.csv")
    assert [r.c_dtypes for r in rows] == [("int32", "bf16"), ("fp32", "fp32"), ("int32", "bf16"), ("bf16", "bf16"),
                                          None, None]
    assert rows[2].to_dict()["c_dtypes"] == "int32/bf16" and "c_dtypes" not in rows[4].to_dict()
    with pytest.raises(MeasurementError, match=r"x.csv: line 2, column c_dtype: expected DTYPE or DENSE/SPARSE.*"
                                               r"got 'int64/bf16'"):
        parse_measurements(head + "H100,int8,64,64,64,,,1.0,src,kernel-gemm,,int64/bf16\n", "x.csv")


@pytest.mark.parametrize(("tag", "message"), [
    ("kernels=", r"unknown kernels ''"), ("timing= ;", r"unknown timing ''"), ("c_dtype=", r"got ''"),
    ("c_dtype=int32/bf16/fp16", r"got 'int32/bf16/fp16'")])
def test_a_notes_tag_without_a_valid_value_is_refused_not_skipped(tag: str, message: str) -> None:
    with pytest.raises(MeasurementError, match=rf"x.csv: line 2, column notes \(\w+=\): .*{message}"):
        parse_measurements(HEADER + f"H100,int8,64,64,64,,,1.0,src,kernel-gemm; {tag},\n", "x.csv")


def test_slidesparse_int8_rows_write_int32_c_dense_and_bf16_sparse_and_say_so() -> None:
    """cuBLASLt writes the int8 GEMM's C as int32, cuSPARSELt as bf16 (the harness's code): at 2048^3 on H100 PCIe
    the dense C is 16.8 MB, not 4.2 MB, and the dense kernel takes longer; the sparse one writes 8.4 MB."""
    hw = load_hardware(HW / "h100-pcie-like.yaml")
    slide, plain = parse_measurements(HEADER + "H100,int8,2048,2048,2048,,,1.58,github:bcacdwk/vllmbench x,"
                                               "kernel-gemm,\nH100,int8,2048,2048,2048,,,1.58,src,kernel-gemm,\n",
                                      "x.csv")
    kd, ks = row_kernels(slide, hw)
    assert (kd.c_bytes, ks.c_bytes) == (4, 2)
    assert row_kernels(plain, hw)[0].c_bytes in (None, 0, 1)  # the input dtype's bytes
    typed, untyped = predict_row(slide, hw), predict_row(plain, hw)
    assert typed.dense_cycles > untyped.dense_cycles and typed.sparse_cycles > untyped.sparse_cycles
    res = validate_hw([slide, plain], {"H100": hw})
    assert [r.c_dtype for r in res.rows] == ["int32/bf16", ""]
    assert any("1 row(s) write C as their harness did" in n and "int8 -> int32/bf16" in n for n in res.notes)
    assert rows_csv(res).splitlines()[1].endswith(",int32/bf16,native")


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

SPUTNIK_HW = FORMATS / "rtx3090-sputnik-acc16.yaml"


@pytest.fixture(scope="module")
def venom() -> ValidationResult:
    """The rows on rtx3090-like; the Sputnik rows (backend=Sputnik) on the Sputnik validation config."""
    return validate_hw(read_measurements(VENOM), {"RTX 3090": load_hardware(HW / "rtx3090-like.yaml"),
                                                  "RTX 3090@backend=Sputnik": load_hardware(SPUTNIK_HW)})


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
    """V:N:M and 2:4 rows (178 scored, none fitted; 2 rows above the 2x bound reported): median 9.0 %, 100 %
    right side, MAE 0.497 (the large-speedup V:N:M rows weigh in the MAE). rtx3090-like carries the Ada family
    fit; since the RTX 4090 rows run their searched 2:4 kernels (issue 17) it is 0.77 / 0.75, not 0.74 / 0.73
    (before: median 7.8 %, MAE 0.470)."""
    n, med, right, mae = _scored(venom, _tensor_core)
    assert n == 178 and right == 1.0
    assert med == pytest.approx(9.0, abs=1.0) and mae == pytest.approx(0.497, abs=0.05)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


@pytest.mark.parametrize(("m_group", "median_pct"), [(7, 7.1), (8, 8.9), (10, 7.7), (20, 5.4), (40, 10.3)])
def test_venom_vnm_by_m_meets_the_target(venom: ValidationResult, m_group: int, median_pct: float) -> None:
    n, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(f":{m_group}"))  # type: ignore[union-attr]
    assert n == 24 and right == 1.0 and med == pytest.approx(median_pct, abs=1.0)
    assert med <= TARGET_MEDIAN_PCT


def test_venom_24_rows(venom: ValidationResult) -> None:
    n, med, right, mae = _scored(venom, lambda r: r.format == "2:4")
    assert n == 34 and right == 1.0 and med == pytest.approx(11.0, abs=1.0) and mae == pytest.approx(0.217, abs=0.02)


def test_venom_vnm_m100_meets_the_target(venom: ValidationResult) -> None:
    """Met since C's bytes are charged once in time (engine.tensorcore.write_back_drain): 22.4 % before."""
    n, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(":100"))  # type: ignore[union-attr]
    assert n == 24 and right == 1.0
    assert med == pytest.approx(11.9, abs=1.0)
    assert med <= TARGET_MEDIAN_PCT


def test_venom_m100_guard(venom: ValidationResult) -> None:
    _, med, right, _ = _scored(venom, lambda r: _vnm(r) and r.format.endswith(":100"))  # type: ignore[union-attr]
    assert right == 1.0 and med == pytest.approx(11.9, abs=1.0)


@pytest.mark.xfail(strict=True, reason="CLASP column-vector kernels (block2x1..block8x1, tensor cores) are not "
                   "modelled: v x 1 blocks are not whole 16 x 16 MMA tiles, so accelsim runs them dense "
                   "(block_shape_misaligned, 1.0x). Their fp16-accumulate cuBLAS baseline is expressible (the Sputnik "
                   "config's macs_per_cycle.fp16 512), but Sputnik's row-gather structure per v-row vector, even with "
                   "one fitted rate per v, reaches only ~35 % median: CLASP's own kernel structure (source not read) "
                   "is missing")
def test_venom_clasp_block_rows_meet_the_target(venom: ValidationResult) -> None:
    n, med, right, _ = _scored(venom, lambda r: r.format.startswith("block"))  # type: ignore[union-attr]
    assert n == 252 and med == pytest.approx(79.8, abs=2.0) and right == pytest.approx(0.746, abs=0.01)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


def _sputnik(r: RowResult) -> bool:
    return r.format is not None and r.format.startswith("unstructured")


def test_venom_sputnik_rows_run_their_kernel(venom: ValidationResult) -> None:
    rows = [r for r in venom.rows if r.format is not None and _sputnik(r)]
    assert len(rows) == 84 and {r.hw_key for r in rows} == {"RTX 3090@backend=Sputnik"}
    assert {r.backend for r in rows} == {"Sputnik"}
    assert all(r.predicted is not None and r.predicted.path == "sparse" for r in rows)
    bindings = [r.predicted.sparse_binding for r in rows if r.predicted is not None]
    assert set(bindings) == {"compute", "memory"}  # dense rows bound by the SpMM rate, sparse ones by L2
    assert all(r.hw_key == "RTX 3090" for r in venom.rows if r.format is not None and not _sputnik(r))


def test_venom_sputnik_unstructured_rows_meet_the_target(venom: ValidationResult) -> None:
    """Sputnik's CSR SpMM on CUDA cores (engine.rowgather; validation/formats/rtx3090-sputnik-acc16.yaml, baseline
    cuBLAS with fp16 accumulation): median 10.9 %, 84/84 right side, MAE 0.066 (before, run as load-sparse-
    compute-dense on tensor cores against an fp32-accumulate baseline: 231.6 %, 28.6 %). One free number, the SpMM
    rate (23.0), fitted on the n = 4096 rows: 13.6 % there, 8.8 % on the held-back n = 8192 rows."""
    n, med, right, mae = _scored(venom, _sputnik)
    assert n == 84 and med == pytest.approx(10.9, abs=1.0) and right == 1.0
    assert mae == pytest.approx(0.066, abs=0.01)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT
    _, fit, _, _ = _scored(venom, lambda r: _sputnik(r) and r.n == 4096)
    _, held, held_right, _ = _scored(venom, lambda r: _sputnik(r) and r.n == 8192)
    assert fit == pytest.approx(13.6, abs=1.0) and held == pytest.approx(8.8, abs=1.0) and held_right == 1.0


def test_venom_sputnik_mechanism_without_the_fit() -> None:
    """The row-gather mechanism with the SpMM rate at the issue bound instead of the fitted 23 (64 MACs per cycle per
    SM: a half-to-fp32 convert and an FFMA per MAC on 128 lanes, nothing fitted): 22.1 % median, 84/84 right side."""
    rows = [r for r in read_measurements(VENOM) if r.format is not None and r.format.startswith("unstructured")]
    data = load_hardware(SPUTNIK_HW).to_dict()
    data["core"]["sparse"]["formats"]["unstructured"]["spmm_macs_per_cycle"] = 64
    res = validate_hw(rows, {"RTX 3090": hardware_from_dict(data, "<issue bound>")})
    n, med, right, _ = _scored(res, _sputnik)
    assert n == 84 and med == pytest.approx(22.1, abs=1.0) and right == 1.0


@pytest.mark.parametrize(("level", "median_pct", "right"), [(50, 10.2, 1.0), (71, 8.5, 1.0), (75, 6.2, 1.0),
                                                            (80, 10.1, 1.0), (90, 18.1, 1.0), (95, 17.4, 1.0),
                                                            (98, 10.0, 1.0)])
def test_venom_sputnik_by_sparsity(venom: ValidationResult, level: int, median_pct: float, right: float) -> None:
    """Per sparsity: 90-95 % are the weakest (the model under-predicts the large-m rows' time there, 0.6-0.8x)."""
    n, med, rs, _ = _scored(venom, lambda r: r.format == f"unstructured:{level}%")
    assert n == 12 and med == pytest.approx(median_pct, abs=1.0) and rs == pytest.approx(right)


# -- source 2: torchao SuperBlock ViTs (A100 80GB, whole model, 64x64 BSR or 2:4 on the MLP Linears) -------

def _e2e_module() -> ModuleType:
    path = ROOT / "benchmarks" / "format_e2e_validation.py"
    spec = importlib.util.spec_from_file_location("format_e2e_validation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def torchao() -> list[tuple[dict[str, str], float]]:
    """Every row of the source with its predicted whole-model speedup (benchmarks/format_e2e_validation.py:
    vit-h14 / vit-b16 at batch 256 on a100-like, only fc1 / fc2 in the row's format; nothing fitted)."""
    e2e = _e2e_module()
    hw = load_hardware(HW / "a100-like.yaml")
    return [(row, e2e.predict(row, hw)) for row in csv.DictReader(e2e.SOURCE.open())]


def _e2e_metrics(pairs: list[tuple[dict[str, str], float]]) -> tuple[int, float, float, float]:
    p = np.array([pred for _, pred in pairs])
    m = np.array([float(row["speedup"]) for row, _ in pairs])
    return len(p), float(np.median(abs(p - m) / m) * 100), float(((p > 1) == (m > 1)).mean()), float(abs(p - m).mean())


def test_torchao_rows_are_whole_model_rows_without_shapes() -> None:
    """validate-hw refuses them (m / n / k empty) with the line and column: they are scored whole-model, by
    benchmarks/format_e2e_validation.py."""
    with pytest.raises(MeasurementError, match=r"line 2, column m.*is empty"):
        read_measurements(FORMATS / "torchao_superblock_vit_a100.csv")


def test_torchao_bf16_rows_meet_the_target(torchao: list[tuple[dict[str, str], float]]) -> None:
    """bf16 (6 block64x64 rows at 80 / 84 / 90 %, 2 rows 2:4): median 13.6 %, 8/8 right side, MAE 0.149; the model
    over-predicts the 80 % and 2:4 rows by 13-18 % and lands the 90 % rows within 7 %."""
    n, med, right, mae = _e2e_metrics([(r, p) for r, p in torchao if r["dtype"] == "bf16"])
    assert n == 8 and right == 1.0 and med == pytest.approx(13.6, abs=1.0) and mae == pytest.approx(0.149, abs=0.02)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


def test_torchao_block_rows_gain_with_sparsity(torchao: list[tuple[dict[str, str], float]]) -> None:
    for model in ("vit_h_14", "vit_b_16"):
        preds = [p for r, p in torchao if r["dtype"] == "bf16" and model in r["notes"] and r["format"] != "2:4"]
        assert preds == sorted(preds) and len(preds) == 3


def test_torchao_int8_rows_meet_the_target(torchao: list[tuple[dict[str, str], float]]) -> None:
    """int8 (14 rows) with torchao's dynamic quantization modelled (accelsim.workloads.quantize: the MLP Linears
    int8, a per-call quantize layer before each, the dequantize fused, everything else bf16; the 2:4 row quantizes
    fc1 only, as superblock's accelerate_with_sparsity does): median 11.4 %, 14/14 right side, MAE 0.133 (the
    all-int8 workload it replaces: median 32.5 %, MAE 0.340; with dequantize unfused, not the default and not
    chosen here: median 5.5 %, MAE 0.070)."""
    n, med, right, mae = _e2e_metrics([(r, p) for r, p in torchao if r["dtype"] == "int8"])
    assert n == 14 and right == 1.0 and med == pytest.approx(11.4, abs=1.0) and mae == pytest.approx(0.133, abs=0.02)
    assert med <= TARGET_MEDIAN_PCT and right >= TARGET_RIGHT


def test_torchao_int8_dense_model_is_faster_than_bf16_but_less_than_measured() -> None:
    """The int8-quantized dense model over the bf16 one: measured 0.928 (ViT-H, 454.6 / 489.6 ms) and 0.992
    (ViT-B); predicted with the dequantize fused 0.800 / 0.861, unfused 0.923 / 1.039 (with the shared-memory
    operand feed; before it 0.803 / 0.864 and 0.928 / 1.045): ViT-B's measured run sits between the two,
    ViT-H's just above the unfused one (which torch.compile kernels fuse the rescale is not known per shape)."""
    e2e = _e2e_module()
    a100_hw = load_hardware(HW / "a100-like.yaml")
    fused = [e2e.dense_ratio(m, a100_hw) for m in ("vit_h_14", "vit_b_16")]
    unfused = [e2e.dense_ratio(m, a100_hw, "unfused") for m in ("vit_h_14", "vit_b_16")]
    assert fused == pytest.approx([0.800, 0.861], abs=0.01) and unfused == pytest.approx([0.923, 1.039], abs=0.01)
    assert fused[0] < unfused[0] < 0.928 and fused[1] < 0.992 < unfused[1]


def test_torchao_all_rows_guard(torchao: list[tuple[dict[str, str], float]]) -> None:
    n, med, right, mae = _e2e_metrics(torchao)
    assert n == 22 and right == 1.0 and med == pytest.approx(12.0, abs=1.5) and mae == pytest.approx(0.130, abs=0.03)


# -- source 3: unstructured sparsity on tensor cores (Flash-LLM, SpInfer) ----------------------------------

SPINFER_ISSUE = FORMATS / "spinfer_issue1_rtx4090.csv"


@pytest.fixture(scope="module")
def spinfer_issue() -> ValidationResult:
    """The two rows of one RTX 4090 console output (SpInfer and Flash-LLM at 40 %, 8192 x 8 x 29568), each on the
    config of its kernel's index: SpInfer's bitmap (validation/formats/rtx4090-spinfer-bitmap.yaml), Flash-LLM's
    Tiled-CSL (rtx4090-like's family entry). Nothing fitted."""
    return validate_hw(read_measurements(SPINFER_ISSUE), {
        "RTX 4090@kernel SpInfer": load_hardware(FORMATS / "rtx4090-spinfer-bitmap.yaml"),
        "RTX 4090@kernel FlashLLM_v1": load_hardware(HW / "rtx4090-like.yaml")})


def test_unstructured_spot_check_rtx4090(spinfer_issue: ValidationResult) -> None:
    """SpInfer 1.34x measured, 1.507x predicted (+12.5 %); Flash-LLM 0.858x measured, 0.834x predicted (-2.8 %);
    both on the right side of 1.0x, both timed as kernel loops. The dense time is 20 % long in the model (536 us
    measured: cuBLAS streams A at 904 GB/s, 90 % of 1008 GB/s; the config sustains 75 %); the speedup cancels it.
    SpInfer's own stream reaches 80 % (321 MB in 400 us), which the shared sustained fraction does not see."""
    by_kernel = {r.source.rsplit("kernel ", 1)[1]: r for r in spinfer_issue.rows}
    spinfer, flash = by_kernel["SpInfer"], by_kernel["FlashLLM_v1"]
    assert spinfer.scored and flash.scored and spinfer.right_side and flash.right_side
    assert {spinfer.timing, flash.timing} == {"kernel-loop"}
    assert spinfer.predicted is not None and flash.predicted is not None
    assert spinfer.predicted.speedup == pytest.approx(1.507, abs=0.01)
    assert flash.predicted.speedup == pytest.approx(0.834, abs=0.01)
    assert spinfer.ape == pytest.approx(12.5, abs=1.0) and flash.ape == pytest.approx(2.8, abs=1.0)


def test_the_index_encoding_decides_the_side_of_one_at_40_percent() -> None:
    """Same row, same GPU: with Tiled-CSL's 4 B per nonzero (60 % dense: 2.4 B per position, more than dense fp16's
    2 B) the kernel is slower than cuBLAS; with the bitmap (1.2 + 0.125 B per position) it is faster."""
    (row,) = [r for r in read_measurements(SPINFER_ISSUE) if r.source.endswith("kernel SpInfer")]
    csl = predict_row(row, load_hardware(HW / "rtx4090-like.yaml"), sparsity="unstructured:40%")
    bitmap = predict_row(row, load_hardware(FORMATS / "rtx4090-spinfer-bitmap.yaml"), sparsity="unstructured:40%")
    assert csl.speedup < 1.0 < bitmap.speedup
    assert csl.dense_cycles == bitmap.dense_cycles


@pytest.mark.xfail(strict=True, reason="no published per-shape table of an unstructured-on-tensor-core kernel "
                   "against cuBLAS was found (validation/formats/README.md lists every place searched): Flash-LLM's "
                   "1.4x / 1.7x / 2.1x are aggregates and its paper / SpInfer's kernel figures are bar charts, the "
                   "artifacts (Flash-LLM, SpInfer, SMaT, DTC-SpMM) ship scripts without results, and the re-run CSVs "
                   "found are not physical or name no GPU; the one usable console output (SpInfer issue #1, RTX "
                   "4090) gives two rows of one shape, a spot check, not a table")
def test_an_unstructured_tensor_core_table_is_scored_per_shape() -> None:
    rows = read_measurements(SPINFER_ISSUE)
    assert len({(r.m, r.n, r.k, r.format) for r in rows}) >= 10  # a table: many shapes and sparsities


def test_flashllm_blog_rows_are_aggregates_without_shapes() -> None:
    with pytest.raises(MeasurementError, match=r"line 2, column m.*is empty"):
        read_measurements(FORMATS / "flashllm_blog_a100.csv")


def test_validation_csv_echoes_format_and_timing(venom: ValidationResult) -> None:
    lines = rows_csv(venom).splitlines()
    assert lines[0].endswith(",format,timing,kernels,c_dtype,sparse_isa")
    assert lines[1].endswith(",2:4,kernel-loop,default,,native")
