"""Sputnik's CSR SpMM on the CUDA cores (issue 18): unstructured vector_spmm with b_access row_gather
(accelsim/engine/rowgather.py), its validation config and the GPU@backend=NAME hw-map key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HW, ROOT

from accelsim import lower, run
from accelsim.analysis.measurements import match_row, parse_measurements
from accelsim.cli.validate_hw import parse_hw_map
from accelsim.engine.rowgather import reuse_rows
from accelsim.errors import ConfigError
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.report.trace import stream_trace
from accelsim.workloads.model import workload_from_dict

SPUTNIK = ROOT / "validation" / "formats" / "rtx3090-sputnik-acc16.yaml"


def _gemm(sparsity: str, m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": "one", "dtype": "fp16", "sparsity": sparsity,
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})


def test_row_gather_by_hand() -> None:
    """656 x 128 x 1024 at 50 % on the Sputnik config (82 SMs, 4 x 64 CTAs, 23 MACs / cycle, 1 segment / cycle):
    2 n-tiles; each SM runs 656 / 82 = 8 rows of each, 8 x 1024 x 0.5 = 4096 nonzeros per visit; its 8 rows need
    1024 (1 - 0.5^8) = 1020 distinct B row segments of 64 x 2 B from L2."""
    hw = load_hardware(SPUTNIK)
    (kern,) = lower(_gemm("unstructured:50%", 656, 128, 1024), hw)
    assert (kern.compute_on, kern.gather_rows, kern.gather_cols, kern.gather_rate, kern.compute_rate) == \
        ("vector", 4, 64, 1.0, 23.0)
    layer = run(_gemm("unstructured:50%", 656, 128, 1024), hw).layers[0]
    assert layer.cycles["compute"] == round(2 * 4096 * 64 / 23)  # 22795: the nonzeros' MACs at the SpMM rate
    assert layer.busy["gather"] == 2 * 4096  # one segment per nonzero through L1, 1 per cycle
    assert layer.counts["gather_rows"] == 2 * 82 * 4096
    nnz = 656 * 1024 // 2
    assert layer.bytes["sram"]["b"] == 2 * 82 * 1020 * 64 * 2  # L2 -> SM: the union of the rows' segments
    assert layer.bytes["sram"]["a_values"] == 2 * nnz * 2  # A's values reloaded every n-tile
    assert layer.bytes["dram"] == {"a_values": nnz * 2, "a_metadata": nnz * 2 + 657 * 4,  # 16-bit columns, int rows
                                   "b": 1024 * 128 * 2, "c": 656 * 128 * 2}  # B's strips and C once
    assert layer.binding == "compute" and layer.macs_executed == nnz * 128
    t = layer.tiling
    assert (t["kernel"], t["cta"], t["n_tiles"]) == ("row_gather", [4, 64], 2)
    assert (t["columns"], t["row_lengths"]) == ("uniform", "mean")  # the named assumptions, echoed
    assert (t["rows_per_core"], t["reuse_rows"], t["b_segments_from_l2_per_visit"]) == (8.0, 8.0, 1020.0)
    assert t["b_l1_reuse"] == pytest.approx(4096 / 1020)


def test_low_density_is_bound_by_l2_and_a_cta_shares_its_segments() -> None:
    hw = load_hardware(SPUTNIK)
    layer = run(_gemm("unstructured:98%", 768, 4096, 768), hw).layers[0]
    assert layer.binding == "memory" and layer.busy["memory"] > layer.busy["compute"] > layer.busy["gather"]
    assert reuse_rows(768, 82, 4) == (768 / 82, 768 / 82)
    assert reuse_rows(100, 82, 4) == (100 / 82, 4.0)  # fewer rows than a CTA per SM: a CTA's 4 still share L1
    assert reuse_rows(2, 82, 4) == (2 / 82, 2.0)


def test_trace_shows_the_gather_stage(tmp_path: Path) -> None:
    hw = load_hardware(SPUTNIK)
    res = run(_gemm("unstructured:90%", 656, 256, 512), hw, keep_tiles=True)
    out = tmp_path / "t.json"
    with out.open("w") as fh:
        stream_trace(res, hw, fh)
    events = json.loads(out.read_text())["traceEvents"]
    gathers = [e for e in events if e.get("cat") == "gather"]
    assert gathers and all(e["args"]["rows"] > 0 for e in gathers)
    layer = next(e for e in events if e.get("cat") == "layer,sparse")
    assert layer["args"]["busy"]["gather"] > 0 and layer["args"]["bytes"]["sram"]["b"] > 0


def test_row_gather_config_rules_and_echo() -> None:
    data = load_hardware(HW / "rtx3090-like.yaml").to_dict()
    entry = data["core"]["sparse"]["formats"]["unstructured"]
    assert "b_access" not in entry and "cta_n" not in entry  # dense_tile (the default): not echoed
    entry["b_access"] = "row_gather"
    with pytest.raises(ConfigError, match="b_access: row_gather needs runs_on vector_spmm, not "
                                          "load_sparse_compute_dense"):
        hardware_from_dict(data, "<x>")
    echoed = load_hardware(SPUTNIK).to_dict()["core"]["sparse"]["formats"]["unstructured"]
    assert (echoed["b_access"], echoed["cta_rows"], echoed["cta_n"], echoed["gather_rows_per_cycle"]) == \
        ("row_gather", 4, 64, 1.0)
    assert load_hardware(SPUTNIK).core.compute.macs_per_cycle["fp16"] == 512  # the fp16-accumulate baseline


def test_a_dense_tile_vector_spmm_is_unchanged() -> None:
    """Without row_gather the SpMM runs the tensor-core CTA grid as before (no gather stage)."""
    data = load_hardware(SPUTNIK).to_dict()
    data["core"]["sparse"]["formats"]["unstructured"]["b_access"] = "dense_tile"
    hw = hardware_from_dict(data, "<x>")
    layer = run(_gemm("unstructured:50%", 656, 128, 1024), hw).layers[0]
    assert "kernel" not in layer.tiling and layer.busy.get("gather", 0) == 0 and "split_k" in layer.tiling


HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes,format\n"


def test_backend_keys_take_the_rows_of_their_backend() -> None:
    rows = parse_measurements(HEADER + "RTX 3090,fp16,64,64,64,,,1.0,src,kernel-gemm; backend=Sputnik,"
                                       "unstructured:90%\nRTX 3090,fp16,64,64,64,,,1.0,src,kernel-gemm,2:4\n", "x.csv")
    keys = ["RTX 3090", "RTX 3090@backend=sputnik"]
    assert [match_row(r, keys) for r in rows] == ["RTX 3090@backend=sputnik", "RTX 3090"]
    assert match_row(rows[0], ["RTX 3090@backend=CLASP"]) is None  # another backend's key: not this row
    hws, paths = parse_hw_map([f"RTX 3090@backend=Sputnik={SPUTNIK}", f"RTX 3090={HW / 'rtx3090-like.yaml'}"])
    assert set(hws) == {"RTX 3090@backend=Sputnik", "RTX 3090"} and paths["RTX 3090@backend=Sputnik"] == str(SPUTNIK)


def test_validate_hw_cli_maps_the_backend_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accelsim.cli import main

    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + "RTX 3090,fp16,768,4096,768,69.0,53.2,1.29,src,kernel-gemm; timing=kernel-loop; "
                            "backend=Sputnik,unstructured:98%\n"
                            "RTX 3090,fp16,768,4096,768,121.5,89.4,1.36,src,kernel-gemm; timing=kernel-loop,2:4\n")
    code = main(["validate-hw", str(csv), "--hw-map", f"RTX 3090={HW / 'rtx3090-like.yaml'}",
                 "--hw-map", f"RTX 3090@backend=Sputnik={SPUTNIK}", "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert code == 0
    rows = (tmp_path / "out" / "validation.csv").read_text().splitlines()
    assert "rtx3090-like-sputnik-acc16" in rows[1] and ",Sputnik," in rows[1] and ",rtx3090-like," in rows[2]
    code = main(["validate-hw", str(csv), "--hw-map", f"RTX 3090@backend={SPUTNIK}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "GPU@backend=NAME=CONFIG" in err


def test_functional_check_runs_the_row_gather_cta() -> None:
    """The functional path walks the CSR A in the kernel's CTA (4 rows x 64 columns, all of k) and matches numpy."""
    from accelsim.analysis.functional_check import functional_check

    res = functional_check(37, 13, 45, "unstructured:90%", seed=2, dtype="fp16", tiling=SPUTNIK)
    assert res.passed and res.exercised and res.pattern_executed == "unstructured:90%"
    assert (res.value_bytes, res.metadata_bytes) == (167 * 2, 167 * 2 + 38 * 4)  # 16-bit columns, 32-bit offsets
    assert (res.tiling.tile_m, res.tiling.tile_n, res.tiling.tile_k_values) == (4, 64, 45)
