"""ONNX models become Modules of tensor-op nodes that compute what
onnxruntime computes."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hpvm.errors import ParseError
from hpvm.frontend.onnx import compile_onnx, load
from hpvm.ir.graph import ConstantBody, TensorBody
from hpvm.ir.text import parse_module, print_module
from hpvm.runtime import compile

ort = pytest.importorskip("onnxruntime")


def onnxruntime_outputs(model, **inputs):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    # onnx's newest IR version may be past the installed onnxruntime's (onnx 1.23
    # writes 14; onnxruntime 1.30 reads up to 13): 8 is what opset 17 needs.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def tensor(name, shape, element=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, element, shape)


def conv_relu_model():
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return make_model(nodes, [tensor("x", ["batch", 3, 8, 8])], [tensor("y", None)],
                      [numpy_helper.from_array(w, "w")])


def test_weights_become_constant_nodes_and_the_batch_a_symbol():
    module = load(conv_relu_model(), optimize=False)
    graph = module.root_graph
    assert graph.param("x").type.shape == ("batch", 3, 8, 8)
    assert graph.param("y").type.shape == ("batch", 4, 8, 8)
    kinds = {n.name: type(n.body) for n in graph.nodes}
    assert kinds == {"conv": TensorBody, "conv_w": ConstantBody, "relu": TensorBody}


def test_load_fuses_by_default():
    graph = load(conv_relu_model()).root_graph
    conv = graph.node("conv")
    assert [n.name for n in graph.nodes if isinstance(n.body, TensorBody)] == ["conv"]
    assert conv.body.attrs["activation"] == "relu"


def test_imported_module_round_trips_through_text():
    module = load(conv_relu_model())
    assert print_module(parse_module(print_module(module))) == print_module(module)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_conv_relu_matches_onnxruntime(target):
    model = conv_relu_model()
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = compile(load(model), [target])(x=x)["y"]
    np.testing.assert_allclose(out, onnxruntime_outputs(model, x=x)[0], rtol=1e-5, atol=1e-5)


def test_unsupported_operators_are_listed_by_name_and_node_in_one_error():
    nodes = [helper.make_node("Det", ["x"], ["a"], name="det1"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Det", ["b"], ["c"], name="det2"),
             helper.make_node("GridSample", ["c", "c"], ["y"], name="hm")]
    model = make_model(nodes, [tensor("x", [2, 3])], [tensor("y", [2, 3])])
    with pytest.raises(ParseError) as info:
        load(model)
    message = str(info.value)
    assert "Det (nodes 'det1', 'det2')" in message
    assert "GridSample (node 'hm')" in message
    assert len(info.value.diagnostics) == 1


def test_unsupported_attribute_names_the_node_and_attribute():
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], storage_order=1,
                              name="pool")]
    model = make_model(nodes, [tensor("x", [1, 1, 5, 5])], [tensor("y", None)])
    with pytest.raises(ParseError, match="MaxPool node 'pool'.*storage_order"):
        load(model)


def test_reshape_through_shape_arithmetic_keeps_the_symbolic_batch():
    torch = pytest.importorskip("torch")
    from hpvm.frontend.onnx.testing import export

    class View(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x.view(x.size(0), -1))

    module = load(export(View(), (2, 3, 4)))
    assert module.root_graph.param("y").type.shape == ("N", 24)
    x = np.arange(2 * 24, dtype=np.float32).reshape(2, 2, 3, 4) - 20
    out = compile(module, ["interp"])(x=x)["y"]
    np.testing.assert_array_equal(out, np.maximum(x.reshape(2, -1), 0))


def test_same_auto_padding_is_resolved_from_the_input_size():
    w = np.ones((1, 1, 3, 3), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])]
    model = make_model(nodes, [tensor("x", [1, 1, 6, 6])], [tensor("y", None)],
                       [numpy_helper.from_array(w, "w")])
    x = np.random.default_rng(0).standard_normal((1, 1, 6, 6)).astype(np.float32)
    out = compile(load(model), ["interp"])(x=x)["y"]
    np.testing.assert_allclose(out, onnxruntime_outputs(model, x=x)[0], rtol=1e-5, atol=1e-5)


def test_gemm_with_transposed_constant_weights_stores_them_untransposed():
    w = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")]
    model = make_model(nodes, [tensor("x", ["N", 4])], [tensor("y", None)],
                       [numpy_helper.from_array(w, "w")])
    module = load(model)
    fc = module.root_graph.node("fc")
    assert fc.body.attrs["trans_b"] is False
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    out = compile(module, ["cpu"])(x=x)["y"]
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)


def test_an_output_that_is_an_input_is_copied():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])],
                       [tensor("x", [2, 2])], [tensor("y", [2, 2])])
    x = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(compile(load(model), ["interp"])(x=x)["y"], x)


def test_load_reads_a_file_and_compile_onnx_verifies(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(conv_relu_model(), path)
    module = compile_onnx(path)
    assert module.root_graph.param("x").type.shape[0] == "batch"


def test_a_file_that_is_not_onnx_is_reported_with_its_path(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"not a model")
    with pytest.raises(ParseError, match="broken.onnx"):
        load(path)
