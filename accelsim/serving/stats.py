"""Summary statistics of simulated latencies: percentiles in ms, quantile tables for plots, SLA outcome,
and batch-means confidence intervals for correlated series."""

from __future__ import annotations

import math
import statistics

import numpy as np

from accelsim.serving.run_record import LatencyStats, QuantileTable, SlaOutcome

__all__ = ["CDF_QUANTILES", "stats_ms", "cdf", "sla_outcome", "batch_means_ci"]

CDF_QUANTILES = tuple(sorted({*(i / 200 for i in range(201)), 0.995, 0.999, 0.9999}))


def stats_ms(x_s: np.ndarray) -> LatencyStats:
    """Mean, p50, p95, p99 and max of times in seconds, in ms (percentiles by linear interpolation)."""
    if x_s.size == 0:
        return LatencyStats(mean=math.nan, p50=math.nan, p95=math.nan, p99=math.nan, max=math.nan)
    ms = x_s * 1e3
    p50, p95, p99 = np.percentile(ms, [50, 95, 99]).tolist()
    return LatencyStats(mean=round(float(ms.mean()), 6), p50=round(p50, 6), p95=round(p95, 6), p99=round(p99, 6),
                        max=round(float(ms.max()), 6))


def cdf(x_s: np.ndarray) -> QuantileTable:
    """A quantile table of times in seconds: ``q`` (CDF_QUANTILES) and ``ms`` (the quantiles, in ms)."""
    if x_s.size == 0:
        return QuantileTable(q=(), ms=())
    return QuantileTable(q=CDF_QUANTILES,
                         ms=tuple(round(v, 6) for v in (np.quantile(x_s, CDF_QUANTILES) * 1e3).tolist()))


def sla_outcome(x_s: np.ndarray, budget_ms: float | None, metric: str) -> SlaOutcome | None:
    """p99 of ``x_s`` (s) against ``budget_ms``: attainment and whether it holds; None without a budget."""
    if budget_ms is None:
        return None
    p99 = float(np.percentile(x_s, 99)) * 1e3 if x_s.size else math.nan
    return SlaOutcome(metric=metric, budget_ms=budget_ms, p99_ms=round(p99, 6),
                      attainment=round(float(np.mean(x_s * 1e3 <= budget_ms)), 6) if x_s.size else math.nan,
                      holds=bool(p99 <= budget_ms))


def batch_means_ci(x: np.ndarray, batches: int = 30, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and confidence half-width of a correlated series by non-overlapping batch means."""
    x = np.asarray(x, dtype=np.float64)
    size = x.size // batches
    if batches < 2 or size < 1:
        raise ValueError(f"need at least {batches} samples for {batches} batch means")
    means = x[: size * batches].reshape(batches, size).mean(axis=1)
    return float(means.mean()), _t_quantile(0.5 + confidence / 2, batches - 1) * float(means.std(ddof=1)) / \
        math.sqrt(batches)


def _t_quantile(p: float, df: int) -> float:
    """Student-t quantile (Cornish-Fisher expansion around the normal; < 1e-3 relative error for df >= 5)."""
    z = statistics.NormalDist().inv_cdf(p)
    v = float(df)
    return (z + (z ** 3 + z) / (4 * v) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * v ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * v ** 3)
            + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * v ** 4))

