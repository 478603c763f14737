"""Op-group labels name exactly their ops; the per-layer caption counts rows and ops; attention shapes add up."""

from __future__ import annotations

import csv
import io
import re

import pytest
from conftest import HW, WL, cli
from hypothesis import given, settings
from hypothesis import strategies as st

from accelsim import load_hardware, load_workload, run
from accelsim.analysis.deployment import DeploymentReport, build_report
from accelsim.cli.run import format_csv
from accelsim.report.deploy_markdown import render_markdown
from accelsim.report.deploy_tables import tables
from accelsim.report.deploy_text import TOP_LAYERS, grouped_layers, grouped_schedule
from accelsim.workloads.names import group_name

MORE = re.compile(r"^(?P<shown>.*) and (?P<rest>\d+) more ops?$")


def _split_outside_braces(text: str, sep: str) -> list[str]:
    out, depth, cur, i = [], 0, "", 0
    while i < len(text):
        if depth == 0 and text.startswith(sep, i):
            out.append(cur)
            cur, i = "", i + len(sep)
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        cur += text[i]
        i += 1
    return [*out, cur]


def _part_matches(part: str, value: str) -> bool:
    if part == "*":
        return True
    if not (part.startswith("{") and part.endswith("}")):
        return part == value
    for item in part[1:-1].split(","):
        lo, dots, hi = item.partition("..")
        if dots and value.isdigit() and str(int(value)) == value and int(lo) <= int(value) <= int(hi):
            return True
        if not dots and item == value:
            return True
    return False


def expand(label: str, universe: list[str]) -> tuple[list[str], int]:
    """(the ops of `universe` each pattern of the label names, in pattern order; ops counted as 'N more')."""
    rest = 0
    if m := MORE.match(label):
        label, rest = m["shown"], int(m["rest"])
    named = []
    for pattern in _split_outside_braces(label, ", "):
        parts = _split_outside_braces(pattern, ".")
        named += [u for u in universe if len(u.split(".")) == len(parts)
                  and all(_part_matches(p, v) for p, v in zip(parts, u.split("."), strict=True))]
    return named, rest


def assert_exact(label: str, names: list[str], universe: list[str], *, allow_more: bool = True) -> None:
    named, rest = expand(label, universe)
    assert len(named) == len(set(named)), f"{label!r} names an op twice"
    assert set(named) <= set(names), f"{label!r} also names {sorted(set(named) - set(names))[:5]}"
    assert len(named) + rest == len(set(names)), f"{label!r}: {len(named)} + {rest} != {len(set(names))}"
    assert allow_more or rest == 0, label


# -- group_name on its own ------------------------------------------------------------------------------

def test_labels_name_exactly_their_ops() -> None:
    universe = [f"layer4.{b}.{c}" for b in (0, 1) for c in ("conv1", "conv2")]
    assert group_name(["layer4.0.conv2", "layer4.1.conv1", "layer4.1.conv2"],
                      universe=universe) == "layer4.{0..1}.conv2, layer4.1.conv1"
    assert group_name(["encoder.0.q", "encoder.1.q", "encoder.2.q"]) == "encoder.{0..2}.q"
    assert group_name(["a.0.q", "a.1.k"]) == "a.0.q, a.1.k"
    assert group_name(["a.0.q", "a.1.q", "a.3.q"]) == "a.{0..1,3}.q"
    assert group_name(["x"]) == "x"


def test_star_only_where_every_op_of_that_part_is_in_the_group() -> None:
    projs = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    universe = [f"layers.{i}.{p}" for i in range(32) for p in projs]
    slower = [f"layers.{i}.{p}" for i in range(32) for p in projs if p not in ("gate_proj", "up_proj")]
    assert group_name(slower, universe=universe) == "layers.{0..31}.{q_proj,k_proj,v_proj,o_proj,down_proj}"
    assert group_name(universe, universe=universe) == "layers.{0..31}.*"
    assert "*" not in group_name(universe)  # without the workload's ops no '*'


def test_too_many_patterns_are_counted() -> None:
    names = ["a.0.q", "a.1.k", "b.2.v", "c.3.w"]
    assert group_name(names, limit=2) == "a.0.q, a.1.k and 2 more ops"
    assert group_name(names, limit=3) == "a.0.q, a.1.k, b.2.v, c.3.w"  # one pattern more rather than "1 more op"
    assert group_name(names, limit=1) == "a.0.q and 3 more ops"
    assert group_name(names[:3], limit=2, max_chars=15) == "a.0.q, a.1.k and 1 more op"  # 19 characters in full
    assert group_name([f"op{i}" for i in range(60)]) == "op0 and 59 more ops"


def test_names_with_pattern_characters_are_written_as_they_are() -> None:
    assert group_name(["a.{b}", "a.c"]) == "a.{b}, a.c"
    assert group_name(["x..y", "x.y"]) == "x..y, x.y"


_PART = st.sampled_from(["a", "b", "c", "conv", "q", "k", "0", "1", "2", "3", "5", "7", "10", "11", "01"])


@settings(max_examples=300, deadline=None)
@given(universe=st.lists(st.lists(_PART, min_size=1, max_size=4).map(".".join), min_size=1, max_size=60,
                         unique=True),
       data=st.data())
def test_random_labels_expand_to_exactly_their_set(universe: list[str], data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(universe), min_size=1, unique=True))
    limit = data.draw(st.integers(1, 4))
    label = group_name(names, limit=limit, universe=universe)
    assert_exact(label, names, universe)
    big = group_name(names, limit=10**6, universe=universe, max_chars=10**6)
    assert_exact(big, names, universe, allow_more=False)


# -- labels in the report --------------------------------------------------------------------------------

_CACHE: dict[str, DeploymentReport] = {}


def _report(name: str) -> DeploymentReport:
    if name not in _CACHE:
        if name == "resnet18-tpu":
            _CACHE[name] = build_report(load_workload(WL / "resnet18.yaml"), load_hardware(HW / "tpu-like.yaml"),
                                        "2:4")
        elif name == "mobilenet":
            _CACHE[name] = build_report(load_workload(WL / "mobilenetv2.yaml"), load_hardware(HW / "a100-like.yaml"),
                                        "2:4")
        else:  # name == "bert16"
            _CACHE[name] = build_report(load_workload(WL / "bert-base.yaml", {"batch": 16}),
                                        load_hardware(HW / "a100-like.yaml"), "2:4")
    return _CACHE[name]


@pytest.mark.parametrize("name", ["resnet18-tpu", "mobilenet"])
def test_report_rows_name_exactly_their_ops(name: str) -> None:
    rep = _report(name)
    universe = [r.name for r in rep.layers]
    t = tables(rep)
    groups = grouped_layers(rep.layers)[:TOP_LAYERS]
    for row, g in zip(t["layers_top"][1], groups, strict=True):
        assert_exact(row[0], g.names, universe)
    for row, sg in zip(t["schedule"][1], grouped_schedule(rep.pruning_schedule.rows), strict=False):
        assert_exact(row[1], sg.names, universe)
    for row in t["proxy"][1]:
        named, rest = expand(row[0], universe)
        assert len(named) + rest == int(row[1])
    for c in rep.contradictions:
        if c.kind == "sparse_slower_than_dense":
            assert_exact(c.message.rsplit(": ", 1)[1], list(c.layers), universe)


def test_resnet18_layer4_rows_do_not_overlap() -> None:
    rep = _report("resnet18-tpu")
    rows = tables(rep)["layers_top"][1]
    big = [r for r in rows if r[3] == "512x49x4608"]
    assert [r[:2] for r in big] == [["layer4.{0..1}.conv2, layer4.1.conv1", "3"]]
    universe = [x.name for x in rep.layers]
    assert sum(1 for r in rows if "layer4.0.conv1" in expand(r[0], universe)[0]) == 1


def test_mobilenet_slower_ops_are_named_exactly() -> None:
    rep = _report("mobilenet")
    c = next(c for c in rep.contradictions if c.kind == "sparse_slower_than_dense")
    assert c.message.endswith("features.{1,4..17}.project, features.{2,5..17}.expand, features.18.conv")


# -- per-layer caption -----------------------------------------------------------------------------------

def test_caption_counts_rows_and_ops() -> None:
    md = render_markdown(_report("bert16"))
    assert "All 186 ops in 15 rows, most time in the sparse run first" in md
    assert "The 40 ops with the most time" not in md
    rep = _report("mobilenet")
    groups = grouped_layers(rep.layers)
    md = render_markdown(rep)
    if len(groups) > TOP_LAYERS:
        held = sum(g.count for g in groups[:TOP_LAYERS])
        assert (f"The {TOP_LAYERS} rows (of {len(groups)}) with the most time in the sparse run, holding {held} "
                f"of the {len(rep.layers)} ops") in md
    else:
        assert f"All {len(rep.layers)} ops in {len(groups)} rows" in md


# -- attention: batch, fused ops, op types ---------------------------------------------------------------

def _csv_rows(workload: str, params: dict[str, int] | None = None, hw: str = "a100-like") -> list[dict[str, str]]:
    res = run(load_workload(WL / workload, params), load_hardware(HW / f"{hw}.yaml"), "2:4")
    return list(csv.DictReader(io.StringIO(format_csv(res))))


@pytest.mark.parametrize(("workload", "params"), [("bert-base.yaml", {"batch": 16}), ("mobilenetv2.yaml", None),
                                                   ("llama2-7b-decode.yaml", None)])
def test_csv_shape_multiplies_to_macs(workload: str, params: dict[str, int] | None) -> None:
    rows = _csv_rows(workload, params)
    for r in rows:
        if r["m"]:
            assert int(r["m"]) * int(r["n"]) * int(r["k"]) * int(r["batch"]) * int(r["gemms"]) == int(r["macs"]), r
        elif r["fused"] != "True":
            assert int(r["macs"]) == 0 or r["op"] not in ("gemm", "matmul", "attention", "conv2d"), r


def test_csv_attention_batch_and_fused_ops() -> None:
    rows = {r["name"]: r for r in _csv_rows("bert-base.yaml", {"batch": 16})}
    s = rows["encoder.0.scores"]
    assert (s["m"], s["n"], s["k"], s["batch"], s["gemms"], s["macs"]) == ("128", "128", "64", "192", "2",
                                                                           "402653184")
    for name in ("encoder.0.scale_mask", "encoder.0.softmax", "encoder.0.context"):
        assert rows[name]["fused"] == "True" and rows[name]["m"] == ""
    assert rows["encoder.0.q"]["fused"] == "False" and rows["encoder.0.q"]["batch"] == "1"


def test_csv_carries_the_json_layers_sizes_dense_cycles_and_energy() -> None:
    # a system run has every kind of row: GEMMs, vector ops (elements), collectives (message_bytes, devices)
    res = run(load_workload(WL / "bert-base.yaml", {"batch": 1, "seq": 32}),
              load_hardware(HW / "8xa100-like.yaml", ["system.devices=4"]), "2:4")
    rows = list(csv.DictReader(io.StringIO(format_csv(res))))
    layers = res.body()["layers"]
    assert [r["name"] for r in rows] == [lay["name"] for lay in layers]
    kinds = set()
    for r, lay in zip(rows, layers, strict=True):
        fused = r["fused"] == "True"
        for key in ("elements", "message_bytes", "devices"):
            assert r[key] == ("" if fused or key not in lay["shape"] else str(lay["shape"][key])), (r["name"], key)
            if r[key]:
                kinds.add(key)
        assert int(r["dense_cycles"]) == lay["dense_cycles"]
        assert float(r["energy_j"]) == lay["energy"]["total_j"]
        assert float(r["dense_energy_j"]) == lay["energy"]["dense_total_j"]
    assert kinds == {"elements", "message_bytes", "devices"}
    assert any(float(r["dense_energy_j"]) != float(r["energy_j"]) for r in rows)  # 2:4 ran somewhere
    plain = run(load_workload(WL / "gemm-microbench.yaml"), load_hardware(HW / "scalesim-32x32-os.yaml"))
    assert plain.layers[0].energy is None  # no energy table: the columns stay, empty
    assert {(r["energy_j"], r["dense_energy_j"]) for r in csv.DictReader(io.StringIO(format_csv(plain)))} == {("", "")}


def test_report_says_fused_and_matrix_agrees_with_by_op_type(capsys: pytest.CaptureFixture[str]) -> None:
    rep = _report("bert16")
    rows = tables(rep)["layers_top"][1]
    fused = {r[0]: r[3] for r in rows if r[0].startswith("encoder.{0..11}.") and r[2] in ("matmul", "softmax")}
    assert fused == {"encoder.{0..11}.context": "(fused)", "encoder.{0..11}.softmax": "(fused)"}
    assert "0x0x0" not in render_markdown(rep)
    matrix = {c.op_type: c.layers for c in rep.matrix.rows}
    assert matrix["attention"] == 12 and matrix["matmul"] == 12
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", WL / "bert-base.yaml", "--set",
                       "batch=16", "--sparsity", "2:4", "--by-op-type")
    assert code == 0
    counts = {ln.split()[0]: int(ln.split()[2]) for ln in out.splitlines()
              if ln.split()[:1] in (["attention"], ["matmul"])}
    assert counts == {"attention": 12, "matmul": 12}
