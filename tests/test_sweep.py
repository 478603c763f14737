"""Design-space sweeps: spec validation, sampling, infeasible rows, lean == run(), Dask, kill and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from accelsim.cli.sweep import sweep_command, sweep_plot_command
from accelsim.errors import AccelsimError, ConfigError
from accelsim.sweep import METRICS, field_kind, load_results, load_spec, round_to_field, run_sweep, spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
TPU = str(ROOT / "hwconfigs/tpu-like.yaml")
FLEX = str(ROOT / "hwconfigs/flex-nm.yaml")
A100 = str(ROOT / "hwconfigs/a100-like.yaml")
BERT = str(ROOT / "workloads/bert-base.yaml")
RESNET18 = str(ROOT / "workloads/resnet18.yaml")
MOBILENET = str(ROOT / "workloads/mobilenetv2.yaml")

TINY = {
    "name": "tiny", "dtype": "fp16", "params": {"batch": 1},
    "layers": [
        {"name": "g1", "op": "gemm", "m": 256, "n": "batch * 64", "k": 256},
        {"name": "g2", "op": "gemm", "m": 512, "n": "batch * 64", "k": 256},
        {"name": "g1b", "op": "gemm", "m": 256, "n": "batch * 64", "k": 256},
        {"name": "scores", "op": "matmul", "m": 64, "n": 64, "k": 32, "batch": "batch * 2"},
        {"name": "norm", "op": "layernorm", "elements": "batch * 64 * 256"},
    ],
}


@pytest.fixture()
def tiny(tmp_path: Path) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return str(path)


def small_spec(tiny: str, **extra) -> dict:
    spec = {"name": "small", "hardware": TPU, "workloads": [tiny], "set": {"batch": [1, 4]},
            "sparsity": ["dense", "2:4"],
            "grid": {"core.sram.filter_bytes": [65536, 1048576], "dram.bandwidth_gb_s": [50, 400, 1600]},
            "random": {"n": 4, "seed": 3, "core.compute.rows": {"choice": [32, 64, 128]},
                       "core.sparse.decode_groups_per_cycle": {"log_uniform": [4, 256]}}}
    spec.update(extra)
    return spec


def rows_by_key(cols: list[str], rows: list[list]) -> dict[tuple, list]:
    i = {c: n for n, c in enumerate(cols)}
    return {(r[i["point"]], r[i["workload"]], r[i["batch"]], r[i["sparsity"]]): r for r in rows}


# -- spec: union, rounding, validation ---------------------------------------------------------------

def test_grid_random_union_and_rounding(tiny: str) -> None:
    spec = spec_from_dict({
        "name": "u", "hardware": TPU, "workloads": [tiny], "sparsity": ["dense"],
        "grid": {"dram.bandwidth_gb_s": [100, 200], "core.compute.cols": [64, 128]},
        "random": {"n": 30, "seed": 5, "core.compute.rows": {"uniform": [15.5, 40.2]},
                   "core.sram.filter_bytes": {"log_uniform": [262144, 4194304]},
                   "core.sparse.decode_groups_per_cycle": {"uniform": [1, 2]},
                   "dram.bandwidth_gb_s": {"int_uniform": [300, 310]}}})
    grid = [p for p in spec.points if p.origin == "grid"]
    rand = [p for p in spec.points if p.origin == "random"]
    # grid: the product in spec order (first key slowest), listed first
    assert [p.overrides for p in grid] == [
        {"dram.bandwidth_gb_s": 100, "core.compute.cols": 64}, {"dram.bandwidth_gb_s": 100, "core.compute.cols": 128},
        {"dram.bandwidth_gb_s": 200, "core.compute.cols": 64}, {"dram.bandwidth_gb_s": 200, "core.compute.cols": 128}]
    assert len(rand) == 30 and spec.duplicates_dropped == 0
    assert [p.index for p in spec.points] == list(range(34))
    for p in rand:
        rows = p.overrides["core.compute.rows"]  # integer field from a continuous distribution: rounded
        assert isinstance(rows, int) and 16 <= rows <= 40
        assert isinstance(p.overrides["core.sram.filter_bytes"], int)
        assert isinstance(p.overrides["core.sparse.decode_groups_per_cycle"], float)  # float field: kept
        assert 300 <= p.overrides["dram.bandwidth_gb_s"] <= 310
    # swept columns: grid keys, then random-only keys; resolved values (base value where not swept)
    assert spec.swept == ("dram.bandwidth_gb_s", "core.compute.cols", "core.compute.rows",
                          "core.sram.filter_bytes", "core.sparse.decode_groups_per_cycle")
    assert grid[0].values[2] == 128 and grid[0].values[3] == 8388608
    # the rule: round half to even, then clamp to [ceil(low), floor(high)]
    assert round_to_field(2.5, 1, 10) == 2 and round_to_field(3.5, 1, 10) == 4
    assert round_to_field(15.6, 15.5, 40.2) == 16 and round_to_field(40.4, 15.5, 40.2) == 40
    assert round_to_field(15.5, 15.5, 40.2) == 16  # 16 is even, and ceil(15.5) = 16 anyway
    # seeded: the same spec samples the same points
    again = spec_from_dict({
        "name": "u", "hardware": TPU, "workloads": [tiny], "sparsity": ["dense"],
        "grid": {"dram.bandwidth_gb_s": [100, 200], "core.compute.cols": [64, 128]},
        "random": {"n": 30, "seed": 5, "core.compute.rows": {"uniform": [15.5, 40.2]},
                   "core.sram.filter_bytes": {"log_uniform": [262144, 4194304]},
                   "core.sparse.decode_groups_per_cycle": {"uniform": [1, 2]},
                   "dram.bandwidth_gb_s": {"int_uniform": [300, 310]}}})
    assert [p.overrides for p in again.points] == [p.overrides for p in spec.points]
    assert again.spec_hash == spec.spec_hash


def test_union_drops_duplicates_and_field_kinds(tiny: str) -> None:
    spec = spec_from_dict({"name": "d", "hardware": TPU, "workloads": [tiny],
                           "grid": {"core.compute.rows": [64, 128]},
                           "random": {"n": 10, "seed": 1, "core.compute.rows": {"choice": [64, 128]}}})
    assert len(spec.points) == 2 and spec.duplicates_dropped == 10  # a union: every sample repeats a grid point
    assert spec.sparsity == (None,)  # default: the workload's own plan
    base = yaml.safe_load(Path(TPU).read_text())
    assert field_kind("core.compute.rows", base) == "int"
    assert field_kind("core.sram.filter_bytes", base) == "int"
    assert field_kind("dram.bandwidth_gb_s", base) == "float"
    assert field_kind("core.sparse.decode_groups_per_cycle", base) == "float"
    assert field_kind("core.compute.dataflow", base) == "other"
    assert field_kind('core.sparse.patterns.2:4.metadata_bits_per_value', base) == "int"
    assert field_kind("core.sram.filter_byte", base) is None


def test_invalid_path_fails_before_running_naming_it(tiny: str, tmp_path: Path) -> None:
    spec = small_spec(tiny, grid={"core.sram.filter_byte": [65536]})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as err:
        sweep_command(path, out)
    assert err.value.key == "grid.core.sram.filter_byte"
    assert "unknown key" in str(err.value) and "filter_bytes" in str(err.value)  # did you mean
    assert not out.exists()  # nothing ran, nothing written
    # a bad value: the first failing point is reported, with its path and value
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, grid={"dram.bandwidth_gb_s": [100, -5]}))
    assert err.value.key == "grid.dram.bandwidth_gb_s" and "point 1" in str(err.value) and "-5" in str(err.value)
    # a random sample that breaks validation names the random path
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, random={"n": 3, "core.compute.dataflow": {"choice": ["ws", "diagonal"]},
                                                "seed": 0}))
    assert err.value.key == "random.core.compute.dataflow"
    with pytest.raises(ConfigError, match="not a number field"):
        spec_from_dict(small_spec(tiny, random={"n": 3, "core.compute.dataflow": {"uniform": [1, 2]}}))
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, set={"batch": [1], "heads": [2]}))
    assert err.value.key == "set.heads"
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, sparsity=["2:4", 124]))
    assert err.value.key == "sparsity[1]" and "quote" in str(err.value)
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, grids={}))
    assert err.value.key == "grids" and "did you mean 'grid'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        spec_from_dict(small_spec(tiny, cost="pes * sram_byte"))
    assert err.value.key == "cost"


# -- running ----------------------------------------------------------------------------------------

def test_infeasible_point_is_a_row_and_outputs(tiny: str, tmp_path: Path) -> None:
    spec = spec_from_dict(small_spec(tiny))
    out = tmp_path / "res"
    seen: list[tuple[int, int]] = []
    res = run_sweep(spec, out, workers=1, progress=lambda d, t: seen.append((d, t)))
    assert res.points == 10 and res.rows == 10 * 2 * 2
    assert seen[0] == (0, 10) and seen[-1] == (10, 10)
    table = load_results(out)
    cols, rows = list(table.columns), table.rows
    assert cols[: 3] == ["point", "origin", "hw_hash"] and cols[-len(METRICS):] == list(METRICS)
    assert {"core.sram.filter_bytes", "dram.bandwidth_gb_s", "core.compute.rows",
            "core.sparse.decode_groups_per_cycle", "batch", "sparsity"} <= set(cols)
    i = {c: n for n, c in enumerate(cols)}
    bad = [r for r in rows if r[i["feasible"]] is False]
    # 64 KiB filter: a 128-row 2:4 tile with its metadata needs 36,864 bytes per half, has 32,768
    assert bad and all(r[i["core.sram.filter_bytes"]] == 65536 and r[i["sparsity"]] == "2:4" for r in bad)
    assert all(r[i["reason"]].startswith("core.sram.filter_bytes: SRAM too small") for r in bad)
    assert all(r[i["latency_us"]] is None for r in bad)
    good = [r for r in rows if r[i["feasible"]]]
    assert len(good) + len(bad) == len(rows) and res.infeasible_rows == len(bad)
    for r in good:
        assert r[i["cycles"]] > 0 and r[i["binding"]] in ("compute", "memory", "decode", "launch")
        assert r[i["layers"]] == 5
    dense = [r for r in good if r[i["sparsity"]] == "dense"]
    assert all(r[i["speedup_vs_dense"]] == 1.0 and r[i["metadata_bytes"]] == 0 for r in dense)
    assert all(r[i["fallback_layers"]] == 1 and r[i["fallback_rate"]] == pytest.approx(1 / 4)
               for r in good if r[i["sparsity"]] == "2:4")  # the matmul: activation operands
    # deterministic order: point, workload, parameters, sparsity
    keys = [(r[i["point"]], r[i["batch"]], r[i["sparsity"]]) for r in rows]
    assert keys == [(p, b, s) for p in range(10) for b in (1, 4) for s in ("dense", "2:4")]
    for name in ("results.csv", "spec.yaml", "meta.json", "plan.json"):
        assert (out / name).is_file()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["meta"]["accelsim_version"] and meta["sweep"]["rows"] == 40
    assert "round half to even" in meta["sweep"]["rounding"]
    assert yaml.safe_load((out / "spec.yaml").read_text())["name"] == "small"
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        table = pq.read_table(out / "results.parquet")
        assert table.num_rows == 40 and table.column_names == cols
    with pytest.raises(AccelsimError, match="already holds a sweep"):
        run_sweep(spec, out, workers=1)


def test_lean_path_equals_run_path(tmp_path: Path) -> None:
    """Every row of the lean batch path equals the row built from runner.run() (same cycles, bytes, all)."""
    cases = [
        {"name": "eq-tpu", "hardware": TPU, "workloads": [BERT, RESNET18], "set": {"batch": [4]},
         "sparsity": ["dense", "2:4", "1:4", "plan"],
         "grid": {"core.compute.dataflow": ["ws", "os", "is"], "core.sram.filter_bytes": [65536, 2097152]},
         "random": {"n": 3, "seed": 9, "core.compute.rows": {"choice": [32, 128]},
                    "dram.bandwidth_gb_s": {"log_uniform": [50, 3000]},
                    "core.sparse.decode_groups_per_cycle": {"log_uniform": [2, 300]},
                    "dram.latency_ns": {"uniform": [0, 500]}}},
        {"name": "eq-flex", "hardware": FLEX, "workloads": [BERT, MOBILENET], "set": {"batch": [2]},
         "policy": "fastest", "sparsity": ["1:4", "2:8", "4:8"],
         "grid": {"core.sparse.decode_groups_per_cycle": [0.25, 64],
                  "core.sparse.dense_operand_align": [1, 64],  # lowering fields: n padding, depthwise placement
                  "vector.depthwise": ["array", "vector"]}},
        {"name": "eq-gpu", "hardware": A100, "workloads": [BERT], "set": {"batch": [8]}, "sparsity": ["dense", "2:4"],
         "grid": {"dram.bandwidth_gb_s": [500, 2000]}},
    ]
    for case in cases:
        spec = spec_from_dict(case)
        run_sweep(spec, tmp_path / f"{case['name']}-lean", workers=1)
        run_sweep(spec, tmp_path / f"{case['name']}-ref", workers=1, lean=False)
        lean = load_results(tmp_path / f"{case['name']}-lean")
        ref = load_results(tmp_path / f"{case['name']}-ref")
        assert lean.columns == ref.columns
        assert len(lean.rows) == len(ref.rows) == len(spec.points) * spec.rows_per_point
        for a, b in zip(lean.rows, ref.rows, strict=True):
            assert a == b
        if case["name"] == "eq-tpu":
            feas = lean.index("feasible")
            assert any(r[feas] is False for r in lean.rows)  # infeasible rows compared too
        if case["name"] == "eq-flex":  # policy fastest: slow decode sends layers back to dense
            fb, dec = lean.index("fallback_layers"), lean.index("core.sparse.decode_groups_per_cycle")
            assert any(r[fb] > 24 for r in lean.rows if r[dec] == 0.25)


def test_dask_local_cluster_equals_local_pool(tiny: str, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    spec = spec_from_dict(small_spec(tiny))
    run_sweep(spec, tmp_path / "pool", workers=2, chunk_size=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        res = run_sweep(spec, tmp_path / "dask", executor="dask", dask_address=cl.scheduler_address, chunk_size=3)
    assert "dask scheduler" in res.executor
    pool, dask = load_results(tmp_path / "pool"), load_results(tmp_path / "dask")
    assert dask.columns == pool.columns
    assert dask.rows == pool.rows  # row for row, same order
    assert (tmp_path / "dask/results.csv").read_bytes() == (tmp_path / "pool/results.csv").read_bytes()


def test_a_local_pool_compiles_in_the_parent_before_forking(tiny: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent simulates one point before starting the pool, so forked workers inherit compiled kernels
    instead of all compiling (and writing numba's cache) at once; the rows are those of a serial run."""
    from accelsim.sweep import executors

    seen: list[int] = []
    real = executors.run_points

    def counting(ctx, points):  # type: ignore[no-untyped-def]
        if os.getpid() == parent:
            seen.append(len(points))
        return real(ctx, points)

    parent = os.getpid()
    monkeypatch.setattr(executors, "run_points", counting)
    spec = spec_from_dict(small_spec(tiny))
    run_sweep(spec, tmp_path / "pool", workers=2, chunk_size=4)
    assert seen == [1]  # the warm-up point; every chunk ran in a worker
    run_sweep(spec, tmp_path / "serial", workers=1, chunk_size=4)
    assert (tmp_path / "pool/results.csv").read_bytes() == (tmp_path / "serial/results.csv").read_bytes()


def test_dask_missing_is_a_clear_error(tiny: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(AccelsimError, match=r"pip install 'dask\[distributed\]'"):
        run_sweep(spec_from_dict(small_spec(tiny)), tmp_path / "out", executor="dask")
    assert not (tmp_path / "out").exists()


# -- resume -----------------------------------------------------------------------------------------

class _Crash(Exception):
    pass


def test_crash_then_resume_no_lost_no_duplicated_rows(tiny: str, tmp_path: Path) -> None:
    spec = spec_from_dict(small_spec(tiny))
    run_sweep(spec, tmp_path / "clean", workers=1, chunk_size=1)
    clean = load_results(tmp_path / "clean")
    out = tmp_path / "crashed"
    calls = []

    def crash_after_four(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 5:  # the first call reports 0 done; crash once four chunks are on disk
            raise _Crash

    with pytest.raises(_Crash):
        run_sweep(spec, out, workers=1, chunk_size=1, progress=crash_after_four)
    assert len(list((out / "chunks").glob("chunk-*.jsonl"))) == 4 and not (out / "results.csv").exists()
    res = run_sweep(spec, out, workers=1, resume=True)
    assert res.chunks_resumed == 4 and res.chunks_run == 6
    assert load_results(out) == clean


def test_corrupt_partial_and_stray_chunks_are_redone(tiny: str, tmp_path: Path) -> None:
    spec = spec_from_dict(small_spec(tiny))
    out = tmp_path / "res"
    run_sweep(spec, out, workers=1, chunk_size=2)
    clean = (out / "results.csv").read_bytes()
    chunks = sorted((out / "chunks").glob("chunk-*.jsonl"))
    assert len(chunks) == 5
    data = chunks[1].read_bytes()
    chunks[1].write_bytes(data[: len(data) // 2])  # a partial write
    bad = chunks[3].read_bytes().replace(b"true", b"false", 1)  # a flipped value: checksum mismatch
    chunks[3].write_bytes(bad)
    (out / "chunks" / f".{chunks[4].name}.999.1.tmp").write_bytes(b"[1,2")  # a killed writer's temp file
    (out / "results.csv").unlink()
    res = run_sweep(spec, out, workers=1, resume=True)
    assert res.chunks_run == 2 and res.chunks_resumed == 3
    assert sorted(res.removed_files) == sorted([chunks[1].name, chunks[3].name, f".{chunks[4].name}.999.1.tmp"])
    assert (out / "results.csv").read_bytes() == clean
    # resuming into a folder of a different sweep is refused
    other = spec_from_dict(small_spec(tiny, sparsity=["dense"]))
    with pytest.raises(ConfigError, match="different sweep"):
        run_sweep(other, out, workers=1, resume=True)


def test_killed_sweep_resumes_with_no_lost_no_duplicated_rows(tmp_path: Path) -> None:
    spec_path = tmp_path / "kill.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "kill", "hardware": TPU, "workloads": [BERT], "set": {"batch": [1]}, "sparsity": ["dense", "2:4"],
        "grid": {"dram.bandwidth_gb_s": [100, 200, 300, 400, 500, 600, 700, 800],
                 "core.compute.rows": [32, 64, 128, 256, 512]}}))
    spec = load_spec(spec_path)
    out = tmp_path / "killed"
    # the run() path in one process: slow enough (~0.1 s a chunk) to be killed between chunk writes
    code = ("import sys; from accelsim.sweep import run_sweep; "
            "run_sweep(sys.argv[1], sys.argv[2], workers=1, chunk_size=1, lean=False)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(spec_path), str(out)], cwd=ROOT,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / "chunks").is_dir() and len(list((out / "chunks").glob("chunk-*.jsonl"))) >= 3:
                break
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    done_at_kill = len(list((out / "chunks").glob("chunk-*.jsonl")))
    assert 3 <= done_at_kill < len(spec.points), proc.stderr.read().decode()[-2000:]
    assert not (out / "results.csv").exists()
    res = run_sweep(spec, out, workers=2, resume=True)
    assert res.chunks_resumed == done_at_kill and res.chunks_run == len(spec.points) - done_at_kill
    table = load_results(out)
    keys = list(rows_by_key(list(table.columns), list(table.rows)))
    assert len(keys) == len(table.rows) == len(spec.points) * 2  # no duplicated rows
    assert set(keys) == {(p, "bert-base", 1, s) for p in range(len(spec.points)) for s in ("dense", "2:4")}
    run_sweep(spec, tmp_path / "clean", workers=1)
    assert load_results(tmp_path / "clean") == table  # no lost or changed rows


# -- plots ------------------------------------------------------------------------------------------

def test_sweep_plot_writes_pareto_heatmap_and_sparsity_map(tiny: str, tmp_path: Path) -> None:
    spec = spec_from_dict(small_spec(tiny, set={"batch": [4]}, cost="pes * 0.0005 + sram_bytes / 1048576 * 0.45"))
    run_sweep(spec, tmp_path / "res", workers=1)
    paths, notes = sweep_plot_command(tmp_path / "res")
    assert notes == ["heatmaps: core.sram.filter_bytes (y) by dram.bandwidth_gb_s (x) (choose with --x, --y, "
                     "--at KEY=VALUE)", "memory: none of the 17 rows checked exceeds dram.capacity_bytes"]
    names = sorted(p.name for p in paths)
    assert names == ["heatmap_tiny_batch4.png", "pareto_energy_tiny_batch4.png", "pareto_tiny_batch4.png",
                     "sparsity_pays_tiny_batch4.png"]
    for p in paths:
        assert p.parent == tmp_path / "res" / "plots" and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_shipped_specs_validate() -> None:
    for name in ("sram-vs-bandwidth", "decode-throughput"):
        spec = load_spec(ROOT / "sweeps" / f"{name}.yaml")
        assert spec.name == name and len(spec.points) * spec.rows_per_point <= 400


def test_spec_notes_name_promoted_patterns_and_undeclared_parameters(tiny: str) -> None:
    """A 1:4 column on a part that runs 1:4 as 2:4, and a workload without the swept `batch`, used to give rows
    that repeated the 2:4 rows and fewer settings with no word about either."""
    from accelsim.sweep.summary import spec_notes

    no_batch = dict(TINY, name="tiny-nobatch", params={"seq": 64})
    no_batch["layers"] = [{"name": "g", "op": "gemm", "m": 256, "n": "seq", "k": 256}]
    path = Path(tiny).with_name("nobatch.yaml")
    path.write_text(yaml.safe_dump(no_batch))
    spec = spec_from_dict({"name": "n", "hardware": str(ROOT / "hwconfigs/a100-like.yaml"),
                           "workloads": [tiny, str(path)], "set": {"batch": [1, 4]},
                           "sparsity": ["dense", "2:4", "1:4"]})
    notes = spec_notes(spec)
    assert notes[0] == ("workload tiny-nobatch declares no parameter 'batch': its rows leave that column empty "
                        "(1 setting per point and pattern, not 2)")
    assert notes[1].startswith("sparsity 1:4 runs as 2:4 on a100-like for every layer of tiny, tiny-nobatch that "
                               "asks for it")
    assert len(notes) == 2
    flex = spec_from_dict({"name": "f", "hardware": FLEX, "workloads": [tiny], "set": {"batch": [1]},
                           "sparsity": ["2:4", "1:4"]})
    assert spec_notes(flex) == []  # flexible N:M runs 1:4 as asked
