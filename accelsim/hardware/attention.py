"""How a part runs attention, softmax(Q K^T) V: a lowering choice named in the hardware config (``attention:``).

``fused`` (the default on ``tensor_core`` parts, as deployed: FlashAttention-2, Dao 2023, arXiv:2307.08691;
FlashDecoding for decode): lowering recognises a workload's QK^T matmul, its score-sized vector ops
(scale, mask, softmax) and the AV matmul that reads those scores, and runs them as one kernel that
streams Q, K and V through shared memory and writes only O -- the score matrix never reaches DRAM.
Its matmuls run on the tensor cores at the dense rate (attention has no weight, so it stays dense under
weight sparsity: ``activation_operands``); the softmax runs on the vector unit. The engine's model is
``accelsim/engine/attention.py``: a query block of rows stays in shared memory while blocks of K and V
rows stream past it, so a tile needs ``q_rows x d + stages x 2 x kv_rows x d`` elements of shared memory
(``core.sram.bytes``): the on-chip tiling limit.

Causal masking is the workload's (``attention: {mask: causal}``, accelsim/workloads/attention.py): the fused
kernel skips the K / V tiles above the diagonal; unfused attention computes the full product and masks it.

``unfused``: every op is its own kernel (the scores are written and read back through DRAM, or L2 with
``activations: l2_if_fits``), as eager frameworks run it. It is the only form on ``systolic`` parts:
a systolic array runs QK^T and AV as separate array passes and scale, mask and softmax on its vector
unit (SCALE-Sim semantics); asking a systolic part for ``fused`` is an error that says so.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from accelsim.config import schema as configio
from accelsim.hardware.base import Fraction, OmitsDefaults, PosFloat, PosInt

FORMS = ("fused", "unfused")


# FlashAttention-2's split-KV heuristic (num_splits_heuristic, flash_api.cpp) and combine, as the defaults of the
# fields that name them; left out of the resolved config while they hold these values
SPLIT_KV_DEFAULTS: dict[str, Any] = {"split_kv_occupancy": 0.8, "split_kv_tolerance": 0.85,
                                     "split_kv_max_splits": 128, "partial_bytes": 4, "combine_ops_per_element": 2.0}


class AttentionSpec(OmitsDefaults):
    """The attention lowering choice and the fused kernel's tiling (module docstring)."""

    omitted = SPLIT_KV_DEFAULTS

    form: Literal["fused", "unfused"] = Field(
        "unfused", description="fused: one kernel streaming Q, K, V and writing only O (default on tensor_core "
                               "parts); unfused: the workload's separate ops (the only form on systolic parts).")
    q_block_rows: list[PosInt] = Field(
        default_factory=lambda: [128, 64], min_length=1,
        description="Query rows per CTA the fused kernel may use (FlashAttention-2's forward uses 64 or 128); "
                    "fewer rows than a block are padded to the MMA's m.")
    kv_block_rows: list[PosInt] = Field(
        default_factory=lambda: [128, 64, 32], min_length=1,
        description="K / V rows per streamed block the fused kernel may use; the fastest tile that fits "
                    "shared memory is chosen.")
    softmax_overlap: bool = Field(
        False, description="False: each block's softmax (vector unit) follows its QK^T and precedes its PV "
                           "(FlashAttention-2); True: it overlaps the next block's MMAs (FlashAttention-3's "
                           "ping-pong on Hopper).")
    split_kv: bool = Field(
        True, description="Split the KV length over CTAs when one CTA per query block leaves cores idle "
                          "(FlashDecoding): each split writes a partial O (partial_bytes per element) and its row "
                          "sums that a combine step reads back.")
    split_kv_occupancy: Fraction = Field(
        0.8, description="split_kv: no split when the query-block CTAs already fill this share of the CTA slots "
                         "(cores x ctas_per_core); FlashAttention-2's num_splits_heuristic: 0.8.")
    split_kv_tolerance: Fraction = Field(
        0.85, description="split_kv: the fewest splits whose wave efficiency (CTAs / (waves x slots)) is within "
                          "this share of the best candidate's is taken; FlashAttention-2: 0.85.")
    split_kv_max_splits: Annotated[int, Field(gt=0, le=4096)] = Field(
        128, description="split_kv: most splits per query block (also at most one per K / V block and one per "
                         "slot; at most 4096); FlashAttention-2: 128.")
    partial_bytes: Annotated[int, Field(gt=0, le=16)] = Field(
        4, description="split_kv: bytes per element of a split's partial O and row sums, written and read back "
                       "by the combine (4: fp32, as FlashAttention-2; at most 16).")
    combine_ops_per_element: PosFloat = Field(
        2.0, description="split_kv: vector-unit operations per partial element in the combine (rescale and add).")


    @model_validator(mode="after")
    def _split_fields_need_fused(self) -> AttentionSpec:
        if self.form == "fused":
            return self
        for key, default in SPLIT_KV_DEFAULTS.items():
            if getattr(self, key) != default:
                raise configio.FieldError((key,), "applies to the fused kernel's split-KV only; attention.form "
                                          "is unfused here")
        return self


def default_form(data: Any) -> Any:
    """``data`` (a hardware mapping) with ``attention.form`` filled in when absent: ``fused`` on tensor_core
    parts, ``unfused`` elsewhere. Anything malformed is left for validation to report."""
    if not isinstance(data, dict):
        return data
    att = data.get("attention")
    if att is not None and (not isinstance(att, dict) or "form" in att):
        return data
    core = data.get("core")
    comp = core.get("compute") if isinstance(core, dict) else None
    kind = comp.get("kind") if isinstance(comp, dict) else None
    return {**data, "attention": {**(att or {}), "form": "fused" if kind == "tensor_core" else "unfused"}}
