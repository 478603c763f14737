"""What each ONNX op becomes: one function per op family that reads shapes and emits a workload layer.

Conv / ConvInteger / QLinearConv -> ``conv2d`` (groups, strides, pads, auto_pad, dilation as the effective
kernel; 1-D conv as a 1-pixel-high conv2d); Gemm / MatMul with a constant operand -> ``gemm`` (the constant
is the weight A: m = its output features, k = its input features, n = all rows of the activation); MatMul of
two activations -> ``matmul`` (batch = leading dims); Gather on a constant 2-D table -> ``embedding``; norms,
softmax, activations, pools, element-wise arithmetic and Concat -> the matching vector layer; anything else
-> an ``unsupported`` layer (source_op, output elements). Conv and Gemm biases are not costed (a fused
epilogue).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from accelsim.workloads.onnx.graph import GraphState
from accelsim.workloads.onnx.optypes import (
    ACTIVATION_NOTES,
    ACTIVATIONS,
    CONTROL_FLOW,
    CONV_OPS,
    ELEMENTWISE,
    MATMUL_OPS,
    POOLS,
    VECTOR,
)
from accelsim.workloads.onnx.reading import pair, prod

Handler = Callable[[GraphState, Any, int, dict[str, Any]], None]


def handler_for(op: str) -> Handler | None:
    """The function that maps a (standard-domain) op, or None: the op becomes an ``unsupported`` layer."""
    if op in CONV_OPS:
        return _conv
    if op in MATMUL_OPS:
        return _matmul
    if op in ACTIVATIONS:
        return _activation
    if op in ELEMENTWISE:
        return _elementwise
    if op in VECTOR:
        return _vector
    if op in POOLS:
        return _pool
    return _BY_NAME.get(op)


def _vector(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    g.add(node, idx, {"op": VECTOR[node.op_type], "elements": g.elements(node, idx)})
    if node.op_type == "LogSoftmax":
        g.note_once("LogSoftmax costed as softmax")

def _activation(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    g.add(node, idx, {"op": "activation", "function": ACTIVATIONS[node.op_type],
                      "elements": g.elements(node, idx)})
    if node.op_type in ACTIVATION_NOTES:
        g.note_once(ACTIVATION_NOTES[node.op_type])

def _clip(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    lo, hi = attrs.get("min"), attrs.get("max")
    known = True
    for pos, label in ((1, "lo"), (2, "hi")):
        if len(node.input) > pos and node.input[pos]:
            v = g.value(node.input[pos])
            if v is not None and (np.size(v) != 1 or not np.issubdtype(np.asarray(v).dtype, np.number)):
                raise g.fail(node, idx, f"input {pos} {node.input[pos]!r} ({'min' if pos == 1 else 'max'}) must be "
                                        f"a single number, got {np.size(v)} {np.asarray(v).dtype} values")
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
    g.add(node, idx, {"op": "activation", "function": function, "elements": g.elements(node, idx)})

def _elementwise(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    inputs = sum(1 for i in node.input if i and i not in g.consts)
    g.add(node, idx, {"op": "elementwise", "inputs": max(1, inputs), "elements": g.elements(node, idx)})

def _concat(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    out0 = node.output[0]
    if g.shape(out0) is None:
        shapes = [g.shape(i) for i in node.input if i]
        ins = [s for s in shapes if s is not None]
        if ins and len(ins) == len(shapes):
            if len({len(s) for s in ins}) > 1:
                raise g.fail(node, idx, f"inputs differ in rank: {', '.join(str(list(s)) for s in ins)}")
            axis = attrs.get("axis", 0)
            axis = axis + len(ins[0]) if axis < 0 else axis
            if not 0 <= axis < len(ins[0]):
                raise g.fail(node, idx, f"attribute axis {attrs.get('axis', 0)} is out of range for inputs of "
                                        f"rank {len(ins[0])}")
            first = list(ins[0])
            first[axis] = sum(s[axis] for s in ins)
            g.shapes[out0] = tuple(first)
    inputs = sum(1 for i in node.input if i)
    g.add(node, idx, {"op": "elementwise", "inputs": max(1, inputs), "elements": g.elements(node, idx)})
    g.note_once("Concat costed as an element-wise copy of its inputs")

def _lrn(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    g.add(node, idx, {"op": "elementwise", "inputs": 1, "elements": g.elements(node, idx)})
    g.note_once("LRN costed as a one-input element-wise op")

def _gather(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    data, indices = node.input[0], node.input[1]
    table = g.shape(data)
    if data in g.consts and table is not None and len(table) == 2 and attrs.get("axis", 0) == 0:
        ishape = g.need(node, idx, indices)
        if g.shape(node.output[0]) is None:
            g.shapes[node.output[0]] = (*ishape, table[1])
        g.add(node, idx, {"op": "embedding", "vocab": table[0], "dim": table[1],
                          "tokens": prod(ishape)})
        return
    unsupported(g, node, idx)

def unsupported(g: GraphState, node: Any, idx: int) -> None:
    outs = [g.shape(o) for o in node.output if o]
    known = [s for s in outs if s is not None]
    if known and len(known) == len(outs):
        elements = sum(prod(s) for s in known)
    else:
        ins = [s for s in (g.shape(i) for i in node.input if i and i not in g.consts) if s is not None]
        if not ins:
            raise g.fail(node, idx, "unsupported op whose output shape is unknown and has no input of known "
                                    "shape to estimate it from")
        est = max(ins, key=prod)
        elements = prod(est)
        for o in node.output:
            if o and g.shape(o) is None and len(node.output) == 1:
                g.shapes[o] = est
        g.note_once(f"{node.op_type}: output shape unknown; assumed equal to its largest input "
                    f"({'x'.join(map(str, est))})")
    label = node.op_type if node.domain in ("", "ai.onnx") else f"{node.op_type} (domain {node.domain})"
    if node.op_type in CONTROL_FLOW:
        g.note_once(f"{node.op_type}: its sub-graph body is not simulated")
    g.unsupported[label] += 1
    g.add(node, idx, {"op": "unsupported", "source_op": node.op_type, "elements": elements})

def _is_weight(g: GraphState, name: str) -> bool:
    return bool(name) and name in g.consts

def _gemm(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    a, b = node.input[0], node.input[1]
    sa, sb = g.need(node, idx, a), g.need(node, idx, b)
    if len(sa) != 2 or len(sb) != 2:
        raise g.fail(node, idx, f"expected 2-D inputs, got {list(sa)} and {list(sb)}")
    rows, ka = (sa[1], sa[0]) if attrs.get("transA", 0) else sa
    kb, cols = (sb[1], sb[0]) if attrs.get("transB", 0) else sb
    if ka != kb:
        raise g.fail(node, idx, f"reduction lengths differ ({ka} vs {kb})")
    if g.shape(node.output[0]) is None:
        g.shapes[node.output[0]] = (rows, cols)
    if _is_weight(g, b):  # the usual Linear: B is the weight (out x in with transB=1)
        g.add(node, idx, {"op": "gemm", "m": cols, "n": rows, "k": ka})
    elif _is_weight(g, a):
        g.add(node, idx, {"op": "gemm", "m": rows, "n": cols, "k": ka})
    else:
        g.add(node, idx, {"op": "matmul", "m": rows, "n": cols, "k": ka, "batch": 1})
    if len(node.input) > 2 and node.input[2] and not _is_weight(g, node.input[2]):
        g.note_once("Gemm with a non-constant C input (e.g. a residual added in the epilogue): reading C is not "
                    "costed (a constant C is a bias, fused)")

def _matmul(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    ia, ib = MATMUL_OPS[node.op_type]
    a, b = node.input[ia], node.input[ib]
    sa, sb = list(g.need(node, idx, a)), list(g.need(node, idx, b))
    for name, shape in ((a, sa), (b, sb)):
        if not shape:
            raise g.fail(node, idx, f"input {name!r} is a scalar (shape []); {node.op_type} needs operands of "
                                    "rank 1 or more")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [1, *sa]
    if b_vec:
        sb = [*sb, 1]
    if sa[-1] != sb[-2]:
        raise g.fail(node, idx, f"reduction lengths differ ({sa[-1]} vs {sb[-2]})")
    try:
        lead = tuple(int(v) for v in np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    except ValueError:
        raise g.fail(node, idx, f"batch dims {sa[:-2]} and {sb[:-2]} do not broadcast") from None
    m_, k_, n_ = sa[-2], sa[-1], sb[-1]
    out0 = node.output[0]
    if g.shape(out0) is None:
        g.shapes[out0] = (*lead, *([] if a_vec else [m_]), *([] if b_vec else [n_]))
    integer = _integer_types(g, node) if node.op_type in INTEGER_OPS else {}
    if _is_weight(g, b) and prod(sb[:-2]) == 1:
        # activation [..., M, K] x weight [K, N]: weight A is N x K, all activation rows are columns of B
        g.add(node, idx, {"op": "gemm", "m": n_, "n": prod(lead) * m_, "k": k_, **integer})
    elif _is_weight(g, a) and prod(sa[:-2]) == 1 and not _is_weight(g, b):
        g.add(node, idx, {"op": "gemm", "m": m_, "n": prod(lead) * n_, "k": k_, **integer})
    else:
        if _is_weight(g, a) or _is_weight(g, b):
            g.note_once("MatMul with a batched constant operand costed as matmul (no weight sparsity)")
        if node.op_type in INTEGER_OPS:
            g.note_once(f"{node.op_type} between activations costed as a matmul in the workload dtype (a matmul "
                        "layer has no element type of its own)")
        g.add(node, idx, {"op": "matmul", "m": m_, "n": n_, "k": k_, "batch": prod(lead)})


INTEGER_OPS = {"MatMulInteger", "QLinearMatMul"}


def _integer_types(g: GraphState, node: Any) -> dict[str, str]:
    """The element types of an integer matmul's GEMM layer: int8 operands (uint8 too), C in int32 for
    MatMulInteger; QLinearMatMul writes int8, which a workload cannot say (C in the workload dtype, noted)."""
    if node.op_type == "MatMulInteger":
        g.note_once("MatMulInteger costed as an int8 GEMM (dtype: int8, C written as int32)")
        return {"dtype": "int8", "out_dtype": "int32"}
    g.note_once("QLinearMatMul costed as an int8 GEMM (dtype: int8); its requantized int8 output is written in the "
                "workload dtype (a layer's out_dtype is int32 or fp32 only)")
    return {"dtype": "int8"}

def _spatial(g: GraphState, node: Any, idx: int, attrs: dict[str, Any], size: Sequence[int], kernel: Sequence[int],
             out_shape: Sequence[int] | None, ceil_mode: bool = False) -> tuple[list[int], list[int], list[int]]:
    """(effective kernel, stride, symmetric padding) per spatial dim reproducing the ONNX output size."""
    rank = len(size)
    kernel = _ints(g, node, idx, {"kernel_shape": list(kernel)}, "kernel_shape", rank, 1, 1)
    strides = _ints(g, node, idx, attrs, "strides", rank, 1, 1)
    dil = _ints(g, node, idx, attrs, "dilations", rank, 1, 1)
    pads = _ints(g, node, idx, attrs, "pads", 2 * rank, 0, 0)
    auto = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise g.fail(node, idx, f"attribute auto_pad {auto!r}: expected NOTSET, SAME_UPPER, SAME_LOWER or "
                                "VALID")
    keff = [d * (k - 1) + 1 for d, k in zip(dil, kernel, strict=True)]
    for i in range(rank):
        padded = size[i] + (0 if auto == "VALID" else pads[i] + pads[i + rank])
        if auto not in ("SAME_UPPER", "SAME_LOWER") and keff[i] > padded:
            dilated = f" (dilated to {keff})" if keff != kernel else ""
            raise g.fail(node, idx, f"attribute kernel_shape {kernel}{dilated} is larger than the padded "
                                    f"input {list(size)} (pads {pads}): the output would be empty")
    if any(d != 1 for d in dil):
        g.note_once(f"{node.op_type} dilation {dil}: costed as a dense kernel of the dilated size "
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
            g.note_once(f"{node.op_type} pads {pb}/{pe}: no symmetric padding gives the ONNX output size "
                        f"{o}; costed with padding {chosen} (output {(h + 2 * chosen - k) // s + 1})")
        elif pb != pe or chosen != pb:
            g.note_once(f"{node.op_type} with asymmetric padding ({pb} before, {pe} after) or ceil_mode: "
                        f"costed with symmetric padding {chosen}, which gives the same output size")
        padding.append(chosen)
    return keff, strides, padding

def _ints(g: GraphState, node: Any, idx: int, attrs: dict[str, Any], name: str, length: int, least: int,
          default: int) -> list[int]:
    """An integer-list attribute of ``length`` values, each >= ``least`` (absent: ``default`` each)."""
    value = attrs.get(name)
    if value is None or (isinstance(value, list | tuple) and not value):
        return [default] * length
    values = list(value) if isinstance(value, list | tuple) else [value]
    if len(values) != length or not all(isinstance(v, int) for v in values):
        raise g.fail(node, idx, f"attribute {name} {values}: expected {length} integers")
    if any(v < least for v in values):
        raise g.fail(node, idx, f"attribute {name} {values}: every value must be >= {least}")
    return values

def _conv(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    ix, iw = CONV_OPS[node.op_type]
    x, w = node.input[ix], node.input[iw]
    ws = g.need(node, idx, w, "weight")
    xs = g.need(node, idx, x)
    rank = len(ws) - 2
    if rank < 1:
        raise g.fail(node, idx, f"weight {w!r} has shape {list(ws)}; expected filters x channels x kernel dims "
                                "(rank 3 or more)")
    if len(xs) != rank + 2:
        raise g.fail(node, idx, f"input {x!r} has shape {list(xs)} (rank {len(xs)}) but the weight {w!r} "
                                f"{list(ws)} needs rank {rank + 2}")
    if rank not in (1, 2):
        g.note_once(f"{node.op_type} with {rank} spatial dims: only 1-D and 2-D convolutions are modelled")
        unsupported(g, node, idx)
        return
    groups = int(attrs.get("group", 1))
    if groups < 1:
        raise g.fail(node, idx, f"attribute group {groups}: must be >= 1")
    batch, channels, size = xs[0], xs[1], list(xs[2:])
    filters, kernel = ws[0], list(attrs.get("kernel_shape") or ws[2:])
    if list(kernel) != list(ws[2:]):
        raise g.fail(node, idx, f"attribute kernel_shape {list(kernel)} does not match the weight "
                                f"{w!r} {list(ws)}")
    if ws[1] * groups != channels:
        raise g.fail(node, idx, f"weight {list(ws)} with group {groups} does not match {channels} input "
                                "channels")
    out0 = node.output[0]
    known = g.shape(out0)
    keff, strides, padding = _spatial(g, node, idx, attrs, size, kernel, known[2:] if known else None)
    if rank == 1:
        g.note_once(f"{node.op_type} 1-D costed as conv2d with a 1-pixel-high ifmap")
        size, keff, strides, padding = [1, *size], [1, *keff], [1, *strides], [0, *padding]
    if known is None:
        out_hw = [(h + 2 * p - k) // s + 1 for h, p, k, s in zip(size, padding, keff, strides, strict=True)]
        g.shapes[out0] = (batch, filters, *(out_hw[1:] if rank == 1 else out_hw))
    g.add(node, idx, {"op": "conv2d", "ifmap": size, "kernel": keff, "channels": channels, "filters": filters,
                      "stride": pair(*strides), "padding": pair(*padding), "batch": batch,
                      "groups": groups})
    if node.op_type != "Conv":
        g.note_once(f"{node.op_type} costed as a conv2d in the workload dtype: a conv layer has no element type of "
                    "its own (its int8 operands take the workload dtype's bytes and MMA rate)")

def _pool(g: GraphState, node: Any, idx: int, attrs: dict[str, Any]) -> None:
    op = node.op_type
    xs = g.need(node, idx, node.input[0])
    rank = len(xs) - 2
    if rank < 1:
        raise g.fail(node, idx, f"input {node.input[0]!r} has shape {list(xs)}; expected batch x channels x "
                                "spatial dims (rank 3 or more)")
    if rank not in (1, 2):
        g.note_once(f"{op} with {rank} spatial dims: only 1-D and 2-D pooling is modelled")
        unsupported(g, node, idx)
        return
    batch, channels, size = xs[0], xs[1], list(xs[2:])
    kind = "max" if "Max" in op else "avg"
    out0 = node.output[0]
    known = g.shape(out0)
    if op.startswith("Global"):
        kernel, strides, padding = list(size), [1] * rank, [0] * rank
    else:
        if not attrs.get("kernel_shape"):
            raise g.fail(node, idx, "missing attribute kernel_shape")
        kernel, strides, padding = _spatial(g, node, idx, attrs, size, list(attrs["kernel_shape"]),
                                            known[2:] if known else None, bool(attrs.get("ceil_mode", 0)))
    if rank == 1:
        size, kernel, strides, padding = [1, *size], [1, *kernel], [1, *strides], [0, *padding]
    if known is None:
        out_hw = [(h + 2 * p - k) // s + 1 for h, p, k, s in zip(size, padding, kernel, strides, strict=True)]
        g.shapes[out0] = (batch, channels, *(out_hw[1:] if rank == 1 else out_hw))
    g.add(node, idx, {"op": "pool", "ifmap": size, "channels": channels, "kernel": kernel,
                      "stride": pair(*strides), "padding": pair(*padding), "batch": batch, "kind": kind})


_BY_NAME: dict[str, Handler] = {"Clip": _clip, "Concat": _concat, "LRN": _lrn, "Gather": _gather, "Gemm": _gemm}
