"""Published sparse-format speedups (validation/formats/, issue 18) read and scored by validate-hw."""

from __future__ import annotations

from conftest import HW, ROOT

from accelsim import load_hardware
from accelsim.analysis.gpu_validation import validate_hw
from accelsim.analysis.measurements import parse_measurements, read_measurements

VENOM = ROOT / "validation" / "formats" / "venom_spatha_rtx3090.csv"
HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes,format\n"


def test_the_format_column_is_read_and_optional() -> None:
    rows = parse_measurements(HEADER + "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,64:2:8\n"
                                       "A100,fp16,64,64,64,,,1.0,src,kernel-gemm,\n", "x.csv")
    assert [r.format for r in rows] == ["64:2:8", None]
    assert "format" not in rows[1].to_dict() and rows[0].to_dict()["format"] == "64:2:8"


def test_venom_24_rows_score_on_the_never_fitted_rtx3090_config() -> None:
    """The 2:4 rows of the VENOM artifact (cuSPARSELt and Spatha 2:4 vs cuBLAS, RTX 3090, fp16): rtx3090-like
    carries the Ada family's fit as an estimate (no GeForce Ampere row was fitted); it lands on the right side
    of 1.0x everywhere and beats the FLOPs rule of thumb. Formats this accelsim has no module for are
    reported, not scored, by name."""
    rows = read_measurements(VENOM)
    res = validate_hw(rows, {"RTX 3090": load_hardware(HW / "rtx3090-like.yaml")})
    nm = next(g for g in res.main if g.format == "2:4")
    m = nm.metrics
    assert m.n == 34 and m.right_side == 1.0
    assert m.mae is not None and m.rule_mae is not None and m.mae < 0.225 < m.rule_mae  # 0.218 vs 0.385
    assert m.median_ape is not None and 0.0 < m.median_ape < 20.0
    registered = {r.format for r in rows if r.format in ("2:4",)}
    for r in res.rows:
        if r.format not in registered:
            assert r.status in ("unknown_format", "scored", "above_bound"), r
    assert any(n.startswith(f"{sum(r.status == 'unknown_format' for r in res.rows)} row(s) not scored, their format")
               for n in res.notes) or all(r.status != "unknown_format" for r in res.rows)
