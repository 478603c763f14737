"""The all-reduce model equals its published formula (ring; switch direct and in-switch) for N = 2, 4, 8."""

from __future__ import annotations

import pytest

from accelsim.config.schema import validate
from accelsim.errors import ConfigError
from accelsim.system import Interconnect, collective_seconds

SIZES = [4 * 1024, 64 * 1024, 1024**2, 16 * 1024**2, 256 * 1024**2, 1024**3]  # 4 KB .. 1 GB


def _ic(**kw: object) -> Interconnect:
    data = {"topology": "switch", "link_bandwidth_gbs": 25.0, "links_per_device": 18, "latency_us": 2.0, **kw}
    return validate(Interconnect, data, "<test>")


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size", SIZES)
def test_ring_all_reduce_is_the_formula(n: int, size: int) -> None:
    ic = _ic(topology="ring", links_per_device=12)
    bw = 12 * 25e9
    expected = 2 * (n - 1) / n * size / bw + 2 * (n - 1) * 2e-6
    assert collective_seconds("all_reduce", size, n, ic) == pytest.approx(expected, rel=1e-12)
    assert collective_seconds("all_gather", size, n, ic) == pytest.approx(expected / 2, rel=1e-12)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size", SIZES)
def test_switch_all_reduce_is_the_formula(n: int, size: int) -> None:
    bw = 18 * 25e9 * 0.8
    direct = _ic(bandwidth_efficiency=0.8)
    assert direct.algorithm_name == "direct"
    assert collective_seconds("all_reduce", size, n, direct) == pytest.approx(
        2 * (n - 1) / n * size / bw + 2 * 2e-6, rel=1e-12)
    nvls = _ic(bandwidth_efficiency=0.8, algorithm="in_switch")
    assert collective_seconds("all_reduce", size, n, nvls) == pytest.approx(size / bw + 2 * 2e-6, rel=1e-12)
    ring = _ic(bandwidth_efficiency=0.8, algorithm="ring")
    assert collective_seconds("all_reduce", size, n, ring) == pytest.approx(
        2 * (n - 1) / n * size / bw + 2 * (n - 1) * 2e-6, rel=1e-12)


def test_one_device_communicates_nothing() -> None:
    assert collective_seconds("all_reduce", 1024**3, 1, _ic()) == 0.0


def test_an_algorithm_must_fit_the_topology() -> None:
    with pytest.raises(ConfigError, match=r"algorithm.*in_switch runs on a switch topology, not ring"):
        _ic(topology="ring", algorithm="in_switch")
    with pytest.raises(ConfigError, match=r"algorithm.*unknown algorithm 'tree'"):
        _ic(algorithm="tree")
