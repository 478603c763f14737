"""Sub-byte element types (fp6, fp4, int4): sizes, published rates, the 4:8-paired format, errors, function."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import HW

from accelsim.analysis.functional_check import MINIFLOATS, functional_check
from accelsim.cli import main
from accelsim.dtypes import DTYPE_BITS, DTYPE_BYTES, element_bytes, stored_bytes
from accelsim.errors import ConfigError, FunctionalError
from accelsim.formats import parse_format
from accelsim.formats.paired import PairedPattern
from accelsim.hardware.model import load_hardware, load_hardware_with_provenance
from accelsim.simulation import run
from accelsim.workloads.model import workload_from_dict

B200 = HW / "b200-like.yaml"
# what-if: memory never binds, so a large GEMM shows the tensor rate alone
NO_MEMORY_LIMIT = ["dram.bandwidth_gb_s=unlimited", "core.sram.bandwidth_bytes_per_cycle=unlimited",
                   "l2.bandwidth_bytes_per_cycle=1000000000"]


def _gemm(dtype: str, m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": "g", "dtype": dtype, "layers": [{"name": "g", "op": "gemm", "m": m, "n": n,
                                                                         "k": k}]})


@pytest.fixture(scope="module")
def b200():
    return load_hardware(B200)


# -- sizes ----------------------------------------------------------------------------------------

def test_element_sizes_come_from_bits_and_whole_byte_types_stay_integers() -> None:
    assert DTYPE_BITS["fp4"] == DTYPE_BITS["int4"] == 4 and DTYPE_BITS["fp6"] == 6
    assert DTYPE_BYTES == {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "fp6": 0.75,
                           "fp4": 0.5, "int4": 0.5}
    assert all(isinstance(element_bytes(d), int) for d in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8"))
    # a stored tensor takes whole bytes: 11 fp4 values pack into 6 bytes, 5 fp6 values (30 bits) into 4
    assert stored_bytes(11, 0.5) == 6 and stored_bytes(10, 0.5) == 5 and stored_bytes(5, 0.75) == 4
    assert stored_bytes(3 * 2**40 + 1, 0.5) == 3 * 2**39 + 1  # integer arithmetic, no float rounding
    assert stored_bytes(7, 2) == 14


def test_fp4_gemm_bytes_are_half_of_fp8_rounded_up(b200) -> None:
    """Odd sizes: every tensor's bytes in fp4 are ceil(fp8 / 2), in fp6 ceil(3/4 fp8), as read from DRAM
    and as stored in the footprint (each tensor rounded up on its own)."""
    m, n, k = 1001, 999, 1003
    res = {dt: run(_gemm(dt, m, n, k), b200, "dense") for dt in ("fp8", "fp4", "fp6")}
    fp8 = res["fp8"].layers[0].bytes["dram"]
    assert (fp8["a_values"], fp8["b"], fp8["c"]) == (m * k, k * n, m * n)  # each read or written once here
    for dt, bits in (("fp4", 4), ("fp6", 6)):
        got = res[dt].layers[0].bytes["dram"]
        for tensor in ("a_values", "b", "c"):
            assert got[tensor] == math.ceil(fp8[tensor] * bits / 8), (dt, tensor)
        fp = res[dt].footprint
        assert fp["weights_dense_bytes"] == math.ceil(m * k * bits / 8)
        assert fp["activations_peak_bytes"] == math.ceil(k * n * bits / 8) + math.ceil(m * n * bits / 8)
    assert res["fp4"].footprint["weights_dense_bytes"] * 2 == res["fp8"].footprint["weights_dense_bytes"] + 1


def test_vector_op_bytes_round_up(b200) -> None:
    wl = workload_from_dict({"name": "v", "dtype": "fp4", "layers": [
        {"name": "add", "op": "elementwise", "elements": 1001, "inputs": 2}]})
    layer = run(wl, b200).layers[0]
    assert layer.bytes["dram"]["b"] == 1001 and layer.bytes["dram"]["c"] == 501  # 2002 and 1001 values


# -- published rates ------------------------------------------------------------------------------

def test_compute_bound_fp4_gemm_runs_at_the_published_fp4_rate() -> None:
    hw, prov = load_hardware_with_provenance(B200)
    published = prov.tensor_tflops["fp4"]
    assert (published.dense, published.sparse) == (9000, 18000)
    comp = hw.core.compute
    peak = hw.cores * comp.macs_per_cycle["fp4"] * 2 * hw.clock_ghz / 1000
    assert peak == pytest.approx(published.dense, rel=0.02)
    eff = comp.efficiency.dense
    free = load_hardware(B200, NO_MEMORY_LIMIT)
    m = n = k = 8192
    fp4 = run(_gemm("fp4", m, n, k), free, "dense").layers[0]
    fp8 = run(_gemm("fp8", m, n, k), free, "dense").layers[0]
    assert fp4.binding == "compute" and fp4.tiling["cta_tile"][2] == 256  # fp4 kernels' 128-byte k-tile
    ideal = m * n * k / (hw.cores * comp.macs_per_cycle["fp4"] * eff)  # cycles at the published rate x efficiency
    assert fp4.cycles["compute"] == pytest.approx(ideal, rel=0.02)
    achieved = 2 * m * n * k * hw.clock_ghz / fp4.cycles["total"] / 1000  # TFLOPS
    assert 0.9 * eff * published.dense < achieved <= eff * published.dense
    assert fp4.cycles["total"] / fp8.cycles["total"] == pytest.approx(0.5, abs=0.03)
    sparse = run(_gemm("fp4", m, n, k), free, "4:8-paired").layers[0]
    assert sparse.path == "sparse" and sparse.pattern_executed == "4:8-paired"
    ideal_sparse = m * n * k / (hw.cores * comp.macs_per_cycle["fp4"] * comp.efficiency.sparse * 2)  # 18000 TFLOPS
    assert sparse.cycles["compute"] == pytest.approx(ideal_sparse, rel=0.02)


@pytest.mark.parametrize(("config", "dtype"), [("a100-like", "int4"), ("rtx4090-like", "int4"),
                                               ("rtx5090-like", "fp4"), ("b200-like", "fp6")])
def test_every_published_sub_byte_rate_is_a_runnable_entry(config: str, dtype: str) -> None:
    hw, prov = load_hardware_with_provenance(HW / f"{config}.yaml")
    rate = prov.tensor_tflops[dtype]
    assert "recorded only" not in rate.note
    assert hw.cores * hw.core.compute.macs_per_cycle[dtype] * 2 * hw.clock_ghz / 1000 == pytest.approx(
        rate.dense, rel=0.02)
    layer = run(_gemm(dtype, 2048, 2048, 2048), hw, "dense").layers[0]
    assert layer.cycles["total"] > 0 and layer.energy is not None


# -- 2:4 and 4:8-paired on the 4-bit types --------------------------------------------------------

def test_2_4_on_fp4_falls_back_and_says_which_pattern_runs(b200) -> None:
    res = run(_gemm("fp4", 4096, 4096, 4096), b200, "2:4")
    layer = res.layers[0]
    assert layer.path == "dense" and layer.reason == "pattern_unsupported" and layer.pattern_requested == "2:4"
    assert any("fp4 runs sparse on this hardware only as 4:8-paired" in w and "ask for 4:8-paired" in w
               for w in res.warnings)
    # the other dtypes keep their 2:4 (fp6 runs 2:4 through .kind::f8f6f4)
    for dtype in ("fp8", "fp6"):
        other = run(_gemm(dtype, 4096, 4096, 4096), b200, "2:4")
        assert other.layers[0].pattern_executed == "2:4" and not other.warnings, dtype


def test_4_8_paired_on_fp4_runs_sparse_with_one_metadata_bit_per_value(b200) -> None:
    res = run(_gemm("fp4", 4096, 4096, 4096), b200, "4:8-paired")
    layer = res.layers[0]
    assert layer.path == "sparse" and layer.pattern_executed == "4:8-paired" and layer.reason is None
    dram = layer.bytes["dram"]
    assert dram["a_values"] == 4096 * 4096 // 4  # half the values at half a byte
    assert dram["a_metadata"] * 4 == dram["a_values"]  # a 2-bit index per kept pair: 1 bit per 4-bit value
    assert res.footprint["weights_metadata_bytes"] == 4096 * 4096 // 2 // 8
    assert layer.speedup_vs_dense > 1.0
    promoted = run(_gemm("fp4", 4096, 4096, 4096), b200, "1:4").layers[0]  # 1:4 touches <= 2 pairs per 8
    assert promoted.pattern_executed == "4:8-paired" and promoted.reason == "pattern_promoted"


def test_int4_on_ampere_is_pair_wise_too() -> None:
    hw = load_hardware(HW / "a100-like.yaml")
    assert run(_gemm("int4", 4096, 4096, 4096), hw, "2:4").layers[0].reason == "pattern_unsupported"
    layer = run(_gemm("int4", 4096, 4096, 4096), hw, "4:8-paired").layers[0]
    assert layer.path == "sparse" and 1.0 < layer.speedup_vs_dense <= 2.0


def test_paired_format_spellings_and_containment() -> None:
    fmt = parse_format("4:8-paired")
    assert fmt == PairedPattern(4, 8) and str(fmt) == "4:8-paired"
    assert parse_format("paired 4:8") == parse_format("4:8p") == parse_format("4:8 pairs") == fmt
    assert (fmt.keep, fmt.group, fmt.default_metadata_bits) == (4, 8, 1)
    runs = {text: fmt.contains(parse_format(text)) for text in ("1:4", "2:8", "1:8", "2:4", "4:8", "3:8",
                                                                 "4:8-paired", "2:8-paired", "4:16-paired")}
    assert runs == {"1:4": True, "2:8": True, "1:8": True, "2:4": False, "4:8": False, "3:8": False,
                    "4:8-paired": True, "2:8-paired": True, "4:16-paired": True}
    with pytest.raises(ValueError, match="even"):
        parse_format("3:8-paired")


def test_paired_compress_packs_two_bit_pair_indices() -> None:
    fmt = PairedPattern(4, 8)
    a = np.arange(1, 1 + 2 * 20, dtype=np.float64).reshape(2, 20)
    pruned = fmt.prune(a)
    c = fmt.compress(pruned.pruned, pruned.mask)
    assert c.k_padded == 24 and c.kept == 2 * 3 * 4 and c.metadata_bytes == 3  # 24 values x 1 bit
    np.testing.assert_array_equal(c.dense(), pruned.pruned)
    assert c.pair_indices[0].tolist() == [2, 3, 2, 3, 0, 1]  # the largest pairs; the padded group fills 0, 1
    packed = c.pack_metadata()
    assert packed[0] == 2 | 3 << 2 | 2 << 4 | 3 << 6  # 2-bit pair indices, little-endian
    two_four = np.zeros((1, 8), dtype=bool)
    two_four[0, [0, 2, 4]] = True  # a valid 2:4 mask (one or two per group of four) touching three pairs
    with pytest.raises(FunctionalError, match=r"row 0, group 0 \(k 0\.\.7\) has nonzeros in 3 pairs"):
        fmt.compress(np.ones((1, 8)), two_four)


# -- errors ---------------------------------------------------------------------------------------

def test_a_dtype_the_config_lacks_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", "--hw", str(HW / "h100-like.yaml"), "--workload", str(HW.parent / "workloads" /
               "gemm-microbench.yaml"), "--dtype", "fp4"])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and len(err.strip().splitlines()) == 1
    assert "h100-like.yaml" in err and "no fp4 rate" in err and "Traceback" not in err


def test_a_pattern_dtype_must_be_a_sparse_dtype() -> None:
    with pytest.raises(ConfigError, match=r"core\.sparse\.patterns\.4:8-paired\.dtypes.*fp8 is not in core\.sparse"):
        load_hardware(HW / "a100-like.yaml", ["core.sparse.patterns.4:8-paired.dtypes=[fp8]"])


# -- functional check -----------------------------------------------------------------------------

def test_minifloat_grids() -> None:
    assert MINIFLOATS["fp4"].tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]  # e2m1
    fp6 = MINIFLOATS["fp6"]  # e2m3
    assert len(fp6) == 32 and fp6.max() == 7.5 and fp6[1] == 0.125


@pytest.mark.parametrize(("dtype", "pattern", "hw"), [("int4", "2:4", None), ("fp4", "2:4", None),
                                                      ("fp6", "2:4", None), ("fp4", "4:8-paired", B200),
                                                      ("int4", "4:8-paired", HW / "a100-like.yaml"),
                                                      ("fp6", "2:4", B200)])
def test_functional_check_sub_byte_is_exact(dtype: str, pattern: str, hw: object) -> None:
    res = functional_check(96, 40, 208, pattern, seed=3, dtype=dtype, tiling=hw)
    assert res.passed and res.exercised and res.tolerance == 0 and res.max_abs_error == 0
    assert res.pattern_executed == pattern
    bits = DTYPE_BITS[dtype]
    assert res.dense_bytes == math.ceil(96 * 208 * bits / 8)
    kept = 96 * -(-208 // (8 if "paired" in pattern else 4)) * (4 if "paired" in pattern else 2)
    assert res.value_bytes == math.ceil(kept * bits / 8)


def test_functional_check_int4_2_4_on_ampere_is_not_exercised() -> None:
    res = functional_check(64, 32, 128, "2:4", dtype="int4", tiling=HW / "a100-like.yaml")
    assert not res.exercised and res.reason == "pattern_unsupported"
    assert "the native patterns that run int4 (4:8-paired) do not contain 2:4" in res.not_exercised
