"""Shared fixtures: paths to the repository, shipped configs and the shared reference data; xdist set-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
WL = ROOT / "workloads"


def _reference_dir() -> Path:
    for cand in (ROOT.parent / "shared" / "reference", ROOT / "shared" / "reference"):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("shared/reference not found beside the repository")


REFERENCE = _reference_dir()


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return REFERENCE


def _usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup v2 CPU quota (containers)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (``make test``): one worker per usable CPU, and none (a serial run) on one CPU.

    xdist's own count asks psutil for *physical* cores, which is 1 on a 2-vCPU hyper-threaded CI runner and
    the host's count in a CPU-limited container. PYTEST_XDIST_AUTO_NUM_WORKERS still overrides it."""
    if env := os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(env)
    cpus = _usable_cpus()
    return cpus if cpus > 1 else 0


def pytest_configure(config: pytest.Config) -> None:
    """Each xdist worker compiles into its own numba cache.

    numba's cache writes each file atomically, but adding an entry to a function's index is a read-modify-write:
    two processes compiling different signatures of one function at the same moment (a cold cache, e.g. a fresh
    clone) can both take data file 1, and the index can then name a file holding the other signature's code
    (numba issue #10128 asks for a file lock). A worker's own folder (under .pytest_cache, kept between runs)
    takes that race away; CLI subprocesses and notebook kernels a test starts inherit it. Set before any test
    module imports numba, which reads NUMBA_CACHE_DIR when first imported."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    base = os.environ.get("NUMBA_CACHE_DIR") or str(ROOT / ".pytest_cache" / "numba")
    os.environ["NUMBA_CACHE_DIR"] = str(Path(base) / worker)


def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from accelsim.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The one ``accelsim: error:`` line of a clean failure (no traceback)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("accelsim: error: "), err
    assert "Traceback" not in err
    return lines[0]
