"""The columns of a sweep's result table, and the names a cost expression may use."""

from __future__ import annotations

import re
from collections.abc import Iterable

FORMAT_VERSION = 4  # of the results folder (plan.json, chunk files); part of the spec hash (2: clock columns,
#   3: cycles_communication, 4: fits_memory, footprint_bytes, dense_fits_memory,
#   split_notes)
PLAN = "plan"  # sparsity label: the workload's own plan

# Metric columns, in table order (after the point, workload, parameter and sparsity columns).
METRICS = (
    "feasible", "reason", "fits_memory", "footprint_bytes", "dense_fits_memory", "latency_us", "cycles", "dense_cycles",
    "speedup_vs_dense", "utilization",
    "peak_macs_per_cycle", "cycles_compute", "cycles_stall_memory", "cycles_stall_decode", "cycles_launch",
    "cycles_communication",
    "macs", "macs_executed", "dram_bytes", "dram_a_values", "dram_a_metadata", "dram_b", "dram_c",
    "metadata_bytes", "metadata_share", "layers", "layers_sparse", "fallback_layers", "fallback_rate",
    "fallback_time_share", "binding", "binding_share", "energy_j", "dense_energy_j", "perf_per_watt_vs_dense",
    "effective_clock_ghz", "power_capped_layers", "split_notes",
)
POINT_COLUMNS = ("point", "origin", "hw_hash")
TEXT_COLUMNS = frozenset({"origin", "hw_hash", "workload", "sparsity", "reason", "binding", "split_notes"})
FIXED_COLUMNS = (*POINT_COLUMNS, *METRICS, "sram_bytes", "workload", "sparsity")  # no swept name may be one
DEFAULT_COST = "peak_macs_per_cycle * sram_bytes"


def table_columns(swept: Iterable[str], set_keys: Iterable[str]) -> list[str]:
    """The result table's columns: the point, swept fields, SRAM, workload, set parameters, sparsity, metrics."""
    return [*POINT_COLUMNS, *swept, "sram_bytes", "workload", *set_keys, "sparsity", *METRICS]


def cost_names(columns: Iterable[str]) -> dict[str, str]:
    """Expression name -> column: dotted paths with '.' as '_' (core.compute.rows -> core_compute_rows)."""
    names = {re.sub(r"[^0-9A-Za-z_]", "_", c): c for c in columns}
    names["pes"] = "peak_macs_per_cycle"
    return names
