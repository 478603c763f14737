"""Fallback and padding reason codes, in precedence order, with what each means (README: Reason codes)."""

from __future__ import annotations

# Reason codes, in precedence order: when several apply, the first listed wins.
REASON_CODES: dict[str, str] = {
    "kept_dense": "the workload's sparsity plan keeps this layer dense (sparsity: dense under a model-wide pattern)",
    "activation_operands": "both operands are activations (attention QK^T / AV): weight sparsity cannot apply",
    "op_no_sparse_kernel": "the op type has no sparse kernel (grouped / depthwise convolution)",
    "no_sparse_support": "the hardware has no sparse datapath",
    "format_unsupported": "the hardware declares no way to run this format family (unstructured without "
                          "core.sparse.formats.unstructured, V:N:M without core.sparse.vnm, block sparsity without "
                          "core.sparse.block)",
    "pattern_unsupported": "no native pattern of the hardware contains the requested one (among those that run "
                           "the layer's element type: core.sparse.patterns.*.dtypes)",
    "dtype_unsupported": "the sparse datapath does not support this element type (core.sparse.dtypes)",
    "block_shape_misaligned": "the format's block shape does not fit the hardware's tiles: V:N:M's V is not a "
                              "multiple of a V:N:M CTA M tile (core.sparse.vnm.cta_tiles) or of the array width; a "
                              "block side is not a multiple of core.sparse.block.block_multiple (blocks are not "
                              "padded)",
    "shape_below_minimum": "the weight's rows or columns are not a multiple of the library's minimum "
                           "(core.sparse.weight_shape_multiple)",
    "slower_than_dense": "policy 'fastest': the sparse kernel was simulated slower than dense, so dense is used",
    "pattern_promoted": "runs sparse on a coarser native pattern that contains the requested one (e.g. 1:4 as 2:4)",
    "n_padded": "runs sparse; the library pads the dense operand's n up to its alignment "
                "(core.sparse.dense_operand_align), computing the padded columns",
    "k_padded": "runs sparse; k is not a multiple of M and is zero-padded up to one",
    "m_padded": "runs sparse; A's rows are not a multiple of the format's row block (V:N:M's V, block rows) and are "
                "zero-padded up to one",
}
FALLBACK_REASONS = ("activation_operands", "op_no_sparse_kernel", "no_sparse_support", "format_unsupported",
                    "pattern_unsupported", "dtype_unsupported", "block_shape_misaligned", "shape_below_minimum",
                    "slower_than_dense")

__all__ = ["FALLBACK_REASONS", "REASON_CODES"]
