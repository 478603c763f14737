"""sweep-plot marks rows over the device's memory (fits_memory False) and rows whose dense baseline is
(dense_fits_memory False): hollow on the Pareto plots and off their fronts, hatched on the heatmaps, counted in
each chart's caption and in the notes; results without these columns plot, saying memory was not checked."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from conftest import HW, WL, cli, one_line_error

from accelsim.report.sweep_marks import memory_fit, pareto_data, pareto_front
from accelsim.report.sweep_plots import (
    HATCH_DENSE_OVER,
    HATCH_OVER,
    choose_slice,
    heatmap_figure,
    pareto_figure,
    sparsity_pays_figure,
    sweep_figures,
)
from accelsim.sweep import SweepTable, load_results, run_sweep, spec_from_dict
from accelsim.textsafe import speedup_text

MIB = 1 << 20
# gemm-microbench on tpu-like: footprint 109,707,264 bytes dense, 76,849,152 at 2:4. At 64 MiB neither fits; at
# 100,000,000 bytes 2:4 fits and its dense baseline does not; at 128 MiB both fit.
CAPS = [64 * MIB, 100_000_000, 128 * MIB]
COST = "dram_capacity_bytes / 1048576"  # less memory is cheaper: a row over memory is the cheapest at its latency


@pytest.fixture(scope="module")
def mem_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mem") / "res"
    spec = spec_from_dict({
        "name": "memory-marks", "hardware": str(HW / "tpu-like.yaml"), "workloads": [str(WL / "gemm-microbench.yaml")],
        "sparsity": ["dense", "2:4"], "cost": COST,
        "grid": {"dram.capacity_bytes": CAPS, "dram.bandwidth_gb_s": [100, 400]}})
    run_sweep(spec, out, workers=1)
    return out


def _rows(table: SweepTable, **where: object) -> set[int]:
    return {i for i, r in enumerate(table.records()) if all(r[k] == v for k, v in where.items())}


def test_the_sweep_has_rows_over_memory_and_rows_whose_dense_baseline_is(mem_sweep: Path) -> None:
    table = load_results(mem_sweep)
    fit = memory_fit(table)
    assert fit.checked and not fit.unchecked
    assert fit.over == _rows(table, **{"dram.capacity_bytes": 64 * MIB}) | _rows(
        table, **{"dram.capacity_bytes": 100_000_000, "sparsity": "dense"})
    assert fit.dense_over == _rows(table, **{"dram.capacity_bytes": 100_000_000, "sparsity": "2:4"})
    assert len(fit.over) == 6 and len(fit.dense_over) == 2


def test_pareto_fronts_leave_rows_over_memory_off(mem_sweep: Path) -> None:
    table = load_results(mem_sweep)
    fit = memory_fit(table)
    costs = table.cost_values(COST)
    data = pareto_data(table, table.sparsities(), lambda r: True, costs, fit)
    by = {s.sparsity: s for s in data.series}
    assert data.over_rows == 6
    # dense: only the 128 MiB points fit; 2:4 fits from 100,000,000 bytes
    assert {c for c, _ in by["dense"].fits} == {128.0} and {c for c, _ in by["dense"].over} == {64.0, 100_000_000 / MIB}
    assert {c for c, _ in by["2:4"].fits} == {100_000_000 / MIB, 128.0} and {c for c, _ in by["2:4"].over} == {64.0}
    for s in data.series:
        assert s.front and all(p in s.fits for p in s.front)
        # with every row counted, the cheapest row (over memory) would lead the front
        assert pareto_front(s.fits + s.over)[0] in s.over
    assert by["2:4"].front[0][0] == 100_000_000 / MIB
    assert data.note.startswith("6 of 12 rows over memory (footprint > dram.capacity_bytes")
    assert "left off the Pareto fronts" in data.note

    fig = pareto_figure(table, table.settings()[0], costs, "MiB", fit=fit)
    ax = fig.axes[0]
    assert data.note in " ".join(ax.get_title().split())  # the caption, wrapped, is in the chart's title
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "dense: 4 over memory (hollow, off the front)" in labels
    assert "2:4: 2 over memory (hollow, off the front)" in labels
    assert "dense (front: 1 of 2)" in labels  # the front counts the rows that fit
    hollow = [c for c in ax.collections if len(c.get_facecolors()) == 0]  # the rows over memory, unfilled
    assert sorted(len(c.get_offsets()) for c in hollow) == [2, 4]


def test_heatmaps_hatch_cells_over_memory_and_say_how_many(mem_sweep: Path) -> None:
    table = load_results(mem_sweep)
    fit = memory_fit(table)
    sl = choose_slice(table)
    assert sl is not None and (sl.ykey, sl.xkey) == ("dram.capacity_bytes", "dram.bandwidth_gb_s")
    fig = heatmap_figure(table, table.settings()[0], sl, fit=fit)
    assert fig is not None
    title = " ".join(fig._suptitle.get_text().split())  # wrapped to the figure's width
    assert "6 of 12 rows over memory (footprint > dram.capacity_bytes" in title and "hatched //" in title
    hatched = {p.get_gid(): p.get_hatch() for ax in fig.axes for p in ax.patches}
    assert hatched == {f"row{n}": HATCH_OVER for n in fit.over}
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum(t.endswith("\nover memory") for t in texts) == 6

    pays = sparsity_pays_figure(table, table.settings()[0], sl, fit=fit)
    assert pays is not None
    title = " ".join(pays._suptitle.get_text().split())
    assert "2 of 6 rows over memory" in title
    assert "2 rows fit but their dense baseline does not (speedup vs a run over dram.capacity_bytes)" in title
    # each cell reads its row's speedup as the text renderers do: one a hair under 1 never reads "1.00x"
    shown = {t.get_text().split("\n")[0] for ax in pays.axes for t in ax.texts}
    speedups = {speedup_text(v) for v in table.column("speedup_vs_dense") if isinstance(v, float)}
    assert len(shown) > 1 and shown <= speedups
    hatched = {p.get_gid(): p.get_hatch() for ax in pays.axes for p in ax.patches}
    two_four_over = fit.over & _rows(table, sparsity="2:4")
    assert hatched == {**{f"row{n}": HATCH_OVER for n in two_four_over},
                       **{f"row{n}": HATCH_DENSE_OVER for n in fit.dense_over}}


def test_sweep_plot_notes_count_the_rows_over_memory(mem_sweep: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "sweep-plot", mem_sweep, "-o", tmp_path / "p")
    assert code == 0
    assert ("sweep-plot: memory: 6 of 12 rows exceed dram.capacity_bytes (hollow on the Pareto plots and off their "
            "fronts, hatched // on the heatmaps); 2 fit but their dense baseline does not (hatched .. where sparsity "
            "pays)") in out


def _without_memory_columns(src: Path, dst: Path) -> None:
    """``src``'s results as a sweep before format 4 wrote them: no fits_memory / dense_fits_memory columns."""
    shutil.copytree(src, dst)
    (dst / "results.parquet").unlink(missing_ok=True)
    with (src / "results.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    drop = {rows[0].index("fits_memory"), rows[0].index("dense_fits_memory")}
    with (dst / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows([[c for i, c in enumerate(r) if i not in drop] for r in rows])


def test_results_without_the_memory_columns_plot_and_say_memory_was_not_checked(
        mem_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old"
    _without_memory_columns(mem_sweep, old)
    table = load_results(old)
    fit = memory_fit(table)
    assert not fit.checked and not fit.over
    figs = dict(sweep_figures(table, cost=COST))
    assert set(figs) == {"pareto_gemm-microbench", "pareto_energy_gemm-microbench", "heatmap_gemm-microbench",
                         "sparsity_pays_gemm-microbench"}
    assert "memory not checked: these results have no fits_memory column" in " ".join(
        figs["pareto_gemm-microbench"].axes[0].get_title().split())
    for name in ("heatmap_gemm-microbench", "sparsity_pays_gemm-microbench"):
        assert "memory not checked" in " ".join(figs[name]._suptitle.get_text().split())
        assert not [p for ax in figs[name].axes for p in ax.patches]  # nothing marked
    data = pareto_data(table, table.sparsities(), lambda r: True, table.cost_values(COST), fit)
    assert all(not s.over and s.front[0][0] == 64.0 for s in data.series)  # unchecked: the cheapest leads
    code, out, _ = cli(capsys, "sweep-plot", old, "-o", tmp_path / "p")
    assert code == 0 and "sweep-plot: memory: not checked (no fits_memory column" in out


def test_a_fits_memory_cell_that_is_not_a_boolean_is_refused(mem_sweep: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(mem_sweep, bad)
    with (mem_sweep / "results.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    rows[3][rows[0].index("fits_memory")] = "maybe"
    with (bad / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    code, _, err = cli(capsys, "sweep-plot", bad, "-o", tmp_path / "p")
    assert code == 2
    assert "results.csv: line 4: fits_memory: expected True, False or empty, got 'maybe'" in one_line_error(err)


def test_rows_without_a_capacity_are_counted_as_not_checked_and_infeasible_rows_are_not() -> None:
    cols = ("workload", "sparsity", "feasible", "fits_memory", "dense_fits_memory", "latency_us", "origin")
    rows = (("w", "dense", True, None, None, 5.0, "grid"), ("w", "2:4", True, None, None, 3.0, "grid"),
            ("w", "2:4", False, None, None, None, "grid"), ("w", "dense", True, True, True, 4.0, "grid"),
            ("w", "2:4", True, False, False, 2.0, "grid"))
    fit = memory_fit(SweepTable(cols, rows))
    assert fit.unchecked == {0, 1} and fit.over == {4} and fit.checked_rows == 2
    assert fit.note(range(5)) == ("1 of 5 rows over memory (footprint > dram.capacity_bytes, simulated as if the "
                                  "device held it all): hatched //; 2 rows not checked (no dram.capacity_bytes)")
    assert fit.note([3]) == ""  # every row shown fits: no caption
    data = pareto_data(SweepTable(cols, rows), ["dense", "2:4"], lambda r: True, [1.0, 1.0, 1.0, 0.5, 0.5], fit)
    assert [(s.sparsity, s.front) for s in data.series] == [("dense", ((0.5, 4.0),)), ("2:4", ((1.0, 3.0),))]
