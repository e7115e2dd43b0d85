"""fuse-elementwise merges chains of elementwise ops into one elementwise
node that computes exactly what the chain did."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.ir.graph import TensorBody
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import TENSOR_PIPELINE, run_pipeline
from hpvm.runtime import compile

RNG = np.random.default_rng(0)


def model(nodes, inputs, initializers=None, outputs=("y",), opset=17):
    """An ONNX model of float inputs (float initializers as f32, integer
    ones as they are), loaded without optimisation."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                     for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(a, np.float32) if np.asarray(a).dtype.kind == "f"
                                 else np.asarray(a), n)
         for n, a in (initializers or {}).items()])
    return load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
                optimize=False)


def ops(module):
    return [n.body.op for n in module.root_graph.nodes if hasattr(n.body, "op")]


def chain_model():
    """y = sigmoid(clip(tanh(x + s) * t, -0.5, 0.5)) with s, t broadcast."""
    return model([helper.make_node("Add", ["x", "s"], ["a"]),
                  helper.make_node("Tanh", ["a"], ["b"]),
                  helper.make_node("Mul", ["t", "b"], ["c"]),
                  helper.make_node("Clip", ["c"], ["d"], min=-0.5, max=0.5),
                  helper.make_node("Sigmoid", ["d"], ["y"])],
                 {"x": ["N", 3, 4], "t": [3, 1]}, {"s": RNG.standard_normal(4)})


def test_a_chain_becomes_one_node_with_every_step():
    after = run_pipeline(chain_model(), "fuse-elementwise", verify_each=True)
    assert ops(after) == ["elementwise"]
    fused = next(n for n in after.root_graph.nodes if getattr(n.body, "op", "") == "elementwise")
    assert fused.body.attrs["steps"] == (("add", 1), ("tanh",), ("mul", 2),
                                         ("clipped_relu", -0.5, 0.5), ("sigmoid",))


def test_the_fused_chain_computes_exactly_what_the_ops_did():
    before = chain_model()
    after = run_pipeline(before, "fuse-elementwise")
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    t = RNG.standard_normal((3, 1)).astype(np.float32)
    for target in ("interp", "cpu"):
        np.testing.assert_array_equal(compile(after, [target])(x=x, t=t)["y"],
                                      compile(before, [target])(x=x, t=t)["y"])


def test_the_fused_module_round_trips_through_text():
    after = run_pipeline(chain_model(), "fuse-elementwise")
    assert print_module(parse_module(print_module(after))) == print_module(after)


def test_a_value_read_twice_ends_the_chain():
    before = model([helper.make_node("Relu", ["x"], ["r"]),
                    helper.make_node("Tanh", ["r"], ["t"]),
                    helper.make_node("Add", ["r", "t"], ["y"])], {"x": [2, 3]})
    after = run_pipeline(before, "fuse-elementwise", verify_each=True)
    assert sorted(ops(after)) == ["elementwise", "relu"]


def test_an_add_that_broadcasts_the_value_larger_ends_the_chain():
    before = model([helper.make_node("Relu", ["x"], ["r"]),
                    helper.make_node("Add", ["r", "z"], ["y"])], {"x": [3], "z": [2, 3]})
    after = run_pipeline(before, "fuse-elementwise", verify_each=True)
    assert ops(after) == ["relu", "add"]


def test_an_intermediate_graph_output_is_kept():
    before = model([helper.make_node("Relu", ["x"], ["r"]),
                    helper.make_node("Tanh", ["r"], ["y"])], {"x": [2]}, outputs=("y", "r"))
    after = run_pipeline(before, "fuse-elementwise", verify_each=True)
    assert ops(after) == ["relu", "tanh"]


def test_the_tensor_pipeline_leaves_a_resnet_tail_as_one_conv():
    """relu(bn(conv(x)) + x): the batchnorm goes into the conv's weights,
    the add into its residual summand ``z``, the relu into its
    activation."""
    c = 3
    before = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
                    helper.make_node("Add", ["n", "x"], ["a"]),
                    helper.make_node("Relu", ["a"], ["y"])], {"x": ["N", c, 4, 4]},
                   {"w": RNG.standard_normal((c, c, 3, 3)), "s": RNG.uniform(0.5, 1.5, c),
                    "b": RNG.standard_normal(c), "m": RNG.standard_normal(c),
                    "v": RNG.uniform(0.5, 2, c)})
    after = run_pipeline(before, TENSOR_PIPELINE, verify_each=True)
    assert ops(after) == ["conv2d"]
    conv = next(n for n in after.root_graph.nodes if isinstance(n.body, TensorBody))
    assert "z" in {p.name for p in conv.body.params} and conv.body.attrs["activation"] == "relu"
    x = RNG.standard_normal((2, c, 4, 4)).astype(np.float32)
    expected = compile(before, ["interp"])(x=x)["y"]
    for target in ("interp", "cpu"):
        np.testing.assert_allclose(compile(after, [target])(x=x)["y"], expected,
                                   rtol=1e-5, atol=1e-5)


def gelu_model():
    """torch's GELU as ONNX writes it, x read by two ops, then x * sigmoid(x)
    - 1 / (|x| + 2) (SiLU, a reversed division)."""
    c = {"c": np.array(1 / np.sqrt(2)), "one": np.array(1.0), "half": np.array(0.5),
         "two": np.array(2.0)}
    return model([helper.make_node("Mul", ["x", "c"], ["a"]),
                  helper.make_node("Erf", ["a"], ["b"]),
                  helper.make_node("Add", ["b", "one"], ["e"]),
                  helper.make_node("Mul", ["x", "e"], ["f"]),
                  helper.make_node("Mul", ["f", "half"], ["h"]),
                  helper.make_node("Sigmoid", ["h"], ["s"]),
                  helper.make_node("Mul", ["h", "s"], ["silu"]),
                  helper.make_node("Abs", ["h"], ["m"]),
                  helper.make_node("Add", ["m", "two"], ["n"]),
                  helper.make_node("Div", ["one", "n"], ["r"]),
                  helper.make_node("Sub", ["silu", "r"], ["y"])],
                 {"x": ["N", 8]}, c)


def test_unary_and_binary_functions_fuse_reading_an_input_twice():
    before = gelu_model()
    after = run_pipeline(before, TENSOR_PIPELINE, verify_each=True)
    fused = [n.body for n in after.root_graph.nodes if getattr(n.body, "op", "") == "elementwise"]
    steps = [s for body in fused for s in body.attrs["steps"]]
    assert ("unary", "erf") in steps and ("rbinary", "div") in [s[:2] for s in steps]
    # h feeds three ops, so GELU's chain ends at it; the two through sigmoid
    # and abs are one node each
    assert ops(after) == ["elementwise"] * 3
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_array_equal(compile(after, ["interp"])(x=x)["y"],
                                  compile(before, ["interp"])(x=x)["y"])
    # the cpu contracts x * s - r into one fused multiply-add once both are
    # in one kernel
    np.testing.assert_allclose(compile(after, ["cpu"])(x=x)["y"],
                               compile(before, ["cpu"])(x=x)["y"], rtol=1e-6, atol=1e-7)


def test_a_comparison_ends_the_chain():
    before = model([helper.make_node("Exp", ["x"], ["a"]),
                    helper.make_node("Less", ["a", "x"], ["y"])], {"x": [4]})
    assert "binary" in ops(run_pipeline(before, "fuse-elementwise"))
