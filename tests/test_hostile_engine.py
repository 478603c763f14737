"""Hostile sizes for the engine (issue #15 B2): bounded time and memory, or one line naming the limit.

Up to 2^20 systolic tiles (2^16 k-steps per CTA, 2^16 waves) the engine simulates every tile; past
that it simulates classes of identical tiles and extrapolates (``accelsim.engine.classes``). These
tests run huge shapes through the CLI under a 2 GB address-space limit, check the extrapolated path
against the exact one on shapes both can run, and check the closed-form wave count against the
listed one.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HW, ROOT

import accelsim.engine.classes as cl
from accelsim.engine import simulate, simulate_totals
from accelsim.engine import tensorcore as tc
from accelsim.hardware.model import load_hardware
from accelsim.limits import SizeLimitError
from accelsim.lowering import lower
from accelsim.simulation import Simulator, peak_macs_per_cycle, run
from accelsim.workloads.model import workload_from_dict

CORPUS = ROOT / "tests" / "corpus"
TWO_GB = 2 << 30
M31 = 2**31 - 1


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (TWO_GB, TWO_GB))


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process with 2 GB of address space; 60 s is far past any healthy run."""
    return subprocess.run([sys.executable, "-m", "accelsim.cli", *argv], capture_output=True, text=True,
                          timeout=60, preexec_fn=_limit_memory, cwd=ROOT, check=False)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("accelsim: warning:")]


def _gemm(m: int, n: int, k: int, **extra: object) -> object:
    return workload_from_dict({"name": "t", "dtype": "fp16",
                               "layers": [{"name": "g", "op": "gemm", "m": m, "n": n, "k": k, **extra}]})


@pytest.mark.parametrize("hw", ["a100-like", "tpu-like", "scalesim-32x32-os"])
def test_huge_gemms_answer_in_bounded_time_and_memory(hw: str) -> None:
    """10^6- and 65536-cubes, dense and 2:4: exit 0, sane numbers (a 10^6 cube timed out / ran out before)."""
    proc = _cli("run", "--hw", str(HW / f"{hw}.yaml"), "--workload", str(CORPUS / "huge-gemm-1e6.yaml"),
                "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert _errors(proc.stderr) == []
    body = json.loads(proc.stdout)
    peak = peak_macs_per_cycle(load_hardware(HW / f"{hw}.yaml"), "fp16")
    for layer in body["layers"]:
        c = layer["cycles"]
        assert c["total"] >= c["compute"] > 0
        assert c["total"] == c["compute"] + c["stall_memory"] + c["stall_decode"] + c["launch"]
        assert c["total"] >= layer["macs_executed"] / peak  # never faster than the peak rate
        assert 0 < layer["utilization"] <= 1.0
        assert c["total"] < 2**63
        assert all(0 <= v < 2**63 for lvl in layer["bytes"].values() for v in lvl.values())
    paths = [layer["path"] for layer in body["layers"]]
    assert paths.count("sparse") == 2


def test_every_dimension_at_2p31_is_refused_in_one_line() -> None:
    """m = n = k = 2^31-1 segfaulted (exit 139): now exit 2 naming the layer and the 2^62 limit."""
    proc = _cli("run", "--hw", str(HW / "tpu-like.yaml"), "--workload", str(CORPUS / "huge-gemm-2p31.yaml"))
    assert proc.returncode == 2, proc.stderr
    lines = _errors(proc.stderr)
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "layers[0] 'g'" in lines[0] and "exceed the limit of 2^62" in lines[0]


@pytest.mark.parametrize("hw", ["a100-like", "scalesim-32x32-ws", "edge-npu", "flex-nm"])
@pytest.mark.parametrize("sparsity", ["dense", "2:4"])
def test_2p31_refused_on_every_kind_of_part(hw: str, sparsity: str) -> None:
    with pytest.raises(SizeLimitError, match=r"layers\[0\] 'g' \(gemm m=2147483647.*2\^62"):
        lower(_gemm(M31, M31, M31), load_hardware(HW / f"{hw}.yaml"), sparsity)


@pytest.mark.parametrize("hw", ["tpu-like", "scalesim-32x32-os", "scalesim-32x32-ws", "a100-like", "rtx4090-like"])
@pytest.mark.parametrize("shape", [(1, 1, M31), (M31, 1, M31), (1, M31, M31), (M31, M31, 1), (4096, 4096, 10**9)])
def test_extreme_aspect_ratios_stay_within_64_bits(hw: str, shape: tuple[int, int, int]) -> None:
    """At most 2^62 MACs but one or two dimensions at 2^31-1: an answer under 2^63, or the 2^63 refusal."""
    hw_obj = load_hardware(HW / f"{hw}.yaml")
    for kernel in lower(_gemm(*shape), hw_obj, "2:4"):
        try:
            res = simulate(kernel, hw_obj, keep_tiles=False)
        except SizeLimitError as err:
            assert "exceeds 2^63-1" in str(err) and "\n" not in str(err)
            continue
        assert res.cycles["total"] >= res.cycles["compute"] > 0
        assert res.cycles["total"] < 2**63


def test_vector_op_past_the_limit_is_refused() -> None:
    proc = _cli("run", "--hw", str(HW / "a100-like.yaml"), "--workload", str(CORPUS / "huge-embedding.yaml"))
    assert proc.returncode == 2
    lines = _errors(proc.stderr)
    assert len(lines) == 1 and "'em' (embedding" in lines[0] and "bytes read exceed the limit of 2^62" in lines[0]


def test_model_total_past_2p63_is_refused() -> None:
    """Each layer fits, their sum does not: one line naming the workload and the total."""
    hw = load_hardware(HW / "tpu-like.yaml")
    layer = {"op": "gemm", "m": M31, "n": 1, "k": M31}
    wl = workload_from_dict({"name": "many", "layers": [{"name": f"g{i}", **layer} for i in range(100)]})
    with pytest.raises(SizeLimitError, match=r"workload 'many': total cycles = .* exceeds 2\^63-1"):
        run(wl, hw, "dense")


def test_huge_kernel_has_no_tile_records_and_trace_runs_refuse_it() -> None:
    hw = load_hardware(HW / "scalesim-32x32-os.yaml")
    kernel = lower(_gemm(10**6, 10**6, 10**6), hw, "dense")[0]
    res = simulate(kernel, hw)  # keep_tiles defaults to True: no records for an extrapolated kernel
    assert res.tiles is None and res.tiling["extrapolated"] is True
    assert res.tiling["tiles"] > cl.TILE_CAP
    with pytest.raises(SizeLimitError, match="too many for per-tile records"):
        Simulator(hw, keep_tiles=True)(kernel)


def test_sweep_totals_take_the_extrapolated_kernel() -> None:
    """The sweep's totals-only path extrapolates a huge kernel exactly as a run does."""
    hw = load_hardware(HW / "scalesim-32x32-ws.yaml")
    kernel = lower(_gemm(10**6, 10**6, 10**6), hw, "2:4")[0]
    assert simulate_totals(kernel, hw) == simulate(kernel, hw, keep_tiles=False).layer_totals().totals


def _relative(a: float, b: float, scale: float) -> float:
    return abs(a - b) / max(1.0, scale)


@pytest.mark.parametrize("hw,shape,sparsity", [
    ("scalesim-32x32-os", (1000, 900, 2000), "dense"),
    ("scalesim-32x32-os", (1000, 900, 2002), "2:4"),
    ("scalesim-32x32-ws", (1500, 700, 2500), "2:4"),
    ("tpu-like", (8192, 3000, 8192), "dense"),
    ("tpu-like", (8192, 3000, 8192), "2:4"),
    ("edge-npu", (2000, 1800, 700), "dense"),
    ("flex-nm", (3000, 1024, 2048), "2:4"),
    ("a100-like", (256, 4096, 200000), "dense"),
    ("h100-like", (512, 512, 300000), "2:4"),
])
def test_extrapolation_agrees_with_the_exact_path(monkeypatch: pytest.MonkeyPatch, hw: str,
                                                  shape: tuple[int, int, int], sparsity: str) -> None:
    """Classes of identical tiles, extrapolated, against every tile simulated: bytes exact, cycles within 2 %."""
    hw_obj = load_hardware(HW / f"{hw}.yaml")
    kernel = lower(_gemm(*shape), hw_obj, sparsity)[0]
    exact = simulate(kernel, hw_obj, keep_tiles=False)
    assert not exact.tiling.get("extrapolated")
    monkeypatch.setattr(cl, "TILE_CAP", 0)
    monkeypatch.setattr(cl, "KSTEP_CAP", 0)
    approx = simulate(kernel, hw_obj, keep_tiles=False)
    assert approx.tiling["extrapolated"] is True
    assert approx.tiling["tiles"] == exact.tiling["tiles"]
    for flag in ("a_resident", "b_resident", "c_resident"):  # the description matches the exact path's
        assert approx.tiling.get(flag) == exact.tiling.get(flag), flag
    for lvl in ("dram", "sram"):
        for key, value in exact.bytes[lvl].items():
            assert _relative(approx.bytes[lvl][key], value, value) < 1e-9, (lvl, key)
    total = exact.cycles["total"]
    assert approx.cycles["compute"] == pytest.approx(exact.cycles["compute"], rel=1e-9)
    for key in ("total", "stall_memory", "stall_decode"):
        assert _relative(approx.cycles[key], exact.cycles[key], total) < 0.02, key


def test_closed_form_wave_classes_equal_the_listed_ones() -> None:
    """Same classes, counts and order as one row per wave, in both closed-form branches."""
    rng = random.Random(15)
    for _ in range(1500):
        gm, gn = rng.randint(1, 60), rng.randint(1, 20)
        split, slots = rng.choice([1, 1, 2, 3, 4, 7]), rng.randint(1, 150)
        fit = rng.random() < 0.5
        listed = tc.wave_classes(gm, gn, split, slots, 1.5, 2.5, fit)
        for cap in (0, 5, cl.WAVE_CAP):  # 0: floor sums between boundaries; 5: some periods listed
            assert cl.wave_classes_large(gm, gn, split, slots, 1.5, 2.5, fit, cap=cap) == listed


def test_floor_sum() -> None:
    rng = random.Random(2)
    for _ in range(500):
        n, m, a, b = rng.randint(0, 60), rng.randint(1, 40), rng.randint(0, 90), rng.randint(0, 90)
        assert cl.floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


def test_corpus_index_lists_the_engine_cases() -> None:
    import yaml

    index = yaml.safe_load((CORPUS / "index-engine.yaml").read_text())
    files = {Path(a).name for entry in index for a in entry["argv"] if "{corpus}" in a}
    assert {"huge-gemm-2p31.yaml", "huge-gemm-1e6.yaml", "huge-embedding.yaml"} <= files


def test_a_2p31_square_row_with_k1_is_simulated_in_validate_hw() -> None:
    """m = n = 2^31-1, k = 1 (k >= 2 passes the 2^62-MAC limit): validate-hw predicts it, finite and positive.
    Its CTA grid has 8,388,608 raster bands; the L2-reuse walk once listed them all in a set (~570 MB, 9 s)."""
    from accelsim.analysis.gpu_validation import validate_hw
    from accelsim.analysis.measurements import parse_measurements

    text = ("gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"
            f"A100,fp16,{M31},{M31},1,590,326,,src,kernel-gemm\n")
    res = validate_hw(parse_measurements(text, "huge.csv"), {"A100": load_hardware(HW / "a100-like.yaml")})
    (row,) = res.rows
    assert row.status == "scored" and row.scored, row.message
    pred = row.predicted
    assert pred is not None and pred.dense_cycles > 0 and pred.sparse_cycles > 0
    assert 0 < pred.dense_us < float("inf") and 0 < pred.sparse_us < float("inf")
    assert 0 < pred.speedup <= 2.0  # never past the 2:4 bound
    hw = load_hardware(HW / "a100-like.yaml")
    peak = peak_macs_per_cycle(hw, "fp16")
    assert pred.dense_cycles >= M31 * M31 / peak  # no faster than the peak rate


@pytest.mark.parametrize("sparsity", ["dense", "2:4"])
def test_wave_classes_folded_to_sums_give_the_same_result(sparsity: str) -> None:
    """Without per-tile records a CTA grid keeps each wave class's sums, not its arrays: the same numbers."""
    hw = load_hardware(HW / "a100-like.yaml")
    kernel = lower(_gemm(20_000, 12_000, 8_192), hw, sparsity)[-1]
    kept = simulate(kernel, hw, keep_tiles=True)
    folded = simulate(kernel, hw, keep_tiles=False)
    assert kept.tiles is not None and folded.tiles is None
    assert kept.tiling["wave_classes"] > 1  # several classes, each folded
    assert folded.layer_totals() == kept.layer_totals()
    assert folded.layer_totals().totals == simulate_totals(kernel, hw)
    assert folded.tiling == kept.tiling
