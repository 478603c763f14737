"""ONNX import of malformed or hostile models: one line naming the file and the node, exit code 2, no traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from accelsim.errors import AccelsimError  # noqa: E402
from accelsim.workloads.model import workload_from_dict  # noqa: E402
from accelsim.workloads.onnx import import_onnx, workload_yaml  # noqa: E402

F = TensorProto.FLOAT
vi = helper.make_tensor_value_info
node = helper.make_node


def _const(name: str, value: Any, dtype: type = np.float32) -> TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _w(name: str, shape: list[int]) -> TensorProto:
    return _const(name, np.zeros(shape), np.float32)


def _save(path: Path, nodes: list, inputs: list, inits: list | None = None) -> Path:
    """A model written exactly as built (never checked or sorted by onnx)."""
    graph = helper.make_graph(nodes, "g", inputs, [vi("y", F, None)], list(inits or []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _cli_fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in-process: exit 2 and exactly one stderr line, no traceback, nothing on stdout."""
    from accelsim.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("accelsim: error: ") and "Traceback" not in err, err
    return err.strip()


X = [vi("x", F, [8, 64])]
X4 = [vi("x", F, [1, 3, 8, 8])]
W = [_w("W", [64, 32])]
WC = [_w("Wc", [8, 3, 3, 3])]

MALFORMED = {
    "matmul-scalar": ([node("MatMul", ["x", "W"], ["y"], name="mm")], [vi("x", F, [])], W,
                      "node 'mm' (MatMul): input 'x' is a scalar (shape []); MatMul needs operands of rank 1 or more"),
    "matmul-one-input": ([node("MatMul", ["x"], ["y"], name="mm")], X, [], "node 'mm' (MatMul): expects 2 inputs, "
                                                                           "has 1"),
    "matmul-three-inputs": ([node("MatMul", ["x", "W", "W"], ["y"], name="mm")], X, W,
                            "node 'mm' (MatMul): expects 2 inputs, has 3"),
    "matmul-empty-input": ([node("MatMul", ["x", ""], ["y"], name="mm")], X, [],
                           "node 'mm' (MatMul): input 1 is empty (the name ''), but the op requires it"),
    "qlinearmatmul-one-input": ([node("QLinearMatMul", ["x"], ["y"], name="q")], [vi("x", TensorProto.INT8, [8, 64])],
                                [], "node 'q' (QLinearMatMul): expects 8 inputs, has 1"),
    "gemm-one-input": ([node("Gemm", ["x"], ["y"], name="g")], X, [],
                       "node 'g' (Gemm): expects at least 2 inputs, has 1"),
    "conv-one-input": ([node("Conv", ["x"], ["y"], name="c")], X4, [],
                       "node 'c' (Conv): expects at least 2 inputs, has 1"),
    "gather-one-input": ([node("Gather", ["x"], ["y"], name="ga")], X, [], "node 'ga' (Gather): expects 2 inputs, "
                                                                           "has 1"),
    "gemm-no-output": ([node("Gemm", ["x", "W"], [], name="g"), node("Relu", ["x"], ["y"], name="r")], X, W,
                       "node 'g' (Gemm): has no output (output 0 is missing or empty)"),
    "matmul-no-output": ([node("MatMul", ["x", "W"], [], name="mm"), node("Relu", ["x"], ["y"], name="r")], X, W,
                         "node 'mm' (MatMul): has no output (output 0 is missing or empty)"),
    "conv-no-output": ([node("Conv", ["x", "Wc"], [], name="c"), node("Relu", ["x"], ["y"], name="r")], X4, WC,
                       "node 'c' (Conv): has no output (output 0 is missing or empty)"),
    "conv-weight-rank-2": ([node("Conv", ["x", "W"], ["y"], name="c")], X4, W,
                           "node 'c' (Conv): weight 'W' has shape [64, 32]; expected filters x channels x kernel"),
    "conv-input-rank": ([node("Conv", ["x", "Wc"], ["y"], name="c")], X, WC,
                        "node 'c' (Conv): input 'x' has shape [8, 64] (rank 2) but the weight 'Wc' [8, 3, 3, 3] "
                        "needs rank 4"),
    "maxpool-2d-input": ([node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2])], X, [],
                         "node 'p' (MaxPool): input 'x' has shape [8, 64]; expected batch x channels x spatial dims"),
    "transpose-perm": ([node("Transpose", ["x"], ["t"], name="tp", perm=[5, 0]),
                        node("MatMul", ["t", "W"], ["y"], name="mm")], X, W,
                       "node 'tp' (Transpose): attribute perm [5, 0] is not a permutation of the 2 axes of input 'x'"),
    "unsqueeze-axes-range": ([node("Unsqueeze", ["x", "ax"], ["u"], name="u"), node("Relu", ["u"], ["y"], name="r")],
                             X, [_const("ax", [0, 0, 9], np.int64)],
                             "node 'u' (Unsqueeze): axes [0, 0, 9] is out of range for rank 5"),
    "unsqueeze-axes-twice": ([node("Unsqueeze", ["x", "ax"], ["u"], name="u"), node("Relu", ["u"], ["y"], name="r")],
                             X, [_const("ax", [0, -4], np.int64)],
                             "node 'u' (Unsqueeze): axes [0, -4] names an axis twice"),
    "squeeze-not-1": ([node("Squeeze", ["x", "ax"], ["u"], name="s"), node("Relu", ["u"], ["y"], name="r")],
                      X, [_const("ax", [1], np.int64)],
                      "node 's' (Squeeze): axes [1] name a dimension of input 'x' (shape [8, 64]) whose size is not 1"),
    "concat-axis": ([node("Concat", ["x", "x"], ["y"], name="c", axis=7)], X, [],
                    "node 'c' (Concat): attribute axis 7 is out of range for input 'x' of shape [8, 64] (rank 2)"),
    "flatten-axis": ([node("Flatten", ["x"], ["f"], name="f", axis=9), node("Relu", ["f"], ["y"], name="r")], X, [],
                     "node 'f' (Flatten): attribute axis 9 is out of range"),
    "softmax-axis": ([node("Softmax", ["x"], ["y"], name="sm", axis=-3)], X, [],
                     "node 'sm' (Softmax): attribute axis -3 is out of range"),
    "clip-empty-min": ([node("Clip", ["x", "lo"], ["y"], name="c")], X, [_const("lo", [])],
                       "node 'c' (Clip): input 1 'lo' (min) must be a single number, got 0 float32 values"),
    "reshape-two-minus-one": ([node("Reshape", ["x", "s"], ["r"], name="rs"), node("Relu", ["r"], ["y"], name="r")],
                              X, [_const("s", [-1, -1], np.int64)],
                              "node 'rs' (Reshape): target [-1, -1] of input 's': at most one -1"),
    "reshape-allowzero-empty": ([node("Reshape", ["x", "s"], ["r"], name="rs", allowzero=1),
                                 node("Relu", ["r"], ["y"], name="r")], X, [_const("s", [0, 0, 0], np.int64)],
                                "node 'rs' (Reshape): output 'r' of shape [0, 0, 0] has 0 elements but the input has "
                                "512 (shape [8, 64]); a layout op keeps the element count"),
    "reshape-huge": ([node("Reshape", ["x", "s"], ["r"], name="rs"), node("Relu", ["r"], ["y"], name="r")],
                     X, [_const("s", [2**40, 2**40], np.int64)], "node 'rs' (Reshape): output 'r' of shape "
                     "[1099511627776, 1099511627776] has 1,208,925,819,614,629,174,706,176 elements but the input "
                     "has 512"),
    "slice-empty": ([node("Slice", ["x", "st", "en", "ax"], ["s"], name="sl"), node("Relu", ["s"], ["y"], name="r")],
                    X, [_const("st", [5], np.int64), _const("en", [5], np.int64), _const("ax", [0], np.int64)],
                    "node 'sl' (Slice): unsupported elements = 0: 's' has shape [0, 64]; a zero-size tensor does no "
                    "work and accelsim's layers need at least one element"),
    "cycle": ([node("Add", ["x", "b"], ["a"], name="n1"), node("Relu", ["a"], ["b"], name="n2"),
               node("Relu", ["b"], ["y"], name="n3")], X, [],
              "node 'n1' (Add): is in a cycle ('n1' -> 'n2' -> 'n1'); an ONNX graph must be acyclic"),
    "self-loop": ([node("Relu", ["x"], ["y"], name="r"), node("Add", ["x", "s"], ["s"], name="loop")], X, [],
                  "node 'loop' (Add): is in a cycle ('loop' -> 'loop')"),
    "written-twice": ([node("Relu", ["x"], ["y"], name="a"), node("Sigmoid", ["x"], ["y"], name="b")], X, [],
                      "node 'b' (Sigmoid): output 'y' is already written by node 'a'; every value must have one "
                      "producer"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_nodes_are_one_line_naming_the_node(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      case: str) -> None:
    """Audit: each of these crashed with an IndexError / StopIteration traceback (rc 1), or was accepted
    (a cycle; a Reshape to zero elements, or an empty Slice and its consumers, became 1-element layers)."""
    nodes, inputs, inits, message = MALFORMED[case]
    path = _save(tmp_path / f"{case}.onnx", nodes, inputs, inits)
    line = _cli_fails(capsys, "import-onnx", str(path))
    assert line.startswith(f"accelsim: error: {path}: {message}"), line


def test_an_unsorted_acyclic_graph_is_imported_in_dependency_order(tmp_path: Path) -> None:
    nodes = [node("Relu", ["a"], ["y"], name="second"), node("MatMul", ["x", "W"], ["a"], name="first")]
    data, _ = import_onnx(_save(tmp_path / "m.onnx", nodes, X, W))
    assert [layer["name"] for layer in data["layers"]] == ["first", "second"]


def test_reshape_allowzero_with_a_nonzero_target_still_imports(tmp_path: Path) -> None:
    nodes = [node("Reshape", ["x", "s"], ["r"], name="rs", allowzero=1), node("Relu", ["r"], ["y"], name="r")]
    data, _ = import_onnx(_save(tmp_path / "m.onnx", nodes, X, [_const("s", [64, 8], np.int64)]))
    assert data["layers"] == [{"name": "r", "op": "activation", "function": "relu", "elements": 512}]


def test_an_unexpected_error_in_one_node_names_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last resort behind the checks: an IndexError in a handler is one line naming the node and op."""
    from accelsim.workloads.onnx import importer

    def broken(*_: Any) -> None:
        return [][0]  # type: ignore[no-any-return]

    monkeypatch.setattr(importer, "handler_for", lambda op: broken)
    path = _save(tmp_path / "m.onnx", [node("Relu", ["x"], ["y"], name="r")], X)
    with pytest.raises(AccelsimError) as err:
        import_onnx(path)
    assert str(err.value) == f"{path}: node 'r' (Relu): cannot be imported (IndexError: list index out of range)"


# ----------------------------------------------------------------------------- the file itself

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: `mkfifo f.onnx; accelsim import-onnx f.onnx` hung forever."""
    fifo = tmp_path / "f.onnx"
    os.mkfifo(fifo)
    line = _cli_fails(capsys, "import-onnx", str(fifo))
    assert line == f"accelsim: error: {fifo}: is not a regular file (a device, pipe or socket); expected an .onnx file"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_is_refused_without_reading_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: /dev/zero grew to 3.4 GB of memory, then a MemoryError traceback."""
    line = _cli_fails(capsys, "import-onnx", "/dev/zero")
    assert line == "accelsim: error: /dev/zero: is not a regular file (a device, pipe or socket); expected an " \
                   ".onnx file"


def test_a_file_over_the_cap_is_refused_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from accelsim import limits

    assert limits.MAX_ONNX_BYTES == 2**31  # the real cap admits any model protobuf can hold in one message
    path = _save(tmp_path / "m.onnx", [node("Relu", ["x"], ["y"], name="r")], X)
    monkeypatch.setattr(limits, "MAX_ONNX_BYTES", 16)
    line = _cli_fails(capsys, "import-onnx", str(path))
    assert line.startswith(f"accelsim: error: {path}: file is {path.stat().st_size:,} bytes; ONNX files are limited "
                           "to 16 bytes")
    for missing, problem in ((tmp_path / "nope.onnx", "file not found"),
                             (tmp_path, "is a directory, expected an .onnx file")):
        assert _cli_fails(capsys, "import-onnx", str(missing)) == f"accelsim: error: {missing}: {problem}"


# ----------------------------------------------------------------------------- names

@pytest.mark.parametrize("name, problem", [
    ("\x1b[31m", "--name: '\\x1b[31m' contains a control character (a newline, ESC or similar); a workload name "
                 "is printable text"),
    ("a\nb", "--name: 'a\\nb' contains a control character"),
    ("", "--name: must not be empty (a workload needs a name)"),
    ("  ", "--name: must not be empty"),
])
def test_bad_workload_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                        problem: str) -> None:
    """Audit: --name was applied after validation: '' silently ignored, a newline or ESC accepted."""
    path = _save(tmp_path / "m.onnx", [node("Relu", ["x"], ["y"], name="r")], X)
    out = tmp_path / "w.yaml"
    line = _cli_fails(capsys, "import-onnx", str(path), "--name", name, "-o", str(out))
    assert line.startswith(f"accelsim: error: {path}: {problem}"), line
    assert not out.exists()  # nothing half-written


def test_a_good_name_replaces_the_stem(tmp_path: Path) -> None:
    data, _ = import_onnx(_save(tmp_path / "m.onnx", [node("Relu", ["x"], ["y"], name="r")], X), name="my model")
    assert data["name"] == "my model"


def test_a_path_with_a_newline_cannot_break_the_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Audit: a model named 'evil\\nlayers: []\\n#.onnx' went raw into the header comment, so the YAML broke."""
    from accelsim.cli import main

    path = _save(tmp_path / "evil\nlayers: []\n#.onnx", [node("Relu", ["x"], ["y"], name="r")], X)
    data, notes = import_onnx(path)
    text = workload_yaml(data, notes, str(path))
    assert "\nlayers: []" not in text and "evil\\nlayers: []\\n#.onnx" in text.splitlines()[0]
    assert yaml.safe_load(text) == data
    workload_from_dict(yaml.safe_load(text), "w.yaml")
    out = tmp_path / "w.yaml"
    assert main(["import-onnx", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and all(line.startswith(("wrote ", "note: ")) for line in err.splitlines()), err
    assert yaml.safe_load(out.read_text()) == data


def test_reading_stops_past_the_cap_even_when_the_file_grew_after_the_stat() -> None:
    import io

    from accelsim.workloads.onnx.reading import _read_capped

    assert _read_capped(io.BytesIO(b"x" * 10), 3, 5) == b"x" * 6  # cap + 1: the caller refuses it
    assert _read_capped(io.BytesIO(b"x" * 10), 10, 100) == b"x" * 10
    assert _read_capped(io.BytesIO(b""), 0, 100) == b""
