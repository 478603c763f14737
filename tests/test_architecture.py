"""The package map holds: dependencies run one way, report/ renders only, no cycles, small modules.

The order below is the architecture (docs/architecture.md draws it): a package may import only
packages at its own rank or before it, and the graph of imports between packages has no cycle.
Imports inside functions are kept for optional dependencies and deferred heavy ones only.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "accelsim"

# Rank of each top-level unit of accelsim (a subpackage or a top-level module).
RANKS: dict[str, int] = {
    "version": 0, "textsafe": 0, "dtypes": 0, "errors": 1,
    "examples": 2, "tables": 2, "records": 2, "limits": 2, "fileio": 2, "reasons": 2, "provenance": 2,
    "result_checks": 2, "run_clocks": 2,
    "config": 3, "formats": 4, "system": 4, "hardware": 5, "workloads": 6, "quality": 6,
    "lowering": 7, "results": 8,
    "engine": 9, "energy": 9, "simulation": 10,
    "analysis": 11, "serving": 11, "sweep": 11, "regress": 11,
    "report": 12, "cli": 13, "__main__": 14, "__init__": 14,
}
# Same-rank edges that are part of the design (the deployment analysis has a serving section; a workload's
# quality section resolves quality registry ids).
SAME_RANK_ALLOWED = {("analysis", "serving"), ("workloads", "quality")}
# report/ renders results: these are the only accelsim units it may import at run time.
REPORT_MAY_IMPORT = {"textsafe", "errors", "limits", "fileio", "config", "formats", "system", "hardware", "workloads",
                     "results", "report"}
# Imports that may sit inside a function: optional dependencies and deferred heavy ones (matplotlib,
# and accelsim modules that import it at their top, so that `import accelsim.cli` stays light).
DEFERRED_OK = ("onnx", "dask", "distributed", "pyarrow", "pandas", "matplotlib")
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _unit(path: Path) -> str:
    rel = path.relative_to(PKG).parts
    return rel[0].removesuffix(".py") if len(rel) == 1 else rel[0]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target_unit(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "accelsim":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module, module: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(module-level run-time imports, imports inside functions) as (line, imported name)."""
    top: list[tuple[int, str]] = []
    inner: list[tuple[int, str]] = []

    def names(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            pkg = module.split(".")[: len(module.split(".")) - node.level + (1 if module.endswith("__init__") else 0)]
            base = ".".join(pkg + ([base] if base else []))
        return [f"{base}.{a.name}" if base == "accelsim" else base for a in node.names]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_block(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inner if in_function else top).extend((child.lineno, n) for n in names(child))
            else:
                visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return top, inner


@functools.cache
def _module_imports(path: Path) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]:
    """:func:`_imports` of one module file, parsed once per test session (the tests only read it)."""
    top, inner = _imports(ast.parse(path.read_text()), _module_name(path))
    return tuple(top), tuple(inner)


def _graph() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for path in _modules():
        src = _unit(path)
        top, _ = _module_imports(path)
        for line, name in top:
            dst = _target_unit(name)
            if dst is not None and dst != src:
                edges.setdefault((src, dst), []).append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    return edges


def test_every_unit_has_a_rank() -> None:
    units = {_unit(p) for p in _modules()}
    assert units <= set(RANKS), f"add these to RANKS (and the package map): {sorted(units - set(RANKS))}"


def test_dependencies_run_one_way() -> None:
    wrong = []
    for (src, dst), where in sorted(_graph().items()):
        rs, rd = RANKS.get(src, 99), RANKS.get(dst, 99)
        if rd > rs or (rd == rs and (src, dst) not in SAME_RANK_ALLOWED):
            wrong.append(f"{src} -> {dst}: {where[0]}")
    assert not wrong, "imports against the package order:\n" + "\n".join(wrong)


def test_no_import_cycles_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for src, dst in _graph():
        graph.setdefault(src, set()).add(dst)
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack + [node, nxt]
            if nxt not in state and (cycle := visit(nxt, stack + [node])):
                return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_report_renders_only() -> None:
    wrong = [f"{dst}: {where[0]}" for (src, dst), where in sorted(_graph().items())
             if src == "report" and dst not in REPORT_MAY_IMPORT]
    assert not wrong, "report/ imports code that simulates or analyses:\n" + "\n".join(wrong)


def _heavy_modules() -> set[str]:
    """accelsim modules that import matplotlib when they are imported."""
    heavy = set()
    for path in _modules():
        top, _ = _module_imports(path)
        if any(name.split(".")[0] == "matplotlib" for _, name in top):
            heavy.add(_module_name(path))
    return heavy


def test_imports_inside_functions_only_for_optional_or_heavy_dependencies() -> None:
    heavy = _heavy_modules()
    wrong = []
    for path in _modules():
        _, inner = _module_imports(path)
        wrong += [f"{path.relative_to(PKG.parent)}:{line} {name}" for line, name in inner
                  if name.split(".")[0] not in DEFERRED_OK and name not in heavy]
    assert not wrong, "imports inside functions:\n" + "\n".join(wrong)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_module_size(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PKG.parent)} has {lines} lines: it holds two ideas"


def test_numba_only_under_engine() -> None:
    wrong = []
    for path in _modules():
        if _unit(path) == "engine":
            continue
        top, inner = _module_imports(path)
        wrong += [f"{path.relative_to(PKG.parent)}:{line}" for line, name in top + inner if name.startswith("numba")]
    assert not wrong, "numba imported outside accelsim/engine/:\n" + "\n".join(wrong)
