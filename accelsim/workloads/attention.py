"""Recognising attention written as separate ops, for fused lowering (``accelsim.hardware.attention``).

A workload writes attention as eager frameworks run it (``llama2-7b-prefill.yaml``, ``bert-base.yaml``):

- a ``matmul`` of the scores, QK^T: m query rows, n keys, k head dim, ``batch`` heads;
- one or more score-sized vector ops (``elementwise`` scale / mask, ``softmax``), each with
  m x n x batch elements, at least one of them a softmax;
- the ``matmul`` that reads those scores, PV: the same m and batch, k = the scores' n, n = the head dim;

in that order, with nothing in between. Such a run of layers is one *attention group*; a group whose two
matmuls disagree on ``kv_cache`` is not one.

The workload's ``attention:`` section (``AttentionMask``) says whether its groups are causal: decoder LLMs
mask the keys after each query token, encoders (BERT, ViT) do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from accelsim.config import schema as configio
from accelsim.hardware.base import PosInt, Strict

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


# -- causal masking (the workload's ``attention:`` section) -----------------------------------------------

class AttentionMask(Strict):
    """How the workload's attention groups mask their scores: ``causal`` (decoder LLMs: query token p sees
    keys 0 .. offset + p, with offset = keys - query tokens, the KV cache ahead of the fresh tokens) or
    ``none`` (bidirectional: BERT, ViT). Eager (unfused) attention computes the full product and masks it
    either way; a fused causal kernel skips the K / V tiles wholly above the diagonal (engine.attention)."""

    mask: Literal["none", "causal"] = Field(
        "none", description="causal: query token p attends to keys 0 .. (keys - query tokens) + p (decoder LLMs: "
                            "Llama, Qwen, Mixtral); none: every key (BERT, ViT). Fused attention skips the K / V "
                            "tiles a causal mask hides; unfused attention computes the full product and masks it.")
    q_heads_stacked: PosInt = Field(
        1, description="Query heads stacked in each QK^T matmul's m rows (grouped-query attention written as one "
                       "product per KV head, head by head): m = q_heads_stacked x query tokens. 1: one head per "
                       "plane. Causal masking only (it sets each head's query tokens, hence the mask's offset).")

    @model_validator(mode="after")
    def _stacking_needs_causal(self) -> AttentionMask:
        if self.q_heads_stacked != 1 and self.mask != "causal":  # only a causal mask reads it: never silently unused
            raise configio.FieldError(("q_heads_stacked",), (
                f"{self.q_heads_stacked} query heads stacked, but stacking applies to mask: causal only (it sets "
                f"the query tokens per head a causal mask offsets); mask is {self.mask}: drop the key or set "
                "mask: causal"))
        return self


def causal_roles(layers: Sequence[Any], spec: AttentionMask | None) -> dict[int, int]:
    """For a causal ``spec``: each layer index of every attention group, with the group's query tokens per head
    (QK^T m / ``q_heads_stacked``); empty for bidirectional attention."""
    if spec is None or spec.mask != "causal":
        return {}
    out: dict[int, int] = {}
    for first, last in attention_groups(layers):
        q = layers[first].m // spec.q_heads_stacked
        out.update(dict.fromkeys(range(first, last + 1), q))
    return out


def causal_problem(layers: Sequence[Any], spec: AttentionMask | None) -> tuple[tuple[str | int, ...], str] | None:
    """Why a causal ``spec`` does not fit ``layers`` (the key to blame and a message), or None when it does."""
    if spec is None or spec.mask != "causal":
        return None
    groups = attention_groups(layers)
    if not groups:
        return ("attention", "mask"), ("causal, but no attention group was found (a QK^T matmul, score-sized "
                                       "scale / mask / softmax ops, the AV matmul reading them)")
    g = spec.q_heads_stacked
    for first, _ in groups:
        lay = layers[first]
        if lay.m % g or lay.m // g > lay.n:
            return ("attention", "q_heads_stacked"), (
                f"{g} query heads stacked in layer '{lay.name}' (m = {lay.m}, n = {lay.n} keys) leave "
                f"{lay.m / g:g} query tokens per head: it must divide m and leave no more tokens than keys")
    return None


def visible_pairs(q_tokens: int, keys: int) -> int:
    """(query, key) pairs a causal mask keeps for ``q_tokens`` queries over ``keys`` keys: query p (0-based) sees
    keys - q_tokens + p + 1 of them."""
    offset = keys - q_tokens
    return q_tokens * offset + q_tokens * (q_tokens + 1) // 2
