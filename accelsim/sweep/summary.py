"""What a finished sweep's rows add up to for its summary: infeasible rows, rows whose memory footprint
(or their dense baseline's) exceeds the device's memory, rows whose tensor-parallel split is uneven, rows of a
pattern that every layer asking for it runs dense (their numbers are the dense rows'); all but the first as
warnings that name a first example (what ``accelsim run`` warns for that point). And what the
spec itself leaves out without an error (:func:`spec_notes`): a ``set`` parameter a workload does not declare, a
pattern the hardware runs as another one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accelsim.errors import AccelsimError
from accelsim.hardware.model import hardware_from_dict
from accelsim.lowering import lower
from accelsim.reasons import REASON_CODES
from accelsim.sweep.columns import PLAN
from accelsim.sweep.points import with_overrides
from accelsim.sweep.spec import SweepSpec
from accelsim.workloads.model import workload_from_dict


@dataclass(frozen=True)
class RowSummary:
    """Counts over a sweep's rows, and the warnings they call for."""

    infeasible_rows: int
    over_memory_rows: int  # fits_memory False
    dense_over_memory_rows: int  # fits_memory True, dense_fits_memory False
    split_note_rows: int  # split_notes set: a system's split rounds sizes up or replicates layers
    warnings: tuple[str, ...]
    no_energy_rows: int = 0  # feasible, energy_j empty: no energy figures for the point's config / dtype


def summarize(spec: SweepSpec, rows: Sequence[Sequence[Any]]) -> RowSummary:
    """Count ``rows`` (full rows, ``spec.columns`` order) by feasibility, memory fit and split notes."""
    i = {c: n for n, c in enumerate(spec.columns)}
    infeasible = sum(1 for r in rows if r[i["feasible"]] is False)
    over = [r for r in rows if r[i["fits_memory"]] is False]
    dense_over = [r for r in rows if r[i["fits_memory"]] is True and r[i["dense_fits_memory"]] is False]
    noted = [r for r in rows if r[i["split_notes"]]]
    no_energy = [r for r in rows if r[i["feasible"]] is True and r[i["energy_j"]] is None]
    warnings = []
    if no_energy:
        warnings.append(f"energy: not modelled on {_share(no_energy, rows, i)}: energy_j, dense_energy_j and "
                        f"perf_per_watt_vs_dense are empty there ({_why_no_energy(spec, no_energy[0], i)})")
    if over:
        first = over[0]
        warnings.append(
            f"{_share(over, rows, i)} exceed the device's memory (fits_memory False: the memory footprint, weights "
            "as deployed, peak activations and KV cache, is more than dram.capacity_bytes); each is simulated as "
            f"if the device held it all, as `accelsim run` warns. E.g. {_where(spec, first, i)}: "
            f"{_over_text(spec, first, i)}")
    if dense_over:
        warnings.append(
            f"{_share(dense_over, rows, i)} fit, but not their dense baseline (dense_fits_memory False): "
            "speedup_vs_dense and perf_per_watt_vs_dense compare against a run that exceeds dram.capacity_bytes, "
            f"as `accelsim run` warns. E.g. {_where(spec, dense_over[0], i)}")
    if noted:
        first = noted[0]
        warnings.append(
            f"{_share(noted, rows, i)} split unevenly over a system's devices or replicate layers (split_notes, as "
            f"`accelsim run` warns). E.g. {_where(spec, first, i)}: {first[i['split_notes']]}")
    warnings += _all_dense_notes(spec, rows, i)
    warnings += spec_notes(spec)
    return RowSummary(infeasible, len(over), len(dense_over), len(noted), tuple(warnings), len(no_energy))


def spec_notes(spec: SweepSpec) -> list[str]:
    """What the spec leaves out without an error: ``set`` parameters a workload does not declare (its rows leave
    the column empty, fewer rows), and patterns that every layer asking for them runs as another (on the spec's
    hardware as given, before point overrides: their rows repeat that pattern's)."""
    notes = []
    for w in spec.workloads:
        missing = [k for k in spec.set_keys if all(k not in c for c in w.combos)]
        if missing:
            full = math.prod(len({c[k] for ww in spec.workloads for c in ww.combos if k in c}) or 1
                             for k in spec.set_keys)
            notes.append(f"workload {w.label} declares no parameter {', '.join(repr(k) for k in missing)}: its rows "
                         f"leave {'that column' if len(missing) == 1 else 'those columns'} empty "
                         f"({len(w.combos)} setting{'s' if len(w.combos) != 1 else ''} per point and pattern, not "
                         f"{full})")
    try:
        hw = hardware_from_dict(spec.hardware_data, spec.hardware_source)
    except AccelsimError:
        return notes
    promoted: dict[tuple[str, str], list[str]] = {}  # (asked, ran) -> workloads
    for w in spec.workloads:
        model = workload_from_dict(w.data, w.source, w.combos[0] if w.combos else {})
        for sp in spec.sparsity:
            if sp is None or sp == "dense":
                continue
            try:
                kernels = lower(model, hw, sp)
            except (AccelsimError, ValueError):
                continue
            ran = {k.pattern_executed for k in kernels if k.pattern_requested == sp and k.pattern_executed}
            if ran and sp not in ran:
                promoted.setdefault((sp, ", ".join(sorted(str(r) for r in ran))), []).append(w.label)
    for (sp, ran_text), labels in promoted.items():
        notes.append(f"sparsity {sp} runs as {ran_text} on {hw.name} for every layer of {', '.join(labels)} that asks "
                     f"for it (the hardware's pattern; pattern_promoted): those rows are the {ran_text} rows again, "
                     f"not a {sp} result")
    return notes


def _all_dense_notes(spec: SweepSpec, rows: Sequence[Sequence[Any]], i: dict[str, int]) -> list[str]:
    """One warning per sparsity value with rows where every layer that asks for the pattern runs dense
    (fallback_rate 1): those rows repeat the dense numbers. Names the first example and why its layers fell
    back (the fallback reasons of its workload lowered on its point's hardware)."""
    by_sp: dict[str, list[Sequence[Any]]] = {}
    for r in rows:
        if r[i["feasible"]] is not False and r[i["fallback_layers"]] and r[i["fallback_rate"]] == 1.0:
            by_sp.setdefault(str(r[i["sparsity"]]), []).append(r)
    notes = []
    for sp, hit in by_sp.items():
        first = hit[0]
        what = "the workload's own plan" if sp == PLAN else f"sparsity {sp}"
        of_sp = [r for r in rows if str(r[i["sparsity"]]) == sp]
        notes.append(f"{_share(hit, of_sp, i)} of {what} run every layer that asks for a sparse format dense "
                     f"(fallback_rate 1): their numbers are the dense rows', not a sparse result. "
                     f"E.g. {_where(spec, first, i)}: {first[i['fallback_layers']]:,} layer(s) dense"
                     f"{_why_dense(spec, first, i)}")
    return notes


def _why_dense(spec: SweepSpec, row: Sequence[Any], i: dict[str, int]) -> str:
    """' on HW: N reason (what it means), M reason...' for the example row's fallbacks, commonest first; ''
    when they cannot be told apart here."""
    point = spec.points[row[i["point"]]]
    w = next((w for w in spec.workloads if w.label == row[i["workload"]]), None)
    if w is None:
        return ""
    combo = next((c for c in w.combos if all(c.get(k, row[i[k]]) == row[i[k]] for k in spec.set_keys)),
                 w.combos[0] if w.combos else {})
    sp = row[i["sparsity"]]
    src = f"{spec.hardware_source} (point {point.index})"
    try:
        hw = hardware_from_dict(with_overrides(spec.hardware_data, point.overrides, src), src)
        kernels = lower(workload_from_dict(w.data, w.source, combo), hw, None if sp == PLAN else str(sp))
    except (AccelsimError, ValueError):
        return ""
    reasons: dict[str, int] = {}
    for k in kernels:
        if k.pattern_requested and k.pattern_executed is None and k.reason:
            reasons[k.reason] = reasons.get(k.reason, 0) + 1
    if not reasons:  # lowering runs them sparse: policy 'fastest' sent them back after simulating
        return f" (policy {spec.policy}: slower_than_dense)" if spec.policy == "fastest" else ""
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))  # the commonest, explained, first
    code, n = ranked[0]
    rest = "".join(f", {m:,} {c}" for c, m in ranked[1:])
    return f" on {hw.name}: {n:,} {code} ({REASON_CODES.get(code, code)}){rest}"


def _share(some: list[Sequence[Any]], rows: Sequence[Sequence[Any]], i: dict[str, int]) -> str:
    """'N of M rows (P points)'."""
    points = len({r[i["point"]] for r in some})
    return f"{len(some):,} of {len(rows):,} rows ({points:,} point{'s' if points != 1 else ''})"


def _where(spec: SweepSpec, row: Sequence[Any], i: dict[str, int]) -> str:
    """A row in words: its point, swept values, workload, set parameters and sparsity."""
    swept = [f"{k}={row[i[k]]}" for k in spec.swept]
    params = [f"{k}={row[i[k]]}" for k in spec.set_keys]
    what = ", ".join([row[i["workload"]], *params, str(row[i["sparsity"]])])
    return f"point {row[i['point']]}{' (' + ', '.join(swept) + ')' if swept else ''}, {what}"


def _over_text(spec: SweepSpec, row: Sequence[Any], i: dict[str, int]) -> str:
    """The example's footprint against its capacity (the point's hardware, built once for this line)."""
    point = spec.points[row[i["point"]]]
    src = f"{spec.hardware_source} (point {point.index})"
    hw = hardware_from_dict(with_overrides(spec.hardware_data, point.overrides, src), src)
    total, cap = row[i["footprint_bytes"]], hw.dram.capacity_bytes
    shard = f" per device's shard of {hw.devices}" if hw.devices > 1 else ""
    return f"footprint {total:,} bytes{shard} > dram.capacity_bytes {cap:,} (by {total - cap:,} bytes)"


def _why_no_energy(spec: SweepSpec, row: Sequence[Any], i: dict[str, int]) -> str:
    """Why the example row has no energy: its config has no energy block, or none for the workload's dtype."""
    point = spec.points[row[i["point"]]]
    src = f"{spec.hardware_source} (point {point.index})"
    hw = hardware_from_dict(with_overrides(spec.hardware_data, point.overrides, src), src)
    where = _where(spec, row, i)
    if hw.energy is None:
        return f"the config has no energy: block; e.g. {where}"
    w = next(w for w in spec.workloads if w.label == row[i["workload"]])
    dtype = workload_from_dict(w.data, w.source, {k: row[i[k]] for k in spec.set_keys if k in i and
                                                  any(k in c for c in w.combos)}).dtype
    return f"the config's energy.mac_pj has no {dtype} entry; e.g. {where}"
