"""The aten target claims tensor ops (not kernels), runs them through ATen
like the reference, in FP32 and FP16, on host memory on the CPU and in
device memory on CUDA (those tests run where PyTorch sees a GPU)."""
import numpy as np
import pytest

from hpvm.options import OptionError

from hpvm.ir.graph import Graph, KernelBody, Node
from hpvm.ir.tensor_ops import TENSOR_OPS, tensor_node
from hpvm.ir.tensor_ops.testing import single_op_module
from hpvm.ir.types import I32, U32, BufferType
from hpvm.registry import get_registry
from hpvm.runtime import compile

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


CASES = {
    "conv2d": ({"x": (2, 3, 7, 6), "w": (4, 3, 3, 3), "b": (4,)},
               {"padding": (1, 0, 2, 1), "stride": (2, 1), "activation": "relu"}),
    "matmul": ({"a": (2, 3, 4), "b": (4, 5)}, {}),
    "gemm": ({"a": (4, 3), "b": (5, 4), "c": (5,)},
             {"trans_a": True, "trans_b": True, "alpha": 0.5, "beta": 2.0}),
    "add": ({"a": (2, 3, 4), "b": (3, 1)}, {}),
    "mul": ({"a": (2, 3), "b": (3,)}, {}),
    "bias_add": ({"x": (2, 3, 4), "b": (3,)}, {"axis": 1}),
    "relu": ({"x": (3, 4)}, {}),
    "clipped_relu": ({"x": (3, 4)}, {"min": -0.5, "max": 0.5}),
    "tanh": ({"x": (3, 4)}, {}),
    "sigmoid": ({"x": (3, 4)}, {}),
    "max_pool": ({"x": (1, 2, 5, 6)}, {"kernel": (3, 2), "stride": (2, 2),
                                        "padding": (1, 1, 0, 0)}),
    "avg_pool": ({"x": (1, 2, 5, 6)}, {"kernel": (3, 3), "padding": (1, 1, 1, 1)}),
    "softmax": ({"x": (2, 3, 4)}, {"axis": 1}),
    "batchnorm": ({"x": (2, 3, 4, 4), "scale": (3,), "bias": (3,), "mean": (3,), "var": (3,)},
                  {"epsilon": 1e-3}),
    "reshape": ({"x": (2, 3, 4)}, {"shape": (0, -1)}),
    "flatten": ({"x": (2, 3, 4)}, {"axis": 2}),
    "concat": ({"x0": (2, 3), "x1": (2, 1)}, {"axis": 1}),
    "elementwise": ({"x0": (2, 3, 4), "x1": (3, 1), "x2": (2, 3, 4)},
                    {"steps": (("add", 1), ("relu",), ("mul", 2), ("clipped_relu", -0.2, 0.3),
                               ("sigmoid",), ("tanh",))}),
    "rowwise": ({"x0": (2, 3, 6), "x1": (6,), "x2": (1,)},
                {"axes": 1, "program": (
                    ("input", 0), ("reduce", "max", 0), ("binary", "sub", 0, 1),
                    ("unary", "exp", 2), ("reduce", "sum", 3), ("binary", "div", 3, 4),
                    ("input", 1), ("binary", "mul", 5, 6), ("input", 2), ("reduce", "prod", 7),
                    ("binary", "max", 7, 9), ("clip", -1.0, 2.0, 10), ("unary", "relu", 11),
                    ("binary", "add", 12, 8))}),
    "attention": ({"x0": (2, 3, 5, 4), "x1": (3, 4, 7), "x2": (7, 6),
                   "x3": RNG.random((5, 7)) < 0.7, "x4": np.float32([-1e4])},
                  {"program": (("input", 0), ("input", 1), ("input", 2), ("select", 1, 0, 2),
                               ("reduce", "max", 3), ("binary", "sub", 3, 4),
                               ("unary", "exp", 5), ("reduce", "sum", 6),
                               ("binary", "div", 6, 7))}),
    "prelu": ({"x": (2, 3, 4), "slope": (4,)}, {}),
    "slice": ({"x": (2, 5, 4)}, {"starts": (4, 1), "ends": (0, 9), "axes": (1, -1),
                                 "steps": (-2, 1)}),
    "transpose": ({"x": (2, 5, 4, 3)}, {"perm": (0, 2, 3, 1)}),
    "pad": ({"x": (2, 5, 4, 3)}, {"pads": (0, 1, 2, 0, 1, 0, 1, 2), "value": 0.5}),
    "lrn": ({"x": (2, 5, 3, 3)}, {"size": 4, "alpha": 0.3, "beta": 0.6, "bias": 1.5}),
    "perforation_fill": ({"x": (2, 3, 4, 5)}, {"axis": 2, "every": 3, "offset": 1, "size": 6}),
    "unary": ({"x": (3, 4)}, {"fn": "erf"}),
    "binary": ({"a": (2, 3, 4), "b": (3, 1)}, {"fn": "sub"}),
    "select": ({"cond": RNG.random((3, 1)) < 0.5, "a": (2, 3, 4), "b": (4,)}, {}),
    "cast": ({"x": (3, 4)}, {"to": "f16"}),
    "reduce": ({"x": (2, 3, 4)}, {"fn": "max", "axes": (0, 2), "keepdims": 0}),
    "arg_reduce": ({"x": (2, 3, 4)}, {"fn": "argmin", "axis": 1}),
    "expand": ({"x": (3, 1)}, {"shape": (2, 3, 4)}),
    "gather": ({"x": (5, 3), "indices": np.array([[4, -1], [0, 2]], np.int64)}, {"axis": 0}),
    "gather_elements": ({"x": (3, 4), "indices": np.array([[3, -1, 0], [1, 1, 2]], np.int64)},
                        {"axis": 1}),
    "cumsum": ({"x": (2, 5)}, {"axis": 1, "reverse": 1}),
    "bitcast": ({"x": (3, 4)}, {"to": "i32"}),
    "scatter": ({"x": (3, 4), "positions": np.array([[0, 5, -1], [6, 2, 9]], np.int64),
                 "updates": (2, 3)}, {"reduction": "max"}),
    "sort": ({"x": (3, 5)}, {"axis": 1, "descending": 1}),
}
FP16_TOLERANCE = 2e-2
"""rtol and atol of FP16 results against the FP32 reference: half precision
keeps 11 significant bits (about 5e-4 relative per rounding); these
inputs are O(1) and reduce over at most 36 products."""
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA GPU")


def case_inputs(op):
    """f32 inputs of the shapes a case gives (or the arrays it gives)."""
    shapes, attrs = CASES[op]
    inputs = {p: s if isinstance(s, np.ndarray) else RNG.standard_normal(s).astype(np.float32)
              for p, s in shapes.items()}
    if "var" in inputs:
        inputs["var"] = np.abs(inputs["var"]) + 0.5
    return inputs, attrs


def test_every_tensor_op_is_native():
    target = get_registry().target("aten").target
    assert target.native_tensor_ops == frozenset(TENSOR_OPS) == frozenset(CASES)


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_the_reference(op):
    inputs, attrs = case_inputs(op)
    module = single_op_module(op, inputs, attrs)
    expected = TENSOR_OPS[op].evaluate(inputs, attrs)["y"]
    exe = compile(module, ["aten"])
    assert set(exe.placement.targets.values()) == {"aten"}
    np.testing.assert_allclose(exe(**inputs)["y"], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["edge", "reflect"])
def test_pad_modes_match_the_reference(mode):
    inputs, attrs = case_inputs("pad")
    attrs = {**attrs, "mode": mode}
    exe = compile(single_op_module("pad", inputs, attrs), ["aten"])
    expected = TENSOR_OPS["pad"].evaluate(inputs, attrs)["y"]
    np.testing.assert_array_equal(exe(**inputs)["y"], expected)


@pytest.mark.parametrize("op", ["conv2d", "gemm", "softmax", "avg_pool", "elementwise"])
def test_fp16_computes_in_half_precision_close_to_the_reference(op):
    inputs, attrs = case_inputs(op)
    expected = TENSOR_OPS[op].evaluate(inputs, attrs)["y"]
    exe = compile(single_op_module(op, inputs, attrs), ["aten"], {"precision": "fp16"})
    out = exe(**inputs)["y"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=FP16_TOLERANCE, atol=FP16_TOLERANCE)
    assert not np.array_equal(out, expected) or op == "elementwise"


def test_the_old_dtype_option_still_selects_fp16():
    inputs, attrs = case_inputs("gemm")
    fp16 = compile(single_op_module("gemm", inputs, attrs), ["aten"], {"dtype": "float16"})
    precise = compile(single_op_module("gemm", inputs, attrs), ["aten"],
                      {"precision": "fp16"})
    np.testing.assert_array_equal(fp16(**inputs)["y"], precise(**inputs)["y"])


@CUDA
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("op", ["conv2d", "gemm", "max_pool", "softmax", "elementwise"])
def test_op_on_cuda_matches_the_reference(op, precision):
    inputs, attrs = case_inputs(op)
    expected = TENSOR_OPS[op].evaluate(inputs, attrs)["y"]
    exe = compile(single_op_module(op, inputs, attrs), ["aten"],
                  {"device": "cuda", "precision": precision})
    tolerance = FP16_TOLERANCE if precision == "fp16" else 1e-4
    np.testing.assert_allclose(exe(**inputs)["y"], expected, rtol=tolerance, atol=tolerance)


@CUDA
def test_a_model_on_cuda_runs_as_one_cuda_graph_that_follows_new_inputs():
    from hpvm.frontend.onnx import load, testing
    module = load(testing.export(testing.lenet(), (1, 28, 28)))
    graphs = compile(module, ["aten"], {"device": "cuda"})
    launches = compile(module, ["aten"], {"device": "cuda", "cuda_graphs": False})
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((4, 1, 28, 28)).astype(np.float32)
        expected = launches(x=x)["y"]
        np.testing.assert_allclose(graphs(x=x)["y"], expected, rtol=1e-5, atol=1e-5)
    assert [r.node for r in graphs.report().records] == ["<captured graph>"]
    assert graphs._get_devices()["aten"].capture_failure is None
    assert len(launches.report().records) > 1


def test_constant_weights_are_claimed_with_their_reader():
    inputs, attrs = case_inputs("conv2d")
    module = single_op_module("conv2d", inputs, attrs, constants=("w", "b"))
    exe = compile(module, ["aten"])
    assert exe.placement.targets["@main.w_const"] == "aten"
    np.testing.assert_allclose(exe(x=inputs["x"])["y"],
                               TENSOR_OPS["conv2d"].evaluate(inputs, attrs)["y"], rtol=1e-5,
                               atol=1e-5)


def test_kernel_nodes_integer_pooling_and_wide_unsigned_values_are_not_claimed():
    target = get_registry().target("aten").target
    kernel = Node("k", KernelBody("f"))
    ints = tensor_node("r", "cast", {"x": BufferType(I32, (4,))}, {"to": "f32"})
    pooled = tensor_node("p", "max_pool", {"x": BufferType(I32, (1, 1, 4, 4))},
                         {"kernel": (2, 2)})
    wide = tensor_node("w", "cast", {"x": BufferType(U32, (4,))}, {"to": "f32"})
    graph = Graph("main", ())
    assert not target.claims(None, graph, kernel)
    assert target.claims(None, graph, ints)
    assert not target.claims(None, graph, pooled)
    assert not target.claims(None, graph, wide)


def test_an_unknown_precision_is_rejected_naming_the_accepted_ones():
    inputs, attrs = case_inputs("relu")
    with pytest.raises(OptionError, match="option 'precision' of target 'aten' expects one of "
                                          "'fp32', 'float32', 'fp16', 'float16', 'tf32', got 'int8'"):
        compile(single_op_module("relu", inputs, attrs), ["aten"], {"precision": "int8"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_clear_error():
    inputs, attrs = case_inputs("relu")
    exe = compile(single_op_module("relu", inputs, attrs), ["aten"], {"device": "cuda"})
    with pytest.raises(Exception, match="sees no CUDA GPU"):
        exe(**inputs)
