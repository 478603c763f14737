"""accelsim as a library: the public API, the shipped configs as package data, docs/python-api.md runs.

(python -m accelsim, the version and py.typed: tests/test_cli_package.py.)"""

from __future__ import annotations

import re
import tempfile
import tomllib

import pytest
from conftest import HW, ROOT, WL

import accelsim

DOC = ROOT / "docs" / "python-api.md"


def test_public_api_names_exist() -> None:
    assert len(set(accelsim.__all__)) == len(accelsim.__all__)
    for name in accelsim.__all__:
        assert hasattr(accelsim, name), name
    for name in ("load_hardware", "load_workload", "run", "sweep", "examples"):  # DESIGN.md's list
        assert name in accelsim.__all__
    for name in ("spec_from_dict", "run_sweep", "load_results"):
        assert callable(getattr(accelsim.sweep, name))


def test_shipped_configs_are_package_data() -> None:
    """accelsim/data/{hwconfigs,workloads} are links to the top-level folders (which stay the ones to edit),
    and pyproject.toml puts their YAML files in the wheel."""
    data = ROOT / "accelsim" / "data"
    for folder, top in (("hwconfigs", HW), ("workloads", WL)):
        link = data / folder
        assert link.is_symlink() and link.resolve() == top.resolve(), link
        assert sorted(p.name for p in link.glob("*.yaml")) == sorted(p.name for p in top.glob("*.yaml"))
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"py.typed", "data/hwconfigs/*.yaml", "data/workloads/*.yaml"} <= set(package_data["accelsim"])
    assert accelsim.examples.hardware("tpu-like").parent.parent == data


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_python_block_of_the_api_doc_runs(tmp_path, monkeypatch) -> None:
    """The blocks run in order in one namespace, as a reader would paste them (temporary files in tmp_path)."""
    pytest.importorskip("pandas")
    blocks = _python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    assert all("```" not in b for b in blocks)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace: dict[str, object] = {"__name__": "__doc__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOC.name}, python block {i + 1}", "exec"), namespace)
