"""User-facing failures. Every error a user can cause is an AccelsimError with one-line text."""

from __future__ import annotations


class AccelsimError(Exception):
    """Base class: the CLI prints ``str(err)`` on one line and exits with code 2."""


class ConfigError(AccelsimError):
    """A hardware config or workload file is unreadable or invalid."""

    def __init__(self, source: str, key: str | None, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        where = f"{source}: {key}: " if key else f"{source}: "
        super().__init__(where + problem)


class InfeasibleError(AccelsimError):
    """The hardware cannot run a layer at all (e.g. SRAM too small for the smallest tile)."""

    def __init__(self, source: str, key: str, problem: str, layer: str | None = None) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        self.layer = layer
        super().__init__(f"{source}: {key}: {problem}")


class FunctionalError(AccelsimError):
    """A functional-path input is invalid (e.g. a mask that violates its N:M pattern)."""


class OutputError(AccelsimError):
    """An output file cannot be written (missing permission, full disk, a device or folder in the way)."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: cannot write: {problem}")
