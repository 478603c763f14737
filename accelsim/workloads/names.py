"""Op names of a workload: one short label for a set of them (tables and messages about many ops)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["group_name"]


def _compress_component(values: list[str]) -> str:
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    if all(v.isdigit() for v in distinct):
        ints = sorted(int(v) for v in distinct)
        if ints == list(range(ints[0], ints[-1] + 1)):
            return f"{{{ints[0]}..{ints[-1]}}}"
    if len(distinct) <= 4:
        return "{" + ",".join(distinct) + "}"
    return "*"


def group_name(names: Sequence[str], limit: int = 3) -> str:
    """One label for a set of op names: ['encoder.0.q', 'encoder.1.k'] -> 'encoder.{0..1}.{q,k}'.

    Names are split at '.', grouped by their number of parts (first appearance order) and each part
    position is written as its single value, an integer range, a set of up to four values, or '*'.
    """
    if len(names) == 1:
        return names[0]
    by_len: dict[int, list[list[str]]] = {}
    for name in names:
        parts = name.split(".")
        by_len.setdefault(len(parts), []).append(parts)
    labels = [".".join(_compress_component([p[i] for p in group]) for i in range(n)) for n, group in by_len.items()]
    return ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more groups" if len(labels) > limit else "")
