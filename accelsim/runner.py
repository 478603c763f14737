"""Run a workload on a hardware config: lower, simulate each kernel (and its dense baseline)."""

from __future__ import annotations

from collections.abc import Callable

from .engine import simulate
from .hardware import Hardware
from .lowering import Kernel, lower
from .results import KernelResult, RunResult, build_meta
from .workload import Workload


def peak_macs_per_cycle(hw: Hardware, dtype: str) -> float:
    """Dense MACs per cycle of the whole part for ``dtype``."""
    comp = hw.core.compute
    if comp.kind == "tensor_core":
        return float(comp.macs_per_cycle.get(dtype, 0.0)) * hw.cores
    return float(comp.rows * comp.cols * hw.cores)


def run(model: Workload, hw: Hardware, sparsity: str | None = None, *, hw_source: str = "<hardware>",
        keep_tiles: bool = False, progress: Callable[[int, int], None] | None = None,
        command: list[str] | None = None) -> RunResult:
    """Simulate every layer of ``model`` on ``hw`` (plus each layer's dense baseline)."""
    kernels = lower(model, hw, sparsity)
    cache: dict[tuple, KernelResult] = {}

    def sim(kernel: Kernel) -> KernelResult:
        key = kernel.cache_key()
        hit = cache.get(key)
        if hit is None or keep_tiles:
            hit = simulate(kernel, hw, hw_source, keep_tiles=keep_tiles)
            cache[key] = hit
        return hit

    results: list[KernelResult] = []
    dense_total = 0
    for i, kernel in enumerate(kernels):
        res = sim(kernel)
        base = res if not kernel.sparse else sim(kernel.as_dense())
        out = KernelResult(**{**res.__dict__})
        out.name, out.op, out.reason = kernel.name, kernel.op, kernel.reason
        out.pattern_requested = kernel.pattern_requested
        out.speedup_vs_dense = base.cycles["total"] / res.cycles["total"] if res.cycles["total"] else 1.0
        dense_total += base.cycles["total"]
        results.append(out)
        if progress is not None:
            progress(i + 1, len(kernels))
    meta = build_meta(command, {"hardware": hw.config_hash(), "workload": model.config_hash()})
    return RunResult(hardware=hw.to_dict(), workload=model.to_dict(), sparsity=sparsity, layers=results,
                     clock_ghz=hw.clock_ghz, peak_macs_per_cycle=peak_macs_per_cycle(hw, model.dtype), meta=meta,
                     dense_total_cycles=dense_total)
