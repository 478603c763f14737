"""`accelsim validate` on a variants file runs the checks decide and serve run before simulating (registry
references, the latency metric against LLM variants, each variant's set parameters), with their messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import HW, ROOT, WL, cli, one_line_error

from accelsim.errors import ConfigError
from accelsim.serving.variants import check_variants

A100 = HW / "a100-like.yaml"
LLAMA7_WANDA = "wanda:llama-2-7b:wikitext-2:2:4:wanda"
TINY = {"name": "tiny", "dtype": "fp16", "params": {"batch": 1, "seq": 16},
        "layers": [{"name": "fc", "op": "gemm", "m": 64, "n": "batch * seq", "k": 64}]}


def _file(tmp_path: Path, variant: dict[str, Any], **top: Any) -> Path:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"rate_rps": 10, "budget_ms": 10, "requests": 20, **top,
                                    "variants": [{"name": "a", "workload": "tiny.yaml", **variant}]}))
    return path


BAD = {
    "unknown registry entry": ({"quality": {"entry": "nope:none"}}, {},
                               "variants.0.quality: quality registry: no entry 'nope:none'"),
    "unknown set parameter": ({"set": {"nonexistent": 4}}, {},
                              "tiny.yaml: nonexistent: --set names an unknown parameter (this workload has: batch, "
                              "seq)"),
    "tpot on a one-shot variant": ({}, {"latency": "tpot"},
                                   "variants.0.decode_workload: latency: tpot needs an LLM variant (a decode "
                                   "workload)"),
    "kv_len set on an LLM variant": ({"workload": str(WL / "llama2-7b-prefill.yaml"),
                                      "decode_workload": str(WL / "llama2-7b-decode.yaml"), "set": {"kv_len": 64}},
                                     {}, "kv_len: --set gives 64, but each decode step's kv_len is its request's"),
    "missing decode workload": ({"decode_workload": "nowhere.yaml"}, {},
                                "variants.0(a).decode_workload: nowhere.yaml: file not found"),
    # audit: a folder was "file not found"; a workload's own error named neither the variants file nor the key
    "workload is a folder": ({"workload": "."}, {}, "variants.yaml: variants.0(a).workload: .: a folder, not a "
                             "workload file"),
    "workload is not a workload": ({"workload": "variants.yaml"}, {},
                                   "variants.yaml: variants.0(a).workload: workload variants.yaml: "),
    "set parameter the workload cannot take": (
        {"set": {"seq": 10**11}}, {},
        "variants.yaml: variants.0(a).set: workload tiny.yaml with set {'seq': 100000000000}: "),
    # audit: the file's metric was silently replaced by the first registry figure's, and a Llama entry accepted
    # for a BERT workload
    "registry figure in another metric than the file's": (
        {"workload": str(WL / "bert-base.yaml"), "sparsity": "2:4", "quality": {"entry": LLAMA7_WANDA}},
        {"metric": "SQuAD v1.1 F1"},
        "variants.0.quality: measures 'WikiText-2 perplexity', the file's metric is 'SQuAD v1.1 F1'"),
    "registry entry for another model than the workload's": (
        {"workload": str(WL / "bert-base.yaml"), "sparsity": "2:4", "quality": {"entry": LLAMA7_WANDA}}, {},
        f"variants.0.quality: registry entry '{LLAMA7_WANDA}' is for Llama-2-7B, the variant's workload "
        f"{WL / 'bert-base.yaml'} is BERT-base (matched by workload name)"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_validate_refuses_what_decide_refuses_with_its_message(what: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    variant, top, message = BAD[what]
    path = _file(tmp_path, variant, **top)
    rc, out, err = cli(capsys, "validate", path)
    line = one_line_error(err)
    assert rc == 2 and out == "" and message in line, line
    rc, _, err = cli(capsys, "decide", "--hw", A100, "--variants", path)
    assert rc == 2 and one_line_error(err) == line  # the same check, the same line, before anything is simulated


def test_serve_refuses_the_same_set_parameter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, {"set": {"nonexistent": 4}})
    rc, _, err = cli(capsys, "serve", "--hw", A100, "--workload", tmp_path / "tiny.yaml", "--rate", 10,
                     "--duration", 1, "--variants", path, "--budget-ms", 10)
    assert rc == 2 and "nonexistent: --set names an unknown parameter" in one_line_error(err)


def test_a_good_variants_file_still_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, {"set": {"seq": 32}, "quality": 80.0})
    rc, out, err = cli(capsys, "validate", path)
    assert rc == 0 and out == f"{path}: ok (variants, 1)\n", err


@pytest.mark.parametrize("name", ["variants-bert.yaml", "variants-llama2.yaml"])
def test_the_example_variants_files_pass_every_check(name: str) -> None:
    checked = check_variants(ROOT / "examples" / name)
    assert all(f is not None and f.entry for f in checked.figures)  # every figure from the registry
    assert checked.higher_is_better is (name == "variants-bert.yaml")  # F1 up, perplexity down


def test_check_variants_names_the_file_and_key(tmp_path: Path) -> None:
    path = _file(tmp_path, {}, latency="ttft")
    with pytest.raises(ConfigError) as exc:
        check_variants(path)
    assert str(path) in str(exc.value) and "variants.0.decode_workload" in str(exc.value)


def test_an_entry_whose_model_cannot_be_matched_is_noted(tmp_path: Path) -> None:
    """A workload named like no registry model ('tiny') cannot be checked against its entry: a note says so."""
    checked = check_variants(_file(tmp_path, {"sparsity": "2:4", "quality": {"entry": LLAMA7_WANDA}}))
    assert checked.figures[0] is not None and checked.figures[0].entry == LLAMA7_WANDA
    assert checked.quality_notes == (f"workload 'tiny' (tiny.yaml) matches no quality registry model, so entry "
                                     f"{LLAMA7_WANDA} (for Llama-2-7B) is not checked against it",)
