"""The importer's view of an ONNX graph: shapes (from ONNX inference, else computed), small constants, layers.

Op handlers (:mod:`.ops`) read shapes and constants here and emit layers with :meth:`GraphState.add`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from accelsim.workloads.onnx.checks import check_axes, check_same_elements, node_label
from accelsim.workloads.onnx.optypes import ELEMENTWISE, SAME_SHAPE_OPS
from accelsim.workloads.onnx.reading import MAX_DIM, OnnxImportError, Shape, known_shape, prod, sanitize


class GraphState:
    """The graph being imported: shapes and constants known so far, the layers emitted, what was dropped."""

    def __init__(self, onnx: Any, model: Any, src: str) -> None:
        self.onnx = onnx
        self.src = src
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
            shape = known_shape(vi)
            if shape is not None or vi.name not in self.shapes:
                self.shapes[vi.name] = shape
        self.layers: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self.dropped_layout: Counter[str] = Counter()
        self.folded: Counter[str] = Counter()
        self.unsupported: Counter[str] = Counter()
        self.extra_notes: dict[str, int] = {}

    def note_once(self, text: str) -> None:
        """Record an approximation note (said once, with the number of nodes it applies to)."""
        self.extra_notes[text] = self.extra_notes.get(text, 0) + 1

    def fail(self, node: Any, idx: int, problem: str) -> OnnxImportError:
        """The error to raise for a node that cannot be imported."""
        return OnnxImportError(self.src, f"node {node_label(node, idx)!r} ({node.op_type}): {problem}")

    def check_layout(self, node: Any, idx: int) -> None:
        """A layout op's output keeps its input's element count (when both shapes are known)."""
        first, out = self.shape(node.input[0]), self.shape(node.output[0])
        if first is not None and out is not None:
            check_same_elements(lambda p: self.fail(node, idx, p), first, out, node.output[0])

    def shape(self, name: str) -> Shape | None:
        """The known shape of a value, else None."""
        return self.shapes.get(name) if name else None

    def need(self, node: Any, idx: int, name: str, what: str = "input") -> Shape:
        """The shape of a value a node needs; an error naming the node when it is unknown."""
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
                val = self.constant_node_value(self.const_nodes[name])
            elif name in self.init:
                t = self.init[name]
                if t.data_location != self.onnx.TensorProto.EXTERNAL and prod(t.dims) <= 1 << 20:
                    val = numpy_helper.to_array(t)
        except Exception:  # an odd encoding: treat as unknown
            val = None
        self.values[name] = val
        return val

    def constant_node_value(self, node: Any) -> Any:
        """The numpy value of a Constant node (None when held externally or of an unknown kind)."""
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
        """Emit a layer for ``node`` under a unique name (the node's, sanitised, else ``OpType_index``)."""
        self._check_sizes(node, idx, layer)
        base = sanitize(node.name) or f"{node.op_type}_{idx}"
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
            if value == 0:
                raise self.fail(node, idx, f"{layer['op']} {key} = 0: {self._empty(node)}a zero-size tensor does no "
                                           "work and accelsim's layers need at least one element; export the model "
                                           "with the shapes it runs at")
            if not 1 <= value <= MAX_DIM:
                raise self.fail(node, idx, f"{layer['op']} {key} = {value:,}: every size must be between 1 and "
                                           "2^31-1 (accelsim's limit per dimension)")

    def _empty(self, node: Any) -> str:
        """'value X has shape [...]; ' for the first zero-size input or output of ``node`` (empty if none)."""
        for name in [*node.output, *node.input]:
            shape = self.shape(name) if name else None
            if shape is not None and prod(shape) == 0:
                return f"{name!r} has shape {list(shape)}; "
        return ""

    def elements(self, node: Any, idx: int) -> int:
        """Elements of the node's first output; an error when its shape is unknown (0 is refused when emitted)."""
        out = node.output[0] if node.output else ""
        shape = self.shape(out)
        if shape is None:
            raise self.fail(node, idx, f"the shape of output {out!r} is unknown")
        return prod(shape)

    def own_shape(self, node: Any, idx: int, attrs: dict[str, Any]) -> Shape | None:
        """The output shape the importer computes itself when ONNX inference left it unknown (None: cannot);
        an error naming the node when its attributes do not fit its input (a perm or axis past the rank)."""
        op = node.op_type
        ins = [self.shape(i) for i in node.input]
        first = ins[0] if ins else None

        def fail(problem: str) -> OnnxImportError:
            return self.fail(node, idx, problem)

        if op in SAME_SHAPE_OPS:
            return first
        if op in ELEMENTWISE:
            given = [s for s in ins if s is not None]
            if len(given) != len(ins):
                return None
            try:
                return tuple(int(v) for v in np.broadcast_shapes(*given))
            except ValueError:
                raise fail(f"input shapes {', '.join(str(list(s)) for s in given)} do not broadcast") from None
        if op == "Constant":
            v = self.constant_node_value(node)
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
            return (prod(first[:axis]), prod(first[axis:]))
        if op == "Transpose":
            perm = attrs.get("perm") or list(range(len(first)))[::-1]
            if sorted(perm) != list(range(len(first))):
                raise fail(f"attribute perm {list(perm)} is not a permutation of the {len(first)} axes of input "
                           f"{node.input[0]!r} (shape {list(first)})")
            return tuple(first[p] for p in perm)
        if op in ("Squeeze", "Unsqueeze"):
            axes = attrs.get("axes")
            if axes is None and len(node.input) > 1:
                v = self.value(node.input[1])
                axes = None if v is None else [int(a) for a in np.ravel(v)]
            if op == "Squeeze":
                if axes is None:
                    return tuple(d for d in first if d != 1)
                drop = check_axes(fail, axes, len(first), "axes")
                if any(first[a] != 1 for a in drop):
                    raise fail(f"axes {list(axes)} name a dimension of input {node.input[0]!r} (shape "
                               f"{list(first)}) whose size is not 1")
                return tuple(d for i, d in enumerate(first) if i not in drop)
            if axes is None:
                return None
            rank = len(first) + len(axes)
            new = set(check_axes(fail, axes, rank, "axes"))
            it = iter(first)
            return tuple(1 if i in new else next(it) for i in range(rank))
        if op == "Reshape":
            return self._reshape(node, first, attrs, fail)
        if op == "Shape":
            rank = len(first)
            start, end = attrs.get("start", 0), attrs.get("end", rank)
            return (len(range(rank)[slice(start, end)]),)
        if op == "Size":
            return ()
        return None

    def _reshape(self, node: Any, first: Shape, attrs: dict[str, Any], fail: Any) -> Shape | None:
        """A Reshape's output shape from its constant target (None when the target is not known)."""
        v = self.value(node.input[1]) if len(node.input) > 1 else None
        if v is None:
            return None
        target = [int(t) for t in np.ravel(v)]
        shown = f"target {target} of input {node.input[1]!r}"
        if target.count(-1) > 1 or any(t < -1 for t in target):
            raise fail(f"{shown}: at most one -1 and no other negative size")
        if not attrs.get("allowzero", 0):
            if any(t == 0 and i >= len(first) for i, t in enumerate(target)):
                raise fail(f"{shown}: a 0 (copy the input's size) past the input's rank {len(first)}")
            target = [first[i] if t == 0 else t for i, t in enumerate(target)]
        elif 0 in target and -1 in target:
            raise fail(f"{shown}: with allowzero=1, a 0 and a -1 cannot be used together")
        if -1 in target:
            known = prod([t for t in target if t != -1])
            if not known or prod(first) % known:
                raise fail(f"{shown}: no size for -1 makes {prod(first):,} elements (input shape {list(first)})")
            target[target.index(-1)] = prod(first) // known
        out = tuple(target)
        check_same_elements(fail, first, out, node.output[0])
        return out
