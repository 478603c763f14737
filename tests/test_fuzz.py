"""Property-based fuzzing of every input accelsim reads: hardware configs, workloads, sweep specs, CLI flags.

Whatever the input, accelsim ends with exit 0 or 2; on 2 it prints one line per problem (at most 10,
then "and N more"), each starting with ``accelsim``, no traceback and no raw control characters; on 0
its JSON holds no NaN or Infinity. Examples are derandomised so CI runs the same cases every time;
crashes found here are kept as files in tests/corpus/ (see test_corpus.py). Hangs and memory are
bounded in the corpus runner; here every example runs in-process for speed.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HW, ROOT

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from accelsim.cli import main  # noqa: E402
from accelsim.hardware.families import read_hardware_data  # noqa: E402

EXAMPLES = 60
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

SMALL_WORKLOAD = {
    "name": "fuzz", "dtype": "fp16", "params": {"batch": 2, "seq": 64},
    "layers": [
        {"name": "qkv", "op": "gemm", "m": 192, "n": "batch * seq", "k": 64, "sparsity": "2:4"},
        {"name": "conv", "op": "conv2d", "ifmap": [14, 14], "kernel": [3, 3], "channels": 8, "filters": 16,
         "stride": 1, "padding": 1, "batch": "batch"},
        {"name": "sm", "op": "softmax", "elements": "batch * seq * 4"},
    ],
}

HOSTILE_NUMBERS = st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**40, 2**63, 2**64, 10**15, 1e308, -1e308,
                                   math.inf, -math.inf, math.nan, 0.5, -0.0, 1e-300])
HOSTILE_TEXT = st.sampled_from(["", "2:4", "5:4", "2/4", "\u0662:\u0664", "12:00", "1:30", "9**9**9",
                                "batch * 2**40", "unlimited", "a\nb", "\x1b[31mred\x1b[0m", "x" * 300, "nan",
                                ".inf", "1e999", "fp16", "gemm", "os", "tensor_core", "systolic", "dense"])
VALUES = st.recursive(st.one_of(HOSTILE_NUMBERS, HOSTILE_TEXT, st.booleans(), st.none(),
                                st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True)),
                      lambda inner: st.one_of(st.lists(inner, max_size=3),
                                              st.dictionaries(HOSTILE_TEXT, inner, max_size=3)),
                      max_leaves=6)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested mapping/list (the places a mutation can hit)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(data: dict, draw: Any) -> dict:
    data = copy.deepcopy(data)
    paths = _paths(data)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        node = data
        for key in path[:-1]:
            node = node[key]
        action = draw(st.sampled_from(["set", "set", "delete", "add"]))
        if action == "set":
            node[path[-1]] = draw(VALUES)
        elif action == "delete" and isinstance(node, dict):
            node.pop(path[-1], None)
        elif isinstance(node, dict):
            node[draw(HOSTILE_TEXT)] = draw(VALUES)
        paths = _paths(data)
        if not paths:
            break
    return data


@st.composite
def mutated(draw: Any, base: dict) -> dict:
    return _mutate(base, draw)


def cli(*argv: str) -> tuple[int, str, str]:
    """Run accelsim's CLI in-process; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _no_constants(text: str) -> None:
    def refuse(name: str) -> None:
        raise AssertionError(f"output holds {name}")

    json.loads(text, parse_constant=refuse)


def check_outcome(code: int, out: str, err: str, *, json_out: bool = False) -> None:
    """The contract every input must meet."""
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert all(line.startswith("accelsim") or line.startswith("usage:") for line in lines), err
    assert not any(ch in err for ch in "\x1b\r\x00"), repr(err)
    if code == 2:
        problems = [line for line in lines if "warning:" not in line and not line.startswith("usage:")]
        assert 1 <= len(problems) <= 11, err
    if code == 0 and json_out and out.strip():
        _no_constants(out)


def _write(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def small_workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("fuzz"), "small.yaml", SMALL_WORKLOAD)


@pytest.mark.parametrize("config", ["a100-like.yaml", "tpu-like.yaml", "edge-npu.yaml"])
def test_fuzzed_hardware_configs(config: str, small_workload: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = read_hardware_data(HW / config).data  # a GPU config merged with its family: fuzzed as one file
    tmp = tmp_path_factory.mktemp("hw")

    @FUZZ
    @given(data=mutated(base))
    def one(data: dict) -> None:
        path = _write(tmp, "hw.yaml", data)
        check_outcome(*cli("run", "--hw", str(path), "--workload", str(small_workload), "--format", "json"),
                      json_out=True)

    one()


def test_fuzzed_workloads(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("wl")

    @FUZZ
    @given(data=mutated(SMALL_WORKLOAD))
    def one(data: dict) -> None:
        path = _write(tmp, "wl.yaml", data)
        check_outcome(*cli("run", "--hw", str(HW / "a100-like.yaml"), "--workload", str(path), "--format", "json"),
                      json_out=True)

    one()


def test_fuzzed_sweep_specs(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = yaml.safe_load((ROOT / "sweeps" / "sram-vs-bandwidth.yaml").read_text())
    base["hardware"] = str(HW / "tpu-like.yaml")
    base["workloads"] = [str(ROOT / "workloads" / "bert-base.yaml")]
    tmp = tmp_path_factory.mktemp("sweep")

    @FUZZ
    @given(data=mutated(base))
    def one(data: dict) -> None:
        path = _write(tmp, "spec.yaml", data)
        check_outcome(*cli("validate", str(path)))

    one()


FLAG_VALUES = st.sampled_from(["-1", "0", "1", "nan", "inf", "-inf", "1e12", "1e-300", "abc", "", "2:4",
                               "\u0662:\u0664", "12:00", "2**40", "a\nb", "\x1b[2J", "fixed:100000000",
                               "uniform:5:1", "choice:1,2@0.5", "batch=2**40", "dram.bandwidth_gb_s=.inf",
                               "clock_ghz=1:30", "core.compute.rows=12:00", "seq=-3"])
COMMANDS = {
    "run": ["--sparsity", "--set", "--hw-set", "--policy", "--format"],
    "functional-check": ["--m", "--n", "--k", "--pattern", "--seed", "--dtype"],
    "serve": ["--rate", "--duration", "--seed", "--max-batch", "--max-wait-ms", "--instances", "--sizes",
              "--sla-p99", "--set", "--hw-set"],
    "trace": ["--sparsity", "--max-events", "--layer", "--set", "--hw-set"],
}


@st.composite
def command_lines(draw: Any, workload: str) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    argv = [command]
    if command == "functional-check":
        base = {"--m": "40", "--n": "8", "--k": "64", "--pattern": "2:4"}
    else:
        base = {"--hw": str(HW / "a100-like.yaml"), "--workload": workload}
        if command == "serve":
            base["--rate"], base["--duration"] = "5", "0.5"
        if command == "trace":
            base["-o"] = "{tmp}/t.json"
    for flag in draw(st.lists(st.sampled_from(COMMANDS[command]), min_size=1, max_size=3, unique=True)):
        base[flag] = draw(FLAG_VALUES)
    for flag, value in base.items():
        argv += [flag, value]
    return argv


def test_fuzzed_command_lines(small_workload: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("cli")

    @FUZZ
    @given(argv=command_lines(str(small_workload)))
    def one(argv: list[str]) -> None:
        check_outcome(*cli(*[a.replace("{tmp}", str(tmp)) for a in argv]))

    one()
