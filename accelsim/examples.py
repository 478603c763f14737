"""The hardware configs and workloads shipped with accelsim, by name.

They are the repository's ``hwconfigs/*.yaml`` and ``workloads/*.yaml``, installed as package data
(``accelsim/data/``), so a ``pip install`` has them too::

    from accelsim import examples, load_hardware, load_workload
    hw = load_hardware(examples.hardware("a100-like"))
    model = load_workload(examples.workload("bert-base"), params={"batch": 1, "seq": 128})
"""

from __future__ import annotations

import difflib
from pathlib import Path

from accelsim.errors import AccelsimError

DATA = Path(__file__).resolve().parent / "data"


def list_hardware() -> list[str]:
    """Names of the shipped hardware configs (``a100-like``, ``tpu-like``...), sorted."""
    return _names("hwconfigs")


def list_workloads() -> list[str]:
    """Names of the shipped workloads (``bert-base``, ``resnet50``...), sorted."""
    return _names("workloads")


def hardware(name: str) -> Path:
    """Path of the shipped hardware config ``name`` (as listed by :func:`list_hardware`)."""
    return _path("hwconfigs", "hardware config", name)


def workload(name: str) -> Path:
    """Path of the shipped workload ``name`` (as listed by :func:`list_workloads`)."""
    return _path("workloads", "workload", name)


def _names(folder: str) -> list[str]:
    return sorted(p.stem for p in (DATA / folder).glob("*.yaml"))


def _path(folder: str, what: str, name: str) -> Path:
    names = _names(folder)
    if name not in names:
        close = difflib.get_close_matches(str(name), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise AccelsimError(f"no shipped {what} named {name!r}; {hint}shipped: {', '.join(names)}")
    return DATA / folder / f"{name}.yaml"
