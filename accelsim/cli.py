"""Command line: the only module that prints, reads argv and exits."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path
from typing import Any

from . import __version__
from .errors import AccelsimError, OutputError
from .explain import traffic_notes
from .fileio import write_atomic
from .results import dumps_finite
from .textsafe import printable


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _write_atomic(path: str, text: str) -> None:
    """Write a file in one step (temp file + rename), so a failure leaves nothing half-written."""
    write_atomic(path, text)


_EXT_FORMATS = {".json": "json", ".csv": "csv"}


def _output_format(command: str, given: str | None, out: str | None, choices: tuple[str, ...]) -> str:
    """--format, else taken from -o's extension (.json, .csv; anything else: table); refuse a contradiction."""
    ext = Path(out).suffix.lower() if out else ""
    implied = _EXT_FORMATS.get(ext)
    if given is not None:
        if implied is not None and implied != given:
            raise AccelsimError(f"-o {out}: the extension says {implied} but --format is {given}; change one "
                                f"of them (without --format the extension decides)")
        return given
    fmt = implied or "table"
    if fmt not in choices:
        raise AccelsimError(f"-o {out}: {command} writes {' or '.join(choices)}, not {fmt}; use "
                            + ", ".join(f"--format {c}" for c in choices))
    return fmt


def _emit(text: str, out: str | None) -> None:
    if out:
        _write_atomic(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _fmt_int(v: int) -> str:
    return f"{v:,}"


def _shape_text(shape: dict[str, int]) -> str:
    if "elements" in shape:
        return f"{shape['elements']:,} el"
    text = f"{shape['m']}x{shape['n']}x{shape['k']}"
    return f"{shape['batch']}x({text})" if "batch" in shape else text


def format_by_op_type(result: Any) -> str:
    """Counts and time per op type x path."""
    groups = result.by_op_type()
    head = ["op", "path", "count", "cycles", "share", "vs dense", "reasons"]
    rows = [[g["op"], g["path"], str(g["count"]), _fmt_int(g["cycles"]), f"{g['share_of_time'] * 100:.1f}%",
             f"{g['dense_cycles'] / g['cycles']:.3f}x" if g["cycles"] else "-",
             ", ".join(f"{k} x{v}" for k, v in g["reasons"].items()) or "-"] for g in groups]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = {2, 3, 4, 5}

    def line(r: list[str]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(cells)).rstrip()

    return "\n".join(["by op type", line(head), "  ".join("-" * w for w in widths), *map(line, rows)]) + "\n"


def format_table(result: Any) -> str:
    """Human-readable per-layer table and totals of a RunResult."""
    body = result.body()
    hw, wl = body["hardware"], body["workload"]
    rows = []
    head = ["layer", "op", "m x n x k", "path", "pattern", "reason", "cycles", "compute", "stall mem",
            "stall dec", "util", "binding", "vs dense"]
    for lay in body["layers"]:
        c = lay["cycles"]
        rows.append([printable(lay["name"]), lay["op"], _shape_text(lay["shape"]), lay["path"],
                     lay["pattern_executed"] or "-", lay["reason"] or "-", _fmt_int(c["total"]),
                     _fmt_int(c["compute"]), _fmt_int(c["stall_memory"]), _fmt_int(c["stall_decode"]),
                     f"{lay['utilization'] * 100:.1f}%", lay["binding"], f"{lay['speedup_vs_dense']:.3f}x"])
    t = body["totals"]
    c = t["cycles"]
    rows.append(["TOTAL", "", "", "", "", "", _fmt_int(c["total"]), _fmt_int(c["compute"]),
                 _fmt_int(c["stall_memory"]), _fmt_int(c["stall_decode"]), f"{t['utilization'] * 100:.1f}%",
                 "", f"{t['speedup_vs_dense']:.3f}x"])
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    right = {6, 7, 8, 9, 10, 12}

    def line(r: list[str]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(str(v).rjust(w) if i in right else str(v).ljust(w) for i, (v, w) in enumerate(cells))

    sep = "  ".join("-" * w for w in widths)
    title = (f"{printable(wl['name'])} on {printable(hw['name'])} ({hw['clock_ghz']} GHz), sparsity: "
             f"{body['sparsity'] or 'per workload plan'}")
    if "dtype_declared" in wl:
        title += f", dtype: {wl['dtype']} (--dtype; the workload says {wl['dtype_declared']})"
    dram = t["bytes"]["dram"]
    foot = (f"latency {t['latency_us']:,.3f} us | DRAM bytes: A values {_fmt_int(dram['a_values'])}, "
            f"A metadata {_fmt_int(dram['a_metadata'])}, B {_fmt_int(dram['b'])}, C {_fmt_int(dram['c'])} | "
            f"dense total {_fmt_int(t['dense_total_cycles'])} cycles")
    lines = [title, line(head), sep, *[line(r) for r in rows[:-1]], sep, line(rows[-1]), foot]
    if "energy" in t:
        e = t["energy"]
        comp = e["by_component_j"]
        share = ", ".join(f"{k} {v / e['total_j'] * 100:.0f}%" for k, v in comp.items() if v > 0.005 * e["total_j"])
        lines.append(f"energy {e['total_j'] * 1e3:,.3f} mJ (dense {e['dense_total_j'] * 1e3:,.3f} mJ) | "
                     f"avg power {e['avg_power_w']:,.1f} W | perf/W vs dense {e['perf_per_watt_vs_dense']:.3f}x | "
                     f"{share}")
    fp = body.get("footprint") or {}
    if fp:
        cap = fp.get("dram_capacity_bytes")
        lines.append(f"footprint {_fmt_int(fp['total_bytes'])} bytes: weights as deployed "
                     f"{_fmt_int(fp['weights_deployed_bytes'])} ({_fmt_int(fp['weights_metadata_bytes'])} of it "
                     f"metadata; dense {_fmt_int(fp['weights_dense_bytes'])}), peak activations "
                     f"{_fmt_int(fp['activations_peak_bytes'])}, KV cache {_fmt_int(fp['kv_cache_bytes'])}"
                     + (f" | DRAM {_fmt_int(cap)}: {'fits' if fp['fits'] else 'DOES NOT FIT'}" if cap else ""))
    lines += [f"why: {note.text()}" for note in traffic_notes(body)]
    return "\n".join(lines) + "\n"


CSV_FIELDS = ["name", "op", "m", "n", "k", "path", "pattern_requested", "pattern_executed", "reason",
              "cycles_total", "cycles_compute", "cycles_stall_memory", "cycles_stall_decode", "cycles_launch",
              "macs", "macs_executed", "utilization", "dram_a_values", "dram_a_metadata", "dram_b", "dram_c",
              "sram_a_values", "sram_a_metadata", "sram_b", "sram_c", "binding", "speedup_vs_dense"]


def format_csv(result: Any) -> str:
    """One CSV row per layer."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for lay in result.body()["layers"]:
        c, d, s = lay["cycles"], lay["bytes"]["dram"], lay["bytes"]["sram"]
        shp = lay["shape"]
        w.writerow([lay["name"], lay["op"], shp.get("m", ""), shp.get("n", ""), shp.get("k", ""), lay["path"],
                    lay["pattern_requested"] or "", lay["pattern_executed"] or "", lay["reason"] or "",
                    c["total"], c["compute"], c["stall_memory"], c["stall_decode"], c["launch"], lay["macs"],
                    lay["macs_executed"], lay["utilization"], d["a_values"], d["a_metadata"], d["b"], d["c"],
                    s["a_values"], s["a_metadata"], s["b"], s["c"], lay["binding"], lay["speedup_vs_dense"]])
    return buf.getvalue()


def _progress_bar(total_hint: int, unit: str = "layer"):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None, None
    bar = tqdm(total=total_hint, unit=unit, delay=0.5, file=sys.stderr, leave=False, disable=None)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return bar, update


def cmd_run(args: argparse.Namespace) -> int:
    from .fileio import resolve_target
    from .runner import run

    fmt = _output_format("run", args.format, args.out, ("table", "json", "csv"))
    if args.out:
        resolve_target(args.out)  # a folder or device in the way fails before the run
    hw, model, sparsity = _load_pair(args)
    if args.dtype is not None:
        from .workload import with_dtype

        model = with_dtype(model, args.dtype)
    bar, update = _progress_bar(len(model.layers))
    try:
        result = run(model, hw, sparsity, policy=args.policy, hw_source=args.hw, progress=update,
                     command=["accelsim", *sys.argv[1:]])
    finally:
        if bar is not None:
            bar.close()
    if fmt == "json":
        text = result.to_json()
    elif fmt == "csv":
        text = format_csv(result)
    else:
        text = format_table(result)
        if args.by_op_type:
            text += "\n" + format_by_op_type(result)
    for warning in result.warnings:
        print(f"accelsim: warning: {warning}", file=sys.stderr)
    _emit(text, args.out)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .configkinds import validate_file

    for path in args.files:
        print(validate_file(path))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .configkinds import schema_text

    print(schema_text(args.which))
    return 0


def cmd_functional_check(args: argparse.Namespace) -> int:
    from .fileio import resolve_target
    from .functional import format_check, functional_check

    fmt = _output_format("functional-check", args.format, args.out, ("table", "json"))
    if args.out:
        resolve_target(args.out)
    result = functional_check(args.m, args.n, args.k, args.pattern, seed=args.seed, dtype=args.dtype,
                              tiling=args.hw)
    _emit(format_check(result, as_json=fmt == "json") + "\n", args.out)
    if not result["exercised"]:  # numerically right, but the compressed format never ran: not a pass
        print(f"accelsim: functional-check NOT EXERCISED: {result['not_exercised']}", file=sys.stderr)
        return 1
    return 0 if result["passed"] else 1


def _load_pair(args: argparse.Namespace) -> tuple[Any, Any, str | None]:
    from .hardware import load_hardware
    from .sparsity import normalize_pattern
    from .templating import parse_sets
    from .workload import load_workload

    hw = load_hardware(args.hw, getattr(args, "hw_set", []))
    model = load_workload(args.workload, parse_sets(args.set, args.workload))
    sparsity = None
    if args.sparsity is not None:
        try:
            sparsity = normalize_pattern(args.sparsity)
        except ValueError as exc:
            raise AccelsimError(f"--sparsity: {exc}") from None
    return hw, model, sparsity


def cmd_reality_check(args: argparse.Namespace) -> int:

    from .fileio import write_all
    from .reality import reality_check
    from .report.reality_chart import chart_files, render_reality_check, text_bars

    hw, model, sparsity = _load_pair(args)
    if sparsity == "dense" or (sparsity is None and not model.planned_patterns()):
        plan = "runs dense" if sparsity == "dense" else "has no sparsity plan"
        raise AccelsimError(f"reality-check needs a pattern: {args.workload} {plan}; pass --sparsity N:M "
                            f"(e.g. 2:4)")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise OutputError(args.out, "exists and is not a folder (-o takes a directory)")
    data = reality_check(model, hw, sparsity, policy=args.policy, hw_source=args.hw)
    print(text_bars(data))
    if args.out:
        out = Path(args.out)
        fig, _ = render_reality_check(data)
        files: dict[Path, bytes | str] = {**chart_files(fig, out)}
        files[out / "reality_check.json"] = dumps_finite(data, "reality-check", indent=2) + "\n"
        for path in write_all(files):  # all three or none
            print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_import_onnx(args: argparse.Namespace) -> int:
    from .onnx_import import cmd_import_onnx as convert

    code, lines = convert(args)
    stream = sys.stderr if args.out else sys.stdout
    for line in lines:
        print(line, file=stream)
    return code


def cmd_regress(args: argparse.Namespace) -> int:
    from .report.regress import regress_command

    code, text = regress_command(args.baseline, args.candidate, args.tolerances, args.out, bless=args.bless)
    (sys.stderr if code == 2 else sys.stdout).write(text if text.endswith("\n") else text + "\n")
    return code


def cmd_report(args: argparse.Namespace) -> int:
    from .report.deploy import report_command

    bar, update = _progress_bar(0, "stage")
    try:
        paths, lines = report_command(args.hw, args.workload, args.out, args.sparsity, args.set, args.hw_set,
                                      args.policy, args.patterns, args.quality_threshold, args.weights,
                                      command=["accelsim", *sys.argv[1:]], progress=update)
    finally:
        if bar is not None:
            bar.close()
    for line in lines:
        print(line)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    return 3 if args.fail_on_breach and lines and "BREACH" in lines[0] else 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import sweep_command

    bar = None
    try:
        from tqdm import tqdm

        bar = tqdm(unit="config", file=sys.stderr, disable=None, dynamic_ncols=True)
    except ImportError:  # pragma: no cover
        pass

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        summary = sweep_command(args.spec, args.out, dask=args.dask, resume=args.resume, workers=args.workers,
                                progress=progress, command=["accelsim", *sys.argv[1:]], max_points=args.max_points)
    finally:
        if bar is not None:
            bar.close()
    for warning in summary.get("warnings", []):
        print(f"accelsim: warning: {warning}", file=sys.stderr)
    print(f"sweep: {summary.get('points', '?')} configs, {summary.get('rows', '?')} rows "
          f"({summary.get('infeasible_rows', 0)} infeasible) in {summary.get('wall_s', 0):.1f} s "
          f"({summary.get('configs_per_s', 0):,.0f} configs/s)")
    for path in summary.get("files", []):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_sweep_plot(args: argparse.Namespace) -> int:
    from .sweep import sweep_plot_command

    bar, update = _progress_bar(0, "plot")
    try:
        paths, notes = sweep_plot_command(args.results, args.out, x=args.x, y=args.y, at=args.at, progress=update)
    finally:
        if bar is not None:
            bar.close()
    for note in notes:
        print(f"sweep-plot: {note}")
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    return 0


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
    q = result.get("quality")
    if q:
        lines.append("")
        lines.append(f"quality at equal latency budget (p99 <= {q.get('budget_ms')} ms):")
        for v in q.get("variants", []):
            lines.append(f"  {v['name']:22s} quality {v['quality']:8.2f}  p99 {v['p99_ms']:9.3f} ms  "
                         f"{'holds' if v['holds'] else 'misses'}")
        if q.get("best"):
            lines.append(f"  best that holds: {q['best']} ({q['best_quality']}); dense baseline that holds: "
                         f"{q.get('dense_baseline')} ({q.get('dense_baseline_quality')}); "
                         f"delta {q.get('quality_delta'):+}")
        else:
            lines.append("  no variant holds the budget")
    return "\n".join(lines) + "\n"


def cmd_serve(args: argparse.Namespace) -> int:

    from .runtime import serve_command

    bar, update = _progress_bar(0, "run") if args.find_max_rate else (None, None)
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
    for warning in result.get("warnings", []):
        print(f"accelsim: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(dumps_finite(result, "serve", indent=2, default=float) + "\n")
    else:
        sys.stdout.write(format_serve(result))
    for path in result.get("files", []):
        print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from .report.trace import trace_command

    try:
        stats = trace_command(args.hw, args.workload, args.out, args.sparsity, args.layer or None, args.max_events,
                              args.set, args.hw_set)
    except ValueError as exc:
        raise AccelsimError(str(exc)) from None
    red = stats.get("reduction") or {}
    print(f"wrote {stats['path']}: {stats['events']:,} events, {stats['bytes'] / 1e6:.1f} MB, "
          f"{stats.get('span_us', 0):,.1f} us simulated; reduction: {red.get('description', 'none')}",
          file=sys.stderr)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from .report.plots import plot_command

    try:
        paths = plot_command(args.kind, args.hw, args.workload, args.out, args.sparsity, args.layer, args.set,
                             args.hw_set)
    except ValueError as exc:
        raise AccelsimError(str(exc)) from None
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_validate_hw(args: argparse.Namespace) -> int:
    from .validation import validate_hw_command

    code, text = validate_hw_command(args.measurements, args.hw_map, args.out)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return code


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="accelsim", description="Cycle-approximate accelerator simulator for dense and N:M sparse "
                                            "workloads.")
    p.add_argument("--version", action="version", version=f"accelsim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="simulate a workload on a hardware config")
    r.add_argument("--hw", required=True, help="hardware YAML (hwconfigs/*.yaml)")
    r.add_argument("--workload", required=True, help="workload YAML (workloads/*.yaml)")
    r.add_argument("--sparsity", help="N:M pattern for every weight layer, or 'dense' (overrides the workload)")
    r.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE",
                   help="override one hardware field, e.g. dram.bandwidth_gb_s=100 (repeatable)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a workload parameter, e.g. batch=16 or seq=512 (repeatable)")
    r.add_argument("--policy", choices=["sparse-if-supported", "fastest"], default="sparse-if-supported",
                   help="'fastest' also simulates dense and keeps the faster kernel per layer")
    r.add_argument("--dtype", choices=["fp32", "tf32", "fp16", "bf16", "fp8", "int8"],
                   help="run every layer in this element type instead of the workload's dtype (e.g. an fp32 "
                        "ONNX import deployed as fp16)")
    r.add_argument("--by-op-type", action="store_true", help="add a summary per op type x path to the table")
    r.add_argument("--format", choices=["table", "json", "csv"],
                   help="default: from -o's extension (.json, .csv; otherwise table)")
    r.add_argument("-o", "--out", help="write the output to this file instead of stdout")
    r.set_defaults(func=cmd_run)

    rc = sub.add_parser("reality-check", help="nominal vs real sparse speedup, every loss explained, as a chart")
    rc.add_argument("--hw", required=True)
    rc.add_argument("--workload", required=True)
    rc.add_argument("--sparsity", help="N:M pattern (default: the workload's plan)")
    rc.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    rc.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE")
    rc.add_argument("--policy", choices=["sparse-if-supported", "fastest"], default="sparse-if-supported")
    rc.add_argument("-o", "--out", help="directory for reality_check.png/.svg/.json")
    rc.set_defaults(func=cmd_reality_check)

    i = sub.add_parser("import-onnx", help="convert an ONNX model to a workload YAML (shapes only; weights are "
                                           "never read)")
    i.add_argument("model", help="MODEL.onnx (external weight data may be absent)")
    i.add_argument("-o", "--out", help="workload YAML to write (default: print it)")
    i.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="size a symbolic dimension, e.g. batch=8 (repeatable)")
    i.add_argument("--name", help="workload name (default: the file's stem)")
    i.add_argument("--dtype", choices=["fp32", "tf32", "fp16", "bf16", "fp8", "int8"],
                   help="element type the model is deployed in (default: the graph's, e.g. fp32)")
    i.set_defaults(func=cmd_import_onnx)

    g = sub.add_parser("regress", help="compare results (files or directories) with baselines: exit 0 ok, "
                                       "1 drift, 2 error")
    g.add_argument("baseline")
    g.add_argument("candidate")
    g.add_argument("--tolerances", metavar="YAML", help="default_rtol/default_atol, per-metric overrides, ignore")
    g.add_argument("-o", "--out", metavar="DIR", help="write regress.json and regress.md (a PR-ready diff) here")
    g.add_argument("--bless", action="store_true", help="rewrite BASELINE from CANDIDATE (bodies only)")
    g.set_defaults(func=cmd_regress)

    rp = sub.add_parser("report", help="sparsity deployment report: report.md, report.html, report.json")
    rp.add_argument("--hw", required=True)
    rp.add_argument("--workload", required=True)
    rp.add_argument("--sparsity", help="N:M pattern (default: the workload's plan)")
    rp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    rp.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE")
    rp.add_argument("--policy", choices=["sparse-if-supported", "fastest"], default="sparse-if-supported")
    rp.add_argument("--patterns", help="also tabulate these patterns in the supported-layer matrix, e.g. 2:4,1:4")
    rp.add_argument("--quality-threshold", type=float, help="largest acceptable quality drop (overrides max_drop)")
    rp.add_argument("--weights", help=".npz of weights by layer name (or .npy) for the pruning-error proxy")
    rp.add_argument("--fail-on-breach", action="store_true", help="exit 3 when the quality guardrail trips")
    rp.add_argument("-o", "--out", required=True, help="output directory")
    rp.set_defaults(func=cmd_report)

    sw = sub.add_parser("sweep", help="design-space sweep over hardware fields, workloads, params, patterns")
    sw.add_argument("spec", help="sweep spec YAML (sweeps/*.yaml)")
    sw.add_argument("-o", "--out", required=True, help="results directory")
    sw.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, or 'local' for a "
                                                       "LocalCluster")
    sw.add_argument("--workers", type=int, help="local processes (default: all cores)")
    sw.add_argument("--resume", action="store_true", help="continue a killed sweep in the same directory")
    sw.add_argument("--max-points", type=int, default=100_000, metavar="N",
                    help="refuse specs of more than N hardware points (default 100,000; rows: at most 10 x N)")
    sw.set_defaults(func=cmd_sweep)

    sp = sub.add_parser("sweep-plot", help="Pareto, heatmaps and where-sparsity-pays plots of a sweep")
    sp.add_argument("results", help="a sweep's results directory")
    sp.add_argument("-o", "--out", help="plot directory (default RESULTS/plots)")
    sp.add_argument("--x", metavar="KEY", help="grid parameter across the heatmaps (default: the second)")
    sp.add_argument("--y", metavar="KEY", help="grid parameter up the heatmaps (default: the first)")
    sp.add_argument("--at", action="append", default=[], metavar="KEY=VALUE",
                    help="hold another grid parameter at this value (default: its first; repeatable)")
    sp.set_defaults(func=cmd_sweep_plot)

    sv = sub.add_parser("serve", help="request-level serving model (simpy): latency percentiles, capacity at SLA, "
                                      "quality at equal latency budget")
    sv.add_argument("--hw", required=True)
    sv.add_argument("--workload", required=True)
    sv.add_argument("--rate", type=float, help="arrival rate, requests/s (Poisson)")
    sv.add_argument("--sparsity", help="pattern run beside dense (default: the workload's plan)")
    sv.add_argument("--duration", type=float, default=10.0, help="simulated seconds (default 10)")
    sv.add_argument("--seed", type=int, default=0)
    sv.add_argument("--max-batch", type=int, help="largest batch (default 8, or --runtime-config's)")
    sv.add_argument("--max-wait-ms", type=float, help="longest wait for a batch to fill (default 2)")
    sv.add_argument("--instances", type=int, help="accelerator instances (default 1)")
    sv.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    sv.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE")
    sv.add_argument("--sizes", help="request sizes: fixed:N, uniform:A:B or choice:a,b@wa,wb")
    sv.add_argument("--trace", help="CSV of arrival_s and sizes to replay")
    sv.add_argument("--runtime-config", help="YAML of runtime fields (batching, buckets, variability sources)")
    sv.add_argument("--sla-p99", type=float, metavar="MS", help="p99 latency budget in ms")
    sv.add_argument("--find-max-rate", action="store_true", help="highest rate holding the p99 budget")
    sv.add_argument("--variants", help="variants YAML (workload, sparsity, quality) for quality at equal budget")
    sv.add_argument("--budget-ms", type=float, help="latency budget for --variants (default --sla-p99)")
    sv.add_argument("--format", choices=["table", "json"], default="table")
    sv.add_argument("-o", "--out", help="directory for serve.json and the latency plots")
    sv.set_defaults(func=cmd_serve)

    tr = sub.add_parser("trace", help="per-tile Chrome/Perfetto trace (open in ui.perfetto.dev)")
    tr.add_argument("--hw", required=True)
    tr.add_argument("--workload", required=True)
    tr.add_argument("--sparsity", help="N:M pattern or dense (default: the workload's plan)")
    tr.add_argument("--layer", action="append", default=[], metavar="NAME", help="only these layers (repeatable)")
    tr.add_argument("--max-events", type=int, help="bound on events; reduced deterministically (default 500,000; "
                                                      "0 = no bound)")
    tr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    tr.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE")
    tr.add_argument("-o", "--out", required=True, help="trace JSON file")
    tr.set_defaults(func=cmd_trace)

    pl = sub.add_parser("plot", help="timeline, occupancy, roofline, traffic or power plot (PNG + SVG)")
    pl.add_argument("kind", choices=["timeline", "occupancy", "roofline", "traffic", "power"])
    pl.add_argument("--hw", required=True)
    pl.add_argument("--workload", required=True)
    pl.add_argument("--sparsity", help="N:M pattern or dense (default: the workload's plan)")
    pl.add_argument("--layer", help="timeline: only this layer")
    pl.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    pl.add_argument("--hw-set", action="append", default=[], metavar="PATH=VALUE")
    pl.add_argument("-o", "--out", required=True, help="output directory")
    pl.set_defaults(func=cmd_plot)

    vh = sub.add_parser("validate-hw", help="predicted vs measured 2:4 speedups on real GPUs")
    vh.add_argument("measurements", help="CSV in the format of shared/reference/gpu/a100_fp16_24_speedups.csv")
    vh.add_argument("--hw-map", action="append", required=True, metavar="GPU=CONFIG",
                    help="which config simulates which GPU, e.g. A100=hwconfigs/a100-like.yaml (repeatable)")
    vh.add_argument("-o", "--out", help="directory for validation.json/.csv and the scatter plot")
    vh.set_defaults(func=cmd_validate_hw)

    f = sub.add_parser("functional-check", help="prune, compress and execute an N:M GEMM tile by tile; "
                                                 "compare with numpy")
    f.add_argument("--m", type=int, required=True)
    f.add_argument("--n", type=int, required=True)
    f.add_argument("--k", type=int, required=True)
    f.add_argument("--pattern", required=True, help="N:M pattern, e.g. 2:4")
    f.add_argument("--dtype", default="fp16", choices=["fp32", "tf32", "fp16", "bf16", "fp8", "int8"])
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--hw", help="take the tiling from this hardware config (default: a 32x32 ws array)")
    f.add_argument("--format", choices=["table", "json"], help="default: from -o's extension (.json; otherwise "
                                                                  "table)")
    f.add_argument("-o", "--out", help="write the output to this file instead of stdout")
    f.set_defaults(func=cmd_functional_check)

    v = sub.add_parser("validate", help="check hardware configs, workloads, sweep specs, runtime configs and "
                                        "variants files (the kind is recognised from the keys)")
    v.add_argument("files", nargs="+")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("schema", help="print the JSON Schema of a config file kind")
    s.add_argument("which", choices=["hardware", "workload", "sweep", "runtime", "variants"])
    s.set_defaults(func=cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AccelsimError as exc:
        for line in exc.lines():  # one per problem, control characters escaped
            print(f"accelsim: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # last resort: writers raise OutputError, but no I/O failure may end in a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"accelsim: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
