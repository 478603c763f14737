"""What a sweep and its plots say about themselves: patterns that run dense everywhere, a resumed run's
chunks, bad --workers, plots left out for a one-parameter grid."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import cli

from accelsim.cli.sweep import sweep_plot_command
from accelsim.errors import AccelsimError
from accelsim.sweep import load_results, run_sweep

ROOT = Path(__file__).resolve().parents[1]
TPU = str(ROOT / "hwconfigs/tpu-like.yaml")
TINY = {"name": "tiny", "dtype": "fp16", "params": {"batch": 1}, "layers": [
    {"name": "g1", "op": "gemm", "m": 256, "n": "batch * 64", "k": 256},
    {"name": "g2", "op": "gemm", "m": 512, "n": "batch * 64", "k": 256},
    {"name": "scores", "op": "matmul", "m": 64, "n": 64, "k": 32, "batch": "batch * 2"}]}


def _spec(tmp: Path, **extra) -> Path:
    wl = tmp / "tiny.yaml"
    wl.write_text(yaml.safe_dump(TINY))
    spec = {"name": "notes", "hardware": TPU, "workloads": [str(wl)],
            "sparsity": ["dense", "3:7", "unstructured:50%", "2:4"], "grid": {"dram.bandwidth_gb_s": [60, 400]}}
    spec.update(extra)
    path = tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notes")
    spec = _spec(tmp)
    return spec, run_sweep(spec, tmp / "res", workers=1, chunk_size=1)


def test_a_pattern_the_hardware_cannot_run_is_warned_with_its_reason(swept) -> None:
    """3:7 on tpu-like (2:4 only) used to give rows identical to the dense ones, fallback_rate 1, and no word."""
    _, res = swept
    table = load_results(res.out)
    col = {c: n for n, c in enumerate(table.columns)}
    by = {(r[col["point"]], r[col["sparsity"]]): r for r in table.rows}
    for point in (0, 1):  # the premise: those rows repeat the dense numbers
        for sp in ("3:7", "unstructured:50%"):
            assert by[(point, sp)][col["latency_us"]] == by[(point, "dense")][col["latency_us"]]
            assert by[(point, sp)][col["fallback_rate"]] == 1.0
    dense = [w for w in res.warnings if "run every layer that asks for a sparse format dense" in w]
    assert len(dense) == 2, res.warnings
    assert dense[0].startswith("2 of 2 rows (2 points) of sparsity 3:7 run every layer")
    assert "E.g. point 0 (dram.bandwidth_gb_s=60.0), tiny, 3:7: 3 layer(s) dense on tpu-like: 2 pattern_unsupported " \
           "(no native pattern of the hardware contains the requested one" in dense[0]
    assert dense[0].endswith("), 1 activation_operands")  # the attention matmul, whatever the pattern
    assert dense[1].startswith("2 of 2 rows (2 points) of sparsity unstructured:50% run every layer")
    assert "dense on tpu-like: 2 format_unsupported (the hardware declares no way" in dense[1]
    assert not any("2:4" in w for w in res.warnings)  # runs sparse: no note


def test_sweep_plot_says_why_a_one_parameter_grid_has_no_heatmaps(swept, tmp_path: Path, capsys) -> None:
    _, res = swept
    paths, notes = sweep_plot_command(res.out, tmp_path / "plots")
    assert sorted(p.name for p in paths) == ["pareto_energy_tiny.png", "pareto_tiny.png"]
    assert notes[0] == ("heatmaps and where sparsity pays: not drawn, they need two grid parameters; this sweep's "
                        "grid has 1: dram.bandwidth_gb_s")
    code, out, _ = cli(capsys, "sweep-plot", res.out, "-o", tmp_path / "plots2")
    assert code == 0 and f"sweep-plot: {notes[0]}\n" in out


def test_resume_says_what_it_kept_and_redid(tmp_path: Path, capsys) -> None:
    """--resume used to print the fresh run's line, and '(0 configs/s)' when nothing was left to run."""
    spec = _spec(tmp_path, sparsity=["dense"], grid={"dram.bandwidth_gb_s": [60, 200, 400]})
    out = tmp_path / "res"
    run_sweep(spec, out, workers=1, chunk_size=1)
    chunks = sorted((out / "chunks").glob("chunk-*.jsonl"))
    assert len(chunks) == 3
    chunks[1].write_bytes(chunks[1].read_bytes()[:10])  # a partial write
    (out / "chunks" / f".{chunks[2].name}.999.1.tmp").write_bytes(b"[1")  # a killed writer's temp file
    code, text, _ = cli(capsys, "sweep", spec, "-o", out, "--workers", "1", "--resume")
    line = text.splitlines()[0]
    assert code == 0 and line.startswith("sweep: 3 configs, 3 rows"), text
    assert "configs/s over the 1 run now); 2 of 3 chunks kept from an earlier run, 1 run now (1 partial or " \
           "corrupt chunk file removed), 1 leftover temporary file removed" in line, line
    code, text, _ = cli(capsys, "sweep", spec, "-o", out, "--workers", "1", "--resume")
    line = text.splitlines()[0]
    assert "(nothing left to run); 3 of 3 chunks kept from an earlier run, 0 run now" in line, line
    assert "configs/s" not in line
    code, text, _ = cli(capsys, "sweep", spec, "-o", tmp_path / "fresh", "--workers", "1")
    assert "configs/s)\n" in text and "kept" not in text and "(0 configs/s" not in text, text


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_workers_below_one_is_a_usage_error(tmp_path: Path, capsys, value: str) -> None:
    """--workers -3 ran in-process and --workers 0 meant all cores, neither documented."""
    spec = _spec(tmp_path, sparsity=["dense"])
    with pytest.raises(SystemExit) as exc:
        cli(capsys, "sweep", spec, "-o", tmp_path / "res", "--workers", value)
    lines = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(lines) == 1 and "--workers" in lines[0] and ">= 1" in lines[0], lines
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("key, value", [("workers", 0), ("workers", -3), ("chunk_size", 0), ("workers", True)])
def test_run_sweep_refuses_workers_or_chunk_size_below_one(tmp_path: Path, key: str, value: object) -> None:
    spec = _spec(tmp_path, sparsity=["dense"])
    with pytest.raises(AccelsimError, match=f"run_sweep: {key} must be a whole number >= 1"):
        run_sweep(spec, tmp_path / "res", **{key: value})
    assert not (tmp_path / "res").exists()


def test_sweep_plot_says_why_a_dense_only_sweep_has_no_sparsity_pays_chart(tmp_path: Path) -> None:
    spec = _spec(tmp_path, sparsity=["dense"], grid={"dram.bandwidth_gb_s": [60, 400], "core.compute.rows": [64, 128]})
    run_sweep(spec, tmp_path / "res", workers=1)
    paths, notes = sweep_plot_command(tmp_path / "res")
    assert sorted(p.name for p in paths) == ["heatmap_tiny.png", "pareto_energy_tiny.png", "pareto_tiny.png"]
    assert notes[1] == "where sparsity pays: not drawn, the sweep has no sparse pattern to compare with dense"
