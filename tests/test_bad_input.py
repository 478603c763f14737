"""Bad input fails cleanly: one line on stderr naming the file and the key, exit code 2, no traceback.

Each case starts from a shipped config (hwconfigs/tpu-like.yaml, workloads/gemm-microbench.yaml),
breaks one thing, writes it to tmp_path and runs the CLI in-process.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from accelsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = ROOT / "hwconfigs" / "tpu-like.yaml"
H100 = ROOT / "hwconfigs" / "h100-like.yaml"
GEMM = ROOT / "workloads" / "gemm-microbench.yaml"
RESNET = ROOT / "workloads" / "resnet18.yaml"

Mutate = Callable[[dict[str, Any]], Any]


def fails(capsys: pytest.CaptureFixture[str], *argv: Any) -> str:
    """Run the CLI, check the clean-failure contract and return the one stderr line."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    line = err.rstrip("\n")
    assert rc == 2, err
    assert line and "\n" not in line, f"expected one stderr line, got {err!r}"
    assert line.startswith("accelsim: error: "), line
    assert "Traceback" not in err
    assert out == ""
    return line


def assert_names(line: str, *parts: str) -> None:
    for part in parts:
        assert part in line, f"{part!r} not in {line!r}"
    for leak in ("Value error", "Input should", "constrained-", "literal[", "function-", "pydantic"):
        assert leak not in line, f"pydantic internals ({leak!r}) in {line!r}"


def _write(tmp_path: Path, source: Path, mutate: Mutate, name: str) -> Path:
    data = yaml.safe_load(source.read_text())
    mutate(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def bad_hw(tmp_path: Path) -> Callable[[Mutate], Path]:
    """tpu-like.yaml with one change, written to tmp_path/hw.yaml."""
    return lambda mutate: _write(tmp_path, TPU, mutate, "hw.yaml")


@pytest.fixture
def bad_wl(tmp_path: Path) -> Callable[[Mutate], Path]:
    """gemm-microbench.yaml with one change, written to tmp_path/wl.yaml."""
    return lambda mutate: _write(tmp_path, GEMM, mutate, "wl.yaml")


# -- malformed files -----------------------------------------------------------


def test_malformed_yaml(capsys, tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\ncore:\n  compute: [1, 2\n")
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "line ", "malformed YAML")


def test_missing_file(capsys, tmp_path):
    path = tmp_path / "nope.yaml"
    assert_names(fails(capsys, "validate", path), str(path), "file not found")


@pytest.mark.parametrize("which", ["--hw", "--workload"])
def test_missing_file_in_run(capsys, tmp_path, which):
    path = tmp_path / "nope.yaml"
    argv = {"--hw": TPU, "--workload": GEMM, which: path}
    line = fails(capsys, "run", "--hw", argv["--hw"], "--workload", argv["--workload"])
    assert_names(line, str(path), "file not found")


@pytest.mark.parametrize("text, problem", [("", "file is empty"), ("- 1\n- 2\n", "top level must be a mapping")])
def test_not_a_mapping(capsys, tmp_path, text, problem):
    path = tmp_path / "odd.yaml"
    path.write_text(text)
    assert_names(fails(capsys, "validate", path), str(path), problem)


def test_directory_instead_of_file(capsys, tmp_path):
    assert_names(fails(capsys, "validate", tmp_path), str(tmp_path), "is a directory")


def test_hardware_and_workload_swapped(capsys):
    line = fails(capsys, "run", "--hw", GEMM, "--workload", TPU)
    assert_names(line, str(GEMM), "workload file", "expected a hardware config")


# -- object-constructing YAML tags -----------------------------------------------

TAG = "!!python/object/apply:os.system"


def _tagged(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "pwned"
    text = TPU.read_text().replace("name: tpu-like", f'name: {TAG} ["touch {marker}"]')
    path = tmp_path / "evil.yaml"
    path.write_text(text)
    return path, marker


def test_object_constructing_tag_refused(capsys, tmp_path):
    path, marker = _tagged(tmp_path)
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "python/object/apply:os.system", "not allowed", "line 3")
    assert not marker.exists()


def test_object_constructing_tag_refused_in_a_real_process(tmp_path):
    path, marker = _tagged(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "accelsim.cli", "run", "--hw", str(path), "--workload", str(GEMM)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    line = proc.stderr.rstrip("\n")
    assert line.startswith("accelsim: error: ") and "\n" not in line, proc.stderr
    assert "Traceback" not in proc.stderr
    assert_names(line, str(path), "python/object/apply:os.system", "not allowed")
    assert not marker.exists()


# -- unknown keys ----------------------------------------------------------------


def test_unknown_key_suggests_close_match(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["compute"].update(rowz=128))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "core.compute.rowz", "unknown key", "did you mean 'rows'?")


def test_unknown_top_level_key_suggests_close_match(capsys, bad_hw):
    path = bad_hw(lambda d: d.update(clock_gz=1.0))
    assert_names(fails(capsys, "validate", path), str(path), "clock_gz", "did you mean 'clock_ghz'?")


def test_unknown_layer_key_names_the_layer(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][0].update(kk=3))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[0](g1024).kk", "did you mean 'k'?")


def test_unknown_key_without_close_match_lists_allowed(capsys, bad_hw):
    path = bad_hw(lambda d: d["dram"].update(vendor="acme"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "dram.vendor", "unknown key", "allowed: bandwidth_gb_s")
    assert "did you mean" not in line


# -- wrong types -------------------------------------------------------------------


def test_wrong_type_int(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["compute"].update(rows="big"))
    assert_names(fails(capsys, "validate", path), str(path), "core.compute.rows", "integer", "'big'")


def test_wrong_type_number_or_unlimited(capsys, bad_hw):
    path = bad_hw(lambda d: d["dram"].update(bandwidth_gb_s="fast"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "dram.bandwidth_gb_s: expected a number of at least 0.001 (smaller rates make "
                                  "cycle counts overflow) or 'unlimited', got 'fast'")
    assert "more problem" not in line


def test_wrong_type_mapping(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"].update(sram=65536))
    assert_names(fails(capsys, "validate", path), str(path), "core.sram", "expected a mapping", "65536")


def test_wrong_type_in_layer(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][2].update(k="4k"))
    assert_names(fails(capsys, "validate", path), str(path), "layers[2](g128x4096x4096).k", "integer", "'4k'")


def test_missing_required_key(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][0].pop("m"))
    assert_names(fails(capsys, "validate", path), str(path), "layers[0](g1024).m", "required key is missing")


def test_unknown_compute_kind(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["compute"].update(kind="gpu"))
    assert_names(fails(capsys, "validate", path), str(path), "core.compute.kind: ", "'gpu'", "'systolic'")


def test_missing_discriminator_key(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["compute"].pop("kind"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "core.compute.kind", "required key is missing", "'systolic'")


# -- zero / negative sizes ---------------------------------------------------------


@pytest.mark.parametrize("mutate, key, value, expect", [
    (lambda d: d["core"]["compute"].update(rows=0), "core.compute.rows", "0", "greater than 0"),
    (lambda d: d["core"]["compute"].update(cols=-8), "core.compute.cols", "-8", "greater than 0"),
    (lambda d: d["core"]["sram"].update(ifmap_bytes=0), "core.sram.ifmap_bytes", "0", "greater than 0"),
    (lambda d: d.update(clock_ghz=-1.0), "clock_ghz", "-1.0", "the least accepted is 0.001"),
    (lambda d: d["dram"].update(bandwidth_gb_s=0), "dram.bandwidth_gb_s", "0", "at least 0.001"),
], ids=["rows=0", "cols=-8", "ifmap_bytes=0", "clock=-1", "bandwidth=0"])
def test_hardware_size_not_positive(capsys, bad_hw, mutate, key, value, expect):
    path = bad_hw(mutate)
    assert_names(fails(capsys, "validate", path), str(path), f"{key}: ", expect, f"got {value}")


@pytest.mark.parametrize("mutate, key, value", [
    (lambda d: d.update(clock_ghz=5.0e-324), "clock_ghz", "5e-324"),
    (lambda d: d.update(clock_ghz=1.0e-300), "clock_ghz", "1e-300"),
    (lambda d: d["dram"].update(bandwidth_gb_s=1.0e-300), "dram.bandwidth_gb_s", "1e-300"),
    (lambda d: d["core"]["sram"].update(bandwidth_bytes_per_cycle=1.0e-9), "core.sram.bandwidth_bytes_per_cycle",
     "1e-09"),
], ids=["clock=denormal", "clock=1e-300", "dram=1e-300", "sram=1e-9"])
def test_hardware_rate_too_small(capsys, bad_hw, mutate, key, value):
    """Clocks and rates divide: a tiny one used to run to 'latency inf us' / 'avg power nan W' (rc 0)."""
    path = bad_hw(mutate)
    assert_names(fails(capsys, "validate", path), str(path), f"{key}: ", "0.001", f"got {value}", "overflow")


@pytest.mark.parametrize("setting, key", [
    ("clock_ghz=5.0e-324", "clock_ghz"),
    ("core.compute.macs_per_cycle.fp16=1.0e-300", "core.compute.macs_per_cycle.fp16"),
])
def test_hw_set_rate_too_small(capsys, recwarn, setting, key):
    """Through --hw-set too: refused at load, before the engine (which warned of numpy overflows, then blamed
    the shape with a 300-digit cycle count)."""
    line = fails(capsys, "run", "--hw", ROOT / "hwconfigs" / "a100-like.yaml", "--workload", GEMM, "--hw-set", setting)
    assert_names(line, f"{key}: too small", "the least accepted is 0.001", f"from --hw-set {setting}")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_hardware_clock_too_large(capsys, bad_hw):
    path = bad_hw(lambda d: d.update(clock_ghz=1.0e+6))
    assert_names(fails(capsys, "validate", path), str(path), "clock_ghz: too large", "the limit is 1000 (1 THz")


@pytest.mark.parametrize("dim, value", [("m", 0), ("n", -4), ("k", 0)])
def test_layer_size_not_positive(capsys, bad_wl, dim, value):
    path = bad_wl(lambda d: d["layers"][0].update({dim: value}))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), f"layers[0](g1024).{dim}: ", "greater than 0", f"got {value}")


def test_conv_stride_zero(capsys, tmp_path):
    path = _write(tmp_path, RESNET, lambda d: d["layers"][1].update(stride=0), "wl.yaml")
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[1](layer1.0.conv1).stride", "integer > 0", "got 0")


def test_conv_kernel_larger_than_ifmap(capsys, tmp_path):
    path = _write(tmp_path, RESNET, lambda d: d["layers"][0].update(ifmap=[4, 4], padding=0), "wl.yaml")
    assert_names(fails(capsys, "validate", path), str(path), "layers[0](conv1).kernel", "does not fit")


# -- N:M patterns --------------------------------------------------------------------


def test_pattern_n_greater_than_m(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][1].update(sparsity="8:4"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[1](g4096x128x4096).sparsity", "'8:4'", "N must not exceed M")


def test_pattern_5_4(capsys, bad_wl):
    path = bad_wl(lambda d: d.update(sparsity="5:4"))
    assert_names(fails(capsys, "validate", path), str(path), "sparsity: ", "'5:4'", "N must not exceed M")


def test_pattern_with_slash(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][3].update(sparsity="2/4"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[3](g768x512x3072).sparsity", "'2/4'", '"2:4"')


def test_hardware_pattern_n_greater_than_m(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["sparse"].update(patterns={"5:4": {}}))
    assert_names(fails(capsys, "validate", path), str(path), "core.sparse.patterns", "'5:4'", "N must not exceed M")


def test_unquoted_pattern_read_as_base60(capsys, tmp_path):
    path = tmp_path / "wl.yaml"
    path.write_text(GEMM.read_text().replace("dtype: fp16", "dtype: fp16\nsparsity: 2:4"))
    assert yaml.safe_load(path.read_text())["sparsity"] == 124  # what PyYAML makes of it
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "sparsity: ", "124", "base-60", 'quote the pattern: "2:4"')


def test_unquoted_pattern_key_in_hardware(capsys, tmp_path):
    path = tmp_path / "hw.yaml"
    path.write_text(TPU.read_text().replace('"2:4":', "2:4:"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "core.sparse.patterns", "124", '"2:4"')


@pytest.mark.parametrize("pattern, problem", [("2/4", "'2/4'"), ("5:4", "N must not exceed M")])
def test_cli_sparsity_bad(capsys, pattern, problem):
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--sparsity", pattern)
    assert_names(line, "--sparsity", problem)


# -- unknown op ------------------------------------------------------------------------


def test_unknown_op(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][0].update(op="attention"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[0](g1024).op: ", "unknown op 'attention'", "'gemm'", "'conv2d'")
    assert ".gemm" not in line  # no discriminator tag in the key path


def test_missing_op(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][4].pop("op"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[4](decode-1tok).op", "required key is missing", "'gemm'")


# -- checks across keys ----------------------------------------------------------------


def test_duplicate_layer_name(capsys, bad_wl):
    path = bad_wl(lambda d: d["layers"][5].update(name="g1024"))
    line = fails(capsys, "validate", path)
    assert_names(line, str(path), "layers[5](g1024).name", "already used by layers[0]")


def test_sram_layout_both(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["sram"].update(bytes=65536))
    assert_names(fails(capsys, "validate", path), str(path), "core.sram: ", "not both")


def test_systolic_cores(capsys, bad_hw):
    path = bad_hw(lambda d: d.update(cores=2))
    assert_names(fails(capsys, "validate", path), str(path), "cores: ", "must be 1", "got 2")


# -- SRAM too small for the smallest tile -------------------------------------------------


@pytest.mark.parametrize("buffer", ["filter_bytes", "ifmap_bytes"])
def test_sram_too_small(capsys, bad_hw, buffer):
    path = bad_hw(lambda d: d["core"]["sram"].update({buffer: 64}))
    line = fails(capsys, "run", "--hw", path, "--workload", GEMM)
    assert_names(line, str(path), f"core.sram.{buffer}: ", "SRAM too small", "layer 'g1024'", "needs")


def test_sram_too_small_leaves_no_output_file(capsys, bad_hw, tmp_path):
    path = bad_hw(lambda d: d["core"]["sram"].update(filter_bytes=64, ifmap_bytes=64))
    out = tmp_path / "out.json"
    line = fails(capsys, "run", "--hw", path, "--workload", GEMM, "--format", "json", "-o", out)
    assert_names(line, str(path), "core.sram.", "SRAM too small", "'g1024'")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hw.yaml"]  # no temp file left either


@pytest.mark.parametrize("extra", [["--sparsity", "2/4"], ["--hw-set", "core.compute.rows=0"]],
                         ids=["sparsity", "hw-set"])
def test_failed_run_writes_no_output(capsys, tmp_path, extra):
    out = tmp_path / "sub" / "out.csv"
    fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--format", "csv", "-o", out, *extra)
    assert not out.exists()


# -- --hw-set ------------------------------------------------------------------------------


def test_hw_set_unknown_key(capsys):
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", "core.compute.rowz=64")
    assert_names(line, str(TPU), "core.compute.rowz", "did you mean 'rows'?", "--hw-set core.compute.rowz=64")


@pytest.mark.parametrize("item, key, problem", [
    ("core.compute.rows=-4", "core.compute.rows", "greater than 0"),
    ("dram.bandwidth_gb_s=fast", "dram.bandwidth_gb_s", "'unlimited'"),
    ("core.compute.dataflow=diagonal", "core.compute.dataflow", "'diagonal'"),
], ids=["negative", "not-a-number", "bad-choice"])
def test_hw_set_bad_value(capsys, item, key, problem):
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", item)
    assert_names(line, str(TPU), f"{key}: ", problem, f"--hw-set {item}")


def test_hw_set_bad_list_item_names_the_override(capsys):
    """A check on one item of a set list (its key ends in ``[i]``) still names the --hw-set that set it."""
    item = "core.compute.cta_tiles.sparse=[[128, 128, 128], [100, 128, 64]]"
    line = fails(capsys, "run", "--hw", H100, "--workload", GEMM, "--hw-set", item)
    assert_names(line, str(H100), "core.compute.cta_tiles.sparse[1]: ", "not a multiple of the sparse MMA tile",
                 f"--hw-set {item}")


@pytest.mark.parametrize("item, key, problem", [
    ("core.compute.rows", "core.compute.rows", "dotted.path=VALUE"),
    ("core.compute.rows.x=4", "core.compute.rows", "is a value"),
    ("core.compute.rows=[1", "core.compute.rows", "not plain YAML"),
    (f"name={TAG} [ls]", "name", "not plain YAML"),
], ids=["no-equals", "below-a-value", "bad-yaml", "yaml-tag"])
def test_hw_set_malformed(capsys, item, key, problem):
    line = fails(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", item)
    assert_names(line, str(TPU), f"{key}: ", problem)


# -- validate ---------------------------------------------------------------------------------


def test_validate_shipped_configs(capsys):
    files = sorted((ROOT / "hwconfigs").glob("*.yaml")) + sorted((ROOT / "workloads").glob("*.yaml"))
    assert main(["validate", *map(str, files)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count(": ok (") == len(files)


def test_validate_stops_at_bad_file(capsys, bad_hw):
    path = bad_hw(lambda d: d["core"]["compute"].update(rows=0))
    assert main(["validate", str(GEMM), str(path)]) == 2
    out, err = capsys.readouterr()
    assert f"{GEMM}: ok" in out
    line = err.rstrip("\n")
    assert "\n" not in line and "Traceback" not in err
    assert_names(line, str(path), "core.compute.rows")


@pytest.mark.parametrize("command, name, extra", [
    ("serve", "serve.json", ["--rate", "100", "--duration", "2"]),
    ("patterns", "patterns.json", []),
], ids=["serve", "patterns"])
def test_a_folder_command_never_replaces_its_own_input(capsys, tmp_path, command, name, extra):
    """An input that sits in the -o folder under an output's name is refused, as run -o refuses it."""
    src = tmp_path / name
    src.write_text((ROOT / "workloads" / "gemm-microbench.yaml").read_text())
    before = src.read_bytes()
    line = fails(capsys, command, "--hw", TPU, "--workload", src, "-o", tmp_path, *extra)
    assert f"{src}: cannot write: it is this command's input" in line
    assert src.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("command, name, extra, target", [
    ("serve", "latency_cdf.png", ["--rate", "100", "--duration", "2"], "accelsim.cli.serve.serve"),
    ("report", "report.md", ["--sparsity", "2:4"], "accelsim.cli.analysis.build_report"),
], ids=["serve", "report"])
def test_an_input_in_the_way_is_refused_before_any_simulation(capsys, tmp_path, monkeypatch, command, name, extra,
                                                             target):
    """serve and report ran the whole simulation and only then refused to replace their own input."""
    def must_not_run(*args, **kwargs):
        raise AssertionError(f"{command} simulated before refusing the output")

    monkeypatch.setattr(target, must_not_run)
    src = tmp_path / name
    src.write_text((ROOT / "workloads" / "gemm-microbench.yaml").read_text())
    line = fails(capsys, command, "--hw", TPU, "--workload", src, "-o", tmp_path, *extra)
    assert f"{src}: cannot write: it is this command's input" in line


def test_write_all_refuses_a_protected_input_and_writes_nothing(tmp_path) -> None:
    from accelsim.errors import OutputError
    from accelsim.fileio import inputs_protected, write_all

    kept = tmp_path / "b.json"
    kept.write_text("input")
    with inputs_protected([kept]), pytest.raises(OutputError, match="this command's input"):
        write_all({tmp_path / "a.json": "x", kept: "y"})
    assert kept.read_text() == "input" and not (tmp_path / "a.json").exists()
    write_all({tmp_path / "a.json": "x", kept: "y"})  # outside a command nothing is protected
    assert kept.read_text() == "y"
