"""The sparse reality check: the ladder telescopes from nominal M/N to the real run; chart and text views."""

from __future__ import annotations

import dataclasses
import json
import math

import matplotlib
import numpy as np
import pytest
from conftest import HW, ROOT, WL
from matplotlib.image import imread

from accelsim import load_hardware, load_workload, run
from accelsim.analysis.reality import RUNGS, RealityCheck, reality_check
from accelsim.fileio import write_all
from accelsim.report.reality_chart import (
    BAR_CHAR,
    DPI,
    FIGSIZE,
    bar_lengths,
    chart_files,
    quantized_note,
    render_reality_check,
    subtitle,
    text_bars,
)
from accelsim.workloads.model import workload_from_dict

A100 = load_hardware(HW / "a100-like.yaml")
TPU = load_hardware(HW / "tpu-like.yaml")


def _gemm(name: str, m: int, n: int, k: int) -> object:
    return workload_from_dict({"name": name, "dtype": "fp16",
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k}]})


CASES = {
    "bert-base-b4/a100": lambda: (load_workload(WL / "bert-base.yaml", {"batch": 4}), A100),
    "mobilenetv2/a100": lambda: (load_workload(WL / "mobilenetv2.yaml"), A100),
    "resnet18/tpu": lambda: (load_workload(WL / "resnet18.yaml"), TPU),
    "decode-gemm/a100": lambda: (_gemm("decode-gemm", 4096, 1, 4096), A100),
    "gemm256/a100": lambda: (_gemm("gemm256", 256, 256, 256), A100),
}
_CACHE: dict[str, tuple] = {}


def _case(name: str) -> tuple:
    """(model, hw, reality-check dict), computed once per session."""
    if name not in _CACHE:
        model, hw = CASES[name]()
        _CACHE[name] = (model, hw, reality_check(model, hw, "2:4"))
    return _CACHE[name]


# ---------------------------------------------------------------------------------------------- the ladder

@pytest.mark.parametrize("case", list(CASES))
def test_ladder_telescopes_from_nominal_to_real(case: str) -> None:
    model, hw, data = _case(case)
    rungs, losses = data.rungs, data.losses
    assert [r.rung for r in rungs] == [key for key, _ in RUNGS]
    assert [x.rung for x in losses] == [key for key, _ in RUNGS[1:]]
    nominal, real = rungs[0].speedup, rungs[-1].speedup
    # the first rung is the datasheet M/N, exactly
    assert nominal == 2.0
    assert data.bars.nominal_speedup == nominal and data.bars.real_speedup == real
    # the losses telescope: their sum is the gap nominal - real
    assert data.gap == pytest.approx(nominal - real, rel=1e-12, abs=1e-15)
    assert math.isclose(sum(x.loss for x in losses), nominal - real, rel_tol=1e-9, abs_tol=1e-9 * nominal)
    for prev, rung, loss in zip(rungs[:-1], rungs[1:], losses, strict=True):
        assert rung.change == pytest.approx(rung.speedup - prev.speedup, rel=1e-12, abs=1e-15)
        assert loss.loss == pytest.approx(-rung.change, rel=1e-12, abs=1e-15)
        assert loss.kind == ("gain" if loss.loss < 0 else ("loss" if loss.loss > 0 else "none"))
    if abs(data.gap) > 1e-12:
        assert math.isclose(sum(x.share_of_gap for x in losses), 1.0, rel_tol=1e-9)
    # each rung's speedup is dense_total / that rung's sparse cycles (sparse_cycles is rounded to 3 decimals)
    for rung in rungs:
        assert data.dense_total_cycles / rung.speedup == pytest.approx(rung.sparse_cycles, abs=5e-4 + 1e-9)
        assert rung.speedup == pytest.approx(data.dense_total_cycles / rung.sparse_cycles,
                                                rel=1e-3 / rung.sparse_cycles)
    # the last rung is the real run
    res = run(model, hw, "2:4")
    assert res.totals["dense_total_cycles"] == data.dense_total_cycles
    assert res.total_cycles == data.sparse_total_cycles == rungs[-1].sparse_cycles
    assert math.isclose(real, res.totals["dense_total_cycles"] / res.total_cycles, rel_tol=1e-12)
    # the fallback bar is the fallback layers' share of the sparse run's time
    fb = [lay for lay in res.layers if lay.pattern_requested and lay.path != "sparse"]
    assert data.fallback.layers == len(fb)
    assert data.bars.fallback_overhead == pytest.approx(
        sum(lay.cycles["total"] for lay in fb) / res.total_cycles, rel=1e-12, abs=0.0)
    assert sum(r.cycles for r in data.fallback.by_reason.values()) == data.fallback.cycles


def test_systolic_resnet18_gets_most_of_the_nominal_speedup() -> None:
    """tpu-like runs every ResNet-18 conv / fc sparse: no fallback, and no rung gains."""
    _, _, data = _case("resnet18/tpu")
    assert data.fallback.layers == 0 and data.bars.fallback_overhead == 0.0
    assert 1.0 < data.bars.real_speedup < 2.0
    assert all(x.loss >= -1e-12 for x in data.losses)
    assert data.explanation == ()


@pytest.mark.parametrize("case", ["decode-gemm/a100", "gemm256/a100"])
def test_single_small_gemm_is_slower_sparse_and_says_why(case: str) -> None:
    """One GEMM that runs sparse (no fallback) but loses to dense: the explanation names the largest loss."""
    _, _, data = _case(case)
    assert data.sparse_layers == data.layers == 1
    assert data.fallback.layers == 0
    real = data.bars.real_speedup
    assert real < 1.0
    worst = max(data.losses, key=lambda x: x.loss)
    assert worst.loss > 0
    assert data.explanation, "a slower-than-dense result must say why"
    why = data.explanation[0]
    assert "slower than dense" in why
    assert f"{real:.3f}x" in why
    assert worst.label in why and f"{worst.loss:.3f}x" in why
    assert any("g" in line and "slower than their dense kernel" in line for line in data.explanation[1:])


def test_decode_gemm_loses_most_to_padding_and_tile_shape() -> None:
    """A 1-token decode GEMM (n = 1): the sparse kernels' large CTA tiles and no split-k are the big loss."""
    _, _, data = _case("decode-gemm/a100")
    worst = max(data.losses, key=lambda x: x.loss)
    assert worst.rung == "padding"
    assert "padding" in data.explanation[0]


def test_result_is_frozen_and_reads_back_from_its_json() -> None:
    _, _, data = _case("bert-base-b4/a100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.gap = 0.0  # type: ignore[misc]
    text = json.dumps(data.to_dict())
    assert list(data.to_dict())[:2] == ["schema_version", "hardware"]
    assert "change" not in data.to_dict()["rungs"][0] and "change" in data.to_dict()["rungs"][1]
    back = RealityCheck.from_dict(json.loads(text))
    assert back == data and json.dumps(back.to_dict()) == text


# ---------------------------------------------------------------------------------------------- the chart

def _pixel_height(ax, x: float, height: float) -> float:
    (_, y0), (_, y1) = ax.transData.transform([(x, 0.0), (x, height)])
    return float(y1 - y0)


def test_chart_bars_match_the_json_and_the_png_is_real(tmp_path) -> None:
    _, _, data = _case("bert-base-b4/a100")
    fig, artists = render_reality_check(data)
    bars, axes = artists["bars"], artists["axes"]
    nominal, real = data.bars.nominal_speedup, data.bars.real_speedup
    fallback_pct = 100.0 * data.bars.fallback_overhead

    # read the artists BEFORE saving: data units
    b_nom, b_real, b_fb = bars["nominal"], bars["real"], bars["fallback"]
    assert b_nom.axes is axes["speedup"] and b_real.axes is axes["speedup"]
    assert b_fb.axes is axes["fallback"] and axes["fallback"] is not axes["speedup"]
    assert b_nom.get_y() == 0.0 and b_real.get_y() == 0.0 and b_fb.get_y() == 0.0
    assert b_nom.get_height() == nominal
    assert b_real.get_height() == real
    assert b_fb.get_height() == pytest.approx(fallback_pct, rel=1e-12)
    assert axes["speedup"].get_ylim()[0] == 0.0 and axes["fallback"].get_ylim()[0] == 0.0

    # pixel space: heights proportional to the JSON values, within 1 px
    def pixels() -> tuple[float, float, float]:
        ax, ax2 = axes["speedup"], axes["fallback"]
        return (_pixel_height(ax, b_nom.get_x(), b_nom.get_height()),
                _pixel_height(ax, b_real.get_x(), b_real.get_height()),
                _pixel_height(ax2, b_fb.get_x(), b_fb.get_height()))

    px_nom, px_real, px_fb = pixels()
    assert px_nom > 100
    assert abs(px_real - px_nom * real / nominal) <= 1.0
    assert px_real / px_nom == pytest.approx(real / nominal, abs=1.0 / px_nom)
    ax2 = axes["fallback"]
    full = _pixel_height(ax2, 0.0, ax2.get_ylim()[1])
    assert abs(px_fb - full * fallback_pct / ax2.get_ylim()[1]) <= 1.0

    # the waterfall: nominal, one floating bar per rung, real; floats span each rung's change
    ladder = artists["ladder_bars"]
    rungs = data.rungs
    assert len(ladder) == len(rungs) + 1
    assert ladder[0].get_height() == nominal and ladder[-1].get_height() == real
    hairline = 0.005 * axes["ladder"].get_ylim()[1]
    for prev, rung, bar in zip(rungs[:-1], rungs[1:], ladder[1:-1], strict=True):
        assert bar.get_y() == pytest.approx(min(prev.speedup, rung.speedup), rel=1e-12)
        if abs(rung.change) > hairline:
            assert bar.get_height() == pytest.approx(abs(rung.change), rel=1e-9)
    labels = [t.get_text().replace("\n", " ") for t in axes["ladder"].get_xticklabels()]
    assert labels == ["nominal", "executed pattern", "non-sparse ops", "non-MAC time", "padding / shape",
                      "data movement", "metadata", "kernel efficiency", "fixed cost", "real"]
    title = fig._suptitle.get_text()
    assert title == "Sparse reality check: bert-base (batch 4, seq 128), fp16 on a100-like, 2:4"  # the dtype: stated

    paths = write_all(chart_files(fig, tmp_path / "out"))
    assert [p.name for p in paths] == ["reality_check.png", "reality_check.svg"]
    assert all(p.is_file() for p in paths)
    assert not [p.name for p in paths[0].parent.iterdir() if p.name.endswith(".tmp")]
    # fixed layout: saving did not move the axes
    assert pixels() == pytest.approx((px_nom, px_real, px_fb), abs=1e-6)

    img = imread(paths[0])
    # 5.5 inches of plots plus a band for the why lines below them
    assert img.shape[:2] == (round(fig.get_figheight() * DPI), round(FIGSIZE[0] * DPI))
    assert img.shape[1] == 1300 and img.shape[0] >= round(FIGSIZE[1] * DPI) == 550
    rgb = img[..., :3]
    assert float(rgb.std()) > 0.1, "the PNG looks blank"
    colours = np.unique((rgb * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
    # the chart's own colours are there: grey-blue nominal, green real, orange fallback, red losses
    for hexcolour in ("#6b8cae", "#2e9e4f", "#f28e2b", "#d64541"):
        want = np.array(matplotlib.colors.to_rgb(hexcolour))
        assert (np.abs(rgb - want).max(axis=-1) < 2 / 255).sum() > 100, hexcolour

    svg = paths[1].read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "<dc:date>" not in svg


def test_chart_files_are_deterministic_and_leave_rcparams_alone(tmp_path) -> None:
    _, _, data = _case("resnet18/tpu")
    salt = matplotlib.rcParams["svg.hashsalt"]
    first = write_all(chart_files(render_reality_check(data)[0], tmp_path / "a"))
    second = write_all(chart_files(render_reality_check(data)[0], tmp_path / "b"))
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert matplotlib.rcParams["svg.hashsalt"] == salt
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["reality_check.png", "reality_check.svg"]


def test_chart_slower_than_dense_case_renders(tmp_path) -> None:
    _, _, data = _case("decode-gemm/a100")
    fig, artists = render_reality_check(data)
    assert artists["bars"]["real"].get_height() == data.bars.real_speedup < 1.0
    # real < 1 is drawn red, like the losses
    assert matplotlib.colors.to_hex(artists["bars"]["real"].get_facecolor()) == "#d64541"
    assert fig._suptitle.get_text() == "Sparse reality check: decode-gemm, fp16 on a100-like, 2:4"


# ---------------------------------------------------------------------------------------------- text view

def _synthetic(nominal: float = 2.0, real: float = 1.19, fallback: float = 0.42) -> RealityCheck:
    labels = dict(RUNGS)
    speedups = [nominal, nominal, 1.60, 1.50, 1.24, 1.30, 1.30, 1.22, real]
    rungs, losses = [], []
    gap = nominal - real
    for i, (key, speedup) in enumerate(zip(labels, speedups, strict=True)):
        rung = {"rung": key, "label": labels[key], "sparse_cycles": 1000.0 / speedup, "speedup": speedup}
        if i:
            rung["change"] = speedup - speedups[i - 1]
            losses.append({"rung": key, "label": labels[key], "loss": -rung["change"],
                           "share_of_gap": -rung["change"] / gap, "kind": "gain" if rung["change"] > 0 else "loss"})
        rungs.append(rung)
    return RealityCheck.from_dict({
        "schema_version": 1, "hardware": "a100-like", "workload": "bert-base", "params": {"batch": 16, "seq": 128},
        "sparsity": "2:4", "policy": "sparse-if-supported", "patterns_executed": ["2:4"],
        "inputs": {"hardware_hash": "-", "workload_hash": "-"}, "dense_total_cycles": 1000,
        "sparse_total_cycles": round(1000 / real), "clock_ghz": 1.0, "rungs": rungs, "losses": losses, "gap": gap,
        "bars": {"nominal_speedup": nominal, "real_speedup": real, "fallback_overhead": fallback},
        "fallback": {"layers": 0, "cycles": 0, "by_reason": {}, "reason_codes": []}, "energy": None,
        "sparse_layers": 1, "layers": 1, "slower_sparse_layers": [], "explanation": []})


def test_text_bars_layout() -> None:
    text = text_bars(_synthetic(), width=12)
    lines = text.splitlines()
    assert lines[:4] == [
        "SPARSE REALITY CHECK  bert-base (batch 16, seq 128) on a100-like, 2:4",
        "nominal sparsity   ████████████  2.00x",
        "real speedup       ███████       1.19x",
        "fallback overhead  █████         42% of sparse-run time",
    ]
    assert "  + padding, alignment, tile shape   1.24x  (-0.26x, 32% of the gap)" in lines
    assert "  + compressed data movement         1.30x  (+0.06x, -7% of the gap)" in lines
    assert "  + metadata bytes and decode        1.30x  (\u00b10.00x, 0% of the gap)" in lines
    assert "  nominal (datasheet M/N)            2.00x" in lines
    assert not any(line.startswith("why:") for line in lines)
    assert not text.endswith("\n")


@pytest.mark.parametrize("case", ["bert-base-b4/a100", "decode-gemm/a100", "resnet18/tpu"])
@pytest.mark.parametrize("width", [40, 25])
def test_text_bars_are_proportional(case: str, width: int) -> None:
    _, _, data = _case(case)
    lines = text_bars(data, width=width).splitlines()
    nominal, real = data.bars.nominal_speedup, data.bars.real_speedup
    fallback = data.bars.fallback_overhead
    counts = [line.count(BAR_CHAR) for line in lines[1:4]]
    assert counts == list(bar_lengths(data, width))
    top = max(nominal, real)
    assert max(counts[:2]) == width
    assert abs(counts[0] - width * nominal / top) <= 0.5
    assert abs(counts[1] - width * real / top) <= 0.5
    assert abs(counts[2] - width * fallback) <= 0.5
    assert lines[1].startswith("nominal sparsity") and lines[1].endswith(f"{nominal:.2f}x")
    assert lines[2].startswith("real speedup") and lines[2].endswith(f"{real:.2f}x")
    assert lines[3].startswith("fallback overhead")
    assert lines[3].endswith(f"{round(100 * fallback)}% of sparse-run time")
    # the value column lines up
    assert len({line.index(BAR_CHAR) for line in lines[1:4] if BAR_CHAR in line}) == 1
    value_col = len("fallback overhead  ") + width + 2
    assert all(line[value_col - 2:value_col] == "  " and line[value_col] != " " for line in lines[1:4])
    # the ladder: one line per rung, in order, with its speedup
    for rung in data.rungs:
        match = [line for line in lines if line.startswith(f"  {rung.label} ")]
        assert len(match) == 1 and f"{rung.speedup:.2f}x" in match[0]
    # and the explanation, when there is one
    assert [line[len("why: "):] for line in lines if line.startswith("why: ")] == list(data.explanation)


def test_a_denser_executed_pattern_is_noted() -> None:
    """tpu-like runs a requested 1:4 as 2:4: the nominal bar stays 4x and both views say what ran."""
    data = reality_check(load_workload(WL / "resnet18.yaml"), TPU, "1:4")
    assert data.patterns_executed == ("2:4",) and data.bars.nominal_speedup == 4.0
    assert math.isclose(sum(x.loss for x in data.losses), data.gap, rel_tol=1e-9)
    assert "note: 1:4 requested, executed as 2:4" in text_bars(data).splitlines()
    fig, _ = render_reality_check(data)
    assert any("1:4 requested, executed as 2:4" in t.get_text() for t in fig.texts)


def test_chart_carries_the_why_lines_of_the_terminal() -> None:
    """The picture explains itself: every 'why:' line the terminal prints is on the chart (cut, not lost)."""
    from accelsim.report.reality_chart import MAX_WHY_LINES, WHY_LINE_CHARS

    _, _, data = _case("gemm256/a100")
    fig, artists = render_reality_check(data)
    texts = [t.get_text() for t in fig.texts]
    terminal = [line for line in text_bars(data).splitlines() if line.startswith(("why: ", "note: "))]
    assert terminal, "this case has an explanation"
    for line in terminal[: MAX_WHY_LINES - 1]:
        shown = line if len(line) <= WHY_LINE_CHARS else line[: WHY_LINE_CHARS - 3] + "..."
        assert shown in texts
    # the footer band is added below: the plots keep the size they have without an explanation
    quiet, _ = render_reality_check(dataclasses.replace(data, explanation=()))
    h_why = artists["axes"]["speedup"].get_window_extent().height
    h_quiet = quiet.axes[0].get_window_extent().height
    assert abs(h_why - h_quiet) < 1.0 and fig.get_figheight() > quiet.get_figheight()


def test_the_metadata_rung_holds_the_unstructured_index() -> None:
    """unstructured:80% on a100-like (Tiled-CSL: a 16-bit location per fp16 value, as many index bytes as value
    bytes): the data-movement rung moves the values only, the metadata rung adds the index and the decompress
    stage, so the metadata rung costs speed. (The ops are lowered on each rung's hardware: metadata bits and
    index bytes are kernel inputs.)"""
    wl = workload_from_dict({"name": "g", "dtype": "fp16",
                             "layers": [{"name": "g", "op": "gemm", "m": 4096, "n": 16, "k": 4096}]})
    rc = reality_check(wl, A100, "unstructured:80%")
    by = {r.rung: r for r in rc.rungs}
    assert by["metadata"].sparse_cycles > by["data_movement"].sparse_cycles
    assert by["metadata"].change is not None and by["metadata"].change < 0.0
    assert by["fixed_cost"].sparse_cycles == rc.sparse_total_cycles  # the ladder still ends at the real run


# ---------------------------------------------------------------------------------------------- quantized

def _quantized_mlp(**section: object) -> object:
    return workload_from_dict({"name": "q-mlp", "dtype": "bf16", "quantization": {"weights": "int8", **section},
                               "layers": [{"name": "fc1", "op": "gemm", "m": 1024, "n": 256, "k": 512},
                                          {"name": "act", "op": "activation", "function": "gelu",
                                           "elements": 1024 * 256},
                                          {"name": "fc2", "op": "gemm", "m": 512, "n": 256, "k": 1024}]})


def test_a_quantized_workload_says_so_in_the_title_and_the_json() -> None:
    """Its speedups are of int8 Linears: the chart's subtitle and the terminal header say so (they used to read
    like an fp16 run's), and reality_check.json echoes the section the chart reads."""
    data = reality_check(_quantized_mlp(dequantize="unfused"), A100, "2:4")
    note = "quantized: int8 weights x bf16 activations on 2 linears, unfused dequantize"
    assert quantized_note(data) == note
    assert subtitle(data).startswith(note + "   \u00b7   policy: sparse-if-supported")
    assert text_bars(data).splitlines()[0] == f"SPARSE REALITY CHECK  q-mlp on a100-like, 2:4, {note}"
    echo = data.to_dict()["quantization"]
    assert echo == {"weights": "int8", "activations": "bf16", "quantized_layers": 2, "dequantize": "unfused"}
    assert list(data.to_dict())[:6] == ["schema_version", "hardware", "workload", "params", "dtype", "quantization"]
    back = RealityCheck.from_dict(json.loads(json.dumps(data.to_dict())))
    assert back == data and quantized_note(back) == note
    fused = reality_check(_quantized_mlp(layers=["fc2"]), A100, "2:4")
    assert quantized_note(fused) == "quantized: int8 weights x bf16 activations on 1 linear"
    # a workload without the section: no key in the JSON, nothing in the title
    _, _, plain = _case("bert-base-b4/a100")
    assert "quantization" not in plain.to_dict() and quantized_note(plain) == ""
    assert "quantized" not in subtitle(plain) and "quantized" not in text_bars(plain)


def test_a_run_where_nothing_ran_sparse_puts_the_whole_gap_on_the_fallbacks(capsys, tmp_path) -> None:
    """fp4 asks 2:4 on a part that runs fp4 sparse only as 4:8-paired: every layer falls back; the Amdahl rung
    takes the gap (not the host floor), the explanation says so and the run's warning is kept and printed."""
    from accelsim.cli import main

    rtx = load_hardware(HW / "rtx5090-like.yaml")
    model = workload_from_dict({"name": "fp4", "dtype": "fp4", "layers": [
        {"name": f"g{i}", "op": "gemm", "m": 256 << i, "n": 256, "k": 512} for i in range(4)]})
    rc = reality_check(model, rtx, "2:4")
    assert rc.sparse_layers == 0 and rc.bars.real_speedup == pytest.approx(1.0)
    amdahl = next(loss for loss in rc.losses if loss.rung == "amdahl")
    assert amdahl.share_of_gap == pytest.approx(1.0)
    assert "host_floor" not in [r.rung for r in rc.rungs]
    assert rc.explanation and rc.explanation[0].startswith("no layer ran sparse") and "pattern_unsupported" in \
        rc.explanation[0]
    assert any("4:8-paired" in w for w in rc.warnings)
    assert RealityCheck.from_dict(json.loads(json.dumps(rc.to_dict()))) == rc
    wl = tmp_path / "fp4.yaml"
    wl.write_text(json.dumps({"name": "fp4", "dtype": "fp4", "layers": [
        {"name": "g", "op": "gemm", "m": 512, "n": 256, "k": 512}]}))
    assert main(["reality-check", "--hw", str(HW / "rtx5090-like.yaml"), "--workload", str(wl),
                 "--sparsity", "2:4", "-o", str(tmp_path / "rc")]) == 0
    err = capsys.readouterr().err
    assert "warning: fp4 runs sparse on this hardware only as 4:8-paired" in err
    assert json.loads((tmp_path / "rc" / "reality_check.json").read_text())["warnings"]


def test_reality_check_takes_dtype_as_run_does(capsys) -> None:
    from accelsim.cli import main

    argv = ["--hw", str(HW / "h100-like.yaml"), "--workload", str(WL / "gemm-microbench.yaml"), "--sparsity", "2:4"]
    assert main(["reality-check", *argv, "--dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    assert "fp8 on h100-like" in out.splitlines()[0]
    assert main(["run", *argv, "--dtype", "fp8", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    real = next(line for line in out.splitlines() if line.startswith("real speedup"))
    assert f"{body['totals']['speedup_vs_dense']:.2f}x" in real


EXAMPLES = ROOT / "examples" / "reality"


@pytest.mark.parametrize("folder", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_the_shipped_example_reality_checks_are_what_the_model_says_today(folder: str) -> None:
    """examples/reality/<workload>-b<batch>-a100-2to4: the JSON a reader opens equals a fresh run (regenerate with
    the command in examples/reality/README.md when the model moves)."""
    name, batch = folder.removesuffix("-a100-2to4").rsplit("-b", 1)
    model = load_workload(WL / f"{name}.yaml", {"batch": int(batch)})
    fresh = reality_check(model, A100, "2:4", hw_source=str(HW / "a100-like.yaml")).to_dict()
    shipped = json.loads((EXAMPLES / folder / "reality_check.json").read_text())
    assert shipped == json.loads(json.dumps(fresh)), f"{folder} is stale: regenerate it"


def test_a_speedup_near_1_never_reads_as_1() -> None:
    """A ratio that rounds to 1.00 but is slower or faster shows the decimals that say which; exactly 1 stays 1.00x."""
    from accelsim.textsafe import speedup_text

    assert [speedup_text(x) for x in (2.0, 1.47, 1.0, 0.998, 1.004, 0.9951, 0.994)] == [
        "2.00x", "1.47x", "1.00x", "0.998x", "1.004x", "0.995x", "0.99x"]
    assert speedup_text(0.9996) == "0.9996x" and speedup_text(1 + 3e-6) == "1.000003x"
    assert speedup_text(1 - 1e-9) == "<1.000000x" and speedup_text(1 + 1e-9) == ">1.000000x"
    assert speedup_text(0.9996, 3) == "0.9996x" and speedup_text(1.23456, 3) == "1.235x"


def _shown_speedups(data: RealityCheck) -> list[str]:
    fig, artists = render_reality_check(data)
    axes = artists["axes"]
    return [t.get_text() for t in [*fig.texts, *axes["speedup"].texts, *axes["ladder"].texts]]


def test_a_slower_run_near_1_is_not_headlined_as_1x(tmp_path) -> None:
    """Audit: mobilenetv2 2:4 on edge-npu is 0.998x, slower, but the bar, the final rungs and the chart read 1.00x
    while the why line said slower. Text, ladder and chart now all show 0.998x."""
    data = reality_check(load_workload(WL / "mobilenetv2.yaml"), load_hardware(HW / "edge-npu.yaml"), "2:4")
    real = data.bars.real_speedup
    assert real < 1.0 and f"{real:.2f}" == "1.00" and f"{real:.3f}" == "0.998"
    lines = text_bars(data).splitlines()
    assert lines[2].endswith("  0.998x") and lines[2].startswith("real speedup")
    ladder = lines[lines.index(next(x for x in lines if x.startswith("ladder"))) + 1:][:len(data.rungs)]
    assert ladder[-1].split()[-7:] == ["real", "0.998x", "(±0.00x,", "0%", "of", "the", "gap)"]
    assert len({line.rindex(" (") for line in ladder[1:]}) == 1  # the change column stays aligned
    assert "why: sparse is slower than dense (0.998x)" in lines[-2]
    assert not any("1.00x" in line for line in [*lines[:4], *ladder])  # no rung or bar here is exactly 1
    shown = _shown_speedups(data)
    assert shown.count("0.998x") == 2 and "1.00x" not in shown  # the real bar and the waterfall's real bar
    svg = chart_files(render_reality_check(data)[0], tmp_path)[tmp_path / "reality_check.svg"].decode()
    assert "0.998x" in svg
    faster = _synthetic(real=1.004)
    assert text_bars(faster).splitlines()[2].endswith("  1.004x") and "1.004x" in _shown_speedups(faster)
    exactly = _synthetic(real=1.0)
    assert text_bars(exactly).splitlines()[2].endswith("  1.00x") and "1.00x" in _shown_speedups(exactly)
