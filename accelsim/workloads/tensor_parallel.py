"""Megatron-style tensor parallelism: one device's shard of a workload and the collectives between shards.

Shoeybi et al., "Megatron-LM" (arXiv:1909.08053), section 3: the first GEMM of a block is split by columns
(its output features, ``m`` here) and the second by rows (its reduction, ``k``), so each device computes a
partial sum of the block's output and one all-reduce of ``tokens x hidden`` elements follows the block.
Here, on the layers of a loaded workload, by each GEMM's *role* (:data:`ROLES`, by the last part of its name):

- column-parallel (``m / N``): ``q_proj``, ``k_proj``, ``v_proj``, ``qkv_proj``, ``gate_proj``, ``up_proj``,
  ``fc1`` and the MoE experts' ``w1`` / ``w3`` (BERT / ViT workloads: ``q``, ``k``, ``v``, ``qkv``, ``ffn1``).
  Attention heads split with them: the attention matmuls of a block keep ``heads / N`` query heads.
  Grouped-query attention: with ``kv_heads`` divisible by N each device holds ``kv_heads / N`` K/V heads;
  with fewer K/V heads than devices (N divisible by kv_heads) each device holds **one** K/V head,
  replicated on N / kv_heads devices (its K/V projection, cache writes and cache reads included), as
  Megatron and vLLM do.
- row-parallel (``k / N``), then an all-reduce: ``o_proj``, ``down_proj``, ``fc2`` and the experts' ``w2``
  (``attn_out``, ``ffn2``). The
  all-reduce comes before the next op that is not part of the block (the residual add); a MoE block's
  ``combine`` sums its experts' partial outputs first, so its all-reduce follows the combine.
- vocab-parallel: ``embed_tokens`` (``vocab / N`` rows per device, then an all-reduce of tokens x dim) and
  ``lm_head`` (``m = vocab / N``, then an all-gather of the logits).
- replicated: the MoE router (``gate``), and any GEMM, conv or matmul with no role (said in ``notes``).

Vector ops between a column- and a row-parallel GEMM (rotary, softmax, SiLU, gate multiply, KV-cache
writes) run on ``1 / N`` of their elements; the others (norms, residual adds) on all of them on every device
(no sequence parallelism). MoE (``moe_split: tp_inside_experts``, Megatron's default without expert
parallelism): every expert is split over all devices and gets the tokens the routing gives it.
Sizes that N does not divide are rounded up (the largest shard, which sets the pace) and said in ``notes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from accelsim.workloads.attention import attention_groups
from accelsim.workloads.model import Workload

COLUMN, ROW, VOCAB_EMBED, VOCAB_OUT, REPLICATE = "column", "row", "vocab_embed", "vocab_out", "replicate"
ROLES: dict[str, str] = {}


def register_role(name: str, role: str) -> None:
    """Give layers whose name ends in ``name`` (after the last dot) the tensor-parallel ``role``."""
    if role not in (COLUMN, ROW, VOCAB_EMBED, VOCAB_OUT, REPLICATE):
        raise ValueError(f"unknown tensor-parallel role {role!r}")
    ROLES[name] = role


# Hugging Face Llama / Mistral / Mixtral names, and the shipped BERT / ViT workloads' (q, k, v, qkv, attn_out,
# ffn1, ffn2, fc1, fc2)
for _n in ("q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj", "fc1", "w1", "w3",
           "q", "k", "v", "qkv", "ffn1"):
    register_role(_n, COLUMN)
for _n in ("o_proj", "down_proj", "fc2", "w2", "attn_out", "ffn2"):
    register_role(_n, ROW)
register_role("embed_tokens", VOCAB_EMBED)
register_role("lm_head", VOCAB_OUT)
register_role("gate", REPLICATE)  # the MoE router: experts x tokens, every device routes all tokens


@dataclass(frozen=True)
class Collective:
    """A collective after layer ``after`` of the shard: all_reduce or all_gather of ``message_bytes``."""

    name: str
    kind: str
    message_bytes: int
    after: int  # index into the shard's layers
    producer: int  # the layer whose output it moves (overlap: producer)


@dataclass(frozen=True)
class TensorParallelPlan:
    """One device's shard of a workload, the collectives between its layers, and what the split assumed."""

    workload: Workload
    devices: int
    collectives: tuple[Collective, ...]
    kv_heads: int | None
    heads: int | None
    kv_replicated: bool
    notes: tuple[str, ...] = field(default=())

    def assumptions(self) -> dict[str, Any]:
        """The split as echoed into results."""
        return {"scheme": "megatron", "tensor_parallel": self.devices, "heads": self.heads,
                "kv_heads": self.kv_heads, "kv_heads_per_device": self._kv_per_device(),
                "kv_replicated": self.kv_replicated, "moe_split": "tp_inside_experts",
                "sequence_parallel": False}

    def _kv_per_device(self) -> int | None:
        if self.kv_heads is None:
            return None
        return max(1, self.kv_heads // self.devices)


def _ceil_div(a: int, n: int) -> int:
    return -(-a // n)


def _head_dims(layers: list[Any]) -> list[int | None]:
    """For each layer, the head dim of the next attention group at or after it (None past the last)."""
    starts = {first: layers[first].k for first, _ in attention_groups(layers)}
    out: list[int | None] = [None] * len(layers)
    nxt: int | None = None
    for i in range(len(layers) - 1, -1, -1):
        nxt = starts.get(i, nxt)
        out[i] = nxt
    return out


class _Splitter:
    def __init__(self, model: Workload, n: int) -> None:
        self.model, self.n, self.e = model, n, model.dtype_bytes
        self.out: list[Any] = []
        self.coll: list[Collective] = []
        self.notes: dict[str, int] = {}
        self.heads: int | None = None
        self.kv: int | None = None
        self.state = "full"  # full | split (after a column GEMM) | partial (after a row GEMM)
        self.pending: tuple[int, int] = (0, 0)  # (message bytes, producer index) of the open all-reduce

    def note(self, text: str) -> None:
        self.notes[text] = self.notes.get(text, 0) + 1

    def div(self, value: int, what: str) -> int:
        if value % self.n:
            self.note(f"{what} {value} is not divisible by {self.n} devices: rounded up to the largest shard")
        return _ceil_div(value, self.n)

    def kv_per_device(self) -> int:
        assert self.kv is not None
        return self.kv // self.n if self.kv % self.n == 0 else 1

    def collective(self, name: str, kind: str, nbytes: float, producer: int) -> None:
        self.coll.append(Collective(name, kind, math.ceil(nbytes), len(self.out) - 1, producer))

    def close(self, before: Any) -> None:
        """Emit the open all-reduce (a row-parallel block's output) before ``before`` runs."""
        nbytes, producer = self.pending
        self.collective(f"{self.out[producer].name}.all_reduce", "all_reduce", nbytes, producer)
        self.state = "full"

    def gemm(self, layer: Any, role: str | None, head_dim: int | None) -> Any:
        short = layer.name.rsplit(".", 1)[-1]
        if role == COLUMN:
            self.state = "split"
            if short in ("k_proj", "v_proj") and head_dim and layer.m % head_dim == 0:
                kv = layer.m // head_dim
                if kv % self.n == 0 or self.n % kv == 0:
                    self.kv = kv
                    return layer.model_copy(update={"m": self.kv_per_device() * head_dim})
            if short == "q_proj" and head_dim and layer.m % head_dim == 0:
                self.heads = layer.m // head_dim
            return layer.model_copy(update={"m": self.div(layer.m, f"{short} m")})
        if role == ROW:
            new = layer.model_copy(update={"k": self.div(layer.k, f"{short} k")})
            self.state = "partial"
            self.pending = (math.ceil(layer.m * layer.n * self.e), len(self.out))
            return new
        if role == VOCAB_OUT:
            return layer.model_copy(update={"m": self.div(layer.m, f"{short} vocab")})
        if role != REPLICATE:
            self.note(f"{layer.op} layers without a tensor-parallel role (by name): replicated on every device")
        return layer

    def matmul(self, layer: Any) -> Any:
        if self.state != "split":
            self.note("matmul layers outside a column-parallel block: replicated on every device")
            return layer
        if self.kv is not None and self.heads is not None and self.heads % self.kv == 0 \
                and layer.batch % self.kv == 0 and self.heads % self.n == 0:
            group = self.heads // self.kv  # query heads per K/V head: folded into m (GQA layout)
            kv_dev = self.kv_per_device()
            group_dev = self.heads // self.n // kv_dev
            if layer.m % group == 0:
                return layer.model_copy(update={"batch": layer.batch // self.kv * kv_dev,
                                                "m": layer.m // group * group_dev})
        return layer.model_copy(update={"batch": self.div(layer.batch, "attention batch x heads")})

    def vector(self, layer: Any) -> Any:
        if self.state != "split":
            return layer
        if layer.op == "kv_write" and self.kv is not None and layer.elements % self.kv == 0:
            return layer.model_copy(update={"elements": layer.elements // self.kv * self.kv_per_device()})
        return layer.model_copy(update={"elements": _ceil_div(layer.elements, self.n)})

    def run(self) -> TensorParallelPlan:
        layers = list(self.model.layers)
        dims = _head_dims(layers)
        layer: Any
        for layer, head_dim in zip(layers, dims, strict=True):
            role = ROLES.get(layer.name.rsplit(".", 1)[-1])
            combine = layer.name.endswith(".combine")
            if self.state == "partial" and role != COLUMN and not combine and layer.op not in ("gemm", "conv2d"):
                self.close(layer)
            if layer.op in ("gemm", "conv2d"):
                new = self.gemm(layer, role if layer.op == "gemm" else None, head_dim)
            elif layer.op == "matmul":
                new = self.matmul(layer)
            elif layer.op == "embedding" and role == VOCAB_EMBED:
                new = layer.model_copy(update={"vocab": self.div(layer.vocab, "embedding vocab")})
            elif hasattr(layer, "elements") and not combine:
                new = self.vector(layer)
            else:
                new = layer
            self.out.append(new)
            if role == VOCAB_EMBED and layer.op == "embedding":
                self.collective(f"{layer.name}.all_reduce", "all_reduce", layer.tokens * layer.dim * self.e,
                                len(self.out) - 1)
            elif role == VOCAB_OUT and layer.op == "gemm":
                self.collective(f"{layer.name}.all_gather", "all_gather", layer.m * layer.n * self.e,
                                len(self.out) - 1)
            elif combine and self.state == "partial":
                self.pending = (math.ceil(layer.elements * self.e), len(self.out) - 1)
                self.close(layer)
        if self.state == "partial":
            self.close(None)
        return self.plan()

    def plan(self) -> TensorParallelPlan:
        kv_elems = self.model.kv_cache_elements
        replicated = self.kv is not None and self.kv % self.n != 0
        if self.kv is not None and kv_elems % self.kv == 0:
            kv_elems = kv_elems // self.kv * self.kv_per_device()
        else:
            kv_elems = _ceil_div(kv_elems, self.n)
        if replicated:
            self.note(f"kv_heads {self.kv} < {self.n} devices: each device holds one K/V head, every K/V head "
                      f"replicated on {self.n // (self.kv or 1)} devices (projection, cache and cache reads)")
        shard = self.model.model_copy(update={"layers": self.out, "kv_cache_elements": kv_elems})
        notes = tuple(f"{text} ({count:,} layer(s))" if count > 1 else text for text, count in self.notes.items())
        return TensorParallelPlan(shard, self.n, tuple(self.coll), self.kv, self.heads, replicated, notes)


def split(model: Workload, devices: int) -> TensorParallelPlan:
    """One device's shard of ``model`` over ``devices`` (Megatron tensor parallelism, module docstring)."""
    if devices < 1:
        raise ValueError(f"devices must be at least 1, got {devices}")
    if devices == 1:
        return TensorParallelPlan(model, 1, (), None, None, False)
    return _Splitter(model, devices).run()
