"""Quality at equal latency budget from published evidence (issue 21, must-shows 2 and 3): variants and
workload quality sections point at the quality registry, every figure carries its label, verdicts count
registry figures only, and `accelsim decide` writes the table, JSON and chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import HW, ROOT, WL

from accelsim.cli import main
from accelsim.errors import ConfigError
from accelsim.quality import entry
from accelsim.report.decision_chart import decision_figure
from accelsim.serving import VariantOutcome, decide, load_variants, quality_at_budget, verdict
from accelsim.serving.variants import variant_figure
from accelsim.workloads.model import load_workload, workload_from_dict

A100 = HW / "a100-like.yaml"
BERT_LARGE_24 = "asp_mishra2021:bert-large:squad-v1.1:2:4:asp-one-shot-magnitude-2-4-pruning-then-retraining"
LLAMA7_24 = "wanda:llama-2-7b:wikitext-2:2:4:sparsegpt"
TINY = {"name": "tiny", "dtype": "fp16", "params": {"batch": 1, "seq": 128},
        "layers": [{"name": "fc1", "op": "gemm", "m": 2048, "n": "batch * seq", "k": 2048},
                   {"name": "fc2", "op": "gemm", "m": 2048, "n": "batch * seq", "k": 2048}]}


def _variants(tmp_path: Path, variants: list[dict], **top) -> Path:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    for v in variants:
        v.setdefault("workload", "tiny.yaml")
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump({"rate_rps": 200, "requests": 300, **top, "variants": variants}))
    return path


# ------------------------------------------------------------------------------ registry references

def test_a_registry_id_gives_the_registry_value_and_label(tmp_path: Path) -> None:
    path = _variants(tmp_path, [
        {"name": "d", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}},
        {"name": "s", "sparsity": "2:4", "quality": {"entry": BERT_LARGE_24}},
        {"name": "m", "sparsity": "2:4", "quality": {"model": "bert large", "task": "SQuAD v1.1"}},
        {"name": "t", "sparsity": "2:4", "quality": 95.0},
        {"name": "u", "sparsity": "2:4", "quality": 90.0, "quality_kind": "user", "quality_source": "our run"},
        {"name": "none", "sparsity": "2:4"}])
    vf, paths = load_variants(path)
    figs = [variant_figure(vf, i, p, str(path)) for i, p in enumerate(paths)]
    e = entry(BERT_LARGE_24)
    assert (figs[0].value, figs[0].kind, figs[0].entry) == (e.dense, "published", BERT_LARGE_24)
    assert (figs[1].value, figs[1].kind, figs[1].entry) == (e.sparse, "published", BERT_LARGE_24)
    assert figs[2] == figs[1]  # model + task (+ the variant's format) resolve to the same entry
    assert figs[1].source == e.source and figs[1].metric == "SQuAD v1.1 F1" and figs[1].higher_is_better
    assert (figs[3].kind, figs[3].entry) == ("illustrative", None)  # a typed number is labelled as such
    assert (figs[4].kind, figs[4].source) == ("user", "our run")
    assert figs[5] is None


@pytest.mark.parametrize(("quality", "message"), [
    ({"entry": "wanda:llama-2-7b:nope"}, "variants.0.quality: quality registry: no entry 'wanda:llama-2-7b:nope'"),
    ({"model": "Llama-2-7B", "task": "WikiText-2"}, "3 registry entries match"),
    ({"model": "Llama-2-7B", "format": "8:16"}, "no entry for model 'Llama-2-7B', format 8:16"),
    ({"entry": LLAMA7_24, "method": "Wanda"}, "'entry' names one registry entry"),
])
def test_bad_references_are_one_line_errors(tmp_path: Path, capsys, quality, message) -> None:
    path = _variants(tmp_path, [{"name": "s", "sparsity": "2:4", "quality": quality}])
    assert main(["decide", "--hw", str(A100), "--variants", str(path), "--budget-ms", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and message in err and "Traceback" not in err


def test_registry_figures_must_measure_one_metric(tmp_path: Path) -> None:
    path = _variants(tmp_path, [{"name": "a", "sparsity": "2:4", "quality": {"entry": BERT_LARGE_24}},
                                {"name": "b", "sparsity": "2:4", "quality": {"entry": LLAMA7_24}}])
    with pytest.raises(ConfigError, match=r"variants\.1\.quality: measures 'WikiText-2 perplexity'"):
        quality_at_budget(path, A100, 5.0)


BERT_BASE_24 = ("pytorch_semi_structured:bert-base:squad-v1.1:2:4:"
                "magnitude-2-4-torch.ao-weightnormsparsifier-+-fine-tune")


def test_a_variant_without_a_figure_is_looked_up_as_the_report_looks_it_up(tmp_path: Path) -> None:
    """Audit: decide called both variants 'missing (nothing published)' where the report found a drop of 0.44."""
    from accelsim.analysis.deployment_quality import quality_guard
    from accelsim.serving.variants import variant_qualities, variant_quality

    spec = {**TINY, "name": "bert-base", "quality": {"model": "BERT-base", "task": "SQuAD v1.1", "max_drop": 1.0}}
    (tmp_path / "bb.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "plain.yaml").write_text(yaml.safe_dump({**TINY, "name": "bert-base"}))
    (tmp_path / "mmlu.yaml").write_text(yaml.safe_dump({**TINY, "name": "llama-2-7b", "quality": {
        "metric": "MMLU accuracy", "dense": 45.3, "patterns": {"4:8": 44.9}, "kind": "user"}}))
    path = _variants(tmp_path, [  # the dense variant first: it still takes its sparse sibling's source
        {"name": "d", "sparsity": "dense", "workload": "bb.yaml"},
        {"name": "s", "sparsity": "2:4", "workload": "bb.yaml"},
        {"name": "u90", "sparsity": "unstructured:90%", "workload": "plain.yaml"},
        {"name": "nodense", "sparsity": "dense", "workload": "plain.yaml"},
        {"name": "mmlu", "sparsity": "2:4", "workload": "mmlu.yaml"}])
    vf, paths = load_variants(path)
    (d, dn), (sp, sn), (u, un), (nd, ndn), (mm, mmn) = variant_qualities(vf, paths, str(path))
    guard = quality_guard(load_workload(tmp_path / "bb.yaml"), "2:4", None)
    assert sp is not None and (sp.entry, sp.value, sp.kind) == (guard.evidence.chosen, 86.49, "published")
    assert sp.entry == BERT_BASE_24 and "looked up in the quality registry (published: SQuAD v1.1 F1" in sn
    assert d is not None and (d.entry, d.value, d.format) == (BERT_BASE_24, 86.93, "dense")  # same source as s
    assert "the variant names no quality figure" in dn and "(the source of the figures it is compared with)" in dn
    # looked up, not found as one figure: the look-up's own words, never "nothing published"
    assert u is None and "registry: 12 published entries for BERT-base at unstructured:90% over 3 tasks" in un
    assert nd == d  # no task of its own: the entries its sparse siblings use decide (one source, one task)
    alone, why = variant_quality(vf, 0, paths[0], str(path))  # with no sparse sibling: the registry is ambiguous
    assert alone is None and why.endswith("registry: the registry has 4 dense figures for BERT-base SQuAD v1.1 F1: "
                                          "86.93 (pytorch_semi_structured); 88.54 (obert); 89.06 (obert); 89.48 "
                                          "(obert); name one with quality: {entry: <id>}")
    assert mm is None and "not used: it measures WikiText-2 perplexity, the workload's quality: section MMLU" in mmn
    assert "nothing published" not in " ".join([un, why, mmn])


def test_decide_notes_say_how_a_figure_was_found_or_why_not(tmp_path: Path) -> None:
    (tmp_path / "bb.yaml").write_text(yaml.safe_dump({**TINY, "name": "bert-base", "quality": {
        "model": "BERT-base", "task": "SQuAD v1.1"}}))
    path = _variants(tmp_path, [{"name": "s", "sparsity": "2:4", "workload": "bb.yaml"},
                                {"name": "t", "sparsity": "2:4", "workload": "tiny.yaml"}])
    dec = decide(path, A100, [1000.0], requests=150)
    assert dec.variant("s").quality_kind == "published" and dec.variant("s").quality == 86.49
    assert dec.variant("s").to_dict()["quality_note"].endswith("a drop of 0.44 [" + BERT_BASE_24 + "]; 2 entries, "
                                                                "drops 0.44 to 30.41)")
    assert any(n.startswith("s: the variant names no quality figure") for n in dec.notes)
    (note,) = [n for n in dec.notes if n.startswith("t:")]
    assert note == ("t: no quality figure (the variant names no quality figure and tiny.yaml has no quality: section; "
                    "registry: no model in the quality registry matches workload 'tiny'; name one with "
                    "quality.model): shown, not counted")


def test_serve_variants_says_how_a_figure_was_found(tmp_path: Path, capsys) -> None:
    (tmp_path / "bb.yaml").write_text(yaml.safe_dump({**TINY, "name": "bert-base", "quality": {
        "model": "BERT-base", "task": "SQuAD v1.1"}}))
    path = _variants(tmp_path, [{"name": "s", "sparsity": "2:4", "workload": "bb.yaml"}])
    assert main(["serve", "--hw", str(A100), "--workload", str(tmp_path / "tiny.yaml"), "--rate", "50",
                 "--duration", "2", "--variants", str(path), "--budget-ms", "100"]) == 0
    out = capsys.readouterr().out
    assert ("    quality: the variant names no quality figure and bb.yaml's quality: section has none for 2:4: "
            "looked up in the quality registry (published: SQuAD v1.1 F1 dense 86.93, 2:4 86.49") in out


def test_a_workload_quality_section_points_at_the_registry() -> None:
    base = {k: v for k, v in TINY.items()}
    w = workload_from_dict({**base, "quality": {"entry": BERT_LARGE_24, "max_drop": 1.0}}, "w.yaml")
    q = w.quality
    assert q is not None and q.entries == [BERT_LARGE_24] and q.metric == "SQuAD v1.1 F1"
    assert (q.dense, q.patterns, q.delta("2:4")) == (91.9, {"2:4": 91.9}, 0.0)
    assert q.figure("2:4").kind == "published" and q.figure("dense").entry == BERT_LARGE_24
    again = workload_from_dict({**base, "quality": q.model_dump()}, "w.yaml").quality  # round trip
    assert again is not None and again.figures() == q.figures()
    w = workload_from_dict({**base, "quality": {"model": "Llama-2-13B", "format": "2:4", "method": "Wanda"}}, "w")
    assert w.quality is not None and not w.quality.higher_is_better and w.quality.patterns == {"2:4": 8.27}
    typed = workload_from_dict({**base, "quality": {"metric": "F1", "dense": 88.5, "patterns": {"2:4": 88.0}}}, "w")
    assert typed.quality is not None and typed.quality.figure("2:4").kind == "illustrative"
    named = workload_from_dict({**base, "quality": {"model": "BERT-Large", "max_drop": 1.0}}, "w").quality
    assert named is not None and named.metric == "SQuAD v1.1 F1" and named.figures() == {}  # looked up per pattern


def test_the_report_labels_every_quality_figure_and_counts_each_kind() -> None:
    from accelsim.analysis.deployment import build_report
    from accelsim.hardware.model import load_hardware
    from accelsim.report.deploy_markdown import render_markdown

    hw = load_hardware(A100)
    w = workload_from_dict({**TINY, "name": "bert-large", "quality": {"entry": BERT_LARGE_24, "max_drop": 1.0}}, "w")
    rep = build_report(w, hw, "2:4")
    assert dict(rep.quality_labels.counts) == {"published": 3, "derived": 0, "illustrative": 0, "user": 0}
    assert [(f.where, f.format, f.kind) for f in rep.quality_labels.figures] == [
        ("workload quality section", "dense", "published"), ("workload quality section", "2:4", "published"),
        ("registry evidence", "2:4", "published")]
    md = render_markdown(rep)
    head = md[:md.index("<!-- ")] if "<!-- " in md else md[:2000]
    assert "quality figures: 3 published, 0 derived, 0 illustrative, 0 user" in head
    assert f"| registry evidence | 2:4 | 91.9 | 91.9 | published | {BERT_LARGE_24} |" in md
    typed = workload_from_dict({**TINY, "quality": {"metric": "F1", "dense": 90.0, "patterns": {"2:4": 89.0},
                                                    "kind": "user", "max_drop": 2.0}}, "w")
    rep = build_report(typed, hw, "2:4")
    assert dict(rep.quality_labels.counts) == {"published": 0, "derived": 0, "illustrative": 0, "user": 2}
    assert rep.to_dict()["quality_labels"]["counts"]["user"] == 2


@pytest.mark.parametrize(("quality", "message"), [
    ({"entry": "no-such-id"}, "quality registry: no entry 'no-such-id'"),
    ({"entry": BERT_LARGE_24, "dense": 90.0}, "the typed dense figure 90.0 is not the registry's (91.9)"),
    ({"model": "BERT-base"}, "the quality registry has model 'BERT-base' in"),  # several tasks: name one
    ({"model": "Llama-2-7B", "task": "nope"}, "the quality registry has no entry for model 'Llama-2-7B', task 'nope'"),
    ({"entry": BERT_LARGE_24, "format": "2:4"}, "give registry ids (entry / entries) or model + format, not both"),
    ({"dense": 1.0}, "typed figures"),
    # a dense key under patterns would replace the dense figure without a word (audit: dense 88 vs 80)
    ({"metric": "F1", "dense": 88.0, "patterns": {"dense": 80.0, "2:4": 87.0}},
     "quality.patterns.dense: 'dense' is the dense model, not a pattern: give its figure as quality.dense"),
    ({"metric": "F1", "dense": 88.0, "patterns": {"4:4": 80.0}}, "quality.patterns.4:4: '4:4' is the dense model"),
    ({"entry": BERT_LARGE_24, "patterns": {"dense": 91.9}}, "quality.patterns.dense: 'dense' is the dense model"),
    # two spellings of one pattern: the second figure replaced the first without a word
    ({"metric": "F1", "dense": 88.0, "patterns": {"2:4": 87.0, " 2:4 ": 80.0}},
     "quality.patterns.2:4: '2:4' is the pattern ' 2:4 ' already names: give each pattern once"),  # keys sorted
])
def test_bad_workload_quality_sections(tmp_path: Path, capsys, quality, message) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump({**TINY, "quality": quality}))
    with pytest.raises(ConfigError, match="quality") as exc:
        load_workload(path)
    assert message in str(exc.value) and str(path) in str(exc.value)
    assert main(["run", "--hw", str(A100), "--workload", str(path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------- verdict

def _row(name: str, sparsity: str, quality: float | None, kind: str, ms: float | None, **kw) -> VariantOutcome:
    return VariantOutcome(name=name, workload="w.yaml", sparsity=sparsity, set={}, quality=quality, quality_kind=kind,
                          quality_entry="src:id" if kind in ("published", "derived") else None, quality_source=None,
                          quantile="p99", value_ms=ms, p50_ms=ms, utilisation=0.5, **kw)


def test_verdict_counts_registry_figures_only() -> None:
    """The illustrative variant would win if counted; it is shown, excluded and named."""
    rows = [_row("dense-small", "dense", 80.0, "published", 4.0), _row("dense-big", "dense", 85.0, "published", 12.0),
            _row("sparse-big", "2:4", 84.0, "derived", 9.0), _row("dream", "2:4", 99.0, "illustrative", 5.0),
            _row("unknown", "2:4", None, "missing", 3.0), _row("huge", "2:4", 99.5, "published", None, fits=False),
            _row("jammed", "2:4", 99.0, "published", 6.0, overloaded=True)]
    v = verdict(rows, 10.0, True)
    assert v.best == "sparse-big" and v.dense_baseline == "dense-small" and v.quality_delta == pytest.approx(4.0)
    assert v.holding == ("dense-small", "sparse-big", "dream", "unknown")  # no fit / overloaded never hold
    assert v.excluded == ("dream", "unknown") and v.uncounted_winner == "dream"
    assert "dream would win on a typed figure, not counted" in v.message
    v = verdict(rows, 15.0, True)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("dense-big", "dense-big", 0.0)
    v = verdict(rows, 4.5, True)
    assert (v.best, v.quality_delta) == ("dense-small", 0.0)
    assert verdict(rows, 1.0, True).best is None


def test_verdict_lower_is_better() -> None:
    rows = [_row("7b", "dense", 5.12, "published", 14.0), _row("13b-2:4", "2:4", 8.27, "published", 13.0),
            _row("13b", "dense", 4.57, "published", 29.0)]
    v = verdict(rows, 20.0, False)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("7b", "7b", 0.0)
    v = verdict(rows[1:], 20.0, False)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("13b-2:4", None, None)
    v = verdict(rows, 30.0, False)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("13b", "13b", 0.0)
    v = verdict([*rows, _row("13b-good-2:4", "2:4", 4.9, "published", 13.5)], 20.0, False)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("13b-good-2:4", "7b", pytest.approx(5.12 - 4.9))


@pytest.mark.parametrize("flip", [False, True])
def test_a_quality_tie_goes_to_the_faster_variant_whatever_the_file_order(flip: bool) -> None:
    """Audit: BERT-large dense and 2:4 both F1 91.9; the verdict followed the file's order."""
    rows = [_row("large-dense", "dense", 91.9, "published", 17.76), _row("large-2:4", "2:4", 91.9, "published", 14.87),
            _row("base", "dense", 86.93, "published", 4.3)]
    v = verdict(rows[::-1] if flip else rows, 20.0, True)
    assert (v.best, v.dense_baseline, v.quality_delta) == ("large-2:4", "large-dense", 0.0)
    assert v.message.endswith("tie on quality (91.9) with large-dense; large-2:4 is faster (p99 14.87 vs 17.76 ms)")
    # the same latency too: dense first, then the name
    rows = [_row("b-2:4", "2:4", 91.9, "published", 9.0), _row("z-dense", "dense", 91.9, "published", 9.0),
            _row("a-2:4", "2:4", 91.9, "published", 9.0)]
    v = verdict(rows[::-1] if flip else rows, 20.0, True)
    assert v.best == "z-dense" and "and latency with a-2:4, b-2:4; z-dense by dense first" in v.message
    v = verdict([r for r in rows if r.sparsity != "dense"][::-1 if flip else 1], 20.0, True)
    assert v.best == "a-2:4" and "a-2:4 by then by name" not in v.message and "a-2:4 by name" in v.message


def test_simulated_verdict_excludes_the_illustrative_winner(tmp_path: Path) -> None:
    path = _variants(tmp_path, [
        {"name": "dense", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}},
        {"name": "sparse", "sparsity": "2:4", "quality": {"entry": BERT_LARGE_24}},
        {"name": "dream", "sparsity": "2:4", "quality": 99.0}])
    q = quality_at_budget(path, A100, 1000.0)
    assert q.best in ("dense", "sparse") and q.verdict.uncounted_winner == "dream" and q.verdict.excluded == ("dream",)
    assert q.quality_kinds == {"published": 2, "derived": 0, "illustrative": 1, "user": 0, "missing": 0}
    row = q.to_dict()["variants"][2]
    assert (row["quality_kind"], row["counted"], row["holds"]) == ("illustrative", False, True)


# ------------------------------------------------------------------------------------------ the command

def test_decide_json_chart_and_table(tmp_path: Path, capsys) -> None:
    path = _variants(tmp_path, [
        {"name": "dense", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}},
        {"name": "sparse", "sparsity": "2:4", "quality": {"entry": BERT_LARGE_24}},
        {"name": "dream", "sparsity": "2:4", "quality": 99.0, "quality_source": "a guess"}], metric="SQuAD v1.1 F1")
    out = tmp_path / "out"
    argv = ["decide", "--hw", str(A100), "--variants", str(path), "--budget-ms", "1000", "--budget-ms", "0.001",
            "--format", "json", "-o", str(out)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert {p.name for p in out.iterdir()} == {"decision.json", "decision.png", "decision.svg"}
    assert data["command"] == "decide" and data["metric"] == "SQuAD v1.1 F1" and data["higher_is_better"] is True
    assert data["quality_kinds"]["published"] == 2 and data["quality_kinds"]["illustrative"] == 1
    assert data["counted_kinds"] == ["published", "derived"] and data["latency_metric"] == "latency"
    row = data["variants"][1]
    assert {"name", "sparsity", "quality", "quality_kind", "quality_entry", "quality_source", "counted", "p99_ms",
            "fits", "overloaded"} <= set(row) and row["quality_entry"] == BERT_LARGE_24
    assert [v["budget_ms"] for v in data["verdicts"]] == [0.001, 1000.0]
    tight, loose = data["verdicts"]
    assert tight["best"] is None and tight["holding"] == []
    assert loose["uncounted_winner"] == "dream" and loose["best"] in ("dense", "sparse")
    assert {"best", "best_quality", "best_entry", "dense_baseline", "dense_baseline_quality", "quality_delta",
            "excluded", "message"} <= set(loose)
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(argv[:-4] + ["-o", str(out)]) == 0  # table, same files again: deterministic
    text = capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert "2 published, 0 derived, 1 illustrative, 0 user, 0 missing" in text and "illustrative*" in text
    assert f"sources:\n  {BERT_LARGE_24}: Mishra et al. 2021" in text


def test_a_model_that_does_not_fit_is_shown_and_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump({"latency": "tpot", "rate_rps": 1, "requests": 4, "output_tokens": "fixed:4",
                                    "variants": [{"name": "70b-2:4", "sparsity": "2:4",
                                                  "workload": str(WL / "llama2-70b-prefill.yaml"),
                                                  "decode_workload": str(WL / "llama2-70b-decode.yaml"),
                                                  "quality": {"model": "Llama-2-70B", "method": "Wanda"}}]}))
    d = decide(path, A100, [1e6])
    row = d.variants[0]
    assert not row.fits and row.value_ms is None and "does not fit one device" in row.note
    assert (row.quality, row.quality_kind) == (5.16, "published") and d.verdicts[0].best is None


def test_shipped_variants_files_resolve() -> None:
    for name in ("variants-bert.yaml", "variants-llama2.yaml"):
        path = ROOT / "examples" / name
        vf, paths = load_variants(path)
        figs = [variant_figure(vf, i, p, str(path)) for i, p in enumerate(paths)]
        assert all(f is not None and f.kind == "published" and f.entry for f in figs), name
        assert all(p.is_file() for p in paths)


# Published sizes: HF model pages meta-llama/Llama-2-13b-hf (13,015,864,320) and -70b-hf (68,976,648,192),
# counts that include the RMSNorm weights (not counted by the workloads: 0.41M and 1.3M).
@pytest.mark.parametrize(("name", "published"), [
    ("llama2-13b-prefill.yaml", 13_015_864_320), ("llama2-13b-decode.yaml", 13_015_864_320),
    ("llama2-70b-prefill.yaml", 68_976_648_192), ("llama2-70b-decode.yaml", 68_976_648_192)])
def test_llama2_parameter_counts(name: str, published: int) -> None:
    w = load_workload(WL / name)
    params = sum(x.m * x.k for x in w.layers if x.op == "gemm") + sum(x.vocab * x.dim for x in w.layers
                                                                         if x.op == "embedding")
    assert params == pytest.approx(published, rel=1e-4)


@pytest.mark.parametrize("body, key, problem", [
    ("runtime: {max_batch: 0}\n", "runtime.max_batch: ", "greater than 0"),
    ("runtime: {foo: 1}\n", "runtime.foo: ", "unknown key"),
], ids=["max-batch", "unknown-key"])
def test_a_variants_runtime_error_names_its_key(tmp_path, body: str, key: str, problem: str) -> None:
    from accelsim.errors import ConfigError
    from accelsim.serving.variants import load_variants

    path = tmp_path / "v.yaml"
    bert = ROOT / "workloads" / "bert-base.yaml"
    path.write_text(f"metric: F1\nrate_rps: 300\nbudget_ms: 5\n{body}variants:\n"
                    f"  - {{name: a, workload: {bert}, sparsity: dense, quality: 1}}\n")
    with pytest.raises(ConfigError) as err:
        load_variants(path)
    assert f"{path}: {key}" in str(err.value) and problem in str(err.value)


def test_a_variants_missing_workload_names_the_variant_and_the_file(tmp_path) -> None:
    from accelsim.errors import ConfigError
    from accelsim.serving.variants import load_variants

    path = tmp_path / "v.yaml"
    path.write_text("metric: F1\nrate_rps: 300\nbudget_ms: 5\nvariants:\n"
                    "  - {name: a, workload: nope.yaml, sparsity: dense, quality: 1}\n")
    with pytest.raises(ConfigError, match=r"v\.yaml: variants\.0\(a\)\.workload: nope\.yaml: file not found"):
        load_variants(path)


def test_hw_set_overrides_are_named_in_the_title_json_and_chart(tmp_path: Path, capsys) -> None:
    """--hw-set dram.bandwidth_gb_s=100 moved every p99 while the table, decision.json and the chart still said
    "on a100-like", as if the shipped config had been served."""
    path = _variants(tmp_path, [{"name": "dense", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}}],
                     requests=50)
    out = tmp_path / "out"
    argv = ["decide", "--hw", str(A100), "--variants", str(path), "--budget-ms", "1000", "-o", str(out)]
    assert main([*argv, "--hw-set", "dram.bandwidth_gb_s=100"]) == 0
    assert capsys.readouterr().out.startswith(f"DECISION  {path} on a100-like (--hw-set dram.bandwidth_gb_s=100), ")
    data = json.loads((out / "decision.json").read_text())
    assert data["hardware"] == "a100-like" and data["hw_set"] == ["dram.bandwidth_gb_s=100"]
    d = decide(path, A100, [1000], requests=50, hw_set=["dram.bandwidth_gb_s=100"])
    assert decision_figure(d)._suptitle.get_text() == ("quality at equal latency budget on a100-like "
                                                       "(--hw-set dram.bandwidth_gb_s=100)")
    assert main([*argv[:-1], str(tmp_path / "plain")]) == 0
    assert "hw_set" not in json.loads((tmp_path / "plain" / "decision.json").read_text())


def test_chart_labels_stay_inside_the_axes(tmp_path: Path) -> None:
    """Audit: the slowest variant's label ("bert-large-dense") ran past the chart's right edge. Every point's label
    now stays inside the axes and off the other labels."""
    from matplotlib.text import Text

    path = _variants(tmp_path, [
        {"name": "a-rather-long-dense-variant-name", "sparsity": "dense", "quality": {"entry": BERT_LARGE_24}},
        {"name": "a-rather-long-sparse-variant-name", "sparsity": "2:4", "quality": {"entry": BERT_LARGE_24}}],
        requests=50)
    fig = decision_figure(decide(path, A100, [0.01]))  # the budget left of both points: they sit at the right edge
    fig.canvas.draw()
    ax = fig.axes[0]
    frame = ax.get_window_extent()
    boxes = [Text.get_window_extent(t) for t in ax.texts]
    assert len(boxes) == 2
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)
    assert not boxes[0].overlaps(boxes[1])
