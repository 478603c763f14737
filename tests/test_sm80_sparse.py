"""2:4 kernels compiled for sm80 run on a later part (a measurement's ``sparse_isa: sm80``, issue 17).

CUTLASS's sparse GEMMs on H100 were Ampere mma.sp kernels recompiled for Hopper (NVIDIA/cutlass#1335: 0.62x
measured, bf16 768 x 4096 x 4096). Their operands reach the tensor cores through the shared-memory banks, which
feed an H100 SM's doubled 2:4 rate only partly: the Hopper configs describe those kernels
(``core.compute.sm80_sparse``) and validation runs such a row's 2:4 GEMM on them.
"""

from __future__ import annotations

import pytest
from conftest import HW, REFERENCE

from accelsim import load_hardware
from accelsim.analysis.calibration.fitting import body_tables
from accelsim.analysis.gpu_validation import sm80_sparse_hardware, validate_hw
from accelsim.analysis.measurements import MeasurementError, parse_measurements, read_measurements
from accelsim.errors import ConfigError
from accelsim.hardware.model import hardware_from_dict
from accelsim.report.validation_text import rows_csv

HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"
CUTLASS_1335 = "https://github.com/NVIDIA/cutlass/issues/1335"
ROW = "H100,bf16,768,4096,4096,45.747,74.246,0.6162"


def _rows(*notes: str, source: str = "src") -> list:
    return parse_measurements(HEADER + "".join(f"{ROW},{source},kernel-gemm{n}\n" for n in notes), "x.csv")


def test_the_isa_comes_from_a_column_a_tag_or_the_documented_source() -> None:
    tagged, plain = _rows("; sparse_isa=sm80", "")
    assert (tagged.sparse_isa, plain.sparse_isa) == ("sm80", "native")
    assert tagged.to_dict()["sparse_isa"] == "sm80" and "sparse_isa" not in plain.to_dict()
    column = parse_measurements(HEADER.replace("notes\n", "notes,sparse_isa\n") + f"{ROW},src,kernel-gemm,SM80\n",
                                "x.csv")
    assert column[0].sparse_isa == "sm80"
    (issue,) = _rows("", source=CUTLASS_1335)  # the maintainer's answer: Ampere kernels recompiled for Hopper
    assert (issue.sparse_isa, issue.kernels) == ("sm80", "searched")  # the profiler's best kernel of each
    reference = {r.line: r for r in read_measurements(REFERENCE / "gpu" / "a100_h100_rtx4090_more_24_speedups.csv")}
    assert reference[86].sparse_isa == "sm80"
    assert [line for line, r in reference.items() if r.sparse_isa != "native"] == [86]


@pytest.mark.parametrize(("text", "message"), [
    ("; sparse_isa=sm90a", r"unknown sparse_isa 'sm90a'; known: native, sm80"),
    ("; sparse_isa=", r"unknown sparse_isa ''")])
def test_an_unknown_isa_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(MeasurementError, match=rf"x.csv: line 2, column notes \(sparse_isa=\): {message}"):
        _rows(text)


def test_sm80_kernels_on_h100_predict_the_measured_slowdown() -> None:
    """Fed through the banks at 128 B per clock, an sm80 2:4 kernel runs an H100 SM's doubled rate at well under
    half; the same row on Hopper's own 2:4 kernels (wgmma.sp) would be predicted faster than dense."""
    hw = load_hardware(HW / "h100-like.yaml")
    sm80, native = _rows("; sparse_isa=sm80; kernels=searched", "; kernels=searched")
    res = validate_hw([sm80, native], {"H100": hw})
    old, own = (r.predicted for r in res.rows)
    assert old is not None and own is not None
    assert old.dense_cycles == own.dense_cycles  # the dense kernel is the part's own either way
    assert old.speedup < 1.0 < own.speedup
    assert abs(old.speedup - 0.6162) < 0.1  # measured 0.62x
    assert old.sparse_tile is not None and old.sparse_tile[0] <= 128  # an sm80 threadblock, not a 256-wide sm90 one
    assert [r.sparse_isa for r in res.rows] == ["sm80", "native"]
    assert any("1 row(s) ran 2:4 kernels compiled for sm80" in n and "lines 2" in n for n in res.notes)
    assert rows_csv(res).splitlines()[1].endswith(",searched,,sm80")


def test_a_part_without_an_sm80_description_runs_its_own_kernels_and_says_so() -> None:
    hw = load_hardware(HW / "a100-like.yaml")  # mma.sp is the A100's own 2:4 instruction
    assert sm80_sparse_hardware(hw) is hw
    sm80, native = _rows("; sparse_isa=sm80", "")
    res = validate_hw([sm80, native], {"H100": hw})
    assert res.rows[0].predicted == res.rows[1].predicted
    assert any("a100-like run(s) them as the part's own 2:4 kernels" in n for n in res.notes)


def test_the_fit_simulates_an_sm80_row_on_the_sm80_kernels() -> None:
    hw = load_hardware(HW / "h100-like.yaml")
    sm80, native = _rows("; sparse_isa=sm80", "")
    tables = body_tables([sm80, native], hw, grid=(0.5, 1.0))
    assert (tables.dense[:, 0] == tables.dense[:, 1]).all()
    assert (tables.sparse[:, 0] > 1.5 * tables.sparse[:, 1]).all()


def _hopper_with(sm80: dict) -> dict:
    data = load_hardware(HW / "h100-like.yaml").model_dump(mode="json")
    data["core"]["compute"]["sm80_sparse"] = sm80
    return data


def test_only_a_2_4_kernel_runs_as_sm80_and_only_in_mma_sp_types() -> None:
    """A row tagged sm80 that runs another format, or falls back dense, runs the part's own kernels; an fp8 row
    (sm80 mma.sp has no fp8) falls back dense and says why."""
    hw = load_hardware(HW / "h100-like.yaml")
    head = HEADER.replace("notes\n", "notes,format\n")
    rows = parse_measurements(head + f"{ROW},src,kernel-gemm; sparse_isa=sm80,dense\n"
                                     f"{ROW},src,kernel-gemm; sparse_isa=sm80,64:2:8\n"
                                     f"{ROW},src,kernel-gemm,64:2:8\n"
                                     f"{ROW.replace('bf16', 'fp8')},src,kernel-gemm; sparse_isa=sm80,\n", "x.csv")
    dense, vnm_sm80, vnm, fp8 = (r.predicted for r in validate_hw(rows, {"H100": hw}).rows)
    assert dense is not None and dense.speedup == 1.0
    assert vnm_sm80 is not None and vnm is not None and vnm_sm80.speedup == vnm.speedup
    assert fp8 is not None and fp8.path == "dense" and fp8.reason == "dtype_unsupported" and fp8.speedup == 1.0
    tables = body_tables(rows[:1], hw, grid=(0.5, 1.0))
    assert (tables.sparse == tables.dense).all()


def test_sm80_tiles_must_be_whole_mma_tiles() -> None:
    feed = {"smem_bytes_per_cycle": 128, "warp_tile": [64, 64]}
    with pytest.raises(ConfigError, match=r"<hardware>: core\.compute\.sm80_sparse\.cta_tiles\[0\]: CTA tile "
                                          r"\[128, 128, 48\] is not a multiple of the sm80 2:4 MMA tile \[16, 8, 32\]"):
        hardware_from_dict(_hopper_with({"mma": [16, 8, 32], "cta_tiles": [[128, 128, 48]], "operand_feed": feed,
                                                 "dtypes": ["fp16"]}))
    ok = hardware_from_dict(_hopper_with({"mma": [16, 8, 32], "cta_tiles": [[128, 128, 64]], "operand_feed": feed,
                                                        "dtypes": ["fp16"]}))
    assert ok.core.compute.sm80_sparse is not None  # type: ignore[union-attr]


def test_only_the_hopper_family_describes_sm80_kernels_and_others_resolve_as_before() -> None:
    for name in ("h100-like", "h100-pcie-like", "h200-like"):
        assert load_hardware(HW / f"{name}.yaml").core.compute.sm80_sparse is not None  # type: ignore[union-attr]
    a100 = load_hardware(HW / "a100-like.yaml")
    assert "sm80_sparse" not in a100.model_dump(mode="json")["core"]["compute"]  # hash as before
