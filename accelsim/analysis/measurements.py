"""Measured dense vs 2:4 GEMM timings on real GPUs: the CSV format, its rows, and which config a GPU maps to.

The CSV (``shared/reference/gpu/a100_fp16_24_speedups.csv``)::

    gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes

with m = rows of the sparse operand A (``nn.Linear`` out_features), n = columns of the dense
operand B (tokens x batch), k = the reduction, and ``speedup = dense_time / sparse_time``. The
``notes`` column starts with a regime tag (``kernel-gemm``, ``inference-linear``,
``decode-regime linear``, ``training fwd+bwd``); an optional ``regime`` column overrides it. An
optional ``format`` column names the row's sparsity format (``64:2:8``, ``block32x32:75%``, ...), an optional
``timing`` column (or a ``timing=X`` tag in the notes) how it was timed: ``framework`` (default) or
``kernel-loop`` (see ``TIMINGS``), an optional ``kernels`` column (or ``kernels=X`` tag) which 2:4 kernels it ran:
``default`` or ``searched`` (see ``KERNEL_CHOICES``; rows of a harness known to search are ``searched``), and an
optional ``c_dtype`` column (or ``c_dtype=X`` tag) what the dense and the 2:4 kernel wrote C as: ``int32/bf16``
(dense / sparse) or one dtype for both (see ``outputs_of``; rows of a harness whose code fixes them get its types),
and an optional ``sparse_isa`` column (or ``sparse_isa=X`` tag) what the 2:4 kernels were compiled for: ``native``
(the part's own 2:4 instruction) or ``sm80`` (Ampere's mma.sp binaries run on a later part; see ``SPARSE_ISAS``).
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from accelsim.config.schema import MAX_DIM
from accelsim.errors import ConfigError
from accelsim.workloads.model import DTYPE_BYTES

COLUMNS = ("gpu", "dtype", "m", "n", "k", "dense_time_us", "sparse_time_us", "speedup", "source", "notes")
REQUIRED = ("gpu", "dtype", "m", "n", "k", "speedup", "source", "notes")
# Columns that say how a row was measured (each also a ``name=X`` notes tag, except regime and format)
OPTIONAL = ("regime", "format", "timing", "kernels", "sparse_isa", "c_dtype")
KNOWN_REGIMES = ("kernel-gemm", "inference-linear", "decode-regime linear", "training fwd+bwd")
# Pure-GEMM regimes: what a one-kernel GEMM model should predict. The others are scored in their own
# table: a decode linear is a GEMV-like kernel with padding, training adds runtime pruning and backward GEMMs.
MAIN_REGIMES = ("kernel-gemm", "inference-linear")
SPEEDUP_RTOL = 0.05  # a speedup column rounded from the times (2 decimals) stays well inside this
SPARSE_BOUND = 2.0  # 2:4 halves the multiplies; a measured speedup above 2x means a weak dense baseline
# Spellings of a dtype that name a variant of one accelsim dtype: fp8's two encodings run at one rate,
# as do fp6's (e2m3, e3m2); fp4 is e2m1.
DTYPE_VARIANTS = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8", "fp6_e2m3": "fp6",
                  "fp6_e3m2": "fp6", "e2m3": "fp6", "e3m2": "fp6", "fp4_e2m1": "fp4", "e2m1": "fp4"}
_PRESUMED = re.compile(r"^(?P<dtype>[a-z0-9_]+)\s*\(presumed\)$")
# How a row was timed (an optional ``timing`` column, else a ``timing=X`` tag in the notes). ``framework``: the
# calibration set's kind (PyTorch-level timings, one call at a time): the fixed cost per kernel is the config's
# launch_overhead_cycles, fitted on such rows. ``kernel-loop``: one kernel launched back to back in a loop, CUDA
# events around the loop, divided by the count (e.g. the VENOM artifact's cuTime): the host launch and framework
# share of the fixed cost hides behind the previous kernel in the stream's queue, so it is not counted; the
# kernel's own prologue and epilogue (first loads, C write-back) are simulated as always.
TIMINGS = ("framework", "kernel-loop")
DEFAULT_TIMING = "framework"
# Which 2:4 kernels a row's harness ran (an optional ``kernels`` column, else a ``kernels=X`` notes tag, else the
# harness its source names): ``default``, the kernel the library's default algorithm picks (PyTorch's calls), or
# ``searched``, the fastest of the library's algorithms, each timed (the config's cta_tiles.sparse_searched).
KERNEL_CHOICES = ("default", "searched")
DEFAULT_KERNELS = "default"
# Harnesses whose code documents a search: SlideSparse's cusparselt_gemm.cu (github:bcacdwk/vllmbench,
# slidesparse/benchmark_kernel/cuSPARSELt) times every cuSPARSELt algorithm id (up to
# CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID) with split-k 1, 2, 4, ... and cusparseLtMatmulSearch's pick, keeps the fastest
# The CUTLASS profiler times every kernel compiled for an operation, and NVIDIA/cutlass#1335 compares "the best
# times" of `--operation=gemm` and `--operation=spgemm`.
SEARCHING_SOURCES = ("github:bcacdwk/vllmbench", "https://github.com/NVIDIA/cutlass/issues/1335")
# What a row's 2:4 kernels were compiled for (an optional ``sparse_isa`` column, else a ``sparse_isa=X`` notes tag,
# else the source's documented kernels): ``native``, the part's own 2:4 instruction (wgmma.sp on Hopper), or
# ``sm80``, Ampere's mma.sp binaries running on a later part (operands through the warps' ldmatrix path: the
# config's core.compute.sm80_sparse).
SPARSE_ISAS = ("native", "sm80")
DEFAULT_SPARSE_ISA = "native"
# Sources whose 2:4 kernels are documented as sm80 binaries on a later part. NVIDIA/cutlass#1335 (H100, CUTLASS
# profiler, CUDA 12.3, 2024-02): the maintainer answers that "we have optimized H100 kernels for dense Gemm but not
# sparse yet" and the sparse kernels run were "Ampere ones recompiled for hopper".
SM80_SPARSE_SOURCES = ("https://github.com/NVIDIA/cutlass/issues/1335",)
# What a harness's dense and 2:4 kernels write C as, per input dtype, where its code fixes it (else C is written in
# the input dtype). SlideSparse: cublaslt_gemm.cu writes int8 GEMMs' C as int32 (CUBLAS_COMPUTE_32I, "INT8 -> INT32")
# and fp8's as bf16; cusparselt_gemm.cu writes both as bf16 (get_out_dtype: "INT8 -> BF16", "FP8 -> BF16")
# (github:bcacdwk/vllmbench slidesparse/benchmark_kernel/cuBLASLt and cuSPARSELt).
HARNESS_OUTPUTS: dict[str, dict[str, tuple[str, str]]] = {
    "github:bcacdwk/vllmbench": {"int8": ("int32", "bf16"), "fp8": ("bf16", "bf16")},
}
OUTPUT_DTYPES = ("fp32", "int32", "fp16", "bf16", "int8", "fp8")  # what a GEMM's C may be written as


class MeasurementError(ConfigError):
    """A measurement CSV is unreadable or a row is invalid (names the file, the line and the column)."""


@dataclass(frozen=True)
class Measurement:
    """One measured dense vs sparse GEMM (or linear layer)."""

    line: int  # 1-based line number in the CSV (the header is line 1)
    gpu: str
    dtype: str
    m: int
    n: int
    k: int
    dense_us: float | None
    sparse_us: float | None
    speedup: float
    source: str
    notes: str
    regime: str
    backend: str
    dtype_written: str | None = None  # the CSV's spelling when it differs (a variant, or "(presumed)")
    format: str | None = None  # the optional `format` column (e.g. "64:2:8"); None: the validation's sparsity
    timing: str = DEFAULT_TIMING  # how it was timed (TIMINGS): the `timing` column, else a `timing=X` notes tag
    kernels: str = DEFAULT_KERNELS  # which 2:4 kernels its harness ran (KERNEL_CHOICES): see kernels_of
    c_dtypes: tuple[str, str] | None = None  # C as the dense / the 2:4 kernel wrote it; None: the input dtype
    sparse_isa: str = DEFAULT_SPARSE_ISA  # what its 2:4 kernels were compiled for (SPARSE_ISAS): see sparse_isa_of
    file: str = ""  # the CSV it was read from, for messages (not in to_dict: results name the file once)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["file"]
        if self.dtype_written is None:
            del d["dtype_written"]
        if self.format is None:
            del d["format"]
        if self.timing == DEFAULT_TIMING:
            del d["timing"]
        if self.kernels == DEFAULT_KERNELS:
            del d["kernels"]
        if self.sparse_isa == DEFAULT_SPARSE_ISA:
            del d["sparse_isa"]
        if self.c_dtypes is None:
            del d["c_dtypes"]
        else:
            d["c_dtypes"] = "/".join(self.c_dtypes)
        return d


def _choice(name: str, column: str, notes: str, choices: tuple[str, ...], fallback: str, path: str,
            line: int) -> str:
    """A row's ``name`` property: its column, else a ``name=X`` tag in the notes, else ``fallback``; one of
    ``choices`` (an empty column or tag value is refused, not skipped)."""
    raw = (column or "").strip()
    where = f"column {name}"
    tag = notes_tag(name, notes, path, line)
    if raw and tag is not None and tag.lower() != raw.lower():
        raise MeasurementError(path, f"line {line}, column {name}", f"{raw!r} disagrees with the notes tag "
                                                                    f"{name}={tag} (give one)")
    if not raw:
        raw, where = (tag, f"column notes ({name}=)") if tag is not None else (fallback, "")
    if raw.lower() not in choices:
        raise MeasurementError(path, f"line {line}, {where}", f"unknown {name} {raw!r}; known: {', '.join(choices)}")
    return raw.lower()


def notes_tag(name: str, notes: str, path: str, line: int) -> str | None:
    """The value of a ``name=X`` tag in a row's notes (the key in any case), None without one; a tag given twice
    with different values is refused."""
    values = re.findall(rf"(?:^|[;,\s]){name}\s*=\s*([^;,\s]*)", notes or "", flags=re.IGNORECASE)
    if len({v.lower() for v in values}) > 1:
        raise MeasurementError(path, f"line {line}, column notes", f"the tag {name}= is given {len(values)} times "
                                                                   f"with different values ({', '.join(values)})")
    return values[0] if values else None


def timing_of(column: str, notes: str, path: str, line: int) -> str:
    """The row's timing method: the ``timing`` column, else a ``timing=X`` notes tag, else ``framework``."""
    return _choice("timing", column, notes, TIMINGS, DEFAULT_TIMING, path, line)


def kernels_of(column: str, notes: str, source_column: str, path: str, line: int) -> str:
    """The 2:4 kernels a row's harness ran: the ``kernels`` column, else a ``kernels=X`` notes tag, else
    ``searched`` for a source in SEARCHING_SOURCES, else ``default``."""
    searching = any(source_column.startswith(s) for s in SEARCHING_SOURCES)
    return _choice("kernels", column, notes, KERNEL_CHOICES, "searched" if searching else DEFAULT_KERNELS, path,
                   line)


def sparse_isa_of(column: str, notes: str, source_column: str, path: str, line: int) -> str:
    """What a row's 2:4 kernels were compiled for: the ``sparse_isa`` column, else a ``sparse_isa=X`` notes tag,
    else ``sm80`` for a source in SM80_SPARSE_SOURCES, else ``native``."""
    sm80 = any(source_column.startswith(s) for s in SM80_SPARSE_SOURCES)
    return _choice("sparse_isa", column, notes, SPARSE_ISAS, "sm80" if sm80 else DEFAULT_SPARSE_ISA, path, line)


def outputs_of(column: str, notes: str, source_column: str, dtype: str, path: str,
               line: int) -> tuple[str, str] | None:
    """What the row's dense and 2:4 kernels wrote C as: the ``c_dtype`` column, else a ``c_dtype=X`` notes tag
    (``dense/sparse`` or one dtype for both), else the harness's types for a source in HARNESS_OUTPUTS, else None
    (the input dtype)."""
    raw = (column or "").strip()
    where = "column c_dtype"
    tag = notes_tag("c_dtype", notes, path, line)
    if raw and tag is not None and tag.lower() != raw.lower():
        raise MeasurementError(path, f"line {line}, column c_dtype", f"{raw!r} disagrees with the notes tag "
                                                                     f"c_dtype={tag} (give one)")
    if not raw:
        if tag is None:
            for source, table in HARNESS_OUTPUTS.items():
                if source_column.startswith(source) and dtype in table:
                    return table[dtype]
            return None
        raw, where = tag, "column notes (c_dtype=)"
    parts = [p.strip().lower() for p in raw.split("/")]
    if len(parts) not in (1, 2) or any(p not in OUTPUT_DTYPES for p in parts):
        raise MeasurementError(path, f"line {line}, {where}", f"expected DTYPE or DENSE/SPARSE with dtypes from "
                                                              f"{', '.join(OUTPUT_DTYPES)}, got {raw!r}")
    return (parts[0], parts[-1])


def canonical_dtype(written: str) -> str:
    """The accelsim dtype a CSV spelling names: ``fp8_e4m3`` -> ``fp8``, ``fp16 (presumed)`` -> ``fp16``."""
    text = written.strip().lower()
    presumed = _PRESUMED.match(text)
    if presumed:
        text = presumed.group("dtype")
    return DTYPE_VARIANTS.get(text, text)


# ---------------------------------------------------------------------------------------- reading

def regime_of(notes: str) -> str:
    """The regime tag a notes field starts with: a known tag, else its first clause without parentheses."""
    text = (notes or "").strip()
    low = text.lower()
    for tag in KNOWN_REGIMES:
        if low.startswith(tag):
            return tag
    head = re.split(r"[;,]", text, maxsplit=1)[0]
    head = re.sub(r"\(.*?\)", "", head).strip()
    return head or "unknown"


def backend_of(notes: str) -> str:
    """The sparse backend named in the notes (``backend=X``, else cuSPARSELt / CUTLASS if mentioned)."""
    m = re.search(r"backend\s*=\s*([A-Za-z0-9_.+-]+)", notes or "")
    if m:
        return m.group(1)
    low = (notes or "").lower()
    if "cusparselt" in low:
        return "cuSPARSELt"
    if "cutlass" in low:
        return "CUTLASS"
    return ""


def source_label(source: str) -> str:
    """A short label for a source: ``owner/repo``, ``owner/repo#N`` for an issue or PR, else its first word."""
    s = (source or "").strip()
    m = re.search(r"github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/(\d+)", s)
    if m:
        return f"{m.group(1)}#{m.group(2)}"
    m = re.search(r"github:([\w.-]+/[\w.-]+)", s)
    if m:
        return m.group(1)
    m = re.search(r"github\.com/([\w.-]+/[\w.-]+)", s)
    if m:
        return m.group(1)
    first = s.split()[0] if s.split() else "unknown"
    return first[:40]


_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# What a measured row may hold: a dimension up to accelsim's per-dimension limit, a time between a nanosecond and
# about eleven days (in us), a speedup between 1e-4 and 1e4 (outside those a number is a typo or an overflow).
TIME_RANGE_US = (1e-3, 1e12)
SPEEDUP_RANGE = (1e-4, 1e4)


def _number(text: str, path: str, line: int, column: str, kind: type, required: bool) -> Any:
    raw = (text or "").strip()
    if not raw:
        if required:
            raise MeasurementError(path, f"line {line}, column {column}", "is empty")
        return None
    value: float | int | None
    try:
        if not _PLAIN_NUMBER.fullmatch(raw):  # float() also takes "6_4", "nan", "infinity"
            raise ValueError(raw)
        value = float(raw)
        if kind is int:
            if not value.is_integer():
                raise ValueError(raw)
            value = int(value)
    except ValueError:
        value = None
    if value is None or (kind is float and not math.isfinite(value)):
        what = "an integer" if kind is int else "a number"
        raise MeasurementError(path, f"line {line}, column {column}", f"expected {what}, got {raw!r}")
    if value <= 0:
        raise MeasurementError(path, f"line {line}, column {column}", f"must be greater than 0, got {raw!r}")
    low, high = ((1, MAX_DIM) if kind is int else SPEEDUP_RANGE if column == "speedup" else TIME_RANGE_US)
    shown = f"{low:,} .. {high:,}" if kind is int else f"{low:g} .. {high:g}"
    if not low <= value <= high:
        raise MeasurementError(path, f"line {line}, column {column}", f"{raw} is outside {shown}"
                                                                      + (" (accelsim's per-dimension limit)"
                                                                         if kind is int else ""))
    return value


def parse_measurements(text: str, source: str = "<measurements>") -> list[Measurement]:
    """Parse measurement rows from CSV text; raise :class:`MeasurementError` naming the line and column."""
    # the csv module's own line endings (\r\n, \n, \r); strict: an unterminated quote is an error, not a field that
    # swallows the rows after it
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        return _parse_rows(reader, source)
    except csv.Error as exc:  # e.g. a stray quote or carriage return inside a field
        raise MeasurementError(source, f"line {reader.line_num + 1}", f"not valid CSV ({exc})") from None


def _parse_rows(reader: csv.DictReader[str], source: str) -> list[Measurement]:
    """The rows of ``reader`` (a DictReader over the CSV text) as measurements."""
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise MeasurementError(source, None, "empty file: expected a CSV header " + ",".join(COLUMNS))
    reader.fieldnames = header
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:  # csv.DictReader would keep the last one without a word
        raise MeasurementError(source, "header", f"column(s) {', '.join(twice)} appear more than once")
    for name in header:  # other columns are the user's own; one spelled like a known column is a typo
        if name not in COLUMNS + OPTIONAL:
            near = difflib.get_close_matches(name.lower(), COLUMNS + OPTIONAL, n=1, cutoff=0.8)
            if _TIME_LIKE.search(name.lower()):  # dense_us, sparse_ms, dense_time_ms: not one of the time columns
                raise MeasurementError(source, "header", f"unknown column {name!r}: times go in dense_time_us and "
                                                         f"sparse_time_us, in microseconds")
            if near:
                raise MeasurementError(source, "header", f"unknown column {name!r}: did you mean {near[0]!r}? "
                                                         f"(a column of another name is ignored)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise MeasurementError(source, "header", f"missing column(s) {', '.join(missing)}; expected "
                                                 + ",".join(COLUMNS))
    rows: list[Measurement] = []
    for rec in reader:
        # a quoted field may span lines: the row is named by the line it starts on
        line = reader.line_num - sum(len(_LINE_BREAK.findall(v)) for v in rec.values() if isinstance(v, str))
        if None in rec:  # more fields than the header
            raise MeasurementError(source, f"line {line}", f"{len(header) + len(rec[None])} fields, the header "
                                                           f"has {len(header)} (quote fields that contain commas)")
        if all(not (v or "").strip() for v in rec.values()):
            continue
        gpu = (rec.get("gpu") or "").strip()
        if not gpu:
            raise MeasurementError(source, f"line {line}, column gpu", "is empty")
        written = (rec.get("dtype") or "").strip()
        dtype = canonical_dtype(written)
        if dtype not in DTYPE_BYTES:
            raise MeasurementError(source, f"line {line}, column dtype",
                                   f"unknown dtype {written.lower()!r}; known: {', '.join(DTYPE_BYTES)} "
                                   f"(and {', '.join(DTYPE_VARIANTS)}; 'X (presumed)')")
        m, n, k = (_number(rec.get(c, ""), source, line, c, int, True) for c in ("m", "n", "k"))
        dense = _number(rec.get("dense_time_us", ""), source, line, "dense_time_us", float, False)
        sparse = _number(rec.get("sparse_time_us", ""), source, line, "sparse_time_us", float, False)
        speedup = _number(rec.get("speedup", ""), source, line, "speedup", float, dense is None or sparse is None)
        if speedup is None:
            speedup = dense / sparse
        elif dense is not None and sparse is not None and abs(speedup * sparse / dense - 1.0) > SPEEDUP_RTOL:
            raise MeasurementError(source, f"line {line}, column speedup", f"{speedup:g} disagrees with "
                                   f"dense_time_us / sparse_time_us = {dense / sparse:.4g} (by more than "
                                   f"{SPEEDUP_RTOL:.0%}; leave speedup empty to compute it)")
        notes = (rec.get("notes") or "").strip()
        src = (rec.get("source") or "").strip()
        regime = (rec.get("regime") or "").strip() or regime_of(notes)
        rows.append(Measurement(line=line, gpu=gpu, dtype=dtype, m=m, n=n, k=k, dense_us=dense, sparse_us=sparse,
                                speedup=float(speedup), source=src, notes=notes,
                                regime=regime, backend=backend_of(notes),
                                dtype_written=written if written.lower() != dtype else None,
                                format=(rec.get("format") or "").strip() or None,
                                timing=timing_of(rec.get("timing") or "", notes, source, line),
                                kernels=kernels_of(rec.get("kernels") or "", notes, src, source, line),
                                sparse_isa=sparse_isa_of(rec.get("sparse_isa") or "", notes, src, source, line),
                                c_dtypes=outputs_of(rec.get("c_dtype") or "", notes, src, dtype, source, line),
                                file=source))
    if not rows:
        raise MeasurementError(source, None, "no measurement rows after the header")
    return rows


_TIME_LIKE = re.compile(r"(^|_)time(_|$)|^(dense|sparse).*_[mun]?s$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
MAX_CSV_BYTES = 64 << 20  # a measurement file larger than this is not a table of GEMM timings


def read_measurements(path: str | Path) -> list[Measurement]:
    """Read a measurement CSV file (see the module docstring for the format)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_CSV_BYTES + 1)
        if len(data) > MAX_CSV_BYTES:
            raise MeasurementError(str(path), None, f"larger than {MAX_CSV_BYTES >> 20} MB: not a measurement table")
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise MeasurementError(str(path), None, "file not found") from None
    except IsADirectoryError:
        raise MeasurementError(str(path), None, "is a directory, expected a CSV file") from None
    except UnicodeDecodeError:
        raise MeasurementError(str(path), None, "not UTF-8 text, expected a CSV file") from None
    except OSError as exc:
        raise MeasurementError(str(path), None, f"cannot read: {exc.strerror or exc}") from None
    return parse_measurements(text, str(path))


# ---------------------------------------------------------------------------------------- matching

def gpu_name(key: str) -> str:
    """The GPU a hw-map key names: ``A100@vllmbench`` -> ``A100`` (a key without ``@`` is its own name)."""
    return key.partition("@")[0]


def match_row(row: Measurement, keys: Iterable[str]) -> str | None:
    """The hw-map key for a measured row. A key ``GPU@SOURCE`` takes the rows of GPU whose source contains
    SOURCE (case-insensitive; e.g. ``A100@vllmbench`` for the SlideSparse rows, measured on PCIe parts), a key
    ``GPU@backend=NAME`` the rows of GPU whose backend (``backend=NAME`` in the notes) is NAME (case-insensitive;
    e.g. ``RTX 3090@backend=Sputnik``: one source's rows of another kernel); other rows of GPU take the plain key
    (:func:`match_gpu`)."""
    keys = list(keys)
    best = None
    for key in keys:
        gpu, sep, source = key.partition("@")
        want = source.lower()
        backend = want[len("backend="):] if want.startswith("backend=") else None
        hit = backend == row.backend.lower() != "" if backend is not None else want in row.source.lower()
        if sep and source and match_gpu(row.gpu, [gpu]) is not None and hit:
            if best is None or len(key) > len(best):
                best = key
    return best if best is not None else match_gpu(row.gpu, [k for k in keys if "@" not in k])


def match_gpu(gpu: str, keys: Iterable[str]) -> str | None:
    """The hw-map key for a row's GPU name: the exact name, else the longest key that is a prefix of it.

    A prefix must end at a word boundary: ``A100`` matches ``A100 80GB`` and ``A100 (presumed)``
    but not ``A1000``. Matching is case-sensitive first, then case-insensitive.
    """
    keys = list(keys)
    if gpu in keys:
        return gpu
    for fold in (False, True):
        name = gpu.lower() if fold else gpu
        best = None
        for key in keys:
            kk = key.lower() if fold else key
            if kk and name.startswith(kk) and (len(name) == len(kk) or not name[len(kk)].isalnum()
                                               or not kk[-1].isalnum()):
                if best is None or len(key) > len(best):
                    best = key
        if best is not None:
            return best
    return None
