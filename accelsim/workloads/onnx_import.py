"""Import an ONNX model as an accelsim workload (shapes only: weight data is never loaded).

``import_onnx(path, params)`` reads the graph with ``onnx.load(path, load_external_data=False)``,
fixes symbolic input dims (the leading one is the batch: ``params["batch"]``, default 1; any other
by a parameter of the same name), runs ONNX shape inference and maps every node to a workload
layer in graph order:

* Conv / ConvInteger / QLinearConv -> ``conv2d`` (groups, strides, pads, auto_pad, dilation as the
  effective kernel; 1-D conv as a 1-pixel-high conv2d); Gemm / MatMul with a constant operand ->
  ``gemm`` (the constant is the weight A: m = its output features, k = its input features, n = all
  rows of the activation); MatMul of two activations -> ``matmul`` (batch = leading dims);
* Gather on a constant 2-D table -> ``embedding``; norms, softmax, activations, pools, element-wise
  arithmetic and Concat -> the matching vector layer;
* layout ops (Reshape, Transpose, Flatten, ...) and sub-graphs computed only from constants and
  shapes are dropped at no cost and listed in the notes;
* anything else becomes an ``unsupported`` layer (source_op, output elements), never dropped.

Conv and Gemm biases are not costed (a fused epilogue). ``cmd_import_onnx`` is the CLI body of
``accelsim import-onnx``: it writes the workload YAML and returns the lines to print.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError, ConfigError

Shape = tuple[int, ...]

MAX_DIM = 2**31 - 1  # accelsim's limit per dimension (workload sizes, as for YAML configs)

# Element types -> workload dtype; the first float-typed graph input (then initializer) decides.
_FLOAT_DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8", 11: "fp32"}
_INT_DTYPES = {3: "int8", 2: "int8"}  # INT8, UINT8

_LAYOUT_OPS = {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Constant", "Shape",
               "Size"}
_SAME_SHAPE_OPS = {"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "Tanh", "Gelu", "Erf", "HardSwish",
                   "Swish", "Softmax", "LogSoftmax", "LayerNormalization", "RMSNormalization",
                   "SimplifiedLayerNormalization", "BatchNormalization", "LRN", "Identity", "Dropout",
                   "FastGelu", "BiasGelu", "QuickGelu"}
_ACTIVATIONS = {"Relu": "relu", "LeakyRelu": "relu", "PRelu": "relu", "Sigmoid": "sigmoid", "HardSigmoid": "sigmoid",
                "Tanh": "tanh", "Gelu": "gelu", "Erf": "gelu", "HardSwish": "hardswish", "Swish": "silu",
                "FastGelu": "gelu", "BiasGelu": "gelu", "QuickGelu": "gelu"}
_ACTIVATION_NOTES = {"LeakyRelu": "LeakyRelu costed as activation relu",
                     "PRelu": "PRelu costed as activation relu",
                     "HardSigmoid": "HardSigmoid costed as activation sigmoid",
                     "Erf": "Erf (the erf-based GELU pattern) costed as activation gelu; the Mul/Add/Div around it "
                            "stay element-wise layers"}
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Sum"}
_VECTOR = {"BatchNormalization": "batchnorm", "LayerNormalization": "layernorm", "RMSNormalization": "rmsnorm",
           "SimplifiedLayerNormalization": "rmsnorm", "Softmax": "softmax", "LogSoftmax": "softmax"}
# (activation input, weight input) positions of the conv / matmul families.
_CONV_OPS = {"Conv": (0, 1), "ConvInteger": (0, 1), "QLinearConv": (0, 3)}
_MATMUL_OPS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
# onnxruntime contrib ops (domain com.microsoft) with a known mapping; other custom-domain ops are unsupported.
_MS_OPS = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SimplifiedLayerNormalization"}


class OnnxImportError(ConfigError):
    """The ONNX file cannot be imported (unreadable, not ONNX, or a shape the importer cannot resolve)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(source, None, problem)


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise AccelsimError("import-onnx needs the 'onnx' package: pip install 'onnx>=1.15'") from None
    return onnx


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _pair(a: int, b: int) -> int | list[int]:
    return a if a == b else [a, b]


def _one_line(text: Any) -> str:
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else type(text).__name__


def _sanitize(name: str) -> str:
    s = name.strip().strip("/").replace("/", ".")
    s = re.sub(r"[^A-Za-z0-9_.:\-]", "_", s)
    return re.sub(r"\.{2,}", ".", s).strip(".")


def _check_params(params: dict[str, Any] | None, src: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in (params or {}).items():
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and float(value).is_integer()
        if not ok or value <= 0:
            raise ConfigError(src, str(key), f"--set value must be a positive integer (a dimension size), "
                                             f"got {value!r}")
        if value > MAX_DIM:
            raise ConfigError(src, str(key), f"--set value {int(value):,} is above accelsim's limit of 2^31-1 "
                                             "per dimension")
        out[str(key)] = int(value)
    return out


def _load(onnx: Any, path: str | Path, src: str) -> Any:
    p = Path(path)
    if not p.exists():
        raise OnnxImportError(src, "file not found")
    if p.is_dir():
        raise OnnxImportError(src, "is a directory, expected an .onnx file")
    try:
        model = onnx.load(str(p), load_external_data=False)
    except OSError as exc:
        raise OnnxImportError(src, f"cannot read: {exc.strerror or _one_line(exc)}") from None
    except Exception as exc:  # protobuf DecodeError and friends
        raise OnnxImportError(src, f"not an ONNX model (cannot parse it as an ONNX protobuf: {_one_line(exc)})") \
            from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError(src, "not an ONNX model (no graph nodes; empty or not an ONNX file)")
    return model


def _dims(value_info: Any) -> Any:
    """The repeated dim field of a tensor value_info, or None when it has no shape."""
    t = value_info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return t.tensor_type.shape.dim


def _resolve_symbolic(model: Any, params: dict[str, int], src: str, notes: list[str]) -> dict[str, int]:
    """Give every symbolic input dim a size, in place; return the sizes used by parameter name."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in init_names]
    batch = params.get("batch", 1)
    mapping: dict[str, int] = {}
    used: set[str] = set()
    batch_dims: list[str] = []
    for vi in inputs:  # pass 1: the leading dim is the batch
        dims = _dims(vi)
        if not dims or dims[0].HasField("dim_value"):
            continue
        label = dims[0].dim_param
        if label and label in params:
            value = params[label]
            used.add(label)
        else:
            value = batch
            used.add("batch")
        if label not in params or label == "batch":  # sized by the batch (given or default)
            batch_dims.append(f"{label or '?'!r} of input {vi.name!r}")
        if label:
            mapping[label] = value
        dims[0].dim_value = value
    for vi in inputs:  # pass 2: other dims by name
        dims = _dims(vi)
        for i, d in enumerate(dims or ()):
            if d.HasField("dim_value"):
                continue
            label = d.dim_param
            if label in mapping:
                d.dim_value = mapping[label]
            elif label and label in params:
                mapping[label] = params[label]
                used.add(label)
                d.dim_value = params[label]
            elif label:
                raise OnnxImportError(src, f"input {vi.name!r} dim {i} is symbolic ({label!r}); give its size "
                                           f"with --set {label}=N")
            else:
                raise OnnxImportError(src, f"input {vi.name!r} dim {i} has no size and no name; the importer "
                                           "cannot resolve it (fix the model's input shape)")
    for vi in inputs:  # every input size within accelsim's limits (fixed ones too)
        for i, d in enumerate(_dims(vi) or ()):
            if d.HasField("dim_value") and not 1 <= d.dim_value <= MAX_DIM:
                raise OnnxImportError(src, f"input {vi.name!r} dim {i} is {d.dim_value:,}; every dimension must be "
                                           "between 1 and 2^31-1")
    for vi in [*graph.output, *graph.value_info]:  # keep declared shapes consistent with the inputs
        for d in _dims(vi) or ():
            if not d.HasField("dim_value") and d.dim_param in mapping:
                d.dim_value = mapping[d.dim_param]
    if batch_dims:
        how = f"--set batch={batch}" if "batch" in params else "the default; use --set batch=N to change it"
        notes.append(f"batch = {batch} ({how}) for symbolic dim {', '.join(batch_dims)}")
    elif "batch" in params:
        notes.append(f"batch={batch} was given but no input has a symbolic leading dim; the model's fixed shapes "
                     "are used")
    return {k: (batch if k == "batch" else params[k]) for k in sorted(used)}


def _workload_dtype(graph: Any, notes: list[str]) -> str:
    types = [vi.type.tensor_type.elem_type for vi in graph.input if vi.type.HasField("tensor_type")]
    types += [t.data_type for t in graph.initializer]
    for t in types:
        if t in _FLOAT_DTYPES:
            if t == 11:
                notes.append("the model is float64; costed as fp32")
            return _FLOAT_DTYPES[t]
    for t in types:
        if t in _INT_DTYPES:
            return _INT_DTYPES[t]
    notes.append("no float or int8 input/initializer found; dtype set to fp32")
    return "fp32"


def _known_shape(value_info: Any) -> Shape | None:
    dims = _dims(value_info)
    if dims is None:
        return None
    out = []
    for d in dims:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None
        out.append(int(d.dim_value))
    return tuple(out)


class _Importer:
    def __init__(self, onnx: Any, model: Any, src: str, notes: list[str]) -> None:
        self.onnx = onnx
        self.src = src
        self.notes = notes
        graph = model.graph
        self.graph = graph
        self.shapes: dict[str, Shape | None] = {}
        self.consts: set[str] = set()
        self.values: dict[str, Any] = {}  # small constant values (numpy), computed lazily
        self.init: dict[str, Any] = {t.name: t for t in graph.initializer}
        self.const_nodes: dict[str, Any] = {}
        for t in graph.initializer:
            self.shapes[t.name] = tuple(int(d) for d in t.dims)
            self.consts.add(t.name)
            big = next((i for i, d in enumerate(t.dims) if d > MAX_DIM), None)
            if big is not None:
                raise OnnxImportError(src, f"initializer {t.name!r} dim {big} is {t.dims[big]:,} "
                                           f"(shape {list(t.dims)}); every dimension must be at most 2^31-1")
        for vi in [*graph.input, *graph.value_info, *graph.output]:
            shape = _known_shape(vi)
            if shape is not None or vi.name not in self.shapes:
                self.shapes[vi.name] = shape
        self.layers: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self.dropped_layout: Counter[str] = Counter()
        self.folded: Counter[str] = Counter()
        self.unsupported: Counter[str] = Counter()
        self.extra_notes: dict[str, int] = {}

    # ---- helpers -------------------------------------------------------------------------------------------
    def note_once(self, text: str) -> None:
        self.extra_notes[text] = self.extra_notes.get(text, 0) + 1

    def label(self, node: Any, idx: int) -> str:
        return node.name or f"{node.op_type}_{idx}"

    def fail(self, node: Any, idx: int, problem: str) -> OnnxImportError:
        return OnnxImportError(self.src, f"node {self.label(node, idx)!r} ({node.op_type}): {problem}")

    def shape(self, name: str) -> Shape | None:
        return self.shapes.get(name) if name else None

    def need(self, node: Any, idx: int, name: str, what: str = "input") -> Shape:
        shape = self.shape(name)
        if shape is None:
            raise self.fail(node, idx, f"the shape of {what} {name!r} is unknown (ONNX shape inference could not "
                                       "infer it and the importer cannot compute it)")
        return shape

    def value(self, name: str) -> Any:
        """The numpy value of a small constant tensor, or None."""
        if not name or name not in self.consts:
            return None
        if name in self.values:
            return self.values[name]
        from onnx import numpy_helper

        val = None
        try:
            if name in self.const_nodes:
                val = self._constant_node_value(self.const_nodes[name])
            elif name in self.init:
                t = self.init[name]
                if t.data_location != self.onnx.TensorProto.EXTERNAL and _prod(t.dims) <= 1 << 20:
                    val = numpy_helper.to_array(t)
        except Exception:  # an odd encoding: treat as unknown
            val = None
        self.values[name] = val
        return val

    def _constant_node_value(self, node: Any) -> Any:
        import numpy as np
        from onnx import numpy_helper

        for a in node.attribute:
            if a.name == "value" and a.t.data_location != self.onnx.TensorProto.EXTERNAL:
                return numpy_helper.to_array(a.t)
            if a.name in ("value_float", "value_int"):
                return np.array(a.f if a.name == "value_float" else a.i)
            if a.name in ("value_floats", "value_ints"):
                return np.array(list(a.floats if a.name == "value_floats" else a.ints))
        return None

    def add(self, node: Any, idx: int, layer: dict[str, Any]) -> None:
        self._check_sizes(node, idx, layer)
        base = _sanitize(node.name) or f"{node.op_type}_{idx}"
        name, k = base, 2
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        self.layers.append({"name": name, **layer})

    def _check_sizes(self, node: Any, idx: int, layer: dict[str, Any]) -> None:
        """Every size of an emitted layer is 1..2^31-1 (the emitted workload must load)."""
        sizes = [(k, v) for k, v in layer.items() if isinstance(v, int) and not isinstance(v, bool)]
        sizes += [(f"{k}[{i}]", x) for k, v in layer.items() if isinstance(v, list) for i, x in enumerate(v)]
        if layer["op"] == "conv2d":  # the im2col GEMM the engine runs
            pair = [layer["ifmap"], layer["kernel"], layer["stride"], layer["padding"]]
            (h, w), (kh, kw), (sh, sw), (ph, pw) = ((v, v) if isinstance(v, int) else v for v in pair)
            pixels = ((h + 2 * ph - kh) // sh + 1) * ((w + 2 * pw - kw) // sw + 1)
            sizes += [("n (output pixels x batch)", pixels * layer["batch"]),
                      ("k (kernel x channels / groups)", kh * kw * layer["channels"] // layer["groups"])]
        for key, value in sizes:
            if key.startswith("padding") and value == 0:
                continue
            if not 1 <= value <= MAX_DIM:
                raise self.fail(node, idx, f"{layer['op']} {key} = {value:,}: every size must be between 1 and "
                                           "2^31-1 (accelsim's limit per dimension)")

    def elements(self, node: Any, idx: int) -> int:
        out = node.output[0] if node.output else ""
        shape = self.shape(out)
        if shape is None:
            raise self.fail(node, idx, f"the shape of output {out!r} is unknown")
        return max(1, _prod(shape))

    # ---- own shape computation (when ONNX inference left a shape unknown) ---------------------------------------
    def own_shape(self, node: Any, attrs: dict[str, Any]) -> Shape | None:
        import numpy as np

        op = node.op_type
        ins = [self.shape(i) for i in node.input]
        first = ins[0] if ins else None
        if op in _SAME_SHAPE_OPS:
            return first
        if op in _ELEMENTWISE:
            if any(s is None for s in ins):
                return None
            try:
                return tuple(int(v) for v in np.broadcast_shapes(*ins))
            except ValueError:
                return None
        if op == "Constant":
            v = self._constant_node_value(node)
            if v is not None:
                return tuple(v.shape)
            for a in node.attribute:
                if a.name in ("value", "sparse_value"):
                    t = a.t if a.name == "value" else a.sparse_tensor
                    return tuple(int(d) for d in t.dims)
            return None
        if first is None:
            return None
        if op == "Flatten":
            axis = attrs.get("axis", 1)
            axis = axis + len(first) if axis < 0 else axis
            return (_prod(first[:axis]), _prod(first[axis:]))
        if op == "Transpose":
            perm = attrs.get("perm") or list(range(len(first)))[::-1]
            return tuple(first[p] for p in perm)
        if op in ("Squeeze", "Unsqueeze"):
            axes = attrs.get("axes")
            if axes is None and len(node.input) > 1:
                v = self.value(node.input[1])
                axes = None if v is None else [int(a) for a in np.ravel(v)]
            if op == "Squeeze":
                if axes is None:
                    return tuple(d for d in first if d != 1)
                axes = {a + len(first) if a < 0 else a for a in axes}
                return tuple(d for i, d in enumerate(first) if i not in axes)
            if axes is None:
                return None
            rank = len(first) + len(axes)
            axes = {a + rank if a < 0 else a for a in axes}
            it = iter(first)
            return tuple(1 if i in axes else next(it) for i in range(rank))
        if op == "Reshape":
            v = self.value(node.input[1]) if len(node.input) > 1 else None
            if v is None:
                return None
            target = [int(t) for t in np.ravel(v)]
            if not attrs.get("allowzero", 0):
                target = [first[i] if t == 0 and i < len(first) else t for i, t in enumerate(target)]
            if target.count(-1) == 1:
                known = _prod([t for t in target if t != -1])
                target[target.index(-1)] = _prod(first) // known if known else 0
            return tuple(target) if all(t >= 0 for t in target) else None
        if op == "Shape":
            rank = len(first)
            start, end = attrs.get("start", 0), attrs.get("end", rank)
            return (len(range(rank)[slice(start, end)]),)
        if op == "Size":
            return ()
        return None

    # ---- node mapping ------------------------------------------------------------------------------------------
    def run(self) -> None:
        import numpy as np
        from onnx import helper

        for idx, node in enumerate(self.graph.node):
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
            op = node.op_type
            # the op as the importer knows it; None = not a standard op (custom domain): unsupported
            domain_op = op if node.domain in ("", "ai.onnx") or (node.domain == "com.microsoft" and op in _MS_OPS) \
                else None
            out0 = node.output[0] if node.output else ""
            if out0 and self.shape(out0) is None and domain_op is not None:
                self.shapes[out0] = self.own_shape(node, attrs)
            if op == "Constant" and domain_op:
                self.const_nodes[out0] = node
                self.consts.add(out0)
                self.dropped_layout[op] += 1
                continue
            if op in ("Shape", "Size") and domain_op:
                self.consts.update(o for o in node.output if o)
                first = self.shape(node.input[0])
                if first is not None and op == "Shape":
                    rank = len(first)
                    s = slice(attrs.get("start", 0), attrs.get("end", rank))
                    self.values[out0] = np.array(first[s], dtype=np.int64)
                self.dropped_layout[op] += 1
                continue
            real_inputs = [i for i in node.input if i]
            if real_inputs and all(i in self.consts for i in real_inputs) and op not in ("If", "Loop", "Scan"):
                self.consts.update(o for o in node.output if o)
                self.folded[op] += 1
                continue
            if domain_op in _LAYOUT_OPS:
                self.dropped_layout[op] += 1
                continue
            handler = getattr(self, f"_op_{domain_op}", None) if domain_op else None
            if domain_op in _CONV_OPS:
                handler = self._conv
            elif domain_op in _MATMUL_OPS:
                handler = self._matmul
            elif domain_op in _ACTIVATIONS:
                handler = self._activation
            elif domain_op in _ELEMENTWISE:
                handler = self._elementwise
            elif domain_op in _VECTOR:
                handler = self._vector
            elif domain_op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
                handler = self._pool
            if handler is None:
                self._unsupported(node, idx)
            else:
                handler(node, idx, attrs)

    def _vector(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        self.add(node, idx, {"op": _VECTOR[node.op_type], "elements": self.elements(node, idx)})
        if node.op_type == "LogSoftmax":
            self.note_once("LogSoftmax costed as softmax")

    def _activation(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        self.add(node, idx, {"op": "activation", "function": _ACTIVATIONS[node.op_type],
                             "elements": self.elements(node, idx)})
        if node.op_type in _ACTIVATION_NOTES:
            self.note_once(_ACTIVATION_NOTES[node.op_type])

    def _op_Clip(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        import numpy as np

        lo, hi = attrs.get("min"), attrs.get("max")
        known = True
        for pos, label in ((1, "lo"), (2, "hi")):
            if len(node.input) > pos and node.input[pos]:
                v = self.value(node.input[pos])
                if v is None:
                    known = False
                elif label == "lo":
                    lo = float(np.ravel(v)[0])
                else:
                    hi = float(np.ravel(v)[0])
        function = "clip"
        if known and lo == 0 and hi == 6:
            function = "relu6"
        elif known and lo == 0 and (hi is None or math.isinf(hi)):
            function = "relu"
        self.add(node, idx, {"op": "activation", "function": function, "elements": self.elements(node, idx)})

    def _elementwise(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        inputs = sum(1 for i in node.input if i and i not in self.consts)
        self.add(node, idx, {"op": "elementwise", "inputs": max(1, inputs), "elements": self.elements(node, idx)})

    def _op_Concat(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        out0 = node.output[0]
        if self.shape(out0) is None:
            ins = [self.shape(i) for i in node.input if i]
            if all(s is not None for s in ins) and ins:
                axis = attrs.get("axis", 0)
                axis = axis + len(ins[0]) if axis < 0 else axis
                first = list(ins[0])  # type: ignore[arg-type]
                first[axis] = sum(s[axis] for s in ins)  # type: ignore[index]
                self.shapes[out0] = tuple(first)
        inputs = sum(1 for i in node.input if i)
        self.add(node, idx, {"op": "elementwise", "inputs": max(1, inputs), "elements": self.elements(node, idx)})
        self.note_once("Concat costed as an element-wise copy of its inputs")

    def _op_LRN(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        self.add(node, idx, {"op": "elementwise", "inputs": 1, "elements": self.elements(node, idx)})
        self.note_once("LRN costed as a one-input element-wise op")

    def _op_Gather(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        data, indices = node.input[0], node.input[1]
        table = self.shape(data)
        if data in self.consts and table is not None and len(table) == 2 and attrs.get("axis", 0) == 0:
            ishape = self.need(node, idx, indices)
            if self.shape(node.output[0]) is None:
                self.shapes[node.output[0]] = (*ishape, table[1])
            self.add(node, idx, {"op": "embedding", "vocab": table[0], "dim": table[1],
                                 "tokens": max(1, _prod(ishape))})
            return
        self._unsupported(node, idx)

    def _unsupported(self, node: Any, idx: int) -> None:
        known = [self.shape(o) for o in node.output if o]
        if known and all(s is not None for s in known):
            elements = sum(_prod(s) for s in known)  # type: ignore[arg-type]
        else:
            ins = [self.shape(i) for i in node.input if i and i not in self.consts]
            ins = [s for s in ins if s is not None]
            if not ins:
                raise self.fail(node, idx, "unsupported op whose output shape is unknown and has no input of known "
                                           "shape to estimate it from")
            est = max(ins, key=_prod)
            elements = _prod(est)
            for o in node.output:
                if o and self.shape(o) is None and len(node.output) == 1:
                    self.shapes[o] = est
            self.note_once(f"{node.op_type}: output shape unknown; assumed equal to its largest input "
                           f"({'x'.join(map(str, est))})")
        label = node.op_type if node.domain in ("", "ai.onnx") else f"{node.op_type} (domain {node.domain})"
        if node.op_type in ("If", "Loop", "Scan"):
            self.note_once(f"{node.op_type}: its sub-graph body is not simulated")
        self.unsupported[label] += 1
        self.add(node, idx, {"op": "unsupported", "source_op": node.op_type, "elements": max(1, elements)})

    # ---- array ops ---------------------------------------------------------------------------------------------
    def _is_weight(self, name: str) -> bool:
        return bool(name) and name in self.consts

    def _op_Gemm(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        a, b = node.input[0], node.input[1]
        sa, sb = self.need(node, idx, a), self.need(node, idx, b)
        if len(sa) != 2 or len(sb) != 2:
            raise self.fail(node, idx, f"expected 2-D inputs, got {list(sa)} and {list(sb)}")
        rows, ka = (sa[1], sa[0]) if attrs.get("transA", 0) else sa
        kb, cols = (sb[1], sb[0]) if attrs.get("transB", 0) else sb
        if ka != kb:
            raise self.fail(node, idx, f"reduction lengths differ ({ka} vs {kb})")
        if self.shape(node.output[0]) is None:
            self.shapes[node.output[0]] = (rows, cols)
        if self._is_weight(b):  # the usual Linear: B is the weight (out x in with transB=1)
            self.add(node, idx, {"op": "gemm", "m": cols, "n": rows, "k": ka})
        elif self._is_weight(a):
            self.add(node, idx, {"op": "gemm", "m": rows, "n": cols, "k": ka})
        else:
            self.add(node, idx, {"op": "matmul", "m": rows, "n": cols, "k": ka, "batch": 1})

    def _matmul(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        import numpy as np

        ia, ib = _MATMUL_OPS[node.op_type]
        a, b = node.input[ia], node.input[ib]
        sa, sb = list(self.need(node, idx, a)), list(self.need(node, idx, b))
        a_vec, b_vec = len(sa) == 1, len(sb) == 1
        if a_vec:
            sa = [1, *sa]
        if b_vec:
            sb = [*sb, 1]
        if sa[-1] != sb[-2]:
            raise self.fail(node, idx, f"reduction lengths differ ({sa[-1]} vs {sb[-2]})")
        try:
            lead = tuple(int(v) for v in np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
        except ValueError:
            raise self.fail(node, idx, f"batch dims {sa[:-2]} and {sb[:-2]} do not broadcast") from None
        m_, k_, n_ = sa[-2], sa[-1], sb[-1]
        out0 = node.output[0]
        if self.shape(out0) is None:
            self.shapes[out0] = (*lead, *([] if a_vec else [m_]), *([] if b_vec else [n_]))
        if self._is_weight(b) and _prod(sb[:-2]) == 1:
            # activation [..., M, K] x weight [K, N]: weight A is N x K, all activation rows are columns of B
            self.add(node, idx, {"op": "gemm", "m": n_, "n": _prod(lead) * m_, "k": k_})
        elif self._is_weight(a) and _prod(sa[:-2]) == 1 and not self._is_weight(b):
            self.add(node, idx, {"op": "gemm", "m": m_, "n": _prod(lead) * n_, "k": k_})
        else:
            if self._is_weight(a) or self._is_weight(b):
                self.note_once("MatMul with a batched constant operand costed as matmul (no weight sparsity)")
            self.add(node, idx, {"op": "matmul", "m": m_, "n": n_, "k": k_, "batch": max(1, _prod(lead))})

    def _spatial(self, node: Any, idx: int, attrs: dict[str, Any], size: Sequence[int], kernel: Sequence[int],
                 out_shape: Sequence[int] | None, ceil_mode: bool = False) -> tuple[list[int], list[int], list[int]]:
        """(effective kernel, stride, symmetric padding) per spatial dim reproducing the ONNX output size."""
        rank = len(size)
        kernel = self._ints(node, idx, {"kernel_shape": list(kernel)}, "kernel_shape", rank, 1, 1)
        strides = self._ints(node, idx, attrs, "strides", rank, 1, 1)
        dil = self._ints(node, idx, attrs, "dilations", rank, 1, 1)
        pads = self._ints(node, idx, attrs, "pads", 2 * rank, 0, 0)
        auto = attrs.get("auto_pad", "NOTSET") or "NOTSET"
        if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
            raise self.fail(node, idx, f"attribute auto_pad {auto!r}: expected NOTSET, SAME_UPPER, SAME_LOWER or "
                                       "VALID")
        keff = [d * (k - 1) + 1 for d, k in zip(dil, kernel, strict=True)]
        for i in range(rank):
            padded = size[i] + (0 if auto == "VALID" else pads[i] + pads[i + rank])
            if auto not in ("SAME_UPPER", "SAME_LOWER") and keff[i] > padded:
                dilated = f" (dilated to {keff})" if keff != kernel else ""
                raise self.fail(node, idx, f"attribute kernel_shape {kernel}{dilated} is larger than the padded "
                                           f"input {list(size)} (pads {pads}): the output would be empty")
        if any(d != 1 for d in dil):
            self.note_once(f"{node.op_type} dilation {dil}: costed as a dense kernel of the dilated size "
                           f"{keff} (MACs overestimated)")
        padding = []
        for i in range(rank):
            h, k, s = size[i], keff[i], strides[i]
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                o = -(-h // s)
                total = max(0, (o - 1) * s + k - h)
                pb = total // 2 if auto == "SAME_UPPER" else total - total // 2
                pe = total - pb
            elif auto == "VALID":
                pb = pe = 0
            else:
                pb, pe = pads[i], pads[i + rank]
            span = h + pb + pe - k
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if out_shape is not None and len(out_shape) == rank:
                o = out_shape[i]
            candidates = [pb, pe, *sorted(range(0, k + s), key=lambda p: abs(2 * p - pb - pe))]
            chosen = next((p for p in candidates if (h + 2 * p - k) // s + 1 == o), None)
            if chosen is None:  # e.g. stride 1 with an odd total pad: take the closest non-empty output
                valid = [p for p in candidates if (h + 2 * p - k) // s + 1 >= 1] or [pb]
                chosen = min(valid, key=lambda p: abs((h + 2 * p - k) // s + 1 - o))
                self.note_once(f"{node.op_type} pads {pb}/{pe}: no symmetric padding gives the ONNX output size "
                               f"{o}; costed with padding {chosen} (output {(h + 2 * chosen - k) // s + 1})")
            elif pb != pe or chosen != pb:
                self.note_once(f"{node.op_type} with asymmetric padding ({pb} before, {pe} after) or ceil_mode: "
                               f"costed with symmetric padding {chosen}, which gives the same output size")
            padding.append(chosen)
        return keff, strides, padding

    def _ints(self, node: Any, idx: int, attrs: dict[str, Any], name: str, length: int, least: int,
              default: int) -> list[int]:
        """An integer-list attribute of ``length`` values, each >= ``least`` (absent: ``default`` each)."""
        value = attrs.get(name)
        if value is None or (isinstance(value, list | tuple) and not value):
            return [default] * length
        values = list(value) if isinstance(value, list | tuple) else [value]
        if len(values) != length or not all(isinstance(v, int) for v in values):
            raise self.fail(node, idx, f"attribute {name} {values}: expected {length} integers")
        if any(v < least for v in values):
            raise self.fail(node, idx, f"attribute {name} {values}: every value must be >= {least}")
        return values

    def _conv(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        ix, iw = _CONV_OPS[node.op_type]
        x, w = node.input[ix], node.input[iw]
        ws = self.need(node, idx, w, "weight")
        xs = self.need(node, idx, x)
        rank = len(ws) - 2
        if rank not in (1, 2) or len(xs) != rank + 2:
            self.note_once(f"{node.op_type} with {rank} spatial dims: only 1-D and 2-D convolutions are modelled")
            self._unsupported(node, idx)
            return
        groups = int(attrs.get("group", 1))
        if groups < 1:
            raise self.fail(node, idx, f"attribute group {groups}: must be >= 1")
        batch, channels, size = xs[0], xs[1], list(xs[2:])
        filters, kernel = ws[0], list(attrs.get("kernel_shape") or ws[2:])
        if list(kernel) != list(ws[2:]):
            raise self.fail(node, idx, f"attribute kernel_shape {list(kernel)} does not match the weight "
                                       f"{w!r} {list(ws)}")
        if ws[1] * groups != channels:
            raise self.fail(node, idx, f"weight {list(ws)} with group {groups} does not match {channels} input "
                                       "channels")
        out0 = node.output[0]
        known = self.shape(out0)
        keff, strides, padding = self._spatial(node, idx, attrs, size, kernel, known[2:] if known else None)
        if rank == 1:
            self.note_once(f"{node.op_type} 1-D costed as conv2d with a 1-pixel-high ifmap")
            size, keff, strides, padding = [1, *size], [1, *keff], [1, *strides], [0, *padding]
        if known is None:
            out_hw = [(h + 2 * p - k) // s + 1 for h, p, k, s in zip(size, padding, keff, strides, strict=True)]
            self.shapes[out0] = (batch, filters, *(out_hw[1:] if rank == 1 else out_hw))
        self.add(node, idx, {"op": "conv2d", "ifmap": size, "kernel": keff, "channels": channels, "filters": filters,
                             "stride": _pair(*strides), "padding": _pair(*padding), "batch": batch,
                             "groups": groups})

    def _pool(self, node: Any, idx: int, attrs: dict[str, Any]) -> None:
        op = node.op_type
        xs = self.need(node, idx, node.input[0])
        rank = len(xs) - 2
        if rank not in (1, 2):
            self.note_once(f"{op} with {rank} spatial dims: only 1-D and 2-D pooling is modelled")
            self._unsupported(node, idx)
            return
        batch, channels, size = xs[0], xs[1], list(xs[2:])
        kind = "max" if "Max" in op else "avg"
        out0 = node.output[0]
        known = self.shape(out0)
        if op.startswith("Global"):
            kernel, strides, padding = list(size), [1] * rank, [0] * rank
        else:
            if not attrs.get("kernel_shape"):
                raise self.fail(node, idx, "missing attribute kernel_shape")
            kernel, strides, padding = self._spatial(node, idx, attrs, size, list(attrs["kernel_shape"]),
                                                     known[2:] if known else None, bool(attrs.get("ceil_mode", 0)))
        if rank == 1:
            size, kernel, strides, padding = [1, *size], [1, *kernel], [1, *strides], [0, *padding]
        if known is None:
            out_hw = [(h + 2 * p - k) // s + 1 for h, p, k, s in zip(size, padding, kernel, strides, strict=True)]
            self.shapes[out0] = (batch, channels, *(out_hw[1:] if rank == 1 else out_hw))
        self.add(node, idx, {"op": "pool", "ifmap": size, "channels": channels, "kernel": kernel,
                             "stride": _pair(*strides), "padding": _pair(*padding), "batch": batch, "kind": kind})

    # ---- notes -------------------------------------------------------------------------------------------------
    def summary_notes(self, total_nodes: int) -> list[str]:
        def counts(c: Counter[str]) -> str:
            return ", ".join(f"{k} x{v}" for k, v in sorted(c.items()))

        ops = Counter(layer["op"] for layer in self.layers)
        out = [f"{len(self.layers)} layers from {total_nodes} nodes: {counts(ops)}"]
        if self.unsupported:
            out.append(f"unsupported ops (kept as 'unsupported' layers, costed as one vector op per output "
                       f"element): {counts(self.unsupported)}")
        if self.dropped_layout:
            out.append(f"dropped, layout op, no cost: {counts(self.dropped_layout)}")
        if self.folded:
            out.append(f"dropped, computed only from constants/shapes (folded, no cost): {counts(self.folded)}")
        for text, n in self.extra_notes.items():
            out.append(text if n == 1 else f"{text} ({n} nodes)")
        return out


def import_onnx(path: str | Path, params: dict[str, Any] | None = None,
                dtype: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read an ONNX model (never its weight data) into a workload dict and a list of notes.

    ``params["batch"]`` sizes every symbolic leading input dim (default 1); any other symbolic
    dim needs a parameter of the same name. ``dtype`` (e.g. 'fp16' for an fp32 graph deployed in
    half precision) replaces the element type read from the graph. Raises an AccelsimError
    subclass with a one-line message naming the file on any problem.
    """
    from accelsim.workloads.model import DTYPE_BYTES

    onnx = _require_onnx()
    src = str(path)
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise ConfigError(src, "--dtype", f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPE_BYTES)}")
    clean = _check_params(params, src)
    model = _load(onnx, path, src)
    notes: list[str] = []
    if len(model.functions):
        try:
            from onnx import inliner

            model = inliner.inline_local_functions(model)
            notes.append("model-local functions were inlined")
        except Exception as exc:  # pragma: no cover - depends on the onnx version
            notes.append(f"model-local functions could not be inlined ({_one_line(exc)}); their calls are "
                         "unsupported layers")
    used = _resolve_symbolic(model, clean, src, notes)
    unused = sorted(set(clean) - set(used) - {"batch"})
    if unused:
        notes.append(f"parameter(s) not used by any symbolic dim: {', '.join(unused)}")
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:
        notes.append(f"ONNX shape inference failed ({_one_line(exc)}); shapes computed by the importer")
        inferred = model
    graph_dtype = _workload_dtype(inferred.graph, notes)
    if dtype is not None and dtype != graph_dtype:
        notes.append(f"dtype {dtype} (--dtype; the graph's tensors are {graph_dtype})")
    dtype = dtype or graph_dtype
    imp = _Importer(onnx, inferred, src, notes)
    imp.run()
    if not imp.layers:
        raise OnnxImportError(src, "the model has no computing nodes (only layout/constant ops)")
    notes[:0] = imp.summary_notes(len(inferred.graph.node))
    opset = next((o.version for o in inferred.opset_import if o.domain in ("", "ai.onnx")), None)
    producer = " ".join(p for p in (inferred.producer_name, inferred.producer_version) if p)
    desc = f"Imported from {Path(src).name} (ONNX opset {opset}{', ' + producer if producer else ''}) by " \
           "accelsim import-onnx"
    if used:
        desc += " with " + ", ".join(f"{k}={v}" for k, v in used.items())
    data = {"name": _sanitize(Path(src).stem) or "onnx-model", "description": desc + ".", "dtype": dtype,
            "layers": imp.layers}
    from accelsim.workloads.model import workload_from_dict

    workload_from_dict(data, src)  # the importer's output must always validate
    return data, notes


def workload_yaml(data: dict[str, Any], notes: list[str], source: str) -> str:
    """The workload as YAML in the style of workloads/*.yaml: one flow mapping per layer, notes as comments."""
    import yaml

    head = [f"# Generated by `accelsim import-onnx` from {source}.",
            "# Shapes only (weights were not read). Re-run the import rather than editing by hand."]
    if notes:
        head.append("# Import notes:")
        head += [f"#   - {' '.join(str(n).split())}" for n in notes]
    top = {k: v for k, v in data.items() if k != "layers"}
    body = yaml.safe_dump(top, sort_keys=False, default_flow_style=False, width=10**9, allow_unicode=True)
    rows = [f"  - {yaml.safe_dump(layer, sort_keys=False, default_flow_style=True, width=10**9).strip()}"
            for layer in data["layers"]]
    text = "\n".join(head) + "\n" + body + "layers:\n" + "\n".join(rows) + "\n"
    if yaml.safe_load(text) != data:  # pragma: no cover - a formatting bug, never user input
        raise AccelsimError("internal error: the generated workload YAML does not read back identically")
    return text


def _write_atomic(path: Path, text: str) -> None:
    """accelsim.fileio.write_atomic: all or nothing, one-line AccelsimError on failure."""
    from accelsim.fileio import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:  # until fileio raises its own one-line errors
        raise AccelsimError(f"{path}: cannot write: {exc.strerror or exc}") from None


def cmd_import_onnx(args: Any) -> tuple[int, list[str]]:
    """CLI body of ``accelsim import-onnx MODEL.onnx -o OUT.yaml [--set batch=N] [--name NAME] [--dtype D]``.

    ``args`` has ``model``, ``out`` (None: the YAML is returned as the lines to print), ``set``
    (KEY=VALUE strings), ``name`` and ``dtype``. Returns (exit code, lines to print); raises an
    AccelsimError (one line) on bad input, which the CLI prints as an error with exit code 2.
    """
    from accelsim.config.templating import parse_sets

    params = parse_sets(list(getattr(args, "set", None) or []))
    data, notes = import_onnx(args.model, params, getattr(args, "dtype", None))
    name = getattr(args, "name", None)
    if name:
        data["name"] = name
    text = workload_yaml(data, notes, str(args.model))
    out = getattr(args, "out", None)
    if not out:
        return 0, text.rstrip("\n").split("\n")
    _write_atomic(Path(out), text)
    ops = Counter(layer["op"] for layer in data["layers"])
    summary = ", ".join(f"{v} {k}" for k, v in sorted(ops.items()))
    return 0, [f"wrote {out}: workload {data['name']!r}, {len(data['layers'])} layers ({summary})",
               *[f"note: {n}" for n in notes]]
