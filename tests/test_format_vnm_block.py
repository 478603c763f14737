"""V:N:M (formats/vnm.py) and block sparsity (formats/block.py): spellings, containment, bytes, prune,
compress and the tiled functional path from the compressed form."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import HW

from accelsim.analysis.functional_check import execute_compressed, functional_check
from accelsim.errors import FunctionalError
from accelsim.formats import family, normalize_format, parse_format
from accelsim.formats.block import BlockSparsity
from accelsim.formats.nm import Pattern
from accelsim.formats.vnm import VnmPattern


@pytest.mark.parametrize("text, canonical", [
    ("64:2:8", "64:2:8"), (" 128 : 2 : 100 ", "128:2:100"), ("16:1:7", "16:1:7"),
    ("block32x32:75%", "block32x32:75%"), ("BLOCK16x64 : 87.5 %", "block16x64:87.5%"),
    ("block64x64:80.00%", "block64x64:80%"),
])
def test_spellings_round_trip(text: str, canonical: str) -> None:
    fmt = parse_format(text)
    assert fmt is not None and str(fmt) == canonical == normalize_format(text)
    assert parse_format(str(fmt)) == fmt


def test_vnm_and_nm_spellings_do_not_collide() -> None:
    assert isinstance(parse_format("2:4"), Pattern) and isinstance(parse_format("64:2:8"), VnmPattern)
    assert family("vnm") is VnmPattern and family("block") is BlockSparsity
    assert parse_format("block32x32:0%") is None  # no zero blocks: dense


def test_vnm_and_block_name_their_format_at_a_sparsity_level() -> None:
    """accelsim patterns / the deployment report ask each family for its format at a level: V:N:M is 64:2:M with
    M = 2 / (1 - s) (N = 2 runs on 2:4 sparse tensor cores), block is block32x32:P%."""
    levels = (0.75, 0.8, 0.875, 0.9, 0.95)
    assert [str(VnmPattern.at_sparsity(s)) for s in levels] == ["64:2:8", "64:2:10", "64:2:16", "64:2:20", "64:2:40"]
    for s in levels:
        fmt = VnmPattern.at_sparsity(s)
        assert fmt is not None and fmt.density == pytest.approx(1 - s)
    assert VnmPattern.at_sparsity(0.5) is None  # 64:2:4 is refused (it is the N:M pattern 2:4)
    assert VnmPattern.at_sparsity(0.7) is None  # M = 6.67 is not whole
    assert VnmPattern.at_sparsity(0.995) is None  # M = 400 > 256
    assert VnmPattern.at_sparsity(0.0) is None
    assert [str(BlockSparsity.at_sparsity(s)) for s in (0.5, 0.75, 0.875, 0.9)] == [
        "block32x32:50%", "block32x32:75%", "block32x32:87.5%", "block32x32:90%"]
    assert BlockSparsity.at_sparsity(0.0) is None and BlockSparsity.at_sparsity(1 / 3) is None  # dense; 3 decimals
    assert BlockSparsity.at_sparsity(0.75) == parse_format("block32x32:75%")


@pytest.mark.parametrize("text, problem", [
    ("64:2:4", "M must be larger than 4 in '64:2:4'.*write the N:M pattern \"2:4\""),
    ("64:5:8", "N must be between 1 and 4 in '64:5:8'"),
    ("0:2:8", "V .* must be between 1 and 65536 in '0:2:8'"),
    ("64:2:300", "M = 300 in '64:2:300' is larger than 256"),
    ("block32x32:100%", "sparsity must be below 100% in 'block32x32:100%'"),
    ("block32:75%", "expected a block pattern like \"block32x32:75%\".*got 'block32:75%'"),
    ("block32x32:75", "expected a block pattern like"),
    ("block0x32:50%", "block sides must be between 1 and 65536"),
])
def test_bad_spellings_say_what_is_wrong_in_one_line(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as err:
        parse_format(text)
    assert "\n" not in str(err.value)


def test_vnm_density_metadata_and_containment() -> None:
    """DESIGN: 64:2:8 keeps 2 of every 8 (density 1/4); metadata = 2 bits per kept value plus, per 64 rows and
    group, 4 column indices of ceil(log2 8) = 3 bits."""
    f = VnmPattern(64, 2, 8)
    assert (f.keep, f.group, f.density, f.dense_speedup) == (2, 8, 0.25, 4.0)
    rows, k = 768, 3072
    kept = rows * k // 8 * 2
    assert f.value_bytes(rows, k, 2) == kept * 2
    assert f.metadata_bytes(rows, k) == (kept * 2 + (rows // 64) * (k // 8) * 4 * 3) / 8
    assert f.selection_bits_per_value() == 4 * 3 / (64 * 2)
    assert VnmPattern(64, 2, 100).column_index_bits == 7 and VnmPattern(64, 2, 7).column_index_bits == 3
    assert f.contains(VnmPattern(128, 2, 16)) and f.contains(VnmPattern(64, 1, 8))
    assert not f.contains(VnmPattern(32, 2, 8)) and not f.contains(VnmPattern(64, 2, 12))
    assert not f.contains(Pattern(2, 8)) and not Pattern(2, 4).contains(f)


def test_block_density_bytes_and_containment() -> None:
    """DESIGN: block32x32:75% on 768 x 768: 24 x 24 blocks, 144 nonzero; BSR int32: 144 column indices and
    25 row pointers."""
    f = BlockSparsity(32, 32, 7500)
    assert (f.keep, f.group, f.density) == (1, 4, 0.25)
    assert f.nonzero_blocks(768, 768) == 144 and f.value_bytes(768, 768, 2) == 144 * 32 * 32 * 2
    assert f.metadata_bytes(768, 768) == (144 + 25) * 4
    assert f.k_padded(770) == 800 and f.k_compressed(768) == 192 and f.decode_groups(768, 768) == 0
    f84 = BlockSparsity(64, 64, 8400)
    assert (f84.keep, f84.group) == (4, 25)
    assert f.contains(BlockSparsity(64, 32, 9000)) and not f.contains(BlockSparsity(16, 32, 7500))
    assert not f.contains(Pattern(1, 4))


def test_vnm_prune_selects_four_columns_per_block_then_n_per_row() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((10, 21)).astype(np.float32)
    f = VnmPattern(4, 2, 8)
    result = f.prune(a)
    pruned, mask = result
    assert pruned.dtype == a.dtype and mask.shape == a.shape
    assert result.padding == {"m": [10, 12], "k": [21, 24]}
    grid = np.pad(mask, ((0, 2), (0, 3))).reshape(3, 4, 3, 8)
    assert (grid.any(axis=1).sum(axis=2) <= 4).all() and (grid.sum(axis=3) <= 2).all()
    # the 4 selected columns of block 0, group 0 are those of largest L2 norm over its 4 rows
    norms = np.sqrt((a[:4, :8].astype(np.float64) ** 2).sum(axis=0))
    assert set(np.flatnonzero(grid[0, :, 0].any(axis=0))) <= set(np.argsort(-norms)[:4])
    comp = f.compress(pruned, mask)
    np.testing.assert_array_equal(comp.dense(), pruned)
    assert comp.columns.shape == (3, 3, 4) and comp.values.shape == (10, 6)
    assert comp.metadata_bytes == -(-60 * 2 // 8) + -(-36 * 3 // 8)


def test_vnm_compress_refuses_a_fifth_column_and_a_third_value() -> None:
    f = VnmPattern(2, 2, 8)
    a = np.zeros((2, 8))
    a[0, :3] = 1
    a[1, 3:5] = 1
    with pytest.raises(FunctionalError, match="rows 0..1, group 0 .* use 5 columns; 2:2:8 allows 4"):
        f.compress(a, None)
    a[1, 3:5] = 0
    with pytest.raises(FunctionalError, match="row 0, group 0 .* has 3 nonzeros; 2:2:8 allows at most 2"):
        f.compress(a, None)


def test_block_prune_zeroes_the_weakest_blocks_and_compress_is_bsr() -> None:
    a = np.arange(1, 1 + 6 * 10, dtype=np.float64).reshape(6, 10)
    # 3 x 3 blocks (k padded 10 -> 12), round(4.5) = 4 zeroed (ties to even): the first block row (smallest
    # values) and block (1, 2), half padding: |29, 30, 39, 40| = 69.7 < |21..24, 31..34| = 78.3
    f = BlockSparsity(2, 4, 5000)
    result = f.prune(a)
    pruned, mask = result
    assert result.padding == {"k": [10, 12]}
    comp = f.compress(pruned, mask)
    assert comp.nonzero_blocks == 5 and list(comp.row_ptr) == [0, 0, 2, 5]
    np.testing.assert_array_equal(comp.dense(), pruned)
    assert comp.metadata_bytes == (5 + 4) * 4
    assert not mask[:2].any() and not mask[2:4, 8:].any() and mask[2:4, :8].all()


@pytest.mark.parametrize("pattern", ["4:2:8", "8:1:10", "3:2:5", "block4x8:75%", "block3x5:50%", "block8x8:90%"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "int8"])
def test_functional_check_runs_from_the_compressed_form_on_odd_shapes(pattern: str, dtype: str) -> None:
    out = functional_check(37, 11, 53, pattern, seed=5, dtype=dtype)
    assert out.passed and out.exercised and out.pattern == pattern and out.tiles_executed > 0
    assert set(out.to_dict()["padding"]) == {"m", "k"} or "k" in out.to_dict()["padding"]
    assert out.metadata_bytes > 0 and out.compressed_bytes < out.dense_bytes * 1.5


def test_tiled_kernels_match_numpy_tile_by_tile() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((19, 45))
    b = rng.standard_normal((45, 7))
    for fmt in (VnmPattern(8, 2, 9), BlockSparsity(4, 5, 6000)):
        pruned, mask = fmt.prune(a)
        comp = fmt.compress(pruned, mask)
        for tm, tkg, tn in ((1, 1, 1), (3, 2, 4), (64, 64, 64)):
            c, tiles = execute_compressed(comp, b, tm, tkg, tn, return_tiles=True)
            np.testing.assert_allclose(c, pruned @ b, atol=1e-12)
            assert tiles >= 1


def test_an_unquoted_vnm_in_yaml_gets_a_hint() -> None:
    from accelsim.config import yamlsafe
    from accelsim.workloads.model import workload_from_dict
    value = yamlsafe.load("s: 64:2:8")["s"]
    assert value == 64 * 3600 + 2 * 60 + 8
    with pytest.raises(Exception, match=r"YAML reads an unquoted 64:2:8 as a base-60 number; quote the pattern: "
                                        r"\"64:2:8\""):
        workload_from_dict({"name": "w", "sparsity": value, "layers": [{"name": "g", "op": "gemm", "m": 8, "n": 8,
                                                                         "k": 8}]})
    assert parse_format("128:2:100") == VnmPattern(128, 2, 100)  # 100 is not base-60: YAML keeps the text


def test_block_folds_pack_the_union_of_their_block_rows_kept_columns() -> None:
    """A systolic fold of 4 rows covers two 2x2 block rows and computes every block column either keeps."""
    a = np.zeros((8, 8))
    a[0:2, 0:2] = 1.0  # block row 0 keeps block column 0
    a[2:4, 4:6] = 2.0  # block row 1 keeps block column 2: fold 0 packs columns {0, 2}, 4 positions of k
    a[4:6, 2:4] = 3.0  # block rows 2 and 3 both keep block column 1: fold 1 packs {1}
    a[6:8, 2:4] = 4.0
    comp = BlockSparsity(2, 2, 5000).compress(a, None)
    ptr, cols = comp.fold_union(4)
    assert list(ptr) == [0, 2, 3] and list(cols) == [0, 2, 1]
    b = np.arange(8 * 3, dtype=np.float64).reshape(8, 3)
    c, tiles = execute_compressed(comp, b, 4, 1, 3, tile_k_values=2, return_tiles=True, folds=True)
    np.testing.assert_array_equal(c, a @ b)
    assert tiles == 2 + 1  # fold 0: 4 packed positions in k-folds of 2; fold 1: 2 positions
    _, per_block = execute_compressed(comp, b, 4, 1, 3, tile_k_values=2, return_tiles=True)
    assert per_block == 4  # a BSR kernel on tensor cores: one k-step per nonzero block


def test_functional_check_runs_the_folds_the_systolic_timing_charges_for() -> None:
    """tpu-like (128x128 ws) on block32x32:75%: a fold of 128 columns covers 4 block rows and packs the union of
    their kept block columns, 32 x (1 - 0.75^4) = 22 expected, into 128-row k-folds. The check used to run the
    BSR kernel, one tile per nonzero block (64 tiles), against the engine's 12 folds."""
    from accelsim.engine import simulate
    from accelsim.hardware.model import load_hardware
    from accelsim.lowering import lower_layer
    from accelsim.workloads.model import Gemm

    hw = load_hardware(HW / "tpu-like.yaml")
    m, n, k = 256, 64, 1024
    out = functional_check(m, n, k, "block32x32:75%", dtype="fp16", tiling=hw)
    timed = simulate(lower_layer(Gemm(name="g", op="gemm", m=m, n=n, k=k), "fp16", 2, "block32x32:75%", hw), hw)
    assert out.passed and out.exercised
    assert (out.tiling.tile_m, out.tiling.tile_k_values, out.tiling.tile_n) == (128, 128, timed.tiling["chunk"])
    assert out.tiling.fold_k_blocks == timed.tiling["fold_k_blocks"] == 22
    unions = out.fold_k_blocks_executed
    assert unions is not None and len(unions) == m // 128 and all(22 - 6 <= u <= 22 + 6 for u in unions)
    k_folds = sum(-(-u * 32 // 128) for u in unions)
    assert out.tiles_executed == k_folds * -(-n // out.tiling.tile_n)
    assert out.tiles_executed == timed.tiling["folds"] == 12  # this A's unions (25, 19) fold as the expected 22


@pytest.mark.parametrize(("hw_name", "pattern"), [("a100-like", "2:4"), ("a100-like", "64:2:8"),
                                                  ("a100-like", "block32x32:75%"), ("tpu-like", "block32x32:75%")])
def test_a_sparse_grouped_conv_stores_every_group(hw_name: str, pattern: str) -> None:
    """A grouped conv's GEMM view is one group's weight (m = 256 / 4 filters, k = 3 x 3 x 64), run groups times.
    Run sparse (the deployment analysis's what-if view; lowering itself runs grouped convs dense,
    op_no_sparse_kernel), the footprint stores all 4 groups compressed, the bytes the engine reads for A; it used
    to count one group (4x too few: 41,472 B for 2:4 against the engine's 165,888)."""
    from accelsim.engine import simulate
    from accelsim.hardware.model import load_hardware
    from accelsim.lowering import sparse_view
    from accelsim.simulation import footprint
    from accelsim.workloads.model import workload_from_dict

    model = workload_from_dict({"name": "gconv", "dtype": "fp16", "layers": [
        {"name": "g4", "op": "conv2d", "ifmap": [28, 28], "kernel": [3, 3], "channels": 256, "filters": 256,
         "padding": 1, "groups": 4}]}, "gconv.yaml")
    hw = load_hardware(HW / f"{hw_name}.yaml")
    kern = sparse_view(model.layers[0], "fp16", 2, pattern, hw)
    assert kern is not None and kern.sparse and (kern.m, kern.k, kern.batch) == (64, 576, 4)
    fmt = kern.executed_format
    values = 4 * fmt.value_bytes(64, 576, 2)
    meta = 4 * fmt.metadata_bytes(64, 576, kern.metadata_bits)
    fp = footprint(model, [kern], hw)
    assert fp["weights_dense_bytes"] == 4 * 64 * 576 * 2 == 294_912  # what dense (and the run's fallback) stores
    assert (fp["weights_deployed_bytes"], fp["weights_metadata_bytes"]) == (values + meta, meta)
    dram = simulate(kern, hw, keep_tiles=False).bytes["dram"]  # A read once: exactly the stored bytes
    assert (dram["a_values"], dram["a_metadata"]) == (values, meta)
    assert values == {"2:4": 147_456, "64:2:8": 73_728, "block32x32:75%": 73_728}[pattern]
