"""Shared fixtures: paths to the repository, shipped configs and the shared reference data."""

from __future__ import annotations

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
