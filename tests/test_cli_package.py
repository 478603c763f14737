"""The command-line package: python -m accelsim, one version, py.typed shipped, shared options declared once."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import HW, ROOT

import accelsim
from accelsim.cli import build_parser, main

SHARED = ("--hw", "--workload", "--sparsity", "--set", "--hw-set", "--policy", "--out", "--format", "--dtype",
          "--seed")


def _python_m(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_python_m_accelsim_version() -> None:
    proc = _python_m("accelsim", "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"accelsim {importlib.metadata.version('accelsim')}\n"
    assert proc.stdout == f"accelsim {accelsim.__version__}\n"


def test_python_m_accelsim_validate() -> None:
    proc = _python_m("accelsim", "validate", str(HW / "tpu-like.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("tpu-like.yaml: ok (hardware 'tpu-like')\n")


def test_python_m_accelsim_cli_still_works() -> None:
    proc = _python_m("accelsim.cli", "schema", "nonsense")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "invalid choice" in proc.stderr


def test_console_script_version_is_the_installed_metadata() -> None:
    script = shutil.which("accelsim", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("no accelsim console script beside this interpreter")
    proc = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.stdout == f"accelsim {importlib.metadata.version('accelsim')}\n"


def test_version_written_once_and_py_typed_shipped() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "accelsim.version.__version__"}
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["accelsim"]
    assert (ROOT / "accelsim" / "py.typed").is_file()


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _spec(action: argparse.Action) -> tuple:
    """What a flag is; --format's choices and -o's metavar are the command's own (what it writes)."""
    flag = action.option_strings[-1]
    return (type(action).__name__, tuple(action.option_strings), action.type, action.nargs,
            None if flag == "--out" else action.metavar,
            None if flag == "--format" or not action.choices else tuple(action.choices))


@pytest.mark.parametrize("flag", SHARED)
def test_shared_option_means_the_same_everywhere(flag: str) -> None:
    """Flag, action, type and metavar/choices agree in every subcommand that takes it (help may differ)."""
    specs = {}
    for name, parser in _subcommands().items():
        for action in parser._actions:
            if flag in action.option_strings:
                specs[name] = _spec(action)
    assert len(specs) >= 2, specs
    assert len(set(specs.values())) == 1, specs


def test_shared_options_are_declared_only_in_options_py() -> None:
    flags = "|".join(map(re.escape, SHARED))
    pattern = re.compile(r'add_argument\(\s*(?:"-o",\s*)?"(' + flags + r')"[,)]')
    for path in sorted((ROOT / "accelsim" / "cli").glob("*.py")):
        found = pattern.findall(path.read_text())
        if path.name == "options.py":
            assert sorted(set(found)) == sorted(SHARED)
        else:
            assert found == [], f"{path.name} declares {found}; use the helpers in accelsim/cli/options.py"


def _main_in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `accelsim ARGV` run in this process (argparse's exit caught)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def test_calibrate_is_a_subcommand_with_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    # one child process for the `python -m accelsim` path; the other errors are the same main() in this process
    proc = _python_m("accelsim", "calibrate", "missing.csv", "--hw", str(HW / "a100-like.yaml"), "--gpu", "A100")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "accelsim: error: missing.csv: file not found\n")
    code, _, err = _main_in_process(capsys, "calibrate", "x.csv", "--hw", "h.yaml", "--gpu", "A100",
                                    "--fractions", "a")
    assert code == 2 and err == "accelsim: error: --fractions: expected numbers, got 'a'\n"
    code, _, err = _main_in_process(capsys, "calibrate", "x.csv", "--gpu", "A100")
    assert code == 2 and err.count("\n") == 1 and "--hw" in err


def test_library_modules_do_not_run_as_commands() -> None:
    """The command line lives in accelsim.cli only: no __main__ blocks, argparse or printing in the library."""
    analysis = ROOT / "accelsim" / "analysis"
    paths = [*analysis.glob("calibration/*.py"), *(analysis / f"{m}.py" for m in ("gpu_validation", "measurements",
                                                                                   "validation_results"))]
    assert len(paths) >= 6
    for path in paths:
        text = path.read_text()
        assert "__main__" not in text and "argparse" not in text and "print(" not in text, path.name
