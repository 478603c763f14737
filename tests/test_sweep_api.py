"""Sweeps from Python: specs from dicts, typed frozen results, the spec's pydantic model, one-way imports."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accelsim.errors import AccelsimError, ConfigError
from accelsim.sweep import (
    SPEC_KEYS,
    SweepRun,
    SweepSpecModel,
    SweepTable,
    load_results,
    run_sweep,
    spec_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]
TINY = {"name": "tiny", "dtype": "fp16", "params": {"batch": 1},
        "layers": [{"name": "g1", "op": "gemm", "m": 256, "n": "batch * 64", "k": 256},
                   {"name": "norm", "op": "layernorm", "elements": "batch * 64 * 256"}]}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """A folder with a workload beside a spec's would-be place: relative paths resolve against it."""
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    return tmp_path


def test_spec_from_a_dict_runs_from_python(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    spec = spec_from_dict({"name": "py", "hardware": "hwconfigs/tpu-like.yaml", "workloads": "wl/tiny.yaml",
                           "set": {"batch": [1, 2]}, "sparsity": "2:4",
                           "grid": {"dram.bandwidth_gb_s": [100, 400]}}, "python", base_dir=folder)
    assert spec.sparsity == ("2:4",) and spec.set_keys == ("batch",) and len(spec.points) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]
    res = run_sweep(spec, folder / "out", workers=1)
    assert isinstance(res, SweepRun) and res.points == 2 and res.rows == 4 and res.infeasible_rows == 0
    assert res.chunks_run == res.chunks and res.chunks_resumed == 0 and res.removed_files == ()
    names = [Path(f).name for f in res.files]
    assert names[0] == "results.csv" and names[-1] == "meta.json" and set(names[1:-1]) <= {"results.parquet"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.rows = 0  # type: ignore[misc]
    meta = json.loads((folder / "out" / "meta.json").read_text())["sweep"]
    assert {k: meta[k] for k in res.to_dict() if k != "files"} == {k: v for k, v in res.to_dict().items()
                                                                   if k != "files"}

    table = load_results(folder / "out")
    assert isinstance(table, SweepTable) and len(table.rows) == 4
    assert table.columns[:3] == ("point", "origin", "hw_hash") and table.source.endswith("results.csv")
    assert table.column("batch") == [1, 2, 1, 2] and table.column("point") == [0, 0, 1, 1]
    assert table.sweep["name"] == "py"
    assert table.records()[0]["sparsity"] == "2:4" and table.get(table.rows[0], "feasible") is True
    assert table.settings() == [("tiny", 1), ("tiny", 2)] and table.sparsities() == ["2:4"]
    assert table == load_results(folder / "out")  # equal columns and rows
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.rows = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        table.sweep["name"] = "x"  # type: ignore[index]
    costs = table.cost_values("pes * 2")
    assert costs == [2.0 * r[table.index("peak_macs_per_cycle")] for r in table.rows]


def test_sweep_table_to_dataframe(monkeypatch: pytest.MonkeyPatch) -> None:
    table = SweepTable(("workload", "latency_us"), (("a", 1.5), ("b", None)))
    try:
        import pandas as pd
    except ImportError:
        pass
    else:
        df = table.to_dataframe()
        assert isinstance(df, pd.DataFrame) and list(df.columns) == ["workload", "latency_us"]
        assert df["workload"].tolist() == ["a", "b"] and df["latency_us"].iloc[0] == 1.5
    monkeypatch.setitem(sys.modules, "pandas", None)  # import fails as if not installed
    with pytest.raises(AccelsimError, match="needs pandas, which is not installed: pip install pandas"):
        table.to_dataframe()


def test_the_spec_model_validates_and_is_the_schema() -> None:
    m = SweepSpecModel.model_validate({"name": " m ", "hardware": "hw.yaml", "workloads": "wl.yaml",
                                       "sparsity": "2:4", "set": {"batch": 4},
                                       "grid": {" dram.bandwidth_gb_s ": [1]},
                                       "random": {"n": 2, "core.compute.rows": {"choice": [32, 64]}}})
    assert (m.name, m.workloads, m.sparsity, m.set, m.policy) == ("m", ["wl.yaml"], ["2:4"], {"batch": [4]},
                                                                  "sparse-if-supported")
    assert list(m.grid) == ["dram.bandwidth_gb_s"]
    assert m.random is not None and m.random.as_dict() == {"n": 2, "seed": 0, "core.compute.rows": {"choice": [32, 64]}}
    assert SweepSpecModel.model_validate(m.model_dump()) == m  # dumps as written: it validates again
    assert SweepSpecModel.model_validate({"name": "d", "hardware": {}, "workloads": ["w"]}).sparsity == [None]
    with pytest.raises(Exception, match="frozen"):
        m.name = "x"  # type: ignore[misc]
    schema = SweepSpecModel.model_json_schema()
    assert tuple(schema["properties"]) == SPEC_KEYS and schema["additionalProperties"] is False
    assert {"type": "string"} in schema["properties"]["sparsity"]["anyOf"]  # what may be written: one pattern
    # spec_from_dict words its errors like the model: key, then problem
    with pytest.raises(ConfigError) as err:
        spec_from_dict({"name": "e", "hardware": str(ROOT / "hwconfigs/tpu-like.yaml"), "workloads": [],
                        "chunk_size": 0})
    assert str(err.value) == "<sweep>: workloads: expected at least one workload file"


def _imports(path: Path) -> set[str]:
    """Modules a source file imports (at any depth)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_imports_flow_one_way() -> None:
    """sweep/ imports neither report/ nor cli/; the sweep plots render a table without importing sweep/."""
    for path in (ROOT / "accelsim" / "sweep").glob("*.py"):
        bad = {m for m in _imports(path) if m.startswith(("accelsim.report", "accelsim.cli"))}
        assert not bad, f"{path.name} imports {bad}"
    assert not {m for m in _imports(ROOT / "accelsim/report/sweep_plots.py") if m.startswith("accelsim.sweep")}
    code = ("import sys, accelsim.sweep; "
            "print(sorted(m for m in sys.modules if m.startswith(('accelsim.report', 'accelsim.cli', 'matplotlib', "
            "'pandas', 'pyarrow', 'distributed'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
