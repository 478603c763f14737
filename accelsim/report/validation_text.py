"""Text renderings of a GPU validation and a calibration: metric tables, the per-row table, the CSV.

Takes the frozen results of :mod:`accelsim.analysis.gpu_validation` and :mod:`accelsim.analysis.calibration`
and returns text; computes nothing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a renderer does not import the simulation
    from accelsim.analysis.calibration import Calibration5Result
    from accelsim.analysis.calibration.across_gpus import FamilyFit, LeaveOneGpuOut
    from accelsim.analysis.validation_results import GroupResult, Metrics, RowResult, ValidationResult

CSV_FIELDS = ("line", "gpu", "hw", "dtype", "m", "n", "k", "regime", "main", "backend", "source_label",
              "measured_speedup", "predicted_speedup", "error", "abs_error", "ape_pct", "right_side",
              "measured_dense_us", "predicted_dense_us", "dense_time_err_pct", "measured_sparse_us",
              "predicted_sparse_us", "sparse_time_err_pct", "sparse_path", "sparse_reason", "dense_binding",
              "sparse_binding", "dense_tile", "sparse_tile", "dense_split_k", "status", "scored", "message", "source",
              "format", "timing", "kernels", "c_dtype", "sparse_isa")


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _pct(x: float | None) -> str:
    return _f(x, ".1f") + ("%" if x is not None else "")


def _table(header: list[str], body: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in pairs)

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in body)])


def format_groups(groups: Sequence[GroupResult]) -> str:
    """The per GPU / dtype / regime metrics table."""
    header = ["gpu", "hw", "dtype", "regime", "rows", "scored", "MAE", "MAPE", "right side", "Spearman",
              "bias", "dense t err", "sparse t err", "rule MAE", "rule right"]
    body = []
    for g in groups:
        m = g.metrics
        dtype = g.dtype if g.format is None else f"{g.dtype} {g.format}"
        body.append([g.gpu, str(g.hw), dtype, g.regime, str(g.rows), str(m.n), _f(m.mae, ".3f"), _pct(m.mape),
                     (f"{m.right_side_rows}/{m.n} ({(m.right_side or 0.0) * 100:.0f}%)" if m.n else "-"),
                     _f(m.spearman, ".2f"), _f(m.bias, "+.3f"), _pct(m.dense_time_mape), _pct(m.sparse_time_mape),
                     _f(m.rule_mae, ".3f"), _pct(None if m.rule_right_side is None else m.rule_right_side * 100)])
    return _table(header, body, {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})


def format_rows(rows: Sequence[RowResult]) -> str:
    """The per-row table: measured vs predicted speedup and times."""
    header = ["line", "gpu", "regime", "backend", "m", "n", "k", "meas", "pred", "err", "dense us meas/pred",
              "sparse us meas/pred", "status"]
    body = []
    for r in rows:
        p = r.predicted
        meas = r.measured
        body.append([str(r.line), r.gpu, r.regime, r.backend or "-", str(r.m), str(r.n), str(r.k),
                     f"{meas.speedup:.3f}", _f(p.speedup if p else None, ".3f"), _f(r.error, "+.3f"),
                     f"{_f(meas.dense_us, '.1f')} / {_f(p.dense_us if p else None, '.1f')}",
                     f"{_f(meas.sparse_us, '.1f')} / {_f(p.sparse_us if p else None, '.1f')}",
                     r.status if r.status != "scored" else ("main" if r.main else "other")])
    return _table(header, body, {0, 4, 5, 6, 7, 8, 9, 10, 11})


def overall_line(m: Metrics) -> str:
    """One line: the model over all scored main-regime rows, next to the FLOPs rule of thumb."""
    if not m.n:
        return "overall: no scored rows"
    return (f"overall ({m.n} scored rows): model MAE {_f(m.mae, '.3f')}, right side "
            f"{(m.right_side or 0.0) * 100:.0f}%; rule of thumb by FLOPs (0.8x < 1 GFLOP, 1.2x < 100 GFLOP, "
            f"else 1.55x) MAE {_f(m.rule_mae, '.3f')}, right side {(m.rule_right_side or 0.0) * 100:.0f}%")


def format_logo(result: LeaveOneGpuOut) -> str:
    """Leave-one-GPU-out: per left-out GPU the shared values fitted without it and its score, then in-sample."""
    header = ["GPU", "config", "fitted on", "eff dense", "eff sparse", "fixed dense", "fixed sparse",
              "host floor", "rows", "MAE", "right side", "rule MAE", "rule right"]
    right = set(range(3, len(header)))

    def row(label: str, hw: str, cal: Any, m: Metrics, host: str | None) -> list[str]:
        floor = "" if host is None else f"{cal.host_floor_ns(host) / 1000:.2f} us"
        return [label, hw, " + ".join(cal.fitted_on), f"{cal.efficiency_dense:.2f}", f"{cal.efficiency_sparse:.2f}",
                f"{cal.launch_dense_ns / 1000:.2f} us", f"{cal.launch_sparse_ns / 1000:.2f} us", floor, str(m.n),
                _f(m.mae, ".3f"), _pct(None if m.right_side is None else m.right_side * 100), _f(m.rule_mae, ".3f"),
                _pct(None if m.rule_right_side is None else m.rule_right_side * 100)]

    body = [row(f.left_out, f.score.hardware, f.calibration, f.score.metrics, f.left_out) for f in result.folds]
    ins = [row(s.gpu, s.hardware, result.in_sample, s.metrics, s.gpu) for s in result.in_sample_scores]
    ins.append(row("all", "", result.in_sample, result.in_sample_overall, None))
    fitted = "; ".join(f"without {f.left_out}: " + ", ".join(f"{h} {ns / 1000:.2f} us"
                                                              for h, ns in f.calibration.host_floors_ns)
                       for f in result.folds)
    floors = ("Each measured host has its own per-call floor (host.call_floor_us); a left-out GPU's host was never "
              f"measured and takes the least floor of the hosts fitted on ({fitted})"
              if any(f.calibration.host_floors_ns for f in result.folds) else "No host per-call floor fitted")
    return "\n".join([
        f"Leave one GPU out (main regimes {', '.join(result.main_regimes)}, measured <= {result.bound:g}x): "
        "efficiencies and fixed costs (ns) shared by the GPUs fitted on; each config keeps its spec-sheet "
        f"numbers and its own dram.sustained_fraction. {floors}", _table(header, body, right), "",
        "In-sample: one shared fit on every GPU (each GPU's host with its own floor)", _table(header, ins, right)])


def format_family_fit(result: FamilyFit) -> str:
    """A family fit: the shared values (fixed costs in us), each config's cycles, and the score before/after."""
    cal = result.calibration
    parts = _table(["hw-map key", "config", "launch dense (cycles)", "launch sparse (cycles)"],
                   [[k, n, str(int(d)), str(int(s))] for k, n, d, s in result.parts], {2, 3})
    lines = [f"Family fit on {cal.rows} rows ({', '.join(cal.fitted_on)}): efficiency dense "
             f"{cal.efficiency_dense:.2f}, sparse {cal.efficiency_sparse:.2f}; "
             f"fixed cost dense {cal.launch_dense_ns / 1000:.3f} us, "
             f"sparse {cal.launch_sparse_ns / 1000:.3f} us; host per-call floor (host.call_floor_us) "
             f"{result.host_floor_ns / 1000:.3f} us (objective {cal.objective:.4f})", parts, ""]
    for label, score in (("as given", result.before), ("fitted", result.after)):
        lines.append(f"{label:>8}: {overall_line(score.metrics)}")
    return "\n".join(lines)


def format_report(result: ValidationResult, with_rows: bool = True) -> str:
    """The text report: main table, all groups, notes, and (optionally) every row."""
    parts = ["Main regimes (" + ", ".join(result.main_regimes) + ") per GPU / dtype",
             format_groups(result.main), overall_line(result.overall), "",
             "Per GPU / dtype / regime", format_groups(result.groups), ""]
    parts += [f"note: {n}" for n in result.notes]
    if with_rows:
        parts += ["", "Per row (speedup = dense / sparse; err = predicted - measured)", format_rows(result.rows)]
    return "\n".join(parts)


def rows_csv(result: ValidationResult) -> str:
    """One CSV line per row (validation.csv)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in result.rows:
        w.writerow(_row_fields(r))
    return buf.getvalue()


def logo_csv(result: LeaveOneGpuOut) -> str:
    """leave_one_gpu_out.csv: every row of each left-out GPU as its fold predicts it (``fit`` = ``without GPU``),
    then every row with the one in-sample fit (``fit`` = ``in-sample``); the validation.csv columns after
    ``fit`` and the fit's shared values."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("fit", "eff_dense", "eff_sparse", "fixed_dense_ns", "fixed_sparse_ns", "host_floor_ns") + CSV_FIELDS)
    scored = [(f"without {f.left_out}", f.calibration, f.score) for f in result.folds]
    scored += [("in-sample", result.in_sample, s) for s in result.in_sample_scores]
    for label, cal, score in scored:
        values = [label, f"{cal.efficiency_dense:g}", f"{cal.efficiency_sparse:g}", cal.launch_dense_ns,
                  cal.launch_sparse_ns, cal.host_floor_ns(score.gpu)]
        for r in score.rows:
            w.writerow(values + _row_fields(r))
    return buf.getvalue()


def _row_fields(r: RowResult) -> list[Any]:
    """One row's CSV_FIELDS values."""

    def num(x: Any, fmt: str = ".6g") -> str:
        return "" if x is None else format(x, fmt)

    def tile(t: Any) -> str:
        return "x".join(str(v) for v in t) if t else ""

    p = r.predicted
    meas = r.measured
    return [r.line, r.gpu, r.hw or "", r.dtype, r.m, r.n, r.k, r.regime, int(r.main), r.backend,
            r.source_label, num(meas.speedup), num(p.speedup if p else None), num(r.error),
            num(r.abs_error), num(r.ape), "" if r.right_side is None else int(r.right_side),
            num(meas.dense_us), num(p.dense_us if p else None), num(r.dense_time_err_pct),
            num(meas.sparse_us), num(p.sparse_us if p else None), num(r.sparse_time_err_pct),
            p.path if p else "", (p.reason if p else None) or "", p.dense_binding if p else "",
            p.sparse_binding if p else "", tile(p.dense_tile if p else None),
            tile(p.sparse_tile if p else None), (p.dense_split_k if p else None) or "",
            r.status, int(r.scored), r.message or "", r.source, r.format or "", r.timing, r.kernels,
            r.c_dtype, r.sparse_isa]


def _time_pct(value: float | None, width: int) -> str:
    """A time error in % (``-``: the rows published no times)."""
    return f"{value:{width}.1f}" if value is not None else f"{'-':>{width}s}"


def format_search(result: Calibration5Result) -> str:
    """The outer search of :func:`~accelsim.analysis.calibration.calibrate5` as a text table."""
    hdr = (f"{'fraction':>8s}  {'eff dense/sparse':>16s}  {'launch dense/sparse':>19s}  {'MAE':>6s}  "
           f"{'objective':>9s}  {'dense/sparse time err':>21s}  {'right side':>10s}")
    has_loso = any(e.loso is not None for e in result.search)
    if has_loso:
        hdr += f"  {'LOSO MAE':>8s}"
    lines = [hdr, "-" * len(hdr)]
    for e in result.search:
        c, a = e.fitted, e.after
        line = (f"{e.fraction:8.2f}  {c.efficiency_dense:7.2f} / {c.efficiency_sparse:<6.2f}  "
                f"{c.launch_dense:8d} / {c.launch_sparse:<8d}  {a.mae:6.4f}  {e.objective:9.4f}  "
                f"{_time_pct(a.dense_time_mape, 8)}% / {_time_pct(a.sparse_time_mape, 5)}%     "
                f"{a.right_side_rows:3d}/{a.n:<3d}   ")
        if has_loso:  # a fold without rows of another source has no score
            line += f"  {e.loso.mae:8.3f}" if e.loso is not None and e.loso.mae is not None else f"  {'-':>8s}"
        lines.append(line + ("  <- best" if e.best else ""))
    if result.loso_nested is not None:
        nest = result.loso_nested
        picks = ", ".join(f"{f.label}: {f.fraction:.2f}" for f in nest.folds)
        lines.append(f"leave-one-source-out with the fraction chosen inside each fold ({picks}): "
                     f"pooled MAE {nest.pooled.mae:.3f}, right side "
                     f"{nest.pooled.right_side_rows}/{nest.pooled.n}")
    c = result.fitted
    lines.append(f"best: dram.sustained_fraction {c.dram_sustained_fraction:.2f}, efficiency dense "
                 f"{c.efficiency_dense:.2f} / sparse {c.efficiency_sparse:.2f}, launch dense {c.launch_dense} / "
                 f"sparse {c.launch_sparse} cycles; shipped values: {result.current}")
    return "\n".join(lines)
