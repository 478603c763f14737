"""Lowering: each workload op becomes a Kernel with a path (sparse | dense | vector) and the reason."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from accelsim.dtypes import stored_bytes
from accelsim.formats import SparsityFormat, best_container, parse_format
from accelsim.hardware.model import Hardware
from accelsim.hardware.vnm_block import vnm_tile_rows
from accelsim.limits import check_kernel
from accelsim.reasons import FALLBACK_REASONS as FALLBACK_REASONS  # re-exported: lowering.REASON_CODES
from accelsim.reasons import REASON_CODES as REASON_CODES
from accelsim.records import key_function
from accelsim.workloads.attention import attention_groups, causal_roles, visible_pairs
from accelsim.workloads.model import VECTOR_OPS, Gemm, Workload
from accelsim.workloads.quantize import OUT_BYTES, quant_kernel_bytes

# Format families the hardware runs through a section of their own (core.sparse.vnm / .block), not as natives.
STRUCTURED_FAMILIES = ("vnm", "block")
POLICIES = ("sparse-if-supported", "fastest")


@dataclass(frozen=True)
class Kernel:
    """One op as the engine sees it: a GEMM view (array ops) or element work (vector ops)."""

    name: str
    op: str
    m: int
    n: int
    k: int
    dtype: str
    dtype_bytes: float  # an int for whole-byte dtypes; 0.75 / 0.5 for fp6 / fp4, int4 (accelsim.dtypes)
    path: str  # "sparse" | "dense" | "vector"
    pattern_requested: str | None
    pattern_executed: str | None
    reason: str | None
    # the executed format's engine inputs (SparsityFormat.keep / .group): keep_n values kept per group_m
    # positions along k (1/1 when dense), and its metadata bits per kept value
    keep_n: int = 1
    group_m: int = 1
    metadata_bits: int = 0
    padding: dict[str, list[int]] = field(default_factory=dict)
    b_unique: int = 0  # distinct elements of B in memory (conv: the ifmap); 0 = k * n
    batch: int = 1  # independent copies of the GEMM (matmul batch, conv groups)
    weight: bool = True  # A is a weight (False for activation x activation matmuls)
    elements: int = 0  # vector ops: output elements
    vector_ops: float = 0.0  # vector ops: element operations
    read_bytes: int = 0  # vector ops: bytes read
    write_bytes: int = 0  # vector ops: bytes written
    # Formats that are not native patterns (SparsityFormat.native False: channel, unstructured), set by the
    # format's kernel_fields; the defaults are a native N:M or dense kernel's.
    rows_kept: int = 0  # rows of A computed and of C written (channel pruning drops whole rows); 0 = m
    compute_on: str = "sparse"  # datapath of a sparse kernel: "sparse" (the N:M sparse datapath; V:N:M), "dense"
    #   (the dense datapath: channel, load-sparse-compute-dense, block), "vector" (SpMM of the nonzeros on the
    #   vector unit)
    a_density: float = 1.0  # share of A's dense positions stored and moved as values (unstructured); the MACs
    #   shrink by it only on compute_on "vector"
    a_index_bits: float = 0.0  # index bits stored and moved per dense position of A (bitmap ~1, csr)
    a_index: str = ""  # the index encoding those bits are ("bitmap" | "csr"), echoed in results
    a_stage: str = "decode"  # the pipeline stage between load and compute: "decode" (N:M metadata groups at
    #   core.sparse.decode_groups_per_cycle) or "decompress" (each tile's nonzeros placed into a dense tile)
    a_stage_rate: float = 0.0  # a "decompress" stage's values per cycle per core (inf: never binds)
    compute_rate: float = 0.0  # compute_on "vector": MACs per cycle per core of the SpMM; 0 = the kind's rate
    gather_rows: int = 0  # compute_on "vector" with B row gather (engine.rowgather): a CTA's rows of A
    gather_cols: int = 0  # ... and its columns of B (the gathered segment's width); 0: B moves as dense tiles
    gather_rate: float = 0.0  # the row gather's B row segments per cycle per core (inf: never binds)
    # engine inputs of V:N:M and block sparsity (formats/vnm.py, formats/block.py); 0 for every other format.
    # Block formats: keep_n / group_m is the density as a reduced fraction, metadata_bits the bits of one BSR index.
    row_block: int = 0  # rows of A sharing one column selection (V:N:M: V) or forming one block row (block: BM)
    col_select: int = 0  # V:N:M: columns selected, and rows of B gathered, per group of group_m (4)
    col_block: int = 0  # block: columns of A per block (BK); a nonzero block's index selects BK rows of B
    selection_bits: float = 0.0  # V:N:M: column-index metadata bits per kept value, 4 ceil(log2 M) / (V N)
    causal_q: int = 0  # a causal attention group's op: query tokens per head (m = heads x causal_q; query p sees
    #   keys 0 .. n - causal_q + p); 0 = bidirectional. Fused: the kernel skips the hidden K / V tiles.
    c_bytes: float = 0.0  # bytes per element of C as written (a quantized Linear: the activation dtype's, or its
    #   accumulator's when the dequantize is unfused); 0 = dtype_bytes

    @property
    def sparse(self) -> bool:
        return self.path == "sparse"

    @property
    def sparse_datapath(self) -> bool:
        """Runs on the N:M sparse datapath (a native format): its efficiency, tiles, rate and metadata decode."""
        return self.path == "sparse" and self.compute_on == "sparse"

    @property
    def load_sparse(self) -> bool:
        """A moves compressed as values + index per dense position (a_density, a_index_bits)."""
        return self.sparse and (self.a_density < 1.0 or self.a_index_bits > 0.0)

    @property
    def m_exec(self) -> int:
        """Rows of A the kernel computes (and of C it writes): ``rows_kept`` or m."""
        return self.rows_kept or self.m

    @property
    def vector(self) -> bool:
        return self.path == "vector"

    @cached_property
    def executed_format(self) -> SparsityFormat | None:
        """The format the kernel runs (None when not sparse)."""
        return parse_format(self.pattern_executed) if self.sparse else None

    @property
    def n_exec(self) -> int:
        """Columns of B the kernel computes: n, or n padded to the library's alignment."""
        return self.padding["n"][1] if "n" in self.padding else self.n

    @property
    def b_elements(self) -> int:
        """Distinct B elements: the ifmap for a conv (im2col duplicates them), else k * n."""
        return min(self.b_unique, self.k * self.n) if self.b_unique else self.k * self.n

    @property
    def absorbed(self) -> bool:
        """An op fused into an attention kernel (``fused_attention``): it runs nothing of its own."""
        return self.m == 0 and self.elements == 0

    @property
    def products(self) -> int:
        """GEMMs of m x n x k per batch entry: 2 for fused attention (QK^T and PV), else 1."""
        return 2 if self.op == "attention" else 1

    @cached_property
    def macs(self) -> int:
        """Dense-equivalent multiply-accumulates of the op, wherever it runs (also a vector-unit depthwise conv)."""
        return self.m * self.n * self.k * self.batch * self.products

    @property
    def k_padded(self) -> int:
        """k padded to whole groups (block formats: to whole blocks)."""
        unit = self.col_block or self.group_m
        return -(-self.k // unit) * unit

    @property
    def k_compressed(self) -> int:
        """Reduction length A keeps after compression: ceil(k / M) * N (block formats: density x padded k)."""
        if self.col_block:
            return max(1, round(self.keep_n * self.k_padded / self.group_m))
        return -(-self.k // self.group_m) * self.keep_n

    @cached_property
    def macs_executed(self) -> int:  # the array's: none on the vector unit (a depthwise conv there keeps its macs)
        if self.op == "attention" and self.causal_q:  # fused causal: the products the mask keeps
            return (self.m // self.causal_q) * visible_pairs(self.causal_q, self.n) * self.k * self.batch * 2
        macs = 0 if self.vector else self.m_exec * self.n * self.k_compressed * self.batch * self.products
        return round(macs * self.a_density) if self.sparse and self.compute_on == "vector" else macs

    def as_dense(self, reason: str | None = None) -> Kernel:
        """The same op run dense: the baseline for speedup_vs_dense (without ``reason``: one Kernel, built once)."""
        if reason is None:
            return self._dense
        if self.vector or self.path == "dense":
            return Kernel(**{**asdict(self), "reason": reason})
        return self._dense_twin(reason)

    @cached_property
    def _dense(self) -> Kernel:
        return self if self.vector or self.path == "dense" else self._dense_twin(None)

    def _dense_twin(self, reason: str | None) -> Kernel:
        return Kernel(self.name, self.op, self.m, self.n, self.k, self.dtype, self.dtype_bytes, "dense",
                      self.pattern_requested if reason else None, None, reason, b_unique=self.b_unique,
                      batch=self.batch, weight=self.weight, causal_q=self.causal_q, c_bytes=self.c_bytes)

    def cache_key(self) -> tuple[Any, ...]:
        """The kernel's value without its labels (``LABELS``): a simulation cache key.

        Derived from the fields, so a field added to Kernel is part of the key unless it is a label.
        """
        return self._key

    @cached_property
    def _key(self) -> tuple[Any, ...]:
        return _KEY(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Fields of a Kernel that only label it: the engine's numbers never depend on them (a run relabels a cached result).
LABELS = frozenset({"name", "reason", "pattern_requested"})
_KEY = key_function(Kernel, LABELS)


@dataclass(frozen=True)
class LoweringTarget:
    """Everything lowering reads of a Hardware, and nothing else.

    Lowering sees only this value (a Hardware is turned into one first), so two configs with the
    same target lower every model alike: the target is the lowering cache key, by construction.
    """

    natives: tuple[SparsityFormat, ...] | None  # native formats, config order; None: no sparse datapath
    formats: tuple[tuple[str, Any], ...]  # (family key, core.sparse.formats entry) of the non-native formats listed
    metadata_bits: tuple[int, ...]  # metadata bits per kept value of each native format
    pattern_dtypes: tuple[tuple[str, ...] | None, ...]  # element types each native format runs; None: all
    sparse_dtypes: tuple[str, ...] | None  # element types the sparse datapath runs; None: all
    weight_shape_multiple: tuple[int, int]  # (m, k) the sparse operand must be multiples of
    dense_operand_align: int
    vector_ops_per_element: tuple[tuple[str, float], ...]
    depthwise: str  # where depthwise convs run: "array" | "vector"
    attention: str = "unfused"  # "fused": attention groups run as one kernel (fused_attention)
    vnm_runs_on: SparsityFormat | None = None  # the native pattern V:N:M runs on; None: no V:N:M
    vnm_tile_rows: tuple[int, ...] = ()  # V must be a multiple of one of these (V:N:M CTA M tiles / array width)
    block_multiple: tuple[int, int] | None = None  # (m, k) multiples of a block's sides; None: no block sparsity
    block_dtypes: tuple[str, ...] | None = None  # element types the block-sparse kernel runs; None: all


def lowering_target(hw: Hardware | LoweringTarget) -> LoweringTarget:
    """What lowering reads of ``hw`` (a LoweringTarget is returned as is)."""
    if isinstance(hw, LoweringTarget):
        return hw
    spec = hw.core.sparse
    natives = tuple(spec.native()) if spec is not None else None
    listed = spec.formats.model_dump(exclude_none=True) if spec is not None and spec.formats is not None else {}
    return LoweringTarget(
        natives=natives, formats=tuple((key, getattr(spec.formats, key)) for key in listed),  # type: ignore[union-attr]
        metadata_bits=tuple(spec.metadata_bits(p) for p in natives or ()) if spec is not None else (),
        pattern_dtypes=tuple(_pattern_dtypes(spec.native()[p].dtypes) for p in natives or ())
        if spec is not None else (),
        sparse_dtypes=tuple(spec.dtypes) if spec is not None and spec.dtypes is not None else None,
        weight_shape_multiple=(1, 1) if spec is None else (spec.weight_shape_multiple.m, spec.weight_shape_multiple.k),
        dense_operand_align=spec.dense_operand_align if spec is not None else 1,
        vector_ops_per_element=tuple(sorted(hw.vector.ops_per_element.items())), depthwise=hw.vector.depthwise,
        attention=hw.attention.form, **_structured_target(hw))


def _structured_target(hw: Hardware) -> dict[str, Any]:
    """The LoweringTarget fields of the V:N:M and block sections (core.sparse.vnm / .block)."""
    spec = hw.core.sparse
    out: dict[str, Any] = {}
    if spec is not None and spec.vnm is not None:
        out["vnm_runs_on"] = parse_format(spec.vnm.runs_on)
        out["vnm_tile_rows"] = vnm_tile_rows(hw.core.compute, spec.vnm)
    if spec is not None and spec.block is not None:
        out["block_multiple"] = (spec.block.block_multiple.m, spec.block.block_multiple.k)
        out["block_dtypes"] = None if spec.block.dtypes is None else tuple(spec.block.dtypes)
    return out


def _pattern_dtypes(dtypes: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if dtypes is None else tuple(dtypes)


def natives_for(target: LoweringTarget, dtype: str) -> tuple[SparsityFormat, ...]:
    """The native formats that run element type ``dtype`` (a format's own ``dtypes``, else the datapath's)."""
    out = []
    for fmt, own in zip(target.natives or (), target.pattern_dtypes, strict=True):
        allowed = own if own is not None else target.sparse_dtypes
        if allowed is None or dtype in allowed:
            out.append(fmt)
    return tuple(out)


def resolve_pattern(requested: SparsityFormat | None, hw: Hardware | LoweringTarget,
                    dtype: str | None = None) -> tuple[SparsityFormat | None, str | None]:
    """Native format that runs ``requested`` on ``hw`` (None = dense) and the reason code.

    With ``dtype``, only the native formats that run that element type are candidates.
    """
    if requested is None:
        return None, None
    target = lowering_target(hw)
    natives = target.natives
    if not requested.native:  # the format lowers itself (kernel_fields), from the part's entry when it needs one
        if requested.needs_support and natives is None:
            return None, "no_sparse_support"
        if requested.needs_support and format_support(target, requested) is None:
            return None, "format_unsupported"
        return requested, None
    if natives is None:
        return None, "no_sparse_support"
    if requested.key in STRUCTURED_FAMILIES:
        return resolve_structured(requested, target, dtype)
    if dtype is not None:
        natives = natives_for(target, dtype)
    if requested in natives:
        return requested, None
    container = best_container(requested, natives)
    if container is None:
        return None, "pattern_unsupported"
    return container, "pattern_promoted"


def format_support(target: LoweringTarget, fmt: SparsityFormat) -> Any | None:
    """The part's core.sparse.formats entry for ``fmt``'s family, or None."""
    return dict(target.formats).get(fmt.key)


def _non_native_kernel(layer: Any, m: int, n: int, k: int, dtype: str, e: float, req_str: str | None,
                       executed: SparsityFormat, target: LoweringTarget, b_unique: int, batch: int = 1,
                       weight: bool = True) -> Kernel:
    """A kernel of a format that is not a native pattern: its own engine inputs (kernel_fields), no N:M padding."""
    fields = executed.kernel_fields(m, k, format_support(target, executed))
    return Kernel(layer.name, layer.op, m, n, k, dtype, e, "sparse", req_str, str(executed), None,
                  b_unique=b_unique, batch=batch, weight=weight, **fields)
def resolve_structured(requested: SparsityFormat, target: LoweringTarget,
                       dtype: str | None = None) -> tuple[SparsityFormat | None, str | None]:
    """How the part runs a V:N:M or block-sparse request (its own section, not a native pattern): the executed
    format and the reason code, or None and the fallback reason."""
    if requested.key == "vnm":
        base = target.vnm_runs_on
        if base is None:
            return None, "format_unsupported"
        if dtype is not None and target.sparse_dtypes is not None and dtype not in target.sparse_dtypes:
            return None, "dtype_unsupported"
        if dtype is not None and base not in natives_for(target, dtype):
            return None, "pattern_unsupported"
        n = getattr(requested, "n", base.keep)
        if n > base.keep:
            return None, "pattern_unsupported"
        if not any(requested.v % t == 0 for t in target.vnm_tile_rows):  # type: ignore[attr-defined]
            return None, "block_shape_misaligned"
        executed = parse_format(f"{requested.v}:{base.keep}:{requested.m}")  # type: ignore[attr-defined]
        return executed, None if executed == requested else "pattern_promoted"
    if target.block_multiple is None:
        return None, "format_unsupported"
    if dtype is not None and target.block_dtypes is not None and dtype not in target.block_dtypes:
        return None, "dtype_unsupported"
    mult_m, mult_k = target.block_multiple
    if requested.rows % mult_m or requested.cols % mult_k:  # type: ignore[attr-defined]
        return None, "block_shape_misaligned"
    return requested, None


def _structured_fields(executed: SparsityFormat, target: LoweringTarget) -> dict[str, Any]:
    """The Kernel fields of an executed V:N:M or block format: keep/group, metadata bits and the engine inputs."""
    if executed.key == "vnm":
        base = target.vnm_runs_on
        bits = target.metadata_bits[target.natives.index(base)]  # type: ignore[union-attr, arg-type]
        return {"keep_n": executed.keep, "group_m": executed.group, "metadata_bits": bits,
                "row_block": executed.v, "col_select": executed.select,  # type: ignore[attr-defined]
                "selection_bits": executed.selection_bits_per_value()}  # type: ignore[attr-defined]
    # block: dense tiles over the nonzero blocks, on the dense datapath (its efficiency, MMA shape, launch, energy)
    return {"keep_n": executed.keep, "group_m": executed.group, "metadata_bits": executed.default_metadata_bits,
            "row_block": executed.rows, "col_block": executed.cols, "compute_on": "dense"}  # type: ignore[attr-defined]


def _structured_padding(m: int, k: int, fields_: dict[str, Any]) -> dict[str, list[int]]:
    """Rows padded to whole row blocks, k to whole groups (V:N:M) or blocks."""
    padding: dict[str, list[int]] = {}
    rb = fields_["row_block"]
    if m % rb:
        padding["m"] = [m, -(-m // rb) * rb]
    unit = fields_.get("col_block") or fields_["group_m"]
    if k % unit:
        padding["k"] = [k, -(-k // unit) * unit]
    return padding


def dtype_fallback_note(kernels: list[Kernel], dtype: str, hw: Hardware | LoweringTarget) -> str | None:
    """A warning when layers asked for a pattern the hardware runs natively, but not in ``dtype`` (e.g. 2:4 in
    fp4 on a part whose fp4 sparse datapath is 4:8-paired): they ran dense (pattern_unsupported)."""
    target = lowering_target(hw)
    hit = [k for k in kernels if k.reason == "pattern_unsupported" and k.pattern_requested
           and resolve_pattern(parse_format(k.pattern_requested), target)[0] is not None]
    if not hit:
        return None
    runs = natives_for(target, dtype)
    asked = ", ".join(sorted({str(k.pattern_requested) for k in hit}))
    text = (f"{dtype} runs sparse on this hardware only as {', '.join(map(str, runs)) or 'nothing'} "
            f"(core.sparse.patterns.*.dtypes): {len(hit):,} layer(s) asking for {asked} ran dense "
            "(pattern_unsupported)")
    return text + (f"; ask for {runs[0]} to run them sparse" if runs else "")


def dtype_unsupported_note(kernels: list[Kernel], hw: Hardware | LoweringTarget) -> str | None:
    """A warning when layers asked for a pattern the hardware runs, but not in their element type: the sparse
    datapath (or the block kernel) does not list it, so they ran dense (dtype_unsupported). Names the key."""
    target = lowering_target(hw)
    out = []
    for dtype in sorted({k.dtype for k in kernels if k.reason == "dtype_unsupported" and k.pattern_requested}):
        hit = [k for k in kernels if k.reason == "dtype_unsupported" and k.pattern_requested and k.dtype == dtype]
        block = all(getattr(parse_format(str(k.pattern_requested)), "key", None) == "block" for k in hit)
        key, listed = (("core.sparse.block.dtypes", target.block_dtypes) if block
                       else ("core.sparse.dtypes", target.sparse_dtypes))
        asked = ", ".join(sorted({str(k.pattern_requested) for k in hit}))
        out.append(f"the sparse datapath does not run {dtype} in this config ({key}: {', '.join(listed or ())}): "
                   f"{len(hit):,} layer(s) asking for {asked} ran dense (dtype_unsupported); {key} (and the "
                   f"pattern's own dtypes, where it lists them) would have to list {dtype} to run them sparse")
    return "; ".join(out) or None


def _vector_kernel(layer: Any, dtype: str, e: float, target: LoweringTarget, requested: str | None,
                   reason: str | None, cache_bytes: float | None = None) -> Kernel:
    ops_table = dict(target.vector_ops_per_element)
    op = layer.op
    if op == "conv2d":  # depthwise on the vector unit
        oh, ow = layer.output_hw()
        out = layer.filters * oh * ow * layer.batch
        window = layer.kernel[0] * layer.kernel[1]
        ops = out * window * ops_table["depthwise"]
        reads = layer.ifmap[0] * layer.ifmap[1] * layer.channels * layer.batch + layer.filters * window
        writes = out
    elif op == "embedding":
        out = layer.tokens * layer.dim
        ops, reads, writes = out * ops_table["embedding"], out, out
    elif op == "pool":
        oh, ow = layer.output_hw()
        out = layer.channels * oh * ow * layer.batch
        ops = out * layer.kernel[0] * layer.kernel[1] * ops_table["pool"]
        reads = layer.ifmap[0] * layer.ifmap[1] * layer.channels * layer.batch
        writes = out
    elif op in ("quantize", "dequantize"):  # dynamic quantization (accelsim.workloads.quantize)
        return _quant_kernel(layer, dtype, e, requested, reason)
    elif op == "kv_write":  # KV-cache append: read in the workload dtype, written in the cache's
        out = layer.elements
        ops = out * ops_table["elementwise"]
        return Kernel(layer.name, op, 0, 0, 0, dtype, e, "vector", requested, None, reason, elements=int(out),
                      vector_ops=float(ops), read_bytes=stored_bytes(out, e),
                      write_bytes=stored_bytes(out, e if cache_bytes is None else cache_bytes))
    else:
        out = layer.elements
        key = layer.function if op == "activation" else op
        ops = out * ops_table[key]
        reads = out * (layer.inputs if op == "elementwise" else 1)
        writes = out
    return Kernel(layer.name, op, 0, 0, 0, dtype, e, "vector", requested, None, reason, elements=int(out),
                  vector_ops=float(ops), read_bytes=stored_bytes(reads, e), write_bytes=stored_bytes(writes, e))


def _quant_kernel(layer: Any, dtype: str, e: float, requested: str | None, reason: str | None) -> Kernel:
    """A quantize / dequantize layer: its bytes (accelsim.workloads.quantize) and ops."""
    reads, writes = quant_kernel_bytes(layer, e)
    return Kernel(layer.name, layer.op, 0, 0, 0, dtype, e, "vector", requested, None, reason,
                  elements=int(layer.elements), vector_ops=float(layer.elements * layer.ops_per_element),
                  read_bytes=reads, write_bytes=writes)


def lower_layer(layer: Any, dtype: str, dtype_bytes: float, requested_text: str | None,
                hw: Hardware | LoweringTarget, kept_dense: bool = False, cache_bytes: float | None = None) -> Kernel:
    """One op to a Kernel. ``requested_text`` is the plan's format for it (None = dense).

    ``cache_bytes``: bytes per element of the KV cache (the workload's kv_dtype; None = ``dtype_bytes``).
    A ``kv_write`` writes at it; a matmul marked ``kv_cache`` (decode attention reading K or V from the
    cache) moves all its operands at it while keeping ``dtype`` -- the MMA rate -- as deployed fp8 / int8
    KV-cache kernels dequantize in registers. Its Q and score operands take the cache's bytes too: a small
    error at decode (m = query heads per KV head, against K's head_dim x kv_len).
    """
    e = dtype_bytes
    target = lowering_target(hw)
    if layer.op in VECTOR_OPS:
        return _vector_kernel(layer, dtype, e, target, None, None, cache_bytes)
    m, n, k = layer.gemm_shape()
    batch = layer.batch if layer.op == "matmul" else layer.groups if layer.op == "conv2d" else 1
    b_unique = layer.ifmap_elements() if layer.op == "conv2d" else 0
    requested = parse_format(requested_text) if requested_text else None
    req_str = str(requested) if requested else None
    if layer.op == "conv2d" and layer.groups > 1:
        reason = "op_no_sparse_kernel" if requested else None
        if layer.depthwise and target.depthwise == "vector":  # keeps its GEMM view: macs are its work
            return replace(_vector_kernel(layer, dtype, e, target, req_str, reason), m=m, n=n, k=k, batch=batch)
        return Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", req_str, None, reason, b_unique=b_unique,
                      batch=batch)
    if layer.op == "matmul":
        if layer.kv_cache and cache_bytes is not None:
            e = cache_bytes
        return Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", req_str, None,
                      "activation_operands" if requested else None, batch=batch, weight=False)
    if kept_dense:
        return Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", None, None, "kept_dense", b_unique=b_unique)
    if requested is not None and requested.key in STRUCTURED_FAMILIES:  # V:N:M, block: their own sections
        executed, reason = resolve_pattern(requested, target, dtype)
        if executed is None:
            return Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", req_str, None, reason, b_unique=b_unique)
        extra = _structured_fields(executed, target)
        padding = _structured_padding(m, k, extra)
        reason = reason or ("k_padded" if "k" in padding else "m_padded" if "m" in padding else None)
        return Kernel(layer.name, layer.op, m, n, k, dtype, e, "sparse", req_str, str(executed), reason,
                      padding=padding, b_unique=b_unique, **extra)
    executed, reason = resolve_pattern(requested, target)
    if executed is not None and not executed.native:
        return _non_native_kernel(layer, m, n, k, dtype, e, req_str, executed, target, b_unique)
    if executed is not None:
        mult_m, mult_k = target.weight_shape_multiple
        if target.sparse_dtypes is not None and dtype not in target.sparse_dtypes:
            executed, reason = None, "dtype_unsupported"
        else:  # the native formats that run this dtype (e.g. fp4 runs only 4:8-paired)
            executed, reason = resolve_pattern(requested, target, dtype)
            if executed is not None and (m % mult_m or k % mult_k):
                executed, reason = None, "shape_below_minimum"
    if executed is None:
        return Kernel(layer.name, layer.op, m, n, k, dtype, e, "dense", req_str, None, reason, b_unique=b_unique)
    bits = target.metadata_bits[target.natives.index(executed)]  # type: ignore[union-attr]
    padding = _sparse_padding(n, k, executed, target.dense_operand_align)
    if padding:
        reason = reason or ("n_padded" if "n" in padding else "k_padded")
    return Kernel(layer.name, layer.op, m, n, k, dtype, e, "sparse", req_str, str(executed), reason,
                  executed.keep, executed.group, bits, padding, b_unique)


def _sparse_padding(n: int, k: int, executed: SparsityFormat, align: int) -> dict[str, list[int]]:
    """Padding of a sparse kernel: n up to the library's dense-operand alignment, k up to whole groups."""
    padding: dict[str, list[int]] = {}
    if n % align:
        padding["n"] = [n, -(-n // align) * align]
    k_padded = executed.k_padded(k)
    if k_padded != k:
        padding["k"] = [k, k_padded]
    return padding


def sparse_view(layer: Any, dtype: str, dtype_bytes: float, requested_text: str,
                hw: Hardware | LoweringTarget) -> Kernel | None:
    """The op's GEMM view run sparse on the native format containing ``requested_text``, whatever the op,
    dtype and shape rules say (no reason code): for what-if analyses. None when no native format contains it.
    A native format that runs ``dtype`` is preferred."""
    target = lowering_target(hw)
    requested = parse_format(requested_text)
    executed, _ = resolve_pattern(requested, target, dtype)
    if executed is None:
        executed, _ = resolve_pattern(requested, target)
    if executed is None or layer.op in VECTOR_OPS:
        return None
    m, n, k = layer.gemm_shape()
    batch = layer.batch if layer.op == "matmul" else layer.groups if layer.op == "conv2d" else 1
    b_unique = layer.ifmap_elements() if layer.op == "conv2d" else 0
    if not executed.native:
        return _non_native_kernel(layer, m, n, k, dtype, dtype_bytes, requested_text, executed, target, b_unique,
                                  batch, layer.op != "matmul")
    if executed.key in STRUCTURED_FAMILIES:
        extra = _structured_fields(executed, target)
        return Kernel(layer.name, layer.op, m, n, k, dtype, dtype_bytes, "sparse", requested_text, str(executed),
                      None, padding=_structured_padding(m, k, extra), b_unique=b_unique, batch=batch,
                      weight=layer.op != "matmul", **extra)
    bits = target.metadata_bits[target.natives.index(executed)]  # type: ignore[union-attr]
    return Kernel(layer.name, layer.op, m, n, k, dtype, dtype_bytes, "sparse", requested_text, str(executed), None,
                  executed.keep, executed.group, bits, _sparse_padding(n, k, executed, target.dense_operand_align),
                  b_unique, batch, layer.op != "matmul")


def lower(model: Workload, hw: Hardware | LoweringTarget, sparsity: str | None = None) -> list[Kernel]:
    """Lower every op; ``sparsity`` (a format spelling or 'dense') overrides the workload's plan."""
    target = lowering_target(hw)
    kernels = []
    fused = fused_attention_roles(model, target)
    causal = causal_roles(model.layers, model.attention)
    for i, layer in enumerate(model.layers):
        kept = False
        if sparsity is not None:
            requested = None if sparsity == "dense" else sparsity
        else:
            requested = layer.sparsity if layer.sparsity is not None else model.sparsity
            if requested == "dense":
                kept = layer.sparsity == "dense" and model.sparsity not in (None, "dense")
                requested = None
        if i in fused:
            kernel = fused_attention(model, fused[i], requested, target)
        elif isinstance(layer, Gemm) and layer.dtype is not None:  # a quantized Linear: A, B, rate in its dtype
            kernel = lower_layer(layer, *model.layer_dtype(layer), requested, target, kept)
            kernel = replace(kernel, c_bytes=OUT_BYTES[layer.out_dtype or model.dtype])
        else:
            kernel = lower_layer(layer, model.dtype, model.dtype_bytes, requested, target, kept, model.kv_dtype_bytes)
        if i in causal and not kernel.absorbed:  # eager (unfused) ops compute the full product, then mask
            kernel = replace(kernel, causal_q=causal[i])
        check_kernel(kernel, model.name, i)
        kernels.append(kernel)
    return kernels


# -- fused attention (issue 19; accelsim.hardware.attention, accelsim.engine.attention) ---------------------

def fused_attention_roles(model: Workload, target: LoweringTarget) -> dict[int, tuple[int, int, int]]:
    """On a target whose attention is fused: for each layer of an attention group (workloads.attention),
    ``(its index, the group's first, the group's last)``; empty otherwise."""
    if target.attention != "fused":
        return {}
    return {i: (i, first, last) for first, last in attention_groups(model.layers) for i in range(first, last + 1)}


def fused_attention(model: Workload, role: tuple[int, int, int], requested: str | None,
                    target: LoweringTarget) -> Kernel:
    """The kernel of one layer of an attention group: the group's first layer (QK^T) becomes the fused kernel,
    softmax(Q K^T) V in one pass (op ``attention``: m query rows, n keys, k head dim, ``batch`` heads; MACs
    2 m n k batch; ``vector_ops`` the score ops' work, which never leaves the chip); the others are absorbed
    (zero work). The matmuls keep ``activation_operands`` when a plan asks for a pattern."""
    i, first, _ = role
    layer: Any = model.layers[i]
    reason = "activation_operands" if requested and layer.op == "matmul" else None
    req_str = str(parse_format(requested)) if reason else None
    dtype = model.dtype
    e = model.kv_dtype_bytes if getattr(layer, "kv_cache", None) else model.dtype_bytes
    if i != first:
        path = "vector" if layer.op in VECTOR_OPS else "dense"
        return Kernel(layer.name, layer.op, 0, 0, 0, dtype, e, path, req_str, None, reason, weight=False)
    ops_table = dict(target.vector_ops_per_element)
    last = role[2]
    score_ops = sum(ops_table[x.op] for x in model.layers[first + 1:last])  # per score element (elementwise, softmax)
    m, n, k = layer.gemm_shape()
    elements = m * n * layer.batch
    return Kernel(layer.name, "attention", m, n, k, dtype, e, "dense", req_str, None, reason, batch=layer.batch,
                  weight=False, elements=elements, vector_ops=float(elements * score_ops))
