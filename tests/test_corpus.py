"""Every hostile input found so far, kept as a regression corpus: one clear line per problem, exit 2.

``tests/corpus/index-*.yaml`` index the cases (the other files there are hostile inputs, never loaded
here): ``- {argv: [...], exit: 2, message: "substring"}``. Argument
placeholders: ``{corpus}`` (this folder), ``{tmp}`` (a fresh temporary directory), ``{HW}``
(hwconfigs/a100-like.yaml), ``{WL}`` (workloads/gemm-microbench.yaml), ``{ROOT}`` (the repository).
All cases run in one subprocess limited to 2 GB of address space, each with a 60 s deadline.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

CORPUS = ROOT / "tests" / "corpus"
ADDRESS_SPACE = 2 * 1024**3
MAX_PROBLEM_LINES = 11  # at most 10 problems, then "and N more"


def _entries() -> list[dict]:
    entries = []
    for index in sorted(CORPUS.glob("index-*.yaml")):
        for i, entry in enumerate(yaml.safe_load(index.read_text()) or []):
            entries.append({"id": f"{index.stem}[{i}]", **entry})
    return entries


ENTRIES = _entries()


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "corpus_runner.py")], input=json.dumps(ENTRIES),
                          capture_output=True, text=True, preexec_fn=_limit, timeout=60 * max(5, len(ENTRIES)),
                          cwd=ROOT)
    got = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            got[item["id"]] = item
    assert got or not ENTRIES, f"the corpus runner died: rc {proc.returncode}\n{proc.stderr[-3000:]}"
    return got


def test_corpus_is_not_empty() -> None:
    assert len(ENTRIES) >= 20
    for entry in ENTRIES:
        assert set(entry) >= {"argv", "exit", "message"}, entry["id"]
        for arg in entry["argv"]:
            if str(arg).startswith("{corpus}/"):
                assert (CORPUS / str(arg)[len("{corpus}/"):]).exists(), f"{entry['id']}: missing file {arg}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_corpus_case(entry: dict, outcomes: dict[str, dict]) -> None:
    got = outcomes.get(entry["id"])
    assert got is not None, f"{entry['id']} did not finish (crash or address-space limit in an earlier case?)"
    err = got["stderr"]
    assert "Traceback" not in err, err
    assert got["exit"] == entry["exit"], f"exit {got['exit']}, expected {entry['exit']}: {err}"
    text = err if entry["exit"] != 0 else got["stdout"] + err
    message = entry["message"].replace("{corpus}", str(CORPUS))
    assert message in text, f"{message!r} not in {text!r}"
    assert "\x1b" not in got["stdout"] + err, "control characters reach the terminal"
    if entry["exit"] == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        problems = [line for line in lines if not line.startswith("accelsim: warning:")]
        assert 1 <= len(problems) <= MAX_PROBLEM_LINES, err
