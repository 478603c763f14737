"""Utilization is the tensor / PE array's: each layer against the array's peak in the element type it runs in (an
int8 linear of a quantized fp16 model against the int8 peak), the model total their aggregate over the model's
cycles, never above its busiest array layer nor 1. Work on the vector unit (a depthwise conv on a GPU part) keeps
its MACs as work (``macs``) but adds nothing to the array's (``macs_executed``, utilization). The roofline draws
a roof per element type and says which layers it leaves out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HW, WL, cli

from accelsim.hardware.kinds import peak_macs_per_cycle
from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.report import plots
from accelsim.results import RunResult
from accelsim.simulation import run
from accelsim.sweep import load_results, run_sweep, spec_from_dict
from accelsim.workloads.model import Conv2d, Gemm, workload_from_dict

QUANTIZED = {"name": "q", "dtype": "fp16", "quantization": {"weights": "int8", "layers": ["fc1"]}, "layers": [
    {"name": "fc1", "op": "gemm", "m": 2048, "n": 1024, "k": 2048},
    {"name": "act", "op": "activation", "function": "gelu", "elements": 2048 * 1024},
    {"name": "fc2", "op": "gemm", "m": 2048, "n": 1024, "k": 2048}]}

# an inverted-residual block: pointwise expand, depthwise 3x3 (groups = channels), pointwise project
DEPTHWISE = {"name": "dw", "dtype": "fp16", "layers": [
    {"name": "expand", "op": "conv2d", "ifmap": [28, 28], "kernel": [1, 1], "channels": 32, "filters": 192,
     "stride": 1, "padding": 0},
    {"name": "dw", "op": "conv2d", "ifmap": [28, 28], "kernel": [3, 3], "channels": 192, "filters": 192,
     "stride": 1, "padding": 1, "groups": 192},
    {"name": "relu", "op": "activation", "function": "relu6", "elements": 192 * 28 * 28},
    {"name": "project", "op": "conv2d", "ifmap": [28, 28], "kernel": [1, 1], "channels": 192, "filters": 32,
     "stride": 1, "padding": 0}]}
DW_MACS = 192 * 28 * 28 * 9  # one output per channel and pixel, a 3x3 window each


@pytest.fixture(scope="module")
def a100() -> Any:
    return load_hardware(HW / "a100-like.yaml")


def _array_bound(res: RunResult) -> float:
    """The busiest array layer's utilization: what the model's total may not exceed."""
    return max(r.utilization for r in res.layers if r.path in ("dense", "sparse"))


@pytest.mark.parametrize("sparsity", ["dense", "2:4"])
def test_a_quantized_models_total_measures_each_layer_against_its_own_types_peak(a100: Any, sparsity: str) -> None:
    res = run(workload_from_dict(QUANTIZED), a100, sparsity)
    int8, fp16 = peak_macs_per_cycle(a100, "int8"), peak_macs_per_cycle(a100, "fp16")
    assert int8 == 2 * fp16  # the A100's int8 tensor-core rate
    layers = {r.name: r for r in res.layers}
    fc1, fc2 = layers["fc1"], layers["fc2"]
    assert (fc1.dtype, fc2.dtype, layers["act"].dtype, layers["fc1.quantize"].dtype) == ("int8", None, None, None)
    for r, peak in ((fc1, int8), (fc2, fp16)):  # each layer's utilization: its executed MACs over its own peak
        assert r.utilization == pytest.approx(r.macs_executed / (r.cycles["total"] * peak), rel=1e-12)
    total = res.total_cycles
    expected = fc1.macs_executed / (total * int8) + fc2.macs_executed / (total * fp16)
    util = res.totals["utilization"]
    assert util == round(expected, 6)
    assert util <= _array_bound(res) <= 1.0
    # the old whole-model figure (every MAC against the fp16 peak) overstates it by fc1's MACs
    assert res.totals["macs_executed"] / (total * fp16) > util + 0.05
    # the JSON says which layer runs in int8 and reads back to the same totals
    body = json.loads(res.to_json())
    assert [lay.get("dtype") for lay in body["layers"]] == [None, "int8", None, None]
    back = RunResult.from_json(res.to_json())
    assert back == res and back.totals["utilization"] == util


def test_an_int8_model_run_at_the_int8_peak_is_not_above_100_percent(a100: Any) -> None:
    """The audit's case: a big int8 GEMM at ~73 % of the int8 peak showed 138 % for the model (fp16 peak)."""
    data = {"name": "big", "dtype": "fp16", "quantization": {"weights": "int8"},
            "layers": [{"name": "g", "op": "gemm", "m": 4096, "n": 4096, "k": 4096}]}
    res = run(workload_from_dict(data), a100, "dense")
    gemm = next(r for r in res.layers if r.name == "g")
    assert gemm.utilization > 0.5
    int8 = peak_macs_per_cycle(a100, "int8")
    assert res.totals["utilization"] == round(gemm.macs_executed / (res.total_cycles * int8), 6)
    assert res.totals["utilization"] < gemm.utilization  # the quantize layer adds time, no array work


def test_quantize_flag_total_stays_under_its_busiest_layer(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in QUANTIZED.items() if k != "quantization"}))
    code, out, _ = cli(capsys, "run", "--hw", HW / "a100-like.yaml", "--workload", path, "--quantize", "int8",
                       "--sparsity", "2:4", "--format", "json")
    assert code == 0
    body = json.loads(out)
    busiest = max(lay["utilization"] for lay in body["layers"] if lay["path"] in ("dense", "sparse"))
    assert {lay.get("dtype") for lay in body["layers"] if lay["op"] == "gemm"} == {"int8"}
    assert 0 < body["totals"]["utilization"] <= busiest <= 1.0


def test_a_sweep_row_of_a_quantized_model_equals_the_run_on_both_paths(tmp_path: Path) -> None:
    wl = tmp_path / "q.yaml"
    wl.write_text(yaml.safe_dump(QUANTIZED))
    spec = spec_from_dict({"name": "q", "hardware": str(HW / "a100-like.yaml"), "workloads": [str(wl)],
                           "sparsity": ["dense", "2:4"], "grid": {"dram.bandwidth_gb_s": [2039]}})
    run_sweep(spec, tmp_path / "lean", workers=1)
    run_sweep(spec, tmp_path / "ref", workers=1, lean=False)
    lean, ref = load_results(tmp_path / "lean"), load_results(tmp_path / "ref")
    assert lean.rows == ref.rows
    util, sp = lean.index("utilization"), lean.index("sparsity")
    for pattern in ("dense", "2:4"):  # the config's own bandwidth: the row is the run's
        row = next(r for r in lean.rows if r[sp] == pattern)
        res = run(workload_from_dict(QUANTIZED), load_hardware(HW / "a100-like.yaml"), pattern)
        assert row[util] == res.totals["utilization"] <= _array_bound(res)


def test_a_depthwise_conv_on_the_vector_unit_keeps_its_macs_as_work(a100: Any) -> None:
    w = workload_from_dict(DEPTHWISE)
    tpu = load_hardware(HW / "tpu-like.yaml")
    assert a100.vector.depthwise == "vector" and tpu.vector.depthwise == "array"
    gpu, array = run(w, a100, "dense"), run(w, tpu, "dense")
    dw, dw_array = gpu.layers[1], array.layers[1]
    assert (dw.path, dw_array.path) == ("vector", "dense")
    # work is the op's, wherever it runs: m n k batch of its GEMM view, in the shape too
    assert dw.macs == dw_array.macs == DW_MACS
    assert dw.shape == {"elements": 192 * 28 * 28, "m": 1, "n": 28 * 28, "k": 9, "batch": 192}
    assert dw.shape["m"] * dw.shape["n"] * dw.shape["k"] * dw.shape["batch"] == dw.macs
    assert gpu.totals["macs"] == array.totals["macs"] == sum(
        lay.gemm_shape()[0] * lay.gemm_shape()[1] * lay.gemm_shape()[2] * lay.groups
        for lay in w.layers if isinstance(lay, Conv2d))
    # the array executed none of it: its utilization is the array layers' alone
    assert dw.macs_executed == 0
    assert gpu.totals["macs_executed"] == gpu.totals["macs"] - DW_MACS
    peak = gpu.peak_macs_per_cycle
    assert gpu.totals["utilization"] == round(gpu.totals["macs_executed"] / (gpu.total_cycles * peak), 6)
    assert gpu.totals["utilization"] <= _array_bound(gpu)
    # a vector layer's own utilization is the vector unit's: its ops over the unit's rate
    assert dw.utilization == pytest.approx(dw.counts["vector_ops"] / (dw.cycles["total"] * a100.vector.ops_per_cycle))
    # the CSV's m x n x k x batch x gemms = macs holds for it too
    csv = run_csv(gpu).splitlines()
    head, row = csv[0].split(","), next(r.split(",") for r in csv if r.startswith("dw,"))
    cols = dict(zip(head, row, strict=True))
    assert int(cols["m"]) * int(cols["n"]) * int(cols["k"]) * int(cols["batch"]) * int(cols["gemms"]) \
        == int(cols["macs"]) == DW_MACS
    assert RunResult.from_json(gpu.to_json()) == gpu


def run_csv(res: RunResult) -> str:
    from accelsim.cli.run import format_csv
    return format_csv(res)


def test_mobilenetv2_lowers_to_the_same_macs_on_every_shipped_config() -> None:
    """A result's ``macs`` are its kernels' (engine): the workload's 300.8e6 dense-equivalent MACs on every config,
    GPU parts with depthwise convs on the vector unit too (they lost 20.7e6 of them)."""
    w = workload_from_dict(yaml.safe_load((WL / "mobilenetv2.yaml").read_text()))
    expected = sum(lay.gemm_shape()[0] * lay.gemm_shape()[1] * lay.gemm_shape()[2] * getattr(lay, "groups", 1)
                   for lay in w.layers if isinstance(lay, Conv2d | Gemm))
    assert expected == 300_774_272
    placements = set()
    for path in sorted(HW.glob("*.yaml")):
        hw = load_hardware(path)
        placements.add(hw.vector.depthwise)
        kernels = lower(w, hw, "dense")
        assert sum(k.macs for k in kernels) == expected, path.name
        vector_dw = [k for k in kernels if k.vector and k.op == "conv2d"]
        assert all(k.macs_executed == 0 for k in vector_dw)
        assert sum(k.macs_executed for k in kernels) == expected - sum(k.macs for k in vector_dw)
    assert placements == {"array", "vector"}


# -- roofline -----------------------------------------------------------------------------------------------

def _roofs(fig: Any) -> dict[str, float]:
    """The roofs drawn: legend label -> the flat part's height."""
    ax = fig.axes[0]
    return {line.get_label(): float(max(line.get_ydata())) for line in ax.get_lines()
            if "roof" in line.get_label()}


def test_roofline_draws_a_roof_per_element_type_and_no_point_sits_above_its_roof(a100: Any) -> None:
    w = workload_from_dict(QUANTIZED)
    dense, sparse = run(w, a100, "dense"), run(w, a100, "2:4")
    int8, fp16 = peak_macs_per_cycle(a100, "int8"), peak_macs_per_cycle(a100, "fp16")
    fig = plots.plot_roofline(dense, sparse, a100)
    roofs = _roofs(fig)
    assert roofs == {f"dense roof, fp16 ({fp16:,.0f} MACs/cycle)": fp16,
                     f"dense roof, int8 ({int8:,.0f} MACs/cycle)": int8,
                     f"sparse roof 2:4, fp16: 2x compute ({2 * fp16:,.0f})": 2 * fp16,
                     f"sparse roof 2:4, int8: 2x compute ({2 * int8:,.0f})": 2 * int8}
    bw = a100.dram_bytes_per_cycle()
    for res in (dense, sparse):
        pts = plots.roofline_points(res)
        assert {p["name"]: p["dtype"] for p in pts} == {"fc1": "int8", "fc2": "fp16"}
        for p in pts:
            roof = p["peak"] * (2.0 if p["path"] == "sparse" else 1.0)
            assert p["perf"] <= min(roof, p["ai"] * bw)
    fc1 = next(p for p in plots.roofline_points(dense) if p["name"] == "fc1")
    assert fc1["perf"] > fp16 * 0.5 and fc1["peak"] == int8


def test_roofline_says_which_layers_and_macs_it_leaves_out(a100: Any) -> None:
    w = workload_from_dict(DEPTHWISE)
    dense, sparse = run(w, a100, "dense"), run(w, a100, "2:4")
    left = plots.roofline_left_out(sparse)
    assert left["vector"] == {"layers": 2, "with_macs": 1, "ops": {"depthwise conv2d": 1}, "macs": DW_MACS}
    assert left["model_macs"] == sparse.totals["macs"]
    assert {p["name"] for p in plots.roofline_points(sparse)} == {"expand", "project"}
    fig = plots.plot_roofline(dense, sparse, a100)
    texts = [t.get_text() for t in fig.texts]
    share = DW_MACS / sparse.totals["macs"]
    assert f"left out: 2 vector-unit layer(s) (1 depthwise conv2d with {DW_MACS:,} MACs, {share:.1%} of the " \
           "model's)" in texts
    # on the TPU-like part the depthwise conv runs on the array: it is a point, and only the activation is left out
    tpu = load_hardware(HW / "tpu-like.yaml")
    fig = plots.plot_roofline(run(w, tpu, "dense"), run(w, tpu, "2:4"), tpu)
    assert "left out: 1 vector-unit layer(s)" in [t.get_text() for t in fig.texts]


def test_the_reports_occupancy_measures_each_layer_against_its_own_types_peak(a100: Any) -> None:
    from accelsim.analysis.deployment import _element_peaks, build_report

    rep = build_report(workload_from_dict(QUANTIZED), a100, "2:4")
    int8, fp16 = peak_macs_per_cycle(a100, "int8"), peak_macs_per_cycle(a100, "fp16")
    assert rep.subject.peak_macs_per_cycle == fp16
    assert dict(rep.subject.peak_macs_per_cycle_by_dtype or {}) == {"fp16": fp16, "int8": int8}
    res = run(workload_from_dict(QUANTIZED), a100, "2:4")
    occ = rep.summary.occupancy.sparse
    assert occ.model == pytest.approx(res.totals["utilization"], abs=1e-6)
    assert occ.model <= occ.array_ops <= _array_bound(res) <= 1.0
    assert "peak_macs_per_cycle_by_dtype" in rep.subject.to_dict()
    plain = run(workload_from_dict({k: v for k, v in QUANTIZED.items() if k != "quantization"}), a100, "2:4")
    assert _element_peaks(plain, plain) is None  # one element type: the subject lists none
