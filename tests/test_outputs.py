"""Writing outputs and command-level behaviour (issue #15: A3, A4, A6, B4, D2, D3, D5).

Outputs follow symlinks, never replace folders or special files, fail in one line (exit 2) on any
write error without leaving half a file or a temporary one, get the usual file mode, and take
their format from the extension. The CLI runs in-process.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelsim import fileio
from accelsim.cli import main
from accelsim.errors import OutputError

ROOT = Path(__file__).resolve().parents[1]
TPU = ROOT / "hwconfigs" / "tpu-like.yaml"
A100 = ROOT / "hwconfigs" / "a100-like.yaml"
GEMM = ROOT / "workloads" / "gemm-microbench.yaml"
CORPUS = Path(__file__).resolve().parent / "corpus"
SMALL = {"name": "small", "dtype": "fp16",
         "layers": [{"name": "g1", "op": "gemm", "m": 128, "n": 64, "k": 256},
                    {"name": "g2", "op": "gemm", "m": 64, "n": 32, "k": 128}]}


def cli(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def fails(capsys: pytest.CaptureFixture[str], *argv: Any, code: int = 2) -> str:
    """Run the CLI; check exit ``code``, one stderr line, no traceback, nothing on stdout; return the line."""
    rc, out, err = cli(capsys, *argv)
    line = err.rstrip("\n")
    assert rc == code, err
    assert line and "\n" not in line, f"expected one stderr line, got {err!r}"
    assert line.startswith("accelsim: error: "), line
    assert "Traceback" not in err and out == ""
    return line


def small_workload(tmp_path: Path, **extra: Any) -> Path:
    data = {**SMALL, **extra}
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_json(capsys: pytest.CaptureFixture[str], out: Any, *extra: Any) -> str:
    rc, _, err = cli(capsys, "run", "--hw", TPU, "--workload", GEMM, "--sparsity", "2:4", *extra, "-o", out)
    assert rc == 0, err
    return err


def no_temporaries(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")], list(folder.iterdir())


def failing_open(fail_on: str, exc: OSError) -> Any:
    """An ``open`` for accelsim.fileio whose files fail to write when the path or fd's name matches."""
    real = builtins.open

    class Full(io.RawIOBase):
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def write(self, data: Any) -> int:
            raise exc

        def writable(self) -> bool:
            return True

        def close(self) -> None:
            self.fh.close()
            super().close()

    def fake(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        name = os.readlink(f"/proc/self/fd/{file}") if isinstance(file, int) else str(file)
        fh = real(file, mode, *args, **kwargs)
        if "w" in mode and fail_on in name:
            return Full(fh)
        return fh

    return fake


# -- B4: what -o may replace -----------------------------------------------------------------------

def test_output_symlink_is_written_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "real" / "result.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "result.json"
    link.symlink_to(target)
    run_json(capsys, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["schema_version"] >= 1
    no_temporaries(tmp_path)
    no_temporaries(target.parent)


def test_output_fifo_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", fifo)
    assert f"{fifo}: cannot write: is a FIFO" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_link_to_a_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # as root, -o /dev/full replaced the device; a link to /dev/null is checked without touching it
    link = tmp_path / "null.json"
    link.symlink_to("/dev/null")
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", link)
    assert f"{link}: cannot write: is a character device" in line
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", tmp_path)
    assert f"{tmp_path}: cannot write: is a directory" in line
    line = fails(capsys, "trace", "--hw", TPU, "--workload", GEMM, "-o", tmp_path)
    assert "is a directory" in line


def test_output_name_too_long(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", tmp_path / ("x" * 300 + ".json"))
    assert "cannot write: File name too long" in line


def test_output_longest_name_still_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the temporary name must not overflow NAME_MAX when the target's own name is near it
    out = tmp_path / ("a" * 245 + ".json")
    run_json(capsys, out)
    assert json.loads(out.read_text())["schema_version"] >= 1
    no_temporaries(tmp_path)


def test_output_parent_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x")
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", tmp_path / "f" / "r.json")
    assert f"{tmp_path / 'f' / 'r.json'}: cannot write: " in line


def test_output_missing_folders_are_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a" / "b" / "r.csv"
    run_json(capsys, out)
    assert out.read_text().startswith("name,op,")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_write_failure_is_one_line_and_keeps_the_old_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    out = tmp_path / "r.json"
    out.write_text("previous")
    monkeypatch.setattr(fileio, "open", failing_open("r.json", OSError(code, os.strerror(code))), raising=False)
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", out)
    assert line == f"accelsim: error: {out}: cannot write: {os.strerror(code)}"
    assert out.read_text() == "previous"
    no_temporaries(tmp_path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "-o", ro / "r.json")
    finally:
        ro.chmod(0o700)
    assert "cannot write: Permission denied" in line


def test_trace_write_failure_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fileio, "open", failing_open("t.json", OSError(errno.ENOSPC, "No space left on device")),
                        raising=False)
    line = fails(capsys, "trace", "--hw", TPU, "--workload", GEMM, "--layer", "g256", "-o", tmp_path / "t.json")
    assert line.endswith("t.json: cannot write: No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_stray_oserror_is_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import accelsim.cli.run as run_cmd  # the module whose parser dispatches to cmd_run

    def boom(args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "somewhere.json")

    monkeypatch.setattr(run_cmd, "cmd_run", boom)
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM)
    assert line == "accelsim: error: somewhere.json: No space left on device"


# -- B4: several files, all or nothing --------------------------------------------------------------

def test_write_all_writes_every_file(tmp_path: Path) -> None:
    paths = fileio.write_all({tmp_path / "a.txt": "A", tmp_path / "sub" / "b.bin": b"B"})
    assert paths == [tmp_path / "a.txt", tmp_path / "sub" / "b.bin"]
    assert (tmp_path / "a.txt").read_text() == "A" and (tmp_path / "sub" / "b.bin").read_bytes() == b"B"


def test_write_all_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("old")
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="is a directory"):  # checked before anything is written
        fileio.write_all({tmp_path / "a.txt": "new", tmp_path / "d": "x"})
    monkeypatch.setattr(fileio, "open", failing_open("c.txt", OSError(errno.ENOSPC, "No space left on device")),
                        raising=False)
    with pytest.raises(OutputError, match=r"c\.txt: cannot write: No space left on device"):
        fileio.write_all({tmp_path / n: "new" for n in ("a.txt", "b.txt", "c.txt")})
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["old", "old"]
    assert not (tmp_path / "c.txt").exists()
    no_temporaries(tmp_path)


def test_reality_check_outputs_all_or_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    wl = small_workload(tmp_path)
    out = tmp_path / "rc"
    monkeypatch.setattr(fileio, "open", failing_open("reality_check.json", OSError(errno.ENOSPC, "disk full")),
                        raising=False)
    rc, _, err = cli(capsys, "reality-check", "--hw", TPU, "--workload", wl, "--sparsity", "2:4", "-o", out)
    assert rc == 2 and err.strip().endswith("reality_check.json: cannot write: disk full"), err
    assert not out.exists() or list(out.iterdir()) == []


def test_reality_check_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wl = small_workload(tmp_path)
    (tmp_path / "rc").write_text("x")
    line = fails(capsys, "reality-check", "--hw", TPU, "--workload", wl, "--sparsity", "2:4", "-o", tmp_path / "rc")
    assert "rc: cannot write: exists and is not a folder" in line


# -- D2: file mode ------------------------------------------------------------------------------------

def test_outputs_get_the_usual_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = os.umask(0o022)
    try:
        rc, _, err = cli(capsys, "trace", "--hw", TPU, "--workload", GEMM, "--layer", "g256", "-o", tmp_path / "t.json")
        assert rc == 0, err
        run_json(capsys, tmp_path / "r.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "t.json").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o644


# -- A6: the format follows the extension ----------------------------------------------------------------

def test_run_format_from_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_json(capsys, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["schema_version"] >= 1
    run_json(capsys, tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text().startswith("name,op,m,n,k,")
    run_json(capsys, tmp_path / "r.txt")
    assert (tmp_path / "r.txt").read_text().startswith("gemm-microbench on tpu-like")


def test_run_format_contradicting_extension_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--format", "table", "-o", tmp_path / "x.json")
    assert "x.json: the extension says json but --format is table" in line
    assert not (tmp_path / "x.json").exists()


def test_functional_check_format_from_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "functional-check", "--m", 32, "--n", 8, "--k", 64, "--pattern", "2:4",
                     "-o", tmp_path / "f.json")
    assert rc == 0, err
    assert json.loads((tmp_path / "f.json").read_text())["passed"] is True
    line = fails(capsys, "functional-check", "--m", 32, "--n", 8, "--k", 64, "--pattern", "2:4",
                 "-o", tmp_path / "f.csv")
    assert "functional-check writes table or json, not csv" in line


# -- A3: a check that ran dense is not a pass ---------------------------------------------------------------

def test_functional_check_not_exercised(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "functional-check", "--m", 300, "--n", 17, "--k", 1001, "--pattern", "2:4",
                       "--hw", A100, "--format", "json")
    assert rc == 1
    res = json.loads(out)
    assert res["exercised"] is False and res["metadata_bytes"] == 0
    assert "shape_below_minimum" in res["not_exercised"] and "--m 304 --k 1008" in res["not_exercised"]
    assert err.startswith("accelsim: functional-check NOT EXERCISED: 2:4 ran dense because shape_below_minimum")


def test_functional_check_readme_example_exercises_nm(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "functional-check", "--m", 304, "--n", 17, "--k", 1008, "--pattern", "2:4",
                       "--hw", A100, "--format", "json")
    assert rc == 0, err
    res = json.loads(out)
    assert res["exercised"] and res["passed"] and res["pattern_executed"] == "2:4"
    assert res["metadata_bytes"] > 0 and res["reason"] == "n_padded"


def test_functional_check_tf32_uses_its_own_rate(capsys: pytest.CaptureFixture[str]) -> None:
    # tf32 was looked up as fp32 in the CTA tiling ("no fp32 rate" on a100-like)
    rc, out, err = cli(capsys, "functional-check", "--m", 304, "--n", 17, "--k", 1008, "--pattern", "2:4",
                       "--hw", A100, "--dtype", "tf32", "--format", "json")
    assert rc == 1 and "dtype_unsupported" in err
    assert json.loads(out)["passed"] is True


# -- A4: one --sparsity default: the workload's plan ---------------------------------------------------------

def test_trace_and_plot_timeline_show_the_same_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from accelsim.report import plots

    wl = small_workload(tmp_path, sparsity="1:4")
    rc, _, err = cli(capsys, "trace", "--hw", TPU, "--workload", wl, "-o", tmp_path / "t.json")
    assert rc == 0, err
    trace = json.loads((tmp_path / "t.json").read_text())
    traced = {e["name"]: e["args"]["pattern_requested"] for e in trace["traceEvents"]
              if e.get("cat", "").startswith("layer,")}
    seen: dict[str, Any] = {}

    def capture(result: Any, hw: Any, layer: str | None = None) -> Any:
        seen["result"] = result
        return real(result, hw, layer=layer)

    real = plots.plot_timeline
    monkeypatch.setattr(plots, "plot_timeline", capture)
    rc, _, err = cli(capsys, "plot", "timeline", "--hw", TPU, "--workload", wl, "-o", tmp_path / "p")
    assert rc == 0, err
    plotted = {lay.name: lay.pattern_requested for lay in seen["result"].layers}
    assert plotted == traced == {"g1": "1:4", "g2": "1:4"}
    assert trace["otherData"]["sparsity"] == "1:4"


@pytest.mark.parametrize("command", [["report"], ["reality-check"], ["plot", "roofline"]], ids=lambda c: c[-1])
def test_no_plan_no_sparsity_asks_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          command: list[str]) -> None:
    # these defaulted to 2:4 while run / trace / serve used the plan; now all use the plan, and
    # a comparison with dense needs a pattern from somewhere
    line = fails(capsys, *command, "--hw", TPU, "--workload", GEMM, "-o", tmp_path / "out")
    assert "needs a pattern" in line or "pass --sparsity N:M" in line
    assert list(tmp_path.iterdir()) == []


def test_reality_check_uses_a_per_layer_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(json.dumps(SMALL))
    data["layers"][0]["sparsity"] = "2:4"  # a plan on one layer only, none model-wide
    wl = tmp_path / "per-layer.yaml"
    wl.write_text(yaml.safe_dump(data, sort_keys=False))
    rc, out, err = cli(capsys, "reality-check", "--hw", TPU, "--workload", wl, "-o", tmp_path / "rc")
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "rc").iterdir()) == ["reality_check.json", "reality_check.png",
                                                                    "reality_check.svg"]


# -- D3: validate and schema know every file kind ---------------------------------------------------------------

@pytest.mark.parametrize("spec", sorted(p.name for p in (ROOT / "sweeps").glob("*.yaml")))
def test_validate_sweep_spec(spec: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    rc, out, err = cli(capsys, "validate", f"sweeps/{spec}")
    assert rc == 0, err
    assert out.startswith(f"sweeps/{spec}: ok (sweep ")


def test_validate_bad_sweep_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"name": "s", "hardware": str(TPU), "workloads": [str(GEMM)],
                                    "grid": {"dram.bandwidth_gb_s": []}}))
    line = fails(capsys, "validate", spec)
    assert f"{spec}: grid.dram.bandwidth_gb_s: expected a non-empty list" in line


def test_validate_runtime_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "rt.yaml"
    good.write_text("max_batch: 4\nvariability: {jitter: {enabled: true, sigma: 0.1}}\n")
    rc, out, err = cli(capsys, "validate", good)
    assert rc == 0 and out == f"{good}: ok (runtime config)\n", err
    line = fails(capsys, "validate", CORPUS / "output-runtime-bad.yaml")
    assert "output-runtime-bad.yaml: variability.jitter.sigma: " in line


def test_validate_unknown_kind(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "validate", CORPUS / "output-unknown-kind.yaml")
    assert "not a file accelsim knows" in line and "top-level keys: clock, batch" in line


def test_schema_sweep_and_runtime(capsys: pytest.CaptureFixture[str]) -> None:
    from accelsim.serving.config import RuntimeConfig
    from accelsim.sweep import SPEC_KEYS

    rc, out, _ = cli(capsys, "schema", "sweep")
    assert rc == 0 and sorted(json.loads(out)["properties"]) == sorted(SPEC_KEYS)
    rc, out, _ = cli(capsys, "schema", "runtime")
    assert rc == 0 and sorted(json.loads(out)["properties"]) == sorted(RuntimeConfig.model_fields)


# -- D5: run --dtype ----------------------------------------------------------------------------------------------

def test_run_dtype_overrides_the_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wl = CORPUS / "output-fp32-gemm.yaml"
    line = fails(capsys, "run", "--hw", A100, "--workload", wl)
    assert "core.compute.macs_per_cycle: no fp32 rate" in line
    rc, _, err = cli(capsys, "run", "--hw", A100, "--workload", wl, "--dtype", "fp16", "-o", tmp_path / "r.json")
    assert rc == 0, err
    body = json.loads((tmp_path / "r.json").read_text())
    assert body["workload"]["dtype"] == "fp16" and body["workload"]["dtype_declared"] == "fp32"
    rc, out, err = cli(capsys, "run", "--hw", A100, "--workload", wl, "--dtype", "fp16")
    assert rc == 0 and "dtype: fp16 (--dtype; the workload says fp32)" in out.splitlines()[0]


def test_validate_checks_every_file_and_fails_if_any_is_bad(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A bad file does not hide the verdict on the files after it (it used to stop at the first)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nclock_ghz: -1\n")
    rc, out, err = cli(capsys, "validate", str(bad), str(ROOT / "hwconfigs/tpu-like.yaml"), str(tmp_path / "no.yaml"),
                       str(ROOT / "workloads/resnet18.yaml"))
    assert rc == 2
    assert out.splitlines() == ["hwconfigs/tpu-like.yaml: ok (hardware 'tpu-like')".replace(
        "hwconfigs/", f"{ROOT}/hwconfigs/"), f"{ROOT}/workloads/resnet18.yaml: ok (workload 'resnet18', 21 layers)"]
    lines = err.strip().splitlines()
    assert f"{bad}: clock_ghz: too small, got -1; the least accepted is 0.001" in lines[0]
    assert any("no.yaml: file not found" in line for line in lines)
    assert lines[-1] == "accelsim: error: 2 of 4 files have problems" and len(lines) <= 11
