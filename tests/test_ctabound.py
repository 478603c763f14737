"""engine.ctabound: the floor the CTA-grid search prunes with never exceeds a candidate's simulated total.

The floor mirrors what ``ctagrid._cta_grid`` simulates; a change there that lowers a candidate's cycles (fewer
bytes per k-step, a faster port) must lower the floor too, or this test fails."""

from __future__ import annotations

import pytest
from conftest import HW, ROOT

from accelsim import load_hardware, load_workload, run, simulate
from accelsim.engine import ctabound, ctagrid
from accelsim.lowering import Kernel

SHAPES = [(1, 7, 129), (7, 4097, 129), (129, 129, 4097), (512, 512, 512), (1024, 1024, 1024), (4097, 7, 1),
          (2048, 5120, 64), (96, 96, 12288)]
FLOOR = ctabound.compute_floor


@pytest.mark.parametrize("hw_name", ["a100-like", "h100-like", "rtx4090-like", "b200-like"])
def test_floor_is_below_every_candidates_total(hw_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hw = load_hardware(HW / f"{hw_name}.yaml")
    seen = {"floored": 0}
    run_grid = ctagrid._cta_grid

    def checked(kernel, hw, tile, split, mma, rate, *args, **kwargs):  # type: ignore[no-untyped-def]
        segs, tiling, unsettled = run_grid(kernel, hw, tile, split, mma, rate, *args, **kwargs)
        extras = kwargs.get("extras", args[5] if len(args) > 5 else None)  # e, mbits, stages, rasters, known, extras
        floor = FLOOR(kernel, hw, tile, split, mma[2], rate, args[0], args[1], extras)
        if floor is not None:
            seen["floored"] += 1
            if not isinstance(tiling.get("stream_k"), dict):  # waves, not stream-K units
                assert sum(s.count for s in segs) == tiling["waves"]
            assert floor <= sum(s.count * s.end for s in segs)
        return segs, tiling, unsettled

    monkeypatch.setattr(ctagrid, "_cta_grid", checked)
    monkeypatch.setattr(ctabound, "compute_floor", lambda *a, **k: None)  # the search simulates every candidate
    for m, n, k in SHAPES:
        simulate(Kernel("g", "gemm", m, n, k, "fp16", 2, "dense", None, None, None), hw)
        simulate(Kernel("g", "gemm", m, n, k, "fp16", 2, "sparse", "2:4", "2:4", None, 2, 4, 2), hw)
    for name, params in (("resnet18", None), ("bert-base", {"batch": 2, "seq": 128})):  # convolutions, attention
        model = load_workload(ROOT / "workloads" / f"{name}.yaml", params=params)
        for sparsity in ("dense", "2:4"):
            run(model, hw, sparsity)
    assert seen["floored"] > 0
