"""User-facing failures. Every error a user can cause is an AccelsimError with one-line text."""

from __future__ import annotations


class AccelsimError(Exception):
    """Base class: the CLI prints ``str(err)`` on one line and exits with code 2."""

    def __init__(self, message: str = "", *_: object) -> None:
        # Not calling Exception.__init__ keeps ``args`` as the constructor's own arguments (set by
        # Exception.__new__), so ``type(err)(*err.args)`` rebuilds any subclass: simpy re-raises a
        # process's error that way, and pickling (process pools) does too.
        self.message = message

    def __str__(self) -> str:
        return self.message


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
