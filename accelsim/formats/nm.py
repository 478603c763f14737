"""N:M patterns: parsing, containment between patterns, metadata sizes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from accelsim.textsafe import short_repr

_PATTERN_RE = re.compile(r"^[ \t]*([0-9]{1,9})[ \t]*:[ \t]*([0-9]{1,9})[ \t]*\Z")  # ASCII digits only


@dataclass(frozen=True, order=True)
class Pattern:
    """At most ``n`` nonzeros in every aligned group of ``m`` consecutive values along k."""

    n: int
    m: int

    @property
    def is_dense(self) -> bool:
        return self.n == self.m

    @property
    def density(self) -> float:
        return self.n / self.m

    @property
    def default_metadata_bits(self) -> int:
        """Bits per kept value for an index into the group: ceil(log2(M))."""
        return max(1, math.ceil(math.log2(self.m))) if self.m > 1 else 0

    def __str__(self) -> str:
        return f"{self.n}:{self.m}"


def parse_pattern(value: object) -> Pattern | None:
    """Parse ``"N:M"`` or ``"dense"``; None means dense. Raises ValueError with a user hint."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str):
        if isinstance(value, int):
            n, m = divmod(value, 60)
            if 1 <= n < 60:
                raise ValueError(f"got the number {value}: YAML reads an unquoted {n}:{m} as a base-60 number; "
                                 f"quote the pattern: \"{n}:{m}\"")
            raise ValueError(f"got the number {value}; write the pattern quoted, e.g. \"2:4\", or \"dense\"")
        raise ValueError(f"expected a pattern like \"2:4\" or \"dense\", got {short_repr(value)}")
    text = value.strip()
    if text.lower() == "dense":
        return None
    match = _PATTERN_RE.match(text)
    if not match:
        raise ValueError(f"expected a pattern like \"2:4\" (N:M) or \"dense\", got {short_repr(value)}")
    n, m = int(match.group(1)), int(match.group(2))
    if m < 1:
        raise ValueError(f"group size M must be at least 1 in {short_repr(value)}")
    if n < 1:
        raise ValueError(f"N must be at least 1 in {short_repr(value)} (a group keeps at least one value)")
    if n > m:
        raise ValueError(f"N must not exceed M in {short_repr(value)} (at most N nonzeros per group of M)")
    if m > 64:
        raise ValueError(f"group size M = {m} in {short_repr(value)} is larger than 64, which no sparse datapath uses")
    return Pattern(n, m) if n < m else None


def normalize_pattern(value: object) -> str:
    """Canonical text of a pattern value: ``"N:M"`` or ``"dense"`` (M:M is dense)."""
    pat = parse_pattern(value)
    return "dense" if pat is None else str(pat)


def max_nonzeros_in_group(requested: Pattern, group: int) -> int:
    """Worst-case nonzeros in an aligned window of ``group`` values under ``requested``."""
    period = math.lcm(requested.m, group)
    worst = 0
    for start in range(0, period, group):
        end = start + group
        count = 0
        g = (start // requested.m) * requested.m
        while g < end:
            overlap = min(end, g + requested.m) - max(start, g)
            count += min(requested.n, overlap)
            g += requested.m
        worst = max(worst, count)
    return worst


def contains(native: Pattern, requested: Pattern) -> bool:
    """True when every mask valid for ``requested`` is also valid for ``native``."""
    return max_nonzeros_in_group(requested, native.m) <= native.n


def best_container(requested: Pattern, natives: list[Pattern]) -> Pattern | None:
    """The native pattern that runs ``requested`` with the least density, or None."""
    fits = [p for p in natives if contains(p, requested)]
    if not fits:
        return None
    return min(fits, key=lambda p: (p.density, p.m))
