"""Small-block BSR kernels on tensor cores: the kernel's structure (core.sparse.block.cta_n / stages / index_load /
resident_ctas) and where it makes block sparsity beat dense, against the Quansight blog's crossover statements
(validation/formats/quansight_bsr_crossovers_a100.csv; PyTorch 2.1 bsr_dense_mm, A100-80G; nothing fitted)."""

from __future__ import annotations

import csv
import importlib.util
from types import ModuleType

import pytest
from conftest import HW, ROOT

from accelsim import load_hardware, lower
from accelsim.engine import simulate
from accelsim.errors import InfeasibleError
from accelsim.hardware.model import Hardware
from accelsim.workloads.model import workload_from_dict

FORMATS = ROOT / "validation" / "formats"
PT21 = FORMATS / "a100-bsr-triton-pt21.yaml"
SOURCE = FORMATS / "quansight_bsr_crossovers_a100.csv"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bsr_crossovers", ROOT / "benchmarks" / "bsr_crossovers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BC = _module()
ROWS = list(csv.DictReader(SOURCE.open()))
FP16 = [r for r in ROWS if r["role"] == "held-back"]
FP32 = [r for r in ROWS if r["role"] == "not-modelled"]
# the model's crossovers on the PyTorch 2.1 kernel config (guards: they fail only if the model moves)
GUARD = {16: 95.5, 32: 83.2, 64: 58.8}


@pytest.fixture(scope="module")
def pt21() -> Hardware:
    return load_hardware(PT21)


@pytest.fixture(scope="module")
def a100() -> Hardware:
    return load_hardware(HW / "a100-like.yaml")


def _gemm(block: int, level: int, dtype: str = "fp16") -> object:
    return workload_from_dict({"name": "g", "dtype": dtype, "sparsity": f"block{block}x{block}:{level}%",
                               "layers": [{"name": "g", "op": "gemm", "m": 4096, "n": 4096, "k": 4096}]})


def test_kernel_fields_stay_out_of_the_echo_at_their_defaults(a100: Hardware, pt21: Hardware) -> None:
    """Configs that do not set them read back and hash as before (goldens unchanged); set ones are echoed."""
    block = a100.to_dict()["core"]["sparse"]["block"]
    assert not {"cta_n", "stages", "index_load", "resident_ctas"} & set(block)
    echoed = pt21.to_dict()["core"]["sparse"]["block"]
    assert (echoed["cta_n"], echoed["stages"], echoed["index_load"], echoed["resident_ctas"]) == (
        "block", 1, "dependent", 16)


def test_the_pt21_kernel_runs_square_block_tiles_unpipelined_and_shares_the_sm(pt21: Hardware) -> None:
    """Tile blocksize x blocksize, one whole block per k-step, one stage, 16 CTAs per SM (10 for 64 x 64 blocks:
    shared memory holds 10 at 16 KB each), all echoed in the tiling."""
    for block, resident in ((16, 16), (32, 16), (64, 10)):
        (kern,) = lower(_gemm(block, 90), pt21)
        t = simulate(kern, pt21, keep_tiles=False).tiling
        assert t["cta_tile"] == [block, block, block] and t["stages"] == 1
        assert (t["cta_n"], t["index_load"], t["resident_ctas"]) == ("block", "dependent", resident)
        assert t["slots"] == pt21.cores * resident
        assert t["k_steps"] == round(0.1 * 4096 / block)  # one k-step per nonzero block of the block row


def test_each_mechanism_slows_small_blocks(pt21: Hardware) -> None:
    """Undoing any one field makes the 16 x 16 kernel faster: the B load waiting for its index (two latencies per
    k-step), no prefetch, the square tile (B reused 16-fold), and fewer CTAs to hide latency the other way."""
    (kern,) = lower(_gemm(16, 90), pt21)
    base = simulate(kern, pt21, keep_tiles=False).cycles["total"]
    for change in ("index_load=prefetched", "stages=4", "cta_n=library"):
        hw = load_hardware(PT21, [f"core.sparse.block.{change}"])
        assert simulate(kern, hw, keep_tiles=False).cycles["total"] < base, change
    one = load_hardware(PT21, ["core.sparse.block.resident_ctas=1"])
    assert simulate(kern, one, keep_tiles=False).cycles["total"] > 4 * base  # latency no longer overlapped


@pytest.mark.parametrize("row", FP16, ids=[f"block{r['block']}" for r in FP16])
def test_pt21_crossover_lies_in_the_published_band(row: dict[str, str], pt21: Hardware) -> None:
    """Quansight, fp16, 4096^3: block 64 beats dense from 60 %, block 32 at 90 %, block 16 only at 99 %. The model
    (nothing fitted): 58.8 / 83.2 / 95.5 %, inside the bands 50-70 / 80-95 / 95-99 (library-tiled kernel, before
    this mechanism: < 40 / < 40 / 66.6 %)."""
    block = int(row["block"])
    x, ups = BC.crossover(pt21, "fp16", int(row["m"]), int(row["n"]), int(row["k"]), block)
    assert float(row["band_low_pct"]) < x <= float(row["band_high_pct"]), (x, ups)
    assert x == pytest.approx(GUARD[block], abs=1.0)


def test_crossovers_order_by_block_size(pt21: Hardware) -> None:
    xs = [BC.crossover(pt21, "fp16", 4096, 4096, 4096, b)[0] for b in (64, 32, 16)]
    assert xs == sorted(xs)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="a100-like's own block section is a library-tiled, "
                   "multistage BSR kernel (the later, tuned kind the torchao ViT rows validate), not PyTorch 2.1's "
                   "bsr_dense_mm: its small blocks beat dense far earlier than the blog's kernel (block 16 at 66.6 %, "
                   "32 and 64 below 40 %)")
def test_a100_like_default_kernel_meets_the_pt21_bands(a100: Hardware) -> None:
    for row in FP16:
        x, _ = BC.crossover(a100, "fp16", 4096, 4096, 4096, int(row["block"]))
        assert float(row["band_low_pct"]) < x <= float(row["band_high_pct"])


@pytest.mark.xfail(strict=True, raises=InfeasibleError, reason="fp32 statements not modelled: PyTorch's dense fp32 "
                   "matmul runs on CUDA cores (TF32 off by default) and whether the fp32 BSR kernel used TF32 is not "
                   "stated; a100-like has no fp32 GEMM datapath (core.compute.macs_per_cycle lists no fp32)")
def test_fp32_crossovers(pt21: Hardware) -> None:
    for row in FP32:
        x, _ = BC.crossover(pt21, "fp32", 4096, 4096, 4096, int(row["block"]))
        assert float(row["band_low_pct"]) <= x <= float(row["band_high_pct"])
