"""The deployment report's serving section: p50/p95/p99 latency, dense vs sparse, at two offered loads.

Poisson arrivals (seeded) at :data:`SERVING_LOADS` shares of the dense part's saturation throughput,
batches of up to 8 requests (2 ms max wait) where the workload has a ``batch`` parameter, service
times from the simulated plan (:class:`accelsim.serving.ServingModel`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.hardware.model import Hardware
from accelsim.records import OMIT_IF_NONE, Record, freeze
from accelsim.serving import ServingModel
from accelsim.simulation import Simulator
from accelsim.workloads.model import Workload

__all__ = ["SERVING_LOADS", "SERVING_REQUESTS", "ServingConfig", "ServingLatency", "ServingRow", "ServingSection",
           "serving_section"]

SERVING_LOADS = (0.5, 0.8)  # offered load as a share of the dense part's saturation throughput
SERVING_REQUESTS = 4000


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingLatency(Record):
    """One variant's latency percentiles (ms) at one load, and whether the load exceeds its capacity."""

    p50: float
    p95: float
    p99: float
    utilisation: float
    offered_over_capacity: float | None
    overloaded: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingRow(Record):
    """One offered load: the rate and each variant's latency (keyed by label: 'dense' and the sparse label)."""

    load: float
    rate_rps: float
    by_label: Mapping[str, ServingLatency]

    def to_dict(self) -> dict[str, Any]:
        return {"load": self.load, "rate_rps": self.rate_rps, **{k: v.to_dict() for k, v in self.by_label.items()}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingConfig(Record):
    max_batch: int
    max_wait_ms: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServingSection(Record):
    """``status`` "ok" with the table, or "skipped" with only the ``note`` saying why."""

    status: str
    labels: tuple[str, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    saturation_rps: float | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    config: ServingConfig | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    requests: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    seed: int | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    rows: tuple[ServingRow, ...] | None = dataclasses.field(default=None, metadata=OMIT_IF_NONE)
    note: str


def serving_section(hw: Hardware, workload_source: str | None, model: Workload, label: str, policy: str,
                    sim: Simulator) -> ServingSection:
    """p50/p95/p99 latency, dense vs sparse (``label``), at two offered loads (simpy serving model, seeded)."""
    if not workload_source or not Path(workload_source).is_file():
        return ServingSection(status="skipped", note="serving needs the workload file (to vary the batch)")
    sets = {k: v for k, v in model.params.items() if k != "batch"}
    config = {"max_batch": 8, "max_wait_ms": 2.0}
    try:
        models = {lab: ServingModel.from_files(hw, workload_source, lab, config=config, set_params=sets,
                                               simulator=sim, policy=policy)
                  for lab in ("dense", label)}
        saturation = models["dense"].run(rate=1e9, requests=2000, seed=0).throughput_rps
        rows = []
        for share in SERVING_LOADS:
            rate = share * saturation
            by_label = {}
            for lab, m in models.items():
                r = m.run(rate=rate, requests=SERVING_REQUESTS, seed=0)
                q = r.latency_ms
                by_label[lab] = ServingLatency(p50=q.p50, p95=q.p95, p99=q.p99, utilisation=r.utilisation,
                                               offered_over_capacity=r.load.offered_over_capacity,
                                               overloaded=r.load.overloaded)
            rows.append(ServingRow(load=share, rate_rps=round(rate, 3), by_label=freeze(by_label)))
    except (AccelsimError, ValueError) as exc:
        return ServingSection(status="skipped", note=str(exc))
    used = models["dense"].config
    batching = (f"batches of up to {used.max_batch} ({used.max_wait_ms:g} ms max wait)" if used.max_batch > 1
                else models["dense"].info.get("note", "one request at a time"))
    note = (f"Poisson arrivals at a share of the dense part's saturation throughput; {batching}; service times "
            "from the simulated plan. `accelsim serve` for more.")
    over = sorted({lab for r in rows for lab in models if r.by_label[lab].overloaded})
    if over:
        note += (f" OVERLOADED ({', '.join(over)}): where marked *, the offered load is above that variant's "
                 "capacity, so the queue grows for the whole run and its percentiles are not steady-state.")
    return ServingSection(status="ok", labels=("dense", label), saturation_rps=round(saturation, 3),
                          config=ServingConfig(max_batch=used.max_batch, max_wait_ms=used.max_wait_ms),
                          requests=SERVING_REQUESTS, seed=0, rows=tuple(rows), note=note)
