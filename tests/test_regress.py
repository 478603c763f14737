"""accelsim regress: drift, errors, tolerances, one-sided results, blessing, and accelsim's own goldens."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HW, ROOT, WL

from accelsim.cli.regress import regress_command
from accelsim.config.schema import read_yaml
from accelsim.errors import AccelsimError
from accelsim.hardware.model import hardware_from_dict
from accelsim.regress import (
    ResultFileError,
    SchemaVersionError,
    Tolerance,
    Tolerances,
    bless,
    check_result,
    compare,
    golden_body,
    golden_text,
    load_result,
    loading,
)
from accelsim.report.regression import format_markdown, format_table
from accelsim.results import SCHEMA_VERSION
from accelsim.simulation import run
from accelsim.workloads.model import load_workload

GOLDEN = ROOT / "tests" / "golden"
_spec = importlib.util.spec_from_file_location("make_goldens", GOLDEN / "make_goldens.py")
make_goldens = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("make_goldens", make_goldens)
_spec.loader.exec_module(make_goldens)


def _tpu(**dram) -> object:
    data, _ = read_yaml(HW / "tpu-like.yaml")
    data["dram"].update(dram)
    return hardware_from_dict(data, "tpu-like (test)")


@pytest.fixture(scope="module")
def micro():
    """gemm-microbench 2:4 on tpu-like (full result, with meta) and the same at 50 GB/s DRAM."""
    wl = load_workload(WL / "gemm-microbench.yaml")
    base = run(wl, _tpu(), "2:4")
    slow = run(wl, _tpu(bandwidth_gb_s=50), "2:4")
    return base, slow


def _write(path: Path, data: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def _table_rows(text: str) -> list[str]:
    """Data rows of the 'moved' table in the text report."""
    lines = text.splitlines()
    start = lines.index("moved (worst first)") + 3
    out = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("..."):
            break
        out.append(line)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The golden matrix, generated once in this process."""
    out = tmp_path_factory.mktemp("goldens-a")
    paths = make_goldens.generate(out)
    return out, paths


# --------------------------------------------------------------------------------------------- determinism

def test_matrix_covers_every_hwconfig_and_both_sparsities():
    cases = make_goldens.matrix()
    hws = {Path(c.hw).name for c in cases}
    assert hws == {p.name for p in HW.glob("*.yaml") if not p.name.startswith("8x")}  # system files: own tests
    assert {c.sparsity for c in cases} == {"dense", "2:4"}
    assert len({c.relpath for c in cases}) == len(cases)
    for wl, _ in make_goldens.WORKLOADS:
        assert (WL / wl).is_file()


def test_goldens_are_byte_identical_across_processes(generated, tmp_path):
    out_a, paths = generated
    out_b = tmp_path / "goldens-b"
    proc = subprocess.run([sys.executable, str(GOLDEN / "make_goldens.py"), str(out_b)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    files_a = sorted(p.relative_to(out_a).as_posix() for p in out_a.rglob("*.json"))
    files_b = sorted(p.relative_to(out_b).as_posix() for p in out_b.rglob("*.json"))
    assert files_a == files_b and len(files_a) == len(make_goldens.matrix())
    for rel in files_a:
        a, b = (out_a / rel).read_bytes(), (out_b / rel).read_bytes()
        assert a == b, f"{rel} differs between two processes"
    # bodies only: no meta, no paths of this machine, canonical text
    sample = (out_a / files_a[0]).read_text(encoding="utf-8")
    body = json.loads(sample)
    assert "meta" not in body and body["schema_version"] == SCHEMA_VERSION
    assert sample == golden_text(body)
    for rel in files_a:
        text = (out_a / rel).read_text(encoding="utf-8")
        assert str(ROOT) not in text and str(out_a) not in text, rel


def test_golden_body_strips_meta_only(micro):
    base, _ = micro
    full = json.loads(base.to_json())
    assert "meta" in full
    body = golden_body(full)
    assert "meta" not in body
    assert body == json.loads(json.dumps(golden_body(base)))
    # a full result (with meta) against its own body: nothing moves
    assert compare(full, body).exit_code == 0


# --------------------------------------------------------------------------------------------- drift

def test_planted_hardware_drift_exits_1_with_moved_metrics_first(micro, tmp_path):
    base, slow = micro
    b = _write(tmp_path / "base.json", base.to_json())
    c = _write(tmp_path / "cand.json", slow.to_json())
    code, text = regress_command(b, c, out_dir=tmp_path / "out")
    assert code == 1
    assert text.startswith("accelsim regress: DRIFT (exit 1)")
    assert "inputs changed: hardware.dram.bandwidth_gb_s 600 -> 50" in text
    rows = _table_rows(text)
    assert rows, text
    # worst first: every listed row is drift, relative changes do not increase down the table
    assert all(r.split()[0] in ("drift", "changed") for r in rows)
    report = compare(b, c)
    ranks = [r.rank for r in report.rows]
    assert ranks == sorted(ranks)
    first = report.rows[0]
    assert first.status == "drift" and first.layer == "(run)" and first.metric == "totals.cycles.total"
    assert rows[0].split()[0] == "drift" and first.metric in rows[0]
    moved = {r.metric for r in report.drift_rows}
    for metric in ("cycles.total", "cycles.stall_memory", "totals.cycles.total", "hardware.dram.bandwidth_gb_s",
                   "speedup_vs_dense"):
        assert metric in moved, metric
    assert "cycles.total" in text and "drift by metric" in text
    # JSON and Markdown written
    data = json.loads((tmp_path / "out" / "regress.json").read_text())
    assert data["status"] == "drift" and data["exit_code"] == 1 and data["counts"]["drift"] == len(report.drift_rows)
    assert data["rows"][0]["status"] in ("drift", "changed")
    md = (tmp_path / "out" / "regress.md").read_text()
    assert md.startswith("### accelsim regress: ❌ drift")


def test_identical_results_exit_0(micro, tmp_path):
    base, _ = micro
    b = _write(tmp_path / "a.json", base.to_json())
    c = _write(tmp_path / "b.json", golden_text(golden_body(base)))
    code, text = regress_command(b, c)
    assert code == 0, text
    assert text.startswith("accelsim regress: OK")
    assert ": 0 drift" in text


def test_string_change_is_drift_regardless_of_tolerance(micro):
    base, _ = micro
    b = golden_body(base)
    c = copy.deepcopy(b)
    c["layers"][0]["binding"] = "memory" if b["layers"][0]["binding"] != "memory" else "compute"
    rep = compare(b, c, {"default_rtol": 1.0, "default_atol": 1e12})
    assert rep.exit_code == 1
    assert [(r.layer, r.metric, r.status) for r in rep.rows] == [(b["layers"][0]["name"], "binding", "changed")]


# --------------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("content, expect", [
    ('{"schema_version": 1, "layers": [{"name": "a", "cycles": {"tot', "not JSON"),
    ("", "not JSON (the file is empty)"),
    ('{"hello": "world"}', "not an accelsim result (no schema_version and layers)"),
    ("[1, 2, 3]", "not an accelsim result (top level is a JSON array)"),
    ('{"schema_version": 1, "layers": [{"cycles": 1}]}', "layers[0] has no 'name'"),
    ('{"schema_version": "one", "layers": []}', "not an accelsim result (schema_version 'one'"),
])
def test_malformed_baseline_exits_2_with_one_line(micro, tmp_path, content, expect):
    base, _ = micro
    bad = _write(tmp_path / "bad.json", content)
    good = _write(tmp_path / "good.json", base.to_json())
    code, text = regress_command(bad, good)
    assert code == 2
    assert text.startswith(f"accelsim: error: {bad}: ") and text.count("\n") == 1, text
    assert expect in text


@pytest.mark.parametrize(("edit", "expect"), [
    (lambda d: d["layers"][0]["cycles"].update(total="x"), "cycles.total is 'x', not a finite number"),
    (lambda d: d["layers"][1]["bytes"]["dram"].update(b=None), "bytes.dram.b is None, not a finite number"),
    (lambda d: d["layers"][0].update(cycles=[1, 2]), "cycles is [1, 2], expected a mapping of numbers"),
    (lambda d: d["layers"][0].update(macs=True), "macs is True, not a finite number"),
    (lambda d: d["totals"]["cycles"].update(total="x"), "totals.cycles.total is 'x', not a finite number"),
    (lambda d: d["totals"]["bytes"]["dram"].update(b=[1]), "totals.bytes.dram.b is [1], not a finite number"),
    (lambda d: d["totals"].update(latency_us=None), "totals.latency_us is None, not a finite number"),
])
def test_a_value_of_the_wrong_type_is_a_malformed_file_not_a_change(micro, tmp_path, edit, expect):
    """A count written as text (or null, a list, a boolean) exits 2 naming the key, instead of 'changed' / exit 1."""
    base, _ = micro
    data = base.to_dict()
    edit(data)
    good = _write(tmp_path / "good.json", base.to_json())
    bad = _write(tmp_path / "bad.json", data)
    for args in ((good, bad), (bad, good)):
        code, text = regress_command(*args)
        assert code == 2 and text.count("\n") == 1, text
        assert text.startswith(f"accelsim: error: {bad}: ") and expect in text, text


def test_truncated_golden_says_so(micro, tmp_path):
    base, _ = micro
    text = golden_text(golden_body(base))
    bad = _write(tmp_path / "trunc.json", text[: len(text) // 2])
    with pytest.raises(ResultFileError, match=r"not JSON: .* \(truncated\?\)"):
        load_result(bad)


def test_older_schema_is_refused_with_advice(micro, tmp_path):
    base, _ = micro
    old = golden_body(base)
    old["schema_version"] = SCHEMA_VERSION - 1
    bad = _write(tmp_path / "old.json", old)
    good = _write(tmp_path / "good.json", base.to_json())
    code, text = regress_command(bad, good)
    assert code == 2 and text.count("\n") == 1
    assert (f"schema_version {SCHEMA_VERSION - 1} is older than this accelsim's {SCHEMA_VERSION} and has no "
            "migration; re-run the simulation or bless new baselines") in text


def test_newer_schema_is_refused(micro, tmp_path):
    base, _ = micro
    new = golden_body(base)
    new["schema_version"] = SCHEMA_VERSION + 1
    path = _write(tmp_path / "new.json", new)
    with pytest.raises(SchemaVersionError, match="is newer than this accelsim's"):
        load_result(path)
    code, text = regress_command(_write(tmp_path / "good.json", base.to_json()), path)
    assert code == 2 and "newer" in text


def test_registered_migration_is_applied(micro, tmp_path, monkeypatch):
    """A result one version back is migrated (never compared field-by-misnamed-field)."""
    base, _ = micro
    body = golden_body(base)
    old = copy.deepcopy(body)
    for layer in old["layers"]:               # pretend v(N) renamed 'binding' from 'bound_by'
        layer["bound_by"] = layer.pop("binding")
    old["schema_version"] = SCHEMA_VERSION

    def step(data):
        for layer in data["layers"]:
            layer["binding"] = layer.pop("bound_by")
        data["schema_version"] += 1
        return data

    monkeypatch.setattr(loading, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(loading.MIGRATIONS, SCHEMA_VERSION, step)
    new = {**body, "schema_version": SCHEMA_VERSION + 1}
    rep = compare(_write(tmp_path / "old.json", old), _write(tmp_path / "new.json", new))
    assert rep.exit_code == 0, format_table(rep)


def test_other_errors_exit_2(micro, tmp_path):
    base, _ = micro
    f = _write(tmp_path / "r.json", base.to_json())
    (tmp_path / "d").mkdir()
    for args in [(tmp_path / "missing.json", f), (f, tmp_path / "d"), (tmp_path / "d", tmp_path / "d")]:
        code, text = regress_command(*args)
        assert code == 2 and text.startswith("accelsim: error: ") and text.count("\n") == 1, text
    tol = _write(tmp_path / "tol.yaml", "default_rtoll: 0.1\n")
    code, text = regress_command(f, f, tolerances=tol)
    assert code == 2 and "unknown key (did you mean 'default_rtol'?)" in text
    tol = _write(tmp_path / "tol2.yaml", "metrics: {cycles.total: {rtol: -1}}\n")
    code, text = regress_command(f, f, tolerances=tol)
    assert code == 2 and "metrics.cycles.total.rtol" in text
    assert isinstance(ResultFileError("x", "y"), AccelsimError)


# --------------------------------------------------------------------------------------------- one-sided

def test_layer_on_one_side_is_drift_and_listed(micro):
    base, _ = micro
    b = golden_body(base)
    c = copy.deepcopy(b)
    gone = c["layers"].pop(2)["name"]
    extra = copy.deepcopy(c["layers"][0])
    extra["name"] = "g-new"
    c["layers"].append(extra)
    rep = compare(b, c, {"ignore": ["workload.*", "totals.*", "by_op_type*", "footprint.*", "energy*"]})
    assert rep.exit_code == 1
    assert [(o.layer, o.side) for o in rep.one_sided] == [(gone, "baseline"), ("g-new", "candidate")]
    assert not rep.rows  # the layers on both sides did not move
    text = format_table(rep)
    assert f"layer '{gone}' in the result: only in the baseline" in text
    assert "layer 'g-new' in the result: only in the candidate" in text
    md = format_markdown(rep)
    assert f"- layer `{gone}`: only in the baseline" in md


def test_file_on_one_side_is_drift_and_listed(micro, tmp_path):
    base, _ = micro
    text = golden_text(golden_body(base))
    for side in ("b", "c"):
        _write(tmp_path / side / "tpu" / "micro.json", text)
    _write(tmp_path / "b" / "tpu" / "only-base.json", text)
    _write(tmp_path / "c" / "edge" / "only-cand.json", text)
    code, out = regress_command(tmp_path / "b", tmp_path / "c")
    assert code == 1
    assert "file tpu/only-base.json: only in the baseline" in out
    assert "file edge/only-cand.json: only in the candidate" in out
    assert "1 file, " in out and "on one side only: 0 layers, 2 files" in out
    rep = compare(tmp_path / "b", tmp_path / "c")
    assert not rep.rows and rep.counts.files == 1


def test_metric_on_one_side_is_drift(micro):
    base, _ = micro
    b = golden_body(base)
    c = copy.deepcopy(b)
    c["layers"][0]["cycles"]["new_cause"] = 0
    del c["layers"][1]["tiling"]["chunk"]
    rep = compare(b, c)
    assert {(r.metric, r.status) for r in rep.rows} == {("cycles.new_cause", "added"), ("tiling.chunk", "removed")}
    assert rep.exit_code == 1
    rows = {r["metric"]: r for r in json.loads(rep.to_json())["rows"]}
    assert rows["cycles.new_cause"]["baseline"] is None and rows["cycles.new_cause"]["candidate"] == 0
    assert "(absent)" in format_table(rep) and "(absent)" in format_markdown(rep)


def test_an_empty_section_that_disappears_or_changes_kind_is_drift(micro):
    """An empty dict or list used to flatten to nothing: a result that stopped writing ``warnings: []`` or a
    layer's ``padding: {}`` (or wrote the dict as a list) compared as identical."""
    base, _ = micro
    b = golden_body(base)
    b["warnings"], b["layers"][0]["padding"] = [], {}
    c = copy.deepcopy(b)
    del c["warnings"]
    c["layers"][0]["padding"] = []
    rep = compare(b, c)
    assert {(r.metric, r.status) for r in rep.rows} == {("warnings", "removed"), ("padding", "changed")}
    assert rep.exit_code == 1
    assert compare(b, copy.deepcopy(b)).exit_code == 0


# --------------------------------------------------------------------------------------------- tolerances

def test_tolerances_within_passes_outside_fails_and_ignore(micro, tmp_path):
    base, _ = micro
    b = golden_body(base)
    c = copy.deepcopy(b)
    layer = c["layers"][0]
    layer["cycles"]["total"] = round(layer["cycles"]["total"] * 1.005)   # +0.5 %
    layer["tiling"]["tiles"] += 7
    bp, cp = _write(tmp_path / "b.json", b), _write(tmp_path / "c.json", c)

    assert compare(bp, cp).exit_code == 1  # default rtol 1e-9

    tol = _write(tmp_path / "tol.yaml", "default_rtol: 1e-9\nmetrics:\n  cycles.total: {rtol: 0.01}\n"
                                        "ignore: [tiling.*]\n")
    code, text = regress_command(bp, cp, tolerances=tol)
    assert code == 0, text
    rep = compare(bp, cp, tol)
    assert [(r.metric, r.status) for r in rep.rows] == [("cycles.total", "within")]
    assert rep.counts.ignored >= 1 and rep.counts.within == 1

    tol2 = _write(tmp_path / "tol2.yaml", "metrics:\n  'cycles.*': {rtol: 0.001}\nignore: ['tiling.*']\n")
    code, text = regress_command(bp, cp, tolerances=tol2)
    assert code == 1
    assert _table_rows(text)[0].split()[:3] == ["drift", b["layers"][0]["name"], "cycles.total"]

    # the tiling change alone fails without the ignore pattern
    tol3 = _write(tmp_path / "tol3.yaml", "metrics: {cycles.total: {rtol: 0.01}}\n")
    rep = compare(bp, cp, tol3)
    assert [r.metric for r in rep.drift_rows] == ["tiling.tiles"]


def test_tolerance_rules():
    t = Tolerances.from_dict({"default_rtol": "1e-6", "default_atol": 2,
                              "metrics": {"cycles.total": {"rtol": 0.05}, "cycles.*": {"atol": 10}, "bytes.*": 0.1},
                              "ignore": ["meta.*", "tiling.*"], "ignore_layers": ["scratch*"]})
    assert t.for_metric("cycles.total") == Tolerance(rtol=0.05, atol=2.0)     # exact name wins
    assert t.for_metric("cycles.compute") == Tolerance(rtol=1e-6, atol=10.0)  # first glob, default rtol
    assert t.for_metric("bytes.dram.b") == Tolerance(rtol=0.1, atol=2.0)
    assert t.for_metric("utilization") == Tolerance(rtol=1e-6, atol=2.0)
    assert t.for_metric("tiling.chunk") is None
    assert t.layer_ignored("scratch.1") and not t.layer_ignored("g1024")
    with pytest.raises(AccelsimError, match="did you mean 'ignore'"):
        Tolerances.from_dict({"ignroe": []})


def test_a_layer_metric_pattern_covers_the_totals_metric_of_the_same_name():
    t = Tolerances.from_dict({"metrics": {"cycles.total": {"rtol": 0.01}, "energy.*": {"rtol": 0.02}},
                              "ignore": ["bytes.sram.*"]})
    assert t.for_metric("totals.cycles.total") == Tolerance(rtol=0.01, atol=0.0)
    assert t.for_metric("totals.energy.by_component_j.static") == Tolerance(rtol=0.02, atol=0.0)
    assert t.for_metric("totals.bytes.sram.b") is None and t.for_metric("bytes.sram.b") is None
    assert t.for_metric("totals.cycles.compute") == Tolerance(rtol=1e-9, atol=0.0)
    assert t.for_metric("hardware.cycles.total") == Tolerance(rtol=1e-9, atol=0.0)  # totals only
    own = Tolerances.from_dict({"metrics": {"cycles.total": 0.01, "totals.cycles.*": 0.5}})
    assert own.for_metric("totals.cycles.total") == Tolerance(rtol=0.5, atol=0.0)  # its own pattern first
    assert own.for_metric("cycles.total") == Tolerance(rtol=0.01, atol=0.0)


def test_readme_tolerances_hold_a_half_percent_slowdown_in_every_layer_and_the_totals(tmp_path):
    """The audit's case: every layer's cycles.total and energy.total_j +0.5 %, totals re-summed, README's
    tolerance file: the totals' rows are judged at rtol 0.01 / 0.02 (they were drift at 1e-9), exit 0."""
    b = json.loads((GOLDEN / "bodies" / "tpu-like" / "resnet18.2-4.json").read_text())
    c = copy.deepcopy(b)
    for layer in c["layers"]:
        layer["cycles"]["total"] = round(layer["cycles"]["total"] * 1.005)
        layer["energy"]["total_j"] *= 1.005
    c["totals"]["cycles"]["total"] = sum(layer["cycles"]["total"] for layer in c["layers"])
    c["totals"]["energy"]["total_j"] = sum(layer["energy"]["total_j"] for layer in c["layers"])
    tol = _write(tmp_path / "tol.yaml", "default_rtol: 1.0e-9\ndefault_atol: 0\nmetrics:\n"
                 "  cycles.total: {rtol: 0.01}\n  \"energy.*\": {rtol: 0.02}\nignore: [\"tiling.*\"]\n")
    rep = compare(_write(tmp_path / "b.json", b), _write(tmp_path / "c.json", c), tol)
    assert rep.exit_code == 0 and not rep.drift_rows
    totals = {r.metric: (r.status, r.rtol) for r in rep.rows if r.layer == "(run)"}
    assert totals == {"totals.cycles.total": ("within", 0.01), "totals.energy.total_j": ("within", 0.02)}


def test_a_change_from_zero_reads_from_0_everywhere_and_is_null_in_json(micro):
    """The table said "from 0", the summaries "worst inf", regress.json the string "inf"."""
    base, _ = micro
    b = golden_body(base)
    c = copy.deepcopy(b)
    layer = next(x for x in c["layers"] if x["cycles"]["launch"] == 0)
    layer["cycles"]["launch"] = 5
    rep = compare(b, c)
    row = next(r for r in rep.rows if r.metric == "cycles.launch")
    assert row.from_zero and row.baseline == 0
    text, md = format_table(rep), format_markdown(rep)
    assert f"cycles.launch: 1 row, worst from 0 in {layer['name']}" in text
    assert "`cycles.launch` 1x (worst from 0)" in md
    assert "inf" not in text.replace("info", "") and "inf" not in md.replace("info", "")
    data = json.loads(rep.to_json(), parse_constant=lambda c: pytest.fail(f"non-finite {c} in regress.json"))
    (jrow,) = [r for r in data["rows"] if r["metric"] == "cycles.launch"]
    assert jrow["rel_change"] is None and jrow["from_zero"] is True and jrow["abs_change"] == 5
    (group,) = [g for g in data["by_metric"] if g["metric"] == "cycles.launch"]
    assert group["worst_rel_change"] is None and group["worst_from_zero"] is True
    assert data["format"] == "accelsim-regress/2" and '"inf"' not in rep.to_json()


def test_shipped_golden_tolerances_load():
    t = Tolerances.load(GOLDEN / "tolerances.yaml")
    assert t.default_rtol <= 1e-6


# --------------------------------------------------------------------------------------------- bless

def test_bless_rewrites_baselines_then_regress_passes(micro, tmp_path):
    base, slow = micro
    golden = tmp_path / "golden"
    cand = tmp_path / "cand"
    _write(golden / "tpu" / "micro.json", golden_text(golden_body(base)))
    _write(golden / "tpu" / "stale.json", golden_text(golden_body(base)))
    _write(golden / "tpu" / "same.json", golden_text(golden_body(base)))
    _write(cand / "tpu" / "micro.json", slow.to_json())       # full results, with meta
    _write(cand / "tpu" / "same.json", base.to_json())
    _write(cand / "edge" / "new.json", base.to_json())
    assert regress_command(golden, cand)[0] == 1

    code, text = regress_command(golden, cand, bless=True)
    assert code == 0, text
    assert "blessed" in text and "1 added, 1 changed" in text and "1 removed, 1 unchanged" in text
    assert "changed   tpu/micro.json" in text and "removed   tpu/stale.json" in text
    assert not (golden / "tpu" / "stale.json").exists()
    stored = (golden / "tpu" / "micro.json").read_text(encoding="utf-8")
    assert "meta" not in json.loads(stored) and stored == golden_text(golden_body(slow))
    assert json.loads((golden / "edge" / "new.json").read_text())["schema_version"] == SCHEMA_VERSION

    code, text = regress_command(golden, cand)
    assert code == 0, text


def test_bless_lists_moved_metric_counts_and_replaces_unreadable_baselines(micro, tmp_path):
    base, slow = micro
    golden = _write(tmp_path / "g.json", golden_text(golden_body(base)))
    cand = _write(tmp_path / "c.json", slow.to_json())
    changes = bless(golden, cand)
    assert [c.action for c in changes] == ["changed"] and changes[0].moved == len(compare(base.body(),
                                                                                          slow.body()).rows)
    # an old-schema baseline cannot be compared, but blessing replaces it
    old = golden_body(base)
    old["schema_version"] = 0
    _write(golden, old)
    code, text = regress_command(golden, cand, bless=True)
    assert code == 0 and "old baseline replaced" in text
    assert regress_command(golden, cand)[0] == 0
    # an invalid candidate is refused and changes nothing
    before = golden.read_bytes()
    code, text = regress_command(golden, _write(tmp_path / "bad.json", "{"), bless=True)
    assert code == 2 and golden.read_bytes() == before


def test_bless_into_missing_directory(micro, tmp_path):
    base, _ = micro
    cand = tmp_path / "cand"
    _write(cand / "x.json", base.to_json())
    code, text = regress_command(tmp_path / "new-golden", cand, bless=True)
    assert code == 0 and "1 added" in text
    assert (tmp_path / "new-golden" / "x.json").is_file()


# --------------------------------------------------------------------------------------------- markdown

def test_markdown_has_a_table(micro):
    base, slow = micro
    rep = compare(base.body(), slow.body())
    md = format_markdown(rep)
    lines = md.splitlines()
    assert lines[0] == "### accelsim regress: ❌ drift"
    head = next(i for i, line in enumerate(lines) if line.startswith("| status |"))
    assert lines[head] == "| status | layer | metric | baseline | candidate | change | rel | of model | tolerance |"
    assert set(lines[head + 1]) <= set("|-:")
    assert lines[head + 2].startswith("| drift |") or lines[head + 2].startswith("| changed |")
    assert "**Drift by metric:**" in md and "inputs changed" in md.lower()
    ok = format_markdown(compare(base.body(), base.body()))
    assert ok.startswith("### accelsim regress: ✅ within tolerance") and "No metric moved." in ok


# --------------------------------------------------------------------------------------------- own goldens

def test_goldens_match(generated):
    """accelsim's own golden matrix, with tight tolerances. Bless: python tests/golden/make_goldens.py --bless"""
    if not make_goldens.BODIES.is_dir():
        pytest.skip("tests/golden/bodies/ does not exist yet: create it with "
                    "'python tests/golden/make_goldens.py --bless'")
    out, _ = generated
    code, text = regress_command(make_goldens.BODIES, out, make_goldens.TOLERANCES)
    assert code == 0, ("simulator outputs drifted from tests/golden/bodies; if intended, bless with "
                       "'python tests/golden/make_goldens.py --bless'\n" + text)


def test_report_written_into_candidate_dir_is_not_a_result(micro, tmp_path):
    base, _ = micro
    for side in ("b", "c"):
        _write(tmp_path / side / "r.json", base.to_json())
    assert regress_command(tmp_path / "b", tmp_path / "c", out_dir=tmp_path / "c")[0] == 0
    assert (tmp_path / "c" / "regress.json").is_file()
    code, text = regress_command(tmp_path / "b", tmp_path / "c")
    assert code == 0, text


# --------------------------------------------------------------------------------------------- ranking (#15 A5)

def _ranked_pair() -> tuple[dict, dict]:
    """A model whose latency rises 86 %: layer 'big' slows down by 946,000 cycles, while a stall counter
    of layer 'small' jumps 132 -> 5,086 (+3,753 %, but 0.45 % of the model's time)."""
    def layer(name: str, total: int, stall: int, util: float) -> dict:
        return {"name": name, "op": "gemm", "cycles": {"total": total, "compute": total - stall,
                                                         "stall_memory": stall, "stall_decode": 0, "launch": 0},
                "utilization": util, "bytes": {"dram": {"b": 1000}}}

    def result(big: int, big_stall: int, small: int, small_stall: int) -> dict:
        total = big + small
        return {"schema_version": SCHEMA_VERSION,
                "layers": [layer("small", small, small_stall, 0.5), layer("big", big, big_stall, 0.9)],
                "totals": {"cycles": {"total": total, "compute": total - big_stall - small_stall,
                                      "stall_memory": big_stall + small_stall, "stall_decode": 0, "launch": 0},
                           "latency_us": total / 1000, "bytes": {"dram": {"b": 2000}}}}

    base = result(1_000_000, 10_000, 100_000, 132)
    cand = result(1_946_000 - 4_954, 956_000 - 4_954, 104_954, 5_086)
    return base, cand


def test_drift_ranks_model_totals_first_then_by_share_of_the_total():
    base, cand = _ranked_pair()
    assert cand["totals"]["cycles"]["total"] / base["totals"]["cycles"]["total"] == pytest.approx(1.86)
    report = compare(base, cand)
    order = [(r.layer, r.metric) for r in report.drift_rows]
    totals = [m for layer, m in order if m.startswith("totals.")]
    assert order[:len(totals)] == [("(run)", m) for m in totals]  # every model total before any layer row
    assert order[0] == ("(run)", "totals.cycles.total")  # the +86 % comes first, not the +3,753 %
    layers = [(layer, m) for layer, m in order if layer != "(run)"]
    assert layers[:2] == [("big", "cycles.stall_memory"), ("big", "cycles.total")]  # 946,000 cycles each
    assert {m for layer, m in layers[2:4]} == {"cycles.stall_memory", "cycles.total"}  # 'small': 4,954 each
    stall = next(r for r in report.drift_rows if (r.layer, r.metric) == ("small", "cycles.stall_memory"))
    assert stall.rel_change > 37 and stall.share == pytest.approx(4954 / 1_100_000)
    # the table follows the share of the model's total, largest first, within the layer rows
    shares = [r.share for r in report.drift_rows if r.layer != "(run)" and r.share is not None]
    assert shares == sorted(shares, reverse=True)
    text = format_table(report)
    rows = _table_rows(text)
    assert "totals.cycles.total" in rows[0] and "+86%" in rows[0] and "86%" in rows[0].split("+86%")[1]
    small_at = next(i for i, r in enumerate(rows) if r.split()[1] == "small" and "stall_memory" in r)
    big_at = next(i for i, r in enumerate(rows) if r.split()[1] == "big" and "cycles.total" in r)
    assert big_at < small_at
    groups = [g.metric for g in report.by_metric()]
    assert groups[0] == "totals.cycles.total"


def test_unitless_layer_metric_weighs_by_the_layers_share_of_time():
    base, cand = _ranked_pair()
    cand["layers"][0]["utilization"] = 0.05  # -90 % in a layer holding 9 % of the time
    rows = {(r.layer, r.metric): r for r in compare(base, cand).rows}
    util = rows[("small", "utilization")]
    assert util.share is None and util.weight == pytest.approx(0.9 * 100_000 / 1_100_000)


# --------------------------------------------------------------------------------------------- non-finite (#15 A7)

@pytest.mark.parametrize("literal, shown", [("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("NaN", "NaN"),
                                            ("1e999", "Infinity")])
def test_non_finite_number_in_a_baseline_is_an_error(micro, tmp_path, literal, shown):
    """A baseline holding Infinity passed any candidate (every comparison with inf/NaN is False)."""
    base, _ = micro
    text = base.to_json()
    key = '"latency_us": '
    start = text.index(key) + len(key)
    end = start + len(text[start:].split(",", 1)[0].split("\n", 1)[0])
    bad = _write(tmp_path / "base.json", text[:start] + literal + text[end:])
    good = _write(tmp_path / "cand.json", text)
    for b, c, culprit in ((bad, good, bad), (good, bad, bad)):
        code, out = regress_command(b, c)
        assert code == 2, out
        assert out == (f"accelsim: error: {culprit}: totals.latency_us: non-finite number {shown}; accelsim "
                       "results hold finite numbers only (a hand-edited or corrupted file?)\n")


def test_non_finite_number_in_a_layer_names_the_layer(micro):
    base, _ = micro
    body = json.loads(base.to_json())
    body["layers"][1]["cycles"]["total"] = float("inf")
    with pytest.raises(ResultFileError, match=rf"layers\[{body['layers'][1]['name']}\]\.cycles\.total: non-finite"):
        compare(body, json.loads(base.to_json()))
    with pytest.raises(ResultFileError, match="non-finite"):
        bless_src = body  # bless validates every candidate first
        check_result(bless_src, "<candidate>")


# --------------------------------------------------------------------------------------------- typed results (#16)

@pytest.mark.parametrize("text, message", [
    ("zzz: 1\n", "zzz: unknown key; expected one of default_rtol, default_atol, metrics, ignore, ignore_layers"),
    ("metrics: [1]\n", "metrics: must be a mapping of metric name or pattern to {rtol, atol}"),
    ("metrics: {a: {}}\n", "metrics.a: must be a mapping with rtol and/or atol, e.g. {rtol: 0.01}"),
    ("metrics: {a: null}\n", "metrics.a: must be a mapping with rtol and/or atol, e.g. {rtol: 0.01}"),
    ("metrics: {a: {rtol: 1, xtol: 2}}\n", "metrics.a.xtol: unknown key; expected rtol or atol"),
    ("ignore: 3\n", "ignore: must be a list of metric names or glob patterns, e.g. ['tiling.*']"),
    ("default_atol: abc\n", "default_atol: 'abc' is not a number"),
    ("default_rtol: true\nmetrics: 5\n", "default_rtol: True is not a non-negative number"),
    ("metrics: {a: .inf}\nignore_layers: [1]\n", "metrics.a.rtol: inf is not a non-negative number"),
    ("metrics: {a: {atol: '-1e5'}}\n", "metrics.a.atol: -100000.0 is not a non-negative number"),
])
def test_tolerance_file_errors_are_one_line_naming_the_key(tmp_path, text, message):
    """Validated by a pydantic model; the first problem is reported, in the words it always had."""
    path = _write(tmp_path / "tol.yaml", text)
    with pytest.raises(AccelsimError) as exc:
        Tolerances.load(path)
    assert str(exc.value) == f"{path}: {message}"


def test_comparison_and_tolerances_are_frozen(micro):
    import dataclasses

    import pydantic

    base, slow = micro
    rep = compare(base.body(), slow.body())
    assert isinstance(rep.rows, tuple) and isinstance(rep.one_sided, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.rows = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.rows[0].status = "within"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        rep.tolerances.default_rtol = 1.0  # type: ignore[misc]
    assert json.loads(rep.to_json())["counts"] == dataclasses.asdict(rep.counts)


def test_regress_package_imports_neither_report_nor_cli():
    """One-way flow: the comparison code renders nothing; the renderer imports no comparison code."""
    code = ("import sys, accelsim.regress; "
            "print(sorted(m for m in sys.modules if m.startswith(('accelsim.report', 'accelsim.cli'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
    code = ("import sys, accelsim.report.regression; "
            "print(sorted(m for m in sys.modules if m.startswith('accelsim.regress')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
