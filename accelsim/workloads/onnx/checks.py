"""Checks every node passes before the importer reads it: graph order, arity, axes, element counts.

A hostile or broken graph (a node missing an input, an axis past the rank, a cycle) must end in one line
naming the node, never an IndexError deep in a handler. :func:`graph_order` orders the nodes (refusing a
cycle or a value written twice); :func:`check_node` checks a node's inputs, outputs and ``axis`` attribute;
:func:`check_axes` and :func:`check_same_elements` serve the shape code.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from accelsim.workloads.onnx.optypes import ELEMENTWISE
from accelsim.workloads.onnx.reading import OnnxImportError, Shape, prod

# (least, most) inputs of the standard ops the importer reads by position; most None: no upper bound.
# Every other standard op takes at least one input (Constant none); custom-domain ops are not checked.
ARITY: dict[str, tuple[int, int | None]] = {
    "MatMul": (2, 2), "MatMulInteger": (2, 4), "QLinearMatMul": (8, 8),
    "Conv": (2, 3), "ConvInteger": (2, 4), "QLinearConv": (8, 9),
    "Gemm": (2, 3), "Gather": (2, 2), "PRelu": (2, 2), "Clip": (1, 3), "Constant": (0, 0),
    **{op: (2, 2) for op in ELEMENTWISE if op != "Sum"},
}
# ops whose ``axis`` attribute indexes the rank of input 0 (Flatten's may also equal the rank)
AXIS_OPS = {"Concat", "Softmax", "LogSoftmax", "Gather", "LayerNormalization", "Flatten", "Split"}


def node_label(node: Any, idx: int) -> str:
    """How errors name a node: its name, else ``OpType_index``."""
    return node.name or f"{node.op_type}_{idx}"


def _node_error(src: str, node: Any, idx: int, problem: str) -> OnnxImportError:
    return OnnxImportError(src, f"node {node_label(node, idx)!r} ({node.op_type}): {problem}")


def check_node(src: str, node: Any, idx: int, shape_of: Any) -> None:
    """A standard-domain node has the inputs the importer reads, an output, and an ``axis`` within the rank.

    ``shape_of(name)`` is the known shape of a value (None when unknown).
    """
    least, most = ARITY.get(node.op_type, (1, None))
    have = len(node.input)
    if have < least or (most is not None and have > most):
        word, n = ("", least) if least == most else ("at least ", least) if have < least else ("at most ", most)
        raise _node_error(src, node, idx, f"expects {word}{n} input{'' if n == 1 else 's'}, has {have}")
    empty = next((i for i in range(least) if not node.input[i]), None)
    if empty is not None:
        raise _node_error(src, node, idx, f"input {empty} is empty (the name ''), but the op requires it")
    if not node.output or not node.output[0]:
        raise _node_error(src, node, idx, "has no output (output 0 is missing or empty)")
    if node.op_type in AXIS_OPS:
        axis = next((a.i for a in node.attribute if a.name == "axis"), None)
        first = shape_of(node.input[0])
        if axis is not None and first is not None:
            rank = len(first) + (1 if node.op_type == "Flatten" else 0)
            if not -rank <= axis < rank:
                raise _node_error(src, node, idx, f"attribute axis {axis} is out of range for input "
                                                  f"{node.input[0]!r} of shape {list(first)} (rank {len(first)})")


def check_axes(fail: Any, axes: Sequence[int], rank: int, what: str) -> list[int]:
    """``axes`` as non-negative indices into ``rank`` dims, each once; ``fail(problem)`` builds the error."""
    out = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in out):
        raise fail(f"{what} {list(axes)} is out of range for rank {rank}")
    if len(set(out)) != len(out):
        raise fail(f"{what} {list(axes)} names an axis twice")
    return out


def check_same_elements(fail: Any, first: Shape, out: Shape, out_name: str) -> None:
    """A layout op (Reshape, Transpose, ...) keeps the element count of its input."""
    if prod(first) != prod(out):
        n = prod(out)
        raise fail(f"output {out_name!r} of shape {list(out)} has {n:,} element{'' if n == 1 else 's'} but the input "
                   f"has {prod(first):,} (shape {list(first)}); a layout op keeps the element count")


def graph_order(src: str, nodes: Sequence[Any]) -> list[int]:
    """The node indices in an order where every value is written before it is read (graph order when it
    already is); an error naming a node when a value is written twice or the nodes form a cycle."""
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for o in node.output:
            if not o:
                continue
            if o in producer:
                raise _node_error(src, node, i, f"output {o!r} is already written by node "
                                                f"{node_label(nodes[producer[o]], producer[o])!r}; every value "
                                                "must have one producer")
            producer[o] = i
    deps = [{producer[x] for x in _reads(node) if x in producer} for node in nodes]
    if all(d < i for i, ds in enumerate(deps) for d in ds):
        return list(range(len(nodes)))  # already sorted: the common case
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(ds) for ds in deps]
    for i, ds in enumerate(deps):
        for d in ds:
            users[d].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) == len(nodes):
        return order
    cycle = _a_cycle(deps, {i for i, n in enumerate(waiting) if n > 0})
    k = cycle.index(min(cycle))
    cycle = cycle[k:] + cycle[:k]  # from the first such node in graph order
    names = " -> ".join(repr(node_label(nodes[i], i)) for i in [*cycle, cycle[0]])
    first = cycle[0]
    raise _node_error(src, nodes[first], first, f"is in a cycle ({names}); an ONNX graph must be acyclic")


def _reads(node: Any) -> Iterable[str]:
    return (x for x in node.input if x)


def _a_cycle(deps: Sequence[set[int]], stuck: set[int]) -> list[int]:
    """One cycle among the ``stuck`` nodes (each waits on another stuck node), in dependency order."""
    start = min(stuck)
    seen: dict[int, int] = {}
    path: list[int] = []
    i = start
    while i not in seen:
        seen[i] = len(path)
        path.append(i)
        i = min(d for d in deps[i] if d in stuck)
    return list(reversed(path[seen[i]:]))
