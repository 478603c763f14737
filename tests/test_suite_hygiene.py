"""The suite stays honest on a busy CI machine: no assert on wall-clock time anywhere in tests/."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "monotonic", "time", "process_time", "perf_counter_ns", "monotonic_ns", "time_ns"}


def _reads_a_clock(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in CLOCKS:
                return True
    return False


def _clock_names(tree: ast.AST) -> set[str]:
    """Names assigned from a clock call, e.g. ``start = time.perf_counter()``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _reads_a_clock(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def wall_clock_asserts(source: str) -> list[int]:
    """Line numbers of asserts that compare a clock reading (directly or through a variable)."""
    tree = ast.parse(source)
    clocked = _clock_names(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            used = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if _reads_a_clock(node.test) or used & clocked:
                lines.append(node.lineno)
    return lines


def _sample(text: str) -> str:
    """Source for the detector; written with 'check' so a text search of tests/ does not take it for a real assert."""
    return text.replace("check ", "assert ")


def test_the_detector_finds_a_timed_assert() -> None:
    timed = _sample("import time\nstart = time.perf_counter()\nrun()\n"
                    "elapsed = time.perf_counter() - start\ncheck elapsed < 60\n")
    assert wall_clock_asserts(timed) == [5]
    assert wall_clock_asserts(_sample("import time\ncheck time.monotonic() > 0\n")) == [2]
    assert wall_clock_asserts(_sample("x = compute()\ncheck x == 60\n")) == []


def test_no_test_asserts_on_wall_clock_time() -> None:
    found = {p.name: lines for p in sorted(TESTS.rglob("*.py")) if p.name != Path(__file__).name
             and (lines := wall_clock_asserts(p.read_text()))}
    assert found == {}, f"wall-clock asserts belong in benchmarks/, not tests: {found}"
