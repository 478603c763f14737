"""Lowering: each workload layer becomes a Kernel with a path (sparse | dense) and the reason."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .hardware import Hardware
from .sparsity import Pattern, best_container, parse_pattern
from .workload import Workload

# Reason codes, in precedence order: when several apply, the first listed wins.
REASON_CODES: dict[str, str] = {
    "no_sparse_support": "the hardware has no sparse datapath; the layer runs dense",
    "pattern_unsupported": "no native pattern of the hardware contains the requested one; the layer runs dense",
    "pattern_promoted": "runs sparse on a coarser native pattern that contains the requested one (e.g. 1:4 as 2:4)",
    "n_padded": "runs sparse; the library pads the dense operand's n up to its alignment (core.sparse."
                "dense_operand_align), computing the padded columns",
    "k_padded": "runs sparse; k is not a multiple of M and is zero-padded up to one",
}


@dataclass(frozen=True)
class Kernel:
    """One layer as the engine sees it: a GEMM view plus the sparse decision."""

    name: str
    op: str
    m: int
    n: int
    k: int
    dtype: str
    dtype_bytes: int
    path: str  # "sparse" | "dense"
    pattern_requested: str | None
    pattern_executed: str | None
    reason: str | None
    keep_n: int = 1  # N of the executed pattern (1:1 when dense)
    group_m: int = 1  # M of the executed pattern
    metadata_bits: int = 0
    padding: dict[str, list[int]] = field(default_factory=dict)
    b_unique: int = 0  # distinct elements of B in memory (conv: the ifmap); 0 = k * n

    @property
    def b_elements(self) -> int:
        """Distinct B elements: the ifmap for a conv (im2col duplicates them), else k * n."""
        return min(self.b_unique, self.k * self.n) if self.b_unique else self.k * self.n

    @property
    def sparse(self) -> bool:
        return self.path == "sparse"

    @property
    def executed_pattern(self) -> Pattern | None:
        return Pattern(self.keep_n, self.group_m) if self.sparse else None

    @property
    def n_exec(self) -> int:
        """Columns of B the kernel computes: n, or n padded to the library's alignment."""
        return self.padding["n"][1] if "n" in self.padding else self.n

    @property
    def macs(self) -> int:
        """Dense-equivalent multiply-accumulates of the layer."""
        return self.m * self.n * self.k

    @property
    def k_padded(self) -> int:
        return -(-self.k // self.group_m) * self.group_m

    @property
    def k_compressed(self) -> int:
        """Reduction length A keeps after compression: ceil(k / M) * N."""
        return -(-self.k // self.group_m) * self.keep_n

    @property
    def macs_executed(self) -> int:
        return self.m * self.n * self.k_compressed

    def as_dense(self) -> Kernel:
        """The same layer run dense: the baseline for speedup_vs_dense."""
        return Kernel(self.name, self.op, self.m, self.n, self.k, self.dtype, self.dtype_bytes,
                      "dense", None, None, None, b_unique=self.b_unique)

    def cache_key(self) -> tuple[Any, ...]:
        """Everything the engine result depends on (names excluded)."""
        return (self.m, self.n, self.k, self.dtype_bytes, self.path, self.keep_n, self.group_m,
                self.metadata_bits, self.b_unique, tuple(self.padding.get("n", ())))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_pattern(requested: Pattern | None, hw: Hardware) -> tuple[Pattern | None, str | None]:
    """Native pattern that runs ``requested`` on ``hw`` (None = dense) and the reason code."""
    if requested is None:
        return None, None
    sparse = hw.core.sparse
    if sparse is None:
        return None, "no_sparse_support"
    natives = list(sparse.native())
    if requested in natives:
        return requested, None
    container = best_container(requested, natives)
    if container is None:
        return None, "pattern_unsupported"
    return container, "pattern_promoted"


def lower_layer(layer: Any, dtype: str, dtype_bytes: int, requested_text: str | None, hw: Hardware) -> Kernel:
    """One layer to a Kernel."""
    m, n, k = layer.gemm_shape()
    b_unique = layer.ifmap_elements() if hasattr(layer, "ifmap_elements") else 0
    requested = parse_pattern(requested_text) if requested_text else None
    executed, reason = resolve_pattern(requested, hw)
    if executed is None:
        return Kernel(layer.name, layer.op, m, n, k, dtype, dtype_bytes, "dense",
                      str(requested) if requested else None, None, reason, b_unique=b_unique)
    bits = hw.core.sparse.metadata_bits(executed)  # type: ignore[union-attr]
    padding: dict[str, list[int]] = {}
    align = hw.core.sparse.dense_operand_align  # type: ignore[union-attr]
    if n % align:
        padding["n"] = [n, -(-n // align) * align]
        reason = reason or "n_padded"
    if k % executed.m:
        padding["k"] = [k, -(-k // executed.m) * executed.m]
        reason = reason or "k_padded"
    return Kernel(layer.name, layer.op, m, n, k, dtype, dtype_bytes, "sparse", str(requested), str(executed),
                  reason, executed.n, executed.m, bits, padding, b_unique)


def lower(model: Workload, hw: Hardware, sparsity: str | None = None) -> list[Kernel]:
    """Lower every layer; ``sparsity`` (a pattern or 'dense') overrides the workload's plan."""
    kernels = []
    for layer in model.layers:
        if sparsity is not None:
            requested = None if sparsity == "dense" else sparsity
        else:
            requested = layer.sparsity if layer.sparsity is not None else model.sparsity
            if requested == "dense":
                requested = None
        kernels.append(lower_layer(layer, model.dtype, model.dtype_bytes, requested, hw))
    return kernels
