"""The ``accelsim run`` table: every row's cycles are the sum of the cycle components it shows (compute, the
stalls, launch, and a tensor-parallel system's communication), and each component is the result's own figure."""

from __future__ import annotations

import pytest
from conftest import HW, WL

from accelsim.cli.run import CYCLE_COLUMNS, format_table
from accelsim.hardware.model import load_hardware
from accelsim.simulation import run
from accelsim.workloads.model import load_workload

CASES = [  # launch-bound (host floor), gather stage, tensor-parallel collectives, no launch at all, causal attention
    ("rtx4090-like", "mobilenetv2", {}, "2:4"),
    ("a100-like", "gemm-microbench", {}, "64:2:8"),
    ("8xh100-like", "llama3-8b-decode", {}, None),
    ("tpu-like", "gemm-microbench", {}, "2:4"),
    ("a100-like", "llama2-7b-prefill", {"seq": 256}, "2:4"),
]


def table_cells(table: str) -> tuple[list[str], list[list[str]]]:
    """The head and the rows (layers, then TOTAL) of a run table, cut at the column spans its rule line gives."""
    lines = table.splitlines()
    rule = lines[2]
    spans, start = [], 0
    for dashes in rule.split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2

    def cells(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in spans]

    end = lines.index(rule, 3)  # the rule above TOTAL
    return cells(lines[1]), [cells(line) for line in [*lines[3:end], lines[end + 1]]]


@pytest.mark.parametrize(("hw", "wl", "params", "sparsity"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_run_table_rows_sum_to_their_cycles(hw: str, wl: str, params: dict[str, int], sparsity: str | None) -> None:
    result = run(load_workload(WL / f"{wl}.yaml", params), load_hardware(HW / f"{hw}.yaml"), sparsity)
    body = result.body()
    head, rows = table_cells(format_table(result))
    parts = [k for k in body["totals"]["cycles"] if k != "total"]
    shown = [CYCLE_COLUMNS[k] for k in parts]  # every component of the totals has a column
    assert shown == head[head.index("cycles") + 1:head.index("util")]
    assert len(rows) == len(body["layers"]) + 1 and rows[-1][0] == "TOTAL"
    cycles = [lay["cycles"] for lay in body["layers"]] + [body["totals"]["cycles"]]
    for row, c in zip(rows, cycles, strict=True):
        values = {h: int(v.replace(",", "")) for h, v in zip(head, row, strict=True) if h in ("cycles", *shown)}
        assert values["cycles"] == c["total"] == sum(values[h] for h in shown), row
        assert all(values[CYCLE_COLUMNS[k]] == c.get(k, 0) for k in parts), row
        assert set(c) - {"total"} <= set(parts), row  # no layer carries a component the table leaves out


def test_run_table_shows_launch_and_communication() -> None:
    """The audit's cases: launch is 66% of mobilenetv2's time on the rtx4090-like; a TP system communicates."""
    result = run(load_workload(WL / "mobilenetv2.yaml"), load_hardware(HW / "rtx4090-like.yaml"), "2:4")
    head, rows = table_cells(format_table(result))
    launch = result.body()["totals"]["cycles"]["launch"]
    assert launch > 0.5 * result.total_cycles
    assert rows[-1][head.index("launch")] == f"{launch:,}"
    assert "comm" not in head and "stall gat" not in head  # only the components the result has
    system = run(load_workload(WL / "llama3-8b-decode.yaml"), load_hardware(HW / "8xh100-like.yaml"), None)
    head, rows = table_cells(format_table(system))
    assert rows[-1][head.index("comm")] == f"{system.body()['totals']['cycles']['communication']:,}"
