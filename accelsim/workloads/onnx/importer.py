"""The import: read the model, size its symbolic dims, infer shapes, walk the nodes in graph order.

Layout ops (Reshape, Transpose, Flatten, ...) and sub-graphs computed only from constants and shapes are
dropped at no cost and listed in the notes; every other node becomes a layer (:mod:`.ops`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from accelsim.errors import ConfigError
from accelsim.textsafe import printable
from accelsim.workloads.model import DTYPE_BYTES, workload_from_dict
from accelsim.workloads.onnx.checks import check_node, graph_order
from accelsim.workloads.onnx.graph import GraphState
from accelsim.workloads.onnx.ops import handler_for, unsupported
from accelsim.workloads.onnx.optypes import CONTROL_FLOW, LAYOUT_OPS, MS_OPS
from accelsim.workloads.onnx.reading import (
    OnnxImportError,
    check_name,
    check_params,
    load_model,
    one_line,
    require_onnx,
    resolve_symbolic,
    sanitize,
    workload_dtype,
)


class OnnxImport(NamedTuple):
    """What an import produced: the workload (a dict that validates) and its notes, one line each.

    The notes say what the workload cannot: the layers by op, ops kept as ``unsupported`` layers, ops
    dropped (layout, constant folding), approximations (padding, dilation, dtype) and the sizes chosen for
    symbolic dims.
    """

    workload: dict[str, Any]
    notes: tuple[str, ...]


# unexpected errors inside one node's code: said as one line naming the node (a last resort behind the checks)
_NODE_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError, StopIteration)


def walk(g: GraphState) -> None:
    """Map every node, in graph order, to a layer of ``g`` (or drop it at no cost)."""
    nodes = g.graph.node
    for idx in graph_order(g.src, nodes):
        node = nodes[idx]
        try:
            _walk_node(g, node, idx)
        except _NODE_ERRORS as exc:
            raise g.fail(node, idx, f"cannot be imported ({type(exc).__name__}: {one_line(exc)})") from None


def _walk_node(g: GraphState, node: Any, idx: int) -> None:
    """Map one node to a layer of ``g`` (or drop it at no cost)."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    op = node.op_type
    # the op as the importer knows it; None = not a standard op (custom domain): unsupported
    domain_op = op if node.domain in ("", "ai.onnx") or (node.domain == "com.microsoft" and op in MS_OPS) \
        else None
    if domain_op is not None:
        check_node(g.src, node, idx, g.shape)
    out0 = node.output[0] if node.output else ""
    if out0 and g.shape(out0) is None and domain_op is not None:
        g.shapes[out0] = g.own_shape(node, idx, attrs)
    if op == "Constant" and domain_op:
        g.const_nodes[out0] = node
        g.consts.add(out0)
        g.dropped_layout[op] += 1
        return
    if op in ("Shape", "Size") and domain_op:
        g.consts.update(o for o in node.output if o)
        first = g.shape(node.input[0])
        if first is not None and op == "Shape":
            rank = len(first)
            s = slice(attrs.get("start", 0), attrs.get("end", rank))
            g.values[out0] = np.array(first[s], dtype=np.int64)
        g.dropped_layout[op] += 1
        return
    if domain_op in LAYOUT_OPS:
        g.check_layout(node, idx)
    real_inputs = [i for i in node.input if i]
    if real_inputs and all(i in g.consts for i in real_inputs) and op not in CONTROL_FLOW:
        g.consts.update(o for o in node.output if o)
        g.folded[op] += 1
        return
    if domain_op in LAYOUT_OPS:
        g.dropped_layout[op] += 1
        return
    handler = handler_for(domain_op) if domain_op else None
    if handler is None:
        unsupported(g, node, idx)
    else:
        handler(g, node, idx, attrs)


def summary_notes(g: GraphState, total_nodes: int) -> list[str]:
    """The notes that lead: layers by op, unsupported ops, dropped ops, then each approximation made."""
    def counts(c: Counter[str]) -> str:
        return ", ".join(f"{k} x{v}" for k, v in sorted(c.items()))

    ops = Counter(layer["op"] for layer in g.layers)
    out = [f"{len(g.layers)} layers from {total_nodes} nodes: {counts(ops)}"]
    if g.unsupported:
        out.append(f"unsupported ops (kept as 'unsupported' layers, costed as one vector op per output "
                   f"element): {counts(g.unsupported)}")
    if g.dropped_layout:
        out.append(f"dropped, layout op, no cost: {counts(g.dropped_layout)}")
    if g.folded:
        out.append(f"dropped, computed only from constants/shapes (folded, no cost): {counts(g.folded)}")
    for text, n in g.extra_notes.items():
        out.append(text if n == 1 else f"{text} ({n} nodes)")
    return out


def import_onnx(path: str | Path, params: dict[str, Any] | None = None, dtype: str | None = None,
                name: str | None = None) -> OnnxImport:
    """Read an ONNX model (never its weight data) into a workload dict and its notes.

    ``params["batch"]`` sizes every symbolic leading input dim (default 1); any other symbolic
    dim needs a parameter of the same name. ``dtype`` (e.g. 'fp16' for an fp32 graph deployed in
    half precision) replaces the element type read from the graph; ``name`` replaces the workload
    name (default: the file's stem). Raises an AccelsimError subclass with a one-line message naming
    the file on any problem.
    """
    onnx = require_onnx()
    src = str(path)
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise ConfigError(src, "--dtype", f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPE_BYTES)}")
    if name is not None:
        check_name(name, src)
    clean = check_params(params, src)
    model = load_model(onnx, path, src)
    notes: list[str] = []
    if len(model.functions):
        try:
            from onnx import inliner

            model = inliner.inline_local_functions(model)
            notes.append("model-local functions were inlined")
        except Exception as exc:  # pragma: no cover - depends on the onnx version
            notes.append(f"model-local functions could not be inlined ({one_line(exc)}); their calls are "
                         "unsupported layers")
    used = resolve_symbolic(model, clean, src, notes)
    unused = sorted(set(clean) - set(used) - {"batch"})
    if unused:
        notes.append(f"parameter(s) not used by any symbolic dim: {', '.join(unused)}")
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:
        notes.append(f"ONNX shape inference failed ({one_line(exc)}); shapes computed by the importer")
        inferred = model
    graph_dtype = workload_dtype(inferred.graph, notes)
    if dtype is not None and dtype != graph_dtype:
        notes.append(f"dtype {dtype} (--dtype; the graph's tensors are {graph_dtype})")
    dtype = dtype or graph_dtype
    g = GraphState(onnx, inferred, src)
    walk(g)
    if not g.layers:
        raise OnnxImportError(src, "the model has no computing nodes (only layout/constant ops)")
    notes[:0] = summary_notes(g, len(inferred.graph.node))
    opset = next((o.version for o in inferred.opset_import if o.domain in ("", "ai.onnx")), None)
    producer = " ".join(p for p in (inferred.producer_name, inferred.producer_version) if p)
    producer = f", {printable(producer, 200)}" if producer else ""
    desc = f"Imported from {printable(Path(src).name, 200)} (ONNX opset {opset}{producer}) by accelsim import-onnx"
    if used:
        desc += " with " + ", ".join(f"{k}={v}" for k, v in used.items())
    data = {"name": name or sanitize(Path(src).stem) or "onnx-model", "description": desc + ".", "dtype": dtype,
            "layers": g.layers}
    workload_from_dict(data, src)  # the importer's output must always validate
    return OnnxImport(data, tuple(notes))
