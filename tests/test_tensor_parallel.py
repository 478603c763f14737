"""Megatron tensor parallelism on a system config: per-device shards, collectives, cycles.communication, traces."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from accelsim.hardware.model import load_hardware
from accelsim.lowering import lower
from accelsim.report.trace import stream_trace
from accelsim.results import RunResult
from accelsim.simulation import run
from accelsim.system import collective_seconds
from accelsim.workloads.model import load_workload
from accelsim.workloads.tensor_parallel import split

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
WL = ROOT / "workloads"


@pytest.fixture(scope="module")
def h100x8():
    return load_hardware(HW / "8xh100-like.yaml")


def test_llama3_70b_splits_heads_and_columns_megatron_style() -> None:
    model = load_workload(WL / "llama3-70b-decode.yaml", {"batch": 4, "kv_len": 1024})
    plan = split(model, 8)
    by = {lay.name: lay for lay in plan.workload.layers}
    assert (by["layers.0.q_proj"].m, by["layers.0.k_proj"].m, by["layers.0.v_proj"].m) == (1024, 128, 128)
    assert (by["layers.0.o_proj"].m, by["layers.0.o_proj"].k) == (8192, 1024)  # row-parallel: k split
    assert (by["layers.0.gate_proj"].m, by["layers.0.up_proj"].m, by["layers.0.down_proj"].k) == (3584, 3584, 3584)
    assert by["lm_head"].m == 128256 // 8 and by["embed_tokens"].vocab == 128256 // 8
    # 8 query heads per KV head, one KV head per device: the GQA product keeps m = 8 rows, batch = sequences
    assert (by["layers.0.scores"].m, by["layers.0.scores"].batch) == (8, 4)
    assert by["layers.0.softmax"].elements == 4 * 64 * 1025 // 8  # inside the block: 1/N of the elements
    assert by["layers.0.input_layernorm"].elements == 4 * 8192  # outside: replicated
    assert plan.workload.kv_cache_elements == model.kv_cache_elements // 8
    kinds = [(c.name, c.kind, c.message_bytes) for c in plan.collectives]
    assert len(kinds) == 1 + 2 * 80 + 1  # embedding, two per transformer layer, the logits
    assert kinds[0] == ("embed_tokens.all_reduce", "all_reduce", 4 * 8192 * 2)
    assert kinds[1] == ("layers.0.o_proj.all_reduce", "all_reduce", 4 * 8192 * 2)  # tokens x hidden x bf16
    assert kinds[2] == ("layers.0.down_proj.all_reduce", "all_reduce", 4 * 8192 * 2)
    assert kinds[-1] == ("lm_head.all_gather", "all_gather", 128256 * 4 * 2)
    names = [lay.name for lay in plan.workload.layers]
    assert names[plan.collectives[1].after] == "layers.0.o_proj"  # before the residual add
    assert plan.assumptions()["kv_replicated"] is False and not plan.notes


def test_fewer_kv_heads_than_devices_replicates_one_kv_head_per_device() -> None:
    model = load_workload(WL / "llama3-8b-decode.yaml", {"batch": 2, "kv_len": 256})  # 32 heads, 8 KV heads
    plan = split(model, 16)
    by = {lay.name: lay for lay in plan.workload.layers}
    assert (by["layers.0.q_proj"].m, by["layers.0.k_proj"].m) == (4096 // 16, 128)  # 2 query heads, 1 KV head
    assert (by["layers.0.scores"].m, by["layers.0.scores"].batch) == (2, 2)  # 2 query rows on its KV head
    assert plan.kv_replicated and plan.workload.kv_cache_elements == model.kv_cache_elements // 8
    assert any("replicated on 2 devices" in n for n in plan.notes)


def test_moe_experts_are_split_inside_and_reduced_after_the_combine() -> None:
    model = load_workload(WL / "mixtral-8x7b-decode.yaml", {"batch": 8})
    plan = split(model, 8)
    by = {lay.name: lay for lay in plan.workload.layers}
    assert by["layers.0.block_sparse_moe.experts.0.w1"].m == 14336 // 8
    assert by["layers.0.block_sparse_moe.experts.0.w2"].k == 14336 // 8
    assert by["layers.0.block_sparse_moe.gate"].m == 8  # the router is replicated
    moe = [c for c in plan.collectives if "block_sparse_moe" in c.name]
    assert len(moe) == 32 and moe[0].name == "layers.0.block_sparse_moe.combine.all_reduce"
    assert moe[0].message_bytes == 8 * 4096 * 2


def test_a_row_gemms_all_reduce_comes_before_the_first_op_that_reads_its_partial_sums(tmp_path: Path) -> None:
    # BERT's distinct GEMMs: ffn2's partial sums feed the (replicated) pooler and qa_outputs, which ran first
    hw = load_hardware(HW / "8xa100-like.yaml")
    res = run(load_workload(WL / "bert-base-gemms.yaml"), hw)
    assert [r.name for r in res.layers] == ["attn_proj", "ffn1", "ffn2", "ffn2.all_reduce", "pooler", "qa_outputs"]
    # a row GEMM straight after another reads its partial sums too; the next MoE expert's column GEMMs do not
    from accelsim.workloads.model import workload_from_dict

    gemm = {"op": "gemm", "n": 64}
    model = workload_from_dict({"name": "rows", "dtype": "bf16", "layers": [
        {**gemm, "name": "a.fc1", "m": 1024, "k": 256}, {**gemm, "name": "a.fc2", "m": 256, "k": 1024},
        {**gemm, "name": "b.o_proj", "m": 256, "k": 256}]})
    plan = split(model, 4)
    names = [lay.name for lay in plan.workload.layers]
    assert [(c.name, names[c.after], c.producer) for c in plan.collectives] == [
        ("a.fc2.all_reduce", "a.fc2", 1), ("b.o_proj.all_reduce", "b.o_proj", 2)]
    moe = split(load_workload(WL / "mixtral-8x7b-decode.yaml", {"batch": 8}), 8)
    moe_names = [lay.name for lay in moe.workload.layers]
    block = [c for c in moe.collectives if c.name.startswith("layers.0.")]
    assert [(c.name, moe_names[c.after]) for c in block] == [
        ("layers.0.o_proj.all_reduce", "layers.0.o_proj"),
        ("layers.0.block_sparse_moe.combine.all_reduce", "layers.0.block_sparse_moe.combine")]


def test_a_column_gemm_straight_after_a_row_gemm_reads_its_all_reduced_output() -> None:
    # a dense stream with no residual add or norm between the blocks: each next column GEMM reads the row GEMM's
    # output, so every row GEMM's all-reduce runs right after it (before, two of the three were lost)
    from accelsim.workloads.model import workload_from_dict

    gemm = {"op": "gemm", "n": 64}
    model = workload_from_dict({"name": "dense", "dtype": "bf16", "layers": [
        {**gemm, "name": "l0.q_proj", "m": 256, "k": 256}, {**gemm, "name": "l0.o_proj", "m": 256, "k": 256},
        {**gemm, "name": "l0.gate_proj", "m": 1024, "k": 256}, {**gemm, "name": "l0.down_proj", "m": 256, "k": 1024},
        {**gemm, "name": "l1.q_proj", "m": 256, "k": 256}, {**gemm, "name": "l1.o_proj", "m": 256, "k": 256}]})
    plan = split(model, 4)
    names = [lay.name for lay in plan.workload.layers]
    assert [(c.name, c.kind, names[c.after], names[c.producer], c.message_bytes) for c in plan.collectives] == [
        ("l0.o_proj.all_reduce", "all_reduce", "l0.o_proj", "l0.o_proj", 256 * 64 * 2),
        ("l0.down_proj.all_reduce", "all_reduce", "l0.down_proj", "l0.down_proj", 256 * 64 * 2),
        ("l1.o_proj.all_reduce", "all_reduce", "l1.o_proj", "l1.o_proj", 256 * 64 * 2)]
    hw = load_hardware(HW / "8xh100-like.yaml", ["system.devices=2"])
    assert [r.name for r in run(model, hw).layers] == [
        "l0.q_proj", "l0.o_proj", "l0.o_proj.all_reduce", "l0.gate_proj", "l0.down_proj", "l0.down_proj.all_reduce",
        "l1.q_proj", "l1.o_proj", "l1.o_proj.all_reduce"]


def test_moe_experts_defer_the_all_reduce_to_the_combine_only_inside_their_block() -> None:
    # the shipped Mixtral: one all-reduce per attention block (after o_proj) and per MoE block (after its
    # combine), none between experts, as before the dense fix; an expert-named stream with no combine closes
    for params in ({"batch": 1}, {"batch": 8}):
        plan = split(load_workload(WL / "mixtral-8x7b-decode.yaml", params), 8)
        names = [lay.name for lay in plan.workload.layers]
        expected = [("embed_tokens.all_reduce", "embed_tokens")]
        for i in range(32):
            expected += [(f"layers.{i}.o_proj.all_reduce", f"layers.{i}.o_proj"),
                         (f"layers.{i}.block_sparse_moe.combine.all_reduce", f"layers.{i}.block_sparse_moe.combine")]
        expected.append(("lm_head.all_gather", "lm_head"))
        assert [(c.name, names[c.after]) for c in plan.collectives] == expected
        assert all(c.after == c.producer for c in plan.collectives)
    from accelsim.workloads.model import workload_from_dict

    up, down = {"op": "gemm", "n": 8, "m": 512, "k": 128}, {"op": "gemm", "n": 8, "m": 128, "k": 512}
    loose = workload_from_dict({"name": "loose", "dtype": "bf16", "layers": [
        {**up, "name": "moe.experts.0.w1"}, {**down, "name": "moe.experts.0.w2"},
        {**up, "name": "moe.experts.1.w1"}, {**down, "name": "moe.experts.1.w2"}]})
    assert [c.name for c in split(loose, 4).collectives] == [
        "moe.experts.0.w2.all_reduce", "moe.experts.1.w2.all_reduce"]


def test_vector_ops_of_a_rounded_up_shard_match_its_gemm() -> None:
    # Qwen2.5-7B's MLP (18944) over 28 devices: gate_proj rounds up to 677 rows; SiLU and the gate multiply
    # run on those 677 x tokens outputs, not on 18944 x tokens / 28 rounded
    model = load_workload(WL / "qwen2.5-7b-prefill.yaml", {"seq": 64})
    plan = split(model, 28)
    by = {lay.name: lay for lay in plan.workload.layers}
    gate = by["layers.0.gate_proj"]
    assert (gate.m, gate.n) == (677, 64)
    for name in ("layers.0.silu", "layers.0.gate_mul"):
        assert by[name].elements == gate.m * gate.n, name
    assert any("rounded up to the largest shard" in n for n in plan.notes)
    even = {lay.name: lay for lay in split(model, 4).workload.layers}  # N divides the MLP: 1 / N, as before
    assert even["layers.0.silu"].elements == 18944 * 64 // 4


def test_a_tp_run_carries_communication_per_layer_and_in_totals(h100x8) -> None:
    model = load_workload(WL / "llama3-8b-decode.yaml", {"batch": 8, "kv_len": 512})
    res = run(model, h100x8, "2:4")
    comm = [r for r in res.layers if r.path == "communication"]
    assert len(comm) == 1 + 2 * 32 + 1
    ic = h100x8.system.interconnect
    for r in comm:  # each collective costs the formula at the system's clock
        seconds = collective_seconds(r.op, r.shape["message_bytes"], 8, ic)
        assert r.cycles["communication"] == r.cycles["total"] == round(seconds * h100x8.clock_ghz * 1e9)
    t = res.totals
    assert t["cycles"]["communication"] == sum(r.cycles["total"] for r in comm)
    assert t["cycles"]["total"] == sum(r.cycles["total"] for r in res.layers)
    assert res.system["communication"]["share_of_time"] == round(t["cycles"]["communication"] / t["cycles"]["total"], 6)
    # the per-device shapes went through lowering: the shard's kernels, with their own reasons
    kernels = {k.name: k for k in lower(split(model, 8).workload, h100x8, "2:4")}
    for r in res.layers:
        if r.path != "communication" and r.name in kernels and r.op == "gemm":
            assert r.shape["m"] == kernels[r.name].m and r.reason == kernels[r.name].reason
    assert RunResult.from_json(res.to_json()).to_json() == res.to_json()
    assert res.footprint["per_device"] is True


def test_overlap_producer_hides_collectives_behind_their_gemm() -> None:
    model = load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 512})
    none = run(model, load_hardware(HW / "8xh100-like.yaml"))
    over = run(model, load_hardware(HW / "8xh100-like.yaml", ["system.interconnect.overlap=producer"]))
    by = {r.name: r for r in none.layers}
    for r in over.layers:
        if r.path == "communication":
            full = by[r.name].cycles["total"]
            producer = by[r.name.rsplit(".", 1)[0]].cycles["total"]
            assert r.cycles["total"] == max(0, full - producer)
            assert r.tiling["hidden_cycles"] == full - r.cycles["total"]
    assert over.totals["cycles"]["communication"] < none.totals["cycles"]["communication"]


def test_under_overlap_producer_a_sparse_runs_dense_baseline_is_the_dense_run() -> None:
    # the sparse producer hides a collective less (or more) than the dense one: the baseline's collectives hide
    # behind the dense producers, so the speedup and perf/W compare against what the dense run reports
    hw = load_hardware(HW / "8xh100-like.yaml", ["system.interconnect.overlap=producer"])
    model = load_workload(WL / "llama3-8b-prefill.yaml", {"seq": 128})
    sparse, dense = run(model, hw, "2:4"), run(model, hw, "dense")
    assert sparse.dense_total_cycles == dense.total_cycles == dense.dense_total_cycles
    assert sparse.totals["energy"]["dense_total_j"] == pytest.approx(dense.totals["energy"]["total_j"], rel=1e-9)
    by = {r.name: r for r in dense.layers}
    comm = [r for r in sparse.layers if r.path == "communication"]
    for r in sparse.layers:
        assert r.baseline_cycles == by[r.name].cycles["total"], r.name
        assert r.energy["dense_total_j"] == pytest.approx(by[r.name].energy["total_j"], rel=1e-9), r.name
    assert any(r.cycles["total"] != r.baseline_cycles for r in comm)  # the case this guards: hidden shares differ
    for r in comm:
        assert r.speedup_vs_dense == (r.baseline_cycles / r.cycles["total"] if r.cycles["total"] else 1.0)


def test_a_report_under_overlap_producer_compares_against_the_dense_run() -> None:
    # the report checks the dense run against the sparse run's dense baseline: under overlap producer they
    # disagreed and the report died with a traceback
    from accelsim.analysis.deployment import build_report

    hw = load_hardware(HW / "8xa100-like.yaml", ["system.devices=4", "system.interconnect.overlap=producer"])
    model = load_workload(WL / "bert-base.yaml", {"batch": 1, "seq": 32})
    rep = build_report(model, hw, "2:4")
    sparse, dense = run(model, hw, "2:4"), run(model, hw, "dense")
    assert rep.pruning_schedule.run_speedup == pytest.approx(dense.total_cycles / sparse.total_cycles, rel=1e-6)


def test_a_report_whose_dense_runs_disagree_fails_in_one_line(capsys, monkeypatch, tmp_path: Path) -> None:
    """The report's dense run and the sparse run's dense baseline must agree; if they ever do not (a simulator
    bug) the report says so in one line, with both totals, instead of a traceback."""
    from conftest import cli, one_line_error

    import accelsim.analysis.deployment as deployment

    def skewed(model, hw, sparsity, **kw):  # the dense run one cycle off in its first layer
        res = run(model, hw, sparsity, **kw)
        if sparsity == "dense":
            first = res.layers[0]
            skew = first.replace(cycles={**first.cycles, "total": first.cycles["total"] + 1})
            return dataclasses.replace(res, layers=(skew, *res.layers[1:]))
        return res

    monkeypatch.setattr(deployment, "run", skewed)
    code, _, err = cli(capsys, "report", "--hw", HW / "tpu-like.yaml", "--workload", WL / "gemm-microbench.yaml",
                       "--sparsity", "2:4", "-o", tmp_path / "out")
    line = one_line_error(err)
    assert code == 2 and "internal inconsistency: the dense run takes" in line and "2:4 run's dense baseline" in line
    assert not (tmp_path / "out").exists()


def test_the_trace_draws_collectives_on_their_own_track(h100x8) -> None:
    model = load_workload(WL / "llama3-8b-decode.yaml", {"batch": 1, "kv_len": 128})
    res = run(model, h100x8, keep_tiles=True)
    buf = io.StringIO()
    stream_trace(res, h100x8, buf, layers=["layers.0.o_proj", "layers.0.o_proj.all_reduce"], max_events=20000)
    events = json.loads(buf.getvalue())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == 1}
    comm_tid = next(t for t, n in names.items() if n.startswith("communication"))
    slices = [e for e in events if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == comm_tid]
    assert [e["name"] for e in slices] == ["layers.0.o_proj.all_reduce"]


def test_the_reality_ladder_gains_a_communication_rung_on_systems(h100x8) -> None:
    from accelsim.analysis.reality import reality_check

    model = load_workload(WL / "llama3-8b-decode.yaml", {"batch": 8, "kv_len": 512})
    rc = reality_check(model, h100x8, "2:4")
    keys = [r.rung for r in rc.rungs]
    # (h100-like's host per-call floor binds some of a decode step's small calls: its rung follows Amdahl)
    assert keys[:4] == ["nominal", "executed_pattern", "communication", "amdahl"] and keys[-1] == "fixed_cost"
    assert keys[4] in ("non_mac_time", "host_floor")
    real = run(model, h100x8, "2:4")
    comm = real.totals["cycles"]["communication"]
    assert comm > 0
    # the rung keeps the collectives' time: dense time of the rest / 2 plus the collectives
    rest = rc.dense_total_cycles - comm
    assert rc.rungs[2].sparse_cycles == pytest.approx(rest / 2 + comm, rel=1e-9)
    assert rc.rungs[-1].speedup == pytest.approx(real.dense_total_cycles / real.total_cycles)
    assert rc.layers == sum(1 for r in real.layers if r.path != "communication")
    single = reality_check(model, load_hardware(HW / "h100-like.yaml"), "2:4")
    assert "communication" not in [r.rung for r in single.rungs]


def test_footprint_is_per_device_with_kv_room(h100x8) -> None:
    model = load_workload(WL / "llama3-70b-decode.yaml", {"batch": 1, "kv_len": 128})
    one = run(model, load_hardware(HW / "h100-like.yaml"), "dense")
    tp = run(model, h100x8, "2:4")
    assert one.footprint["fits"] is False and tp.footprint["fits"] is True  # dense 70B fits 8 devices, not one
    fp = tp.footprint
    assert fp["per_device"] and fp["devices"] == 8
    assert fp["weights_dense_bytes"] < one.footprint["weights_dense_bytes"] / 8 * 1.01  # replicated norms only
    room = fp["dram_capacity_bytes"] - fp["weights_deployed_bytes"] - fp["activations_peak_bytes"]
    assert fp["kv_room_bytes"] == room
    assert fp["kv_room_bytes"] > fp["kv_room_dense_bytes"]  # 2:4 frees weight bytes on every device


def test_a_tp_group_serves_as_one_instance_with_a_per_device_kv_budget(h100x8) -> None:
    from accelsim.serving.model import ServingModel

    one = ServingModel.from_files(load_hardware(HW / "h100-like.yaml"), WL / "llama3-8b-prefill.yaml", "2:4",
                                  decode_workload=WL / "llama3-8b-decode.yaml")
    tp = ServingModel.from_files(h100x8, WL / "llama3-8b-prefill.yaml", "2:4",
                                 decode_workload=WL / "llama3-8b-decode.yaml")
    assert tp.info["devices"] == 8 and tp.config.instances == 1
    assert one.kv_bytes_per_token == 2 * 32 * 1024 * 2  # K and V, 32 layers, 8 KV heads x 128, bf16
    assert tp.kv_bytes_per_token == one.kv_bytes_per_token / 8  # one KV head per device
    weights = tp.info["weights_deployed_bytes"]
    assert weights < one.info["weights_deployed_bytes"] / 7
    assert tp.kv_budget_bytes == pytest.approx(h100x8.dram.capacity_bytes * tp.config.memory_utilization - weights)
    res = tp.run(rate=20.0, requests=60, seed=0)
    assert res.tpot_ms is not None and res.tpot_ms.p99 > 0


def test_a_sweep_on_a_system_equals_run(tmp_path: Path) -> None:
    import csv

    from accelsim.cli import main

    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"name: tp\nhardware: {HW / '8xh100-like.yaml'}\nworkloads: [{WL / 'llama3-8b-decode.yaml'}]\n"
                    "set: {batch: [4]}\nsparsity: ['2:4']\ngrid:\n  system.interconnect.latency_us: [1.0]\n")
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out")]) == 0
    row = next(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    hw = load_hardware(HW / "8xh100-like.yaml", ["system.interconnect.latency_us=1.0"])
    res = run(load_workload(WL / "llama3-8b-decode.yaml", {"batch": 4}), hw, "2:4")
    assert int(row["cycles"]) == res.totals["cycles"]["total"]
    # the collectives' time is a column of its own, as in run's totals (a device config: 0)
    assert int(row["cycles_communication"]) == res.totals["cycles"]["communication"] > 0


def test_serve_flags_reach_the_request() -> None:
    from accelsim.cli import build_parser
    from accelsim.cli.serve import request_from_args

    args = build_parser().parse_args(["serve", "--hw", "8xh100-like.yaml", "--workload", "w.yaml", "--rate", "2",
                                      "--sla-p99", "30", "--sla-metric", "tpot", "--prompt-tokens", "fixed:1024",
                                      "--output-tokens", "fixed:256"])
    rq = request_from_args(args)
    assert (rq.sla_metric, rq.prompt_tokens, rq.output_tokens) == ("tpot", "fixed:1024", "fixed:256")


def test_bert_splits_by_its_own_names_in_whole_heads() -> None:
    plan = split(load_workload(WL / "bert-base.yaml", {"batch": 1, "seq": 128}), 4)
    by = {lay.name: lay for lay in plan.workload.layers}
    assert (by["encoder.0.q"].m, by["encoder.0.attn_out"].k, by["encoder.0.ffn1"].m) == (192, 192, 768)
    assert by["encoder.0.scores"].batch == 3  # 12 heads over 4 devices: 3 whole heads of 64 each
    assert by["encoder.0.softmax"].elements == 3 * 128 * 128
    assert (plan.heads, plan.kv_heads, plan.assumptions()["kv_heads_per_device"]) == (12, 12, 3)
    assert not any("not divisible" in n for n in plan.notes)
    assert any("gemm layers without a tensor-parallel role" in n for n in plan.notes)  # pooler, qa_outputs


def test_the_system_line_never_prints_a_missing_kv_split(capsys) -> None:
    """A workload without attention heads (bert-base-gemms) splits its projections by columns: the text says
    so, not 'None'."""
    from accelsim.cli import main

    assert main(["run", "--hw", str(HW / "8xh100-like.yaml"), "--workload", str(WL / "bert-base-gemms.yaml")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("system:"))
    assert "None" not in line and "split by columns, not by head" in line  # no attention group: no heads found
    assert main(["run", "--hw", str(HW / "8xh100-like.yaml"), "--hw-set", "system.devices=4", "--workload",
                 str(WL / "bert-base.yaml")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("system:"))
    assert "3 of 12 KV heads per device" in line
    assert main(["run", "--hw", str(HW / "8xh100-like.yaml"), "--workload", str(WL / "llama3-8b-decode.yaml")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("system:"))
    assert "1 of 8 KV heads per device" in line
