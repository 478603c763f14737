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
from accelsim.workloads.model import load_workload

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
