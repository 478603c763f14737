"""accelsim run: simulate a workload on a hardware config; its table, CSV and per-op-type views."""

from __future__ import annotations

import argparse
import csv
import io
from typing import Any

from accelsim.analysis.explain import traffic_notes
from accelsim.cli import options
from accelsim.cli.common import (
    command_line,
    emit,
    load_pair,
    output_format,
    progress_bar,
    refuse_input_as_output,
    warn,
)
from accelsim.fileio import resolve_target
from accelsim.report.clock_text import clock_line
from accelsim.results import RunResult
from accelsim.simulation import run
from accelsim.textsafe import printable
from accelsim.workloads.model import with_dtype, with_quantization
from accelsim.workloads.moe import routing_line
from accelsim.workloads.plan import plan_text


def _fmt_int(v: int) -> str:
    return f"{v:,}"


def _shape_text(shape: dict[str, int]) -> str:
    if "elements" in shape:
        return f"{shape['elements']:,} el"
    if "message_bytes" in shape:  # a collective of a tensor-parallel system
        return f"{shape['message_bytes']:,} B x{shape['devices']}"
    text = f"{shape['m']}x{shape['n']}x{shape['k']}"
    return f"{shape['batch']}x({text})" if "batch" in shape else text


def util_line(layers: list[dict[str, Any]], dtype: str) -> str:
    """What the util column means where it is not plain MACs over the workload dtype's peak."""
    types = sorted({lay["dtype"] for lay in layers if "dtype" in lay})
    peak = (f"peak in the type it runs in ({', '.join(types)} where quantized, {dtype} elsewhere)" if types
            else "peak")
    return (f"util: an array layer's executed MACs over the array's {peak}; a vector layer's ops over the vector "
            "unit's peak; TOTAL: the array's over the model's cycles (vector layers add time, no array work)")


def format_by_op_type(result: RunResult) -> str:
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


# the cycle components a table shows, in the order of a result's ``cycles`` dict, and their column heads; a
# component not named here is shown under its own key (a row's components always sum to its cycles)
CYCLE_COLUMNS = {"compute": "compute", "stall_memory": "stall mem", "stall_decode": "stall dec", "launch": "launch",
                 "stall_gather": "stall gat", "communication": "comm"}


def cycle_components(body: dict[str, Any]) -> list[str]:
    """The ``cycles`` keys other than ``total`` that any layer or the totals of a result body carry, in order."""
    keys: dict[str, None] = {}
    for c in [body["totals"]["cycles"], *(lay["cycles"] for lay in body["layers"])]:
        keys.update(dict.fromkeys(k for k in c if k != "total"))
    return list(keys)


def format_table(result: RunResult, hw_set: list[str] | None = None) -> str:
    """Human-readable per-layer table and totals of a RunResult; a row's cycles are the sum of its components."""
    body = result.body()
    hw, wl = body["hardware"], body["workload"]
    rows = []
    parts = cycle_components(body)
    head = ["layer", "op", "m x n x k", "path", "pattern", "reason", "cycles",
            *(CYCLE_COLUMNS.get(k, k) for k in parts), "util", "binding", "vs dense"]
    for lay in body["layers"]:
        c = lay["cycles"]
        absorbed = (lay.get("tiling") or {}).get("absorbed")  # fused into the attention kernel above it
        shape = "(fused)" if absorbed else _shape_text(lay["shape"])
        causal = (lay.get("tiling") or {}).get("causal")
        if causal:  # fused: the tiles above the diagonal skipped; unfused: the full product computed, then masked
            shape += " causal (full)" if causal.get("masked_after_full_product") else " causal"
        rows.append([printable(lay["name"]), lay["op"], shape,
                     lay["path"],
                     lay["pattern_executed"] or "-", lay["reason"] or "-", _fmt_int(c["total"]),
                     *(_fmt_int(c.get(k, 0)) for k in parts),
                     f"{lay['utilization'] * 100:.1f}%", lay["binding"], f"{lay['speedup_vs_dense']:.3f}x"])
    t = body["totals"]
    c = t["cycles"]
    rows.append(["TOTAL", "", "", "", "", "", _fmt_int(c["total"]), *(_fmt_int(c.get(k, 0)) for k in parts),
                 f"{t['utilization'] * 100:.1f}%", "", f"{t['speedup_vs_dense']:.3f}x"])
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    right = {*range(6, 8 + len(parts)), 9 + len(parts)}  # the cycles, their components, util and vs dense

    def line(r: list[str]) -> str:
        cells = zip(r, widths, strict=True)
        return "  ".join(str(v).rjust(w) if i in right else str(v).ljust(w) for i, (v, w) in enumerate(cells))

    sep = "  ".join("-" * w for w in widths)
    changed = f", --hw-set {printable(', '.join(hw_set))}" if hw_set else ""  # the file's config, changed
    title = (f"{printable(wl['name'])} on {printable(hw['name'])} ({hw['clock_ghz']} GHz{changed}), sparsity: "
             f"{body['sparsity'] or f'per workload plan ({plan_text(result.layers)})'}")
    if "dtype_declared" in wl:
        title += f", dtype: {wl['dtype']} (--dtype; the workload says {wl['dtype_declared']})"
    if "quantization" in wl:
        q = wl["quantization"]
        title += (f", quantized: {q['weights']} weights x {q['activations']} activations on {q['quantized_layers']} "
                  f"linears ({q['mode']} {q['granularity']} quantize layers, dequantize {q['dequantize']})")
    dram = t["bytes"]["dram"]
    sysinfo = body.get("system")
    each = " per device" if sysinfo else ""  # a tensor-parallel system: the layers are one device's shard
    foot = (f"latency {t['latency_us']:,.3f} us | DRAM bytes{each}: A values {_fmt_int(dram['a_values'])}, "
            f"A metadata {_fmt_int(dram['a_metadata'])}, B {_fmt_int(dram['b'])}, C {_fmt_int(dram['c'])} | "
            f"dense total {_fmt_int(t['dense_total_cycles'])} cycles")
    lines = [title, line(head), sep, *[line(r) for r in rows[:-1]], sep, line(rows[-1]), foot]
    if any(lay["path"] == "vector" or "dtype" in lay for lay in body["layers"]):
        lines.append(util_line(body["layers"], wl.get("dtype", "")))
    if "clock" in t:
        lines.append(clock_line(t["clock"], len(body["layers"])))
    if "energy" in t:
        e = t["energy"]
        comp = e["by_component_j"]
        share = ", ".join(f"{k} {v / e['total_j'] * 100:.0f}%" for k, v in comp.items() if v > 0.005 * e["total_j"])
        scope, each_e = "", ""
        if "per_device" in e:  # a system: the totals are all its devices', then one device's figures
            d = e["per_device"]
            scope = f" (system of {e['devices']} devices)"
            each_e = (f" | per device {d['total_j'] * 1e3:,.3f} mJ (dense {d['dense_total_j'] * 1e3:,.3f} mJ), "
                      f"avg power {d['avg_power_w']:,.1f} W")
        lines.append(f"energy{scope} {e['total_j'] * 1e3:,.3f} mJ (dense {e['dense_total_j'] * 1e3:,.3f} mJ) | "
                     f"avg power {e['avg_power_w']:,.1f} W | perf/W vs dense {e['perf_per_watt_vs_dense']:.3f}x | "
                     f"{share}{each_e}")
    fp = body.get("footprint") or {}
    if fp:
        cap = fp.get("dram_capacity_bytes")
        lines.append(f"footprint{each} {_fmt_int(fp['total_bytes'])} bytes: weights as deployed "
                     f"{_fmt_int(fp['weights_deployed_bytes'])} ({_fmt_int(fp['weights_metadata_bytes'])} of it "
                     f"metadata; dense {_fmt_int(fp['weights_dense_bytes'])}), peak activations "
                     f"{_fmt_int(fp['activations_peak_bytes'])}, KV cache {_fmt_int(fp['kv_cache_bytes'])}"
                     + (f" | DRAM {_fmt_int(cap)}: {'fits' if fp['fits'] else 'DOES NOT FIT'}" if cap else "")
                     + (f" (over by {_fmt_int(fp['over_capacity_bytes'])})" if fp.get("over_capacity_bytes") else "")
                     + (f"; its dense baseline DOES NOT FIT (over by "
                        f"{_fmt_int(fp['dense_baseline_over_capacity_bytes'])})"
                        if fp.get("dense_baseline_over_capacity_bytes") else ""))
    if sysinfo:  # a tensor-parallel system: the layers are one device's shard
        comm, split = sysinfo["communication"], sysinfo["split"]
        kv = (f"{split['kv_heads_per_device']} of {split['kv_heads']} KV heads per device"
              f"{', replicated' if split['kv_replicated'] else ''}" if split.get("kv_heads") is not None else
              "K/V projections split by columns, not by head")
        lines.append(f"system: {sysinfo['devices']} x {printable(sysinfo['device'])}, tensor parallel "
                     f"({split['scheme']}; {kv}); layers, bytes and footprint per device (each runs its shard), "
                     f"energy and power for all {sysinfo['devices']} | "
                     f"communication {_fmt_int(comm['cycles'])} cycles in {comm['collectives']:,} collectives "
                     f"({comm['share_of_time'] * 100:.1f}% of time, overlap {sysinfo['interconnect']['overlap']})")
    # the routing assumption of the moe ops (accelsim.workloads.moe)
    lines += [routing_line(moe) for moe in wl.get("moe") or []]
    lines += [f"why: {note.text()}" for note in traffic_notes(body)]
    return "\n".join(lines) + "\n"


# m, n, k, batch and gemms describe the product: macs = m * n * k * batch * gemms (gemms: 2 for fused attention,
# QK^T and PV; else 1); an op fused into the attention kernel above it has fused True and no shape of its own.
# elements: a vector op's (a depthwise conv on the vector unit has both); message_bytes and devices: a collective's.
# energy_j and dense_energy_j: the layer's energy and its dense baseline's (empty without an energy table)
CSV_FIELDS = ["name", "op", "m", "n", "k", "batch", "gemms", "elements", "message_bytes", "devices", "fused", "path",
              "pattern_requested", "pattern_executed", "reason", "cycles_total", "cycles_compute",
              "cycles_stall_memory", "cycles_stall_decode", "cycles_launch", "macs", "macs_executed", "utilization",
              "dram_a_values", "dram_a_metadata", "dram_b", "dram_c", "sram_a_values", "sram_a_metadata", "sram_b",
              "sram_c", "binding", "speedup_vs_dense", "dense_cycles", "clock_ghz", "power_capped", "energy_j",
              "dense_energy_j"]


def format_csv(result: RunResult) -> str:
    """One CSV row per layer."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    comm = result.system is not None  # a tensor-parallel system: its collectives' cycles as a last column
    w.writerow(CSV_FIELDS + (["cycles_communication"] if comm else []))
    for lay in result.body()["layers"]:
        c, d, s = lay["cycles"], lay["bytes"]["dram"], lay["bytes"]["sram"]
        shp = lay["shape"]
        fused = bool((lay.get("tiling") or {}).get("absorbed"))
        dims: list[object] = ["", "", "", "", ""]
        if "m" in shp and not fused:
            dims = [shp["m"], shp["n"], shp["k"], shp.get("batch", 1), 2 if lay["op"] == "attention" else 1]
        sizes = ["" if fused else shp.get(key, "") for key in ("elements", "message_bytes", "devices")]
        energy = lay.get("energy") or {}
        w.writerow([lay["name"], lay["op"], *dims, *sizes, fused, lay["path"],
                    lay["pattern_requested"] or "", lay["pattern_executed"] or "", lay["reason"] or "",
                    c["total"], c["compute"], c["stall_memory"], c["stall_decode"], c["launch"], lay["macs"],
                    lay["macs_executed"], lay["utilization"], d["a_values"], d["a_metadata"], d["b"], d["c"],
                    s["a_values"], s["a_metadata"], s["b"], s["c"], lay["binding"], lay["speedup_vs_dense"],
                    lay["dense_cycles"], lay["clock"]["ghz"] if "clock" in lay else "",
                    lay["clock"]["power_capped"] if "clock" in lay else "",
                    energy.get("total_j", ""), energy.get("dense_total_j", ""),
                    *([c.get("communication", 0)] if comm else [])])
    return buf.getvalue()


def cmd_run(args: argparse.Namespace) -> int:
    """Run one simulation and print (or write) it as a table, JSON or CSV."""
    fmt = output_format("run", args.format, args.out, ("table", "json", "csv"))
    if args.out:
        resolve_target(args.out)  # a folder or device in the way fails before the run
        refuse_input_as_output(args.out, {"--hw": args.hw, "--workload": args.workload})
    hw, model, sparsity = load_pair(args)
    if args.quantize is not None:
        model = with_quantization(model, args.quantize)
    if args.dtype is not None:
        model = with_dtype(model, args.dtype)
    bar, update = progress_bar(len(model.layers))
    try:
        result = run(model, hw, sparsity, policy=args.policy, hw_source=args.hw, progress=update,
                     command=command_line())
    finally:
        bar.close()
    if fmt == "json":
        text = result.to_json()
    elif fmt == "csv":
        text = format_csv(result)
    else:
        text = format_table(result, args.hw_set)
        if args.by_op_type:
            text += "\n" + format_by_op_type(result)
    warn(result.warnings)
    emit(text, args.out)
    return 0


def add_run(sub: options.Subparsers) -> None:
    """The run subcommand."""
    r = sub.add_parser("run", help="simulate a workload on a hardware config")
    options.add_target(r, "sparsity format for every weight layer (2:4, channel:50%%, unstructured:90%%, ...), "
                             "or 'dense' (overrides the workload)",
                       hw_help="hardware YAML (hwconfigs/*.yaml)", workload_help="workload YAML (workloads/*.yaml)")
    options.add_hw_set(r, "override one hardware field, e.g. dram.bandwidth_gb_s=100 (repeatable)")
    options.add_set(r, "set a workload parameter, e.g. batch=16 or seq=512 (repeatable)")
    options.add_policy(r, "'fastest' also simulates dense and keeps the faster kernel per layer")
    options.add_dtype(r, "run every layer in this element type instead of the workload's dtype (e.g. an fp32 "
                         "ONNX import deployed as fp16)")
    r.add_argument("--quantize", choices=["int8", "fp8"], help="quantize every gemm layer's weights to this type, "
                   "activations staying in the workload dtype (dynamic per-token quantize layers, dequantize fused "
                   "in the GEMM epilogue); a workload's own quantization section says more")
    r.add_argument("--by-op-type", action="store_true", help="add a summary per op type x path to the table")
    options.add_format(r, ("table", "json", "csv"), "default: from -o's extension (.json, .csv; otherwise table)")
    options.add_out(r, "write the output to this file instead of stdout")
    r.set_defaults(func=cmd_run)
