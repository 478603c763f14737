"""Trace export cost: BERT-base (seq 512) full model on a100-like, 2:4, default event bound.

Prints the simulation time, then the export's wall time, file size, event count, reduction and
the process's peak RSS (resource.getrusage; includes Python, numba and the simulation). Exits 1
if the peak RSS reaches 1 GB.

    .venv/bin/python benchmarks/trace_bench.py [--max-events N] [--out PATH] [--seq 512]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accelsim.cli.analysis import write_trace  # noqa: E402
from accelsim.hardware.model import load_hardware  # noqa: E402
from accelsim.report.trace import DEFAULT_MAX_EVENTS  # noqa: E402
from accelsim.simulation import run  # noqa: E402
from accelsim.workloads.model import load_workload  # noqa: E402

LIMIT_MB = 1024.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS, help="0: no bound")
    ap.add_argument("--out", default=None, help="trace path (default: a temporary file, removed)")
    ap.add_argument("--seq", type=int, default=512)
    args = ap.parse_args()
    hw = load_hardware(ROOT / "hwconfigs" / "a100-like.yaml")
    model = load_workload(ROOT / "workloads" / "bert-base.yaml", {"seq": args.seq})
    t0 = time.perf_counter()
    result = run(model, hw, "2:4", keep_tiles=True)
    t_sim = time.perf_counter() - t0
    rss_sim = _rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "bert-base-512.trace.json"
        t0 = time.perf_counter()
        stats = write_trace(result, hw, out, max_events=args.max_events if args.max_events > 0 else None)
        t_exp = time.perf_counter() - t0
    rss = _rss_mb()
    red = stats["reduction"]
    print(f"workload        bert-base seq {args.seq}, {len(result.layers)} layers, 2:4 on {hw.name}")
    print(f"simulation      {t_sim:.2f} s (peak RSS so far {rss_sim:.0f} MB)")
    print(f"export          {t_exp:.2f} s")
    print(f"file size       {stats['bytes'] / 1e6:.1f} MB")
    print(f"events          {stats['events']:,} (full detail {red['events_unreduced']:,}; bound {red['max_events']})")
    print(f"reduction       {red['level']}: {red['description']}")
    print(f"core processes  {stats['cores']}; span {stats['span_us']:.1f} us")
    print(f"peak RSS        {rss:.0f} MB (limit {LIMIT_MB:.0f} MB)")
    return 0 if rss < LIMIT_MB else 1


if __name__ == "__main__":
    raise SystemExit(main())
