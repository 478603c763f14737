"""Results are frozen values all the way down, the JSON reads back byte for byte, layers make a table."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import json
from collections.abc import Callable

import pytest
from conftest import HW, ROOT, WL
from pydantic import ValidationError

from accelsim import RunResult, examples, load_hardware, load_workload, run
from accelsim.errors import AccelsimError
from accelsim.records import FrozenDict, FrozenList
from accelsim.regress import golden_text
from accelsim.results import SCHEMA_VERSION
from accelsim.simulation import Simulator
from accelsim.tables import to_dataframe

GOLDEN_BODIES = sorted((ROOT / "tests" / "golden" / "bodies").rglob("*.json"))

# (hardware, workload, params, sparsity, policy): systolic and tensor-core parts, with and without an energy
# table; the last two have sparse layers above a million cycles whose dense baseline the JSON rounds away
CASES = [
    ("a100-like", "bert-base", {"batch": 1, "seq": 128}, "2:4", "sparse-if-supported"),  # tensor core, energy
    ("h100-like", "resnet18", None, "2:4", "fastest"),  # tensor core, no energy table
    ("tpu-like", "gemm-microbench", None, None, "sparse-if-supported"),
    ("flex-nm", "mobilenetv2", None, "1:4", "fastest"),
    ("tpu-like", "llama2-7b-prefill", None, "2:4", "sparse-if-supported"),
    ("edge-npu", "bert-base", {"batch": 8, "seq": 512}, "2:4", "sparse-if-supported"),
]


def _run(hw: str, wl: str, params: dict | None, sparsity: str | None, policy: str) -> RunResult:
    return run(load_workload(WL / f"{wl}.yaml", params=params), load_hardware(HW / f"{hw}.yaml"), sparsity,
               policy=policy)


@pytest.fixture(scope="module")
def bert() -> RunResult:
    return _run(*CASES[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}-{c[4]}")
def test_json_round_trip_is_byte_identical(case) -> None:
    result = _run(*case)
    text = result.to_json()
    back = RunResult.from_json(text)
    assert back.to_json() == text
    assert back == result and back.to_dict() == json.loads(text)
    assert RunResult.from_dict(result.to_dict()) == result
    # each layer's dense baseline is written exactly (the rounded speedup alone loses it above ~1M cycles)
    assert [lay["dense_cycles"] for lay in json.loads(text)["layers"]] == [k.baseline_cycles for k in result.layers]


def test_dense_cycles_is_the_dense_runs_layer_cycles() -> None:
    hw = load_hardware(HW / "tpu-like.yaml")
    model = load_workload(WL / "resnet18.yaml")
    sparse, dense = run(model, hw, "2:4"), run(model, hw, None)
    assert [k.dense_cycles for k in sparse.layers] == [k.cycles["total"] for k in dense.layers]
    assert any(k.speedup_vs_dense != 1.0 for k in sparse.layers)
    for k in sparse.layers:
        assert k.speedup_vs_dense == k.baseline_cycles / k.cycles["total"]


def test_results_written_before_dense_cycles_still_read_back(bert) -> None:
    data = bert.to_dict()
    for lay in data["layers"]:
        del lay["dense_cycles"]
    back = RunResult.from_dict(data)
    assert [k.cycles for k in back.layers] == [k.cycles for k in bert.layers]
    pairs = zip(back.layers, bert.layers, strict=True)
    assert all(abs(b.speedup_vs_dense - k.speedup_vs_dense) < 1e-6 for b, k in pairs)


@pytest.mark.parametrize("path", GOLDEN_BODIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_bodies_read_back_identically(path) -> None:
    text = path.read_text(encoding="utf-8")
    back = RunResult.from_dict(json.loads(text))
    assert golden_text(back.body()) == text


def _mutations(tree: object) -> list[tuple[str, Callable[[], object]]]:
    """Every way to change ``tree`` in place, at every level of it (dicts and lists of a result)."""
    out: list[tuple[str, Callable[[], object]]] = []
    if isinstance(tree, dict):
        out += [("setitem", lambda: tree.__setitem__("x", 1)), ("pop", lambda: tree.pop("x", None)),
                ("clear", tree.clear), ("update", lambda: tree.update(x=1)),
                ("setdefault", lambda: tree.setdefault("x"))]
        for v in tree.values():
            out += _mutations(v)
    elif isinstance(tree, list | tuple):
        out += [("append", lambda: tree.append(1)), ("setitem", lambda: tree.__setitem__(0, 1)),  # type: ignore
                ("extend", lambda: tree.extend([1])), ("sort", lambda: tree.sort())]  # type: ignore[union-attr]
        for v in tree:
            out += _mutations(v)
    return out


def test_results_are_frozen_all_the_way_down(bert) -> None:
    """The audit's edits (a layer's cycles, the layer list, the echoed hardware) are refused; totals and JSON stay."""
    text, totals = bert.to_json(), bert.totals
    layer = bert.layers[5]
    with pytest.raises(dataclasses.FrozenInstanceError):
        layer.name = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        bert.layers = []  # type: ignore[misc]
    with pytest.raises(TypeError, match="read-only"):
        layer.cycles["total"] += 1_000_000  # type: ignore[index]
    with pytest.raises(AttributeError):
        bert.layers.pop()  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="read-only"):
        bert.hardware["name"] = "x"  # type: ignore[index]
    trees = [getattr(layer, f) for f in ("shape", "padding", "cycles", "bytes", "busy", "tiling", "counts", "energy",
                                         "clock")]
    trees += [getattr(bert, f) for f in ("hardware", "workload", "meta", "footprint", "warnings", "dtype_peaks")]
    attempts = [m for t in trees for m in _mutations(t)]
    assert len(attempts) > 50
    for what, change in attempts:
        with pytest.raises((TypeError, AttributeError)):
            change()
            pytest.fail(f"{what} changed a result")
    assert bert.to_json() == text and bert.totals == totals
    assert copy.deepcopy(bert) is bert and copy.deepcopy(layer) is layer


def test_to_dict_is_a_plain_copy_to_change(bert) -> None:
    """to_dict() gives plain dicts and lists (what json.loads gives) that the caller may edit; the result stays."""
    text = bert.to_json()
    data = bert.to_dict()
    assert data == json.loads(text) and type(data["layers"][0]["padding"]) is dict
    data["layers"][0]["cycles"]["total"] += 1
    data["hardware"]["name"] = "changed"
    data["warnings"].append("x")
    layer = bert.layers[0].to_dict()
    layer["bytes"]["dram"]["b"] = -1
    assert bert.to_json() == text
    body = copy.deepcopy(bert.body())  # a deep copy of the read-only view is plain data too
    body["layers"][0]["shape"]["x"] = 1
    assert bert.to_json() == text


def test_replace_and_the_simulator_cache_share_only_read_only_parts() -> None:
    """Identical layers come from one cached simulation and share its (read-only) dicts; replace() freezes changes."""
    hw = load_hardware(HW / "tpu-like.yaml")
    sim = Simulator(hw)
    result = run(load_workload(WL / "bert-base.yaml", params={"batch": 1, "seq": 64}), hw, "2:4", simulator=sim)
    for k in [*result.layers, *sim._cache.values()]:
        for name in ("cycles", "bytes", "busy", "tiling", "shape", "padding", "counts"):
            value = getattr(k, name)
            assert isinstance(value, FrozenDict), f"{name} of {k.name}"
            with pytest.raises(TypeError):
                value["x"] = 1
    renamed = result.layers[0].replace(name="renamed", tiling={"note": [1, 2]})
    assert renamed.name == "renamed" and result.layers[0].name != "renamed"
    assert isinstance(renamed.tiling, FrozenDict) and renamed.tiling["note"] == [1, 2]
    assert isinstance(renamed.tiling["note"], FrozenList) and isinstance(result.warnings, FrozenList)


def test_a_loaded_workload_cannot_be_emptied() -> None:
    """A workload's layers are a tuple: the audit's model.layers.clear() (then a 0-layer run) cannot happen."""
    model = load_workload(examples.workload("bert-base"), params={"batch": 1, "seq": 64})
    assert isinstance(model.layers, tuple) and len(model.layers) > 10
    with pytest.raises(AttributeError):
        model.layers.clear()  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        model.layers = ()  # type: ignore[misc]


def test_from_dict_refuses_what_is_not_a_result(bert) -> None:
    with pytest.raises(AccelsimError, match="not an accelsim result"):
        RunResult.from_dict({"layers": []})
    with pytest.raises(AccelsimError, match="not an accelsim result"):
        RunResult.from_json("{")
    with pytest.raises(AccelsimError, match="schema_version 99"):
        RunResult.from_dict({"schema_version": 99, "layers": []})
    with pytest.raises(AccelsimError, match="<result hardware>: clock_ghz: required key is missing"):
        RunResult.from_dict({"schema_version": SCHEMA_VERSION, "layers": [], "hardware": {}})
    data = bert.to_dict()
    del data["totals"]
    with pytest.raises(AccelsimError, match="not an accelsim result: KeyError 'totals'"):
        RunResult.from_dict(data)


@pytest.mark.parametrize(("edit", "expect"), [
    (lambda d: d["layers"][0]["cycles"].update(total="x"), "layers[0].cycles.total is 'x', not a finite number"),
    (lambda d: d["layers"][3].update(utilization=float("nan")), "layers[3].utilization is not a finite number"),
    (lambda d: d["layers"][2]["bytes"]["sram"].pop("c"), "layers[2].bytes.sram.c is missing"),
    (lambda d: d["layers"][1]["busy"].update(memory=[1]), "layers[1].busy.memory is [1], not a finite number"),
    (lambda d: d["layers"][1]["energy"]["by_component_j"].update(mac="1"),
     "layers[1].energy.by_component_j.mac is '1', not a finite number"),
    (lambda d: d["layers"][0]["clock"].update(cycles_at_clock=None), "layers[0].clock.cycles_at_clock is None"),
    (lambda d: d["totals"].update(dense_total_cycles="7"), "totals.dense_total_cycles is '7', not a finite number"),
    (lambda d: d["footprint"].update(total_bytes=float("inf")), "footprint.total_bytes is not a finite number"),
])
def test_from_dict_refuses_corrupt_numbers_naming_the_key(bert, edit, expect) -> None:
    """The audit's corrupt files loaded, then failed at r.totals (TypeError) or to_json ("a bug in accelsim")."""
    data = bert.to_dict()
    edit(data)
    with pytest.raises(AccelsimError) as info:
        RunResult.from_dict(data)
    assert str(info.value).startswith(f"not an accelsim result: {expect}"), str(info.value)
    with pytest.raises(AccelsimError, match="not an accelsim result"):
        RunResult.from_json(json.dumps(data))


def test_layers_to_dataframe(bert) -> None:
    pytest.importorskip("pandas")
    df = bert.to_dataframe()
    assert len(df) == len(bert.layers)
    assert list(df["name"]) == [k.name for k in bert.layers]
    assert int(df["cycles_total"].sum()) == bert.totals["cycles"]["total"]
    assert int(df["bytes_dram_b"].sum()) == bert.totals["bytes"]["dram"]["b"]
    assert "energy_by_component_j_mac" in df.columns


def test_rows_to_dataframe() -> None:
    pytest.importorskip("pandas")
    df = to_dataframe([[1, "a"], [2, "b"]], columns=["n", "s"])
    assert list(df.columns) == ["n", "s"] and list(df["n"]) == [1, 2]
    assert list(to_dataframe([{"a": {"b": 1}, "c": [1, 2]}]).columns) == ["a_b", "c"]


def test_to_dataframe_without_pandas_names_the_fix(monkeypatch) -> None:
    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(AccelsimError, match="pip install pandas"):
        to_dataframe([{"a": 1}])


def test_examples_resolve_to_the_shipped_files() -> None:
    assert examples.list_hardware() == sorted(p.stem for p in HW.glob("*.yaml"))
    assert examples.list_workloads() == sorted(p.stem for p in WL.glob("*.yaml"))
    assert examples.hardware("a100-like").read_bytes() == (HW / "a100-like.yaml").read_bytes()
    assert examples.workload("bert-base").read_bytes() == (WL / "bert-base.yaml").read_bytes()
    with pytest.raises(AccelsimError, match="did you mean 'a100-like'"):
        examples.hardware("a100")
    with pytest.raises(AccelsimError, match="no shipped workload named 'hwconfigs/tpu-like.yaml'"):
        examples.workload("hwconfigs/tpu-like.yaml")
