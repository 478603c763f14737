"""Hostile input to the newer commands (patterns, decide, serve on LLMs and systems, validate-hw's format /
timing columns, quantized and causal workloads, run -o): each test reproduces an input that crashed, ran out
of memory or gave a silently wrong answer, and checks the one-line error (exit 2) or the corrected output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from accelsim.analysis.measurements import MeasurementError, parse_measurements, read_measurements
from accelsim.analysis.patterns import MAX_LEVELS, parse_levels
from accelsim.cli import main
from accelsim.errors import AccelsimError, ConfigError
from accelsim.hardware.model import load_hardware
from accelsim.serving import ServingError
from accelsim.serving.arrivals import parse_size_spec, read_trace, trace_column
from accelsim.serving.request import ServeRequest, serve
from accelsim.simulation import run
from accelsim.workloads.model import workload_from_dict

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hwconfigs"
WL = ROOT / "workloads"
A100 = HW / "a100-like.yaml"
PREFIX = "accelsim: error: "
HEADER = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes"


def one_line(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    """Run the CLI in-process: exit 2, nothing on stdout, one error line, no traceback."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == "" and "Traceback" not in err
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    return lines[0]


# -- fused attention: bounded memory ---------------------------------------------------------------------

@pytest.mark.parametrize(("sets", "what"), [
    (["seq=1000000"], "pipeline steps"),  # used to allocate ~25 GB, then MemoryError (a traceback)
    (["seq=256", "batch=8000000"], "CTAs (causal CTAs are scheduled one by one)"),  # 64 M of them
])
def test_fused_attention_past_its_caps_is_one_line(capsys: pytest.CaptureFixture[str], sets: list[str],
                                                   what: str) -> None:
    args = [a for s in sets for a in ("--set", s)]
    line = one_line(capsys, "run", "--hw", A100, "--workload", WL / "llama3-8b-prefill.yaml", *args)
    assert "attention.form: layer 'layers.0.scores'" in line and f" {what}, more than the " in line
    assert "attention.form: unfused" in line


# -- a mistyped number in a config with provenance ---------------------------------------------------------

def test_mistyped_number_named_before_provenance(tmp_path: Path) -> None:
    text = (HW / "8xh100-like.yaml").read_text()
    text = text.replace("device: h100-like.yaml", f"device: {HW / 'h100-like.yaml'}")
    bad = tmp_path / "sys.yaml"
    bad.write_text(text.replace("devices: 8 ", 'devices: "8" ', 1))
    with pytest.raises(ConfigError, match=r"sys\.yaml: devices: should be a valid integer, got '8'$"):
        load_hardware(bad)
    bad.write_text(text.replace("link_bandwidth_gbs: 25 ", "link_bandwidth_gbs: true ", 1))
    with pytest.raises(ConfigError, match="interconnect.link_bandwidth_gbs: should be a valid number, got True"):
        load_hardware(bad)


# -- patterns --levels -----------------------------------------------------------------------------------

def test_levels_bounded_ascii_and_distinct_as_shown() -> None:
    assert parse_levels("50%, 87.5%") == (0.5, 0.875)
    with pytest.raises(AccelsimError, match="50% is given twice"):  # one label each: 50%, 0.5 and 50.0000001%
        parse_levels("50%, 0.5, 50.0000001%, 87.5%")
    with pytest.raises(AccelsimError, match=f"at most {MAX_LEVELS}"):  # 999 levels ran for minutes
        parse_levels(",".join(f"{i / 1000}" for i in range(1, 1000)))
    with pytest.raises(AccelsimError, match="shows as 100% at six significant digits"):
        parse_levels("99.99999%")
    with pytest.raises(AccelsimError, match="ASCII digits"):
        parse_levels("\uff15\uff10%")  # full-width 50: float() reads it


# -- serve / decide: inputs serving would override or ignore ---------------------------------------------

@pytest.mark.parametrize(("item", "expect"), [
    ("batch=7", "batch: --set gives 7, but serving sets the batch per batch"),
    ("seq=127.5", "seq: --set gives 127.5: expected a whole number of tokens"),
])
def test_serve_refuses_set_values_it_would_replace(capsys: pytest.CaptureFixture[str], item: str,
                                                   expect: str) -> None:
    line = one_line(capsys, "serve", "--hw", A100, "--workload", WL / "bert-base.yaml", "--rate", "100",
                    "--duration", "1", "--set", item)
    assert "bert-base.yaml: " + expect in line


def _variants(tmp_path: Path, **edits: str) -> Path:
    text = (ROOT / "examples" / "variants-llama2.yaml").read_text().replace("../workloads/", f"{WL}/")
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "v.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("edit", "expect"), [
    ({'prompt_tokens: "fixed:512"': 'prompt_tokens: "fixed:0"'}, "v.yaml: prompt_tokens: size spec"),
    ({'output_tokens: "fixed:128"': 'output_tokens: "uniform:9:1"'}, "v.yaml: output_tokens: size spec"),
    ({"sparsity: dense": "sparsity: dense\n    set: {batch: 4}"}, "v.yaml: variants.0.set.batch: serving sets"),
    ({"latency: tpot": "latency: tpot\nsizes: fixed:64"}, "v.yaml: sizes: LLM variant 'llama2-7b-dense' (with a "
                                                          "decode_workload) takes its sizes from prompt_tokens"),
    ({"sparsity: dense": "sparsity: dense\n    set: {kv_len: 10.5}"}, "v.yaml: variants.0.set.kv_len: expected a "
                                                                    "whole number of tokens, got 10.5"),
])
def test_variants_file_checked_on_load(capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: dict[str, str],
                                       expect: str) -> None:
    line = one_line(capsys, "decide", "--hw", A100, "--variants", _variants(tmp_path, **edit), "--requests", "10")
    assert expect in line


@pytest.mark.parametrize("spec", ["choice:128,256@nan,1", "choice:128,256@inf,1", {"kind": "fixed", "value": "x"},
                                  {"kind": "uniform", "low": 1, "high": float("inf")}])
def test_size_spec_non_numbers_refused(spec: Any) -> None:
    with pytest.raises(ServingError, match="size spec"):  # were a ValueError / OverflowError traceback
        parse_size_spec(spec)


@pytest.mark.parametrize(("kw", "expect"), [
    ({"workload": WL / "llama3-8b-prefill.yaml", "sizes": "fixed:128"}, "--sizes: .* is an LLM workload"),
    ({"workload": WL / "bert-base.yaml", "prompt_tokens": "fixed:128"}, "--prompt-tokens: .* is served one-shot"),
    ({"workload": WL / "bert-base.yaml", "output_tokens": "fixed:8"}, "--output-tokens: .* is served one-shot"),
    ({"workload": WL / "llama3-8b-prefill.yaml", "prompt_tokens": "choice:1,2@nan,1"}, "--prompt-tokens: size spec"),
])
def test_serve_refuses_size_flags_it_would_ignore(kw: dict[str, Any], expect: str) -> None:
    with pytest.raises(ServingError, match=expect):
        serve(ServeRequest(hw=A100, rate=2.0, duration_s=1.0, **kw))


def test_trace_files_hostile(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"\xff\xfe\x00arrival_s")
    with pytest.raises(ConfigError, match="t.csv: not UTF-8 text"):  # was a UnicodeDecodeError traceback
        read_trace(p)
    p.write_text("arrival_s,seq\n0.0," + "1" * 200_000 + "\n")
    with pytest.raises(ConfigError, match="t.csv: not a readable CSV trace"):  # was a csv.Error traceback
        read_trace(p)
    p.write_bytes(b"\xef\xbb\xbfarrival_s,seq\n0.0,128\n0.5,256\n")  # a spreadsheet's BOM
    assert list(trace_column(read_trace(p), ["seq"], str(p))) == [128, 256]  # type: ignore[arg-type]
    for body, expect in (("0.0,128\n0.1,abc\n", "seq: row 2 after the header: expected a number of tokens, "
                                                 "got 'abc'"),
                         ("0.0,128\n0.1\n", "seq: row 2 after the header: expected a number of tokens, got ''"),
                         ("0.0,1000000000\n", "seq: a request of 1,000,000,000 tokens is above the limit")):
        p.write_text("arrival_s,seq\n" + body)  # the column used to be dropped: every request at the default size
        with pytest.raises(ConfigError, match=re.escape(expect)):
            trace_column(read_trace(p), ["seq"], str(p))


def test_serve_title_names_the_replayed_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "arrivals.csv"
    trace.write_text("arrival_s,seq\n0.0,128\n0.5,128\n1.0,128\n")
    assert main(["serve", "--hw", str(A100), "--workload", str(WL / "bert-base.yaml"), "--trace", str(trace)]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert title == ("SERVING  bert-base on a100-like, trace arrivals.csv (3 requests, 2 req/s) (seed 0, "
                     "variability off)")


# -- validate-hw measurement CSVs ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expect"), [
    (HEADER + "\nA100,fp16,64,64,64,4,5,0.8,s," + "x" * 200_000 + "\n",  # was a csv.Error traceback
     "line 2: not valid CSV (field larger than field limit"),
    (HEADER + ",gpu\nA100,fp16,64,64,64,4,5,0.8,s,kernel-gemm,H100\n", "header: column(s) gpu appear more than once"),
    (HEADER + "\nA100,fp16,64,64,64,4,5,9.0,s,kernel-gemm\n",
     "line 2, column speedup: 9 disagrees with dense_time_us / sparse_time_us = 0.8"),
])
def test_measurement_csv_hostile(text: str, expect: str) -> None:
    with pytest.raises(MeasurementError, match=re.escape(expect)):
        parse_measurements(text, "m.csv")


def test_measurement_csv_old_mac_line_endings(tmp_path: Path) -> None:
    p = tmp_path / "cr.csv"
    p.write_bytes((HEADER + "\rA100,fp16,64,64,64,4,5,0.8,s,kernel-gemm\r").encode())
    assert [r.speedup for r in read_measurements(p)] == [0.8]


def test_validate_hw_out_must_be_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + "\nA100,fp16,256,256,256,5.2,6.9,0.754,s,kernel-gemm\n")
    line = one_line(capsys, "validate-hw", csv, "--hw-map", f"A100={A100}", "--out", csv)
    assert line == f"{PREFIX}--out {csv}: exists and is not a folder (--out takes a directory)"
    assert csv.read_text().startswith(HEADER)


# -- quantized workloads: the dense baseline ------------------------------------------------------------------

def test_quantized_sparse_run_dense_baseline_is_the_dense_run() -> None:
    hw = load_hardware(A100)
    model = workload_from_dict({"name": "q", "dtype": "bf16", "quantization": {"weights": "int8"}, "layers": [
        {"name": "fc1", "op": "gemm", "m": 3072, "n": 512, "k": 768},
        {"name": "fc2", "op": "gemm", "m": 768, "n": 512, "k": 3072}]})
    sparse, dense = run(model, hw, "2:4"), run(model, hw, "dense")
    # C of an int8 linear is written in bf16 on both runs (the baseline wrote it in int8: report crashed)
    assert sparse.dense_total_cycles == dense.total_cycles
    assert [lay.dense_cycles for lay in sparse.layers] == [lay.cycles["total"] for lay in dense.layers]


# -- run -o naming an input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "trace"])
def test_run_output_must_not_replace_an_input(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              command: str) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text((WL / "gemm-microbench.yaml").read_text())
    before = wl.read_text()
    line = one_line(capsys, command, "--hw", A100, "--workload", wl, "-o", tmp_path / "." / "w.yaml")
    assert line.endswith("cannot write: it is this command's --workload input (the result would replace it); "
                         "write elsewhere")
    assert wl.read_text() == before


@pytest.mark.parametrize("command", [
    ["run", "--workload", str(WL / "gemm-microbench.yaml")],
    ["trace", "--workload", str(WL / "gemm-microbench.yaml")],
    ["reality-check", "--workload", str(WL / "gemm-microbench.yaml")],
    ["functional-check", "--m", "16", "--n", "16", "--k", "32", "--pattern", "2:4"],
])
def test_output_must_not_replace_a_file_the_hw_extends(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       command: list[str]) -> None:
    """-o naming the family file a.yaml's ``extends`` reads (not a top-level input) replaced it, rc 0."""
    (tmp_path / "families").mkdir()
    family = tmp_path / "families" / "ampere-datacenter.yaml"
    family.write_bytes((HW / "families" / "ampere-datacenter.yaml").read_bytes())
    hw = tmp_path / "hw.yaml"
    hw.write_bytes(A100.read_bytes())
    before = family.read_bytes()
    line = one_line(capsys, command[0], "--hw", hw, *command[1:], "-o", family)
    assert line == (f"{PREFIX}{family}: cannot write: it is a file this command reads ({family}, pulled in by one of "
                    "its inputs; the result would replace it); write elsewhere")
    assert family.read_bytes() == before


def test_written_files_refuse_what_the_command_read(tmp_path: Path) -> None:
    """fileio: within inputs_protected, every config read (note_read) is protected from write_all and atomic_open."""
    from accelsim.errors import OutputError
    from accelsim.fileio import atomic_open, inputs_protected, write_all

    (tmp_path / "families").mkdir()
    family = tmp_path / "families" / "ampere-datacenter.yaml"
    family.write_bytes((HW / "families" / "ampere-datacenter.yaml").read_bytes())
    hw = tmp_path / "hw.yaml"
    hw.write_bytes(A100.read_bytes())
    with inputs_protected([hw]):
        load_hardware(hw)
        with pytest.raises(OutputError, match="a file this command reads"):
            write_all({family: "x"})
        with pytest.raises(OutputError, match="a file this command reads"), atomic_open(family) as fh:
            fh.write("x")
        write_all({tmp_path / "ok.txt": "fine"})
    assert (tmp_path / "ok.txt").read_text() == "fine"


@pytest.mark.parametrize("command", [["decide", "--variants", str(ROOT / "examples" / "variants-bert.yaml")],
                                     ["serve", "--workload", str(WL / "bert-base.yaml"), "--rate", "10"]])
def test_directory_outputs_refuse_a_file_before_simulating(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           command: list[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep")
    line = one_line(capsys, command[0], "--hw", A100, *command[1:], "-o", afile)
    assert line == f"{PREFIX}{afile}: cannot write: exists and is not a folder (-o takes a directory)"
    assert afile.read_text() == "keep"


@pytest.mark.parametrize(("path", "kind"), [(A100, "a hardware config (it has 'core')"),
                                            (WL / "bert-base.yaml", "a workload file (it has 'layers')")])
def test_decide_names_the_wrong_kind_of_file(capsys: pytest.CaptureFixture[str], path: Path, kind: str) -> None:
    line = one_line(capsys, "decide", "--hw", A100, "--variants", path)  # was ten 'unknown key' lines
    assert line == f"{PREFIX}{path}: this is {kind}, expected a variants file (with 'variants')"


def test_patterns_says_which_element_types_it_held() -> None:
    from accelsim.analysis.patterns import held_fixed

    model = workload_from_dict({"name": "q", "dtype": "bf16", "quantization": {"weights": "int8", "layers": ["fc1"]},
                                "layers": [{"name": "fc1", "op": "gemm", "m": 64, "n": 64, "k": 64},
                                           {"name": "fc2", "op": "gemm", "m": 64, "n": 64, "k": 64}]})
    assert held_fixed(model).endswith("; element type bf16 (int8 weights on 1 quantized linears)")


def test_validate_hw_says_why_a_format_does_not_parse(tmp_path: Path) -> None:
    from accelsim.cli.validate_hw import validate_hw_command

    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + ",format\nA100,fp16,256,256,256,5.2,6.9,0.754,s,kernel-gemm,unstructured:150%\n")
    code, text = validate_hw_command(csv, [f"A100={A100}"])
    assert code == 1  # nothing scored
    assert ("1 row(s) not scored, their format does not parse here (unstructured:150%: sparsity 150% in "
            "'unstructured:150%' must be below 100%") in text  # was 'not registered in this accelsim'


@pytest.mark.parametrize(("sets", "expect"), [
    (["kv_len=2048"], "llama3-8b-decode.yaml: kv_len: --set gives 2048, but each decode step's kv_len is its "
                      "request's"),
    (["seq=2048"], "--set seq and --prompt-tokens both give the prompt lengths"),
])
def test_llm_serve_refuses_sets_it_would_ignore(sets: list[str], expect: str) -> None:
    with pytest.raises(AccelsimError, match=re.escape(expect)):
        serve(ServeRequest(hw=A100, workload=WL / "llama3-8b-prefill.yaml", rate=2.0, duration_s=1.0,
                           set_params=sets, prompt_tokens="fixed:512"))


def test_one_shot_variants_refuse_prompt_tokens(tmp_path: Path) -> None:
    from accelsim.serving.variants import load_variants

    text = (ROOT / "examples" / "variants-bert.yaml").read_text().replace("rate_rps: 1200", "rate_rps: 1200\n"
                                                                          "prompt_tokens: fixed:64")
    path = tmp_path / "v.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="v.yaml: prompt_tokens: one-shot variant 'bert-base-dense' "):
        load_variants(path)  # decide ignored it: one-shot variants draw their sizes from 'sizes'


@pytest.mark.parametrize("item", ["system.device=a100-like.yaml", "system={name: x, devices: 2, device: a.yaml}"])
def test_hw_set_cannot_swap_a_systems_device(item: str) -> None:
    # the run kept h100-like while the result said "system: 8 x a100-like.yaml"
    with pytest.raises(ConfigError, match="cannot swap a system's device"):
        load_hardware(HW / "8xh100-like.yaml", [item])
    assert load_hardware(HW / "8xh100-like.yaml", ["system.devices=2"]).devices == 2


def test_sweep_key_cannot_swap_a_systems_device() -> None:
    from accelsim.sweep import spec_from_dict

    with pytest.raises(ConfigError, match=r"grid\.system\.device: grid point 0 .*cannot swap a system's device"):
        spec_from_dict({"name": "s", "hardware": str(HW / "8xh100-like.yaml"),
                        "workloads": [str(WL / "gemm-microbench.yaml")], "grid": {"system.device": ["a100-like.yaml"]}})


def test_llm_run_output_tokens_bounded() -> None:
    # 1e5 requests x 32,768 tokens decode step by step: hours (it ran past every timeout)
    with pytest.raises(ServingError, match=r"requests would generate 3,\d{3},\d{3},\d{3} output tokens, more than the "
                                           r"100,000,000 one LLM run simulates"):
        serve(ServeRequest(hw=A100, workload=WL / "llama3-8b-prefill.yaml", rate=1000.0, duration_s=100.0,
                           prompt_tokens="fixed:128", output_tokens="fixed:32768"))


def test_serve_passes_on_the_split_warnings(tmp_path: Path) -> None:
    text = (HW / "8xh100-like.yaml").read_text().replace("device: h100-like.yaml", f"device: {HW / 'h100-like.yaml'}")
    system = tmp_path / "5x.yaml"
    system.write_text(text.replace("devices: 8 ", "devices: 5 ", 1))
    res = serve(ServeRequest(hw=system, workload=WL / "llama2-13b-prefill.yaml", rate=2.0, duration_s=2.0))
    # run warned that 5 devices (which split the 40 heads whole) do not divide the MLP; serve said nothing
    assert ("llama2-13b-decode: gate_proj m 13824 is not divisible by 5 devices: rounded up to the largest shard "
            "(40 layer(s))") in res.warnings
    assert not any("energy" in w for w in res.warnings)  # serving reports no energy


# -- attention.q_heads_stacked without a causal mask ----------------------------------------------------------

@pytest.mark.parametrize("attention", ["{mask: none, q_heads_stacked: 4}", "{q_heads_stacked: 4}"])
def test_q_heads_stacked_needs_a_causal_mask(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             attention: str) -> None:
    """Stacked query heads only set a causal mask's per-head offset: with mask none they used to be ignored."""
    text = (WL / "llama3-8b-prefill.yaml").read_text()
    assert "  mask: causal " in text
    path = tmp_path / "gqa.yaml"
    lines = [line for line in text.splitlines() if not line.startswith(("attention:", "  mask:", "  q_heads_stacked:"))]
    path.write_text("\n".join([*lines, f"attention: {attention}", ""]))
    line = one_line(capsys, "run", "--hw", A100, "--workload", path)
    assert line == (f"{PREFIX}{path}: attention.q_heads_stacked: 4 query heads stacked, but stacking applies to "
                    "mask: causal only (it sets the query tokens per head a causal mask offsets); mask is none: drop "
                    "the key or set mask: causal")
