"""Cache keys derive from what the code reads: a change lowering or the engine sees is a cache miss."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from accelsim import sweep
from accelsim.engine import ENGINE_IGNORES, hardware_key, simulate, simulate_totals
from accelsim.hardware.model import Hardware, hardware_from_dict, load_hardware
from accelsim.lowering import LABELS, Kernel, lower, lowering_target
from accelsim.simulation import run
from accelsim.sweep import rows as sweep_rows
from accelsim.workloads.model import load_workload

ROOT = Path(__file__).resolve().parents[1]
TPU = str(ROOT / "hwconfigs/tpu-like.yaml")
BERT = str(ROOT / "workloads/bert-base.yaml")


def _sweep_state(grid: dict[str, list[Any]]) -> tuple[sweep_rows._WorkerState, list[list[tuple]], Any]:
    """Run a BERT (seq 128, 2:4) sweep over ``grid`` in this process; its caches, rows and spec."""
    spec = sweep.spec_from_dict({"name": "keys", "hardware": TPU, "workloads": [BERT],
                                 "set": {"batch": [1], "seq": [128]}, "sparsity": ["2:4"], "grid": grid})
    ctx = sweep.work_context(spec, True)
    sweep_rows._STATE = None
    rows = sweep_rows.run_points(ctx, [(p.index, p.overrides) for p in spec.points])
    assert sweep_rows._STATE is not None
    return sweep_rows._STATE, rows, spec


def test_a_field_lowering_reads_misses_the_lowering_cache() -> None:
    """weight_shape_multiple.k is read by lowering only: a new value lowers again, and the rows say so."""
    st, rows, spec = _sweep_state({"core.sparse.weight_shape_multiple.k": [1, 4096]})
    assert len(st.lowered) == 2  # one lowering per distinct target: no stale plan reused
    fallback = sweep.METRICS.index("fallback_layers")
    assert rows[0][0][fallback] < rows[1][0][fallback]  # k = 4096: every weight GEMM falls back to dense
    model = load_workload(BERT, {"batch": 1, "seq": 128})
    for p, point_rows in zip(spec.points, rows, strict=True):  # and each row is what a plain run reports
        hw = hardware_from_dict(sweep.with_overrides(spec.hardware_data, p.overrides))
        assert point_rows[0][sweep.METRICS.index("cycles")] == run(model, hw, "2:4").totals["cycles"]["total"]


def test_an_engine_only_field_reuses_the_lowering_and_misses_the_engine_cache() -> None:
    st, rows, _ = _sweep_state({"core.sparse.decode_groups_per_cycle": [1, 64]})
    assert len(st.lowered) == 1  # lowering never reads the decode rate
    base = load_hardware(TPU)
    data = base.to_dict()
    data["core"]["sparse"]["decode_groups_per_cycle"] = 1
    slow = hardware_from_dict(data)
    assert lowering_target(slow) == lowering_target(base)
    assert hardware_key(slow) != hardware_key(base)
    assert rows[0][0][sweep.METRICS.index("cycles")] != rows[1][0][sweep.METRICS.index("cycles")]


def test_every_lowering_input_is_in_the_target() -> None:
    """Lowering from the target alone gives the same kernels as lowering from the Hardware."""
    model = load_workload(BERT, {"batch": 1, "seq": 128})
    for name in ("tpu-like", "a100-like", "flex-nm", "edge-npu"):
        hw = load_hardware(ROOT / "hwconfigs" / f"{name}.yaml")
        for sp in ("dense", "2:4", "1:4", None):
            assert lower(model, lowering_target(hw), sp) == lower(model, hw, sp)


def test_kernel_key_is_every_field_but_the_labels() -> None:
    """A new Kernel field is part of the simulation cache key unless it is declared a label."""
    hw = load_hardware(TPU)
    kernel = next(k for k in lower(load_workload(BERT, {"batch": 1, "seq": 128}), hw, "2:4") if k.sparse)
    for f in dataclasses.fields(Kernel):
        value = getattr(kernel, f.name)
        other = ({"n": [1, 2]} if isinstance(value, dict) else f"{value}x" if isinstance(value, str | None)
                 else not value if isinstance(value, bool) else value + 1)
        changed = dataclasses.replace(kernel, **{f.name: other})
        assert (changed.cache_key() == kernel.cache_key()) == (f.name in LABELS), f.name


class _Traced:
    """A read-only view of a config model that records every field path read through it."""

    def __init__(self, obj: BaseModel, path: str, log: set[str]) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_log", log)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance() sees the real class
        return type(self._obj)

    def __getattr__(self, name: str) -> Any:
        obj = self._obj
        path = f"{self._path}.{name}" if self._path else name
        if name in type(obj).model_fields:
            self._log.add(path)
            value = getattr(obj, name)
            return _Traced(value, path, self._log) if isinstance(value, BaseModel) else value
        method = getattr(type(obj), name)
        return method.__get__(self)  # a method reads through the view too


def test_the_engine_reads_nothing_its_key_leaves_out() -> None:
    """Trace every hardware field the engine reads, on every shipped config: none is in ENGINE_IGNORES."""
    model = load_workload(BERT, {"batch": 1, "seq": 128})
    for path in sorted((ROOT / "hwconfigs").glob("*.yaml")):
        hw = load_hardware(path)
        reads: set[str] = set()
        view: Any = _Traced(hw, "", reads)
        for kernel in {k.cache_key(): k for sp in ("dense", "2:4") for k in lower(model, hw, sp)}.values():
            try:
                assert simulate_totals(kernel, view) == simulate(kernel, hw, keep_tiles=False).layer_totals().totals
            except Exception as exc:  # noqa: BLE001 - an infeasible kernel still traces what it read
                if type(exc).__name__ != "InfeasibleError":
                    raise
        assert reads, path
        assert not {r.split(".")[0] for r in reads} & ENGINE_IGNORES, (path.name, sorted(reads))


def test_hardware_key_ignores_only_the_ignored_sections() -> None:
    hw: Hardware = load_hardware(TPU)
    data = hw.to_dict()
    assert hardware_key(hardware_from_dict({**data, "name": "other"})) == hardware_key(hw)
    assert hardware_key(hardware_from_dict({**data, "clock_ghz": data["clock_ghz"] * 2})) != hardware_key(hw)
