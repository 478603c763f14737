"""Hostile configs end cleanly (issue #15, config part): exit 2, one line per problem naming file and key.

Covers non-finite numbers (A7), several problems at once (A9), sizes beyond 2^31-1 (B2), alias bombs,
runaway expressions, deep nesting and non-regular / oversized files (B3), control characters in
names and keys (B7) and YAML 1.1 quirks: base-60 / octal numbers, duplicate keys, non-ASCII digits (B9).
The inputs that are files live in tests/corpus/ (indexed in tests/corpus/index-config.yaml).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accelsim.cli import main
from accelsim.config import schema as configio
from accelsim.config import templating
from accelsim.errors import AccelsimError, ConfigError
from accelsim.results import dumps_finite
from accelsim.textsafe import printable, short_repr

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
TPU = ROOT / "hwconfigs" / "tpu-like.yaml"
GEMM = ROOT / "workloads" / "gemm-microbench.yaml"
PREFIX = "accelsim: error: "


def error_lines(capsys: pytest.CaptureFixture[str], *argv: object) -> list[str]:
    """Run the CLI in-process; check exit 2, nothing on stdout, no traceback; return the stderr lines."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.rstrip("\n").split("\n")
    assert all(line.startswith(PREFIX) for line in lines), err
    assert "\x1b" not in err
    return lines


def one_line(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    lines = error_lines(capsys, *argv)
    assert len(lines) == 1, lines
    return lines[0]


def has(line: str, *parts: str) -> None:
    for part in parts:
        assert part in line, f"{part!r} not in {line!r}"


def run_process(*argv: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process (for inputs that used to hang or exhaust memory)."""
    return subprocess.run([sys.executable, "-m", "accelsim.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


# -- A7: non-finite numbers -------------------------------------------------------------------------


@pytest.mark.parametrize("item, key, problem", [
    ("energy.mac_pj.fp16=.inf", "energy.mac_pj.fp16", "must be a finite number, got inf"),
    ("clock_ghz=.inf", "clock_ghz", "must be a finite number, got inf"),
    ("clock_ghz=.nan", "clock_ghz", "must be a finite number, got nan"),
    ("dram.bandwidth_gb_s=.inf", "dram.bandwidth_gb_s", "'unlimited', got inf"),
    ("energy.mac_pj.fp16=1.0e+300", "energy.mac_pj.fp16", "too large"),
], ids=["energy-inf", "clock-inf", "clock-nan", "bandwidth-inf", "energy-1e300"])
def test_hw_set_non_finite_refused(capsys, item, key, problem):
    line = one_line(capsys, "run", "--hw", TPU, "--workload", GEMM, "--format", "json", "--hw-set", item)
    has(line, str(TPU), f"{key}: ", problem, f"--hw-set {item}")


def test_infinite_bandwidth_in_file_refused(capsys):
    path = CORPUS / "inf-bandwidth.yaml"
    has(one_line(capsys, "validate", path), str(path), "dram.bandwidth_gb_s: ", "got inf")


def test_non_finite_template_parameter_refused(capsys):
    path = CORPUS / "nan-param.yaml"
    has(one_line(capsys, "validate", path), str(path), "params.scale: ", "finite", "nan")
    line = one_line(capsys, "run", "--hw", TPU, "--workload", CORPUS / "template-derived-huge.yaml",
                    "--set", "batch=.inf")
    has(line, "batch: ", "finite", "inf")


def test_json_writer_refuses_non_finite():
    with pytest.raises(AccelsimError, match=r"layers\[1\]\.cycles is nan"):
        dumps_finite({"layers": [{"cycles": 1.0}, {"cycles": float("nan")}]}, "run result")
    assert dumps_finite({"a": [1.5]}, "x") == '{"a": [1.5]}'


# -- A9: every problem, one line each ------------------------------------------------------------------


def test_typo_beside_missing_key_both_reported(capsys):
    path = CORPUS / "typo-and-missing.yaml"
    lines = error_lines(capsys, "validate", path)
    assert len(lines) == 2, lines
    has(lines[0], str(path), "dram.bandwidth: unknown key (did you mean 'bandwidth_gb_s'?)")
    has(lines[1], str(path), "dram.bandwidth_gb_s: required key is missing")


def test_many_problems_capped_with_a_count(capsys, tmp_path):
    path = tmp_path / "wl.yaml"
    layers = "".join(f"  - {{name: g{i}, op: gemm, m: 64, n: 64}}\n" for i in range(15))
    path.write_text(f"name: many\nlayers:\n{layers}  - {{name: t, op: gemm, m: 64, n: 64, k: 64, kk: 1}}\n")
    lines = error_lines(capsys, "validate", path)
    assert len(lines) == 11, lines
    has(lines[0], "layers[15](t).kk: unknown key (did you mean 'k'?)")  # typos first
    has(lines[1], "layers[0](g0).k: required key is missing")
    assert lines[-1] == f"{PREFIX}{path}: and 6 more problems"


# -- B2: sizes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, problem", [
    ("gemm-2e31.yaml", "too large, got 2147483648; the limit is 2,147,483,647"),
    ("gemm-1e15.yaml", "too large, got 1000000000000000; the limit is 2,147,483,647"),
    ("gemm-2e64.yaml", "too large, got 18446744073709551616; the limit is 2,147,483,647"),
    ("gemm-1e308.yaml", "beyond 2^63"),
])
def test_layer_size_beyond_limit(capsys, name, problem):
    path = CORPUS / name
    has(error_lines(capsys, "validate", path)[0], str(path), "layers[0](g).m: ", problem)


def test_derived_size_beyond_limit(capsys):
    path = CORPUS / "template-derived-huge.yaml"
    line = one_line(capsys, "run", "--hw", TPU, "--workload", path, "--set", "batch=1099511627776")
    has(line, str(path), "layers[0](g).n: ", "too large, got 140737488355328", "2,147,483,647")


def test_conv_im2col_size_beyond_limit(capsys):
    path = CORPUS / "conv-derived-huge.yaml"
    has(one_line(capsys, "validate", path), str(path), "layers[0](c): ", "n = 17,179,869,184", "2,147,483,647")


def test_hardware_size_beyond_limit(capsys):
    line = one_line(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", "core.compute.rows=2147483648")
    has(line, "core.compute.rows: ", "too large", "2,147,483,647")


def test_repeat_count_limited(capsys):
    path = CORPUS / "repeat-1e9.yaml"
    has(one_line(capsys, "validate", path), str(path), "layers[0](block).repeat: ", "1,000,000,000",
        "100,000 layers")


# -- B3: alias bombs, runaway expressions, nesting, files that are not files ---------------------------


@pytest.mark.parametrize("name", ["alias-bomb-name.yaml", "alias-bomb-m.yaml"])
def test_alias_bomb_refused(name):
    path = CORPUS / name
    proc = run_process("validate", path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == f"{PREFIX}{path}: holds more than 1,000,000 values once YAML aliases " \
                          "are expanded (an alias bomb?); refused\n"


def test_too_many_items_refused_before_building_them(capsys, tmp_path):
    path = tmp_path / "dense.yaml"
    path.write_text("name: [" + "1," * 1_000_000 + "1]\n")
    has(one_line(capsys, "validate", path), str(path), "line 1: more than 1,000,000 YAML items")


def test_alias_bomb_in_hw_set_refused(capsys):
    bomb = "[" + ", ".join(f"&a{i} [" + ", ".join([f"*a{i - 1}" if i else "1"] * 10) + "]" for i in range(7)) + "]"
    line = one_line(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", f"name={bomb}")
    has(line, "name: holds more than 1,000,000 values")


def test_short_value_is_bounded_work():
    class Boom:
        def __repr__(self) -> str:
            raise AssertionError("the whole value was repr()ed")

    huge = ["lol" * 10] * 1000 + [Boom()]
    text = short_repr(huge)
    assert len(text) <= 60 and text.startswith("['lollol")
    assert configio._short({"a": [[huge]]}) .startswith("{'a': [[[")
    assert short_repr(10**5000) == "<an integer of about 5000 digits>"


def test_power_tower_refused_quickly():
    path = CORPUS / "pow-9-9-9.yaml"
    proc = run_process("validate", path)
    assert proc.returncode == 2
    has(proc.stderr, "layers[0](g).m: ", "'9**9**9'", "beyond 2^63")


def test_sweep_cost_power_tower_refused(tmp_path):
    proc = run_process("sweep", CORPUS / "sweep-cost-pow.yaml", "-o", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr[-2000:]
    has(proc.stderr, "cost: ", "beyond 2^63")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("expr, problem", [
    ("min()", "needs at least one argument"), ("ceil(1, 2)", "takes one argument"),
    ("ceil(1e308)", "beyond 2^63"), ("1e308 * 10", "finite"), ("(-8) ** 0.5", "real number"),
    ("1" * 30, "beyond 2^63"), ("1 + " * 400 + "1", "at most 1,000"),
    ("2 ** 64", "beyond 2^63"), ("10.0 ** 400", "finite"),
])
def test_expression_bounds(expr, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace("^", r"\^")):
        templating.evaluate(expr, {})


def test_deep_expression_gives_a_value_or_a_clean_error():
    for depth in (100, 999):
        try:
            assert templating.evaluate("-" * depth + "1", {}) in (1, -1)
        except ValueError as exc:
            assert "nested too deeply" in str(exc)


def _long_sum_workload(first: str, repeat: int) -> dict:
    m = "+".join([first] + ["1"] * 498)  # 499 terms, under MAX_EXPR_CHARS
    return {"name": "w", "layers": [{"repeat": repeat, "name": "r",
                                    "layers": [{"name": "a", "op": "gemm", "m": m, "n": 64, "k": 64}]}]}


def test_repeated_expression_is_evaluated_once():
    """A 499-term expression in a 100,000-times repeat block took 250 s to validate: it was parsed and walked
    again for every copy. Now one text is parsed once and its value reused while its names hold the same values."""
    out = templating.expand(_long_sum_workload("1", 100_000), None, "w.yaml")
    assert len(out["layers"]) == 100_000 and {lay["m"] for lay in out["layers"]} == {499}
    budget = templating.Budget(steps=2_000)  # one evaluation (about a thousand steps) fits; a second would not
    for _ in range(3):
        assert templating.evaluate("+".join(["1"] * 499), {"i": 1}, budget) == 499


def test_expression_work_is_bounded():
    """The same expression reading the block index ``i`` differs in every copy: its total work is capped."""
    with pytest.raises(ConfigError) as info:
        templating.expand(_long_sum_workload("i", 100_000), None, "w.yaml")
    has(str(info.value), "w.yaml: layers[0](r).layers[0](a).m: expressions take more than 5,000,000 steps",
        "use shorter expressions or fewer repeats")
    assert templating.expand(_long_sum_workload("i", 100), None, "w.yaml")["layers"][99]["m"] == 99 + 498


@pytest.mark.parametrize("name", ["deep-nesting.yaml", "deep-block-nesting.yaml"])
def test_deep_nesting_refused(capsys, name):
    path = CORPUS / name
    has(one_line(capsys, "validate", path), str(path), "nested more than 100 levels deep")


def test_self_containing_alias_refused(capsys, tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("name: &a [*a]\nlayers: []\n")
    has(one_line(capsys, "validate", path), str(path), "contains itself")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_device_file_refused(capsys):
    has(one_line(capsys, "run", "--hw", TPU, "--workload", "/dev/zero"), "/dev/zero: ", "not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_refused_without_blocking(tmp_path):
    fifo = tmp_path / "wl.yaml"
    os.mkfifo(fifo)
    proc = run_process("run", "--hw", TPU, "--workload", fifo)
    assert proc.returncode == 2
    has(proc.stderr, str(fifo), "not a regular file")


def test_oversized_file_refused(capsys, tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.write(b"name: big\n")
        fh.truncate(16 * 2**20 + 1)
    has(one_line(capsys, "validate", path), str(path), "16,777,217 bytes", "limited to 16,777,216 bytes (16 MiB)")


# -- B7: control characters ----------------------------------------------------------------------------


def test_control_characters_escaped_in_errors(capsys):
    path = CORPUS / "control-chars.yaml"
    line = one_line(capsys, "validate", path)
    has(line, r"layers[0](g\n\x1b[2J).k\x1b[31m\nX: unknown key")


def test_control_characters_escaped_in_run_table(capsys):
    assert main(["run", "--hw", str(TPU), "--workload", str(CORPUS / "control-chars-name.yaml")]) == 0
    out, _ = capsys.readouterr()
    assert "\x1b" not in out
    has(out, r"bad\nname\x1b[31mred on tpu-like", "\n" + r"g\n\x1b[2J  gemm")


def test_printable():
    assert printable("a\nb\x1bc\u202ed\t") == r"a\nb\x1bc\u202ed\t"
    assert printable("x" * 20, limit=10) == "xxxxxxx..."
    err = ConfigError("f\n.yaml", "k\x1b", "bad\rvalue")
    assert str(err) == r"f\n.yaml: k\x1b: bad\rvalue"


# -- B9: YAML 1.1 quirks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("item, text, number", [
    ("core.compute.rows=12:00", "12:00", "720"), ("clock_ghz=1:30", "1:30", "90"),
    ("core.compute.rows=010", "010", "8"), ("core.compute.rows=1_000", "1_000", "1000"),
])
def test_hw_set_yaml11_numbers_refused(capsys, item, text, number):
    line = one_line(capsys, "run", "--hw", TPU, "--workload", GEMM, "--hw-set", item)
    has(line, f"{item.split('=')[0]}: YAML 1.1 reads {text} as the number {number}", f"--hw-set {item}")


def test_set_base60_refused(capsys):
    line = one_line(capsys, "run", "--hw", TPU, "--workload", CORPUS / "template-derived-huge.yaml",
                    "--set", "batch=1:00")
    has(line, "batch: ", "YAML 1.1 reads 1:00 as the number 60")


def test_base60_size_in_file_refused(capsys):
    path = CORPUS / "sexagesimal-rows.yaml"
    has(one_line(capsys, "validate", path), str(path), "core.compute.rows: YAML 1.1 reads 12:00 as the number 720")


def test_duplicate_key_refused(capsys):
    path = CORPUS / "dup-key.yaml"
    has(one_line(capsys, "validate", path), str(path), "m: duplicate key (first on line 5, again on line 8)")


def test_duplicate_key_on_one_line_refused(capsys, tmp_path):
    path = tmp_path / "wl.yaml"
    path.write_text("name: d\nlayers:\n  - {name: g, op: gemm, m: 64, n: 64, k: 64, k: 32}\n")
    has(one_line(capsys, "validate", path), str(path), "k: duplicate key (first on line 3, again on line 3)")


def test_merge_key_override_still_allowed(capsys, tmp_path):
    path = tmp_path / "wl.yaml"
    path.write_text("name: merge\nlayers:\n  - &base {name: a, op: gemm, m: 64, n: 64, k: 64}\n"
                    "  - {<<: *base, name: b}\n")
    assert main(["validate", str(path)]) == 0
    assert "2 layers" in capsys.readouterr().out


def test_non_ascii_digits_in_pattern_refused(capsys):
    path = CORPUS / "arabic-pattern.yaml"
    has(one_line(capsys, "validate", path), str(path), "sparsity: ", "expected a pattern like")
    has(one_line(capsys, "run", "--hw", TPU, "--workload", GEMM, "--sparsity", "٢:٤"), "--sparsity")


def test_hex_and_plain_numbers_still_read(capsys):
    assert main(["validate", str(TPU)]) == 0
    rc = main(["run", "--hw", str(TPU), "--workload", str(GEMM), "--hw-set", "core.compute.rows=0x80",
               "--hw-set", "clock_ghz=1.5"])
    assert rc == 0, capsys.readouterr().err


@pytest.mark.parametrize(("text", "hint"), [("1e9", "write 1000000000 or 1.0e+09"), ("2.5E3", "write 2500 or 2.5e+03")])
def test_exponent_without_dot_or_sign_says_how_to_write_it(capsys, tmp_path, text, hint):
    """YAML 1.1 reads 1e9 as a string: the type error says so and shows two spellings it reads as numbers."""
    path = tmp_path / "hw.yaml"
    data = yaml.safe_load((ROOT / "hwconfigs" / "tpu-like.yaml").read_text())
    path.write_text(yaml.safe_dump(data).replace("bandwidth_gb_s: 600", f"bandwidth_gb_s: {text}"))
    lines = error_lines(capsys, "validate", path)
    assert len(lines) == 1
    has(lines[0], "dram.bandwidth_gb_s", f"got '{text}'", f"YAML 1.1 reads {text} as text; {hint}")
    fixed = hint.split(" or ")[1]
    path.write_text(yaml.safe_dump(data).replace("bandwidth_gb_s: 600", f"bandwidth_gb_s: {fixed}"))
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("kind", ["workload", "hardware", "sweep"])
def test_validate_escapes_names_in_its_ok_line(capsys, tmp_path, kind):
    """validate's ok line quoted the file's name raw: a name with ESC[31m recoloured the terminal."""
    root = Path(__file__).resolve().parents[1]
    source = {"workload": root / "workloads" / "gemm-microbench.yaml", "hardware": root / "hwconfigs" / "tpu-like.yaml",
              "sweep": root / "sweeps" / "sram-vs-bandwidth.yaml"}[kind]
    data = yaml.safe_load(source.read_text())
    data["name"] = "\x1b[31mred\x07"
    for key in ("hardware", "workloads"):  # a sweep's paths are relative to the repository
        if key in data:
            data[key] = str(root / data[key]) if isinstance(data[key], str) else [str(root / w) for w in data[key]]
    data.pop("random", None)
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    has(out, "'\\x1b[31mred\\x07'")


def test_runtime_config_with_a_typo_names_the_key(capsys, tmp_path):
    """{max_batch, unknown_key} was 'not a file accelsim knows': now a runtime config with an unknown key."""
    path = tmp_path / "rt.yaml"
    path.write_text("max_batch: 8\nunknown_key: 1\n")
    assert main(["validate", str(path)]) == 2
    has(capsys.readouterr().err, f"{path}: unknown_key: unknown key; allowed: ", "max_batch")


@pytest.mark.parametrize("cost, ok", [("pes / 0", False), ("pes / (sram_bytes - sram_bytes)", False),
                                      ("pes / (pes - 3)", True)])
def test_sweep_cost_always_dividing_by_zero_is_refused(capsys, tmp_path, cost, ok):
    """'pes / 0' passed validate and the sweep ran without a cost column and without a word."""
    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "sweeps" / "sram-vs-bandwidth.yaml").read_text())
    data.update(hardware=str(root / data["hardware"]), workloads=[str(root / w) for w in data["workloads"]],
                cost=cost)
    path = tmp_path / "sw.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == (0 if ok else 2)
    if not ok:
        has(capsys.readouterr().err, f"{path}: cost: {short_repr(cost)} divides by zero whatever the columns hold")
