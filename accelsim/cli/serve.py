"""accelsim serve: the request-level serving model, as a table or JSON, with serve.json and plots."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from accelsim.cli import options
from accelsim.cli.common import finish_folder_command, progress_bar, require_folder, warn
from accelsim.fileio import figure_bytes
from accelsim.report.clock_text import capped_clocks_line
from accelsim.results import dumps_finite
from accelsim.serving import ServeRequest, ServeResult, ServingRun, serve
from accelsim.serving.limits import NEAR_CAPACITY, near_capacity
from accelsim.textsafe import printable
from accelsim.workloads.moe import routing_line


def format_serve(result: ServeResult, hw_set: list[str] | None = None) -> str:
    """Dense and sparse serving figures side by side, capacity at SLA, quality at equal budget (``hw_set``: the
    --hw-set overrides, named beside the config; default the result's own)."""
    labels = list(result.sparsities)  # a deployment that does not fit has a column, and no run
    res = result.results
    served = [lab for lab in labels if lab in res]
    llm = result.mode == "llm"
    first = res[served[0]]
    arrivals = first.arrivals
    if arrivals.get("process") == "trace":  # replayed whole: neither --rate nor --duration sets it
        rate = arrivals.get("rate_rps")
        load = (f"trace {printable(str(arrivals.get('trace')))} ({first.requests:,} requests"
                + (f", {rate:g} req/s" if rate is not None else "") + ")")
    else:
        load = f"{result.rate_rps} req/s for {result.duration_s} s"
    hw_set = hw_set or list(result.hw_set or ())
    changed = f" (--hw-set {printable(', '.join(hw_set))})" if hw_set else ""
    lines = [f"SERVING  {printable(result.workload)} on {printable(result.hardware)}{changed}, {load} "
             f"(seed {result.seed}, variability {'on' if result.variability_enabled else 'off'})"]
    for name, records in (result.moe or {}).items():  # the routing assumption, in run's words
        lines += [f"{routing_line(r)} [{printable(name)} at its own parameters; each simulated batch is routed by "
                  "the same rule]" for r in records]
    metric_rows: list[tuple[str, Callable[[ServingRun], float | None]]] = []
    if llm:
        for m in ("ttft", "tpot"):
            for q in ("p50", "p95", "p99"):
                metric_rows.append((f"{m} {q} (ms)", _stat(m, q)))
    else:
        for q in ("p50", "p95", "p99", "max"):
            metric_rows.append((f"latency {q} (ms)", _stat("latency", q)))
        metric_rows.append(("queueing mean (ms)", lambda r: r.queueing_delay_ms.mean))
        metric_rows.append(("mean batch", lambda r: None if r.batch_size is None else r.batch_size.mean))
    metric_rows.append(("throughput (req/s)", lambda r: r.throughput_rps))
    metric_rows.append(("utilisation", lambda r: r.utilisation))
    metric_rows.append(("offered / capacity", lambda r: r.load.offered_over_capacity))
    metric_rows.append(("completed requests", lambda r: r.measured))
    if llm:
        metric_rows.append(("KV-cache batch cap", lambda r: None if r.kv_cache is None else r.kv_cache.cap_requests))
    if first.sla is not None:
        metric_rows.append(("SLA attainment", lambda r: None if r.sla is None else r.sla.attainment))
    width = max(len(name) for name, _ in metric_rows)
    lines.append(" " * width + "".join(f"{lab:>14s}" for lab in labels))
    for i, (name, get) in enumerate(metric_rows):
        vals = []
        for lab in labels:
            if lab not in res:
                vals.append(f"{'does not fit' if i == 0 else '-':>14s}")
                continue
            v = get(res[lab])
            vals.append(f"{v:14,d}" if isinstance(v, int) else f"{v:14,.3f}" if isinstance(v, float)
                        else f"{'-':>14s}")
        lines.append(name.ljust(width) + "".join(vals))
    for lab, unfit in result.does_not_fit.items():
        lines.append(f"NOT SERVED: {lab} {unfit['message']}: its weights leave no room for a KV cache on one "
                     f"{printable(result.hardware)} device; {', '.join(served)} served alone")
    labels = served
    over = [lab for lab in labels if res[lab].load.overloaded]
    if over:
        lines.append(f"OVERLOADED ({', '.join(over)}): offered load above capacity; the queue grows for the whole "
                     "run, so these percentiles are not steady-state (they grow with --duration)")
    near = [lab for lab in labels if near_capacity(res[lab].load.offered_over_capacity)]
    if near:
        lines.append(f"NEAR CAPACITY ({', '.join(near)}): offered load >= {NEAR_CAPACITY:g} of capacity; these "
                     "percentiles are not steady-state (they grow with --duration)")
    kv = [lab for lab in labels if (k := res[lab].kv_cache) is not None and k.limits_batch]
    if kv:
        lines.append(f"KV-CACHE LIMITED ({', '.join(kv)}): the KV cache, not --max-batch, caps the decode batch")
    lines += [f"note: {n}" for n in result.notes]
    if result.clock is not None:
        runs = ", ".join(f"{lab} {c.runs:,}" for lab, c in result.clock.items())
        lines.append(capped_clocks_line({lab: c.to_dict() for lab, c in result.clock.items()},
                                        f", over the shapes simulated, each once ({runs})"))
    cap = result.capacity
    if cap:
        lines.append("")
        lines.append(f"capacity at p99 {cap.metric} <= {cap.budget_ms} ms:")
        for lab, c in cap.results.items():
            bound = "> " if c.lower_bound_only else ""
            why = ", at the throughput capacity: the budget holds up to it" if c.limited_by == "capacity" else ""
            lines.append(f"  {lab:8s} {bound + f'{c.max_rate_rps:,.1f}':>12s} req/s ({c.status}{why})")
        if cap.sparse_over_dense:
            lines.append(f"  sparse / dense: {cap.sparse_over_dense:.3f}x")
        elif cap.ratio_note is not None:
            lines.append(f"  {cap.ratio_note}")
    qual = result.quality
    if qual:
        lines.append("")
        kinds = ", ".join(f"{n} {k}" for k, n in (qual.quality_kinds or {}).items())
        lines.append(f"quality at equal latency budget ({qual.quantile} {qual.latency_metric} <= {qual.budget_ms} ms; "
                     f"{printable(qual.metric)}, {'higher' if qual.higher_is_better else 'lower'} is better; "
                     f"figures: {kinds}):")
        for var in qual.variants:
            q = "-" if var.quality is None else f"{var.quality:8.2f}"
            lat = "does not fit" if var.value_ms is None else f"{var.value_ms:9.3f} ms"
            label = var.quality_kind + ("" if var.counted else ", not counted")
            lines.append(f"  {printable(var.name):22s} quality {q:>8s} ({label})  {var.quantile} {lat}  "
                         f"{'holds' if var.holds else 'misses'}")
            if var.quality_note:  # a figure looked up in the registry, or what the look-up found instead
                lines.append(f"    quality: {printable(var.quality_note)}")
        if qual.verdict is not None:
            lines.append(f"  verdict: {printable(qual.verdict.message)}")
    return "\n".join(lines) + "\n"


def _stat(metric: str, q: str) -> Callable[[ServingRun], float | None]:
    """The ``q`` statistic of a run's ``metric``, read from a run (None if the run has no such metric)."""
    def get(run: ServingRun) -> float | None:
        stats = run.stats(metric)
        return None if stats is None else stats.quantile(q)
    return get


def serve_files(out: Path, result: ServeResult) -> dict[str | os.PathLike[str], bytes | str]:
    """serve.json, latency_cdf.png and (with latency-vs-load curves) latency_vs_load.png, rendered."""
    from accelsim.report.serving_plots import latency_cdf_figure, latency_vs_load_figure  # matplotlib: deferred

    metric = "ttft" if result.mode == "llm" else "latency"
    changed = f" (--hw-set {', '.join(result.hw_set)})" if result.hw_set else ""
    on = f"{result.workload} on {result.hardware}{changed}"
    budget = result.capacity.budget_ms if result.capacity is not None else None
    fig = latency_cdf_figure(result.comparison, metric=metric, budget_ms=budget,
                             title=f"{on}: {metric} CDF")
    files: dict[str | os.PathLike[str], bytes | str] = {out / "latency_cdf.png": figure_bytes(fig, "png")}
    if result.latency_vs_load is not None:
        fig = latency_vs_load_figure(result.latency_vs_load, metric=metric, budget_ms=budget,
                                     title=f"{on}: {metric} vs load")
        files[out / "latency_vs_load.png"] = figure_bytes(fig, "png")
    files[out / "serve.json"] = (dumps_finite(result.to_dict(), "serve", indent=2, default=float) + "\n").encode()
    return files


def request_from_args(args: argparse.Namespace) -> ServeRequest:
    """The ServeRequest an ``accelsim serve`` command line asks for."""
    return ServeRequest(hw=args.hw, workload=args.workload, rate=args.rate, sparsity=args.sparsity,
                        duration_s=args.duration, seed=args.seed, max_batch=args.max_batch,
                        max_wait_ms=args.max_wait_ms, instances=args.instances, sla_p99_ms=args.sla_p99,
                        find_max_rate=args.find_max_rate, variants=args.variants, budget_ms=args.budget_ms,
                        set_params=args.set, sizes=args.sizes, trace=args.trace,
                        runtime_config=args.runtime_config, hw_set=args.hw_set, load_curves=args.out is not None,
                        sla_metric=args.sla_metric, prompt_tokens=args.prompt_tokens,
                        output_tokens=args.output_tokens)


def cmd_serve(args: argparse.Namespace) -> int:
    """Simulate serving (dense beside sparse), write serve.json and the plots with -o, print the figures."""
    require_folder(args.out, ("serve.json", "latency_cdf.png", "latency_vs_load.png"))
    bar, update = progress_bar(0, "run") if args.find_max_rate else (None, None)
    try:
        result = serve(request_from_args(args), progress=update)
    finally:
        if bar is not None:
            bar.close()
    warn(list(result.warnings))
    files = serve_files(Path(args.out), result) if args.out is not None else None
    return finish_folder_command("serve", result.to_dict(), format_serve(result, args.hw_set), files,
                                 args.format == "json", default=float)


def add_serve(sub: options.Subparsers) -> None:
    """The serve subcommand."""
    sv = sub.add_parser("serve", help="request-level serving model (simpy): latency percentiles, capacity at SLA, "
                                      "quality at equal latency budget")
    options.add_hw(sv)
    options.add_workload(sv)
    sv.add_argument("--rate", type=float, help="arrival rate, requests/s (Poisson)")
    options.add_sparsity(sv, "pattern run beside dense (default: the workload's plan)")
    sv.add_argument("--duration", type=float,
                    help="simulated seconds of Poisson arrivals (default 10; not with --trace, replayed over its span)")
    options.add_seed(sv)
    sv.add_argument("--max-batch", type=int, help="largest batch (default 8, or --runtime-config's)")
    sv.add_argument("--max-wait-ms", type=float, help="longest wait for a batch to fill (default 2)")
    sv.add_argument("--instances", type=int, help="accelerator instances (default 1)")
    options.add_overrides(sv)
    sv.add_argument("--sizes", help="request sizes: fixed:N, uniform:A:B or choice:a,b@wa,wb")
    sv.add_argument("--trace", help="CSV of arrival_s and sizes to replay")
    sv.add_argument("--runtime-config", help="YAML of runtime fields (batching, buckets, variability sources)")
    sv.add_argument("--sla-p99", type=float, metavar="MS", help="p99 latency budget in ms")
    sv.add_argument("--sla-metric", choices=["latency", "ttft", "tpot"],
                    help="what --sla-p99 bounds (default: latency; LLM workloads: ttft)")
    sv.add_argument("--prompt-tokens", help="LLM prompt lengths: fixed:N, uniform:A:B or choice:... (default: seq)")
    sv.add_argument("--output-tokens", help="LLM output lengths, as --prompt-tokens")
    sv.add_argument("--find-max-rate", action="store_true", help="highest rate holding the p99 budget")
    sv.add_argument("--variants", help="variants YAML (workload, sparsity, quality) for quality at equal budget")
    sv.add_argument("--budget-ms", type=float, help="latency budget for --variants (default --sla-p99)")
    options.add_format(sv, ("table", "json"), default="table")
    options.add_out(sv, "directory for serve.json and the latency plots")
    sv.set_defaults(func=cmd_serve)
