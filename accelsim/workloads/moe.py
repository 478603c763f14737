"""Mixture-of-experts layers: ``op: moe`` in a workload file, expanded at load time into plain ops.

A moe op (e.g. Mixtral's ``block_sparse_moe``) becomes, in this order:

- ``<name>.gate``: the router GEMM, m = experts, n = tokens, k = hidden (HF's name for it);
- ``<name>.routing``: softmax over the experts and the top-k choice, a vector softmax of tokens x experts;
- ``<name>.dispatch``: the gather that groups each expert's tokens (tokens x top_k x hidden elements);
- per expert that receives tokens, ``<name>.experts.<e>.w1`` / ``w3`` (gate and up, m = intermediate,
  n = its tokens, k = hidden), ``.act`` (the activation of w1's output), ``.mul`` (act x up; gated MLPs
  only) and ``w2`` (down, m = hidden, k = intermediate) -- each its own kernel, so each has its own
  sparse / dense decision and reason;
- ``<name>.combine``: the routing-weighted sum of each token's top_k expert outputs.

Every other op of accelsim is unchanged: lowering and the engine see GEMMs and vector ops.

Routing (how many tokens each expert gets) is a named assumption, written into the workload's ``moe``
record and so into every result:

- ``uniform``: each expert gets tokens x top_k / experts; a remainder goes one token each to the
  lowest-numbered experts (at decode batch 1, top-2 of 8: two experts get one token, six get none);
- ``zipf``: expert e (numbered by load, hottest first; not the model's expert ids) gets a share
  proportional to (e + 1)^-skew of the tokens x top_k assignments (skew 0 is uniform; skew 1 over 8
  experts gives 36.8 %, 18.4 %, 12.3 %, ... of them), capped at one assignment per token and expert
  (the excess goes to the others in proportion); counts are rounded by largest remainder so they sum
  exactly to tokens x top_k.

An expert with no tokens runs no kernel (grouped MoE kernels launch nothing for it); the record
counts the experts that ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.hardware.model import NonNegFloat, PosInt, Strict

ROUTINGS = ("uniform", "zipf")


class Moe(Strict):
    """A mixture-of-experts MLP block: a router and ``experts`` (gated) MLPs, ``top_k`` of them per token."""

    name: str = Field(min_length=1)
    op: Literal["moe"]
    tokens: PosInt = Field(description="Tokens entering the block (batch x seq; batch at decode).")
    hidden: PosInt = Field(description="Model width: the router's k and each expert's input and output.")
    intermediate: PosInt = Field(description="Each expert's intermediate size (w1 / w3 rows).")
    experts: PosInt = Field(description="Experts in the block.")
    top_k: PosInt = Field(description="Experts each token is routed to.")
    routing: Literal["uniform", "zipf"] = Field("uniform", description="The routing assumption (module docstring).")
    skew: NonNegFloat | None = Field(None, description="zipf only: the exponent s of the (e + 1)^-s shares.")
    gated: bool = Field(True, description="SwiGLU-style expert: act(w1 x) * (w3 x); False: act(w1 x), no w3.")
    function: Literal["silu", "gelu", "relu"] = Field("silu", description="The expert activation.")
    sparsity: str | None = Field(None, description="Pattern for the router and expert GEMMs, or 'dense'.")

    @model_validator(mode="after")
    def _consistent(self) -> Moe:
        if self.top_k > self.experts:
            raise configio.FieldError(("top_k",), f"top_k {self.top_k} is more than the {self.experts} experts")
        if self.routing == "zipf" and self.skew is None:
            raise configio.FieldError(("skew",), "routing 'zipf' needs a skew (0 is uniform, e.g. 1.0)")
        if self.routing == "uniform" and self.skew is not None:
            raise configio.FieldError(("skew",), "skew applies to routing 'zipf' only; routing is 'uniform'")
        return self


class MoeRouting(Strict):
    """The routing one or more moe ops ran with (identical ops share a record)."""

    layers: list[str] = Field(description="The moe ops with this routing.")
    routing: Literal["uniform", "zipf"]
    skew: NonNegFloat | None = None
    tokens: PosInt
    experts: PosInt
    top_k: PosInt
    tokens_per_expert: list[int] = Field(description="Tokens routed to each expert (hottest first for zipf).")
    experts_run: int = Field(description="Experts with at least one token: each runs its own kernels.")


def routing_shares(experts: int, routing: str, skew: float | None = None) -> list[float]:
    """Each expert's share of the assignments before the per-token cap: equal, or (e + 1)^-skew normalised."""
    weights = [1.0] * experts if routing == "uniform" else [(e + 1) ** -(skew or 0.0) for e in range(experts)]
    total = math.fsum(weights)
    return [w / total for w in weights]


def tokens_per_expert(tokens: int, experts: int, top_k: int, routing: str = "uniform",
                      skew: float | None = None) -> list[int]:
    """Tokens routed to each expert: ``tokens x top_k`` assignments split by the routing's shares, at most
    ``tokens`` per expert (a token picks an expert once), rounded by largest remainder (ties: lower index)."""
    if top_k > experts:
        raise ValueError(f"top_k {top_k} is more than the {experts} experts")
    total = tokens * top_k
    shares = routing_shares(experts, routing, skew)
    exact = [0.0] * experts
    free = list(range(experts))
    left = float(total)
    while free:  # water-filling: experts over the cap take the cap, the rest share what is left
        weight = math.fsum(shares[e] for e in free)
        over = [e for e in free if left * shares[e] / weight > tokens]
        if not over:
            for e in free:
                exact[e] = left * shares[e] / weight
            break
        for e in over:
            exact[e] = float(tokens)
            left -= tokens
        free = [e for e in free if e not in over]
    counts = [min(tokens, math.floor(x + 1e-9)) for x in exact]
    short = total - sum(counts)
    order = sorted((e for e in range(experts) if counts[e] < tokens), key=lambda e: (-(exact[e] - counts[e]), e))
    for e in order[:short]:
        counts[e] += 1
    return counts


def expand_one(moe: Moe) -> tuple[list[dict[str, Any]], list[int]]:
    """The plain layers of one moe op (module docstring) and its tokens per expert."""
    counts = tokens_per_expert(moe.tokens, moe.experts, moe.top_k, moe.routing, moe.skew)
    t, h, inter, n = moe.tokens, moe.hidden, moe.intermediate, moe.name
    plan = {"sparsity": moe.sparsity} if moe.sparsity is not None else {}
    out: list[dict[str, Any]] = [
        {"name": f"{n}.gate", "op": "gemm", "m": moe.experts, "n": t, "k": h, **plan},
        {"name": f"{n}.routing", "op": "softmax", "elements": t * moe.experts},
        {"name": f"{n}.dispatch", "op": "elementwise", "elements": t * moe.top_k * h, "inputs": 1},
    ]
    for e, te in enumerate(counts):
        if te == 0:
            continue
        p = f"{n}.experts.{e}"
        out.append({"name": f"{p}.w1", "op": "gemm", "m": inter, "n": te, "k": h, **plan})
        if moe.gated:
            out.append({"name": f"{p}.w3", "op": "gemm", "m": inter, "n": te, "k": h, **plan})
        out.append({"name": f"{p}.act", "op": "activation", "function": moe.function, "elements": inter * te})
        if moe.gated:
            out.append({"name": f"{p}.mul", "op": "elementwise", "elements": inter * te, "inputs": 2})
        out.append({"name": f"{p}.w2", "op": "gemm", "m": h, "n": te, "k": inter, **plan})
    out.append({"name": f"{n}.combine", "op": "elementwise", "elements": t * h, "inputs": moe.top_k})
    return out, counts


def expand_moe(data: dict[str, Any], src: str) -> dict[str, Any]:
    """``data`` (a templated workload) with each ``op: moe`` layer replaced by its plain ops and the routing
    recorded under ``moe``; unchanged (the same object) when it has none."""
    layers = data.get("layers")
    if not isinstance(layers, list) or not any(isinstance(x, dict) and x.get("op") == "moe" for x in layers):
        return data
    out: list[Any] = []
    records: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, item in enumerate(layers):
        if not (isinstance(item, dict) and item.get("op") == "moe"):
            out.append(item)
            continue
        where = f"{src}: layers[{i}]" + (f"({item['name']})" if isinstance(item.get("name"), str) else "")
        moe = configio.validate(Moe, item, where)
        try:
            expanded, counts = expand_one(moe)
        except ValueError as exc:  # pragma: no cover - the model validator refuses these first
            raise ConfigError(where, None, str(exc)) from None
        out.extend(expanded)
        key = (moe.routing, moe.skew, moe.tokens, moe.experts, moe.top_k)
        rec = records.setdefault(key, {"layers": [], "routing": moe.routing, "skew": moe.skew, "tokens": moe.tokens,
                                       "experts": moe.experts, "top_k": moe.top_k, "tokens_per_expert": counts,
                                       "experts_run": sum(1 for c in counts if c)})
        rec["layers"].append(moe.name)
    prior = data.get("moe")
    made = [{k: v for k, v in r.items() if v is not None} for r in records.values()]
    return {**data, "layers": out, "moe": [*prior, *made] if isinstance(prior, list) else made}


def routing_records(moe: Sequence[MoeRouting] | None) -> list[dict[str, Any]] | None:
    """A workload's ``moe`` records as plain data, as ``run`` echoes them under ``workload.moe`` (None: no moe op):
    what report, serve and patterns write beside their results."""
    return [r.model_dump(mode="json", exclude_none=True) for r in moe] if moe else None


def routing_line(rec: MoeRouting | Mapping[str, Any]) -> str:
    """``moe routing: zipf skew 1, top-2 of 8 experts over 256 tokens: tokens per expert [188, 94, ...] (1 moe
    layer(s), 8 experts run in each)``: one routing record as every command's text prints it."""
    r = rec.model_dump() if isinstance(rec, MoeRouting) else rec
    skew = f" skew {r['skew']:g}" if r.get("skew") is not None else ""
    return (f"moe routing: {r['routing']}{skew}, top-{r['top_k']} of {r['experts']} experts over {r['tokens']:,} "
            f"tokens: tokens per expert {list(r['tokens_per_expert'])} ({len(r['layers'])} moe layer(s), "
            f"{r['experts_run']} experts run in each)")
