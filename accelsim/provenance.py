"""Provenance of an output: the metadata header (versions, commit, config hashes, command) results and sweeps carry."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.version import __version__


@functools.lru_cache(maxsize=1)
def _git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                   capture_output=True, text=True, timeout=5, check=False).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


@functools.lru_cache(maxsize=1)
def _numba_version() -> str:
    """numba's version, read from its package metadata (numba itself is imported only under engine/)."""
    return importlib.metadata.version("numba")


def build_meta(command: list[str] | None = None, hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """The metadata header: versions, commit, config hashes, command. Not part of the body."""
    return {
        "accelsim_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": _numba_version(),
        "config_hashes": hashes or {},
        "command": command or [],
    }
