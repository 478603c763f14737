"""Dynamic quantization of a workload's Linears: int8 / fp8 weights, activations kept in the workload dtype.

A workload's ``quantization`` section (:class:`Quantization`) says which ``gemm`` layers (Linears) run with
quantized weights. Loading (:func:`expand_quantization`, like ``expand_moe``) rewrites the layer list so every
consumer sees plain layers:

- before each quantized Linear, a ``quantize`` layer ``<name>.quantize``: the per-call quantization of its input
  activation (per-token absmax over k, the scale, the cast): reads k x n activation elements in the workload
  dtype, writes them in the weights' dtype plus one fp32 scale per token (column of B);
- the Linear itself gets ``dtype`` (A and B in the weights' dtype, the MMA at that dtype's rate);
  ``dequantize: fused`` (default) writes C in the activation dtype (the rescale runs in the GEMM epilogue);
  ``unfused`` sets ``out_dtype`` (int32; fp32 for fp8): C is written in it, and a ``<name>.dequantize`` layer
  reads it and writes the activation dtype;
- every other op (norms, softmax, GELU, adds, attention, convolutions) stays in the workload dtype, which is the
  activation dtype.

Default ``dequantize: fused``: torch.compile fuses the int32 rescale into the int8 matmul when it generates the
matmul itself (PyTorch tutorial "(prototype) GPU Quantization with TorchAO", the ``force_fuse_int_mm_with_mul``
step; torchao ``recommended_inductor_config_setter``), and cuBLASLt / cuSPARSELt int8 GEMMs take alpha scaling with
a bf16 / fp16 output in the epilogue. ``unfused`` is torchao's fallback (torchao/kernel/intmm.py
``int_scaled_matmul`` without ``TORCHAO_AUTOTUNER_ENABLE``: ``torch._int_mm`` to int32, then ``c * scales``),
which stays two kernels whenever max-autotune keeps the cuBLAS int32 GEMM. The scale vectors the fused epilogue
reads (m + n fp32) are not counted.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import Field

from accelsim.config import schema as configio
from accelsim.dtypes import DTYPE_BYTES, stored_bytes
from accelsim.errors import ConfigError
from accelsim.hardware.model import NonNegFloat, PosInt, Strict

# bytes per element of a GEMM's output type: the element types, plus int32 (an int8 GEMM's accumulator)
OUT_BYTES: dict[str, float] = {**DTYPE_BYTES, "int32": 4}
ACCUMULATOR = {"int8": "int32", "fp8": "fp32"}  # what an unfused quantized GEMM writes


class Quantization(Strict):
    """Weights quantized, activations in the workload dtype, quantized per call (dynamic)."""

    weights: Literal["int8", "fp8"] = Field(description="Element type of the quantized Linears' weights and of "
                                            "their quantized inputs: the GEMM runs at this type's MMA rate.")
    activations: Literal["bf16", "fp16", "fp32"] | None = Field(
        None, description="Element type of activations between layers; the workload dtype (given here it must be "
                          "the same; --dtype replaces both).")
    mode: Literal["dynamic"] = Field("dynamic", description="dynamic: each Linear quantizes its input per call "
                                     "(a quantize layer before it); static scales are not modelled.")
    granularity: Literal["per_token"] = Field("per_token", description="Activation scales: one per token (column "
                                              "of B), an absmax over k (torchao int8 dynamic quantization).")
    dequantize: Literal["fused", "unfused"] = Field(
        "fused", description="fused (default: torch.compile / cuBLASLt int8 epilogues, see the module doc): the "
        "GEMM writes C in the activation dtype; unfused: it writes its accumulator (int32 / fp32) and a "
        "dequantize layer rescales it.")
    layers: list[str] = Field(default_factory=lambda: ["*"], min_length=1, description="Glob patterns (fnmatch, "
                              "case-sensitive) on gemm layer names: the Linears quantized; default all gemm layers. "
                              "conv2d and matmul layers are never quantized.")
    scale_bytes: PosInt = Field(4, description="Bytes per activation scale written by a quantize layer (fp32).")
    quantize_ops_per_element: NonNegFloat = Field(
        4.0, description="Vector ops per element of a quantize layer: |x| and max for the absmax, the scale "
        "multiply, the round-and-cast (estimate: one op each).")
    dequantize_ops_per_element: NonNegFloat = Field(
        2.0, description="Vector ops per element of an unfused dequantize layer: the token and channel scale "
                         "multiplies (estimate; the cast rides along).")


def quantized_names(layers: list[Any], q: Quantization) -> list[str]:
    """Names of the gemm layers ``q.layers`` selects, in order."""
    return [x["name"] for x in layers if isinstance(x, dict) and x.get("op") == "gemm"
            and isinstance(x.get("name"), str) and any(fnmatchcase(x["name"], p) for p in q.layers)]


def expand_quantization(data: dict[str, Any], src: str) -> dict[str, Any]:
    """``data`` (a templated workload) with each selected Linear quantized: a quantize layer before it, its
    ``dtype`` / ``out_dtype`` set, an unfused dequantize layer after it; ``quantization`` resolved (activations,
    the layers quantized). Unchanged without a ``quantization`` section or when already expanded."""
    raw = data.get("quantization")
    if raw is None:
        return data
    echoed: Any = None  # the count a result's workload echoes (the loader writes it): checked, never trusted
    if isinstance(raw, dict) and "quantized_layers" in raw:
        echoed = raw["quantized_layers"]
        raw = {k: v for k, v in raw.items() if k != "quantized_layers"}
    q = configio.validate(Quantization, raw, f"{src}: quantization")
    dtype = data.get("dtype", "fp16")
    if q.activations is not None and q.activations != dtype:
        raise ConfigError(src, "quantization.activations", f"{q.activations} is not the workload dtype {dtype}: "
                          "activations stay in the workload dtype (drop the key or change dtype)")
    if dtype not in ("bf16", "fp16", "fp32"):
        raise ConfigError(src, "quantization", f"the workload dtype {dtype} is the activation dtype of a quantized "
                          "workload: expected bf16, fp16 or fp32")
    layers = data.get("layers")
    if not isinstance(layers, list):
        return data
    names = quantized_names(layers, q)
    if not names:
        raise ConfigError(src, "quantization.layers", f"{q.layers} select no gemm layer")
    if echoed is not None:
        _check_echoed_count(echoed, len(names), src)
    resolved = {**q.model_dump(mode="json"), "activations": dtype, "quantized_layers": len(names)}
    if any(isinstance(x, dict) and x.get("op") == "quantize" for x in layers):  # loaded from an expanded workload
        return {**data, "quantization": resolved}
    chosen = set(names)
    acc = ACCUMULATOR[q.weights]
    out: list[Any] = []
    for item in layers:
        if not (isinstance(item, dict) and item.get("name") in chosen):
            out.append(item)
            continue
        name, m, n, k = item["name"], item.get("m"), item.get("n"), item.get("k")
        if not (isinstance(m, int) and isinstance(n, int) and isinstance(k, int)):  # its validation says why
            out.append(item)
            continue
        out.append({"name": f"{name}.quantize", "op": "quantize", "elements": k * n, "group": k,
                    "to_dtype": q.weights, "scale_bytes": q.scale_bytes,
                    "ops_per_element": q.quantize_ops_per_element})
        if q.dequantize == "fused":  # C in the workload (activation) dtype
            out.append({**item, "dtype": q.weights})
        else:
            out.append({**item, "dtype": q.weights, "out_dtype": acc})
            out.append({"name": f"{name}.dequantize", "op": "dequantize", "elements": m * n, "from_dtype": acc,
                        "scales": m + n, "scale_bytes": q.scale_bytes, "ops_per_element": q.dequantize_ops_per_element})
    return {**data, "layers": out, "quantization": resolved}


def _check_echoed_count(echoed: Any, count: int, src: str) -> None:
    """Refuse a ``quantized_layers`` that is not the ``count`` of Linears the section selects: loading writes it
    (a result's workload echoes it, and reloading that must work), so a hand-written one that disagrees would
    otherwise be silently replaced."""
    if isinstance(echoed, bool) or not isinstance(echoed, int):
        raise ConfigError(src, "quantization.quantized_layers", f"expected a whole number, got {echoed!r} (the "
                          "loader writes this count of quantized gemm layers; drop the key)")
    if echoed != count:
        raise ConfigError(src, "quantization.quantized_layers", f"{echoed} disagrees with the {count} gemm layers "
                          "`quantization.layers` selects (the loader writes this count; drop the key)")


def quant_kernel_bytes(layer: Any, act_bytes: float) -> tuple[int, int]:
    """(read, written) bytes of a quantize / dequantize layer, activations at ``act_bytes`` per element.

    quantize: reads the activation once (one pass per token: the absmax and the cast share it) and writes it in
    ``to_dtype`` plus one scale per token (elements / group). dequantize: reads the accumulator and the scales
    (m + n), writes the activation.
    """
    if layer.op == "quantize":
        scales = layer.elements // layer.group * layer.scale_bytes
        written = stored_bytes(layer.elements, DTYPE_BYTES[layer.to_dtype]) + scales
        return stored_bytes(layer.elements, act_bytes), written
    return (stored_bytes(layer.elements, OUT_BYTES[layer.from_dtype]) + layer.scales * layer.scale_bytes,
            stored_bytes(layer.elements, act_bytes))
