"""Op names of a workload: one short label for a set of them (tables and messages about many ops).

A label names exactly the ops of the set. It is a ", "-separated list of patterns; a pattern is a dotted name
whose parts are a literal, ``{a,b}`` (any of these values), ``{0..3}`` (an integer range; ranges and values mix:
``{0..3,7}``) or ``*`` (every value that part takes among the workload's ops that match the pattern's other
parts, written only when the caller gives those ops and the set holds all of them). A pattern is the product of
its parts, and the products never overlap. Where the patterns would be too many or too long, the label names the
first few and ends with "and N more ops" ("1 more op"), N counting the ops those patterns leave out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["group_name"]

_SPECIAL = frozenset("{},*")
_SET_ITEMS = 4          # a part with more items than this is written '*' where that is exact
_MAX_CHARS = 96         # a longer label names its first patterns and counts the rest

Rect = list[list[str]]  # one value list per name part; the set of names is the product of the lists


def _plain(name: str) -> bool:
    """Whether a name can take part in patterns: no pattern syntax in it and no empty part."""
    return not (_SPECIAL & set(name)) and "" not in name.split(".")


def _canonical_int(v: str) -> bool:
    return v.isdigit() and v.isascii() and str(int(v)) == v


def _items(values: Sequence[str], first_seen: dict[str, int]) -> list[str]:
    """The values of one part as pattern items: integer runs as 'a..b', the rest in first-appearance order."""
    if all(_canonical_int(v) for v in values):
        ints = sorted(int(v) for v in values)
        out: list[str] = []
        start = prev = ints[0]
        for x in [*ints[1:], None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            out.append(str(start) if start == prev else f"{start}..{prev}")
            if x is not None:
                start = prev = x
        return out
    return sorted(values, key=lambda v: first_seen[v])


def _merge(rows: list[tuple[str, ...]], order: Sequence[int]) -> list[Rect]:
    """Disjoint products covering exactly `rows`: merge products that differ in one part until none do."""
    n = len(rows[0])
    rects: list[Rect] = [[[v] for v in row] for row in rows]
    changed = True
    while changed:
        changed = False
        for p in order:
            merged: dict[tuple[frozenset[str] | None, ...], Rect] = {}
            for r in rects:
                key = tuple(None if i == p else frozenset(r[i]) for i in range(n))
                if key in merged:
                    merged[key][p].extend(r[p])
                    changed = True
                else:
                    merged[key] = [list(x) for x in r]
            rects = list(merged.values())
    return rects


def _star_exact(rect: Rect, p: int, universe: list[tuple[str, ...]]) -> bool:
    """Whether '*' at part p of this product names exactly its values there among the workload's ops."""
    others = [(i, set(vs)) for i, vs in enumerate(rect) if i != p]
    seen = {u[p] for u in universe if all(u[i] in vs for i, vs in others)}
    return seen == set(rect[p])


def _render(rect: Rect, first_seen: list[dict[str, int]], universe: list[tuple[str, ...]] | None) -> str:
    parts = []
    for p, values in enumerate(rect):
        items = _items(values, first_seen[p])
        if len(items) == 1 and ".." not in items[0]:
            parts.append(items[0])
        elif len(items) > _SET_ITEMS and universe is not None and _star_exact(rect, p, universe):
            parts.append("*")
        else:
            parts.append("{" + ",".join(items) + "}")
    return ".".join(parts)


def _size(rect: Rect) -> int:
    out = 1
    for values in rect:
        out *= len(values)
    return out


def _patterns(names: list[str], universe: Iterable[str] | None) -> list[tuple[str, int]]:
    """(pattern, ops it names) covering `names` exactly, in order of each pattern's first op."""
    position = {name: i for i, name in enumerate(names)}
    by_len: dict[int, list[tuple[str, ...]]] = {}
    out: list[tuple[int, str, int]] = []
    for name in names:
        if _plain(name):
            by_len.setdefault(name.count(".") + 1, []).append(tuple(name.split(".")))
        else:
            out.append((position[name], name, 1))
    uni_by_len: dict[int, list[tuple[str, ...]]] = {}
    if universe is not None:
        for u in dict.fromkeys([*universe, *names]):
            if _plain(u):
                uni_by_len.setdefault(u.count(".") + 1, []).append(tuple(u.split(".")))
    for n, rows in by_len.items():
        first_seen: list[dict[str, int]] = [{} for _ in range(n)]
        for row in rows:
            for p, v in enumerate(row):
                first_seen[p].setdefault(v, len(first_seen[p]))
        orders = [list(range(n))[k:] + list(range(n))[:k] for k in range(n)]
        orders += [o[::-1] for o in orders]
        best: list[tuple[str, int, int]] | None = None
        for order in orders:
            rects = _merge(rows, order)
            cand = [(_render(r, first_seen, uni_by_len.get(n) if universe is not None else None), _size(r),
                     min(position[".".join(x)] for x in _members(r))) for r in rects]
            if best is None or (len(cand), sum(len(c[0]) for c in cand)) < (len(best), sum(len(c[0]) for c in best)):
                best = cand
        assert best is not None
        out.extend((first, label, size) for label, size, first in best)
    return [(label, size) for _, label, size in sorted(out)]


def _members(rect: Rect) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for values in rect:
        out = [(*x, v) for x in out for v in values]
    return out


def group_name(names: Sequence[str], limit: int = 3, universe: Iterable[str] | None = None,
               max_chars: int = _MAX_CHARS) -> str:
    """One label naming exactly the ops `names`: ['encoder.0.q', 'encoder.1.q'] -> 'encoder.{0..1}.q'.

    `universe` is every op name of the workload; with it a part may be written '*' where that is exact.
    Past `limit` patterns or `max_chars` characters the label names its first patterns (at least one) and
    ends with "and N more ops".
    """
    names = list(dict.fromkeys(names))
    if not names:
        return "no ops"
    if len(names) == 1:
        return names[0]
    patterns = _patterns(names, universe)
    text = ", ".join(p for p, _ in patterns)
    if len(patterns) <= limit + 1 and len(text) <= max_chars:  # "and 1 more op" would save no room
        return text
    shown: list[str] = []
    covered = 0
    for p, size in patterns[:limit]:
        if shown and len(", ".join([*shown, p])) > max_chars:
            break
        shown.append(p)
        covered += size
    if len(shown[0]) > max_chars:
        shown, covered = [names[0]], 1
    rest = len(names) - covered
    return f"{', '.join(shown)} and {rest} more op{'s' if rest > 1 else ''}"
