"""The shipped model zoo (workloads/*.yaml): every file expands with its defaults, names are unique and
readable, --set overrides reach the shapes, and MAC totals match the published figures."""

from __future__ import annotations

import re
from functools import cache

import pytest
from conftest import WL

from accelsim.workloads.model import ARRAY_OPS, Workload, load_workload

SHIPPED = sorted(p.name for p in WL.glob("*.yaml"))
ZOO = ["bert-base.yaml", "bert-large.yaml", "bert-base-gemms.yaml", "vit-b16.yaml", "resnet50.yaml",
       "mobilenetv2.yaml", "llama2-7b-prefill.yaml", "llama2-7b-decode.yaml", "llama3-8b-prefill.yaml",
       "llama3-8b-decode.yaml", "llama3-70b-prefill.yaml", "llama3-70b-decode.yaml", "mixtral-8x7b-prefill.yaml",
       "mixtral-8x7b-decode.yaml"]
NAME = re.compile(r"[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*", re.IGNORECASE)


@cache
def wl(name: str) -> Workload:
    return load_workload(WL / name)


def macs(w: Workload, ops: tuple[str, ...] = ARRAY_OPS) -> int:
    """Multiply-accumulates: gemm m*n*k; conv2d per-group GEMM x groups; matmul x its batch of products."""
    total = 0
    for layer in w.layers:
        if layer.op not in ops:
            continue
        m, n, k = layer.gemm_shape()
        times = layer.groups if layer.op == "conv2d" else layer.batch if layer.op == "matmul" else 1
        total += m * n * k * times
    return total


def layer(w: Workload, name: str):
    return next(x for x in w.layers if x.name == name)


def test_zoo_is_shipped():
    assert set(ZOO) <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_expands_with_defaults(name):
    w = wl(name)
    assert w.layers and w.name == name.removesuffix(".yaml")
    names = [x.name for x in w.layers]
    assert len(set(names)) == len(names)
    bad = [n for n in names if not NAME.fullmatch(n)]
    assert not bad, f"unreadable layer names: {bad[:5]}"


@pytest.mark.parametrize("name", ZOO)
def test_zoo_params_documented(name):
    w = wl(name)
    assert w.description
    assert set(w.params) <= {"batch", "seq", "kv_len"}
    assert w.params["batch"] == 1
    text = (WL / name).read_text()
    for p in w.params:  # each default carries a comment
        assert re.search(rf"^\s+{p}: \d+\s+#", text, re.MULTILINE), p


def test_layer_counts_and_names():
    counts = {"bert-base.yaml": 186, "bert-large.yaml": 366, "bert-base-gemms.yaml": 5, "vit-b16.yaml": 184,
              "resnet50.yaml": 174, "mobilenetv2.yaml": 151, "llama2-7b-prefill.yaml": 579,
              "llama2-7b-decode.yaml": 579, "llama3-8b-prefill.yaml": 611, "llama3-8b-decode.yaml": 611,
              "llama3-70b-prefill.yaml": 1523, "llama3-70b-decode.yaml": 1523, "mixtral-8x7b-prefill.yaml": 1859,
              "mixtral-8x7b-decode.yaml": 899}
    assert {n: len(wl(n).layers) for n in counts} == counts
    bert = wl("bert-base.yaml")
    ffn1 = layer(bert, "encoder.3.ffn1")
    assert (ffn1.op, ffn1.m, ffn1.n, ffn1.k) == ("gemm", 3072, 128, 768)
    assert layer(bert, "encoder.11.ffn2").gemm_shape() == (768, 128, 3072)
    assert layer(wl("resnet50.yaml"), "layer1.0.conv1").op == "conv2d"
    assert layer(wl("resnet50.yaml"), "layer4.2.add").op == "elementwise"
    assert layer(wl("llama2-7b-prefill.yaml"), "layers.31.down_proj").gemm_shape() == (4096, 512, 11008)


def test_bert_attention_shapes():
    bert = wl("bert-base.yaml")
    scores, ctx = layer(bert, "encoder.0.scores"), layer(bert, "encoder.0.context")
    assert (scores.m, scores.n, scores.k, scores.batch) == (128, 128, 64, 12)
    assert (ctx.m, ctx.n, ctx.k, ctx.batch) == (128, 64, 128, 12)


def test_set_batch_scales_tokens():
    w = load_workload(WL / "bert-base.yaml", {"batch": 16})
    assert layer(w, "encoder.3.ffn1").n == 16 * layer(wl("bert-base.yaml"), "encoder.3.ffn1").n == 16 * 128
    assert layer(w, "encoder.3.scores").batch == 16 * 12
    assert layer(w, "pooler").n == 16
    w = load_workload(WL / "bert-base.yaml", {"seq": 384})
    assert layer(w, "encoder.0.ffn1").n == 384
    assert layer(w, "encoder.0.scores").gemm_shape() == (384, 384, 64)
    w = load_workload(WL / "resnet50.yaml", {"batch": 8})
    assert layer(w, "conv1").gemm_shape()[1] == 8 * 112 * 112
    assert macs(w) == 8 * macs(wl("resnet50.yaml"))


def test_vit_image_side_follows_seq():
    assert layer(wl("vit-b16.yaml"), "patch_embed").output_hw() == (14, 14)  # 196 patches + [CLS] = 197
    w = load_workload(WL / "vit-b16.yaml", {"seq": 577})
    assert layer(w, "patch_embed").ifmap == [384, 384]


# Published multiply-accumulate counts (batch 1, default shapes); see each file's header comment.
PUBLISHED = {
    "bert-base.yaml": 11.2e9,       # ~22.5 GFLOPs per 128-token sequence
    "bert-large.yaml": 39.5e9,      # 24 x (12 h^2 s + 2 s^2 h), h = 1024, s = 128
    "vit-b16.yaml": 17.56e9,        # torchvision ViT_B_16_Weights
    "resnet50.yaml": 4.09e9,        # torchvision ResNet50_Weights
    "mobilenetv2.yaml": 300e6,      # Sandler et al. 2018, Table 4
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_macs_match_published(name):
    assert macs(wl(name)) == pytest.approx(PUBLISHED[name], rel=0.05)


def test_llama_macs_per_token():
    per_layer = 4 * 4096 * 4096 + 3 * 4096 * 11008
    lm_head = 32000 * 4096
    prefill, decode = wl("llama2-7b-prefill.yaml"), wl("llama2-7b-decode.yaml")
    assert macs(decode, ("gemm",)) == 32 * per_layer + lm_head
    assert macs(decode, ("gemm",)) == pytest.approx(6.7e9, rel=0.05)
    assert macs(prefill, ("gemm",)) == 512 * 32 * per_layer + lm_head
    assert macs(prefill, ("gemm",)) / 512 == pytest.approx(6.7e9, rel=0.05)
    assert macs(prefill, ("matmul",)) == 32 * 2 * 32 * 512 * 512 * 128
    assert macs(decode, ("matmul",)) == 32 * 2 * 32 * 512 * 128
    assert prefill.kv_cache_elements == 2 * 32 * 512 * 4096
    assert decode.kv_cache_elements == 2 * 32 * 513 * 4096


def test_mobilenetv2_depthwise():
    w = wl("mobilenetv2.yaml")
    dw = [x for x in w.layers if x.op == "conv2d" and x.name.endswith(".dw")]
    assert len(dw) == 17
    assert all(x.groups == x.channels == x.filters and x.depthwise for x in dw)
    assert all(x.gemm_shape()[::2] == (1, 9) for x in dw)  # per group: one filter over a 3x3 window
    assert sum(x.op == "conv2d" and x.groups > 1 for x in w.layers) == 17  # no other grouped convs
    adds = [x.name for x in w.layers if x.name.endswith(".add")]
    assert len(adds) == 10  # stride 1 and in == out: the n - 1 repeats of each group


@pytest.mark.parametrize("batch", [1, 4])
def test_llama_decode_projections_one_token(batch):
    w = load_workload(WL / "llama2-7b-decode.yaml", {"batch": batch})
    gemms = [x for x in w.layers if x.op == "gemm"]
    assert len(gemms) == 32 * 7 + 1
    assert all(x.n == batch for x in gemms)
    scores = layer(w, "layers.0.scores")
    assert (scores.m, scores.n, scores.k, scores.batch) == (1, 512, 128, 32 * batch)
    assert layer(w, "embed_tokens").tokens == batch
