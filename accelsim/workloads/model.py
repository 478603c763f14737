"""Workload description: named layers with shapes, dtype and a sparsity plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from accelsim.config import schema as configio
from accelsim.config.templating import expand
from accelsim.dtypes import DTYPE_BYTES, DtypeName
from accelsim.errors import ConfigError
from accelsim.formats import normalize_format
from accelsim.hardware.model import BigNonNegInt, BigPosInt, NonNegFloat, NonNegInt, PosInt, Strict
from accelsim.quality import entry as registry_entry
from accelsim.records import FrozenDict, thawed
from accelsim.workloads.attention import AttentionMask, causal_problem
from accelsim.workloads.moe import MoeRouting, expand_moe
from accelsim.workloads.quality import (
    QualityFigure,
    QualityRef,
    registry_metric,
    resolve_entries,
    resolve_ref,
    typed_figure,
)
from accelsim.workloads.quantize import Quantization, expand_quantization

Dtype = DtypeName  # fp32 ... int8, and the sub-byte fp6, fp4, int4 (accelsim.dtypes)
Pair = Annotated[list[PosInt], Field(min_length=2, max_length=2)]
PadPair = Annotated[list[NonNegInt], Field(min_length=2, max_length=2)]
Stride = Annotated[PosInt | Pair, configio.one_message("an integer > 0 or a [height, width] pair of them")]
Padding = Annotated[NonNegInt | PadPair, configio.one_message("an integer >= 0 or a [height, width] pair of them")]


class _Layer(Strict):
    name: str = Field(min_length=1, description="Unique layer name.")
    sparsity: str | None = Field(None, description="N:M pattern for this layer's weight, or 'dense'.")

    @field_validator("sparsity", mode="before")
    @classmethod
    def _pattern(cls, value: Any) -> Any:
        return None if value is None else normalize_format(value)


class Gemm(_Layer):
    """C[m x n] = A[m x k] . B[k x n]; A is the weight, the operand that may be N:M sparse."""

    op: Literal["gemm"]
    m: PosInt = Field(description="Rows of A and C (weight output features).")
    n: PosInt = Field(description="Columns of B and C (tokens x batch, or output pixels).")
    k: PosInt = Field(description="Reduction length.")
    dtype: Literal["int8", "fp8"] | None = Field(None, description="Written by loading a quantized workload "
                                                 "(quantization): element type of A and B and the MMA rate; None: "
                                                 "the workload dtype.")
    out_dtype: Literal["int32", "fp32"] | None = Field(
        None, description="Written by loading a quantized workload whose dequantize is unfused: C is written in "
                          "the accumulator type; None: in the workload dtype (the activation dtype).")

    def gemm_shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k


class Conv2d(_Layer):
    """2-D convolution, lowered by im2col to m = filters, n = output pixels, k = kh*kw*channels."""

    op: Literal["conv2d"]
    ifmap: Pair = Field(description="Input height, width.")
    kernel: Pair = Field(description="Kernel height, width.")
    channels: PosInt
    filters: PosInt
    stride: Stride = 1
    padding: Padding = 0
    batch: PosInt = 1
    groups: PosInt = Field(1, description="Grouped conv; groups = channels is depthwise.")

    @model_validator(mode="after")
    def _output_positive(self) -> Conv2d:
        if self.channels % self.groups or self.filters % self.groups:
            raise configio.FieldError(("groups",), f"groups {self.groups} must divide channels {self.channels} "
                                                   f"and filters {self.filters}")
        oh, ow = self.output_hw()
        if oh < 1 or ow < 1:
            raise configio.FieldError(("kernel",), f"kernel {self.kernel} does not fit the padded ifmap "
                                                   f"{self.ifmap} (padding {self.padding}): output would be {oh}x{ow}")
        for dim, size in zip("mnk", self.gemm_shape(), strict=True):
            if size > configio.MAX_DIM:
                raise configio.FieldError((), f"its im2col GEMM has {dim} = {size:,}, above the limit of "
                                              f"{configio.MAX_DIM:,} (2^31-1) per dimension")
        return self

    def _pair(self, v: int | list[int]) -> tuple[int, int]:
        return (v, v) if isinstance(v, int) else (v[0], v[1])

    def output_hw(self) -> tuple[int, int]:
        """PyTorch rule: floor((H + 2*padding - kernel) / stride) + 1."""
        sh, sw = self._pair(self.stride)
        ph, pw = self._pair(self.padding)
        oh = (self.ifmap[0] + 2 * ph - self.kernel[0]) // sh + 1
        ow = (self.ifmap[1] + 2 * pw - self.kernel[1]) // sw + 1
        return oh, ow

    def ifmap_elements(self) -> int:
        """Distinct input elements (unpadded): what a conv reads once when im2col is done on chip."""
        return self.ifmap[0] * self.ifmap[1] * self.channels * self.batch // self.groups

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.channels == self.groups

    def gemm_shape(self) -> tuple[int, int, int]:
        """Per-group GEMM view: m = filters/groups, n = output pixels, k = kh*kw*channels/groups."""
        oh, ow = self.output_hw()
        g = self.groups
        return self.filters // g, oh * ow * self.batch, self.kernel[0] * self.kernel[1] * self.channels // g


class Matmul(_Layer):
    """Activation x activation product (attention QK^T, AV): no weight, so no weight sparsity."""

    op: Literal["matmul"]
    m: PosInt
    n: PosInt
    k: PosInt
    batch: PosInt = Field(1, description="Independent products (e.g. batch x heads).")
    kv_cache: bool | None = Field(None, description="True: B is read from the KV cache (decode attention), so the "
                                  "product moves its operands at the cache's bytes per element (the workload's "
                                  "kv_dtype) while computing at the workload dtype's rate (lowering).")

    def gemm_shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k


class Embedding(_Layer):
    """Table lookup: reads tokens x dim elements of a vocab x dim table."""

    op: Literal["embedding"]
    vocab: PosInt
    dim: PosInt
    tokens: PosInt


class _Vector(_Layer):
    # a count, not a dimension: attention scores at long sequences pass 2^31 (32 x 32768^2 = 2^35)
    elements: BigPosInt = Field(description="Elements of the (output) tensor.")


class BatchNorm(_Vector):
    op: Literal["batchnorm"]


class LayerNorm(_Vector):
    op: Literal["layernorm"]


class RmsNorm(_Vector):
    op: Literal["rmsnorm"]


class Softmax(_Vector):
    op: Literal["softmax"]


class Elementwise(_Vector):
    """Element-wise arithmetic over ``inputs`` tensors (add, mul, residual)."""

    op: Literal["elementwise"]
    inputs: PosInt = Field(2, description="Input tensors read per output element.")


class KvWrite(_Vector):
    """KV-cache append: reads ``elements`` new K and V values in the workload dtype and writes them in the
    cache's (``kv_dtype``), quantizing as it goes; costed at the ``elementwise`` ops per element."""

    op: Literal["kv_write"]


class Quantize(_Vector):
    """Per-call (dynamic) quantization of a Linear's input, written by loading (accelsim.workloads.quantize):
    per-token absmax over ``group`` elements, the scale, the cast to ``to_dtype``."""

    op: Literal["quantize"]
    group: PosInt = Field(description="Elements per scale (the Linear's k: one scale per token).")
    to_dtype: Literal["int8", "fp8"]
    scale_bytes: PosInt = 4
    ops_per_element: NonNegFloat = 4.0


class Dequantize(_Vector):
    """An unfused rescale of a quantized Linear's accumulator output into the activation dtype."""

    op: Literal["dequantize"]
    from_dtype: Literal["int32", "fp32"]
    scales: PosInt = Field(description="Scale values read (m per-channel + n per-token).")
    scale_bytes: PosInt = 4
    ops_per_element: NonNegFloat = 2.0


class Activation(_Vector):
    op: Literal["activation"]
    function: Literal["relu", "relu6", "clip", "gelu", "silu", "sigmoid", "tanh", "hardswish"] = "relu"


class Pool(_Layer):
    """Max / average pooling (global when kernel = ifmap)."""

    op: Literal["pool"]
    ifmap: Pair
    channels: PosInt
    kernel: Pair
    stride: Stride = 1
    padding: Padding = 0
    batch: PosInt = 1
    kind: Literal["max", "avg"] = "max"

    def output_hw(self) -> tuple[int, int]:
        sh, sw = (self.stride, self.stride) if isinstance(self.stride, int) else self.stride
        ph, pw = (self.padding, self.padding) if isinstance(self.padding, int) else self.padding
        return ((self.ifmap[0] + 2 * ph - self.kernel[0]) // sh + 1,
                (self.ifmap[1] + 2 * pw - self.kernel[1]) // sw + 1)


class Unsupported(_Layer):
    """An op accelsim has no model for (e.g. from ONNX): listed, and costed as a vector op."""

    op: Literal["unsupported"]
    source_op: str = Field(description="The original operator type, e.g. the ONNX op_type.")
    elements: BigPosInt = Field(1, description="Output elements (costed at one vector op each).")


WEIGHT_OPS = ("gemm", "conv2d")
ARRAY_OPS = ("gemm", "conv2d", "matmul")
VECTOR_OPS = ("embedding", "batchnorm", "layernorm", "rmsnorm", "softmax", "elementwise", "activation", "pool",
              "unsupported", "kv_write", "quantize", "dequantize")

Layer = Annotated[Gemm | Conv2d | Matmul | Embedding | BatchNorm | LayerNorm | RmsNorm | Softmax | Elementwise
                  | Activation | Pool | Unsupported | KvWrite | Quantize | Dequantize, Field(discriminator="op")]


class Quality(Strict):
    """Quality figures, dense and per pattern, with a threshold: registry entries (``entry`` / ``entries``
    ids, or ``model`` + ``format`` (+ ``task``, ``method``) matched in the quality registry; labelled
    published or derived) or numbers typed here (``metric``, ``dense``, ``patterns``; labelled ``kind``:
    illustrative, the default, or user)."""

    entry: str | None = Field(None, min_length=1, description="A quality registry id (`accelsim quality list`).")
    entries: list[str] = Field(default_factory=list, description="Registry ids, one per format, from one source.")
    model: str | None = Field(None, min_length=1, description="Registry model name, matched with format (+ task, "
                              "method) to exactly one entry.")
    task: str | None = Field(None, min_length=1, description="Registry task, e.g. 'SQuAD v1.1'.")
    format: str | None = Field(None, description="Registry format, e.g. '2:4' (with model).")
    method: str | None = Field(None, min_length=1, description="Registry pruning method (with model).")
    metric: str = Field("", description="What is measured, e.g. 'SQuAD v1.1 F1' (typed figures; registry "
                        "entries name their own).")
    higher_is_better: bool = True
    dense: float | None = Field(None, description="The dense model's value (typed, or the registry's).")
    patterns: dict[str, float] = Field(default_factory=dict, description="Value per sparse pattern, e.g. "
                                       "{'2:4': 88.1} (the dense figure is quality.dense: a dense key is refused).")
    kind: Literal["illustrative", "user"] = Field("illustrative", description="Label of typed figures: "
                                                  "illustrative (an assumption) or user (your own measurement).")
    max_drop: float | None = Field(None, ge=0, description="Largest acceptable loss vs dense, in metric units.")
    source: str = Field("", description="Where the figures come from.")
    _figures: dict[str, QualityFigure] = PrivateAttr(default_factory=dict)

    @field_validator("patterns")
    @classmethod
    def _keys(cls, value: dict[str, float]) -> dict[str, float]:
        out: dict[str, float] = {}
        first: dict[str, str] = {}
        for key, v in value.items():
            name = normalize_format(key)
            if name in out:  # two spellings of one pattern: one figure would silently replace the other
                raise configio.FieldError((key,), f"{key!r} is the pattern {first[name]!r} already "
                                          "names: give each pattern once")
            out[name], first[name] = v, key
        return out

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        """Registry references become their figures (metric, dense, patterns) and ``entries`` ids."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        pats = data.get("patterns")
        for key in pats if isinstance(pats, dict) else ():  # a dense-equivalent key would stand in for the dense figure
            try:
                dense_key = normalize_format(key) == "dense"
            except ValueError:
                continue  # the field says what is wrong with it
            if dense_key:
                raise configio.FieldError(("patterns", key), f"{key!r} is the dense model, not a pattern: give its "
                                          "figure as quality.dense")
        ids = ([data.pop("entry")] if data.get("entry") is not None else []) + list(data.get("entries") or [])
        data.pop("entry", None)
        if not all(isinstance(i, str) and i for i in ids):
            raise ValueError("entry / entries are registry ids (strings)")
        ref = {k: data[k] for k in ("model", "task", "format", "method") if data.get(k) is not None}
        for k in ("format", "method"):
            data.pop(k, None)
        if ids and ("format" in ref or "method" in ref):
            raise ValueError("give registry ids (entry / entries) or model + format, not both")
        if ref and not ids:
            if "model" not in ref:
                raise ValueError("task / format / method narrow a registry match: give model too")
            if "format" not in ref:  # the model's figures are looked up per pattern where they are used
                return {**data, **ref, "metric": data.get("metric") or registry_metric(ref["model"], ref.get("task"))}
            r = QualityRef(**ref)
            ids = [str(resolve_ref(r, str(r.format)).entry)]
            data.update({"model": ref["model"], "task": ref.get("task")})
        if not ids:
            return data
        figs = resolve_entries(ids)
        typed = {"dense": data.get("dense"), **dict(data.get("patterns") or {})}
        for fmt, val in typed.items():
            fmt = fmt if fmt == "dense" else normalize_format(fmt)
            if val is not None and (fmt not in figs or figs[fmt].value != val):
                raise ValueError(f"the typed {fmt} figure {val} is not the registry's "
                                 f"({figs[fmt].value if fmt in figs else 'none'}): drop it or the entry")
        first = figs["dense"]
        if data.get("higher_is_better", first.higher_is_better) != first.higher_is_better:
            raise ValueError(f"higher_is_better {data['higher_is_better']} contradicts the registry's {first.metric}")
        if data.get("metric", first.metric) != first.metric:
            raise ValueError(f"metric {data['metric']!r} is not the registry entries' {first.metric!r}")
        sources = "; ".join(f"{f.format}: {f.entry} ({f.source})" for f in figs.values() if f.format != "dense")
        named = registry_entry(ids[0])
        return {**data, "entries": ids, "model": data.get("model") or named.model,
                "task": data.get("task") or named.task, "metric": first.metric,
                "higher_is_better": first.higher_is_better, "dense": first.value,
                "patterns": {k: f.value for k, f in figs.items() if k != "dense"},
                "source": data.get("source") or sources}

    @model_validator(mode="after")
    def _figures_by_pattern(self) -> Quality:
        if self.entries:
            self._figures = resolve_entries(list(self.entries))
            return self
        if self.model is not None and self.dense is None and not self.patterns:
            return self  # registry figures per pattern at use (the deployment report's guardrail)
        if not self.metric or self.dense is None:
            raise ValueError("give registry entries (entry, entries, or model + format) or typed figures "
                             "(metric and dense, labelled by kind)")
        figs = {"dense": typed_figure(self.dense, "dense", self.kind, self.metric, self.higher_is_better,
                                      self.source or None)}
        for pat, val in self.patterns.items():
            figs[pat] = typed_figure(val, pat, self.kind, self.metric, self.higher_is_better, self.source or None)
        self._figures = figs
        return self

    def figure(self, pattern: str) -> QualityFigure | None:
        """The figure for ``pattern`` (``dense`` for the dense one) with its evidence label; None if absent."""
        return self._figures.get(pattern)

    def figures(self) -> dict[str, QualityFigure]:
        """Every figure by pattern, ``dense`` first."""
        return dict(self._figures)

    def delta(self, pattern: str) -> float | None:
        """Change vs dense (positive = better), or None when no figure exists for the pattern."""
        if pattern not in self.patterns or self.dense is None:
            return None
        d = self.patterns[pattern] - self.dense
        return d if self.higher_is_better else -d


class QuantizationEcho(Quantization):
    """The ``quantization`` section as loading resolved it: activations and the count of quantized Linears."""

    quantized_layers: NonNegInt = Field(0, description="Written by loading: gemm layers quantized.")


class Workload(Strict):
    """A model: an ordered list of layers."""

    name: str = Field(min_length=1)
    description: str | None = Field(None, description="Free text: what the model is, its source.")
    dtype: Dtype = Field("fp16", description="Element type of A, B and C.")
    params: Mapping[str, int | float] = Field(default_factory=dict, description="Resolved parameters (defaults "
                                           "overridden by --set); expressions in layer fields use them.")
    kv_cache_elements: BigNonNegInt = Field(0, description="Elements of the KV cache (LLM decode), for the footprint.")
    kv_dtype: Dtype | None = Field(None, description="Element type of the KV cache (None: the workload dtype): "
                                   "its footprint, kv_write ops and kv_cache matmuls move it at this type's bytes. "
                                   "--set kv_dtype=fp8 replaces it.")
    attention: AttentionMask | None = Field(None, description="How attention masks its scores: mask causal (decoder "
                                            "LLMs; fused attention skips the K / V tiles above the diagonal, unfused "
                                            "computes the full product and masks it) or none (absent: bidirectional); "
                                            "q_heads_stacked: query heads in a QK^T matmul's m rows (GQA).")
    moe: Sequence[MoeRouting] | None = Field(None, description="Written by loading: the routing of every moe op "
                                         "(accelsim.workloads.moe), echoed into results.")
    quality: Quality | None = Field(None, description="Quality figures (dense and per pattern) and a threshold.")
    quantization: QuantizationEcho | None = Field(None, description="Quantized Linears (weights int8 / fp8, "
                                                  "activations in dtype, dynamic per-call quantization): applied by "
                                                  "loading (accelsim.workloads.quantize), echoed resolved.")
    sparsity: str | None = Field(None, description="Pattern applied to every weight layer without its own.")
    layers: Sequence[Layer] = Field(min_length=1)  # a tuple: a loaded workload never changes
    _dtype_declared: str | None = PrivateAttr(None)  # the file's dtype when with_dtype replaced it

    @field_validator("sparsity", mode="before")
    @classmethod
    def _pattern(cls, value: Any) -> Any:
        return None if value is None else normalize_format(value)

    @field_validator("layers", "moe", mode="after")
    @classmethod
    def _as_tuple(cls, value: Any) -> Any:  # validated as a list (its errors, its schema), held as a tuple
        return tuple(value) if isinstance(value, list) else value

    @field_validator("params", mode="after")
    @classmethod
    def _read_only(cls, value: Mapping[str, int | float]) -> Mapping[str, int | float]:
        return FrozenDict(value)

    @model_validator(mode="after")
    def _unique_names(self) -> Workload:
        seen: dict[str, int] = {}
        for i, layer in enumerate(self.layers):
            if layer.name in seen:
                raise configio.FieldError(("layers", i, "name"), f"layer name {layer.name!r} is already used by "
                                                                 f"layers[{seen[layer.name]}]; names must be unique")
            seen[layer.name] = i
        return self

    @model_validator(mode="after")
    def _causal_fits(self) -> Workload:
        problem = causal_problem(self.layers, self.attention)
        if problem is not None:
            raise configio.FieldError(*problem)
        return self

    @property
    def dtype_bytes(self) -> float:
        """Bytes per element: an int for whole-byte dtypes, 0.75 / 0.5 for fp6 / fp4 and int4 (accelsim.dtypes)."""
        return DTYPE_BYTES[self.dtype]

    def layer_dtype(self, layer: Any) -> tuple[str, float]:
        """The element type a layer's operands run in and its bytes: a quantized Linear's own (``dtype``), else
        the workload's."""
        own = getattr(layer, "dtype", None) if layer.op == "gemm" else None
        return (own, DTYPE_BYTES[own]) if own is not None else (self.dtype, self.dtype_bytes)

    @property
    def kv_dtype_bytes(self) -> float:
        """Bytes per element of the KV cache: ``kv_dtype``'s, else the workload dtype's."""
        return DTYPE_BYTES[self.kv_dtype or self.dtype]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def planned_patterns(self) -> bool:
        """Whether the workload's own plan asks any layer for an N:M pattern."""
        return any((lay.sparsity if lay.sparsity is not None else self.sparsity) not in (None, "dense")
                   for lay in self.layers)

    def summary(self) -> dict[str, Any]:
        """The workload as echoed into results: everything but the expanded layer list, plus its hash.

        ``dtype_declared``: the file's dtype, present only when ``--dtype`` (:func:`with_dtype`) replaced it.
        """
        out = self.model_dump(mode="json", exclude_none=True, exclude={"layers"})
        if self._dtype_declared is not None:
            out["dtype_declared"] = self._dtype_declared
        out["layers"] = len(self.layers)
        out["hash"] = self.config_hash()
        return out

    def config_hash(self) -> str:
        return configio.canonical_hash(self.to_dict())


def workload_from_dict(data: dict[str, Any], source: str = "<workload>",
                       params: dict[str, Any] | None = None) -> Workload:
    """Expand templates (params, expressions, repeat blocks) and moe ops, and validate into a Workload. ``data``
    may hold a result's read-only echoes (``RunResult.workload`` parts): they are read as the plain data they were."""
    expanded = expand_quantization(expand_moe(expand(thawed(data), params, source), source), source)
    return configio.validate(Workload, expanded, source)


def with_dtype(model: Workload, dtype: str) -> Workload:
    """``model`` with every layer in ``dtype`` (``run --dtype``); the file's dtype is kept for the result.

    A quantized workload's dtype is its activation dtype: its quantized Linears keep their weights' type."""
    if dtype not in DTYPE_BYTES:
        raise ConfigError("--dtype", None, f"expected one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    if dtype == model.dtype:
        return model
    update: dict[str, Any] = {"dtype": dtype}
    if model.quantization is not None:  # the activation dtype: the quantized Linears keep their weights' type
        if dtype not in ("bf16", "fp16", "fp32"):
            raise ConfigError("--dtype", None, f"{dtype} cannot be the activation dtype of a quantized workload "
                              "(quantization): expected bf16, fp16 or fp32")
        update["quantization"] = model.quantization.model_copy(update={"activations": dtype})
    out = model.model_copy(update=update)
    out._dtype_declared = model._dtype_declared or model.dtype
    return out


def with_quantization(model: Workload, weights: str) -> Workload:
    """``model`` with every gemm layer dynamically quantized to ``weights`` (``run --quantize``): the section
    ``quantization: {weights: ...}`` with its defaults, applied as loading applies it (accelsim.workloads.quantize)."""
    if model.quantization is not None:
        raise ConfigError("--quantize", None, f"workload '{model.name}' already declares quantization "
                          f"(weights {model.quantization.weights}): drop one")
    if model._dtype_declared is not None:  # pragma: no cover - the CLI quantizes before --dtype
        raise ConfigError("--quantize", None, "apply --quantize before --dtype")
    return workload_from_dict({**model.to_dict(), "quantization": {"weights": weights}}, "--quantize")


def load_workload(path: str | Path, params: dict[str, Any] | None = None) -> Workload:
    """Load a workload YAML; ``params`` override its parameter defaults (``--set``)."""
    data, _ = configio.read_yaml(path)
    if "core" in data and "layers" not in data:
        raise ConfigError(str(path), None, "this is a hardware config (it has 'core'), expected a workload file")
    return workload_from_dict(data, str(path), params)
