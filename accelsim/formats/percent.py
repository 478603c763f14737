"""Sparsity levels written as a percentage of zeros (``channel:50%``, ``unstructured:90%``): parsing and text.

A level is kept as an exact fraction of the decimal the user wrote (``37.5`` is 75/2), so counts derived
from it (rows pruned, values kept) round the same way on every machine. ``%`` is the share of zeros.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Self

from accelsim.formats.base import SparsityFormat
from accelsim.textsafe import short_repr

MAX_DECIMALS = 4  # 12.3456% is the finest level a spelling may write
_LEVEL_RE = re.compile(r"^[ \t]*([0-9]{1,3}(?:\.[0-9]{1,9})?)[ \t]*%[ \t]*\Z")  # ASCII digits only


def parse_level(family: str, body: str, text: str, example: str) -> Fraction:
    """The sparsity level (percent of zeros, 0 <= level < 100) written as ``body`` in the spelling ``text``
    of ``family``; ValueError naming ``text`` and what is wrong."""
    match = _LEVEL_RE.match(body)
    if not match:
        raise ValueError(f"expected {family}:P% with P the percentage of zeros (e.g. \"{example}\"), "
                         f"got {short_repr(text)}")
    digits = match.group(1)
    if "." in digits and len(digits.split(".")[1].rstrip("0")) > MAX_DECIMALS:
        raise ValueError(f"sparsity {digits}% in {short_repr(text)} has more than {MAX_DECIMALS} decimals")
    level = Fraction(digits)
    if level >= 100:
        raise ValueError(f"sparsity {digits}% in {short_repr(text)} must be below 100% (the share of zeros; "
                         f"100% keeps nothing)")
    return level


def level_of_share(sparsity: float) -> Fraction | None:
    """A share of zeros (0..1) as a percent level, to MAX_DECIMALS decimals; None outside [0, 100)."""
    level = Fraction(round(Decimal(repr(sparsity)) * 100, MAX_DECIMALS))
    return level if 0 <= level < 100 else None


def level_text(level: Fraction) -> str:
    """Canonical text of a level: ``50``, ``37.5`` (no trailing zeros)."""
    if level.denominator == 1:
        return str(level.numerator)
    text = format(Decimal(level.numerator) / Decimal(level.denominator), "f")
    return text.rstrip("0").rstrip(".")


def zeros_of(count: int, level: Fraction) -> int:
    """Entries pruned out of ``count`` at ``level`` percent: floor(count x level / 100), exact."""
    return math.floor(count * level / 100)


class PercentLevelFormat(SparsityFormat):
    """A family spelled ``<key>:P%`` whose one field is ``level`` (percent of zeros, a Fraction): the spelling,
    the level at a share of zeros, and the engine inputs of a format that does not compress k (keep = group = 1).
    Subclasses are frozen dataclasses with a ``level: Fraction`` field."""

    level: Fraction

    @classmethod
    def claims(cls, text: str) -> bool:
        return text.lower().startswith(cls.key)

    @classmethod
    def parse(cls, text: str) -> Self:
        match = re.match(rf"^[ \t]*{cls.key}[ \t]*:(.*)\Z", text.strip(), re.IGNORECASE | re.DOTALL)
        return cls(parse_level(cls.key, match.group(1) if match else "", text, cls.example))  # type: ignore[call-arg]

    @classmethod
    def at_sparsity(cls, sparsity: float) -> Self | None:
        """``<key>:P%`` with P = 100 x ``sparsity``."""
        level = level_of_share(sparsity)
        return None if level is None or level == 0 else cls(level)  # type: ignore[call-arg]

    def __str__(self) -> str:
        return f"{self.key}:{level_text(self.level)}%"

    @property
    def keep(self) -> int:
        return 1

    @property
    def group(self) -> int:
        return 1

    @property
    def is_dense(self) -> bool:
        return self.level == 0

    @property
    def density(self) -> float:
        """Share of A kept, before rounding to whole rows or values."""
        return float(1 - self.level / 100)

    @property
    def dense_speedup(self) -> float:
        return 1.0 / self.density

    @property
    def default_metadata_bits(self) -> int:
        return 0

    def decode_groups(self, rows: int, k: int) -> int:
        return 0  # no N:M metadata groups: nothing for the decode stage

    def contains(self, requested: SparsityFormat) -> bool:
        """A kernel for this level runs any sparser mask of the same family (the extra zeros are stored or
        computed as zeros)."""
        return isinstance(requested, type(self)) and requested.level >= self.level

    def preference(self) -> tuple[float, int]:
        return (self.density, 0)
