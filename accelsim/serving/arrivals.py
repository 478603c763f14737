"""Request streams: size distributions (``fixed``, ``uniform``, ``choice``), seeded Poisson arrivals, and
CSV traces to replay.

Arrivals are drawn up front as arrays (unit-rate exponentials divided by the rate), so every rate sees the
same sample path scaled in time: common random numbers, which keep the capacity search monotone.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from accelsim.errors import ConfigError
from accelsim.serving.config import ServingError
from accelsim.serving.limits import MAX_REQUEST_SIZE, check_sizes

__all__ = ["parse_size_spec", "sample_sizes", "poisson_arrivals", "read_trace", "trace_column"]


def parse_size_spec(spec: Any) -> dict[str, Any]:
    """Normalise a size distribution: 128, "fixed:128", "uniform:32:512", "choice:128,256[@w1,w2]" or a dict."""
    given = spec
    if isinstance(spec, bool):
        raise ServingError(f"size spec: expected a number or a distribution, got {spec!r}")
    if isinstance(spec, int | np.integer):
        spec = {"kind": "fixed", "value": int(spec)}
    elif isinstance(spec, str):
        text = spec.strip()
        kind, _, rest = text.partition(":")
        kind = kind.strip().lower()
        try:
            if kind.isdigit() and not rest:
                spec = {"kind": "fixed", "value": int(kind)}
            elif kind == "fixed":
                spec = {"kind": "fixed", "value": int(rest)}
            elif kind == "uniform":
                low, _, high = rest.partition(":")
                spec = {"kind": "uniform", "low": int(low), "high": int(high)}
            elif kind == "choice":
                vals, _, weights = rest.partition("@")
                spec = {"kind": "choice", "values": [int(v) for v in vals.split(",")]}
                if weights:
                    spec["weights"] = [float(w) for w in weights.split(",")]
            else:
                raise ValueError
        except ValueError:
            raise ServingError(f"size spec {text!r}: expected N, fixed:N, uniform:LOW:HIGH or "
                                "choice:A,B,C[@wA,wB,wC]") from None
    if not isinstance(spec, Mapping) or spec.get("kind") not in ("fixed", "uniform", "choice"):
        raise ServingError(f"size spec {spec!r}: expected kind fixed, uniform or choice")
    shown = given.strip() if isinstance(given, str) else spec  # errors quote the text as the user gave it
    try:
        return _checked_spec(dict(spec), shown, given)
    except (TypeError, ValueError, OverflowError):
        raise ServingError(f"size spec {shown!r}: expected whole numbers of tokens (and finite weights)") from None


def _checked_spec(out: dict[str, Any], spec: Any, given: Any) -> dict[str, Any]:
    """A size spec dict's fields checked and normalised (TypeError / ValueError on a non-number); ``spec`` is
    what messages quote."""
    if out["kind"] == "fixed":
        if int(out.get("value", 0)) < 1:
            raise ServingError(f"size spec {spec!r}: value must be >= 1")
        res: dict[str, Any] = {"kind": "fixed", "value": int(out["value"])}
        check_sizes(res, given)
        return res
    if out["kind"] == "uniform":
        lo, hi = int(out.get("low", 0)), int(out.get("high", 0))
        if not 1 <= lo <= hi:
            raise ServingError(f"size spec {spec!r}: need 1 <= low <= high")
        res = {"kind": "uniform", "low": lo, "high": hi}
        check_sizes(res, given)
        return res
    values = [int(v) for v in out.get("values", [])]
    if not values or min(values) < 1:
        raise ServingError(f"size spec {spec!r}: choice needs values >= 1")
    res = {"kind": "choice", "values": values}
    if out.get("weights") is not None:
        w = [float(x) for x in out["weights"]]
        if len(w) != len(values) or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
            raise ServingError(f"size spec {spec!r}: weights must match values, be finite, >= 0 and not all 0")
        res["weights"] = [x / sum(w) for x in w]
    check_sizes(res, given)
    return res


def sample_sizes(spec: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` integer sizes from a size spec (inclusive bounds for uniform)."""
    s = parse_size_spec(spec)
    if s["kind"] == "fixed":
        return np.full(n, s["value"], dtype=np.int64)
    if s["kind"] == "uniform":
        return rng.integers(s["low"], s["high"] + 1, size=n, dtype=np.int64)
    return rng.choice(np.asarray(s["values"], dtype=np.int64), size=n, p=s.get("weights"))


def _unit_arrivals(n: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival epochs of a unit-rate Poisson process (n of them)."""
    return np.cumsum(rng.standard_exponential(n))


def poisson_arrivals(rate: float, rng: np.random.Generator, *, duration_s: float | None = None,
                     requests: int | None = None) -> np.ndarray:
    """Poisson arrival times (s): exactly ``requests`` of them, or all before ``duration_s``."""
    if not rate > 0 or not math.isfinite(rate):
        raise ServingError(f"rate must be > 0 requests/s, got {rate!r}")
    if requests is not None:
        if requests < 1:
            raise ServingError(f"requests must be >= 1, got {requests}")
        return _unit_arrivals(int(requests), rng) / rate
    if duration_s is None or not duration_s > 0:
        raise ServingError(f"duration must be > 0 simulated seconds, got {duration_s!r}")
    mean = rate * duration_s
    chunk = max(1024, int(mean + 8 * math.sqrt(mean) + 16))
    out = _unit_arrivals(chunk, rng)
    while out[-1] < mean:  # rare: draw more of the same stream
        out = np.concatenate([out, out[-1] + _unit_arrivals(chunk, rng)])
    out = out[: int(np.searchsorted(out, mean, side="left"))] / rate
    return out


def read_trace(path: str | Path) -> dict[str, np.ndarray]:
    """Read a CSV trace: a header row with ``arrival_s`` (non-decreasing seconds) and numeric size columns."""
    src = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # a spreadsheet's byte-order mark is dropped
            rows = list(csv.reader(fh))
    except FileNotFoundError:
        raise ConfigError(src, None, "file not found") from None
    except UnicodeDecodeError:
        raise ConfigError(src, None, "not UTF-8 text, expected a CSV trace") from None
    except csv.Error as exc:
        raise ConfigError(src, None, f"not a readable CSV trace ({exc})") from None
    except OSError as exc:
        raise ConfigError(src, None, f"cannot read: {exc.strerror}") from None
    if not rows or "arrival_s" not in [h.strip() for h in rows[0]]:
        raise ConfigError(src, None, "a trace needs a header row with an 'arrival_s' column")
    head = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if r and any(c.strip() for c in r)]
    if not body:
        raise ConfigError(src, None, "trace has no rows")
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(head):
        try:
            cols[name] = np.asarray([float(r[j]) for r in body], dtype=np.float64)
        except (ValueError, IndexError):
            if name == "arrival_s":
                raise ConfigError(src, "arrival_s", "every row needs a number here") from None
            # kept as text, so that reading it as sizes names the row (trace_column) instead of ignoring it
            cols[name] = np.asarray([r[j] if j < len(r) else "" for r in body], dtype=object)
    arr = cols["arrival_s"]
    if arr[0] < 0 or np.any(np.diff(arr) < 0) or not np.all(np.isfinite(arr)):
        raise ConfigError(src, "arrival_s", "arrival times must be finite, >= 0 and non-decreasing")
    return cols


def _is_number(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def trace_column(cols: Mapping[str, np.ndarray], names: Sequence[str], src: str) -> np.ndarray | None:
    """The first of ``names`` that ``cols`` has, checked as integer sizes >= 1; None if it has none."""
    for name in names:
        if name in cols:
            col = cols[name]
            if col.dtype == object:
                bad = next(i for i, v in enumerate(col) if not _is_number(v))
                raise ConfigError(src, name, f"row {bad + 1} after the header: expected a number of tokens, got "
                                  f"{str(col[bad])!r}")
            if np.any(col < 1) or np.any(col != np.round(col)):
                raise ConfigError(src, name, "sizes must be integers >= 1")
            if np.any(col > MAX_REQUEST_SIZE):
                raise ConfigError(src, name, f"a request of {int(col.max()):,} tokens is above the limit of "
                                  f"{MAX_REQUEST_SIZE:,} tokens per request")
            return col.astype(np.int64)
    return None

