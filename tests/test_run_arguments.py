"""accelsim.run refuses what a user can pass wrong with an AccelsimError naming the argument, as docs promise."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import HW, WL

import accelsim
from accelsim import AccelsimError, ConfigError, load_hardware, load_workload


@pytest.fixture(scope="module")
def pair() -> tuple[accelsim.Workload, accelsim.Hardware]:
    return load_workload(WL / "gemm-microbench.yaml"), load_hardware(HW / "tpu-like.yaml")


@pytest.mark.parametrize(("sparsity", "policy", "key", "problem"), [
    ("2:4", "bogus", "policy", "unknown policy 'bogus'; expected one of 'sparse-if-supported', 'fastest'"),
    ("5:4", "fastest", "sparsity", "N must not exceed M in '5:4'"),
    ("foo", "fastest", "sparsity", 'expected a pattern like "2:4"'),
    (0.5, "fastest", "sparsity", 'expected a pattern like "2:4" or "dense", got 0.5'),
])
def test_bad_sparsity_or_policy_is_a_config_error(pair, sparsity, policy, key, problem) -> None:
    with pytest.raises(ConfigError) as info:
        accelsim.run(*pair, sparsity, policy=policy)
    assert info.value.key == key and problem in info.value.problem
    assert str(info.value).startswith(f"accelsim.run: {key}: ") and "\n" not in str(info.value)


@pytest.mark.parametrize("which", ["model", "hw"])
@pytest.mark.parametrize("wrong", ["path-str", "path", "dict"])
def test_a_path_or_dict_instead_of_a_loaded_config_says_what_to_pass(pair, which, wrong) -> None:
    model, hw = pair
    file = WL / "gemm-microbench.yaml" if which == "model" else HW / "tpu-like.yaml"
    value = {"path-str": str(file), "path": Path(file), "dict": {"name": "x"}}[wrong]
    args = (value, hw) if which == "model" else (model, value)
    with pytest.raises(AccelsimError) as info:
        accelsim.run(*args)  # type: ignore[arg-type]
    want, load = ("Workload", "load_workload") if which == "model" else ("Hardware", "load_hardware")
    assert f"accelsim.run: {which} must be a {want} from accelsim.{load}(path)" in str(info.value)
    assert ("(a path: load it first)" in str(info.value)) == (wrong != "dict")


def test_sparsity_is_read_as_the_cli_reads_it(pair) -> None:
    """A dense-equivalent pattern runs (and is echoed) as dense, as ``--sparsity 4:4`` is."""
    four = accelsim.run(*pair, "4:4")
    dense = accelsim.run(*pair, "dense")
    assert four.sparsity == "dense" and four.to_json() == dense.to_json()
