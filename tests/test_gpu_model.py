"""GPU-like tensor-core parts: the published A100 2:4 behaviour, from the mechanisms modelled."""

from __future__ import annotations

import pytest
from conftest import HW

from accelsim import load_hardware, run
from accelsim.workloads.model import workload_from_dict

A100 = load_hardware(HW / "a100-like.yaml")
BYTE_RATIO = 1 / 0.5625  # fp16 2:4: values at 0.5 + metadata at 0.0625 of dense bytes


def _gemm(m: int, n: int, k: int):
    return workload_from_dict({"name": "g", "dtype": "fp16", "layers": [{"name": "g", "op": "gemm",
                                                                          "m": m, "n": n, "k": k}]})


def _layer(m: int, n: int, k: int, sparsity: str = "2:4", hw=A100):
    return run(_gemm(m, n, k), hw, sparsity, keep_tiles=True).layers[0]


def test_large_compute_bound_gemm_gains_between_1_3_and_2x() -> None:
    lay = _layer(8192, 8192, 8192)
    assert 1.3 <= lay.speedup_vs_dense <= 2.0
    assert lay.binding == "compute"


@pytest.mark.parametrize("size", [64, 128, 256, 512])
def test_small_gemms_are_slower_sparse(size: int) -> None:
    lay = _layer(size, size, size)
    assert lay.speedup_vs_dense < 1.0
    assert lay.binding in ("launch", "compute")  # fixed costs, or a few CTAs at the lower sparse efficiency


def test_memory_bound_gemm_is_bounded_by_the_byte_ratio() -> None:
    dense = _layer(16384, 64, 16384, "dense")
    assert dense.binding == "memory"
    sparse = _layer(16384, 64, 16384)
    assert 1.0 < sparse.speedup_vs_dense <= BYTE_RATIO
    d, s = dense.bytes["dram"], sparse.bytes["dram"]
    assert s["a_values"] == pytest.approx(d["a_values"] / 2, rel=1e-6)
    assert s["a_metadata"] == pytest.approx(d["a_values"] / 16, rel=1e-6)


def test_one_token_decode_gemm_is_slower_sparse_and_says_why() -> None:
    lay = _layer(4096, 1, 4096)
    assert lay.speedup_vs_dense < 1.0
    # the mechanism, visible in the result: the library pads n to 32 ...
    assert lay.reason == "n_padded" and lay.padding == {"n": [1, 32]}
    # ... the sparse kernel's CTA tile is 64 columns wide and there are too few CTAs for the SMs
    assert lay.tiling["cta_tile"][1] >= 32
    assert lay.tiling["ctas"] < A100.cores and lay.tiling["idle_slot_fraction"] > 0.5
    assert lay.binding == "compute"  # the few active SMs compute padded columns


def test_last_partial_wave_leaves_cores_idle() -> None:
    data = A100.to_dict()
    data["core"]["compute"]["cta_tiles"] = {"dense": [[128, 128, 32]], "sparse": [[128, 128, 64]]}
    data["core"]["compute"]["split_k"] = {"dense": [1], "sparse": [1]}
    data["dram"]["bandwidth_gb_s"] = "unlimited"  # isolate wave quantisation from memory limits
    from accelsim.hardware.model import hardware_from_dict

    hw = hardware_from_dict(data)
    full = run(_gemm(128 * 108, 128, 4096), hw, "dense").layers[0]
    one_more = run(_gemm(128 * 109, 128, 4096), hw, "dense").layers[0]
    assert full.tiling["waves"] == 1 and one_more.tiling["waves"] == 2
    assert one_more.tiling["last_wave_ctas"] == 1
    assert one_more.tiling["idle_slot_fraction"] == pytest.approx(1 - 109 / 216, abs=1e-6)
    # one extra CTA costs (almost) a whole extra wave
    assert one_more.cycles["compute"] > 1.9 * full.cycles["compute"]
    assert one_more.utilization < 0.55 * full.utilization


def test_tile_records_add_up_with_their_multiplicity() -> None:
    for m, n, k in ((4096, 4096, 4096), (4096, 1, 4096), (768, 3072, 3072)):
        for sp in ("dense", "2:4"):
            lay = _layer(m, n, k, sp)
            t = lay.tiles
            weight = t["wave_count"] * t["active_cores"]
            assert abs((t["dram_a_values"] * weight).sum() - lay.bytes["dram"]["a_values"]) <= 1
            assert abs((t["sram_b"] * weight).sum() - lay.bytes["sram"]["b"]) <= 1
            assert round((t["compute_cycles"] * t["wave_count"]).sum()) == lay.cycles["compute"]
            c = lay.cycles
            assert c["total"] == c["compute"] + c["stall_memory"] + c["stall_decode"] + c["launch"]
            peak = 1024 * A100.cores
            assert c["total"] >= lay.macs_executed / peak / (2 if sp == "2:4" else 1)
            # compulsory traffic: A once (compressed), B once, C once
            d = lay.bytes["dram"]
            assert d["a_values"] >= m * (k if sp == "dense" else k // 2) * 2 - 1
            assert d["b"] >= k * n * 2 - 1 and d["c"] >= m * n * 2 - 1


def test_activations_in_l2_remove_b_and_c_dram_traffic() -> None:
    from accelsim.hardware.model import hardware_from_dict

    data = A100.to_dict()
    data["activations"] = "l2_if_fits"
    hw = hardware_from_dict(data)
    lay = run(_gemm(1024, 512, 1024), hw, "dense").layers[0]
    assert lay.bytes["dram"]["b"] == 0 and lay.bytes["dram"]["c"] == 0
    assert lay.tiling["b_from_l2"] and lay.tiling["c_to_l2"]
    assert run(_gemm(1024, 512, 1024), A100, "dense").layers[0].bytes["dram"]["b"] > 0


def test_dtype_without_a_rate_is_a_clear_error() -> None:
    from accelsim.errors import InfeasibleError

    wl = workload_from_dict({"name": "g", "dtype": "fp8", "layers": [{"name": "g", "op": "gemm",
                                                                      "m": 64, "n": 64, "k": 64}]})
    with pytest.raises(InfeasibleError, match="core.compute.macs_per_cycle: no fp8 rate"):
        run(wl, A100, "dense")
