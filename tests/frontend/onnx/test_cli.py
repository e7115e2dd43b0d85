"""``hpvm compile model.onnx``: the portable module (fused by default), an
executable, and one clear error listing every unsupported operator."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hpvm.cli import main
from hpvm.ir.graph import TensorBody
from hpvm.ir.text import load_module


def save_model(path, nodes, initializers=()):
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def conv_relu(path):
    w = np.random.default_rng(0).standard_normal((3, 2, 3, 3)).astype(np.float32)
    return save_model(path, [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                             helper.make_node("Relu", ["c"], ["y"], name="relu")],
                      [numpy_helper.from_array(w, "w")])


def test_emit_ir_writes_the_fused_module(tmp_path, capsys):
    out = tmp_path / "m.hpvm"
    assert main(["compile", conv_relu(tmp_path / "model.onnx"), "--emit", "ir",
                 "-o", str(out)]) == 0
    graph = load_module(out).root_graph
    assert graph.param("x").type.shape == ("N", 2, 5, 5)
    ops = [n.body.op for n in graph.nodes if isinstance(n.body, TensorBody)]
    assert ops == ["conv2d"]
    assert graph.node("conv").body.attrs["activation"] == "relu"


def test_an_onnx_model_compiles_to_an_executable_that_runs(tmp_path, capsys):
    exe = tmp_path / "m.hpvmx"
    assert main(["compile", conv_relu(tmp_path / "model.onnx"), "--targets", "cpu",
                 "-o", str(exe)]) == 0
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(exe), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["y"].shape == (2, 3, 3, 3)
        assert saved["y"].min() >= 0


def test_unsupported_operators_are_one_error_naming_ops_and_nodes(tmp_path, capsys):
    path = save_model(tmp_path / "odd.onnx", [
        helper.make_node("Det", ["x"], ["a"], name="det1"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Det", ["b"], ["c"], name="det2"),
        helper.make_node("NonZero", ["c"], ["y"], name="nz")])
    assert main(["compile", path, "--emit", "ir", "-o", str(tmp_path / "m.hpvm")]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "unsupported ONNX operators" in line]
    assert len(lines) == 1
    assert "Det (nodes 'det1', 'det2'); NonZero (node 'nz')" in lines[0]
    assert "odd.onnx" in err
    assert not (tmp_path / "m.hpvm").exists()


@pytest.mark.parametrize("name", ["missing.onnx"])
def test_a_missing_model_file_is_named(tmp_path, capsys, name):
    assert main(["compile", str(tmp_path / name), "--emit", "ir",
                 "-o", str(tmp_path / "m.hpvm")]) == 1
    assert name in capsys.readouterr().err
