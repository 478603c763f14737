"""The compute-kind registry: what each kind answers, a toy kind end to end, config tags read from the models."""

from __future__ import annotations

import io
import json
from typing import Any, Literal

import pytest
from conftest import HW, WL
from pydantic import Field

from accelsim import load_workload, run
from accelsim.analysis.calibration import CALIBRATED_FIELDS
from accelsim.config.schema import union_tags
from accelsim.engine import SIMULATIONS, EngineHardware
from accelsim.errors import ConfigError
from accelsim.hardware import kinds
from accelsim.hardware.kinds import FOLD_TILE_ARGS, TraceLabels, UnknownKindError
from accelsim.hardware.model import Hardware, hardware_from_dict, load_hardware
from accelsim.hardware.systolic import SystolicCompute, SystolicKind
from accelsim.report.trace import stream_trace
from accelsim.simulation import peak_macs_per_cycle
from accelsim.workloads.model import Workload


def test_the_shipped_kinds_are_registered_with_their_engine_simulations() -> None:
    assert [k.name for k in kinds.kinds()] == ["systolic", "tensor_core"]
    for kind in kinds.kinds():
        assert kind.simulation in SIMULATIONS
        assert kind.schema.model_fields["kind"].annotation.__args__ == (kind.name,)
    assert kinds.compute_kind("tensor_core").trace.unit == "SM"
    assert kinds.compute_kind("systolic").trace == TraceLabels("core", (("fold", ("fold_r", "fold_c")),
                                                                        ("chunk", "chunk")))
    assert kinds.compute_kind("tensor_core").trace.tile_arg_names == ("wave_class", "k_step")


@pytest.mark.parametrize("name, dtype, peak", [("a100-like", "fp16", 1024 * 108), ("a100-like", "int8", 2048 * 108),
                                              ("a100-like", "fp64", 0.0), ("tpu-like", "fp16", 128 * 128)])
def test_peak_rate_comes_from_the_kind(name: str, dtype: str, peak: float) -> None:
    hw = load_hardware(HW / f"{name}.yaml")
    kind = kinds.kind_of(hw)
    assert kind.peak_macs_per_cycle(hw.core.compute, dtype) * hw.cores == peak_macs_per_cycle(hw, dtype) == peak


def test_calibrated_fields_are_the_kinds_and_name_config_keys() -> None:
    assert kinds.compute_kind("tensor_core").calibrated_fields == CALIBRATED_FIELDS
    assert kinds.compute_kind("systolic").calibrated_fields == ()
    data = load_hardware(HW / "a100-like.yaml").to_dict()
    for path in CALIBRATED_FIELDS:
        node: Any = data
        for key in path.split("."):
            node = node[key]
        assert isinstance(node, int | float)


def test_unknown_kind_errors_name_the_key() -> None:
    with pytest.raises(UnknownKindError, match="'gpu'.*registered: systolic, tensor_core"):
        kinds.compute_kind("gpu")
    data = load_hardware(HW / "tpu-like.yaml").to_dict()
    data["core"]["compute"]["kind"] = "gpu"
    with pytest.raises(ConfigError, match="core.compute.kind: unknown kind 'gpu'; expected one of 'systolic', "
                                          "'tensor_core'"):
        hardware_from_dict(data)


# -- a toy kind, registered only in this test -------------------------------------------------------

class ToyArrayCompute(SystolicCompute):
    """A systolic array whose PEs each do two MACs per cycle (to the timing model: a 2x wider array)."""

    kind: Literal["toy_array"] = Field(description="Compute model: a toy array.")  # type: ignore[assignment]
    macs_per_pe: Literal[2] = 2


class ToyArrayKind(SystolicKind):
    name = "toy_array"
    schema = ToyArrayCompute
    trace = TraceLabels("array", FOLD_TILE_ARGS)

    def peak_macs_per_cycle(self, compute: Any, dtype: str) -> float:
        return float(compute.rows * compute.cols * compute.macs_per_pe)


def _toy(data: dict[str, Any]) -> dict[str, Any]:
    data["core"]["compute"] = {**data["core"]["compute"], "kind": "toy_array", "macs_per_pe": 2}
    return data


def test_a_toy_kind_validates_simulates_and_reports_its_own_peak() -> None:
    base = load_hardware(HW / "tpu-like.yaml")
    model = load_workload(WL / "resnet18.yaml")
    with kinds.registered(ToyArrayKind()):
        hw = hardware_from_dict(_toy(base.to_dict()), "<toy>")
        assert isinstance(hw.core.compute, ToyArrayCompute) and kinds.kind_of(hw).trace.unit == "array"
        assert "toy_array" in union_tags(Hardware)
        toy, ref = run(model, hw, "2:4"), run(model, base, "2:4")
        assert [lay.cycles for lay in toy.layers] == [lay.cycles for lay in ref.layers]  # same simulation
        assert toy.peak_macs_per_cycle == 2 * ref.peak_macs_per_cycle == peak_macs_per_cycle(hw, "fp16")
        fh = io.StringIO()
        stream_trace(run(model, hw, "2:4", keep_tiles=True), hw, fh, layers=["conv1"])  # the kind's trace labels
        names = [e["args"]["name"] for e in json.loads(fh.getvalue())["traceEvents"] if e["name"] == "process_name"]
        assert "array 0" in names and '"fold":[' in fh.getvalue()
        cores = _toy(base.to_dict())
        cores["cores"] = 2
        with pytest.raises(ConfigError, match="cores: must be 1 for a systolic array"):  # the kind's own rules
            hardware_from_dict(cores)
    assert "toy_array" not in union_tags(Hardware)
    with pytest.raises(ConfigError, match="unknown kind 'toy_array'"):
        hardware_from_dict(_toy(base.to_dict()))


def test_a_kind_naming_an_unknown_engine_simulation_is_refused_by_name() -> None:
    class Nowhere(ToyArrayKind):
        simulation = "analytic"

    with kinds.registered(Nowhere()):
        hw = hardware_from_dict(_toy(load_hardware(HW / "tpu-like.yaml").to_dict()))
        with pytest.raises(UnknownKindError, match="'analytic'"):
            EngineHardware(hw)


def test_registering_checks_the_kind_tag() -> None:
    class Mislabelled(ToyArrayKind):
        name = "other"

    with pytest.raises(ValueError, match="kind: Literal\\['other'\\]"):
        kinds.register(Mislabelled())
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(kinds.compute_kind("systolic"))


# -- config tags -------------------------------------------------------------------------------------

def _schema_tags(schema: Any) -> set[str]:
    """Every discriminator mapping key in a JSON schema (pydantic writes one per tagged union)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(node.get("discriminator", {}).get("mapping", {}))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@pytest.mark.parametrize("model", [Hardware, Workload])
def test_config_union_tags_are_read_from_the_models(model: type) -> None:
    tags = union_tags(model)
    assert tags == _schema_tags(model.model_json_schema())
    if model is Hardware:
        assert tags == {k.name for k in kinds.kinds()}
    else:
        assert "gemm" in tags and "dwconv2d" not in tags and "max" not in tags  # pool's kind is no union tag
