"""accelsim serve: the request-level serving model, as a table or JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from accelsim.cli import options
from accelsim.cli.common import progress_bar, warn, wrote
from accelsim.results import dumps_finite
from accelsim.serving.simulator import serve_command
from accelsim.textsafe import printable


def format_serve(result: dict[str, Any]) -> str:
    """Dense and sparse serving figures side by side, capacity at SLA, quality at equal budget."""
    labels = result["sparsities"]
    res = result["results"]
    llm = result["mode"] == "llm"
    lines = [f"SERVING  {printable(result['workload'])} on {printable(result['hardware'])}, "
             f"{result['rate_rps']} req/s for {result['duration_s']} s (seed {result['seed']}, variability "
             f"{'on' if result['variability_enabled'] else 'off'})"]
    metric_rows: list[tuple[str, Any]] = []
    if llm:
        for m in ("ttft_ms", "tpot_ms"):
            for q in ("p50", "p95", "p99"):
                metric_rows.append((f"{m[:-3]} {q} (ms)", lambda r, m=m, q=q: r.get(m, {}).get(q)))
    else:
        for q in ("p50", "p95", "p99", "max"):
            metric_rows.append((f"latency {q} (ms)", lambda r, q=q: r["latency_ms"][q]))
        metric_rows.append(("queueing mean (ms)", lambda r: r["queueing_delay_ms"]["mean"]))
        metric_rows.append(("mean batch", lambda r: r["batch_size"]["mean"]))
    metric_rows.append(("throughput (req/s)", lambda r: r.get("throughput_rps")))
    metric_rows.append(("utilisation", lambda r: r.get("utilisation")))
    metric_rows.append(("offered / capacity", lambda r: (r.get("load") or {}).get("offered_over_capacity")))
    if res[labels[0]].get("sla"):
        metric_rows.append(("SLA attainment", lambda r: r["sla"]["attainment"]))
    width = max(len(name) for name, _ in metric_rows)
    lines.append(" " * width + "".join(f"{lab:>14s}" for lab in labels))
    for name, get in metric_rows:
        vals = []
        for lab in labels:
            v = get(res[lab])
            vals.append(f"{v:14,.3f}" if isinstance(v, int | float) else f"{'-':>14s}")
        lines.append(name.ljust(width) + "".join(vals))
    over = [lab for lab in labels if (res[lab].get("load") or {}).get("overloaded")]
    if over:
        lines.append(f"OVERLOADED ({', '.join(over)}): offered load above capacity; the queue grows for the whole "
                     "run, so these percentiles are not steady-state (they grow with --duration)")
    lines += [f"note: {n}" for n in result.get("notes", [])]
    cap = result.get("capacity")
    if cap:
        lines.append("")
        lines.append(f"capacity at p99 {cap['metric']} <= {cap['budget_ms']} ms:")
        for lab, c in cap["results"].items():
            rate = c.get("max_rate_rps")
            lines.append(f"  {lab:8s} {rate:10,.1f} req/s ({c['status']})" if rate is not None
                         else f"  {lab:8s} {'-':>10s} ({c['status']})")
        if cap.get("sparse_over_dense"):
            lines.append(f"  sparse / dense: {cap['sparse_over_dense']:.3f}x")
    qual = result.get("quality")
    if qual:
        lines.append("")
        lines.append(f"quality at equal latency budget (p99 <= {qual.get('budget_ms')} ms):")
        for var in qual.get("variants", []):
            lines.append(f"  {var['name']:22s} quality {var['quality']:8.2f}  p99 {var['p99_ms']:9.3f} ms  "
                         f"{'holds' if var['holds'] else 'misses'}")
        if qual.get("best"):
            lines.append(f"  best that holds: {qual['best']} ({qual['best_quality']}); dense baseline that holds: "
                         f"{qual.get('dense_baseline')} ({qual.get('dense_baseline_quality')}); "
                         f"delta {qual.get('quality_delta'):+}")
        else:
            lines.append("  no variant holds the budget")
    return "\n".join(lines) + "\n"


def cmd_serve(args: argparse.Namespace) -> int:
    """Simulate serving (dense beside sparse) and print the figures."""
    bar, update = progress_bar(0, "run") if args.find_max_rate else (None, None)
    try:
        result = serve_command(args.hw, args.workload, args.rate, args.sparsity, duration_s=args.duration,
                               seed=args.seed, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                               sla_p99_ms=args.sla_p99, find_max_rate=args.find_max_rate, variants=args.variants,
                               out=args.out, set_params=args.set, budget_ms=args.budget_ms,
                               instances=args.instances, sizes=args.sizes, trace=args.trace,
                               runtime_config=args.runtime_config, hw_set=args.hw_set, progress=update)
    finally:
        if bar is not None:
            bar.close()
    warn(result.get("warnings", []))
    if args.format == "json":
        sys.stdout.write(dumps_finite(result, "serve", indent=2, default=float) + "\n")
    else:
        sys.stdout.write(format_serve(result))
    wrote(result.get("files", []))
    return 0


def add_serve(sub: options.Subparsers) -> None:
    """The serve subcommand."""
    sv = sub.add_parser("serve", help="request-level serving model (simpy): latency percentiles, capacity at SLA, "
                                      "quality at equal latency budget")
    options.add_hw(sv)
    options.add_workload(sv)
    sv.add_argument("--rate", type=float, help="arrival rate, requests/s (Poisson)")
    options.add_sparsity(sv, "pattern run beside dense (default: the workload's plan)")
    sv.add_argument("--duration", type=float, default=10.0, help="simulated seconds (default 10)")
    options.add_seed(sv)
    sv.add_argument("--max-batch", type=int, help="largest batch (default 8, or --runtime-config's)")
    sv.add_argument("--max-wait-ms", type=float, help="longest wait for a batch to fill (default 2)")
    sv.add_argument("--instances", type=int, help="accelerator instances (default 1)")
    options.add_overrides(sv)
    sv.add_argument("--sizes", help="request sizes: fixed:N, uniform:A:B or choice:a,b@wa,wb")
    sv.add_argument("--trace", help="CSV of arrival_s and sizes to replay")
    sv.add_argument("--runtime-config", help="YAML of runtime fields (batching, buckets, variability sources)")
    sv.add_argument("--sla-p99", type=float, metavar="MS", help="p99 latency budget in ms")
    sv.add_argument("--find-max-rate", action="store_true", help="highest rate holding the p99 budget")
    sv.add_argument("--variants", help="variants YAML (workload, sparsity, quality) for quality at equal budget")
    sv.add_argument("--budget-ms", type=float, help="latency budget for --variants (default --sla-p99)")
    options.add_format(sv, ("table", "json"), default="table")
    options.add_out(sv, "directory for serve.json and the latency plots")
    sv.set_defaults(func=cmd_serve)
