"""The registry of sparsity-format families: spellings to formats, containment, the best native container.

Families register in :mod:`accelsim.formats` (one line each). A spelling is offered to every
family in registration order; the first that claims it parses it. ``"dense"`` (any case) and
dense-equivalent formats (M:M) parse to None: dense is the absence of a format.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache

from accelsim.errors import AccelsimError
from accelsim.formats.base import OPERANDS, SparsityFormat
from accelsim.textsafe import short_repr

_FAMILIES: dict[str, type[SparsityFormat]] = {}


class UnknownFormatError(AccelsimError):
    """A format family key that no module registered."""


def register(family: type[SparsityFormat]) -> type[SparsityFormat]:
    """Add a format family (its ``key`` must be new); returns it, so it also works as a decorator."""
    key = family.key
    if key in _FAMILIES:
        raise ValueError(f"sparsity format {key!r} is already registered (by {_FAMILIES[key].__module__})")
    if family.operand not in OPERANDS:
        raise ValueError(f"sparsity format {key!r} compresses operand {family.operand!r}; known: {OPERANDS}")
    _FAMILIES[key] = family
    _parse_text.cache_clear()
    return family


def unregister(key: str) -> None:
    """Remove a registered family (tests that register a toy one)."""
    family(key)
    del _FAMILIES[key]
    _parse_text.cache_clear()


@contextmanager
def registered(fam: type[SparsityFormat]) -> Iterator[type[SparsityFormat]]:
    """Register ``fam`` for the duration of a ``with`` block."""
    register(fam)
    try:
        yield fam
    finally:
        unregister(fam.key)


def family(key: str) -> type[SparsityFormat]:
    """The family registered under ``key``; UnknownFormatError naming it otherwise."""
    try:
        return _FAMILIES[key]
    except KeyError:
        raise UnknownFormatError(f"unknown sparsity format {short_repr(key)}; registered: "
                                 f"{', '.join(_FAMILIES) or 'none'}") from None


def families() -> tuple[type[SparsityFormat], ...]:
    """Registered families, in registration order."""
    return tuple(_FAMILIES.values())


def _examples() -> tuple[str, str]:
    """('"2:4" (N:M), ...' with titles, '"2:4"' the first family's example alone)."""
    fams = families()
    first = f'"{fams[0].example}"' if fams else '"2:4"'
    return ", ".join(f'"{f.example}" ({f.title})' for f in fams) or first, first


@lru_cache(maxsize=1024)
def _parse_text(text: str) -> SparsityFormat | None:
    stripped = text.strip()
    if stripped.lower() == "dense":
        return None
    for fam in _FAMILIES.values():
        if fam.claims(stripped):
            return fam.parse(text)
    listed, _ = _examples()
    raise ValueError(f"expected a pattern like {listed} or \"dense\", got {short_repr(text)}")


def parse_spelling(value: object) -> SparsityFormat | None:
    """The format ``value`` spells, dense-equivalent ones included; None for ``"dense"`` or None.

    Raises ValueError with a user hint (e.g. an unquoted 2:4 that YAML read as a number).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str):
        _, first = _examples()
        if isinstance(value, int):
            for fam in _FAMILIES.values():
                hint = fam.number_hint(value)
                if hint is not None:
                    raise ValueError(hint)
            raise ValueError(f"got the number {value}; write the pattern quoted, e.g. {first}, or \"dense\"")
        raise ValueError(f"expected a pattern like {first} or \"dense\", got {short_repr(value)}")
    return _parse_text(value)


def parse_format(value: object) -> SparsityFormat | None:
    """The format ``value`` spells; None means dense (``"dense"``, None or a dense-equivalent like 4:4)."""
    fmt = parse_spelling(value)
    return None if fmt is None or fmt.is_dense else fmt


def normalize_format(value: object) -> str:
    """Canonical text of a format value: its spelling, or ``"dense"``."""
    fmt = parse_format(value)
    return "dense" if fmt is None else str(fmt)


def contains(native: SparsityFormat, requested: SparsityFormat) -> bool:
    """Whether hardware that runs ``native`` runs every mask valid for ``requested``."""
    return native.contains(requested)


def best_container(requested: SparsityFormat, natives: Iterable[SparsityFormat]) -> SparsityFormat | None:
    """The native format that runs ``requested`` with the least density, or None."""
    fits = [p for p in natives if p.contains(requested)]
    if not fits:
        return None
    return min(fits, key=lambda p: p.preference())
