"""Recognising attention written as separate ops, for fused lowering (``accelsim.hardware.attention``).

A workload writes attention as eager frameworks run it (``llama2-7b-prefill.yaml``, ``bert-base.yaml``):

- a ``matmul`` of the scores, QK^T: m query rows, n keys, k head dim, ``batch`` heads;
- one or more score-sized vector ops (``elementwise`` scale / mask, ``softmax``), each with
  m x n x batch elements, at least one of them a softmax;
- the ``matmul`` that reads those scores, PV: the same m and batch, k = the scores' n, n = the head dim;

in that order, with nothing in between. Such a run of layers is one *attention group*; a group whose two
matmuls disagree on ``kv_cache`` is not one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SCORE_OPS = ("elementwise", "softmax")


def attention_groups(layers: Sequence[Any]) -> list[tuple[int, int]]:
    """``(first, last)`` layer indices (inclusive) of every attention group of ``layers``, in order."""
    groups: list[tuple[int, int]] = []
    i = 0
    while i < len(layers):
        end = _group_end(layers, i)
        if end is None:
            i += 1
            continue
        groups.append((i, end))
        i = end + 1
    return groups


def _group_end(layers: Sequence[Any], i: int) -> int | None:
    scores = layers[i]
    if scores.op != "matmul":
        return None
    size = scores.m * scores.n * scores.batch
    j = i + 1
    softmax = False
    while j < len(layers) and layers[j].op in SCORE_OPS and layers[j].elements == size:
        softmax = softmax or layers[j].op == "softmax"
        j += 1
    if not softmax or j >= len(layers):
        return None
    ctx = layers[j]
    if (ctx.op == "matmul" and ctx.m == scores.m and ctx.k == scores.n and ctx.n == scores.k
            and ctx.batch == scores.batch and bool(ctx.kv_cache) == bool(scores.kv_cache)):
        return j
    return None
