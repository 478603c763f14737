"""Text rendering of a hardware config's provenance: each number with its kind, source and derivation."""

from __future__ import annotations

import json

from accelsim.hardware.provenance import Provenance


def _value(v: object) -> str:
    text = json.dumps(v) if isinstance(v, list) else f"{v:g}" if isinstance(v, float) else str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def format_provenance(prov: Provenance, source: str) -> str:
    """One line per number of the merged config (path, value, kind, sources, how, file), then the sources
    and the published tensor rates."""
    rows = [[r.path, _value(r.value), r.kind, r.source, r.how, "" if r.file == source else r.file]
            for r in prov.values]
    rows += [[p, "", "(none)", "", "", ""] for p in prov.unaccounted]
    header = ["value", "", "kind", "source", "how", "from"]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header[:4])]
    lines = [f"{source}: {prov.summary()}"]
    for r in [header, *rows]:
        head = "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True))
        tail = "  ".join(x for x in (r[4], f"[{r[5]}]" if r[5] else "") if x)
        lines.append(f"  {head}  {tail}".rstrip())
    if prov.tensor_tflops:
        lines.append("  published tensor rates (TFLOPS / TOPS, dense | 2:4 sparse):")
        for dtype, rate in prov.tensor_tflops.items():
            sparse = f"{rate.sparse:g}" if rate.sparse is not None else "-"
            note = f"  ({rate.note})" if rate.note else ""
            lines.append(f"    {dtype:5} {rate.dense:>9g} | {sparse:<9} [{rate.source}]{note}")
    if prov.sources:
        lines.append("  sources:")
        lines.extend(f"    [{key}] {text}" for key, text in prov.sources.items())
    return "\n".join(lines)
