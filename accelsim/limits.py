"""Size limits of the engine: every count (MACs, cycles, bytes, elements) fits a signed 64-bit integer."""

from __future__ import annotations

from typing import Any

from accelsim.errors import AccelsimError

MAC_LIMIT = 1 << 62  # MACs (or vector elements, ops, bytes) of one kernel: leaves room for cycles and bytes
INT64_MAX = (1 << 63) - 1
_WHY = "accelsim counts MACs, cycles and bytes in 64-bit integers"
# Largest ONNX file read by import-onnx: protobuf caps one message at 2 GiB, so a bigger model keeps its
# weights as external data (never read); the file itself then holds little more than the graph.
MAX_ONNX_BYTES = 2**31


class SizeLimitError(AccelsimError):
    """A kernel or model whose counts would not fit accelsim's 64-bit totals."""


def kernel_where(kernel: Any) -> str:
    """How a message names a kernel: its layer name and GEMM shape (or element count)."""
    if kernel.path == "vector":
        return f"'{kernel.name}' ({kernel.op}, {kernel.elements:,} elements)"
    shape = f"m={kernel.m}, n={kernel.n}, k={kernel.k}" + (f", batch={kernel.batch}" if kernel.batch > 1 else "")
    return f"'{kernel.name}' ({kernel.op} {shape})"


def check_kernel(kernel: Any, workload: str | None = None, index: int = 0) -> None:
    """Refuse a kernel with more than 2^62 MACs (or vector elements, ops or bytes).

    The message names ``layers[index]`` of ``workload`` when given, else the layer.
    """
    if kernel.path == "vector":
        counts = {"elements": kernel.elements, "vector ops": kernel.vector_ops,
                  "bytes read": kernel.read_bytes, "bytes written": kernel.write_bytes}
        if max(counts.values()) <= MAC_LIMIT:
            return
    elif kernel.m * kernel.n * kernel.k * kernel.batch <= MAC_LIMIT:
        return
    else:
        counts = {"MACs": kernel.macs}
    what, value = max(counts.items(), key=lambda kv: kv[1])
    where = f"workload '{workload}': layers[{index}] " if workload is not None else "layer "
    raise SizeLimitError(f"{where}{kernel_where(kernel)}: {int(value):,} {what} exceed the limit of 2^62 per layer "
                         f"({_WHY})")


def check_total(where: str, what: str, value: int) -> None:
    """Refuse a cycle or byte count past 2^63 - 1."""
    if value > INT64_MAX:
        fix = "a smaller shape or faster hardware (clock, per-cycle rates, bandwidths)" if "cycles" in what \
            else "a smaller shape"
        raise SizeLimitError(f"{where}: {what} = {value:,} exceeds 2^63-1 ({_WHY}); use {fix}")
