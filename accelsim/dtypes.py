"""Element types: the dtypes accelsim runs, their size in bits, and how a tensor's bytes are counted.

Every size in accelsim is derived from :data:`DTYPE_BITS`. Whole-byte types (fp32 ... int8) have an
integer :func:`element_bytes` (4, 2, 1), so their byte counts are integer arithmetic exactly as
before; sub-byte types have a fractional one (fp6 0.75, fp4 and int4 0.5).

Rounding rule: a stored tensor (a weight as deployed, an activation, the KV cache, a vector
kernel's input or output) takes whole bytes, ``ceil(elements x bits / 8)`` (:func:`stored_bytes`;
sub-byte values are packed densely, two fp4 per byte, four fp6 in three bytes). Engine byte totals
per kernel and tensor class are summed from tile traffic and rounded up once
(``engine._totals``).

Sub-byte encodings (the functional check emulates them exactly): ``int4`` two's complement -8..7;
``fp4`` e2m1 (OCP MX: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no inf/NaN); ``fp6`` e2m3 (OCP MX:
exponent bias 1, magnitudes 0 .. 7.5 in steps of 0.125 below 1; no inf/NaN). fp6 e3m2 runs at the
same rate and size: accelsim's timing does not tell the two apart.
"""

from __future__ import annotations

from typing import Literal

DtypeName = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp6", "fp4", "int4"]
DTYPE_BITS: dict[str, int] = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8,
                              "fp6": 6, "fp4": 4, "int4": 4}
SUB_BYTE = tuple(d for d, bits in DTYPE_BITS.items() if bits % 8)  # fp6, fp4, int4


def element_bytes(dtype: str) -> float:
    """Bytes per element: an int for whole-byte types (exact integer arithmetic), else bits / 8."""
    bits = DTYPE_BITS[dtype]
    return bits // 8 if bits % 8 == 0 else bits / 8


DTYPE_BYTES: dict[str, float] = {d: element_bytes(d) for d in DTYPE_BITS}


def stored_bytes(elements: int | float, elem_bytes: float) -> int:
    """Whole bytes of a stored tensor of ``elements`` values at ``elem_bytes`` each: rounded up.

    Whole-byte types multiply exactly (``int(elements * elem_bytes)``, as accelsim always has).
    """
    if isinstance(elem_bytes, int):
        return int(elements * elem_bytes)
    bits = round(elem_bytes * 8)
    return -(-int(elements) * bits // 8)
