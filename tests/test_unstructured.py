"""unstructured:P% (issue 18): load sparse / compute dense on tensor-core parts (a decompress stage), a vector
SpMM when a part says so, dense fallback (format_unsupported) elsewhere; bitmap and CSR indexes."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import HW, WL

from accelsim import lower, run
from accelsim.analysis.deployment_fallback import NoCounterfactual, counterfactual_hardware
from accelsim.analysis.functional_check import execute_compressed, functional_check
from accelsim.cli import main
from accelsim.engine import simulate
from accelsim.errors import ConfigError, FunctionalError
from accelsim.formats import parse_format
from accelsim.formats.unstructured import Unstructured
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.report.trace import stream_trace
from accelsim.sweep import load_results, run_sweep, spec_from_dict
from accelsim.workloads.model import load_workload, workload_from_dict

A100 = HW / "a100-like.yaml"


def _gemm(sparsity: str, m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": "one", "dtype": "fp16", "sparsity": sparsity,
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})


def _a100(**entry: object) -> object:
    data = load_hardware(A100).to_dict()
    data["core"]["sparse"]["formats"]["unstructured"].update(entry)
    return hardware_from_dict(data, "<a100 variant>")


def test_spellings_and_errors() -> None:
    fmt = parse_format(" Unstructured : 90.0 % ")
    assert isinstance(fmt, Unstructured) and str(fmt) == "unstructured:90%" and fmt.level == 90
    assert parse_format("unstructured:0%") is None
    for text, message in [("unstructured:abc", "expected unstructured:P% with P the percentage of zeros "
                                               "(e.g. \"unstructured:90%\"), got 'unstructured:abc'"),
                          ("unstructured:100%", "must be below 100%"), ("unstructured", "got 'unstructured'")]:
        with pytest.raises(ValueError) as err:
            parse_format(text)
        assert message in str(err.value) and "\n" not in str(err.value)


def test_bytes_by_hand() -> None:
    """DESIGN: nnz = m k - floor(m k P / 100); bitmap m ceil(k/8) bytes; CSR index bits per nnz + (m+1) pointers."""
    fmt = Unstructured(Fraction(90))
    m, k = 37, 45  # 1665 positions, floor(1498.5) = 1498 zeros
    assert fmt.nonzeros(m, k) == 167 and fmt.value_bytes(m, k, 2) == 334 and fmt.value_bytes(m, k, 0.5) == 84
    assert fmt.index_bytes(m, k, "bitmap") == 37 * 6
    assert fmt.index_bytes(m, k, "csr", 16, 32) == 334 + 38 * 4
    assert fmt.index_bytes(m, k, "csr", 12, 32) == math.ceil(167 * 12 / 8) + 152
    assert fmt.density == pytest.approx(0.1) and fmt.keep == fmt.group == 1 and fmt.default_metadata_bits == 0
    assert fmt.contains(Unstructured(Fraction(95))) and not fmt.contains(Unstructured(Fraction(80)))


def test_hardware_entry_rules() -> None:
    data = load_hardware(A100).to_dict()
    data["core"]["sparse"]["formats"]["unstructured"] = {"runs_on": "vector_spmm"}
    with pytest.raises(ConfigError, match="runs_on vector_spmm needs the SpMM rate"):
        hardware_from_dict(data, "<x>")
    data["core"]["sparse"]["patterns"]["unstructured:90%"] = {}
    with pytest.raises(ConfigError, match="not a native pattern of the sparse datapath"):
        hardware_from_dict(data, "<x>")
    tpu = load_hardware(HW / "tpu-like.yaml").to_dict()
    tpu["core"]["sparse"]["formats"] = {"unstructured": {"runs_on": "load_sparse_compute_dense"}}
    with pytest.raises(ConfigError, match="modelled on tensor_core parts only"):
        hardware_from_dict(tpu, "<x>")
    assert "formats" not in load_hardware(HW / "tpu-like.yaml").to_dict()["core"]["sparse"]  # absent: not echoed


@pytest.mark.parametrize("hw_name, reason", [("tpu-like.yaml", "format_unsupported"),
                                             ("flex-nm.yaml", "format_unsupported")])
def test_systolic_parts_fall_back_with_a_reason(hw_name: str, reason: str) -> None:
    (kern,) = lower(_gemm("unstructured:90%", 256, 64, 256), load_hardware(HW / hw_name))
    assert (kern.path, kern.reason, kern.pattern_requested) == ("dense", reason, "unstructured:90%")
    data = load_hardware(HW / hw_name).to_dict()
    data["core"]["sparse"] = None
    (bare,) = lower(_gemm("unstructured:90%", 256, 64, 256), hardware_from_dict(data, "<bare>"))
    assert bare.reason == "no_sparse_support"


def test_load_sparse_compute_dense_on_a100_bytes_stage_and_energy() -> None:
    """A skinny GEMM (one CTA column): A crosses DRAM once as its nonzeros + CSR index; the MACs stay dense."""
    hw = load_hardware(A100)
    m, n, k = 4096, 16, 4096
    res = run(_gemm("unstructured:80%", m, n, k), hw)
    layer = res.layers[0]
    fmt = Unstructured(Fraction(80))
    nnz = fmt.nonzeros(m, k)
    csr = fmt.index_bytes(m, k, "csr", 16, 32)
    assert layer.bytes["dram"]["a_values"] == nnz * 2 and layer.bytes["dram"]["a_metadata"] == csr
    assert layer.macs_executed == layer.macs == m * n * k  # compute dense: no MAC skipped
    assert set(layer.busy) == {"compute", "memory", "decompress", "launch"} and layer.busy["decompress"] > 0
    t = layer.tiling
    assert (t["compute_on"], t["a_index"]["encoding"], t["stage"]["name"], t["stage"]["per_cycle"]) == \
        ("dense", "csr", "decompress", 32.0)
    assert t["stage"]["values"] >= nnz and t["a_index"]["bits_per_position"] == pytest.approx(csr * 8 / (m * k))
    assert res.footprint["weights_metadata_bytes"] == csr
    assert res.footprint["weights_deployed_bytes"] == nnz * 2 + csr
    e = layer.energy
    assert e is not None and e["by_component_j"]["decode"] == 0.0
    assert e["by_component_j"]["mac"] == pytest.approx(m * n * k * 1.6e-12)  # dense mac_pj, not sparse_mac_pj
    assert e["by_component_j"]["vector"] == pytest.approx(t["stage"]["values"] * 0.4e-12)  # values placed
    assert 1.3 < layer.speedup_vs_dense < 2.5  # bytes of A: 0.2 x (2 + 2) per position vs 2
    back = type(res).from_json(res.to_json())
    assert back == res and back.model_totals().cycles == res.model_totals().cycles


def test_compute_bound_gemm_gains_nothing_from_loading_sparse() -> None:
    res = run(_gemm("unstructured:90%", 4096, 4096, 4096), load_hardware(A100))
    assert res.layers[0].binding == "compute" and 0.97 < res.layers[0].speedup_vs_dense < 1.03


def test_a_slow_decompress_stage_binds_and_is_named() -> None:
    hw = _a100(decompress_values_per_cycle=0.25)
    layer = run(_gemm("unstructured:50%", 1024, 1024, 1024), hw).layers[0]
    assert layer.binding == "decompress" and layer.cycles["stall_decode"] > 0
    assert layer.busy["decompress"] >= layer.busy["compute"]
    values = layer.tiling["stage"]["values"]
    ctas = layer.tiling["ctas"]
    # each CTA's k-loop places its share of the values at 0.25 per cycle; waves run back to back
    assert layer.busy["decompress"] == pytest.approx(values / ctas / 0.25 * layer.tiling["waves"], rel=0.01)


def test_bitmap_index_and_unlimited_decompress() -> None:
    hw = _a100(index="bitmap", decompress_values_per_cycle="unlimited")
    m, n, k = 4096, 16, 4096
    layer = run(_gemm("unstructured:70%", m, n, k), hw).layers[0]
    assert layer.bytes["dram"]["a_metadata"] == m * k // 8 and layer.busy["decompress"] == 0
    assert layer.tiling["stage"]["per_cycle"] == "unlimited" and layer.tiling["a_index"]["bits_per_position"] == 1


def test_vector_spmm_multiplies_only_the_nonzeros() -> None:
    hw = _a100(runs_on="vector_spmm", spmm_macs_per_cycle=64)
    m, n, k = 1024, 1024, 1024
    (kern,) = lower(_gemm("unstructured:90%", m, n, k), hw)
    assert (kern.compute_on, kern.compute_rate, kern.a_stage) == ("vector", 64.0, "decode")
    layer = simulate(kern, hw, keep_tiles=False)
    nnz = Unstructured(Fraction(90)).nonzeros(m, k)
    assert layer.macs_executed == nnz * n and layer.busy["decode"] == 0 and layer.tiling["split_k"] == 1
    assert layer.tiling["compute_macs_per_cycle"] == 64.0
    # the nonzeros' MACs at 64 per cycle per core bound the compute time from below
    assert layer.cycles["compute"] >= nnz * n / (64 * hw.cores)


@pytest.mark.parametrize("encoding", ["bitmap", "csr"])
@pytest.mark.parametrize("tiling", [None, (5, 3, 7)])
def test_functional_check_each_encoding_on_odd_shapes(encoding: str, tiling: object) -> None:
    fmt = Unstructured(Fraction(70))
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((37, 45)), rng.standard_normal((45, 13))
    pruned, mask = fmt.prune(a)
    assert int(mask.sum()) == fmt.nonzeros(37, 45) == 500
    comp = fmt.compress(pruned, mask, encoding=encoding)
    assert comp.kept == 500 and comp.layout == encoding
    np.testing.assert_array_equal(comp.dense(), pruned)
    tm, tk, tn = tiling or (32, 32, 13)
    c, tiles = execute_compressed(comp, b, tm, 1, tn, tile_k_values=tk, return_tiles=True)
    np.testing.assert_allclose(c, pruned @ b, rtol=1e-12, atol=1e-12)
    assert tiles == -(-37 // tm) * -(-45 // tk) * -(-13 // tn)
    ell = execute_compressed(type(comp)(*[getattr(comp, f) for f in ("values", "row_ptr", "col_idx", "bitmap", "m",
                                                                    "k")], "gather", 16, 32), b, 8, 1, 8)
    np.testing.assert_allclose(ell, pruned @ b, rtol=1e-12, atol=1e-12)  # the ELL gather view agrees
    assert comp.padding == ({"k": [45, 48]} if encoding == "bitmap" else {})


def test_functional_check_follows_the_hardware() -> None:
    a100 = functional_check(37, 13, 45, "unstructured:90%", seed=2, dtype="fp16", tiling=A100)
    assert a100.passed and a100.exercised and a100.pattern_executed == "unstructured:90%"
    assert (a100.value_bytes, a100.metadata_bytes) == (167 * 2, 334 + 38 * 4)  # the a100 family's CSR
    assert a100.tiling.dataflow == "cta"
    tpu = functional_check(37, 13, 45, "unstructured:90%", seed=2, dtype="fp16", tiling=HW / "tpu-like.yaml")
    assert tpu.passed and not tpu.exercised and tpu.reason == "format_unsupported"
    assert "unstructured:90% ran dense because format_unsupported" in (tpu.not_exercised or "")
    plain = functional_check(37, 13, 45, "unstructured:90%", seed=2, dtype="int8")
    assert plain.passed and plain.metadata_bytes == 37 * 6 and plain.to_dict()["padding"] == {"k": [45, 48]}


def test_compress_checks_the_mask() -> None:
    fmt = Unstructured(Fraction(75))
    a = np.arange(1.0, 9.0).reshape(2, 4)
    with pytest.raises(FunctionalError, match="the mask keeps 8 of 8 values; unstructured:75% keeps at most 2"):
        fmt.compress(a, None)
    with pytest.raises(FunctionalError, match="index encoding 'coo' is not one of bitmap, csr"):
        fmt.compress(a * 0, None, encoding="coo")
    filled = fmt.compress(a * [[0, 0, 0, 1], [0, 0, 0, 0]], None)  # one kept value: one fill at position 0
    assert filled.kept == 2 and filled.values.tolist() == [0.0, 4.0]


@pytest.mark.parametrize("hw_name", ["a100-like.yaml", "tpu-like.yaml"])
def test_sweep_rows_match_runs_for_both_formats(hw_name: str, tmp_path: Path) -> None:
    formats = ["dense", "channel:50%", "unstructured:70%", "unstructured:90%"]
    spec = spec_from_dict({"name": "fmts", "hardware": f"hwconfigs/{hw_name}",
                           "workloads": "workloads/gemm-microbench.yaml", "sparsity": formats}, "python",
                           base_dir=HW.parent)
    run_sweep(spec, tmp_path / "out", workers=1)
    table = load_results(tmp_path / "out")
    assert table.sparsities() == formats
    model, hw = load_workload(WL / "gemm-microbench.yaml"), load_hardware(HW / hw_name)
    for row in table.records():
        res = run(model, hw, row["sparsity"])
        assert row["fallback_layers"] == res.totals["fallback"]["layers"]
        assert row["cycles"] == res.totals["cycles"]["total"]
        assert row["metadata_bytes"] == res.footprint["weights_metadata_bytes"]


def test_trace_shows_the_decompress_stage(tmp_path: Path) -> None:
    hw = load_hardware(A100)
    res = run(_gemm("unstructured:90%", 512, 64, 512), hw, keep_tiles=True)
    out = tmp_path / "t.json"
    with out.open("w") as fh:
        stream_trace(res, hw, fh)
    events = json.loads(out.read_text())["traceEvents"]
    dec = [e for e in events if e.get("cat") == "decompress"]
    assert dec and all(e["args"]["stage"] == "decompress" and "values" in e["args"] for e in dec)
    layer = next(e for e in events if e.get("cat") == "layer,sparse")
    assert layer["args"]["busy"]["decompress"] > 0 and layer["args"]["bytes"]["dram"]["a_metadata"] > 0
    assert layer["args"]["tiling"]["stage"]["name"] == "decompress"


def test_what_ifs_add_the_entry_or_say_the_part_cannot() -> None:
    data = load_hardware(A100).to_dict()
    del data["core"]["sparse"]["formats"]
    bare = hardware_from_dict(data, "<no formats>")
    assert lower(_gemm("unstructured:90%", 256, 64, 256), bare)[0].reason == "format_unsupported"
    cf, changes = counterfactual_hardware(bare, "unstructured:90%")
    assert changes == ["added core.sparse.formats.unstructured (load_sparse_compute_dense)"]
    assert lower(_gemm("unstructured:90%", 256, 64, 256), cf)[0].path == "sparse"
    with pytest.raises(NoCounterfactual, match="unstructured:90% cannot run on this part"):
        counterfactual_hardware(load_hardware(HW / "tpu-like.yaml"), "unstructured:90%")
    assert counterfactual_hardware(bare, "channel:50%") == (bare, [])


@pytest.mark.parametrize("spelling, problem", [
    ("unstructured:abc", "expected unstructured:P% with P the percentage of zeros"),
    ("channel:150%", "sparsity 150% in 'channel:150%' must be below 100%")])
def test_cli_refuses_bad_spellings_in_one_line(spelling: str, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", "--hw", str(A100), "--workload", str(WL / "gemm-microbench.yaml"), "--sparsity", spelling])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1 and problem in err and err.startswith("accelsim: error: ")


def test_cli_runs_both_formats(capsys: pytest.CaptureFixture[str]) -> None:
    for spelling in ("channel:50%", "unstructured:90%"):
        assert main(["run", "--hw", str(A100), "--workload", str(WL / "gemm-microbench.yaml"),
                     "--sparsity", spelling]) == 0
        assert spelling in capsys.readouterr().out
