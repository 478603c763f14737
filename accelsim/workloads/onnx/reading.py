"""Reading an ONNX file for import: the model (never its weight data), symbolic dims sized, the element type.

``onnx`` is an optional dependency: it is imported inside :func:`require_onnx` only.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelsim import limits
from accelsim.errors import AccelsimError, ConfigError
from accelsim.textsafe import printable, short_repr
from accelsim.workloads.onnx.optypes import FLOAT_DTYPES, INT_DTYPES

Shape = tuple[int, ...]

MAX_DIM = 2**31 - 1  # accelsim's limit per dimension (workload sizes, as for YAML configs)


class OnnxImportError(ConfigError):
    """The ONNX file cannot be imported (unreadable, not ONNX, or a shape the importer cannot resolve)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(source, None, problem)


def require_onnx() -> Any:
    """The ``onnx`` module, or an AccelsimError saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise AccelsimError("import-onnx needs the 'onnx' package: pip install 'onnx>=1.15'") from None
    return onnx


def prod(values: Sequence[int]) -> int:
    """The product of sizes (1 for none)."""
    out = 1
    for v in values:
        out *= int(v)
    return out


def pair(a: int, b: int) -> int | list[int]:
    """One value when both are equal, else ``[a, b]`` (how workloads write per-axis sizes)."""
    return a if a == b else [a, b]


def one_line(text: Any) -> str:
    """The first line of a message (an exception from onnx may span many)."""
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else type(text).__name__


def sanitize(name: str) -> str:
    """An ONNX node or file name as a workload name: ``/`` as ``.``, odd characters as ``_``."""
    s = name.strip().strip("/").replace("/", ".")
    s = re.sub(r"[^A-Za-z0-9_.:\-]", "_", s)
    return re.sub(r"\.{2,}", ".", s).strip(".")


def check_params(params: dict[str, Any] | None, src: str) -> dict[str, int]:
    """The --set parameters as dimension sizes (positive integers up to 2^31-1)."""
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


def read_model_bytes(path: str | Path, src: str) -> bytes:
    """The bytes of a regular file of at most MAX_ONNX_BYTES (never blocks on a FIFO or reads a device)."""
    cap = limits.MAX_ONNX_BYTES
    too_big = f"; ONNX files are limited to {cap:,} bytes ({cap // 2**30} GiB, protobuf's limit: larger " \
              "models keep their weights as external data)"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise OnnxImportError(src, "file not found") from None
    except OSError as exc:
        raise OnnxImportError(src, f"cannot read: {exc.strerror or one_line(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OnnxImportError(src, "is a directory, expected an .onnx file")
    if not stat.S_ISREG(st.st_mode):
        raise OnnxImportError(src, "is not a regular file (a device, pipe or socket); expected an .onnx file")
    if st.st_size > cap:
        raise OnnxImportError(src, f"file is {st.st_size:,} bytes{too_big}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced since the stat above
                raise OnnxImportError(src, "is not a regular file; expected an .onnx file")
            raw = _read_capped(fh, st.st_size, cap)
    except OSError as exc:
        raise OnnxImportError(src, f"cannot read: {exc.strerror or one_line(exc)}") from None
    except MemoryError:
        raise OnnxImportError(src, f"not enough memory to read its {st.st_size:,} bytes") from None
    if len(raw) > cap:
        raise OnnxImportError(src, f"file is larger than {cap:,} bytes{too_big}")
    return raw


def check_name(name: str, src: str) -> str:
    """A --name for the workload: non-empty printable text (no newline, ESC or other control character)."""
    if not name.strip():
        raise ConfigError(src, "--name", "must not be empty (a workload needs a name)")
    if printable(name) != name:
        raise ConfigError(src, "--name", f"{short_repr(name)} contains a control character (a newline, ESC or "
                                         "similar); a workload name is printable text")
    return name


def _read_capped(fh: Any, size: int, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of ``fh``, asking for the stat'ed ``size`` first: ``read(n)`` allocates ``n``
    bytes up front, so one ``read(cap + 1)`` would reserve 2 GiB for any model (and fail under a memory limit)."""
    chunks: list[bytes] = []
    total, want = 0, size + 1
    while total <= cap:
        chunk = fh.read(min(max(want, 1 << 16), cap + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 20  # the file grew since the stat: go on in 1 MiB steps
    return b"".join(chunks)


def load_model(onnx: Any, path: str | Path, src: str) -> Any:
    """The ONNX model at ``path`` without its external weight data; one-line errors naming ``src``."""
    raw = read_model_bytes(path, src)
    try:
        model = onnx.load_model_from_string(raw)
    except MemoryError:
        raise OnnxImportError(src, f"not enough memory to parse its {len(raw):,} bytes") from None
    except Exception as exc:  # protobuf DecodeError and friends
        raise OnnxImportError(src, f"not an ONNX model (cannot parse it as an ONNX protobuf: {one_line(exc)})") \
            from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError(src, "not an ONNX model (no graph nodes; empty or not an ONNX file)")
    return model


def tensor_dims(value_info: Any) -> Any:
    """The repeated dim field of a tensor value_info, or None when it has no shape."""
    t = value_info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return t.tensor_type.shape.dim


def resolve_symbolic(model: Any, params: dict[str, int], src: str, notes: list[str]) -> dict[str, int]:
    """Give every symbolic input dim a size, in place; return the sizes used by parameter name."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in init_names]
    batch = params.get("batch", 1)
    mapping: dict[str, int] = {}
    used: set[str] = set()
    batch_dims: list[str] = []
    for vi in inputs:  # pass 1: the leading dim is the batch
        dims = tensor_dims(vi)
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
        dims = tensor_dims(vi)
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
        for i, d in enumerate(tensor_dims(vi) or ()):
            if d.HasField("dim_value") and not 1 <= d.dim_value <= MAX_DIM:
                raise OnnxImportError(src, f"input {vi.name!r} dim {i} is {d.dim_value:,}; every dimension must be "
                                           "between 1 and 2^31-1")
    for vi in [*graph.output, *graph.value_info]:  # keep declared shapes consistent with the inputs
        for d in tensor_dims(vi) or ():
            if not d.HasField("dim_value") and d.dim_param in mapping:
                d.dim_value = mapping[d.dim_param]
    if batch_dims:
        how = f"--set batch={batch}" if "batch" in params else "the default; use --set batch=N to change it"
        notes.append(f"batch = {batch} ({how}) for symbolic dim {', '.join(batch_dims)}")
    elif "batch" in params:
        notes.append(f"batch={batch} was given but no input has a symbolic leading dim; the model's fixed shapes "
                     "are used")
    return {k: (batch if k == "batch" else params[k]) for k in sorted(used)}


def workload_dtype(graph: Any, notes: list[str]) -> str:
    """The workload element type the graph's inputs and initializers use (fp32 when none says)."""
    types = [vi.type.tensor_type.elem_type for vi in graph.input if vi.type.HasField("tensor_type")]
    types += [t.data_type for t in graph.initializer]
    for t in types:
        if t in FLOAT_DTYPES:
            if t == 11:
                notes.append("the model is float64; costed as fp32")
            return FLOAT_DTYPES[t]
    for t in types:
        if t in INT_DTYPES:
            return INT_DTYPES[t]
    notes.append("no float or int8 input/initializer found; dtype set to fp32")
    return "fp32"


def known_shape(value_info: Any) -> Shape | None:
    """A value's shape when every dim is a known size, else None."""
    dims = tensor_dims(value_info)
    if dims is None:
        return None
    out = []
    for d in dims:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return None
        out.append(int(d.dim_value))
    return tuple(out)
