"""Timeline, occupancy, roofline and traffic plots render to non-blank images of the expected size."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from accelsim.analysis.power import compare_power
from accelsim.cli.analysis import plot_command
from accelsim.fileio import write_all
from accelsim.hardware.model import load_hardware
from accelsim.report import plots
from accelsim.simulation import run
from accelsim.workloads.model import load_workload, workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
WL = ROOT / "workloads"


@pytest.fixture(scope="module")
def tpu_runs():
    hw = load_hardware(HW / "tpu-like.yaml")
    wl = load_workload(WL / "resnet18.yaml")
    return hw, run(wl, hw, "dense", keep_tiles=True), run(wl, hw, "2:4", keep_tiles=True)


@pytest.fixture(scope="module")
def a100_runs():
    hw = load_hardware(HW / "a100-like.yaml")
    wl = load_workload(WL / "bert-base.yaml", {"seq": 64})
    return hw, run(wl, hw, "dense", keep_tiles=True), run(wl, hw, "2:4", keep_tiles=True)


def _check_png(path: Path, kind: str) -> None:
    img = imread(str(path))
    w, h = plots.FIGSIZE[kind]
    assert img.shape[:2] == (round(h * plots.DPI), round(w * plots.DPI))
    rgb = img[..., :3].reshape(-1, 3)
    assert rgb.std() > 0.05, "blank image"
    assert (rgb.min(axis=1) < 0.9).mean() > 0.02, "almost nothing drawn"
    packed = (rgb * 255).astype(np.int64) @ np.array([65536, 256, 1])
    assert len(np.unique(packed)) > 20


def _render(fig: Figure, tmp: Path, kind: str) -> None:
    assert isinstance(fig, Figure)
    png, svg = write_all(plots.figure_files(fig, tmp / kind))
    assert png.suffix == ".png" and svg.suffix == ".svg" and svg.stat().st_size > 1000
    _check_png(png, kind)
    title = fig.texts[0].get_text() if fig._suptitle is None else fig._suptitle.get_text()
    return title


@pytest.mark.parametrize("runs", ["tpu_runs", "a100_runs"])
def test_each_plot_renders(request, tmp_path, runs):
    hw, dense, sparse = request.getfixturevalue(runs)
    figs = {
        "timeline": plots.plot_timeline(sparse, hw, layer=sparse.layers[1].name),
        "occupancy": plots.plot_occupancy(dense, sparse, hw),
        "roofline": plots.plot_roofline(dense, sparse, hw),
        "traffic": plots.plot_traffic(dense, sparse),
    }
    for kind, fig in figs.items():
        title = _render(fig, tmp_path, kind)
        assert hw.name in title and sparse.workload["name"] in title and "2:4" in title, (kind, title)


def test_timeline_window_and_errors(tmp_path, tpu_runs):
    hw, _, sparse = tpu_runs
    fig = plots.plot_timeline(sparse, hw, window=(10.0, 40.0))
    assert fig.axes[0].get_xlim()[0] < 10.0 < 40.0 < fig.axes[0].get_xlim()[1]
    _render(fig, tmp_path, "timeline")
    with pytest.raises(ValueError, match="unknown layer"):
        plots.plot_timeline(sparse, hw, layer="nope")
    with pytest.raises(ValueError, match="window"):
        plots.plot_timeline(sparse, hw, window=(5.0, 5.0))


def test_save_figure_is_deterministic(tmp_path, tpu_runs):
    _, dense, sparse = tpu_runs
    a = write_all(plots.figure_files(plots.plot_traffic(dense, sparse), tmp_path / "a"))
    b = write_all(plots.figure_files(plots.plot_traffic(dense, sparse), tmp_path / "b"))
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("kind", plots.PLOT_KINDS)
def test_plot_command(tmp_path, kind):
    paths = plot_command(kind, HW / "tpu-like.yaml", WL / "gemm-microbench.yaml", tmp_path / "out",
                               sparsity="2:4", layer="g1024" if kind == "timeline" else None)
    assert [p.name for p in paths] == [f"{kind}.png", f"{kind}.svg"]
    _check_png(paths[0], kind)
    with pytest.raises(ValueError, match="unknown plot"):
        plot_command("pie", HW / "tpu-like.yaml", WL / "gemm-microbench.yaml", tmp_path)


def test_power_analysis_is_a_frozen_result_the_plot_renders(tmp_path, a100_runs):
    hw, dense, sparse = a100_runs
    power = compare_power(dense, sparse, hw, repeats=2)
    assert [p.label for p in power.profiles] == ["dense", "2:4"] and power.repeats == 2
    assert power.tdp_w == hw.energy.power_cap.tdp_w
    for prof in power.profiles:
        assert prof.capped.capped and prof.capped.latency_s >= prof.uncapped.latency_s
        assert len(prof.capped.clock_fraction) == len(prof.trace.power_w)
        with pytest.raises(ValueError):
            prof.trace.power_w[0] = 0.0  # read-only arrays
    with pytest.raises(dataclasses.FrozenInstanceError):
        power.repeats = 1  # type: ignore[misc]
    data = power.to_dict()
    assert data["profiles"][0]["capped"]["tdp_w"] == power.tdp_w
    assert isinstance(data["profiles"][1]["trace"]["power_w"], list)
    title = _render(plots.plot_power(power), tmp_path, "power")
    assert title == f"Power over time: {sparse.workload['name']} on {hw.name}, dense vs 2:4 (x2)"


def test_power_plot_shows_the_steady_clock_run_reports(tmp_path):
    """Under a 150 W cap `run` reports 2:4 at 0.913 GHz (4.78 ms) while the plot's legend showed only the transient
    governor, which a 3 ms kernel never triggers (3.10 ms, clock 1.0): the steady clocks are drawn and named."""
    from accelsim.analysis.power import power_limited

    hw = load_hardware(HW / "a100-like.yaml", ["energy.power_cap.tdp_w=150"])
    path = tmp_path / "g.yaml"
    path.write_text("name: g8192\ndtype: fp16\nlayers:\n  - {name: g, op: gemm, m: 8192, n: 8192, k: 8192}\n")
    model = load_workload(path)
    power = power_limited(model, hw, "2:4")
    assert power.clock_ghz == hw.clock_ghz
    runs = {"dense": run(model, hw, "dense"), "2:4": run(model, hw, "2:4")}
    fig = plots.plot_power(power)
    labels = [t.get_text() for ax in fig.axes for t in (ax.get_legend().get_texts() if ax.get_legend() else [])]
    for prof in power.profiles:
        clock = runs[prof.label].totals["clock"]
        assert prof.steady is not None and prof.steady.effective_clock_ghz == clock["effective_ghz"] < hw.clock_ghz
        expect = (f"{prof.label}, steady: {clock['effective_ghz']:.3f} GHz, "
                  f"{runs[prof.label].totals['latency_us'] / 1e3:.2f} ms")
        assert any(t.startswith(expect) for t in labels), (expect, labels)
        line = [ln for ln in fig.axes[1].get_lines() if ln.get_label().startswith(f"{prof.label}, steady")][0]
        assert line.get_ydata()[0] == pytest.approx(clock["effective_ghz"] / hw.clock_ghz)


def test_timeline_of_a_whole_model_with_fused_attention(tmp_path):
    # scale/mask, softmax and AV are folded into the fused attention kernel: zero-cycle layers without
    # tiles, which the whole-model timeline used to index into (IndexError)
    hw = load_hardware(HW / "h100-like.yaml")
    result = run(load_workload(WL / "llama3-8b-decode.yaml"), hw, "2:4", keep_tiles=True)
    assert any(lay.cycles["total"] == 0 for lay in result.layers)
    fig = plots.plot_timeline(result, hw)
    assert isinstance(fig, Figure) and fig.axes


def test_timeline_of_a_fused_layer_names_the_kernel_that_carries_it(capsys, tmp_path) -> None:
    """plot timeline --layer encoder.0.softmax drew an empty chart (0 cycles: the softmax runs inside the fused
    attention kernel), printed a matplotlib warning and exited 0."""
    from conftest import cli, one_line_error
    args = ["plot", "timeline", "--hw", HW / "a100-like.yaml", "--workload", WL / "bert-base.yaml", "--set", "seq=64"]
    code, _, err = cli(capsys, *args, "--layer", "encoder.0.softmax", "-o", tmp_path / "p")
    line = one_line_error(err)
    assert code == 2 and "'encoder.0.softmax' takes no time of its own" in line
    assert "fused kernel of layer 'encoder.0.scores'" in line and not (tmp_path / "p").exists()
    code, out, err = cli(capsys, *args, "--layer", "encoder.0.scores", "-o", tmp_path / "q")
    assert code == 0 and (tmp_path / "q" / "timeline.png").exists() and "Warning" not in err


def test_layer_applies_to_the_timeline_only(capsys, tmp_path) -> None:
    """plot roofline --layer NAME exited 0 and drew the whole model; an unknown name was accepted too."""
    from conftest import cli, one_line_error
    code, _, err = cli(capsys, "plot", "roofline", "--hw", ROOT / "hwconfigs/tpu-like.yaml", "--workload",
                       ROOT / "workloads/resnet18.yaml", "--sparsity", "2:4", "--layer", "conv1", "-o", tmp_path / "p")
    assert code == 2 and "applies to plot timeline only" in one_line_error(err)
    assert not (tmp_path / "p").exists()


# The audit's workload: gemm layers with their own per-layer patterns and no top-level sparsity (a workload plan).
MIXED_PLAN = """\
name: mixed
dtype: fp16
layers:
  - {name: g1024, op: gemm, m: 1024, n: 1024, k: 1024, sparsity: "1:4"}
  - {name: g4096x128x4096, op: gemm, m: 4096, n: 128, k: 4096, sparsity: "1:4"}
  - {name: g128x4096x4096, op: gemm, m: 128, n: 4096, k: 4096, sparsity: "2:4"}
  - {name: g768x512x3072, op: gemm, m: 768, n: 512, k: 3072, sparsity: "2:4"}
  - {name: g2, op: gemm, m: 2048, n: 2048, k: 2048, sparsity: "2:4"}
"""


@pytest.fixture(scope="module")
def mixed_plan_runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "mixed.yaml"
    path.write_text(MIXED_PLAN)
    hw = load_hardware(HW / "flex-nm.yaml")
    model = load_workload(path)
    return path, hw, run(model, hw, "dense", keep_tiles=True), run(model, hw, None, keep_tiles=True)


def _texts(fig: Figure) -> list[str]:
    """Every text of a figure: titles, notes, axis labels, ticks, bar labels and legend entries."""
    from matplotlib.text import Text
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_plots_name_a_workload_plan_as_run_does_never_dense(capsys, mixed_plan_runs):
    """A workload whose gemms ask for 1:4 and 2:4 (no top-level sparsity) was drawn as 'dense vs dense', its bars
    'dense', its tick 'dense: 0.77x of dense' and its legend 'dense (4,697.8 us)' while run reported 1.499x 'per
    workload plan (1:4 on ...; 2:4 on ...)': the plots name the plan as run, serve and reality-check do."""
    from conftest import cli

    from accelsim.workloads.plan import plan_label, plan_text
    path, hw, dense, sparse = mixed_plan_runs
    plan = plan_text(sparse.layers)
    assert plan == "1:4 on {g1024,g4096x128x4096}; 2:4 on {g128x4096x4096,g768x512x3072,g2}"
    code, out, _ = cli(capsys, "run", "--hw", HW / "flex-nm.yaml", "--workload", path)
    assert code == 0 and f"per workload plan ({plan})" in out and plan_label(None, sparse.layers) in out

    traffic = plots.plot_traffic(dense, sparse)
    texts = _texts(traffic)
    # the plan is too long for a 9-inch title: the title says so, a footer line names it
    assert traffic._suptitle.get_text() == ("Data movement \u2014 flex-nm \u00b7 mixed \u00b7 dense vs "
                                           "workload plan (named below)")
    assert f"workload plan: {plan}" in texts
    dram = sum(sparse.totals["bytes"]["dram"].values()) / 1e6
    assert f"workload plan\n{dram:,.1f} MB" in texts and "dense\n735.3 MB" in texts
    ratio = dram / (sum(dense.totals["bytes"]["dram"].values()) / 1e6)
    assert f"DRAM\nworkload plan: {ratio:.2f}x of dense" in texts and f"{ratio:.2f}" == "0.77"
    assert not any("dense vs dense" in t or t.startswith("dense:") for t in texts)

    occupancy = plots.plot_occupancy(dense, sparse, hw)
    legend = _legend(occupancy.axes[0])
    assert legend == [f"dense ({dense.totals['latency_us']:,.1f} \u00b5s)",
                      f"workload plan ({sparse.totals['latency_us']:,.1f} \u00b5s)"]
    assert "(named below)" in occupancy._suptitle.get_text() and f"workload plan: {plan}" in _texts(occupancy)

    roofline = plots.plot_roofline(dense, sparse, hw)
    legend = _legend(roofline.axes[0])
    assert "layer, workload plan run, 1:4 (sparse path)" in legend
    assert "layer, workload plan run, 2:4 (sparse path)" in legend
    assert not any("dense run (sparse path)" in t for t in legend)

    timeline = plots.plot_timeline(sparse, hw)
    assert "workload plan (named below)" in timeline._suptitle.get_text()


def test_a_short_plan_is_named_in_the_title(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("name: two\ndtype: fp16\nlayers:\n"
                    "  - {name: a, op: gemm, m: 512, n: 512, k: 512, sparsity: '1:4'}\n"
                    "  - {name: b, op: gemm, m: 512, n: 512, k: 512, sparsity: '2:4'}\n")
    hw = load_hardware(HW / "flex-nm.yaml")
    model = load_workload(path)
    fig = plots.plot_traffic(run(model, hw, "dense"), run(model, hw, None))
    assert fig._suptitle.get_text() == ("Data movement \u2014 flex-nm \u00b7 two \u00b7 dense vs "
                                       "workload plan (1:4 on a; 2:4 on b)")
    assert not any(t.startswith("workload plan:") for t in _texts(fig))  # no footer: the title names it


@pytest.fixture(scope="module")
def system_runs():
    hw = load_hardware(HW / "8xa100-like.yaml")
    model = load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 128})
    return hw, run(model, hw, "dense", keep_tiles=True), run(model, hw, "2:4", keep_tiles=True)


def test_system_plots_say_they_show_one_device(system_runs, tpu_runs):
    """plot traffic on an 8-device system drew one device's bytes (totals.bytes.dram of the shard) with nothing
    saying so, while the power plot said 'per device (1 of 8)': every run plot says it, in the same words."""
    hw, dense, sparse = system_runs
    assert sparse.system["devices"] == 8
    one = "per device (1 of 8)"
    traffic = plots.plot_traffic(dense, sparse)
    dram = sum(sparse.totals["bytes"]["dram"].values()) / 1e6  # one device's shard
    assert f"2:4\n{dram:,.1f} MB" in _texts(traffic)
    assert traffic._suptitle.get_text().endswith(f"dense vs 2:4, {one}")
    assert traffic.axes[0].get_ylabel() == f"bytes moved {one} (MB)"
    roofline = plots.plot_roofline(dense, sparse, hw)
    assert roofline._suptitle.get_text().endswith(f"dense vs 2:4, {one}")
    assert roofline.axes[0].get_ylabel() == f"achieved MACs / cycle {one} (dense-equivalent)"
    occupancy = plots.plot_occupancy(dense, sparse, hw)
    assert occupancy._suptitle.get_text().endswith(f"dense vs 2:4, {one}")
    assert occupancy.axes[1].get_ylabel() == f"DRAM bandwidth {one} (GB/s)"
    timeline = plots.plot_timeline(sparse, hw)
    assert timeline._suptitle.get_text().endswith(f"2:4 \u2014 whole run, {one}")
    power = compare_power(dense, sparse, hw)
    assert plots.plot_power(power)._suptitle.get_text().endswith(f", {one}")
    # one device: nothing to say
    tpu, tdense, tsparse = tpu_runs
    for fig in (plots.plot_traffic(tdense, tsparse), plots.plot_roofline(tdense, tsparse, tpu),
                plots.plot_occupancy(tdense, tsparse, tpu), plots.plot_timeline(tsparse, tpu)):
        assert not any("per device" in t for t in _texts(fig))


def test_roofline_draws_a_roof_per_compute_multiplier(tmp_path, mixed_plan_runs):
    """A plan running 1:4 and 2:4 drew only the most common pattern's roof (2:4, 2x): the 1:4 layers' 4x roof was
    missing and nothing said so. Each multiplier has its roof, and no point lies above its own pattern's roof."""
    _, hw, dense, sparse = mixed_plan_runs
    rates = plots.roofline_rates(sparse, hw)
    assert rates == {"1:4": 4.0, "2:4": 2.0}
    fig = plots.plot_roofline(dense, sparse, hw)
    roofs = {ln.get_label(): float(max(ln.get_ydata())) for ln in fig.axes[0].get_lines()
             if "roof" in ln.get_label()}
    peak = sparse.peak_macs_per_cycle
    assert roofs == {f"dense roof, fp16 ({peak:,.0f} MACs/cycle)": peak,
                     f"sparse roof 2:4, fp16: 2x compute ({2 * peak:,.0f})": 2 * peak,
                     f"sparse roof 1:4, fp16: 4x compute ({4 * peak:,.0f})": 4 * peak}
    bw = hw.dram_bytes_per_cycle()
    points = plots.roofline_points(sparse)
    assert {p["pattern"] for p in points} == {"1:4", "2:4"}
    for p in points + plots.roofline_points(dense):
        own_roof = min(p["peak"] * rates.get(p["pattern"], 1.0), p["ai"] * bw)
        assert p["perf"] <= own_roof, p
    # patterns sharing a multiplier share a roof, named by both
    path = tmp_path / "same.yaml"
    path.write_text("name: same\ndtype: fp16\nlayers:\n"
                    "  - {name: a, op: gemm, m: 512, n: 512, k: 512, sparsity: '2:4'}\n"
                    "  - {name: b, op: gemm, m: 512, n: 512, k: 512, sparsity: '4:8'}\n")
    model = load_workload(path)
    fig = plots.plot_roofline(run(model, hw, "dense"), run(model, hw, None), hw)
    labels = [ln.get_label() for ln in fig.axes[0].get_lines() if ln.get_label().startswith("sparse roof")]
    assert labels == [f"sparse roof 2:4 / 4:8, fp16: 2x compute ({2 * peak:,.0f})"]
    assert "layer, workload plan run, 2:4 / 4:8 (sparse path)" in _legend(fig.axes[0])


def test_power_plot_names_a_workload_plan_run(mixed_plan_runs) -> None:
    """The power comparison of a plan run called it 'sparse' in its profile and 'plan' in the title; both now say
    'workload plan', as the other plots and run do."""
    _, hw, dense, sparse = mixed_plan_runs
    power = compare_power(dense, sparse, hw)
    assert [p.label for p in power.profiles] == ["dense", "workload plan"]
    assert plots.plot_power(power)._suptitle.get_text() == "Power over time: mixed on flex-nm, dense vs workload plan"


def _stage_labels(fig: Figure) -> tuple[set[str], set[str]]:
    """The timeline's track names (y ticks) and legend entries."""
    ticks = {t.get_text() for t in fig.axes[0].get_yticklabels()}
    legend = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    return ticks, legend


def test_timeline_names_the_stage_between_load_and_compute_that_ran(tpu_runs) -> None:
    """An N:M layer decodes metadata and a load-sparse layer decompresses; the track and the idle hatch say
    which one the drawn layers ran, not both ('metadata decode / decompress' on a plain 2:4 layer)."""
    hw, _, sparse = tpu_runs
    ticks, legend = _stage_labels(plots.plot_timeline(sparse, hw, layer="layer1.0.conv1"))
    assert "metadata decode" in ticks and not any("decompress" in t for t in ticks | legend)
    assert "array idle: waiting on metadata decode" in legend
    a100 = load_hardware(HW / "a100-like.yaml")
    gemm = workload_from_dict({"name": "g", "dtype": "fp16",
                               "layers": [{"name": "g0", "op": "gemm", "m": 4096, "n": 256, "k": 4096}]})
    res = run(gemm, a100, "unstructured:90%", keep_tiles=True)
    assert res.layers[0].busy.get("decompress")  # the load-sparse path: a decompress stage, no metadata decode
    ticks, legend = _stage_labels(plots.plot_timeline(res, a100))
    assert any(t.startswith("decompress") for t in ticks) and not any("metadata" in t for t in ticks | legend)
