"""accelsim reality-check, report, trace, plot and validate-hw: analyses of one workload on one config.

The handlers load the configs, call the analysis (or run the simulation), hand the result to a
renderer under :mod:`accelsim.report` and write what it renders through :mod:`accelsim.fileio`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelsim.analysis.deployment import DeploymentReport, build_report
from accelsim.analysis.power import power_limited
from accelsim.analysis.reality import reality_check
from accelsim.cli import options
from accelsim.cli.common import (
    command_line,
    load_pair,
    progress_bar,
    refuse_input_as_output,
    require_folder,
    warn,
    wrote,
)
from accelsim.cli.validate_hw import validate_hw_command
from accelsim.config.templating import parse_sets
from accelsim.errors import AccelsimError
from accelsim.fileio import atomic_open, refuse_input_targets, resolve_target, write_all
from accelsim.formats import normalize_format
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.report import plots
from accelsim.report.deploy import REPORT_FILES, report_files, summary_lines
from accelsim.report.reality_chart import chart_files, render_reality_check, text_bars
from accelsim.report.trace import DEFAULT_MAX_EVENTS, stream_trace
from accelsim.results import RunResult, dumps_finite
from accelsim.simulation import run
from accelsim.workloads.model import load_workload, with_dtype


def cmd_reality_check(args: argparse.Namespace) -> int:
    """Nominal vs real sparse speedup as text bars; with -o, the chart and its data."""
    hw, model, sparsity = load_pair(args)
    if args.dtype is not None:
        model = with_dtype(model, args.dtype)
    if sparsity == "dense" or (sparsity is None and not model.planned_patterns()):
        plan = "runs dense" if sparsity == "dense" else "has no sparsity plan"
        raise AccelsimError(f"reality-check needs a pattern: {args.workload} {plan}; pass --sparsity N:M "
                            f"(e.g. 2:4)")
    require_folder(args.out)
    data = reality_check(model, hw, sparsity, policy=args.policy, hw_source=args.hw, hw_set=args.hw_set or ())
    written: list[Path] = []
    if args.out:  # written before the bars are printed: a refused output prints nothing but its error
        out = Path(args.out)
        fig, _ = render_reality_check(data)
        files: dict[str | os.PathLike[str], bytes | str] = {p: b for p, b in chart_files(fig, out).items()}
        files[out / "reality_check.json"] = dumps_finite(data.to_dict(), "reality-check", indent=2) + "\n"
        written = write_all(files)  # all three or none
    warn(list(data.warnings))
    print(text_bars(data))
    wrote(written)
    return 0


def write_report(report: DeploymentReport, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write report.md, report.html, report.json and the chart files; return the paths written.

    Everything is rendered in memory first (:func:`accelsim.report.deploy.report_files`), then
    written all or nothing (:func:`accelsim.fileio.write_all`): a failure leaves the previous files
    or none, never a mix.
    """
    out = Path(out_dir)
    return write_all({out / name: payload for name, payload in report_files(report).items()})


def _report_command_line(hw_path: str, workload_path: str, out_dir: str, sparsity: str | None, sets: list[str],
                         hw_set: list[str], policy: str, patterns: list[str] | None, quality_threshold: float | None,
                         weights: str | None) -> list[str]:
    cmd = ["accelsim", "report", "--hw", str(hw_path), "--workload", str(workload_path)]
    for s in sets:
        cmd += ["--set", s]
    for s in hw_set:
        cmd += ["--hw-set", s]
    if sparsity:
        cmd += ["--sparsity", sparsity]
    if policy != "sparse-if-supported":
        cmd += ["--policy", policy]
    if patterns:
        cmd += ["--patterns", ",".join(patterns)]
    if quality_threshold is not None:
        cmd += ["--quality-threshold", f"{quality_threshold:g}"]
    if weights:
        cmd += ["--weights", str(weights)]
    return cmd + ["-o", str(out_dir)]


def report_command(hw_path: str, workload_path: str, out_dir: str, sparsity: str | None = "2:4",
                   set_params: list[str] | dict[str, Any] | None = None, hw_set: list[str] | None = None,
                   policy: str = "sparse-if-supported", patterns: list[str] | str | None = None,
                   quality_threshold: float | None = None, weights: str | None = None,
                   command: list[str] | str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> tuple[list[Path], list[str]]:
    """The ``accelsim report`` handler: load, analyse, write. Returns (paths written, summary lines to print).

    ``set_params``: workload parameters as ``KEY=VALUE`` strings (``--set``) or a dict.
    ``hw_set``: hardware overrides ``PATH=VALUE`` (``--hw-set``). ``patterns``: list or "2:4,1:4".
    """
    if isinstance(set_params, dict):
        params: dict[str, Any] = dict(set_params)
        sets = [f"{k}={v}" for k, v in set_params.items()]
    else:
        sets = list(set_params or [])
        params = parse_sets(sets, str(workload_path))
    if isinstance(patterns, str):
        patterns = [p.strip() for p in patterns.split(",") if p.strip()]
    hw = load_hardware(hw_path, list(hw_set or []))
    model = load_workload(workload_path, params)
    if command is None:
        command = _report_command_line(hw_path, workload_path, out_dir, sparsity, sets, list(hw_set or []), policy,
                                       patterns, quality_threshold, weights)
    report = build_report(model, hw, sparsity, policy=policy, patterns=patterns, quality_threshold=quality_threshold,
                          weights=weights, command=command, hw_source=str(hw_path),
                          workload_source=str(workload_path), progress=progress, hw_set=list(hw_set or []))
    paths = write_report(report, out_dir)
    return paths, summary_lines(report)


def cmd_report(args: argparse.Namespace) -> int:
    """The deployment report; exit 3 with --fail-on-breach when the quality guardrail trips."""
    require_folder(args.out, REPORT_FILES)
    bar, update = progress_bar(0, "stage")
    try:
        paths, lines = report_command(args.hw, args.workload, args.out, args.sparsity, args.set, args.hw_set,
                                      args.policy, args.patterns, args.quality_threshold, args.weights,
                                      command=command_line(), progress=update)
    finally:
        bar.close()
    for line in lines:
        print(line)
    wrote(paths)
    return 3 if args.fail_on_breach and lines and "BREACH" in lines[0] else 0


def _params(set_params: Any) -> dict[str, Any] | None:
    if set_params is None:
        return None
    if isinstance(set_params, dict):
        return dict(set_params)
    return parse_sets(list(set_params))


def write_trace(result: RunResult, hw: Hardware, out_path: str | os.PathLike[str], layers: list[str] | None = None,
                max_events: int | None = None) -> dict[str, Any]:
    """Write ``result`` (run with ``keep_tiles=True``) as a Chrome/Perfetto trace file.

    The trace is streamed (:func:`accelsim.report.trace.stream_trace`) into a temporary file that is
    renamed into place; a failure leaves no file. Returns the stream's stats with ``path`` and ``bytes``.
    """
    out = Path(out_path)
    with atomic_open(out) as fh:
        stats = stream_trace(result, hw, fh, layers=layers, max_events=max_events)
    return {"path": str(out), "events": stats["events"], "bytes": out.stat().st_size,
            **{k: v for k, v in stats.items() if k != "events"}}


def trace_command(hw_path: str | Path, workload_path: str | Path,
                  out: str | os.PathLike[str], sparsity: str | None = None, layers: list[str] | None = None,
                  max_events: int | None = None, set_params: Any = None,
                  hw_set: list[str] | None = None) -> dict[str, Any]:
    """``accelsim trace``: load the configs, run with per-tile records, write the trace.

    ``set_params``: workload parameters, a dict or ``KEY=VALUE`` strings (``--set``); ``hw_set``:
    ``dotted.path=VALUE`` hardware overrides (``--hw-set``); ``max_events``: None gives
    ``DEFAULT_MAX_EVENTS``, 0 no bound (a negative bound is an error). Returns :func:`write_trace`'s stats plus
    ``total_cycles`` and ``latency_us``.
    """
    if max_events is not None and max_events < 0:
        raise AccelsimError(f"trace: max_events must be >= 0 (0: no bound), got {max_events}")
    resolve_target(out)  # a folder or device as the output fails before the run, not after it
    hw = load_hardware(hw_path, list(hw_set or []))
    model = load_workload(workload_path, _params(set_params))
    refuse_input_targets([out])  # a file the configs pulled in (extends): refused before the run
    pattern = normalize_format(sparsity) if sparsity is not None else None
    result = run(model, hw, pattern, hw_source=str(hw_path), keep_tiles=True)
    bound = DEFAULT_MAX_EVENTS if max_events is None else (None if max_events == 0 else int(max_events))
    stats = write_trace(result, hw, out, layers=layers, max_events=bound)
    totals = result.totals
    stats["total_cycles"] = totals["cycles"]["total"]
    stats["latency_us"] = totals["latency_us"]
    return stats


def plot_command(kind: str, hw_path: str | Path, workload_path: str | Path,
                 out_dir: str | os.PathLike[str], sparsity: str | None = None, layer: str | None = None,
                 set_params: Any = None, hw_set: list[str] | None = None) -> list[Path]:
    """``accelsim plot KIND``: load, run (dense and/or sparse), draw, write ``<out_dir>/<KIND>.{png,svg}``.

    ``timeline`` draws the ``sparsity`` run (None: the workload's own plan, as ``run`` and ``trace``;
    ``layer`` optional); the other kinds compare a dense run with it, and need a pattern (from
    ``sparsity`` or the plan); ``power`` draws :func:`accelsim.analysis.power.power_limited`.
    ``set_params``: workload parameters as a dict or ``KEY=VALUE`` strings.
    """
    if kind not in plots.PLOT_KINDS:
        raise ValueError(f"unknown plot {kind!r}; expected one of {', '.join(plots.PLOT_KINDS)}")
    if layer is not None and kind != "timeline":
        raise ValueError(f"--layer {layer!r} applies to plot timeline only; plot {kind} draws the whole model")
    hw = load_hardware(hw_path, list(hw_set or []))
    model = load_workload(workload_path, _params(set_params))
    pattern = normalize_format(sparsity) if sparsity is not None else None
    if kind != "timeline" and (pattern == "dense" or (pattern is None and not model.planned_patterns())):
        raise ValueError(f"plot {kind} compares dense with a sparse run: {workload_path} "
                         f"{'runs dense' if pattern == 'dense' else 'has no sparsity plan'}; pass --sparsity N:M "
                         f"(e.g. 2:4)")
    if kind == "power":
        if hw.energy is None:
            raise ValueError(f"{hw.name} has no energy block: power cannot be plotted")
        fig = plots.plot_power(power_limited(model, hw, pattern, hw_source=str(hw_path)))
    else:
        tiles = kind in ("timeline", "occupancy")
        sparse = run(model, hw, pattern, hw_source=str(hw_path), keep_tiles=tiles)
        if kind == "timeline":
            if layer is not None:
                _refuse_timeless_layer(sparse, layer)
            fig = plots.plot_timeline(sparse, hw, layer=layer)
        else:
            dense = run(model, hw, "dense", hw_source=str(hw_path), keep_tiles=tiles)
            if kind == "occupancy":
                fig = plots.plot_occupancy(dense, sparse, hw)
            elif kind == "roofline":
                fig = plots.plot_roofline(dense, sparse, hw)
            else:
                fig = plots.plot_traffic(dense, sparse)
    return write_all({p: b for p, b in plots.figure_files(fig, Path(out_dir) / kind).items()})


def _refuse_timeless_layer(result: RunResult, layer: str) -> None:
    """A timeline of one layer that takes no time of its own (fused into another kernel) would be an empty chart."""
    layers = result.layers
    at = next((i for i, lay in enumerate(layers) if lay.name == layer), None)
    if at is None or layers[at].cycles["total"] > 0:
        return  # an unknown name is the timeline's own error (with suggestions)
    if layers[at].tiling.get("absorbed"):
        host = next((lay.name for lay in reversed(layers[:at]) if lay.cycles["total"] > 0
                     and lay.tiling.get("form") == "fused"), None)
        where = f"the fused kernel of layer '{host}'" if host else "the kernel it is fused into"
        raise ValueError(f"--layer '{layer}' takes no time of its own: it runs inside {where}; "
                         f"plot that layer's timeline instead")
    raise ValueError(f"--layer '{layer}' takes no time in this run (0 cycles): its timeline would be empty")


def cmd_trace(args: argparse.Namespace) -> int:
    """Write a Chrome/Perfetto trace and say how big it is."""
    refuse_input_as_output(args.out, {"--hw": args.hw, "--workload": args.workload})
    try:
        stats = trace_command(args.hw, args.workload, args.out, args.sparsity, args.layer or None, args.max_events,
                              args.set, args.hw_set)
    except ValueError as exc:
        raise AccelsimError(str(exc)) from None
    red = stats.get("reduction") or {}
    traced, span = stats["traced_us"], stats["span_us"]
    when = f"{traced:,.1f} us traced" + (f" over a {span:,.1f} us span" if f"{span:,.1f}" != f"{traced:,.1f}" else "")
    print(f"wrote {stats['path']}: {stats['events']:,} events, {stats['bytes'] / 1e6:.1f} MB, "
          f"{when}; reduction: {red.get('description', 'none')}", file=sys.stderr)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    """Write one plot as PNG and SVG."""
    try:
        paths = plot_command(args.kind, args.hw, args.workload, args.out, args.sparsity, args.layer, args.set,
                             args.hw_set)
    except ValueError as exc:
        raise AccelsimError(str(exc)) from None
    wrote(paths)
    return 0


def _say_step(step: str) -> None:
    print(f"accelsim validate-hw: {step}", file=sys.stderr)


def cmd_validate_hw(args: argparse.Namespace) -> int:
    """Predicted vs measured speedups; the exit code says whether they agree."""
    measurements = args.measurements[0] if len(args.measurements) == 1 else args.measurements
    code, text = validate_hw_command(measurements, args.hw_map, args.out, logo=args.leave_one_gpu_out,
                                     progress=_say_step)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return code


def add_reality_check(sub: options.Subparsers) -> None:
    """The reality-check subcommand."""
    rc = sub.add_parser("reality-check", help="nominal vs real sparse speedup, every loss explained, as a chart")
    options.add_target(rc, options.SPARSITY_PLAN)
    options.add_overrides(rc)
    options.add_policy(rc)
    options.add_dtype(rc, "run every layer in this element type instead of the workload's dtype (as run --dtype)")
    options.add_out(rc, "directory for reality_check.png/.svg/.json")
    rc.set_defaults(func=cmd_reality_check)


def add_report(sub: options.Subparsers) -> None:
    """The report subcommand."""
    rp = sub.add_parser("report", help="sparsity deployment report: report.md, report.html, report.json")
    options.add_target(rp, options.SPARSITY_PLAN)
    options.add_overrides(rp)
    options.add_policy(rp)
    rp.add_argument("--patterns", help="also tabulate these patterns in the supported-layer matrix, e.g. 2:4,1:4")
    rp.add_argument("--quality-threshold", type=float, help="largest acceptable quality drop (overrides max_drop)")
    rp.add_argument("--weights", help=".npz of weights by layer name (or .npy) for the pruning-error proxy")
    rp.add_argument("--fail-on-breach", action="store_true", help="exit 3 when the quality guardrail trips")
    options.add_out(rp, "output directory", required=True)
    rp.set_defaults(func=cmd_report)


def add_trace(sub: options.Subparsers) -> None:
    """The trace subcommand."""
    tr = sub.add_parser("trace", help="per-tile Chrome/Perfetto trace (open in ui.perfetto.dev)")
    options.add_target(tr, options.SPARSITY_OR_DENSE)
    tr.add_argument("--layer", action="append", default=[], metavar="NAME", help="only these layers (repeatable)")
    tr.add_argument("--max-events", type=options.non_negative_int,
                    help="bound on events; reduced deterministically (default 500,000; 0 = no bound)")
    options.add_overrides(tr)
    options.add_out(tr, "trace JSON file", required=True)
    tr.set_defaults(func=cmd_trace)


def add_plot(sub: options.Subparsers) -> None:
    """The plot subcommand."""
    pl = sub.add_parser("plot", help="timeline, occupancy, roofline, traffic or power plot (PNG + SVG)")
    pl.add_argument("kind", choices=["timeline", "occupancy", "roofline", "traffic", "power"])
    options.add_target(pl, options.SPARSITY_OR_DENSE)
    pl.add_argument("--layer", help="timeline: only this layer")
    options.add_overrides(pl)
    options.add_out(pl, "output directory", required=True)
    pl.set_defaults(func=cmd_plot)


def add_validate_hw(sub: options.Subparsers) -> None:
    """The validate-hw subcommand."""
    vh = sub.add_parser("validate-hw", help="predicted vs measured 2:4 speedups on real GPUs")
    vh.add_argument("measurements", nargs="+",
                    help="CSV(s) in the format of shared/reference/gpu/a100_fp16_24_speedups.csv (line numbers "
                         "in the output are per file); optional columns, or key=value tags in notes, say how a row "
                         "was measured: format, timing (framework / kernel-loop), kernels (default / searched), "
                         "c_dtype (e.g. int32/bf16), sparse_isa (native / sm80); see docs/validation.md")
    vh.add_argument("--leave-one-gpu-out", action="store_true",
                    help="also fit the calibrated fields shared by all mapped GPUs but one and predict the one "
                         "left out (needs two or more GPUs; about a minute)")
    vh.add_argument("--hw-map", action="append", required=True, metavar="GPU[@SOURCE]=CONFIG",
                    help="which config simulates which GPU, e.g. A100=hwconfigs/a100-like.yaml (repeatable); "
                         "GPU@SOURCE=CONFIG takes the rows of GPU whose source contains SOURCE, e.g. "
                         "A100@vllmbench=hwconfigs/a100-pcie-like.yaml; GPU@backend=NAME=CONFIG the rows whose notes "
                         "say backend=NAME")
    options.add_out(vh, "directory for validation.json/.csv and the scatter plot")
    vh.set_defaults(func=cmd_validate_hw)
