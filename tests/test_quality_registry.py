"""The quality registry: sourced dense-vs-sparse figures, checked on load, listed by `accelsim quality list`,
and the deployment guardrail that checks a run's format against the published drop."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accelsim.analysis.deployment_quality import quality_guard, registry_evidence
from accelsim.cli import main
from accelsim.errors import AccelsimError, ConfigError
from accelsim.formats import parse_format
from accelsim.quality import COLUMNS, QualityEntry, entry, find_entries, load_registry, read_registry, read_source
from accelsim.workloads.model import workload_from_dict

HEADER = ",".join(COLUMNS)
GOOD = ("BERT-base,BERT,SQuAD v1.1,F1,true,88.54,88.31,unstructured:90%,oBERT,true,fp32,"
        "\"Kurtic et al. 2022, Table 1\",published,")


def _tiny(name: str, quality: dict | None = None) -> object:
    spec = {"name": name, "dtype": "fp16", "layers": [{"name": "g", "op": "gemm", "m": 64, "n": 64, "k": 64}]}
    if quality is not None:
        spec["quality"] = quality
    return workload_from_dict(spec)


# ------------------------------------------------------------------------------------------- the shipped data

def test_registry_size_families_formats_and_kinds() -> None:
    entries = load_registry()
    published = [e for e in entries if e.kind == "published"]
    assert len(published) >= 40
    assert len({e.family for e in entries}) >= 6
    assert len({e.format for e in entries}) >= 3
    assert {"nm", "block", "unstructured"} <= {type(parse_format(e.format)).key for e in entries}  # format families
    assert {e.kind for e in entries} <= {"published", "derived"}
    assert all(e.derivation for e in entries if e.kind == "derived")
    assert all(e.source and e.method and e.dtype for e in entries)


def test_every_format_parses_and_ids_are_unique() -> None:
    entries = load_registry()
    assert len({e.id for e in entries}) == len(entries)
    for e in entries:
        fmt = parse_format(e.format)
        assert fmt is not None and str(fmt) == e.format
        assert e.sparsity == pytest.approx(1.0 - fmt.density)
        assert e.id.startswith(e.source_key + ":")


@pytest.mark.parametrize(("ident", "dense", "sparse"), [
    # Wanda README (github.com/locuslab/wanda), "Pruning LLaMA-2" table: llama2-7b dense 5.12, 2:4 wanda 11.02
    ("wanda:llama-2-7b:wikitext-2:2:4:wanda", 5.12, 11.02),
    # same table: llama2-70b 4:8 sparsegpt 4.59 vs dense 3.12
    ("wanda:llama-2-70b:wikitext-2:4:8:sparsegpt", 3.12, 4.59),
    # oBERT README Table 1: BERT-base SQuAD F1 88.54 dense, 90 % unstructured, 30 epochs 88.31
    ("obert:bert-base:squad-v1.1:unstructured:90%:obert-gradual-downstream-pruning-30-epochs", 88.54, 88.31),
    # NVIDIA ASP white paper table (as in the PyTorch 2:4 tutorial): ResNet-50 top-1 76.1 dense, 76.2 2:4
    ("asp_mishra2021:resnet-50:imagenet:2:4:asp-one-shot-magnitude-2-4-pruning-then-retraining", 76.1, 76.2),
    # OWL README: LLaMA-V1 7B at 70 %, SparseGPT (uniform) 26.30 vs dense 5.68
    ("owl:llama-7b:wikitext-validation:unstructured:70%:sparsegpt-uniform", 5.68, 26.30),
])
def test_spot_values_equal_their_published_figures(ident: str, dense: float, sparse: float) -> None:
    e = entry(ident)
    assert (e.dense, e.sparse) == (dense, sparse)
    assert e.kind == "published"


def test_delta_and_drop_follow_the_metric_direction() -> None:
    ppl = entry("wanda:llama-2-7b:wikitext-2:2:4:wanda")  # lower is better
    assert ppl.delta == pytest.approx(5.90) and ppl.drop == pytest.approx(5.90)
    f1 = entry("obert:bert-base:squad-v1.1:unstructured:90%:obert-gradual-downstream-pruning-30-epochs")
    assert f1.delta == pytest.approx(-0.23) and f1.drop == pytest.approx(0.23)
    data = ppl.to_dict()
    assert data["drop"] == pytest.approx(5.9) and list(data)[-2:] == ["delta", "drop"]


def test_find_entries_matches_names_after_normalisation() -> None:
    a = find_entries(model="llama2_7b", format="2:4")
    assert a and a == find_entries(model="LLaMA-2 7B", format="2:4") and {e.model for e in a} == {"Llama-2-7B"}
    assert all(e.format == "2:4" for e in a)
    assert {e.model for e in find_entries(model="vit-b16")} == {"ViT-B/16"}
    assert find_entries(model="no-such-model") == ()
    assert {e.task for e in find_entries(model="bert-base", format="unstructured:90%", task="squad_v1.1")} == \
        {"SQuAD v1.1"}
    with pytest.raises(AccelsimError, match="format"):
        find_entries(format="3:4:5:6")


def test_unknown_id_names_it_and_suggests_close_ones() -> None:
    with pytest.raises(AccelsimError) as exc:
        entry("wanda:llama-2-7b:wikitext-2:2:4:wandaa")
    text = str(exc.value)
    assert "'wanda:llama-2-7b:wikitext-2:2:4:wandaa'" in text and "did you mean" in text
    assert "wanda:llama-2-7b:wikitext-2:2:4:wanda'" in text and "\n" not in text


# ------------------------------------------------------------------------------------------- validation

@pytest.mark.parametrize(("row", "column", "words"), [
    (GOOD.replace(",88.31,", ",eighty,"), "sparse", "expected a number"),
    (GOOD.replace(",88.54,", ",nan,"), "dense", "finite"),
    (GOOD.replace("unstructured:90%", "3:2"), "format", "3:2"),
    (GOOD.replace("unstructured:90%", "dense"), "format", "dense"),
    (GOOD.replace(",true,88.54", ",yes,88.54"), "higher_is_better", "true or false"),
    (GOOD.replace(",published,", ",derived,"), "derivation", "derived"),
    (GOOD.replace(",published,", ",guessed,"), "kind", "published, derived"),
    (GOOD.replace("BERT-base,", ",", 1), "model", "empty"),
])
def test_a_bad_row_is_one_line_naming_file_line_and_column(row: str, column: str, words: str) -> None:
    with pytest.raises(ConfigError) as exc:
        read_source("mine.csv", f"{HEADER}\n{GOOD}\n{row}\n")
    lines = exc.value.lines()
    assert len(lines) == 1 and lines[0].startswith(f"mine.csv:3: {column}: ") and words in lines[0]


def test_a_bad_header_and_a_short_row_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"^mine.csv:1: header: missing derivation"):
        read_source("mine.csv", HEADER.removesuffix(",derivation") + "\n")
    with pytest.raises(ConfigError, match=r"^mine.csv:2: expected 14 columns"):
        read_source("mine.csv", f"{HEADER}\nBERT-base,BERT\n")


def test_duplicate_ids_across_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(f"{HEADER}\n{GOOD}\n{GOOD}\n")
    with pytest.raises(ConfigError, match="a.csv: id: duplicate entry 'a:bert-base:squad-v1.1:unstructured:90%:obert'"):
        read_registry(tmp_path)
    (tmp_path / "a.csv").write_text(f"{HEADER}\n{GOOD}\n")
    (tmp_path / "b.csv").write_text(f"{HEADER}\n{GOOD}\n")
    assert [e.id.split(":")[0] for e in read_registry(tmp_path)] == ["a", "b"]


def test_bad_registry_row_through_the_cli_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    import accelsim.quality.registry as reg
    (tmp_path / "x.csv").write_text(f"{HEADER}\n{GOOD.replace(',88.31,', ',n/a,')}\n")
    monkeypatch.setattr(reg, "DATA", tmp_path)
    reg.load_registry.cache_clear()
    try:
        assert main(["quality", "list"]) == 2
    finally:
        monkeypatch.undo()
        reg.load_registry.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["accelsim: error: x.csv:2: sparse: expected a number, got 'n/a'"]


# ------------------------------------------------------------------------------------------- the CLI

def test_quality_list_json_has_the_issue_fields_in_a_stable_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quality", "list", "--format", "json"]) == 0
    first = capsys.readouterr().out
    assert main(["quality", "list", "--format", "json"]) == 0
    assert capsys.readouterr().out == first
    data = json.loads(first)
    assert len(data) == len(load_registry())
    need = {"model", "family", "task", "metric", "dense", "sparse", "format", "finetuned", "source"}
    assert all(need <= set(d) for d in data)
    assert [d["id"] for d in data] == [e.id for e in load_registry()]


def test_quality_list_filters_and_text_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quality", "list", "--model", "llama2-7b", "--sparsity", "2:4", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["method"] for d in data} == {"magnitude", "SparseGPT", "Wanda"}
    assert main(["quality", "list", "--model", "bert-large"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["model", "task", "format"]
    assert "BERT-Large" in text and "1 entries (1 published, 0 derived)" in text and "sources:" in text
    assert main(["quality", "list", "--model", "bert-base", "--sparsity", "2:4"]) == 0
    sources = capsys.readouterr().out.split("sources:\n")[1].splitlines()
    # an author alone ("J. Cai") does not identify a source: its title comes with it (commas in brackets kept)
    assert sources == ["  pytorch_semi_structured: J. Cai, PyTorch tutorial 'Accelerating BERT with semi-structured "
                       "(2:4) sparsity'"]


@pytest.mark.parametrize(("source", "citation"), [
    ("Kurtic et al. 2022, The Optimal BERT Surgeon, Table 1", "Kurtic et al. 2022"),
    ("Sun et al. 2024 (Wanda), A Simple and Effective Pruning Approach", "Sun et al. 2024 (Wanda)"),
    ("PyTorch torchao, torchao/sparsity/README.md, Benchmarks", "PyTorch torchao, torchao/sparsity/README.md"),
    ("O'Brien, 'A, B and C' (notes, v2), section 3", "O'Brien, 'A, B and C'"),
    ("Lab notes", "Lab notes"),
])
def test_a_source_citation_is_a_recognisable_short_name(source: str, citation: str) -> None:
    assert dataclasses.replace(_fake("paper_a", "ASP", 89.0), source=source).citation == citation


# ------------------------------------------------------------------------------------------- the guardrail

def test_guardrail_uses_the_published_drop_for_the_model_and_format() -> None:
    g = quality_guard(_tiny("bert-large"), "2:4", 0.5)
    assert g.drop_source == "registry" and g.status == "ok"
    assert g.evidence.chosen == ("asp_mishra2021:bert-large:squad-v1.1:2:4:"
                                 "asp-one-shot-magnitude-2-4-pruning-then-retraining")
    assert (g.dense, g.value, g.drop) == (91.9, 91.9, 0.0)
    assert "published [asp_mishra2021:bert-large" in g.message and "Mishra et al. 2021" in (g.source or "")
    head = g.guardrail()
    assert head.drop_source == "registry" and head.evidence == g.evidence.chosen and head.conflicts == 0
    # a decode workload matches its model with the phase suffix dropped, and the smallest published drop is used
    g = quality_guard(_tiny("llama2-7b-decode"), "2:4", 3.0)
    assert g.evidence.model == "Llama-2-7B" and g.evidence.matched_by == "workload name without '-decode'"
    assert g.status == "breach" and g.drop == pytest.approx(10.17 - 5.12)  # SparseGPT, the best of three methods
    assert len(g.evidence.entries) == 3 and list(g.evidence.drops) == sorted(g.evidence.drops)


def test_guardrail_says_when_nothing_is_published() -> None:
    g = quality_guard(_tiny("resnet18"), "2:4", 1.0)
    assert g.status == "missing" and g.evidence.chosen is None
    assert "no model in the quality registry matches workload 'resnet18'" in g.message
    g = quality_guard(_tiny("llama2-7b"), "1:4", 1.0)
    assert g.status == "missing" and "none published for Llama-2-7B at 1:4" in g.message
    g = quality_guard(_tiny("bert-base"), "unstructured:90%", 1.0)  # three tasks: which one is the user's?
    assert g.status == "missing" and "name one with quality.task" in g.message


def test_workload_figures_win_and_the_registry_is_shown_alongside() -> None:
    own = {"metric": "SQuAD v1.1 F1", "dense": 88.5, "patterns": {"2:4": 88.2}, "max_drop": 1.0, "source": "mine"}
    g = quality_guard(_tiny("bert-base", own), "2:4", None)
    assert g.drop_source == "workload" and g.drop == pytest.approx(0.3) and g.status == "ok"
    assert "registry: published:" in g.message and g.evidence.chosen is not None


MMLU = {"metric": "MMLU accuracy", "dense": 45.3, "patterns": {"4:8": 44.9}, "max_drop": 10.0, "kind": "user",
        "source": "my eval"}


def test_a_published_drop_in_another_metric_is_not_checked_against_the_workloads_threshold() -> None:
    """Audit: a perplexity drop of 5.05 was called OK against a max_drop of 10 MMLU points."""
    g = quality_guard(_tiny("llama-2-7b", MMLU), "2:4", None)
    assert g.status == "missing" and g.drop_source == "registry" and g.drop == pytest.approx(5.05)
    assert g.missing == ("threshold in MMLU accuracy (quality.max_drop), evidence in WikiText-2 perplexity: cannot "
                         "compare (give --quality-threshold in WikiText-2 perplexity, or figures of the workload's own "
                         "for 2:4)",)
    assert g.threshold_source == "workload quality.max_drop, in MMLU accuracy" and g.evidence.conflicts == ()
    # a threshold given on the command line is read in the published metric, and the note says so
    g = quality_guard(_tiny("llama-2-7b", MMLU), "2:4", 1.0)
    assert g.status == "breach" and "is the workload's" not in g.message
    assert g.message.endswith("note: the threshold 1 is the one given (--quality-threshold), read in the published "
                              "metric (WikiText-2 perplexity); the workload's own figures are in MMLU accuracy")


def test_the_workloads_own_figures_keep_their_metric_and_source() -> None:
    """Audit: the user's MMLU 4:8 figure sat under a 'WikiText-2 perplexity' heading with Wanda as its source."""
    g = quality_guard(_tiny("llama-2-7b", MMLU), "2:4", 1.0)
    assert (g.metric, dict(g.patterns)) == ("WikiText-2 perplexity", {"2:4": 10.17})  # the figures the drop is in
    assert g.source is not None and g.source.startswith("Sun et al. 2024")
    own = g.workload
    assert own is not None and (own.metric, dict(own.patterns), own.dense, own.kind, own.source) == (
        "MMLU accuracy", {"4:8": 44.9}, 45.3, "user", "my eval")
    data = g.to_dict()
    assert data["patterns"] == {"2:4": 10.17} and data["workload"]["patterns"] == {"4:8": 44.9}
    # the same metric: the published drop is checked against the workload's threshold, its figures still apart
    same = {"metric": "SQuAD v1.1 F1", "dense": 88.5, "patterns": {"4:8": 88.0}, "max_drop": 1.0}
    g = quality_guard(_tiny("bert-base", same), "2:4", None)
    assert g.status == "ok" and dict(g.patterns) == {"2:4": 86.49} and g.workload is not None
    assert dict(g.workload.patterns) == {"4:8": 88.0} and g.threshold_source == "workload quality.max_drop"


def test_the_report_table_shows_the_workloads_figures_in_their_own_row() -> None:
    from accelsim.analysis.deployment import build_report
    from accelsim.hardware.model import load_hardware
    from accelsim.report.deploy_tables import tables

    rep = build_report(_tiny("llama-2-7b", MMLU), load_hardware(Path(__file__).parents[1] / "hwconfigs" /
                                                                "a100-like.yaml"), "2:4")
    head, rows = tables(rep)["quality"]
    assert head[:2] == ["figures", "metric"]
    assert [r[:4] for r in rows] == [["published entry", "WikiText-2 perplexity", "5.12", "2:4: 10.17"],
                                     ["workload's own", "MMLU accuracy", "45.3", "4:8: 44.9"]]
    assert rows[0][-1] == "MISSING" and rows[0][-2] == "10 (workload quality.max_drop, in MMLU accuracy)"


def _fake(source: str, method: str, sparse: float) -> QualityEntry:
    """A test fixture entry (not registry data): model M, SQuAD F1, dense 90."""
    return QualityEntry(id=f"{source}:m:squad:2:4:{method.lower()}", model="M", family="F", task="SQuAD",
                        metric="F1", higher_is_better=True, dense=90.0, sparse=sparse, format="2:4", sparsity=0.5,
                        method=method, finetuned=True, dtype="fp16", source=f"{source} Table 1", kind="published",
                        derivation="")


def test_guardrail_calls_out_contradictory_evidence() -> None:
    pool = [_fake("paper_a", "ASP", 89.8), _fake("paper_b", "ASP", 88.0), _fake("paper_b", "Other", 89.9)]
    g = quality_guard(_tiny("m"), "2:4", 1.0, entries=pool)
    assert g.status == "ok" and g.drop == pytest.approx(0.1)  # the smallest published drop
    conflicts = g.evidence.conflicts
    # paper_a ASP (0.2) vs paper_b ASP (2.0): same method, 1.8 apart; paper_b Other (0.1) vs paper_b ASP: one source
    assert [(c.first, c.second, c.same_method) for c in conflicts] == \
        [("paper_a:m:squad:2:4:asp", "paper_b:m:squad:2:4:asp", True)]
    assert conflicts[0].difference == pytest.approx(1.8)
    assert "CONTRADICTORY EVIDENCE: paper_a and paper_b contradict each other (same method)" in g.message
    assert g.guardrail().conflicts == 1
    # within the threshold: no call-out; different methods across sources: a disagreement, not a contradiction
    assert registry_evidence(_tiny("m"), "2:4", 2.0, entries=pool).conflicts == ()
    pool2 = [_fake("paper_a", "ASP", 89.8), _fake("paper_c", "Wanda", 87.0)]
    (c,) = registry_evidence(_tiny("m"), "2:4", 1.0, entries=pool2).conflicts
    assert not c.same_method and "paper_a and paper_c disagree (ASP vs Wanda)" in c.message


def test_evidence_is_in_the_report_record() -> None:
    g = quality_guard(_tiny("bert-base"), "2:4", 1.0)
    data = g.to_dict()
    assert data["drop_source"] == "registry" and data["evidence"]["chosen"] == g.evidence.chosen
    assert data["evidence"]["policy"].startswith("smallest published drop")
    assert dataclasses.replace(g.evidence, conflicts=()).conflicts == ()


def test_the_sources_ship_as_package_data() -> None:
    import tomllib

    from accelsim.quality import DATA
    root = Path(__file__).resolve().parents[1]
    package_data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"quality/data/*.csv", "quality/data/*.md"} <= set(package_data["accelsim"])
    assert DATA == root / "accelsim" / "quality" / "data"
    shipped = sorted(p.stem for p in DATA.glob("*.csv"))
    assert shipped == sorted({e.source_key for e in load_registry()})
    readme = (DATA / "README.md").read_text()
    assert all(f"`{name}.csv`" in readme for name in shipped)  # every source is listed with its citation


def test_a_published_drop_is_preferred_to_a_derived_one() -> None:
    derived = dataclasses.replace(_fake("paper_d", "Mine", 89.95), kind="derived", derivation="averaged")
    pool = [derived, _fake("paper_a", "ASP", 89.5)]
    ev = registry_evidence(_tiny("m"), "2:4", 1.0, entries=pool)
    assert ev.chosen == "paper_a:m:squad:2:4:asp" and ev.kind == "published"
    assert ev.entries[0] == derived.id  # listed smallest drop first, but not the one checked
    ev = registry_evidence(_tiny("m"), "2:4", 1.0, entries=[derived])
    assert ev.chosen == derived.id and ev.kind == "derived"
