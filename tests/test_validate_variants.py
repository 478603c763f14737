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
