"""Per-tile traces: Trace Event Format rules, timing against the simulation, starved configs, reduction."""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from accelsim.cli.analysis import trace_command, write_trace
from accelsim.errors import AccelsimError
from accelsim.hardware.model import hardware_from_dict, load_hardware
from accelsim.report import trace as tr
from accelsim.simulation import run
from accelsim.workloads.model import load_workload, workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
WL = ROOT / "workloads"
COMPUTE_TIDS = (tr.STAGE_TID["compute"], tr.STAGE_TID["vector"])
DRAM_TIDS = (tr.STAGE_TID["load"], tr.STAGE_TID["writeback"])
M_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def _hw_dict(name: str) -> dict:
    return yaml.safe_load((HW / f"{name}.yaml").read_text())


def _trace(tmp: Path, hw, workload, sparsity="2:4", name="t.json", **kw):
    result = run(workload, hw, sparsity, keep_tiles=True)
    stats = write_trace(result, hw, tmp / name, **kw)
    data = json.loads((tmp / name).read_text())
    return result, stats, data


def _ns(e: dict) -> tuple[int, int]:
    s = round(e["ts"] * 1000)
    return s, s + round(e["dur"] * 1000)


def _tracks(events: list[dict]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    out: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            out[(e["pid"], e["tid"])].append(_ns(e))
    for v in out.values():
        v.sort()
    return out


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Total length of the intersection of two sets of disjoint intervals (ns)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _compute_gaps(tracks, pid: int) -> list[tuple[int, int]]:
    """Idle stretches of the array on core ``pid``, from the start of the trace."""
    busy = sorted(s for tid in COMPUTE_TIDS for s in tracks.get((pid, tid), []))
    gaps, prev = [], 0
    for s, e in busy:
        if s > prev:
            gaps.append((prev, s))
        prev = max(prev, e)
    return gaps


@pytest.fixture(scope="module")
def tpu_bert(tmp_path_factory):
    """Single core, weight layers and vector layers (norms, softmax, ...)."""
    tmp = tmp_path_factory.mktemp("trace")
    hw = load_hardware(HW / "tpu-like.yaml")
    return (hw, *_trace(tmp, hw, load_workload(WL / "bert-base.yaml", {"seq": 64})))


@pytest.fixture(scope="module")
def tpu_resnet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trace")
    hw = load_hardware(HW / "tpu-like.yaml")
    return (hw, *_trace(tmp, hw, load_workload(WL / "resnet18.yaml")))


@pytest.fixture(scope="module")
def a100_big(tmp_path_factory):
    """A multi-wave GEMM (4 wave classes, the last with 80 of 108 SMs), one-wave GEMMs, a vector op."""
    tmp = tmp_path_factory.mktemp("trace")
    hw = load_hardware(HW / "a100-like.yaml")
    wl = workload_from_dict({"name": "waves", "dtype": "fp16", "layers": [
        {"name": "g", "op": "gemm", "m": 4096, "n": 2048, "k": 1024},
        {"name": "h", "op": "gemm", "m": 1024, "n": 1000, "k": 512},
        {"name": "f", "op": "gemm", "m": 3072, "n": 512, "k": 768},
        {"name": "act", "op": "activation", "function": "gelu", "elements": 1024 * 1000}]})
    return (hw, *_trace(tmp, hw, wl))


def _all_fixtures(request):
    return [request.getfixturevalue(n) for n in ("tpu_bert", "tpu_resnet", "a100_big")]


def test_trace_event_format_rules(request):
    for hw, result, stats, data in _all_fixtures(request):
        assert set(data) >= {"traceEvents", "displayTimeUnit", "otherData"}
        assert data["displayTimeUnit"] in ("ms", "ns")
        events = data["traceEvents"]
        assert stats["events"] == len(events)
        named_p, named_t, used_t, counter_pids = set(), set(), set(), set()
        for e in events:
            assert e["ph"] in ("X", "C", "M"), e
            assert isinstance(e["pid"], int)
            if e["ph"] == "X":
                for key in ("name", "ts", "dur", "pid", "tid", "args"):
                    assert key in e, (key, e)
                assert e["ts"] >= 0 and e["dur"] >= 0
                assert "cycles" in e["args"] or "busy_cycles" in e["args"] or e["cat"].startswith("layer")
                used_t.add((e["pid"], e["tid"]))
            elif e["ph"] == "C":
                assert "ts" in e and e["args"] and all(isinstance(v, int | float) for v in e["args"].values())
                counter_pids.add(e["pid"])
            else:
                assert e["name"] in M_NAMES and "args" in e
                if e["name"] == "process_name":
                    named_p.add(e["pid"])
                if e["name"] == "thread_name":
                    named_t.add((e["pid"], e["tid"]))
        assert used_t <= named_t, "every track with slices is named"
        assert {p for p, _ in used_t} | counter_pids <= named_p
        assert counter_pids == {tr.MEMORY_PID}
        assert tr.MEMORY_PID not in {p for p, _ in used_t}, "the memory system carries counters only"
        labels = [e["args"]["labels"] for e in events if e["name"] == "process_labels"]
        assert all(hw.name in t and result.workload["name"] in t for t in labels)
        assert data["otherData"]["hardware"] == hw.name


def test_slices_never_overlap_on_a_track(request):
    for _, _, _, data in _all_fixtures(request):
        for key, slices in _tracks(data["traceEvents"]).items():
            for (s0, e0), (s1, _) in zip(slices, slices[1:], strict=False):
                assert e0 <= s1, (key, (s0, e0), s1)


@pytest.mark.parametrize("which", ["tpu_bert", "tpu_resnet"])
def test_single_core_compute_time_and_span_match_the_simulation(request, which):
    hw, result, stats, data = request.getfixturevalue(which)
    events = data["traceEvents"]
    us_per_cycle = 1.0 / (hw.clock_ghz * 1e3)
    compute = [e for e in events if e["ph"] == "X" and e["pid"] >= tr.CORE_PID0 and e["tid"] in COMPUTE_TIDS]
    assert {e["pid"] for e in compute} == {tr.CORE_PID0}
    simulated = sum(k.cycles["compute"] for k in result.layers) * us_per_cycle
    tol = len(compute) * 1e-3 + len(result.layers) * 0.5 * us_per_cycle  # 1 ns per slice, int cycles per layer
    assert sum(e["dur"] for e in compute) == pytest.approx(simulated, abs=tol)
    raw = sum(e["args"]["cycles"] for e in compute)
    assert raw == pytest.approx(sum(k.cycles["compute"] for k in result.layers), abs=len(result.layers))
    layers = sorted((e for e in events if e["ph"] == "X" and e["pid"] == tr.LAYERS_PID and e["tid"] == tr.LAYERS_TID),
                    key=lambda e: e["ts"])
    assert [e["name"] for e in layers] == [k.name for k in result.layers]
    for a, b in zip(layers, layers[1:], strict=False):  # back to back
        assert _ns(a)[1] == _ns(b)[0]
    end = max(_ns(e)[1] for e in events if e["ph"] == "X")
    assert end / 1000 == pytest.approx(result.total_cycles * us_per_cycle, abs=1e-3)
    assert stats["span_us"] == pytest.approx(result.total_cycles * us_per_cycle, abs=1e-6)


def _check_counter_bounds(hw, events):
    peak = hw.dram_bytes_per_cycle()
    sram_total = sum(hw.core.sram.buffer_bytes().values()) * hw.cores
    seen = set()
    for e in events:
        if e["ph"] != "C":
            continue
        seen.add(e["name"])
        a = e["args"]
        if "%" in a:
            assert 0.0 <= a["%"] <= 100.0, e
        if "bytes/cycle" in a:
            assert 0.0 <= a["bytes/cycle"] <= peak * (1 + 1e-9) + 1e-3, e
            assert a["GB/s"] <= float(hw.dram.bandwidth_gb_s) * (1 + 1e-9) + 1e-3, e
        if e["name"] == "SRAM occupancy":
            assert 0.0 <= a["bytes"] <= sram_total, e
    assert seen == {"array occupancy", "vector unit occupancy", "DRAM bandwidth", "SRAM occupancy",
                    "metadata decode utilisation"}


@pytest.mark.parametrize("which", ["tpu_bert", "tpu_resnet"])
def test_counters_within_physical_bounds(request, which):
    hw, _, _, data = request.getfixturevalue(which)
    _check_counter_bounds(hw, data["traceEvents"])


def test_multicore_occupancy_within_bounds(a100_big):
    hw, _, _, data = a100_big
    for e in data["traceEvents"]:
        if e["ph"] == "C" and "%" in e["args"]:
            assert 0.0 <= e["args"]["%"] <= 100.0, e


def test_multicore_dram_counter_within_peak(a100_big):
    hw, _, _, data = a100_big
    peak = hw.dram_bytes_per_cycle()
    worst = max(e["args"]["bytes/cycle"] for e in data["traceEvents"] if e["name"] == "DRAM bandwidth")
    assert worst <= peak * (1 + 1e-9)


def _starved(tmp: Path, edit, sparsity: str, workload):
    d = _hw_dict("tpu-like")
    edit(d)
    hw = hardware_from_dict(copy.deepcopy(d))
    result, _, data = _trace(tmp, hw, workload, sparsity)
    return hw, result, data


def _coverage(data) -> tuple[float, float, float]:
    tracks = _tracks(data["traceEvents"])
    gaps = _compute_gaps(tracks, tr.CORE_PID0)
    total = sum(e - s for s, e in gaps)
    dram = sorted(s for tid in DRAM_TIDS for s in tracks.get((tr.CORE_PID0, tid), []))
    decode = tracks.get((tr.CORE_PID0, tr.STAGE_TID["decode"]), [])
    span = max(e for v in tracks.values() for _, e in v)
    return total / span, _overlap(gaps, dram) / total, _overlap(gaps, decode) / total


def test_bandwidth_starved_gaps_line_up_with_busy_dram(tmp_path):
    hw, result, data = _starved(tmp_path, lambda d: d["dram"].update(bandwidth_gb_s=10), "2:4",
                                load_workload(WL / "resnet18.yaml"))
    _check_counter_bounds(hw, data["traceEvents"])
    idle, by_dram, by_decode = _coverage(data)
    assert idle > 0.5, "a starved array idles most of the time"
    assert by_dram > 0.95, f"only {by_dram:.1%} of the array's idle time has the DRAM channel busy"
    assert by_decode < 0.05
    assert sum(k.cycles["stall_memory"] for k in result.layers) > 10 * sum(k.cycles["stall_decode"]
                                                                           for k in result.layers)


def test_decode_starved_gaps_line_up_with_decode(tmp_path):
    hw, result, data = _starved(tmp_path, lambda d: d["core"]["sparse"].update(decode_groups_per_cycle=0.25),
                                "2:4", load_workload(WL / "resnet18.yaml"))
    _check_counter_bounds(hw, data["traceEvents"])
    idle, by_dram, by_decode = _coverage(data)
    assert idle > 0.5
    assert by_decode > 0.95, f"only {by_decode:.1%} of the array's idle time has the decoder busy"
    assert by_dram < 0.05
    decode_util = [e["args"]["%"] for e in data["traceEvents"] if e["name"] == "metadata decode utilisation"]
    assert max(decode_util) > 90.0


def test_multicore_trace_has_one_process_per_active_core(a100_big):
    hw, result, stats, data = a100_big
    events = data["traceEvents"]
    cores = {e["pid"] for e in events if e["ph"] == "X" and e["pid"] >= tr.CORE_PID0}
    active = max(int(k.tiles["active_cores"].max()) for k in result.layers if k.path != "vector")
    assert len(cores) == stats["cores"] == min(active, hw.cores) == 108
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {names[p] for p in cores} == {f"SM {i}" for i in range(108)}
    # vector layers: on the layers track, their tiles on core 0's vector-unit thread
    vec = [e for e in events if e["ph"] == "X" and e["tid"] == tr.STAGE_TID["vector"]]
    assert vec and {e["pid"] for e in vec} == {tr.CORE_PID0}
    layer = next(e for e in events if e["ph"] == "X" and e["tid"] == tr.LAYERS_TID and e["name"] == "act")
    assert layer["args"]["path"] == "vector" and "reason" in layer["args"]


def test_wave_classes_laid_out_back_to_back(a100_big):
    """Layer 'g' has several waves in several classes; its last wave leaves SMs idle."""
    hw, result, _, data = a100_big
    k = result.layers[0]
    waves, last, steps = k.tiling["waves"], k.tiling["last_wave_ctas"], int(k.tiling["k_steps"])
    assert waves >= 3 and k.tiling["wave_classes"] >= 2 and last < hw.cores, k.tiling  # the fixture's point
    us = 1.0 / (hw.clock_ghz * 1e3)
    events = [e for e in data["traceEvents"]
              if e["ph"] == "X" and e["pid"] >= tr.CORE_PID0 and e["args"].get("layer") == "g"]
    comp = defaultdict(list)
    for e in events:
        if e["tid"] == tr.STAGE_TID["compute"]:
            comp[e["pid"] - tr.CORE_PID0].append(e)
    assert len(comp[0]) == waves * steps
    assert len(comp[hw.cores - 1]) == (waves - 1) * steps
    ctas = {e["args"]["cta"] for e in comp[0] + comp[last - 1] + comp[last]}
    assert ctas >= {w * hw.cores for w in range(waves)} | {(waves - 1) * hw.cores + last - 1}
    assert (waves - 1) * hw.cores + last not in ctas  # that SM is idle in the last wave
    total_core0 = sum(e["args"]["cycles"] for e in comp[0])
    expect = sum(float(r["compute_cycles"]) * int(r["wave_count"]) for r in k.tiles)
    assert total_core0 == pytest.approx(expect, abs=len(comp[0]) * 1e-3)  # args keep 3 decimals
    assert min(e["ts"] for e in events) >= k.cycles["launch"] * us - 1e-3
    assert max(e["ts"] + e["dur"] for e in events) <= k.cycles["total"] * us + 1e-3
    assert sorted({e["args"]["wave"] for e in comp[0]}) == list(range(waves))
    for w in range(waves - 1):  # wave w+1 starts after wave w's last compute
        end = max(e["ts"] + e["dur"] for e in comp[0] if e["args"]["wave"] == w)
        first = min(e["ts"] for e in comp[0] if e["args"]["wave"] == w + 1)
        assert first >= end - 1e-3


def test_max_events_reduction_is_deterministic_and_reported(tmp_path):
    hw = load_hardware(HW / "a100-like.yaml")
    result = run(load_workload(WL / "bert-base.yaml", {"seq": 128}), hw, "2:4", keep_tiles=True)
    full = write_trace(result, hw, tmp_path / "full.json")
    assert full["reduction"]["level"] == "none" and full["reduction"]["bound_met"]
    levels = {}
    for bound in (full["events"] * 4 // 5, 3000):
        a = write_trace(result, hw, tmp_path / "a.json", max_events=bound)
        b = write_trace(result, hw, tmp_path / "b.json", max_events=bound)
        assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
        data = json.loads((tmp_path / "a.json").read_text())
        red = data["otherData"]["reduction"]
        assert red == a["reduction"] == b["reduction"]
        assert a["events"] == len(data["traceEvents"]) <= bound and red["bound_met"]
        assert red["events_unreduced"] == full["events"] and red["max_events"] == bound
        assert red["description"] in json.dumps(data["traceEvents"][:12], ensure_ascii=False)
        levels[bound] = red["level"]
        slices = [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] >= tr.CORE_PID0]
        assert all("tiles_merged" in e["args"] for e in slices) == (red["merge_factor"] > 1)
        for key, v in _tracks(data["traceEvents"]).items():
            for (_, e0), (s1, _) in zip(v, v[1:], strict=False):
                assert e0 <= s1, key
        if red["cores_collapsed"]:
            assert any(e["args"].get("cores", 1) > 1 for e in slices)
        else:  # every tile is still accounted for, merged
            fulld = json.loads((tmp_path / "full.json").read_text())
            n_full = sum(1 for e in fulld["traceEvents"] if e["ph"] == "X" and e["tid"] == tr.STAGE_TID["compute"])
            merged = sum(e["args"]["tiles_merged"] for e in slices if e["tid"] == tr.STAGE_TID["compute"])
            assert merged == n_full
            assert _busy_ns(data["traceEvents"]) == _busy_ns(fulld["traceEvents"])
    assert levels[full["events"] * 4 // 5] == "merge"
    assert "collapse" in levels[3000]
    tiny = write_trace(result, hw, tmp_path / "tiny.json", max_events=10)
    assert not tiny["reduction"]["bound_met"] and "cannot be met" in tiny["reduction"]["description"]


def _busy_ns(events: list[dict]) -> dict[tuple[int, int], int]:
    """Summed slice length per (pid, tid) thread, in whole ns (the trace's own quantum)."""
    return {key: sum(e - s for s, e in v) for key, v in _tracks(events).items()}


@pytest.mark.parametrize("bound", [1500, 600, 200])
def test_reduced_trace_keeps_each_threads_busy_time(tmp_path, tpu_resnet, bound):
    """Merged slices used to span from their first tile's start to their last one's end, drawing the idle gaps
    between tiles as busy: resnet18 2:4 on tpu-like at --max-events 1500 showed 182.9 us of load instead of
    70.5, 132.6 us of write-back instead of 20.7. A reduced trace shows the full trace's busy time per thread."""
    hw, result, _, full = tpu_resnet
    stats = write_trace(result, hw, tmp_path / "r.json", max_events=bound)
    data = json.loads((tmp_path / "r.json").read_text())
    assert stats["reduction"]["merge_factor"] > 1 and stats["reduction"]["bound_met"] == (bound > 200)
    want, got = _busy_ns(full["traceEvents"]), _busy_ns(data["traceEvents"])
    assert got == want  # exactly, in ns: a merged slice lasts the sum of its tile-stages' drawn lengths
    assert want[(tr.CORE_PID0, tr.STAGE_TID["load"])] < 0.5 * want[(tr.CORE_PID0, tr.STAGE_TID["compute"])]
    for key, v in _tracks(data["traceEvents"]).items():
        for (_, e0), (s1, _) in zip(v, v[1:], strict=False):
            assert e0 <= s1, key
    merged = [e for e in data["traceEvents"] if e["ph"] == "X" and "tiles_merged" in e["args"]]
    us = 1.0 / (hw.clock_ghz * 1e3)
    for e in merged:  # dur is the busy time; the span to the last tile's end is still in args
        assert e["dur"] == pytest.approx(e["args"]["busy_cycles"] * us, abs=e["args"]["tiles_merged"] * 1e-3)
        assert e["args"]["span_cycles"] >= e["args"]["busy_cycles"]
    assert any(e["args"]["span_cycles"] > e["args"]["busy_cycles"] * 1.5 for e in merged)


@pytest.mark.parametrize("bound", [600, 200])
def test_one_core_part_never_reports_collapsed_cores(tmp_path, tpu_resnet, bound):
    """tpu-like has one core and one CTA slot: there is nothing to collapse, yet --max-events 600 used to record
    cores_collapsed true and say 'cores with identical timelines ... drawn once'."""
    hw, result, _, _ = tpu_resnet
    assert hw.cores == 1 and tr.tl.n_slots(hw) == 1
    red = write_trace(result, hw, tmp_path / "r.json", max_events=bound)["reduction"]
    assert red["cores_collapsed"] is False and "collapse" not in red["level"], red
    assert "identical timelines" not in red["description"] and "cores" not in red["description"], red
    assert red["counter_windows_per_layer"] < tr.COUNTER_WINDOWS and "counters sampled" in red["description"]


def test_layer_selection_reports_traced_time_and_span(tmp_path, capsys, tpu_resnet):
    """Two layers far apart used to be reported as '257.4 us simulated': the span between them, not their time."""
    from conftest import cli

    hw, result, _, _ = tpu_resnet
    names = ["layer1.0.conv1", "fc"]
    stats = write_trace(result, hw, tmp_path / "two.json", layers=names)
    us = 1.0 / (hw.clock_ghz * 1e3)
    own = sum(k.cycles["total"] for k in result.layers if k.name in names) * us
    assert stats["traced_us"] == pytest.approx(own, abs=1e-3)
    assert stats["span_us"] > 5 * stats["traced_us"]
    code, _, err = cli(capsys, "trace", "--hw", HW / "tpu-like.yaml", "--workload", WL / "resnet18.yaml",
                       "--sparsity", "2:4", "--layer", names[0], "--layer", names[1], "-o", tmp_path / "c.json")
    assert code == 0
    assert f"{stats['traced_us']:,.1f} us traced over a {stats['span_us']:,.1f} us span" in err, err
    code, _, err = cli(capsys, "trace", "--hw", HW / "tpu-like.yaml", "--workload", WL / "resnet18.yaml",
                       "--sparsity", "2:4", "--layer", names[0], "-o", tmp_path / "c.json")
    assert code == 0 and " us traced;" in err and "span" not in err, err


def test_layer_selection_and_errors(tmp_path, tpu_resnet):
    hw, result, _, full = tpu_resnet
    stats = write_trace(result, hw, tmp_path / "one.json", layers=["layer1.0.conv1"])
    data = json.loads((tmp_path / "one.json").read_text())
    layers = [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == tr.LAYERS_PID]
    assert [e["name"] for e in layers] == ["layer1.0.conv1"] and stats["layers"] == 1
    same = [e for e in full["traceEvents"] if e["ph"] == "X" and e["args"].get("layer") == "layer1.0.conv1"]
    assert sorted(_ns(e) for e in same) == sorted(_ns(e) for e in data["traceEvents"]
                                                  if e["ph"] == "X" and "layer" in e["args"])
    with pytest.raises(ValueError, match="did you mean"):
        write_trace(result, hw, tmp_path / "bad.json", layers=["layer1.0.conv"])
    bare = run(load_workload(WL / "resnet18.yaml"), hw, "2:4")
    with pytest.raises(ValueError, match="keep_tiles"):
        write_trace(bare, hw, tmp_path / "bad.json")
    assert not list(tmp_path.glob("bad.json*")) and not list(tmp_path.glob(".bad.json*"))


def test_trace_command(tmp_path):
    out = tmp_path / "sub" / "trace.json"
    stats = trace_command(HW / "tpu-like.yaml", WL / "bert-base.yaml", out, sparsity="2:4",
                             layers=["encoder.0.ffn1", "encoder.0.softmax"], set_params=["seq=32"],
                             hw_set=["dram.bandwidth_gb_s=100"])
    data = json.loads(out.read_text())
    assert stats["events"] == len(data["traceEvents"]) and stats["bytes"] == out.stat().st_size
    assert stats["reduction"]["max_events"] == tr.DEFAULT_MAX_EVENTS
    assert data["otherData"]["sparsity"] == "2:4" and data["otherData"]["layers"] == ["encoder.0.softmax",
                                                                                     "encoder.0.ffn1"]
    assert stats["total_cycles"] > 0


@pytest.mark.parametrize("value", ["-3", "x"])
def test_negative_or_non_numeric_max_events_is_a_usage_error(tmp_path, capsys, value):
    """--max-events -3 used to mean 'no bound' silently; only 0 is documented as that."""
    from conftest import cli

    out = tmp_path / "t.json"
    with pytest.raises(SystemExit) as exc:  # an argparse usage error
        cli(capsys, "trace", "--hw", HW / "tpu-like.yaml", "--workload", WL / "bert-base-gemms.yaml",
            "--max-events", value, "-o", out)
    lines = capsys.readouterr().err.strip().splitlines()
    err = "\n".join(lines)
    assert exc.value.code == 2 and len(lines) == 1 and "--max-events" in lines[0] and ">= 0" in lines[0], err
    assert not out.exists()
    with pytest.raises(AccelsimError, match="max_events must be >= 0"):
        trace_command(HW / "tpu-like.yaml", WL / "bert-base-gemms.yaml", out, max_events=-1)
