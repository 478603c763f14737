"""ONNX import: graphs built with onnx.helper (no downloaded files), imported to workloads and simulated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from accelsim import load_hardware  # noqa: E402
from accelsim.errors import AccelsimError  # noqa: E402
from accelsim.simulation import run  # noqa: E402
from accelsim.workloads.model import load_workload, workload_from_dict  # noqa: E402
from accelsim.workloads.onnx import OnnxImport, import_onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
F = TensorProto.FLOAT


def _init(name: str, shape: list[int], dtype: type = np.float32) -> TensorProto:
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _save(tmp_path: Path, graph: onnx.GraphProto, opset: int = 17, name: str = "model.onnx",
          extra_opsets: list | None = None) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *(extra_opsets or [])])
    model.ir_version = 8
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())  # no external-data handling: written exactly as built
    return path


def _cnn(tmp_path: Path, batch: int = 1) -> Path:
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="/stem/conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "bt", "mu", "var"], ["bn"], name="/stem/bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="/stem/relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="/pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["c2"], name="/head/conv"),
        helper.make_node("GlobalAveragePool", ["c2"], ["gap"], name="/head/gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="/head/flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["y"], name="/fc", transB=1),
    ]
    inits = [_init("w1", [16, 3, 3, 3]), _init("b1", [16]), _init("g", [16]), _init("bt", [16]), _init("mu", [16]),
             _init("var", [16]), _init("w2", [32, 16, 1, 1]), _init("wfc", [10, 32]), _init("bfc", [10])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", F, [batch, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", F, [batch, 10])], inits)
    return _save(tmp_path, graph, name="cnn.onnx")


CNN_EXPECTED = [
    {"name": "stem.conv", "op": "conv2d", "ifmap": [32, 32], "kernel": [3, 3], "channels": 3, "filters": 16,
     "stride": 1, "padding": 1},
    {"name": "stem.bn", "op": "batchnorm", "elements": 16 * 32 * 32},
    {"name": "stem.relu", "op": "activation", "function": "relu", "elements": 16 * 32 * 32},
    {"name": "pool", "op": "pool", "ifmap": [32, 32], "channels": 16, "kernel": [2, 2], "stride": 2, "kind": "max"},
    {"name": "head.conv", "op": "conv2d", "ifmap": [16, 16], "kernel": [1, 1], "channels": 16, "filters": 32},
    {"name": "head.gap", "op": "pool", "ifmap": [16, 16], "channels": 32, "kernel": [16, 16], "kind": "avg"},
    {"name": "fc", "op": "gemm", "m": 10, "n": 1, "k": 32},
]


def test_cnn_matches_hand_written_workload_and_cycles(tmp_path: Path) -> None:
    data, notes = import_onnx(_cnn(tmp_path))
    assert data["dtype"] == "fp32"
    imported = workload_from_dict(data, "imported")
    hand = workload_from_dict({"name": "cnn", "dtype": "fp32", "layers": CNN_EXPECTED}, "hand")
    assert [layer.model_dump() for layer in imported.layers] == [layer.model_dump() for layer in hand.layers]
    assert any("layout op, no cost" in n and "Flatten x1" in n for n in notes)

    hw = load_hardware(ROOT / "hwconfigs" / "tpu-like.yaml")
    got, want = run(imported, hw, "2:4"), run(hand, hw, "2:4")
    assert got.total_cycles == want.total_cycles
    assert [r.cycles for r in got.layers] == [r.cycles for r in want.layers]
    assert [r.name for r in got.layers] == [layer["name"] for layer in CNN_EXPECTED]


def test_cnn_batch_is_fixed_by_the_model(tmp_path: Path) -> None:
    data, notes = import_onnx(_cnn(tmp_path, batch=2), {"batch": 8})
    assert data["layers"][0]["batch"] == 2 and data["layers"][-1]["n"] == 2
    assert any("no input has a symbolic leading dim" in n for n in notes)


def _external(name: str, shape: list[int]) -> TensorProto:
    """A float initializer whose data lives in a missing external file (only dims are present)."""
    t = TensorProto()
    t.name, t.data_type = name, F
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * int(np.prod(shape))))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def _transformer(tmp_path: Path) -> Path:
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="/attn/q_proj/MatMul"),
        helper.make_node("Transpose", ["q"], ["qt"], name="/attn/Transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "qt"], ["s"], name="/attn/scores/MatMul"),
        helper.make_node("Softmax", ["s"], ["p"], name="/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["ctx"], name="/attn/context/MatMul"),
        helper.make_node("MatMul", ["ctx", "wo"], ["o"], name="/attn/o_proj/MatMul"),
        helper.make_node("Add", ["o", "x"], ["res"], name="/attn/residual/Add"),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], name="/ln/LayerNorm", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny-transformer", [helper.make_tensor_value_info("x", F, ["batch_size", 8, 16])],
        [helper.make_tensor_value_info("y", F, ["batch_size", 8, 16])],
        [_external("wq", [16, 24]), _init("wo", [24, 16]), _init("gamma", [16]), _init("beta", [16])])
    return _save(tmp_path, graph, opset=17, name="tiny.onnx")


def test_exported_transformer_with_missing_external_weights(tmp_path: Path) -> None:
    path = _transformer(tmp_path)
    with pytest.raises(Exception):  # noqa: B017 - the default loader really wants the missing weights.bin
        onnx.load(str(path))
    data, notes = import_onnx(path, {"batch": 4})
    by_name = {layer["name"]: layer for layer in data["layers"]}
    assert by_name["attn.q_proj.MatMul"] == {"name": "attn.q_proj.MatMul", "op": "gemm", "m": 24, "n": 4 * 8, "k": 16}
    assert by_name["attn.scores.MatMul"] == {"name": "attn.scores.MatMul", "op": "matmul", "m": 8, "n": 8, "k": 24,
                                             "batch": 4}
    assert by_name["attn.context.MatMul"]["op"] == "matmul" and by_name["attn.context.MatMul"]["n"] == 24
    assert by_name["attn.o_proj.MatMul"] == {"name": "attn.o_proj.MatMul", "op": "gemm", "m": 16, "n": 32, "k": 24}
    assert by_name["attn.Softmax"] == {"name": "attn.Softmax", "op": "softmax", "elements": 4 * 8 * 8}
    assert by_name["attn.residual.Add"]["inputs"] == 2 and by_name["attn.residual.Add"]["elements"] == 4 * 8 * 16
    assert by_name["ln.LayerNorm"] == {"name": "ln.LayerNorm", "op": "layernorm", "elements": 4 * 8 * 16}
    assert "attn.Transpose" not in by_name
    assert any("batch = 4" in n and "batch_size" in n for n in notes)
    assert not any("unsupported" in n for n in notes)
    workload_from_dict(data, "imported")

    default, notes1 = import_onnx(path)
    assert {layer["name"]: layer for layer in default["layers"]}["attn.q_proj.MatMul"]["n"] == 8
    assert any("batch = 1" in n and "default" in n and "--set batch" in n for n in notes1)
    assert default["description"].endswith("with batch=1.") and data["description"].endswith("with batch=4.")


def test_other_symbolic_dims_need_a_param(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], "g",
                              [helper.make_tensor_value_info("x", F, ["batch", "seq_len", 16])],
                              [helper.make_tensor_value_info("y", F, None)], [_init("w", [16, 32])])
    path = _save(tmp_path, graph)
    with pytest.raises(AccelsimError, match=r"input 'x' dim 1 is symbolic \('seq_len'\).*--set seq_len="):
        import_onnx(path)
    data, _ = import_onnx(path, {"batch": 2, "seq_len": 5})
    assert data["layers"][0] == {"name": "proj", "op": "gemm", "m": 32, "n": 10, "k": 16}


def test_unknown_ops_are_kept_as_unsupported(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="pre"),
        helper.make_node("MyFancyOp", ["a"], ["b"], name="fancy", domain="com.example"),
        helper.make_node("Relu", ["b"], ["c"], name="post"),
        helper.make_node("TopK", ["a", "kk"], ["vals", "idx"], name="topk", axis=-1),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 64])],
                              [helper.make_tensor_value_info("vals", F, None)],
                              [numpy_helper.from_array(np.array([5], dtype=np.int64), "kk")])
    path = _save(tmp_path, graph, opset=17, extra_opsets=[helper.make_opsetid("com.example", 1)])
    data, notes = import_onnx(path)
    ops = [(layer["name"], layer["op"], layer.get("source_op"), layer["elements"]) for layer in data["layers"]]
    assert ops == [("pre", "activation", None, 128), ("fancy", "unsupported", "MyFancyOp", 128),
                   ("post", "activation", None, 128), ("topk", "unsupported", "TopK", 20)]
    text = " ".join(notes)
    assert "MyFancyOp (domain com.example) x1" in text and "TopK x1" in text
    assert "MyFancyOp: output shape unknown; assumed equal to its largest input (2x64)" in text
    workload_from_dict(data, "imported")


def test_grouped_and_depthwise_conv(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["d"], name="dw", group=8, kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d", "wg"], ["y"], name="grouped", group=2),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 8, 10, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                              [_init("wd", [8, 1, 3, 3], np.float16), _init("wg", [16, 4, 1, 1], np.float16)])
    data, _ = import_onnx(_save(tmp_path, graph))
    assert data["dtype"] == "fp16"
    dw, grouped = data["layers"]
    assert dw == {"name": "dw", "op": "conv2d", "ifmap": [10, 10], "kernel": [3, 3], "channels": 8, "filters": 8,
                  "stride": 2, "padding": 1, "batch": 1, "groups": 8}
    assert grouped["groups"] == 2 and grouped["ifmap"] == [5, 5] and grouped["channels"] == 8
    assert workload_from_dict(data, "imported").layers[0].depthwise


def test_same_upper_asymmetric_pads_and_dilation(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], name="same", auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Conv", ["a", "w2"], ["b"], name="dilated", dilations=[2, 2], pads=[2, 2, 2, 2]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("b", F, None)],
                              [_init("w", [8, 3, 3, 3]), _init("w2", [8, 8, 3, 3])])
    data, notes = import_onnx(_save(tmp_path, graph))
    wl = workload_from_dict(data, "imported")
    assert wl.layers[0].output_hw() == (112, 112)  # ONNX SAME_UPPER: pads 0 before, 1 after
    assert wl.layers[1].kernel == [5, 5] and wl.layers[1].output_hw() == (112, 112)
    assert any("asymmetric" in n for n in notes) and any("dilation" in n for n in notes)


def test_activations_clip_gather_and_shape_ops(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed"),
        helper.make_node("Clip", ["emb", "zero", "six"], ["c6"], name="relu6"),
        helper.make_node("Clip", ["c6", "zero", ""], ["c0"], name="relu"),
        helper.make_node("Erf", ["c0"], ["e"], name="erf"),
        helper.make_node("HardSwish", ["e"], ["h"], name="hswish"),
        helper.make_node("Shape", ["h"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero_i"], ["bdim"], name="gather_shape", axis=0),
        helper.make_node("Unsqueeze", ["bdim", "axes0"], ["bdim1"], name="unsq"),
        helper.make_node("Concat", ["bdim1", "minus1"], ["newshape"], name="cat_shape", axis=0),
        helper.make_node("Reshape", ["h", "newshape"], ["flat"], name="reshape"),
        helper.make_node("Mul", ["flat", "half"], ["y"], name="scale"),
        helper.make_node("Concat", ["y", "y"], ["z"], name="cat", axis=1),
        helper.make_node("LRN", ["z4"], ["lrn"], name="lrn", size=3),
        helper.make_node("Unsqueeze", ["z", "axes23"], ["z4"], name="to4d"),
    ]
    nodes = nodes[:-2] + [nodes[-1], nodes[-2]]
    inits = [_init("table", [1000, 64]), numpy_helper.from_array(np.array(0, dtype=np.float32), "zero"),
             numpy_helper.from_array(np.array(6, dtype=np.float32), "six"),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "zero_i"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1"),
             numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
             numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "axes23")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 7])],
                              [helper.make_tensor_value_info("lrn", F, None)], inits)
    data, notes = import_onnx(_save(tmp_path, graph), {"batch": 3})
    got = [(layer["name"], layer["op"], layer.get("function"), layer.get("inputs")) for layer in data["layers"]]
    assert got == [("embed", "embedding", None, None), ("relu6", "activation", "relu6", None),
                   ("relu", "activation", "relu", None), ("erf", "activation", "gelu", None),
                   ("hswish", "activation", "hardswish", None), ("scale", "elementwise", None, 1),
                   ("cat", "elementwise", None, 2), ("lrn", "elementwise", None, 1)]
    assert data["layers"][0] == {"name": "embed", "op": "embedding", "vocab": 1000, "dim": 64, "tokens": 21}
    assert data["layers"][5]["elements"] == 3 * 7 * 64 and data["layers"][6]["elements"] == 2 * 3 * 7 * 64
    text = " ".join(notes)
    assert "Reshape x1" in text and "Shape x1" in text and "Gather x1" in text  # shape chain dropped, listed
    workload_from_dict(data, "imported")


def test_clip_attributes_before_opset_11(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Clip", ["x"], ["y"], name="c", min=0.0, max=6.0)], "g",
                              [helper.make_tensor_value_info("x", F, [1, 4])],
                              [helper.make_tensor_value_info("y", F, None)])
    data, _ = import_onnx(_save(tmp_path, graph, opset=9))
    assert data["layers"][0]["function"] == "relu6"


def test_not_an_onnx_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not an ONNX model\n")
    with pytest.raises(AccelsimError) as err:
        import_onnx(bad)
    assert str(bad) in str(err.value) and "not an ONNX model" in str(err.value) and "\n" not in str(err.value)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(AccelsimError, match="not an ONNX model"):
        import_onnx(empty)
    with pytest.raises(AccelsimError, match="file not found"):
        import_onnx(tmp_path / "missing.onnx")


def test_import_onnx_command_writes_a_loadable_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accelsim.cli import main

    out = tmp_path / "workloads" / "tiny.yaml"
    model = str(_transformer(tmp_path))
    assert main(["import-onnx", model, "-o", str(out), "--set", "batch=2", "--name", "tiny-xf"]) == 0
    stdout, stderr = capsys.readouterr()
    lines = stderr.splitlines()
    assert stdout == "" and lines[0].startswith(f"wrote {out}") and any("batch = 2" in ln for ln in lines)
    assert all(ln.startswith("note: ") for ln in lines[1:])
    text = out.read_text()
    assert text.startswith("# Generated by `accelsim import-onnx` from ") and "tiny.onnx" in text.splitlines()[0]
    wl = load_workload(out)
    assert wl.name == "tiny-xf" and wl.layers[0].n == 16
    assert not list(out.parent.glob(".*.tmp"))
    assert main(["import-onnx", model, "--set", "batch=2", "--name", "tiny-xf"]) == 0  # without -o: the YAML
    assert capsys.readouterr().out == text
    assert main(["import-onnx", model, "-o", str(out), "--set", "batch"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["import-onnx", model, "-o", str(out), "--set", "batch=0"]) == 2
    assert "positive integer" in capsys.readouterr().err


def test_import_onnx_returns_a_typed_result(tmp_path: Path) -> None:
    result = import_onnx(_transformer(tmp_path), {"batch": 2}, name="renamed")
    assert isinstance(result, OnnxImport) and isinstance(result.notes, tuple)
    assert result.workload["name"] == "renamed" and result.notes[0].startswith(f"{len(result.workload['layers'])} ")
    with pytest.raises(AttributeError):
        result.notes = ()  # type: ignore[misc]


# ----------------------------------------------------------------------------- hostile inputs (issue #15)

CORPUS = ROOT / "tests" / "corpus"


def _cli_fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in-process: exit 2 and exactly one stderr line, which is returned."""
    from accelsim.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("accelsim: error: ") and "Traceback" not in err, err
    return err.strip()


def test_set_batch_on_a_symbolic_batch_says_it_was_applied(tmp_path: Path) -> None:
    """A10: --set batch=8 on a model whose leading dim is named 'batch' was applied, yet the note said
    'no input has a symbolic leading dim'."""
    path = CORPUS / "onnx-symbolic-batch.onnx"
    data, notes = import_onnx(path, {"batch": 8})
    assert data["layers"][0]["batch"] == 8
    assert any("batch = 8 (--set batch=8) for symbolic dim 'batch' of input 'x'" in n for n in notes), notes
    assert not any("no input has a symbolic leading dim" in n for n in notes)
    _, default_notes = import_onnx(path)
    assert any("batch = 1 (the default" in n for n in default_notes)
    # a leading dim with its own parameter is not the batch: --set batch then really is unused
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", F, ["N", 4])],
                              [helper.make_tensor_value_info("y", F, ["N", 4])])
    data, notes = import_onnx(_save(tmp_path, graph), {"N": 3, "batch": 8})
    assert data["layers"][0]["elements"] == 12
    assert any("batch=8 was given but no input has a symbolic leading dim" in n for n in notes)


@pytest.mark.parametrize("corpus, message", [
    ("onnx-conv-strides0.onnx", "node '/layer1/conv' (Conv): attribute strides [0, 0]: every value must be >= 1"),
    ("onnx-conv-pads-negative.onnx", "node '/layer1/conv' (Conv): attribute pads [-1, -1, -1, -1]: every value "
                                     "must be >= 0"),
    ("onnx-conv-dilations0.onnx", "node '/layer1/conv' (Conv): attribute dilations [0, 0]: every value must be >= 1"),
    ("onnx-conv-kernel-too-large.onnx", "node '/layer1/conv' (Conv): attribute kernel_shape [9, 9] is larger than "
                                        "the padded input [8, 8]"),
])
def test_bad_conv_attributes_are_one_line_errors(capsys: pytest.CaptureFixture[str], corpus: str,
                                                 message: str) -> None:
    """B10: strides 0 raised ZeroDivisionError; dilations 0 silently became a 1x1 kernel."""
    line = _cli_fails(capsys, "import-onnx", str(CORPUS / corpus))
    assert str(CORPUS / corpus) in line and message in line


@pytest.mark.parametrize("op, attrs, message", [
    ("Conv", {"kernel_shape": [3, 3], "group": 0}, "attribute group 0: must be >= 1"),
    ("Conv", {"kernel_shape": [3, 3], "strides": [1]}, "attribute strides [1]: expected 2 integers"),
    ("Conv", {"kernel_shape": [3, 3], "dilations": [5, 5]}, "kernel_shape [3, 3] (dilated to [11, 11]) is larger"),
    ("Conv", {"kernel_shape": [5, 5]}, "attribute kernel_shape [5, 5] does not match the weight 'w'"),
    ("Conv", {"kernel_shape": [3, 3], "auto_pad": "SOMETIMES"}, "attribute auto_pad 'SOMETIMES'"),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [0, 0]}, "(MaxPool): attribute strides [0, 0]"),
    ("MaxPool", {"kernel_shape": [0, 0]}, "(MaxPool): attribute kernel_shape [0, 0]: every value must be >= 1"),
    ("AveragePool", {"kernel_shape": [9, 9]}, "(AveragePool): attribute kernel_shape [9, 9] is larger"),
])
def test_other_bad_spatial_attributes(tmp_path: Path, op: str, attrs: dict, message: str) -> None:
    inputs = ["x", "w"] if op == "Conv" else ["x"]
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], name="n1", **attrs)], "g",
                              [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [_init("w", [4, 3, 3, 3])] if op == "Conv" else [])
    with pytest.raises(AccelsimError) as err:
        import_onnx(_save(tmp_path, graph))
    assert "node 'n1'" in str(err.value) and message in str(err.value) and "\n" not in str(err.value)


def test_sizes_beyond_2p31_are_refused_naming_the_tensor(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """B2: a [2^40, 2^40] initializer was passed through into the workload."""
    line = _cli_fails(capsys, "import-onnx", str(CORPUS / "onnx-initializer-2p40.onnx"))
    assert "initializer 'w' dim 0 is 1,099,511,627,776" in line and "2^31-1" in line
    # every input dim fine, but the GEMM's n (batch x rows) passes 2^31-1: the node is named
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")], "g",
                              [helper.make_tensor_value_info("x", F, ["batch", 65536, 16])],
                              [helper.make_tensor_value_info("y", F, None)], [_init("w", [16, 32])])
    path = _save(tmp_path, graph)
    with pytest.raises(AccelsimError, match=r"node '/fc/MatMul' \(MatMul\): gemm n = 4,294,967,296: every size"):
        import_onnx(path, {"batch": 65536})
    line = _cli_fails(capsys, "import-onnx", str(path), "--set", "batch=4294967296")
    assert "batch: --set value 4,294,967,296 is above accelsim's limit of 2^31-1" in line
    fixed = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", F, [2**31, 2])],
                              [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(AccelsimError, match=r"input 'x' dim 0 is 2,147,483,648; every dimension must be between 1"):
        import_onnx(_save(tmp_path, fixed, name="fixed.onnx"))
    data, _ = import_onnx(path, {"batch": 2})  # within the limits: the emitted workload loads
    workload_from_dict(data, "imported")


def test_dtype_overrides_the_graphs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """D5: an fp32 graph deployed as fp16 / int8: --dtype is written into the workload."""
    from accelsim.cli import main

    out = tmp_path / "cnn.yaml"
    assert main(["import-onnx", str(_cnn(tmp_path)), "-o", str(out), "--dtype", "fp16"]) == 0
    err = capsys.readouterr().err
    assert "note: dtype fp16 (--dtype; the graph's tensors are fp32)" in err
    assert load_workload(out).dtype == "fp16"
    data, notes = import_onnx(_cnn(tmp_path), dtype="int8")
    assert data["dtype"] == "int8" and workload_from_dict(data, "x").dtype_bytes == 1
    data, notes = import_onnx(_cnn(tmp_path), dtype="fp32")  # the graph's own: no note
    assert data["dtype"] == "fp32" and not any("--dtype" in n for n in notes)
    with pytest.raises(AccelsimError, match="unknown dtype 'fp64'"):
        import_onnx(_cnn(tmp_path), dtype="fp64")
    with pytest.raises(SystemExit) as exc:
        main(["import-onnx", str(_cnn(tmp_path)), "--dtype", "fp64"])
    assert exc.value.code == 2 and "invalid choice: 'fp64'" in capsys.readouterr().err


def test_write_failure_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _cli_fails(capsys, "import-onnx", str(_cnn(tmp_path)), "-o", str(blocker / "out.yaml"))
    assert str(blocker) in line
    target = tmp_path / "dir.yaml"
    target.mkdir()
    line = _cli_fails(capsys, "import-onnx", str(_cnn(tmp_path)), "-o", str(target))
    assert str(target) in line and not list(tmp_path.glob(".*.tmp"))


def test_onnx_is_imported_only_when_a_model_is_read() -> None:
    """onnx is an optional dependency: the importer package and the CLI load without it."""
    import subprocess
    import sys

    code = "import sys, accelsim.workloads.onnx, accelsim.cli; print('onnx' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "False"


def test_integer_ops_keep_their_int8_type_or_say_they_do_not(tmp_path: Path) -> None:
    """MatMulInteger was imported as a plain fp32 gemm (4x the operand bytes, the fp32 rate) with no note; a Gemm
    reading a non-constant C (a residual) and ConvInteger were costed without saying what was left out."""
    inits = [numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s"),
             numpy_helper.from_array(np.array(0, dtype=np.int8), "zp"),
             _init("w", [256, 512], np.int8), _init("wc", [8, 4, 3, 3], np.int8), _init("wg", [512, 512])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], name="quant"),
             helper.make_node("MatMulInteger", ["xq", "w", "zp", "zp"], ["y32"], name="mmi"),
             helper.make_node("Cast", ["y32"], ["yf"], name="cast", to=F),
             helper.make_node("Gemm", ["yf", "wg", "yf"], ["res"], name="residual_gemm"),
             helper.make_node("QuantizeLinear", ["img", "s", "zp"], ["imgq"], name="quant_img"),
             helper.make_node("ConvInteger", ["imgq", "wc", "zp", "zp"], ["c32"], name="convi")]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", F, [64, 256]),
                                           helper.make_tensor_value_info("img", F, [1, 4, 16, 16])],
                              [helper.make_tensor_value_info("res", F, [64, 512]),
                               helper.make_tensor_value_info("c32", TensorProto.INT32, [1, 8, 14, 14])], inits)
    data, notes = import_onnx(_save(tmp_path, graph))
    layers = {lay["name"]: lay for lay in data["layers"]}
    assert layers["mmi"] == {"name": "mmi", "op": "gemm", "m": 512, "n": 64, "k": 256, "dtype": "int8",
                             "out_dtype": "int32"}
    assert "dtype" not in layers["residual_gemm"] and data["dtype"] == "fp32"
    assert "MatMulInteger costed as an int8 GEMM (dtype: int8, C written as int32)" in notes
    assert any(n.startswith("Gemm with a non-constant C input") and "not costed" in n for n in notes)
    assert any(n.startswith("ConvInteger costed as a conv2d in the workload dtype") for n in notes)
    model = workload_from_dict(data)  # the emitted workload loads with the GEMM's own element types
    mmi = next(lay for lay in model.layers if lay.name == "mmi")
    assert (mmi.dtype, mmi.out_dtype) == ("int8", "int32")
