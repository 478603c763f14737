"""Functional N:M path: prune, compress, metadata packing, tiled execution from the compressed form."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from accelsim.analysis.functional_check import (
    Compressed,
    compress,
    decompress,
    execute_compressed,
    functional_check,
    prune_magnitude,
    unpack_metadata,
    validate_mask,
)
from accelsim.errors import FunctionalError
from accelsim.report.functional_text import format_check

HWCONFIGS = Path(__file__).resolve().parents[1] / "hwconfigs"
# Every pattern the shipped hwconfigs list, plus dense-equivalent M:M.
PATTERNS = [(1, 4), (2, 4), (2, 8), (4, 8), (4, 4), (8, 8)]
# (m, n, k): 1x1xk, k < M, k not a multiple of M, m/n not multiples of the tile, exact multiples.
SHAPES = [(1, 1, 13), (1, 1, 8), (5, 7, 3), (3, 2, 1), (33, 17, 70), (40, 9, 64), (64, 64, 64)]


def _operands(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


@pytest.mark.parametrize("nm", PATTERNS, ids=lambda p: f"{p[0]}:{p[1]}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_compressed_gemm_matches_numpy(nm: tuple[int, int], shape: tuple[int, int, int]) -> None:
    n_keep, group = nm
    m, n, k = shape
    a, b = _operands(m, n, k)
    pruned, mask = prune_magnitude(a, n_keep, group)
    c = compress(pruned, mask, n_keep, group)
    ref = (a * mask) @ b
    np.testing.assert_array_equal(decompress(c), a * mask)
    for tile in [(32, 8, 32), (7, 3, 5), (1, 1, 1), (1000, 1000, 1000)]:
        out = execute_compressed(c, b, *tile)
        assert out.shape == (m, n)
        assert np.allclose(out, ref, rtol=1e-12, atol=1e-12), tile


@pytest.mark.parametrize("nm", PATTERNS, ids=lambda p: f"{p[0]}:{p[1]}")
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "int8"])
def test_functional_check_passes(nm: tuple[int, int], dtype: str) -> None:
    res = functional_check(37, 29, 51, f"{nm[0]}:{nm[1]}", seed=3, dtype=dtype)
    assert res.passed, res
    assert res.max_abs_error <= res.tolerance
    assert res.to_dict()["shape"] == {"m": 37, "n": 29, "k": 51}
    assert res.k_padded == math.ceil(51 / nm[1]) * nm[1]
    # default tiling: 32x32 weight-stationary array, stream not cut (no SRAM limit)
    kc = math.ceil(51 / nm[1]) * nm[0]
    assert res.tiles_executed == math.ceil(37 / 32) * math.ceil(kc / 32)
    json.dumps(res.to_dict())


CHECK_KEYS = ["shape", "pattern", "pattern_executed", "reason", "exercised", "not_exercised", "dtype", "seed",
              "k_padded", "padding", "tiling", "tiles_executed", "metadata_bits", "value_bytes", "metadata_bytes",
              "compressed_bytes", "dense_bytes", "compressed_fraction", "compression_ratio", "max_abs_error",
              "max_rel_error", "tolerance", "passed"]


def test_functional_check_explicit_tiling_and_table() -> None:
    res = functional_check(10, 11, 30, "2:4", tiling=(4, 3, 5))
    # compressed k = ceil(30/4)*2 = 16 values = 8 groups -> 3 k-tiles of 3 groups
    assert res.tiles_executed == 3 * 3 * 3
    assert res.tiling.tile_k_values == 6
    assert res.passed
    table = format_check(res)
    assert "max_abs_error" in table and "passed" in table and "k=[30, 32]" in table
    assert json.loads(format_check(res, as_json=True)) == json.loads(json.dumps(res.to_dict()))
    assert list(res.to_dict()) == CHECK_KEYS and list(res.to_dict()["tiling"]) == [
        "source", "tile_m", "tile_k_values", "tile_n"]  # explicit tiles: no array, no dataflow
    planned = functional_check(10, 11, 30, "2:4").to_dict()["tiling"]
    assert list(planned) == ["source", "array", "dataflow", "tile_m", "tile_k_values", "tile_n"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.passed = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        res.padding["k"] = (1, 2)  # type: ignore[index]


@pytest.mark.parametrize("hw_file", sorted(p.name for p in HWCONFIGS.glob("*.yaml")))
def test_tiles_follow_the_timing_model(hw_file: str) -> None:
    from accelsim.engine import simulate
    from accelsim.hardware.model import load_hardware
    from accelsim.lowering import lower_layer
    from accelsim.workloads.model import Gemm

    hw = load_hardware(HWCONFIGS / hw_file)
    for pattern in ("1:4", "2:4", "2:8", "4:8", "dense"):
        m, n, k = 70, 45, 77
        res = functional_check(m, n, k, pattern, dtype="fp16", tiling=hw)
        kernel = lower_layer(Gemm(name="g", op="gemm", m=m, n=n, k=k), "fp16", 2,
                             None if pattern == "dense" else pattern, hw)
        timing = simulate(kernel, hw)
        assert res.passed, (hw_file, pattern, res)
        assert res.pattern_executed == (kernel.pattern_executed or "dense")
        assert res.tiles_executed == timing.tiling["tiles"], (hw_file, pattern)
        assert res.tiling.dataflow == getattr(hw.core.compute, "dataflow", "cta")


def test_too_many_nonzeros_rejected_with_message() -> None:
    mask = np.zeros((6, 32), dtype=bool)
    mask[3, 20:23] = True  # row 3, group 5 holds 3 values
    mask[4, 0:4] = True  # a later row is also bad: the first offender is named
    msg = r"^row 3, group 5 \(k 20\.\.23\) has 3 nonzeros; 2:4 allows at most 2$"
    with pytest.raises(FunctionalError, match=msg):
        validate_mask(mask, 2, 4)
    a = np.ones((6, 32))
    with pytest.raises(FunctionalError, match=msg):
        compress(a, mask, 2, 4)
    with pytest.raises(FunctionalError, match=msg):
        compress(a * mask, None, 2, 4)  # mask None: the nonzeros of A
    validate_mask(mask, 4, 4)  # fits 4:4
    # a partial last group names its real k range
    with pytest.raises(FunctionalError, match=r"^row 0, group 2 \(k 16\.\.17\) has 2 nonzeros; 1:8 allows at most 1$"):
        validate_mask(np.array([[1] + [0] * 15 + [1, 1]]), 1, 8)


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("word_bits", [8, 32])
def test_metadata_pack_unpack_round_trip(bits: int, word_bits: int) -> None:
    rng = np.random.default_rng(bits)
    m = 2 ** bits
    for n_keep in sorted({1, max(1, m // 4), m // 2, m}):
        if n_keep < 1:
            continue
        a = rng.standard_normal((7, 3 * m + 1))
        c = compress(*prune_magnitude(a, n_keep, m), n_keep, m)
        packed = c.pack_metadata(word_bits)
        assert packed.dtype == (np.uint8 if word_bits == 8 else np.uint32)
        assert c.metadata_bits == bits
        np.testing.assert_array_equal(unpack_metadata(packed, c.indices.shape, bits), c.indices)
        assert c.metadata_bytes == math.ceil(c.kept * bits / 8)
        assert packed.nbytes == (c.metadata_bytes if word_bits == 8 else 4 * math.ceil(c.metadata_bytes / 4))


def test_metadata_bit_layout() -> None:
    # 2:4, one row, two groups with indices (0, 1) and (2, 3): one byte, first index in bits 0-1
    idx = np.array([[0, 1, 2, 3]], dtype=np.uint8)
    c = Compressed(np.ones((1, 4)), idx, 8, 8, 2, 4, 2)
    assert c.pack_metadata().tolist() == [0b11_10_01_00]
    assert c.pack_metadata(32).tolist() == [0b11_10_01_00]
    # 3-bit indices straddle byte boundaries, least significant bit first, little-endian words
    idx3 = np.array([[1, 2, 3, 4, 5, 6, 7, 0]], dtype=np.uint8)
    c3 = Compressed(np.ones((1, 8)), idx3, 16, 16, 4, 8, 3)
    stream = sum(int(v) << (3 * i) for i, v in enumerate(idx3.ravel()))
    assert c3.pack_metadata().tolist() == list(stream.to_bytes(3, "little"))
    assert c3.pack_metadata(32).tolist() == [stream]


def test_metadata_bytes_match_kept_and_2_4_fp16_ratio() -> None:
    res = functional_check(64, 16, 128, "2:4", dtype="fp16")
    assert res.value_bytes == 0.5 * res.dense_bytes
    assert res.metadata_bytes == 0.0625 * res.dense_bytes
    assert res.compressed_fraction == pytest.approx(0.5625)
    assert res.compression_ratio == pytest.approx(1 / 0.5625)
    # 4:8 (3 bits) on an odd shape: bytes round up over the whole stream
    res = functional_check(5, 3, 13, "4:8")
    kept = 5 * 2 * 4
    assert res.metadata_bytes == math.ceil(kept * 3 / 8)
    assert res.value_bytes == kept * 4


@pytest.mark.parametrize("nm", PATTERNS, ids=lambda p: f"{p[0]}:{p[1]}")
def test_pruning_keeps_exactly_the_n_largest(nm: tuple[int, int]) -> None:
    n_keep, group = nm
    a = np.random.default_rng(7).standard_normal((9, 5 * group))
    pruned, mask = prune_magnitude(a, n_keep, group)
    assert mask.dtype == bool and mask.shape == a.shape
    np.testing.assert_array_equal(pruned, np.where(mask, a, 0.0))
    for r in range(a.shape[0]):
        for g in range(5):
            sl = slice(g * group, (g + 1) * group)
            kept = np.flatnonzero(mask[r, sl])
            assert len(kept) == n_keep
            dropped = np.flatnonzero(~mask[r, sl])
            if len(dropped):
                assert np.abs(a[r, sl][kept]).min() > np.abs(a[r, sl][dropped]).max()


def test_pruning_ties_and_integer_input() -> None:
    a = np.array([[3, -3, 1, 3, -128, 0, 0, 5]], dtype=np.int8)
    pruned, mask = prune_magnitude(a, 2, 4)
    assert mask.tolist() == [[True, True, False, False, True, False, False, True]]
    assert pruned.dtype == np.int8 and pruned.tolist() == [[3, -3, 0, 0, -128, 0, 0, 5]]


def test_k_padding_is_reported() -> None:
    a = np.random.default_rng(1).standard_normal((4, 10))
    res = prune_magnitude(a, 2, 4)
    assert res.k == 10 and res.k_padded == 12 and res.padding == {"k": [10, 12]}
    pruned, mask = res
    assert pruned.shape == mask.shape == (4, 10)
    assert mask[:, 8:].sum(axis=1).tolist() == [2, 2, 2, 2]  # the 2 real values of the short group
    c = compress(pruned, mask, 2, 4)
    assert (c.k, c.k_padded, c.padding) == (10, 12, {"k": [10, 12]})
    assert c.values.shape == c.indices.shape == (4, 6)
    assert prune_magnitude(a[:, :8], 2, 4).padding == {}
    out = functional_check(3, 2, 3, "4:8")  # k < M
    assert out.k_padded == 8 and out.to_dict()["padding"] == {"k": [3, 8]} and out.passed


def test_underfull_groups_filled_like_nvidia_2_4() -> None:
    a = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0, 1.0, 2.0, 0.0, 0.0]])
    c = compress(a, None, 2, 4)
    assert c.indices.tolist() == [[0, 1, 0, 2, 0, 1]]
    assert c.values.tolist() == [[0.0, 0.0, 0.0, 7.0, 1.0, 2.0]]
    groups = c.indices.reshape(1, -1, 2)
    assert (np.diff(groups.astype(int), axis=2) > 0).all()
    # fill positions may land in the k padding, always with value 0
    c2 = compress(np.array([[0.0, 0.0, 5.0]]), None, 2, 4)
    assert c2.indices.tolist() == [[0, 2]] and c2.values.tolist() == [[0.0, 5.0]]
    np.testing.assert_array_equal(decompress(c2), [[0.0, 0.0, 5.0]])


def test_execute_returns_tiles_and_accumulator_choices() -> None:
    a, b = _operands(10, 6, 16, seed=2)
    pruned, mask = prune_magnitude(a, 2, 8)
    c = compress(pruned, mask, 2, 8)
    out, tiles = execute_compressed(c, b, 4, 1, 4, return_tiles=True)
    assert tiles == 3 * 2 * 2 and out.dtype == np.float64
    out32 = execute_compressed(c, b, 4, 1, 4, acc_dtype="fp32")
    assert out32.dtype == np.float32 and np.allclose(out32, pruned @ b, rtol=1e-5, atol=1e-5)
    _, tiles = execute_compressed(c, b, 4, 1, 4, tile_k_values=3, return_tiles=True)
    assert tiles == 3 * 2 * 2  # 4 kept values in 2 groups, split mid-group by an odd fold
    ai = np.random.default_rng(0).integers(-127, 128, size=(3, 8)).astype(np.int8)
    bi = np.random.default_rng(1).integers(-127, 128, size=(8, 2)).astype(np.int8)
    pi, mi = prune_magnitude(ai, 1, 4)
    oi = execute_compressed(compress(pi, mi, 1, 4), bi, 2, 1, 2)
    assert oi.dtype == np.int64
    np.testing.assert_array_equal(oi, pi.astype(np.int64) @ bi.astype(np.int64))


def test_invalid_inputs_raise_functional_error() -> None:
    a = np.ones((2, 8))
    with pytest.raises(FunctionalError, match="N = 5"):
        prune_magnitude(a, 5, 4)
    with pytest.raises(FunctionalError, match="2-D"):
        compress(np.ones(8), None, 2, 4)
    c = compress(*prune_magnitude(a, 2, 4), 2, 4)
    with pytest.raises(FunctionalError, match="B has 7 rows"):
        execute_compressed(c, np.ones((7, 3)), 4, 1, 4)
    with pytest.raises(FunctionalError, match="tile_n"):
        execute_compressed(c, np.ones((8, 3)), 4, 1, 0)
    with pytest.raises(FunctionalError, match="metadata bits"):
        compress(*prune_magnitude(a, 4, 8), 4, 8, metadata_bits=2)
    with pytest.raises(FunctionalError, match="pattern"):
        functional_check(4, 4, 4, "2-4")
    with pytest.raises(FunctionalError, match="dtype"):
        functional_check(4, 4, 4, "2:4", dtype="fp64")
    assert c.values.flags.writeable is False
