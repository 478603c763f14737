"""User-facing failures. Every error a user can cause is an AccelsimError with one-line text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelsim.textsafe import printable

MAX_PROBLEMS_SHOWN = 10


class AccelsimError(Exception):
    """Base class: the CLI prints each of ``lines()`` and exits with code 2."""

    def __init__(self, message: str = "", *_: object) -> None:
        # Not calling Exception.__init__ keeps ``args`` as the constructor's own arguments (set by
        # Exception.__new__), so ``type(err)(*err.args)`` rebuilds any subclass: simpy re-raises a
        # process's error that way, and pickling (process pools) does too.
        self.message = message

    def __str__(self) -> str:
        return self.message

    def lines(self) -> list[str]:
        """The message as terminal-safe lines (control characters escaped): one line."""
        return [printable(str(self))]

    def __reduce__(self) -> tuple[Any, ...]:
        # subclasses take their own constructor arguments: rebuild from the state (picklable across processes)
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[AccelsimError], args: tuple[Any, ...], state: dict[str, Any]) -> AccelsimError:
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class ConfigError(AccelsimError):
    """A hardware config or workload file is unreadable or invalid.

    It may carry several problems: ``(key, problem)`` first, then ``more``. ``str()`` is one line per
    problem, ``source: key: problem``, at most MAX_PROBLEMS_SHOWN of them, then ``source: and N more
    problems``. ``key`` and ``problem`` are those of the first problem.
    """

    def __init__(self, source: str, key: str | None, problem: str,
                 more: Sequence[tuple[str | None, str]] = (), unlisted: int = 0) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        self.problems: list[tuple[str | None, str]] = [(key, problem), *more]
        self.unlisted = unlisted  # further problems counted but not described
        super().__init__("\n".join(self.lines()))

    @classmethod
    def many(cls, source: str, problems: Sequence[tuple[str | None, str]], unlisted: int = 0) -> ConfigError:
        """One error for several ``(key, problem)`` pairs (at least one), in the order given, and
        ``unlisted`` more that are only counted."""
        (key, problem), *more = problems
        return cls(source, key, problem, more, unlisted)

    def lines(self) -> list[str]:
        src = printable(self.source, 300)
        out = []
        for key, problem in self.problems[:MAX_PROBLEMS_SHOWN]:
            where = f"{src}: {printable(key, 300)}: " if key else f"{src}: "
            out.append(where + printable(problem, 1000))
        rest = max(len(self.problems) - MAX_PROBLEMS_SHOWN, 0) + self.unlisted
        if rest > 0:
            out.append(f"{src}: and {rest} more problem{'s' if rest > 1 else ''}")
        return out


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
