"""accelsim quality list: the registry of published sparse-model quality, as a table or JSON."""

from __future__ import annotations

import argparse
import json

from accelsim.cli import options
from accelsim.quality import QualityEntry, find_entries

_TEXT_COLUMNS = ("model", "task", "format", "method", "ft", "dense", "sparse", "drop", "kind", "id")


def _cells(e: QualityEntry) -> tuple[str, ...]:
    return (e.model, f"{e.task} {e.metric}", e.format, e.method, "yes" if e.finetuned else "no",
            f"{e.dense:g}", f"{e.sparse:g}", f"{e.drop:+.4g}", e.kind, e.id)


def format_quality_table(entries: tuple[QualityEntry, ...]) -> str:
    """The entries as aligned text: one row each (drop > 0 means worse than dense), then the sources."""
    if not entries:
        return "no registry entry matches\n"
    rows = [_TEXT_COLUMNS, *(_cells(e) for e in entries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_TEXT_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    families = sorted({e.family for e in entries})
    formats = sorted({e.format for e in entries})
    lines.append("")
    lines.append(f"{len(entries)} entries ({sum(e.kind == 'published' for e in entries)} published, "
                 f"{sum(e.kind == 'derived' for e in entries)} derived); families: {', '.join(families)}; "
                 f"formats: {', '.join(formats)}")
    lines.append("drop: how much worse than dense in the metric's units (positive = worse); ft: fine-tuned after "
                 "pruning (no = one-shot)")
    lines.append("sources:")
    for src in sorted({f"{e.source_key}: {e.citation}" for e in entries}):
        lines.append(f"  {src}")
    return "\n".join(lines) + "\n"


def cmd_quality_list(args: argparse.Namespace) -> int:
    """Print the (filtered) registry."""
    entries = find_entries(model=args.model, format=args.sparsity, task=args.task, family=args.family)
    if args.format == "json":
        print(json.dumps([e.to_dict() for e in entries], indent=2))
    else:
        print(format_quality_table(entries), end="")
    return 0


def add_quality(sub: options.Subparsers) -> None:
    """The quality subcommand group (quality list)."""
    p = sub.add_parser("quality", help="published quality of sparse models (dense vs pruned, with sources)")
    qsub = p.add_subparsers(dest="quality_command", required=True, parser_class=options.Parser)
    lp = qsub.add_parser("list", help="the quality registry: model, task, metric, dense and sparse values, format, "
                                      "method, fine-tuned or one-shot, source")
    lp.add_argument("--model", help="only this model (case, spaces, hyphens, underscores and slashes ignored)")
    lp.add_argument("--family", help="only this model family, e.g. BERT, Llama-2, OPT")
    lp.add_argument("--task", help="only this task, e.g. WikiText-2, SQuAD v1.1")
    options.add_sparsity(lp, "only this sparsity format, e.g. 2:4, 64:2:8, unstructured:50%%")
    options.add_format(lp, ("text", "json"), "output (default: %(default)s)", default="text")
    lp.set_defaults(func=cmd_quality_list)
