"""Validation against measured GPUs: predicted vs measured 2:4 speedups, per row and per regime.

Library code: nothing here prints. The input is a CSV in the format of
``shared/reference/gpu/a100_fp16_24_speedups.csv``::

    gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes

with m = rows of the sparse operand A (``nn.Linear`` out_features), n = columns of the dense
operand B (tokens x batch), k = the reduction, and ``speedup = dense_time / sparse_time``. The
``notes`` column starts with a regime tag (``kernel-gemm``, ``inference-linear``,
``decode-regime linear``, ``training fwd+bwd``); an optional ``regime`` column overrides it.

Each row is simulated as a one-GEMM workload, dense and 2:4, on the hardware its GPU name maps
to (:func:`match_gpu`); the predicted speedup is the dense total over the sparse total. Metrics
per GPU / dtype / regime: MAE and MAPE of the speedup, the share of rows on the right side of
1.0x, and Spearman's rank correlation. Rows whose measured speedup exceeds the 2:4 bound (2.0x:
the dense baseline ran below its own peak) are reported but never scored.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.errors import AccelsimError, ConfigError
from accelsim.hardware.model import Hardware
from accelsim.results import dumps_finite
from accelsim.simulation import Simulator, run
from accelsim.workloads.model import DTYPE_BYTES, workload_from_dict

__all__ = [
    "COLUMNS", "MAIN_REGIMES", "KNOWN_REGIMES", "SPARSE_BOUND", "Measurement", "MeasurementError", "match_gpu",
    "metrics", "parse_measurements", "read_measurements", "regime_of", "backend_of", "source_label",
    "spearman", "validate_hw", "format_report", "format_groups", "format_rows", "rows_csv", "predict_row",
    "parse_hw_map", "validate_hw_command",
]

COLUMNS = ("gpu", "dtype", "m", "n", "k", "dense_time_us", "sparse_time_us", "speedup", "source", "notes")
REQUIRED = ("gpu", "dtype", "m", "n", "k", "speedup", "source", "notes")
KNOWN_REGIMES = ("kernel-gemm", "inference-linear", "decode-regime linear", "training fwd+bwd")
# Pure-GEMM regimes: what a one-kernel GEMM model should predict. The others are scored in their own
# table: a decode linear is a GEMV-like kernel with padding, training adds runtime pruning and backward GEMMs.
MAIN_REGIMES = ("kernel-gemm", "inference-linear")
SPARSE_BOUND = 2.0  # 2:4 halves the multiplies; a measured speedup above 2x means a weak dense baseline
SCHEMA_VERSION = 1


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def _number(text: str, path: str, line: int, column: str, kind: type, required: bool) -> Any:
    raw = (text or "").strip()
    if not raw:
        if required:
            raise MeasurementError(path, f"line {line}, column {column}", "is empty")
        return None
    value: float | int | None
    try:
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
    return value


def parse_measurements(text: str, source: str = "<measurements>") -> list[Measurement]:
    """Parse measurement rows from CSV text; raise :class:`MeasurementError` naming the line and column."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise MeasurementError(source, None, "empty file: expected a CSV header " + ",".join(COLUMNS))
    reader.fieldnames = header
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise MeasurementError(source, "header", f"missing column(s) {', '.join(missing)}; expected "
                                                 + ",".join(COLUMNS))
    rows: list[Measurement] = []
    for rec in reader:
        line = reader.line_num
        if None in rec:  # more fields than the header
            raise MeasurementError(source, f"line {line}", f"{len(header) + len(rec[None])} fields, the header "
                                                           f"has {len(header)} (quote fields that contain commas)")
        if all(not (v or "").strip() for v in rec.values()):
            continue
        gpu = (rec.get("gpu") or "").strip()
        if not gpu:
            raise MeasurementError(source, f"line {line}, column gpu", "is empty")
        dtype = (rec.get("dtype") or "").strip().lower()
        if dtype not in DTYPE_BYTES:
            raise MeasurementError(source, f"line {line}, column dtype",
                                   f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
        m, n, k = (_number(rec.get(c, ""), source, line, c, int, True) for c in ("m", "n", "k"))
        dense = _number(rec.get("dense_time_us", ""), source, line, "dense_time_us", float, False)
        sparse = _number(rec.get("sparse_time_us", ""), source, line, "sparse_time_us", float, False)
        speedup = _number(rec.get("speedup", ""), source, line, "speedup", float, dense is None or sparse is None)
        if speedup is None:
            speedup = dense / sparse
        notes = (rec.get("notes") or "").strip()
        regime = (rec.get("regime") or "").strip() or regime_of(notes)
        rows.append(Measurement(line=line, gpu=gpu, dtype=dtype, m=m, n=n, k=k, dense_us=dense, sparse_us=sparse,
                                speedup=float(speedup), source=(rec.get("source") or "").strip(), notes=notes,
                                regime=regime, backend=backend_of(notes)))
    if not rows:
        raise MeasurementError(source, None, "no measurement rows after the header")
    return rows


def read_measurements(path: str | Path) -> list[Measurement]:
    """Read a measurement CSV file (see the module docstring for the format)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8-sig")
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


# ---------------------------------------------------------------------------------------- statistics

def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties get the average of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    ranks[order] = np.arange(1, len(x) + 1, dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson of average ranks); None for < 3 points or a constant side."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if len(x) < 3 or len(x) != len(y):
        return None
    rx, ry = _ranks(x), _ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    den = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    if den == 0.0:
        return None
    return float((rx * ry).sum() / den)


def metrics(predicted: Sequence[float], measured: Sequence[float],
            dense_err: Sequence[float] | None = None, sparse_err: Sequence[float] | None = None) -> dict[str, Any]:
    """Speedup error metrics over paired rows (and, if given, mean |time error| in % per path)."""
    p = np.asarray(predicted, dtype=float)
    y = np.asarray(measured, dtype=float)
    n = len(p)
    out: dict[str, Any] = {"n": n}
    if n == 0:
        out.update(mae=None, mape=None, right_side=None, right_side_rows=0, spearman=None, bias=None, max_abs=None)
        return out
    err = p - y
    out.update(
        mae=float(np.abs(err).mean()),
        mape=float((np.abs(err) / y).mean() * 100.0),
        right_side=float(((p > 1.0) == (y > 1.0)).mean()),
        right_side_rows=int(((p > 1.0) == (y > 1.0)).sum()),
        spearman=spearman(p, y),
        bias=float(err.mean()),
        max_abs=float(np.abs(err).max()),
    )
    for key, vals in (("dense_time_mape", dense_err), ("sparse_time_mape", sparse_err)):
        v = [abs(x) for x in (vals or []) if x is not None]
        out[key] = float(np.mean(v)) if v else None
    return out


# ---------------------------------------------------------------------------------------- simulation

def _gemm(row: Measurement) -> Any:
    return workload_from_dict({"name": f"line{row.line}", "dtype": row.dtype,
                               "layers": [{"name": "gemm", "op": "gemm", "m": row.m, "n": row.n, "k": row.k}]})


def predict_row(row: Measurement, hw: Hardware, simulator: Simulator | None = None,
                sparsity: str = "2:4") -> dict[str, Any]:
    """Simulate one measured shape dense and sparse on ``hw``; predicted times, speedup and the why."""
    sim = simulator or Simulator(hw)
    model = _gemm(row)
    dense = run(model, hw, "dense", simulator=sim).layers[0]
    sparse = run(model, hw, sparsity, simulator=sim).layers[0]
    cyc_d, cyc_s = dense.cycles["total"], sparse.cycles["total"]
    to_us = 1.0 / (hw.clock_ghz * 1e3)
    return {
        "speedup": cyc_d / cyc_s if cyc_s else 1.0,
        "dense_us": cyc_d * to_us, "sparse_us": cyc_s * to_us,
        "dense_cycles": int(cyc_d), "sparse_cycles": int(cyc_s),
        "path": sparse.path, "reason": sparse.reason, "padding": dict(sparse.padding),
        "dense_binding": dense.binding, "sparse_binding": sparse.binding,
        "dense_tile": dense.tiling.get("cta_tile"), "sparse_tile": sparse.tiling.get("cta_tile"),
        "dense_split_k": dense.tiling.get("split_k"), "sparse_split_k": sparse.tiling.get("split_k"),
        "dense_launch_cycles": int(dense.cycles["launch"]), "sparse_launch_cycles": int(sparse.cycles["launch"]),
    }


def _time_err(pred: float, meas: float | None) -> float | None:
    return None if meas is None else (pred - meas) / meas * 100.0


def validate_hw(rows: Sequence[Measurement], hw_map: Mapping[str, Hardware], *,
                main_regimes: Sequence[str] = MAIN_REGIMES, bound: float = SPARSE_BOUND,
                sparsity: str = "2:4", hw_sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Simulate every measured row on its mapped hardware and score the predictions.

    ``hw_map`` maps GPU names (or name prefixes, see :func:`match_gpu`) to hardware configs;
    ``hw_sources`` optionally names the file each came from. Returns a plain dict: ``rows``
    (per row: measured, predicted, error, status), ``groups`` (per GPU / dtype / regime),
    ``main`` (per GPU / dtype over the main regimes), ``overall`` (all scored main-regime rows),
    ``unscored`` and ``notes``.
    """
    if not hw_map:
        raise AccelsimError("validate_hw: the hardware map is empty; give at least one gpu=config")
    sims = {key: Simulator(hw, (hw_sources or {}).get(key, "<hardware>")) for key, hw in hw_map.items()}
    out_rows: list[dict[str, Any]] = []
    for row in rows:
        key = match_gpu(row.gpu, hw_map)
        rec: dict[str, Any] = {
            "line": row.line, "gpu": row.gpu, "hw_key": key, "hw": hw_map[key].name if key else None,
            "dtype": row.dtype, "m": row.m, "n": row.n, "k": row.k, "regime": row.regime,
            "main": row.regime in main_regimes, "backend": row.backend, "source": row.source,
            "source_label": source_label(row.source),
            "measured": {"speedup": row.speedup, "dense_us": row.dense_us, "sparse_us": row.sparse_us},
            "predicted": None, "error": None, "abs_error": None, "ape": None, "right_side": None,
            "dense_time_err_pct": None, "sparse_time_err_pct": None, "scored": False, "status": "scored",
            "message": None,
        }
        if key is None:
            rec.update(status="unmapped", message=f"no --hw-map entry matches GPU {row.gpu!r}")
        else:
            try:
                pred = predict_row(row, hw_map[key], sims[key], sparsity)
            except AccelsimError as exc:  # e.g. a dtype the config has no rate for
                rec.update(status="infeasible", message=str(exc))
            else:
                err = pred["speedup"] - row.speedup
                rec.update(predicted=pred, error=err, abs_error=abs(err), ape=abs(err) / row.speedup * 100.0,
                           right_side=(pred["speedup"] > 1.0) == (row.speedup > 1.0),
                           dense_time_err_pct=_time_err(pred["dense_us"], row.dense_us),
                           sparse_time_err_pct=_time_err(pred["sparse_us"], row.sparse_us))
                if row.speedup > bound:
                    rec.update(status="above_bound",
                               message=f"measured {row.speedup:.3f}x exceeds the 2:4 bound {bound:g}x: the dense "
                                       f"baseline ran below its own peak; reported, not scored")
                else:
                    rec["scored"] = True
        out_rows.append(rec)
    return _summarise(out_rows, list(main_regimes), bound, sparsity, hw_map, hw_sources)


def _group_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["scored"]]
    return metrics([r["predicted"]["speedup"] for r in scored], [r["measured"]["speedup"] for r in scored],
                   [r["dense_time_err_pct"] for r in scored], [r["sparse_time_err_pct"] for r in scored])


def _summarise(rows: list[dict[str, Any]], main_regimes: list[str], bound: float, sparsity: str,
               hw_map: Mapping[str, Hardware], hw_sources: Mapping[str, str] | None) -> dict[str, Any]:
    groups = []
    keys: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["hw_key"] is not None:
            keys.setdefault((r["hw_key"], r["hw"], r["dtype"], r["regime"]), []).append(r)
    regime_order = {name: i for i, name in enumerate(list(main_regimes) + list(KNOWN_REGIMES))}
    for (key, hw, dtype, regime), members in sorted(
            keys.items(), key=lambda kv: (kv[0][0], kv[0][2], regime_order.get(kv[0][3], 99), kv[0][3])):
        groups.append({"gpu": key, "hw": hw, "dtype": dtype, "regime": regime, "main": regime in main_regimes,
                       "rows": len(members), "unscored": sum(1 for r in members if not r["scored"]),
                       **_group_metrics(members)})
    main = []
    per_gd: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["hw_key"] is not None and r["main"]:
            per_gd.setdefault((r["hw_key"], r["hw"], r["dtype"]), []).append(r)
    for (key, hw, dtype), members in sorted(per_gd.items()):
        main.append({"gpu": key, "hw": hw, "dtype": dtype, "regime": "+".join(main_regimes), "main": True,
                     "rows": len(members), "unscored": sum(1 for r in members if not r["scored"]),
                     **_group_metrics(members)})
    overall = _group_metrics([r for r in rows if r["main"]])
    unscored = [{"line": r["line"], "gpu": r["gpu"], "status": r["status"], "message": r["message"]}
                for r in rows if not r["scored"]]
    notes = []
    above = [r for r in rows if r["status"] == "above_bound"]
    notes.append(f"{len(above)} row(s) measured above the 2:4 bound ({bound:g}x) are reported but not scored "
                 f"(dense baseline below its own peak)" + (": lines " + ", ".join(str(r["line"]) for r in above)
                                                           if above else "."))
    for status, text in (("unmapped", "no hardware matched their GPU name"),
                         ("infeasible", "the mapped hardware cannot run them")):
        bad = [r for r in rows if r["status"] == status]
        if bad:
            notes.append(f"{len(bad)} row(s) not scored, {text}: lines " + ", ".join(str(r["line"]) for r in bad))
    other = sorted({r["regime"] for r in rows if not r["main"]})
    if other:
        notes.append("main table = regimes " + ", ".join(main_regimes) + " (pure GEMM kernels); scored separately: "
                     + ", ".join(other) + " (not a single GEMM kernel: see docs/validation.md)")
    return {
        "schema_version": SCHEMA_VERSION, "sparsity": sparsity, "bound": bound, "main_regimes": main_regimes,
        "hardware": {key: {"name": hw.name, "config_hash": hw.config_hash(),
                           "source": (hw_sources or {}).get(key)} for key, hw in hw_map.items()},
        "rows": rows, "groups": groups, "main": main, "overall": overall, "unscored": unscored, "notes": notes,
    }


# ---------------------------------------------------------------------------------------- text

def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _table(header: list[str], body: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in pairs)

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def format_groups(groups: list[dict[str, Any]]) -> str:
    """The per GPU / dtype / regime metrics table."""
    header = ["gpu", "hw", "dtype", "regime", "rows", "scored", "MAE", "MAPE", "right side", "Spearman",
              "bias", "dense t err", "sparse t err"]
    body = []
    for g in groups:
        body.append([g["gpu"], g["hw"], g["dtype"], g["regime"], str(g["rows"]), str(g["n"]),
                     _f(g["mae"], ".3f"), _f(g["mape"], ".1f") + ("%" if g["mape"] is not None else ""),
                     (f"{g['right_side_rows']}/{g['n']} ({g['right_side'] * 100:.0f}%)" if g["n"] else "-"),
                     _f(g["spearman"], ".2f"), _f(g["bias"], "+.3f"),
                     _f(g.get("dense_time_mape"), ".1f") + ("%" if g.get("dense_time_mape") is not None else ""),
                     _f(g.get("sparse_time_mape"), ".1f") + ("%" if g.get("sparse_time_mape") is not None else "")])
    return _table(header, body, {4, 5, 6, 7, 8, 9, 10, 11, 12})


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The per-row table: measured vs predicted speedup and times."""
    header = ["line", "gpu", "regime", "backend", "m", "n", "k", "meas", "pred", "err", "dense us meas/pred",
              "sparse us meas/pred", "status"]
    body = []
    for r in rows:
        p = r["predicted"] or {}
        meas = r["measured"]
        body.append([str(r["line"]), r["gpu"], r["regime"], r["backend"] or "-", str(r["m"]), str(r["n"]),
                     str(r["k"]), f"{meas['speedup']:.3f}", _f(p.get("speedup"), ".3f"), _f(r["error"], "+.3f"),
                     f"{_f(meas['dense_us'], '.1f')} / {_f(p.get('dense_us'), '.1f')}",
                     f"{_f(meas['sparse_us'], '.1f')} / {_f(p.get('sparse_us'), '.1f')}",
                     r["status"] if r["status"] != "scored" else ("main" if r["main"] else "other")])
    return _table(header, body, {0, 4, 5, 6, 7, 8, 9, 10, 11})


def format_report(result: Mapping[str, Any], with_rows: bool = True) -> str:
    """The text report: main table, all groups, notes, and (optionally) every row."""
    parts = ["Main regimes (" + ", ".join(result["main_regimes"]) + ") per GPU / dtype",
             format_groups(result["main"]), "",
             "Per GPU / dtype / regime", format_groups(result["groups"]), ""]
    parts += [f"note: {n}" for n in result["notes"]]
    if with_rows:
        parts += ["", "Per row (speedup = dense / sparse; err = predicted - measured)", format_rows(result["rows"])]
    return "\n".join(parts)


CSV_FIELDS = ("line", "gpu", "hw", "dtype", "m", "n", "k", "regime", "main", "backend", "source_label",
              "measured_speedup", "predicted_speedup", "error", "abs_error", "ape_pct", "right_side",
              "measured_dense_us", "predicted_dense_us", "dense_time_err_pct", "measured_sparse_us",
              "predicted_sparse_us", "sparse_time_err_pct", "sparse_path", "sparse_reason", "dense_binding",
              "sparse_binding", "dense_tile", "sparse_tile", "dense_split_k", "status", "scored", "message", "source")


def rows_csv(result: Mapping[str, Any]) -> str:
    """One CSV line per row (validation.csv)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)

    def num(x: Any, fmt: str = ".6g") -> str:
        return "" if x is None else format(x, fmt)

    def tile(t: Any) -> str:
        return "x".join(str(v) for v in t) if t else ""

    for r in result["rows"]:
        p = r["predicted"] or {}
        meas = r["measured"]
        w.writerow([r["line"], r["gpu"], r["hw"] or "", r["dtype"], r["m"], r["n"], r["k"], r["regime"],
                    int(r["main"]), r["backend"], r["source_label"], num(meas["speedup"]),
                    num(p.get("speedup")), num(r["error"]), num(r["abs_error"]), num(r["ape"]),
                    "" if r["right_side"] is None else int(r["right_side"]), num(meas["dense_us"]),
                    num(p.get("dense_us")), num(r["dense_time_err_pct"]), num(meas["sparse_us"]),
                    num(p.get("sparse_us")), num(r["sparse_time_err_pct"]), p.get("path", ""),
                    p.get("reason") or "", p.get("dense_binding", ""), p.get("sparse_binding", ""),
                    tile(p.get("dense_tile")), tile(p.get("sparse_tile")), p.get("dense_split_k") or "",
                    r["status"], int(r["scored"]), r["message"] or "", r["source"]])
    return buf.getvalue()


# ---------------------------------------------------------------------------------------- CLI handler

def parse_hw_map(items: Sequence[str]) -> tuple[dict[str, Hardware], dict[str, str]]:
    """``["A100=hwconfigs/a100-like.yaml", ...]`` -> ({gpu: Hardware}, {gpu: path})."""
    from accelsim.hardware.model import load_hardware

    hw_map: dict[str, Hardware] = {}
    sources: dict[str, str] = {}
    if not items:
        raise AccelsimError("--hw-map: give at least one GPU=CONFIG, e.g. --hw-map A100=hwconfigs/a100-like.yaml")
    for item in items:
        gpu, sep, path = item.partition("=")
        gpu, path = gpu.strip(), path.strip()
        if not sep or not gpu or not path:
            raise AccelsimError(f"--hw-map: expected GPU=CONFIG (e.g. A100=hwconfigs/a100-like.yaml), got {item!r}")
        if gpu in hw_map:
            raise AccelsimError(f"--hw-map: GPU {gpu!r} is mapped twice")
        hw_map[gpu] = load_hardware(path)
        sources[gpu] = path
    return hw_map, sources


def validate_hw_command(measurements_csv: str | Path, hw_map: Sequence[str],
                        out_dir: str | Path | None = None) -> tuple[int, str]:
    """Handler for ``accelsim validate-hw MEASUREMENTS.csv --hw-map GPU=CONFIG... [--out DIR]``.

    Returns (exit code, text report). Exit 0 when at least one row was scored, 1 when none could
    be (no GPU matched, or every row was unscored). With ``out_dir`` it writes validation.json
    (the whole result), validation.csv (one line per row) and validation_scatter.png/.svg.
    User errors (bad CSV, bad map, bad config) raise :class:`~accelsim.errors.AccelsimError`
    with a one-line message naming the file, line and column.
    """

    rows = read_measurements(measurements_csv)
    hws, sources = parse_hw_map(list(hw_map))
    result = validate_hw(rows, hws, hw_sources=sources)
    result["measurements"] = str(measurements_csv)
    text = format_report(result)
    if out_dir is not None:
        from accelsim.report.validation_plots import save_scatter, scatter_figure

        out = Path(out_dir)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AccelsimError(f"--out {out}: cannot create the directory ({exc.strerror or exc})") from None
        _write_text(out / "validation.json", dumps_finite(result, "validate-hw", indent=2, sort_keys=True) + "\n")
        _write_text(out / "validation.csv", rows_csv(result))
        paths = save_scatter(scatter_figure(result), out)
        text += "\n\nwrote " + ", ".join(str(p) for p in [out / "validation.json", out / "validation.csv", *paths])
    scored = sum(1 for r in result["rows"] if r["scored"])
    return (0 if scored else 1), text


def _write_text(target: Path, text: str) -> None:
    from accelsim.fileio import write_atomic

    write_atomic(target, text)
