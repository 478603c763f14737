"""Sweep rows carry what `accelsim run` warns about memory and tensor-parallel splits: the footprint, whether it
(and the dense baseline) fits dram.capacity_bytes, the split's notes; the summary counts them and names one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from conftest import HW, WL, cli

from accelsim.hardware.model import load_hardware
from accelsim.simulation import run
from accelsim.sweep import load_results, run_sweep, spec_from_dict
from accelsim.workloads.model import load_workload
from accelsim.workloads.tensor_parallel import split

NEW = ("fits_memory", "footprint_bytes", "dense_fits_memory", "split_notes")


@pytest.fixture(scope="module")
def llama_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llama2-70b decode (138 GB at fp16) and llama2-7b decode on a100-like (80 GiB), dense and 2:4."""
    tmp = tmp_path_factory.mktemp("llama")
    spec = tmp / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "llama-memory", "hardware": str(HW / "a100-like.yaml"),
        "workloads": [str(WL / "llama2-70b-decode.yaml"), str(WL / "llama2-7b-decode.yaml")],
        "set": {"batch": [1]}, "sparsity": ["dense", "2:4"], "grid": {"dram.bandwidth_gb_s": [2039]}}))
    return spec


def test_llama2_70b_on_a100_is_flagged_and_7b_is_not(llama_sweep: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "sweep", llama_sweep, "-o", tmp_path / "res", "--workers", "1")
    assert code == 0
    table = load_results(tmp_path / "res")
    rows = {(r["workload"], r["sparsity"]): r for r in table.records()}
    hw = load_hardware(HW / "a100-like.yaml", ["dram.bandwidth_gb_s=2039"])
    for (wl, sp), row in rows.items():
        res = run(load_workload(WL / f"{wl}.yaml", {"batch": 1}), hw, None if sp == "plan" else sp)
        assert row["footprint_bytes"] == res.footprint["total_bytes"]  # run's footprint, to the byte
        assert row["fits_memory"] is res.footprint["fits"]
        assert row["feasible"] is True and row["split_notes"] is None  # still simulated, as run does
    big = rows[("llama2-70b-decode", "dense")]
    assert big["fits_memory"] is False and big["dense_fits_memory"] is False
    assert big["footprint_bytes"] > hw.dram.capacity_bytes == 85_899_345_920
    # 2:4 halves the weights (77,996,855,296 bytes with metadata): it fits, its dense baseline does not
    assert rows[("llama2-70b-decode", "2:4")]["fits_memory"] is True
    assert rows[("llama2-70b-decode", "2:4")]["dense_fits_memory"] is False
    assert all(rows[("llama2-7b-decode", sp)]["fits_memory"] is True for sp in ("dense", "2:4"))
    assert all(rows[("llama2-7b-decode", sp)]["dense_fits_memory"] is True for sp in ("dense", "2:4"))

    # the summary: the line counts the rows, a warning names the first and what it needs
    assert "4 rows (0 infeasible, 1 over the device's memory)" in out
    assert ("accelsim: warning: 1 of 4 rows (1 point) exceed the device's memory (fits_memory False" in err)
    assert (f"E.g. point 0 (dram.bandwidth_gb_s=2039.0), llama2-70b-decode, batch=1, dense: footprint "
            f"{big['footprint_bytes']:,} bytes > dram.capacity_bytes 85,899,345,920 (by "
            f"{big['footprint_bytes'] - 85_899_345_920:,} bytes)") in err
    assert ("1 of 4 rows (1 point) fit, but not their dense baseline (dense_fits_memory False)" in err
            and "E.g. point 0 (dram.bandwidth_gb_s=2039.0), llama2-70b-decode, batch=1, 2:4" in err)
    meta = json.loads((tmp_path / "res" / "meta.json").read_text())["sweep"]
    assert (meta["over_memory_rows"], meta["dense_over_memory_rows"], meta["split_note_rows"]) == (1, 1, 0)
    assert sum("exceed the device's memory" in w for w in meta["warnings"]) == 1


def test_new_columns_in_csv_and_parquet(llama_sweep: Path, tmp_path: Path) -> None:
    run_sweep(llama_sweep, tmp_path / "res", workers=1)
    with (tmp_path / "res" / "results.csv").open() as f:
        header = next(csv.reader(f))
    assert all(c in header for c in NEW)
    assert header.index("fits_memory") == header.index("reason") + 1
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(tmp_path / "res" / "results.parquet")
    assert table.column_names == header
    assert table.column("fits_memory").to_pylist() == [False, True, True, True]
    assert table.column("footprint_bytes").to_pylist()[0] > 85_899_345_920


def test_a_fastest_row_takes_the_footprint_of_the_kernels_it_runs(tmp_path: Path) -> None:
    """policy fastest sends slow sparse layers back to dense: the footprint holds their dense weights, as run's
    does; the lean path and run() agree (and a config with no capacity leaves fits empty)."""
    spec = spec_from_dict({
        "name": "fastest", "hardware": str(HW / "flex-nm.yaml"), "workloads": [str(WL / "bert-base.yaml")],
        "set": {"batch": [2]}, "policy": "fastest", "sparsity": ["2:4"],
        "grid": {"core.sparse.decode_groups_per_cycle": [0.25, 64]}})
    run_sweep(spec, tmp_path / "lean", workers=1)
    run_sweep(spec, tmp_path / "ref", workers=1, lean=False)
    lean, ref = load_results(tmp_path / "lean"), load_results(tmp_path / "ref")
    assert lean.rows == ref.rows
    model = load_workload(WL / "bert-base.yaml", {"batch": 2})
    sizes = []
    for r in lean.records():
        hw = load_hardware(HW / "flex-nm.yaml",
                           [f"core.sparse.decode_groups_per_cycle={r['core.sparse.decode_groups_per_cycle']}"])
        res = run(model, hw, "2:4", policy="fastest")
        assert r["footprint_bytes"] == res.footprint["total_bytes"]
        sizes.append(r["footprint_bytes"])
    assert sizes[0] > sizes[1]  # the slow decoder's point runs layers dense: their weights are stored dense

    nocap = spec_from_dict({"name": "nocap", "hardware": str(HW / "scalesim-32x32-ws.yaml"),
                            "workloads": [str(WL / "bert-base.yaml")], "sparsity": ["dense"]})
    res = run_sweep(nocap, tmp_path / "nocap", workers=1)
    row = load_results(tmp_path / "nocap").records()[0]
    assert row["fits_memory"] is None and row["dense_fits_memory"] is None and row["footprint_bytes"] > 0
    assert res.over_memory_rows == 0 and [w.partition(":")[0] for w in res.warnings] == ["energy"]  # no memory one


def test_an_uneven_tensor_parallel_split_is_a_column_and_a_warning(tmp_path: Path) -> None:
    """llama2-13b over 5 devices: whole heads (40 / 5), its MLP's 13,824 rows rounded up to the largest shard, as
    run warns (a split that would cut a head is refused, tests/test_tensor_parallel_heads.py)."""
    spec = spec_from_dict({
        "name": "tp", "hardware": str(HW / "8xh100-like.yaml"), "workloads": [str(WL / "llama2-13b-decode.yaml")],
        "set": {"batch": [1]}, "sparsity": ["dense"],
        "grid": {"system.devices": [5], "system.interconnect.latency_us": [1.0, 2.0]}})
    res = run_sweep(spec, tmp_path / "tp", workers=1)
    model = load_workload(WL / "llama2-13b-decode.yaml", {"batch": 1})
    notes = split(model, 5).notes
    assert any("is not divisible by 5 devices: rounded up to the largest shard" in n for n in notes)
    rows = load_results(tmp_path / "tp").records()
    assert [r["split_notes"] for r in rows] == ["; ".join(notes)] * 2
    hw = load_hardware(HW / "8xh100-like.yaml", ["system.devices=5", "system.interconnect.latency_us=1.0"])
    ran = run(model, hw, "dense")
    assert all(n in ran.warnings for n in notes)  # the same text run warns
    assert rows[0]["footprint_bytes"] == ran.footprint["total_bytes"] and rows[0]["fits_memory"] is True
    assert res.split_note_rows == 2
    assert [w for w in res.warnings if "split unevenly" in w] == [
        f"2 of 2 rows (2 points) split unevenly over a system's devices or replicate layers (split_notes, as "
        f"`accelsim run` warns). E.g. point 0 (system.devices=5, system.interconnect.latency_us=1.0), "
        f"llama2-13b-decode, batch=1, dense: "
        f"{'; '.join(notes)}"]
