"""accelsim decide: quality at equal latency budget for a family's variants, as a table or JSON, with
decision.json and the quality-vs-latency chart."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from accelsim.cli import options
from accelsim.cli.common import finish_folder_command, require_folder, warn
from accelsim.fileio import dumps_finite, figure_files
from accelsim.serving import Decision, decide
from accelsim.serving.limits import check_serve_args
from accelsim.textsafe import printable


def _num(v: float | None, fmt: str = "{:,.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def format_decision(d: Decision) -> str:
    """The variants (latency, quality and its evidence, whether each budget holds) and a verdict per budget."""
    kinds = ", ".join(f"{n} {k}" for k, n in d.quality_kinds.items())
    changed = f" (--hw-set {printable(', '.join(d.hw_set))})" if d.hw_set else ""
    lines = [f"DECISION  {printable(d.variants_file)} on {printable(d.hardware)}{changed}, {d.rate_rps:g} req/s, "
             f"{d.quantile} {d.latency_metric}, {d.requests or '-'} requests per variant (seed {d.seed})",
             f"quality: {printable(d.metric)} ({'higher' if d.higher_is_better else 'lower'} is better); figures: "
             f"{kinds}; counted in verdicts: {', '.join(d.counted_kinds)} only"]
    budgets = [vd.budget_ms for vd in d.verdicts]
    head = ["variant", "sparsity", f"{d.quantile} ms", "quality", "kind", *[f"<= {b:g}" for b in budgets], "source id"]
    rows = []
    for v in d.variants:
        marks = ["n/a" if not v.fits else ("holds" if v.meets(b) else "misses") for b in budgets]
        rows.append([printable(v.name), str(v.sparsity), _num(v.value_ms) if v.fits else "no fit",
                     _num(v.quality, "{:g}"), v.quality_kind + ("" if v.counted else "*"), *marks,
                     printable(v.quality_entry or v.quality_source or "-", 100)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        lines.append("  ".join(c.ljust(w) if i in (0, 1, 4, len(head) - 1) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    lines.append("* not counted: typed (illustrative / user) or missing quality figures are shown, never counted")
    for vd in d.verdicts:
        lines.append(f"verdict at {vd.budget_ms:g} ms: {printable(vd.message)}")
    lines += [f"note: {printable(n)}" for n in d.notes]
    sources = {v.quality_entry: v.quality_source for v in d.variants if v.quality_entry}
    if sources:
        lines.append("sources:")
        lines += [f"  {printable(k)}: {printable(s or '-', 400)}" for k, s in sources.items()]
    return "\n".join(lines) + "\n"


def decision_files(out: Path, d: Decision) -> dict[str | os.PathLike[str], bytes | str]:
    """decision.json and decision.png / .svg, rendered."""
    from accelsim.report.decision_chart import decision_figure  # matplotlib: deferred

    files: dict[str | os.PathLike[str], bytes | str] = {}
    for path, data in figure_files(decision_figure(d), out / "decision").items():
        files[path] = data
    files[out / "decision.json"] = (dumps_finite(d.to_dict(), "decide", indent=2) + "\n").encode()
    return files


def cmd_decide(args: argparse.Namespace) -> int:
    """Serve every variant, judge each budget, print the table (or JSON), write the files with -o."""
    require_folder(args.out)
    check_serve_args(rate=args.rate, duration_s=None, seed=args.seed, max_batch=args.max_batch,
                     max_wait_ms=args.max_wait_ms, instances=args.instances, sla_p99_ms=None, budget_ms=None,
                     trace=None)
    for b in args.budget_ms or []:
        check_serve_args(rate=None, duration_s=None, seed=args.seed, max_batch=None, max_wait_ms=None,
                         instances=None, budget_ms=b)
    config = {k: v for k, v in (("max_batch", args.max_batch), ("max_wait_ms", args.max_wait_ms),
                                ("instances", args.instances)) if v is not None}
    d = decide(args.variants, args.hw, args.budget_ms, args.rate, config=config, requests=args.requests,
               seed=args.seed, hw_set=args.hw_set)
    warn([printable(w) for w in d.warnings])  # variant names come from the user's file
    files = decision_files(Path(args.out), d) if args.out is not None else None
    return finish_folder_command("decide", d.to_dict(), format_decision(d), files, args.format == "json")


def add_decide(sub: options.Subparsers) -> None:
    """The decide subcommand."""
    p = sub.add_parser("decide", help="quality at equal latency budget: each variant's p99 beside its registry "
                                      "quality, the best within each budget vs the best dense")
    options.add_hw(p)
    p.add_argument("--variants", required=True, help="variants YAML (workloads, sparsity, registry quality), "
                                                     "e.g. examples/variants-bert.yaml, examples/variants-llama2.yaml")
    p.add_argument("--budget-ms", type=float, action="append", metavar="MS",
                   help="latency budget (repeatable; default the file's budget_ms)")
    p.add_argument("--rate", type=float, help="arrival rate, requests/s (default the file's rate_rps)")
    p.add_argument("--requests", type=int, help="requests simulated per variant (default the file's, else 20000)")
    options.add_seed(p)
    p.add_argument("--max-batch", type=int, help="largest batch (default the file's runtime, else 8)")
    p.add_argument("--max-wait-ms", type=float, help="longest wait for a batch to fill (default 2)")
    p.add_argument("--instances", type=int, help="accelerator instances (default 1)")
    options.add_hw_set(p)
    options.add_format(p, ("table", "json"), default="table")
    options.add_out(p, "directory for decision.json and decision.png / .svg")
    p.set_defaults(func=cmd_decide)
