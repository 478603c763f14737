"""Megatron-style tensor parallelism: one device's shard of a workload and the collectives between shards.

Shoeybi et al., "Megatron-LM" (arXiv:1909.08053), section 3: the first GEMM of a block is split by columns
(its output features, ``m`` here) and the second by rows (its reduction, ``k``), so each device computes a
partial sum of the block's output and one all-reduce of ``tokens x hidden`` elements follows the block.
Here, on the layers of a loaded workload, by each GEMM's *role* (:data:`ROLES`, by the last part of its name):

- column-parallel (``m / N``): ``q_proj``, ``k_proj``, ``v_proj``, ``qkv_proj``, ``gate_proj``, ``up_proj``,
  ``fc1`` and the MoE experts' ``w1`` / ``w3`` (BERT / ViT workloads: ``q``, ``k``, ``v``, ``qkv``, ``ffn1``).
  Attention is split by **whole heads**, as Megatron-LM and vLLM do: each attention group (QK^T, score
  ops, AV; :mod:`accelsim.workloads.attention`) gives the head dim (QK^T's k), its query projection (or
  else its output projection's k) the query heads, its K/V projection the K/V heads. The query heads must
  be divisible by N, and N must divide the K/V heads or be a multiple of them; anything else is refused
  (``InfeasibleError`` on ``system.devices``, naming the workload and its heads), never rounded to a
  fraction of a head. Each device keeps ``heads / N`` query heads; with ``kv_heads`` divisible by N
  ``kv_heads / N`` K/V heads; with fewer K/V heads than devices **one** K/V head, replicated on
  N / kv_heads devices (its K/V projection, cache writes and cache reads included).
- row-parallel (``k / N``), then an all-reduce: ``o_proj``, ``down_proj``, ``fc2`` and the experts' ``w2``
  (``attn_out``, ``ffn2``). The
  all-reduce comes before the next op that reads the partial sums: any op (the residual add, a replicated
  GEMM such as a pooler, another row-parallel GEMM, the next block's column-parallel GEMM where a workload
  has no add or norm between) except, inside one MoE block (``<block>.experts.<e>.*`` followed by a
  ``<block>.combine``), the next expert's column GEMMs, which read the block's input: the ``combine`` sums
  the experts' partial outputs first, so the block's all-reduce follows the combine.
- vocab-parallel: ``embed_tokens`` (``vocab / N`` rows per device, then an all-reduce of tokens x dim) and
  ``lm_head`` (``m = vocab / N``, then an all-gather of the logits).
- replicated: the MoE router (``gate``), and any GEMM, conv or matmul with no role (said in ``notes``).

Vector ops between a column- and a row-parallel GEMM (SiLU, gate multiply) run on ``1 / N`` of their
elements (on the column GEMM's rounded-up shard when N does not divide its ``m``); rotary embeddings
(:data:`QK_OPS`, by name: ``rotary``, ``rope``, ``rotary_emb``; elements ``tokens x (heads + K/V heads) x
head dim``) on the device's query heads and the K/V heads it holds,
``tokens x (heads / N + K/V heads per device) x head dim`` (with replicated K/V heads more than ``1 / N``);
KV-cache writes on the device's K/V heads, the score ops of an attention group on exactly the elements of the
device's QK^T shard (so the group still fuses); the others (norms, residual adds) on all of them on every
device (no sequence parallelism). MoE (``moe_split: tp_inside_experts``, Megatron's default without
expert parallelism): every expert is split over all devices and gets the tokens the routing gives it.
Other sizes that N does not divide (an MLP's intermediate size, a vocabulary) are rounded up to the
largest shard, which sets the pace, and said in ``notes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from accelsim.errors import InfeasibleError
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

# vector ops on the query and key heads of the block (rotary embeddings), by the last part of their name: each
# device runs them on its query heads and the K/V heads it holds (replicated ones included)
QK_OPS: set[str] = {"rotary", "rope", "rotary_emb"}


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
        return _kv_dev(self.kv_heads, self.devices)


def _ceil_div(a: int, n: int) -> int:
    return -(-a // n)


def _short(layer: Any) -> str:
    return str(layer.name).rsplit(".", 1)[-1]


# the projections that carry attention heads, by the last part of their name: query, key, value, fused QKV
_Q, _K, _V, _QKV = "q", "k", "v", "qkv"
PROJECTIONS: dict[str, str] = {"q_proj": _Q, "q": _Q, "k_proj": _K, "k": _K, "v_proj": _V, "v": _V,
                               "qkv_proj": _QKV, "qkv": _QKV}


@dataclass(frozen=True)
class _Block:
    """One attention block: its QK^T layer, head dim, query heads and K/V heads (None: not found)."""

    scores: str
    head_dim: int
    heads: int | None
    kv_heads: int | None


def _heads(layers: list[Any], proj: dict[str, int], out: int | None, hd: int) -> tuple[int | None, int | None]:
    """(query heads, K/V heads) of one block from its projections' sizes in whole heads of ``hd``."""
    def count(i: int, dim: str) -> int | None:
        value = int(getattr(layers[i], dim))
        return value // hd if value % hd == 0 else None

    heads = count(proj[_Q], "m") if _Q in proj else None
    if heads is None and out is not None:  # the output projection reduces over every query head
        heads = count(out, "k")
    kv = next((count(proj[x], "m") for x in (_K, _V) if x in proj), None)
    total = count(proj[_QKV], "m") if _QKV in proj else None
    if total is not None:  # fused QKV: heads + 2 x K/V heads (multi-head attention when nothing else says)
        if heads is None and total % 3 == 0:
            heads = total // 3
        if kv is None and heads is not None and total > heads and (total - heads) % 2 == 0:
            kv = (total - heads) // 2
    if heads is not None and kv is not None and heads % kv:  # not grouped-query attention: no head split of K/V
        kv = None
    return heads, kv


def _blocks(layers: list[Any]) -> tuple[dict[int, _Block], dict[int, int]]:
    """Each attention group's block, keyed by the index of every layer that carries its heads (its Q / K / V
    projections, the group's layers, its output projection); and each group layer's QK^T index."""
    groups = attention_groups(layers)
    of: dict[int, _Block] = {}
    scores_of: dict[int, int] = {}
    for g, (first, last) in enumerate(groups):
        lo = groups[g - 1][1] + 1 if g else 0
        hi = groups[g + 1][0] if g + 1 < len(groups) else len(layers)
        hd = layers[first].k
        proj: dict[str, int] = {}
        for i in range(first - 1, lo - 1, -1):  # the nearest projections before the group
            kind = PROJECTIONS.get(_short(layers[i])) if layers[i].op == "gemm" else None
            if kind is not None and ROLES.get(_short(layers[i])) == COLUMN:
                proj.setdefault(kind, i)
        out = next((i for i in range(last + 1, hi) if layers[i].op == "gemm"
                    and ROLES.get(_short(layers[i])) == ROW), None)
        block = _Block(layers[first].name, hd, *_heads(layers, proj, out, hd))
        for i in (*proj.values(), *range(first, last + 1), *(() if out is None else (out,))):
            of[i] = block
        scores_of.update(dict.fromkeys(range(first, last + 1), first))
    return of, scores_of


def _moe_block(name: str) -> str | None:
    """The MoE block of an expert's layer (``<block>.experts.<e>.<op>``, :mod:`accelsim.workloads.moe`), else None."""
    block, sep, rest = str(name).rpartition(".experts.")
    expert = rest.split(".", 1)
    return block if sep and block and len(expert) == 2 and expert[0].isdigit() else None


def _kv_dev(kv: int, n: int) -> int:
    """K/V heads one device holds: kv / n, or one (replicated) when there are fewer K/V heads than devices."""
    return kv // n if kv % n == 0 else 1


def _choices(heads: int, kv: int | None) -> str:
    ok = [d for d in range(2, heads + 1) if heads % d == 0 and (kv is None or kv % d == 0 or d % kv == 0)]
    if not ok:
        return "1 device (no tensor parallelism)"
    listed = [str(d) for d in ok]
    return (", ".join(listed[:-1]) + " or " + listed[-1] if len(listed) > 1 else listed[0]) + " devices"


def check_heads(model: Workload, devices: int, source: str = "system") -> None:
    """Refuse a tensor-parallel degree that would split an attention head (``InfeasibleError`` on
    ``system.devices``): the query heads must be divisible by ``devices``, and ``devices`` must divide the
    K/V heads or be a multiple of them (each K/V head then replicated)."""
    if devices <= 1:
        return
    seen: set[_Block] = set()
    for block in _blocks(list(model.layers))[0].values():
        if block in seen:
            continue
        seen.add(block)
        h, kv, n = block.heads, block.kv_heads, devices
        where = f"workload '{model.name}' (layer '{block.scores}', head dim {block.head_dim})"
        rule = "tensor parallelism splits whole attention heads, as Megatron-LM and vLLM do"
        if h is not None and h % n:
            raise InfeasibleError(source, "system.devices", (
                f"{n} devices do not divide the {h} query heads of {where}: {rule}; use {_choices(h, kv)}"))
        if h is not None and kv is not None and kv % n and n % kv:
            raise InfeasibleError(source, "system.devices", (
                f"{n} devices neither divide the {kv} K/V heads of {where} nor are a multiple of {kv} (each K/V "
                f"head then replicated): {rule}; use {_choices(h, kv)}"))


class _Splitter:
    def __init__(self, model: Workload, n: int) -> None:
        self.model, self.n, self.e = model, n, model.dtype_bytes
        self.out: list[Any] = []
        self.coll: list[Collective] = []
        self.notes: dict[str, int] = {}
        self.heads: int | None = None
        self.kv: int | None = None
        self.replicated = False
        self.block: _Block | None = None  # the attention block being split (its heads)
        self.state = "full"  # full | split (after a column GEMM) | partial (after a row GEMM)
        self.pending: tuple[int, int] = (0, 0)  # (message bytes, producer index) of the open all-reduce
        self.rounded: tuple[int, int] | None = None  # (m, device m) of the last column GEMM when rounded up

    def note(self, text: str) -> None:
        self.notes[text] = self.notes.get(text, 0) + 1

    def div(self, value: int, what: str) -> int:
        if value % self.n:
            self.note(f"{what} {value} is not divisible by {self.n} devices: rounded up to the largest shard")
        return _ceil_div(value, self.n)

    def enter(self, block: _Block) -> None:
        """The layers that follow belong to ``block``: its heads set the K/V split (and the plan's echo)."""
        self.block = block
        if self.heads is None:
            self.heads, self.kv = block.heads, block.kv_heads
        if block.kv_heads is not None and block.kv_heads % self.n:
            self.replicated = True

    def collective(self, name: str, kind: str, nbytes: float, producer: int) -> None:
        self.coll.append(Collective(name, kind, math.ceil(nbytes), len(self.out) - 1, producer))

    def close(self, before: Any) -> None:
        """Emit the open all-reduce (a row-parallel block's output) before ``before`` runs."""
        nbytes, producer = self.pending
        self.collective(f"{self.out[producer].name}.all_reduce", "all_reduce", nbytes, producer)
        self.state = "full"

    def gemm(self, layer: Any, role: str | None, block: _Block | None) -> Any:
        short = _short(layer)
        if role == COLUMN:
            self.state = "split"
            self.rounded = None
            kind = PROJECTIONS.get(short) if block is not None else None
            if block is not None and block.kv_heads is not None:
                hd, kv = block.head_dim, block.kv_heads
                if kind in (_K, _V) and layer.m == kv * hd:
                    return layer.model_copy(update={"m": _kv_dev(kv, self.n) * hd})
                if kind == _QKV and block.heads is not None and layer.m == (block.heads + 2 * kv) * hd:
                    m = (block.heads // self.n + 2 * _kv_dev(kv, self.n)) * hd
                    return layer.model_copy(update={"m": m})
            m = self.div(layer.m, f"{short} m")
            if layer.m % self.n:  # the vector ops on its output run on the same rounded-up shard
                self.rounded = (layer.m, m)
            return layer.model_copy(update={"m": m})
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

    def matmul(self, layer: Any, block: _Block | None) -> Any:
        if self.state != "split":
            self.note("matmul layers outside a column-parallel block: replicated on every device")
            return layer
        h = block.heads if block is not None else None
        kv = block.kv_heads if block is not None else None
        if h is not None and kv is not None and layer.batch % kv == 0 and layer.m % (h // kv) == 0:
            # one product per K/V head, its query heads stacked in m (GQA layout; kv = h: one per head)
            kv_dev = _kv_dev(kv, self.n)
            return layer.model_copy(update={"batch": layer.batch // kv * kv_dev,
                                            "m": layer.m // (h // kv) * (h // self.n // kv_dev)})
        if h is not None and layer.batch % h == 0:  # one product per query head: heads / N of them
            return layer.model_copy(update={"batch": layer.batch // self.n})
        return layer.model_copy(update={"batch": self.div(layer.batch, "attention batch x heads")})

    def vector(self, layer: Any, scores: int | None) -> Any:
        if self.state != "split":
            return layer
        if scores is not None:  # a score op of an attention group: the device's QK^T shard, element for element
            s = self.out[scores]
            return layer.model_copy(update={"elements": s.m * s.n * s.batch})
        kv = self.block.kv_heads if self.block is not None else None
        if layer.op == "kv_write" and kv is not None and layer.elements % kv == 0:
            return layer.model_copy(update={"elements": layer.elements // kv * _kv_dev(kv, self.n)})
        if _short(layer) in QK_OPS and self.block is not None:
            return self.qk_vector(layer, self.block)
        if self.rounded is not None and layer.elements % self.rounded[0] == 0:  # rows of the rounded-up shard
            full, shard = self.rounded
            return layer.model_copy(update={"elements": layer.elements // full * shard})
        return layer.model_copy(update={"elements": _ceil_div(layer.elements, self.n)})

    def qk_vector(self, layer: Any, block: _Block) -> Any:
        """A rotary op of ``tokens x (heads + kv_heads) x head_dim`` elements on the device's query heads and the
        K/V heads it holds; ``1 / N`` of them (said in the notes when K/V heads are replicated) otherwise."""
        h, kv, hd = block.heads, block.kv_heads, block.head_dim
        if h is not None and kv is not None and layer.elements % ((h + kv) * hd) == 0:
            tokens = layer.elements // ((h + kv) * hd)
            return layer.model_copy(update={"elements": tokens * (h // self.n + _kv_dev(kv, self.n)) * hd})
        if kv is not None and kv % self.n:
            self.note(f"{_short(layer)} elements are not tokens x (heads + K/V heads) x head dim {hd}: split "
                      f"1 / {self.n}, its part on the replicated K/V heads under-counted")
        return layer.model_copy(update={"elements": _ceil_div(layer.elements, self.n)})

    def run(self) -> TensorParallelPlan:
        layers = list(self.model.layers)
        blocks, scores_of = _blocks(layers)
        combined = {str(lay.name)[:-len(".combine")] for lay in layers if str(lay.name).endswith(".combine")}
        layer: Any
        for i, layer in enumerate(layers):
            role = ROLES.get(_short(layer))
            combine = layer.name.endswith(".combine")
            block = blocks.get(i)
            if block is not None:
                self.enter(block)
            # the partial sums are all-reduced before the first op that reads them: any but the combine (which
            # sums the experts first) and, inside one MoE block with a combine, the next expert's column GEMM
            # (which reads the block's input); a dense block's column GEMM after a row GEMM reads its output
            if self.state == "partial" and not combine and not self.next_expert(layer, role, combined):
                self.close(layer)
            if layer.op in ("gemm", "conv2d"):
                new = self.gemm(layer, role if layer.op == "gemm" else None, block)
            elif layer.op == "matmul":
                new = self.matmul(layer, block)
            elif layer.op == "embedding" and role == VOCAB_EMBED:
                new = layer.model_copy(update={"vocab": self.div(layer.vocab, "embedding vocab")})
            elif hasattr(layer, "elements") and not combine:
                new = self.vector(layer, scores_of.get(i))
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

    def next_expert(self, layer: Any, role: str | None, combined: set[str]) -> bool:
        """Whether ``layer`` is a column GEMM of the next expert of the MoE block whose expert left the open
        partial sums: it reads the block's input, and the block's combine sums the experts before the all-reduce."""
        if role != COLUMN or layer.op != "gemm":
            return False
        moe = _moe_block(layer.name)
        return moe is not None and moe in combined and moe == _moe_block(self.out[self.pending[1]].name)

    def plan(self) -> TensorParallelPlan:
        kv_elems = self.model.kv_cache_elements
        if self.kv is not None and kv_elems % self.kv == 0:  # the cache holds the device's K/V heads
            kv_elems = kv_elems // self.kv * _kv_dev(self.kv, self.n)
        elif kv_elems:
            kv_elems = self.div(kv_elems, "kv_cache_elements")
        if self.replicated:
            self.note(f"kv_heads {self.kv} < {self.n} devices: each device holds one K/V head, every K/V head "
                      f"replicated on {self.n // (self.kv or 1)} devices (projection, rotary, cache and cache reads)")
        before = len(attention_groups(self.model.layers))
        lost = before - len(attention_groups(self.out))
        if lost:  # never silently: a fused kernel became separate matmuls and score ops
            self.note(f"{lost:,} of {before:,} attention group(s) no longer match after the split (QK^T, score ops "
                      "and AV disagree on the device's share): they run unfused")
        shard = self.model.model_copy(update={"layers": tuple(self.out), "kv_cache_elements": kv_elems})
        notes = tuple(f"{text} ({count:,} layer(s))" if count > 1 else text for text, count in self.notes.items())
        return TensorParallelPlan(shard, self.n, tuple(self.coll), self.kv, self.heads, self.replicated, notes)


def split(model: Workload, devices: int, source: str = "system") -> TensorParallelPlan:
    """One device's shard of ``model`` over ``devices`` (Megatron tensor parallelism, module docstring).

    Raises :class:`~accelsim.errors.InfeasibleError` (``source``: the hardware's, key ``system.devices``) when
    ``devices`` would split an attention head (:func:`check_heads`)."""
    if devices < 1:
        raise ValueError(f"devices must be at least 1, got {devices}")
    if devices == 1:
        return TensorParallelPlan(model, 1, (), None, None, False)
    check_heads(model, devices, source)
    return _Splitter(model, devices).run()
