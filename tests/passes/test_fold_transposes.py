"""fold-transposes: transposes sink past elementwise ops (constants
permuted back, twins untransposed) and cancel in inverse pairs, with the
same results as before; a transpose whose result is a graph output or has
several non-transposing readers stays."""
import numpy as np
import pytest

from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline

CHANNELS_LAST = """hpvm 1.1
module channels_last

graph @main(in image: f32[2, 6, 5, 3], in w: f32[4, 3, 3, 3], in other: f32[2, 4, 6, 5],
            out y: f32[2, 4, 3, 2], out side: f32[2, 6, 5, 4]) {
  node to_nchw = transpose(in x: f32[2, 6, 5, 3], out y: f32[2, 3, 6, 5]) {perm = [0, 3, 1, 2]}
  node conv = conv2d(in x: f32[2, 3, 6, 5], in w: f32[4, 3, 3, 3], out y: f32[2, 4, 6, 5]) {padding = [1, 1, 1, 1]}
  node to_nhwc = transpose(in x: f32[2, 4, 6, 5], out y: f32[2, 6, 5, 4]) {perm = [0, 2, 3, 1]}
  node bias = const f32[1, 1, 1, 4] base64 "AACAPwAAAEAAAEBAAACAQA=="
  node add = add(in a: f32[2, 6, 5, 4], in b: f32[1, 1, 1, 4], out y: f32[2, 6, 5, 4])
  node relu = relu(in x: f32[2, 6, 5, 4], out y: f32[2, 6, 5, 4])
  node other_nhwc = transpose(in x: f32[2, 4, 6, 5], out y: f32[2, 6, 5, 4]) {perm = [0, 2, 3, 1]}
  node sum = add(in a: f32[2, 6, 5, 4], in b: f32[2, 6, 5, 4], out y: f32[2, 6, 5, 4])
  node back = transpose(in x: f32[2, 6, 5, 4], out y: f32[2, 4, 6, 5]) {perm = [0, 3, 1, 2]}
  node pool = max_pool(in x: f32[2, 4, 6, 5], out y: f32[2, 4, 3, 2]) {kernel = [2, 2], stride = [2, 2]}
  node seen = transpose(in x: f32[2, 4, 6, 5], out y: f32[2, 6, 5, 4]) {perm = [0, 2, 3, 1]}
  edge to_nchw.y -> conv.x all-to-all
  edge conv.y -> to_nhwc.x all-to-all
  edge conv.y -> seen.x all-to-all
  edge to_nhwc.y -> add.a all-to-all
  edge bias.value -> add.b all-to-all
  edge add.y -> relu.x all-to-all
  edge relu.y -> sum.a all-to-all
  edge other_nhwc.y -> sum.b all-to-all
  edge sum.y -> back.x all-to-all
  edge back.y -> pool.x all-to-all
  in image -> to_nchw.x
  in w -> conv.w
  in other -> other_nhwc.x
  out pool.y -> y
  out seen.y -> side
}

root @main
"""


def inputs():
    rng = np.random.default_rng(0)
    return {"image": rng.standard_normal((2, 6, 5, 3)).astype(np.float32),
            "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
            "other": rng.standard_normal((2, 4, 6, 5)).astype(np.float32)}


def test_transposes_sink_past_elementwise_ops_and_cancel():
    module = parse_module(CHANNELS_LAST)
    folded = run_pipeline(module, "fold-transposes", verify_each=True)
    text = print_module(folded)
    # the bias add, relu and the residual add now run in NCHW; the pair around them is gone
    assert "transpose" not in text.split("node pool")[0].split("node seen")[0].replace(
        "node to_nchw = transpose", "")
    assert "node add = add(in a: f32[2, 4, 6, 5], in b: f32[1, 4, 1, 1]" in text
    assert "node seen = transpose" in text            # a graph output keeps its transpose
    expected = Interpreter(module).run(**inputs())
    actual = Interpreter(folded).run(**inputs())
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])


def test_the_tensor_pipeline_then_fuses_what_the_transposes_kept_apart():
    from hpvm.passes import TENSOR_PIPELINE
    fused = run_pipeline(parse_module(CHANNELS_LAST), TENSOR_PIPELINE, verify_each=True)
    text = print_module(fused)
    assert text.count("transpose(") == 2   # the input's, and the one a graph output reads
    expected = Interpreter(parse_module(CHANNELS_LAST)).run(**inputs())
    actual = Interpreter(fused).run(**inputs())
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 3, 2)])
def test_inverse_transposes_around_an_elementwise_op_cancel(perm):
    inverse = tuple(int(i) for i in np.argsort(perm))
    text = f"""hpvm 1.1
module pair

graph @main(in x: f32[2, 3, 4, 5], out y: f32[2, 3, 4, 5]) {{
  node first = transpose(in x: f32[2, 3, 4, 5], out y: f32[{', '.join(str((2, 3, 4, 5)[p]) for p in perm)}]) {{perm = {list(perm)}}}
  node relu = relu(in x: f32[{', '.join(str((2, 3, 4, 5)[p]) for p in perm)}], out y: f32[{', '.join(str((2, 3, 4, 5)[p]) for p in perm)}])
  node second = transpose(in x: f32[{', '.join(str((2, 3, 4, 5)[p]) for p in perm)}], out y: f32[2, 3, 4, 5]) {{perm = {list(inverse)}}}
  edge first.y -> relu.x all-to-all
  edge relu.y -> second.x all-to-all
  in x -> first.x
  out second.y -> y
}}

root @main
"""
    module = parse_module(text)
    folded = run_pipeline(module, "fold-transposes", verify_each=True)
    assert print_module(folded).count("transpose(") == 0   # the pair around relu cancelled
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(folded).run(x=x)["y"], np.maximum(x, 0))


def test_two_transposes_that_do_not_cancel_become_one():
    text = """hpvm 1.1
module pair

graph @main(in x: f32[2, 3, 4, 5], out y: f32[2, 5, 3, 4]) {
  node first = transpose(in x: f32[2, 3, 4, 5], out y: f32[2, 4, 5, 3]) {perm = [0, 2, 3, 1]}
  node second = transpose(in x: f32[2, 4, 5, 3], out y: f32[2, 5, 3, 4]) {perm = [0, 2, 3, 1]}
  edge first.y -> second.x all-to-all
  in x -> first.x
  out second.y -> y
}

root @main
"""
    folded = run_pipeline(parse_module(text), "fold-transposes", verify_each=True)
    assert "node second = transpose(in x: f32[2, 3, 4, 5], out y: f32[2, 5, 3, 4]) " \
           "{perm = [0, 3, 1, 2]}" in print_module(folded)
    assert "node first" not in print_module(folded)
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(folded).run(x=x)["y"],
                                  x.transpose(0, 2, 3, 1).transpose(0, 2, 3, 1))


def test_identity_transposes_disappear_even_after_a_graph_input():
    text = """hpvm 1.1
module pair

graph @main(in x: f32[2, 3], out y: f32[2, 3]) {
  node first = transpose(in x: f32[2, 3], out y: f32[3, 2]) {perm = [1, 0]}
  node second = transpose(in x: f32[3, 2], out y: f32[2, 3]) {perm = [1, 0]}
  node relu = relu(in x: f32[2, 3], out y: f32[2, 3])
  edge first.y -> second.x all-to-all
  edge second.y -> relu.x all-to-all
  in x -> first.x
  out relu.y -> y
}

root @main
"""
    folded = run_pipeline(parse_module(text), "fold-transposes", verify_each=True)
    assert "transpose" not in print_module(folded) and "in x -> relu.x" in print_module(folded)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(folded).run(x=x)["y"], np.maximum(x, 0))


@pytest.mark.parametrize("product", ["matmul", "gemm_trans_b"])
def test_a_transpose_before_a_flatten_into_weights_goes_into_the_weights(product):
    """A channels-last Flatten before a Dense layer: the weights' rows are
    reordered instead of the feature map being transposed."""
    from hpvm.ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, Module, Node
    from hpvm.ir.parameter import Parameter
    from hpvm.ir.tensor_ops import tensor_node
    from hpvm.ir.types import F32, BufferType
    rng = np.random.default_rng(4)
    weights = rng.standard_normal((30, 5) if product == "matmul" else (5, 30)).astype(np.float32)
    x_type = BufferType(F32, (2, 3, 5, 2))
    t = tensor_node("t", "transpose", {"x": x_type}, {"perm": (0, 2, 3, 1)})
    flat = tensor_node("flat", "flatten", {"x": BufferType(F32, (2, 5, 2, 3))}, {"axis": 1})
    w = Node("w", ConstantBody(BufferType(F32, weights.shape), weights))
    types = {"a": BufferType(F32, (2, 30)), "b": BufferType(F32, weights.shape)}
    dense = tensor_node("dense", "matmul", types) if product == "matmul" else \
        tensor_node("dense", "gemm", types, {"trans_b": True})
    graph = Graph("main", (Parameter("x", x_type, "in"), Parameter("y", BufferType(F32, (2, 5)),
                                                                   "out")),
                  (t, flat, w, dense),
                  (Edge("t", "y", "flat", "x"), Edge("flat", "y", "dense", "a"),
                   Edge("w", "value", "dense", "b")),
                  (BindIn("x", "t", "x"),), (BindOut("dense", "y", "y"),))
    module = Module("m", {}, {"main": graph}, "main")
    folded = run_pipeline(module, "fold-transposes", verify_each=True)
    assert "transpose" not in print_module(folded)
    x = rng.standard_normal((2, 3, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(Interpreter(folded).run(x=x)["y"], Interpreter(module).run(x=x)["y"],
                               rtol=1e-5, atol=1e-5)
