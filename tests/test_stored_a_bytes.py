"""A weight read once moves the bytes it is stored in, per split (values / metadata), for every format, and a
weight read more than once says so with DRAM over stored bytes: the union of a block fold's block columns, the
V-row blocks' padding and the BSR row pointers are not extra DRAM bytes, and the why-line names a re-read only
where the array re-reads."""

from __future__ import annotations

import math

import pytest
from conftest import HW, cli

from accelsim import run
from accelsim.analysis.explain import traffic_notes
from accelsim.analysis.functional_check import functional_check
from accelsim.hardware.model import load_hardware
from accelsim.workloads.model import workload_from_dict


def _gemm(sparsity: str, m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": "one", "dtype": "fp16", "sparsity": sparsity,
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})


def _split(result: object) -> tuple[tuple[int, int], tuple[int, int]]:
    """(DRAM bytes of A's values and metadata, the footprint's stored values and metadata) of a one-layer run."""
    body = result.body()  # type: ignore[attr-defined]
    (layer,) = body["layers"]
    fp = body["footprint"]
    dram = layer["bytes"]["dram"]
    meta = fp["weights_metadata_bytes"]
    return (dram["a_values"], dram["a_metadata"]), (fp["weights_deployed_bytes"] - meta, meta)


# (hardware, sparsity, m, n, k): every format each kind runs, shapes that pad rows (V-row / block rows) and k
CASES = [
    ("a100-like.yaml", "dense", 100, 64, 1000),
    ("a100-like.yaml", "2:4", 128, 64, 1024),
    ("a100-like.yaml", "64:2:8", 100, 64, 1000),
    ("a100-like.yaml", "block32x32:75%", 100, 64, 1000),
    ("a100-like.yaml", "block32x32:75%", 1024, 256, 2048),
    ("a100-like.yaml", "unstructured:90%", 128, 64, 1024),
    ("a100-like.yaml", "channel:50%", 128, 64, 1024),
    ("tpu-like.yaml", "2:4", 128, 64, 1024),
    ("tpu-like.yaml", "128:2:8", 100, 64, 1000),
    ("tpu-like.yaml", "128:2:8", 1000, 64, 1000),
    ("tpu-like.yaml", "block32x32:75%", 100, 64, 1000),
    ("tpu-like.yaml", "block32x32:75%", 1024, 256, 2048),
    ("tpu-like.yaml", "channel:50%", 128, 64, 1024),
]


@pytest.mark.parametrize(("hw_name", "sparsity", "m", "n", "k"), CASES)
def test_a_read_once_moves_its_stored_bytes_per_split(hw_name: str, sparsity: str, m: int, n: int, k: int) -> None:
    hw = load_hardware(HW / hw_name)
    result = run(_gemm(sparsity, m, n, k), hw, None)
    (layer,) = result.layers
    assert sparsity == "dense" or layer.path == "sparse", layer.reason
    assert layer.tiling.get("a_reads", 1) == 1 and layer.tiling.get("dram_reread", {}).get("a", 1.0) == 1.0
    (values, meta), (stored_values, stored_meta) = _split(result)
    assert values == stored_values
    assert abs(meta - stored_meta) <= 1  # DRAM bytes round up, the footprint's metadata down
    if layer.tiling.get("format") in ("block", "V:N:M"):  # what functional-check stores, too
        check = functional_check(m, n, k, sparsity, dtype="fp16", tiling=hw)
        assert (values, meta) == (check.value_bytes, math.ceil(check.metadata_bytes))


def test_block_folds_read_the_stored_blocks_and_compute_the_union() -> None:
    """tpu-like, 1024 x 256 x 2048, block32x32:75%: a 128-wide fold covers 4 block rows and computes the union of
    their block columns (1 - 0.75^4 of them), zero blocks included; DRAM and the SRAM fills hold only the nonzero
    blocks (a quarter of A) and their BSR indices, however large the filter buffer."""
    hw = load_hardware(HW / "tpu-like.yaml")
    big = load_hardware(HW / "tpu-like.yaml", ["core.sram.filter_bytes=1073741824"])
    wl = _gemm("block32x32:75%", 1024, 256, 2048)
    res, res_big = run(wl, hw, None).layers[0], run(wl, big, None).layers[0]
    assert res.tiling["union_share"] == pytest.approx(round(64 * (1 - 0.75 ** 4)) / 64)
    quarter = 1024 * 2048 * 2 // 4
    nnz = 32 * 64 // 4
    for r in (res, res_big):
        assert r.bytes["dram"]["a_values"] == r.bytes["sram"]["a_values"] == quarter
        assert r.bytes["dram"]["a_metadata"] == (nnz + 32 + 1) * 4  # block indices + row pointers, 32 bits each
    # the union's zero blocks still cost the array its cycles: the folds hold union_share of the block columns
    dense = run(_gemm("dense", 1024, 256, 2048), hw, None).layers[0]
    assert res.cycles["compute"] > dense.cycles["compute"] * 0.25 * 1.5


def test_the_why_line_does_not_blame_the_filter_buffer_for_stored_bytes(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: object) -> None:
    """The audit's case: 4096^3 block32x32:75% on tpu-like printed 23,068,672 B of A values (2.8x the stored
    8,388,608) and blamed core.sram.filter_bytes; a ws array reads each fold's weights once."""
    path = tmp_path / "w.yaml"  # type: ignore[operator]
    path.write_text("name: w\ndtype: fp16\nlayers:\n  - {name: g, op: gemm, m: 4096, n: 4096, k: 4096}\n")
    code, out, err = cli(capsys, "run", "--hw", HW / "tpu-like.yaml", "--workload", path,
                         "--sparsity", "block32x32:75%")
    assert code == 0, err
    assert "DRAM bytes: A values 8,388,608, A metadata 16,900," in out
    assert "(16,900 of it metadata" in out and "why:" not in out


@pytest.mark.parametrize("sparsity", ["dense", "2:4", "128:2:8", "block32x32:75%"])
def test_a_re_read_prints_dram_over_stored(sparsity: str) -> None:
    """An output-stationary array whose filter buffer cannot hold a fold's weights reads them once per row fold
    (n / rows of them): DRAM bytes are that many times the stored bytes, per split, and the why-line prints it."""
    hw = load_hardware(HW / "tpu-like.yaml", ["core.compute.dataflow=os", "core.sram.filter_bytes=65536"])
    m, n, k = 256, 512, 2048
    result = run(_gemm(sparsity, m, n, k), hw, None)
    (layer,) = result.layers
    reads = layer.tiling["a_reads"]
    assert reads == n // 128 and layer.tiling["a_resident"] is False
    (values, meta), (stored_values, stored_meta) = _split(result)
    assert values == pytest.approx(reads * stored_values, abs=1)
    assert meta == pytest.approx(reads * stored_meta, abs=reads)
    (note,) = traffic_notes(result.body())
    assert note.tensor == "weights" and note.layers == ("g",)
    assert note.dram_bytes == values + meta
    assert note.reference_bytes == pytest.approx(stored_values + stored_meta, abs=1)
    assert f"{note.dram_bytes / note.reference_bytes:.1f}x" in note.text() and f"{reads}.0x" in note.text()
