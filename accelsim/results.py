"""Result values: per-kernel and per-run, with a versioned JSON form."""

from __future__ import annotations

import functools
import json
import math
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import AccelsimError

SCHEMA_VERSION = 1

# Per-tile record layout (numpy structured array): one row per tile of one core, cycles are
# absolute within the kernel (its launch starts at 0). Systolic parts: fold_r/fold_c/chunk
# locate the tile in the fold schedule. Multi-core parts: the rows are one CTA's k-loop for
# each distinct wave (wave_class); the wave runs wave_count times on active_cores cores, so a
# row's bytes count wave_count * active_cores times in the layer's totals.
TILE_DTYPE = np.dtype([
    ("tile", np.int64), ("fold_r", np.int32), ("fold_c", np.int32), ("chunk", np.int32),
    ("wave_class", np.int32), ("wave_count", np.int64), ("active_cores", np.int32),
    ("load_start", np.float64), ("load_end", np.float64),
    ("decode_start", np.float64), ("decode_end", np.float64),
    ("compute_start", np.float64), ("compute_end", np.float64),
    ("wb_start", np.float64), ("wb_end", np.float64),
    ("compute_cycles", np.float64), ("decode_groups", np.float64),
    ("stall_memory", np.float64), ("stall_decode", np.float64),
    ("dram_a_values", np.float64), ("dram_a_metadata", np.float64), ("dram_b", np.float64),
    ("dram_c_read", np.float64), ("dram_c_write", np.float64),
    ("sram_a_values", np.float64), ("sram_a_metadata", np.float64), ("sram_b", np.float64),
    ("sram_c", np.float64), ("binding", np.int8),
])

BINDING_NAMES = ("compute", "memory", "decode", "launch")


@dataclass
class KernelResult:
    """Simulated cost of one kernel (layer)."""

    name: str
    op: str
    shape: dict[str, int]
    path: str
    pattern_requested: str | None
    pattern_executed: str | None
    reason: str | None
    padding: dict[str, list[int]]
    cycles: dict[str, int]
    macs: int
    macs_executed: int
    utilization: float
    bytes: dict[str, dict[str, int]]
    binding: str
    busy: dict[str, int]
    tiling: dict[str, Any]
    speedup_vs_dense: float = 1.0
    counts: dict[str, float] = field(default_factory=dict)
    tiles: np.ndarray | None = field(default=None, repr=False)
    energy: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON body of this layer (no per-tile records)."""
        return {
            "name": self.name, "op": self.op, "shape": self.shape, "path": self.path,
            "pattern_requested": self.pattern_requested, "pattern_executed": self.pattern_executed,
            "reason": self.reason, "padding": self.padding, "cycles": self.cycles,
            "macs": self.macs, "macs_executed": self.macs_executed,
            "utilization": round(self.utilization, 6), "bytes": self.bytes, "binding": self.binding,
            "busy": self.busy, "tiling": self.tiling,
            "speedup_vs_dense": round(self.speedup_vs_dense, 6),
            **({"energy": self.energy} if self.energy is not None else {}),
        }


@functools.lru_cache(maxsize=1)
def _git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                   capture_output=True, text=True, timeout=5, check=False).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def build_meta(command: list[str] | None = None, hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """The metadata header: versions, commit, config hashes, command. Not part of the body."""
    import numba

    from . import __version__

    return {
        "accelsim_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "config_hashes": hashes or {},
        "command": command or [],
    }


@dataclass
class RunResult:
    """A whole workload on one hardware config: per-layer results and totals."""

    hardware: dict[str, Any]
    workload: dict[str, Any]
    sparsity: str | None
    layers: list[KernelResult]
    clock_ghz: float
    peak_macs_per_cycle: float
    meta: dict[str, Any] = field(default_factory=dict)
    dense_total_cycles: int = 0
    policy: str = "sparse-if-supported"
    footprint: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def total_cycles(self) -> int:
        return sum(r.cycles["total"] for r in self.layers)

    def totals(self) -> dict[str, Any]:
        """Sums over layers and model-level speedup."""
        keys = ("total", "compute", "stall_memory", "stall_decode", "launch")
        cycles = {k: sum(r.cycles[k] for r in self.layers) for k in keys}
        levels = self.layers[0].bytes.keys() if self.layers else []
        by = {lvl: {t: sum(r.bytes[lvl][t] for r in self.layers) for t in self.layers[0].bytes[lvl]}
              for lvl in levels}
        macs = sum(r.macs for r in self.layers)
        execd = sum(r.macs_executed for r in self.layers)
        total = cycles["total"]
        paths: dict[str, int] = {}
        for r in self.layers:
            paths[r.path] = paths.get(r.path, 0) + 1
        fallback = [r for r in self.layers if r.pattern_requested and r.path != "sparse"]
        return {
            "cycles": cycles,
            "latency_us": round(total / (self.clock_ghz * 1e3), 6),
            "macs": macs,
            "macs_executed": execd,
            "utilization": round(execd / (total * self.peak_macs_per_cycle), 6) if total else 0.0,
            "bytes": by,
            "layers": len(self.layers),
            "layers_by_path": dict(sorted(paths.items())),
            "dense_total_cycles": self.dense_total_cycles,
            "speedup_vs_dense": round(self.dense_total_cycles / total, 6) if total else 1.0,
            **({"energy": self.energy_totals()} if self.layers and self.layers[0].energy is not None else {}),
            "fallback": {"layers": len(fallback),
                         "cycles": sum(r.cycles["total"] for r in fallback),
                         "share_of_time": round(sum(r.cycles["total"] for r in fallback) / total, 6)
                         if total else 0.0},
        }

    def energy_totals(self) -> dict[str, Any]:
        """Model energy by component and tensor, power, inferences per joule, and dense vs this run."""
        from .energy import rounded, sum_energy

        seconds = self.total_cycles / (self.clock_ghz * 1e9)
        parts = [r.energy for r in self.layers if r.energy is not None]
        out = sum_energy(parts, seconds)
        dense_j = sum(p["dense_total_j"] for p in parts)
        out["dense_total_j"] = dense_j
        out["perf_per_watt_vs_dense"] = dense_j / out["total_j"] if out["total_j"] else 1.0
        return rounded(out)

    def by_op_type(self) -> list[dict[str, Any]]:
        """Counts and time per (op type, path), largest time first."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        total = self.total_cycles or 1
        for r in self.layers:
            g = groups.setdefault((r.op, r.path), {"op": r.op, "path": r.path, "count": 0, "cycles": 0,
                                                   "dense_cycles": 0, "reasons": {}})
            g["count"] += 1
            g["cycles"] += r.cycles["total"]
            g["dense_cycles"] += round(r.cycles["total"] * r.speedup_vs_dense)
            if r.reason:
                g["reasons"][r.reason] = g["reasons"].get(r.reason, 0) + 1
        out = sorted(groups.values(), key=lambda g: (-g["cycles"], g["op"], g["path"]))
        for g in out:
            g["share_of_time"] = round(g["cycles"] / total, 6)
            g["reasons"] = dict(sorted(g["reasons"].items()))
        return out

    def body(self) -> dict[str, Any]:
        """Everything except ``meta``: byte-identical for identical inputs."""
        return {
            "schema_version": SCHEMA_VERSION,
            "hardware": self.hardware,
            "workload": self.workload,
            "sparsity": self.sparsity,
            "policy": self.policy,
            "layers": [r.to_dict() for r in self.layers],
            "totals": self.totals(),
            "by_op_type": self.by_op_type(),
            "footprint": self.footprint,
            "warnings": self.warnings,
        }

    def to_dict(self) -> dict[str, Any]:
        body = self.body()
        return {"schema_version": body.pop("schema_version"), "meta": self.meta, **body}

    def to_json(self) -> str:
        return dumps_finite(self.to_dict(), "run result", indent=2, sort_keys=False) + "\n"


def dumps_finite(obj: Any, what: str, **kwargs: Any) -> str:
    """``json.dumps`` that never writes NaN / Infinity: a non-finite number raises an AccelsimError
    naming where it is (it would mean a bug upstream, or a config value that escaped validation)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        path, value = _non_finite(obj)
        raise AccelsimError(f"{what}: {path} is {value}, not a finite number; refusing to write it "
                            "(this is a bug in accelsim: please report it with the command line)") from None


def _non_finite(obj: Any) -> tuple[str, float]:
    """(path, value) of the first NaN / infinity in JSON-like ``obj`` (depth first)."""
    stack: list[tuple[str, Any]] = [("(top level)", obj)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return path, node
        if isinstance(node, dict):
            stack.extend(reversed([(f"{path}.{k}" if path != "(top level)" else str(k), v) for k, v in node.items()]))
        elif isinstance(node, list | tuple):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(node)]))
    return "(somewhere)", math.nan
