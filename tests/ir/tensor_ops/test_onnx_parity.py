"""evaluate() against ONNX Runtime running the same op as a one-node ONNX
model: our reference semantics are ONNX's.  Skipped without onnx and
onnxruntime."""
import numpy as np
import pytest

from hpvm.ir.tensor_ops import get_op

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OPSET = 17


def run_onnx(op_type, inputs, attrs=None, constants=None):
    """Run one ONNX node (f32 result) on ``inputs`` (name -> array, in ONNX
    input order);
    ``constants`` are extra initialiser inputs appended after them."""
    constants = constants or {}
    names = list(inputs) + list(constants)
    node = helper.make_node(op_type, names, ["out"], **(attrs or {}))
    graph = helper.make_graph(
        [node], "one", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                      a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]


def random(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


RNG = np.random.default_rng(0)
X4 = random(RNG, 2, 4, 7, 6)

# (op, our inputs, our attrs, ONNX op, ONNX attrs, ONNX constants)
CASES = {
    "conv2d": ("conv2d", {"x": X4, "w": random(RNG, 6, 2, 3, 2), "b": random(RNG, 6)},
               {"stride": (2, 1), "padding": (1, 0, 2, 1), "dilation": (1, 2), "groups": 2},
               "Conv", {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2], "group": 2},
               {}),
    "matmul": ("matmul", {"a": random(RNG, 3, 2, 4), "b": random(RNG, 4, 5)}, {}, "MatMul", {}, {}),
    "gemm": ("gemm", {"a": random(RNG, 4, 3), "b": random(RNG, 5, 4), "c": random(RNG, 3, 1)},
             {"alpha": 0.5, "beta": 2.0, "trans_a": True, "trans_b": True},
             "Gemm", {"alpha": 0.5, "beta": 2.0, "transA": 1, "transB": 1}, {}),
    "add": ("add", {"a": random(RNG, 2, 1, 3), "b": random(RNG, 4, 1)}, {}, "Add", {}, {}),
    "mul": ("mul", {"a": random(RNG, 2, 1, 3), "b": random(RNG, 3)}, {}, "Mul", {}, {}),
    "relu": ("relu", {"x": X4}, {}, "Relu", {}, {}),
    "clipped_relu": ("clipped_relu", {"x": X4}, {"min": -0.5, "max": 0.75}, "Clip", {},
                     {"lo": np.array(-0.5, np.float32), "hi": np.array(0.75, np.float32)}),
    "tanh": ("tanh", {"x": X4}, {}, "Tanh", {}, {}),
    "sigmoid": ("sigmoid", {"x": X4 * 10}, {}, "Sigmoid", {}, {}),
    "max_pool": ("max_pool", {"x": X4}, {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 1, 1, 0)},
                 "MaxPool", {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 1, 1, 0]}, {}),
    "avg_pool": ("avg_pool", {"x": X4}, {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 1, 1, 0)},
                 "AveragePool", {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 1, 1, 0]}, {}),
    "avg_pool_include_pad": (
        "avg_pool", {"x": X4}, {"kernel": (3, 3), "padding": (1, 1, 1, 1), "count_include_pad": True},
        "AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, {}),
    "softmax": ("softmax", {"x": X4}, {"axis": 1}, "Softmax", {"axis": 1}, {}),
    "batchnorm": ("batchnorm", {"x": X4, "scale": random(RNG, 4), "bias": random(RNG, 4),
                                "mean": random(RNG, 4), "var": np.abs(random(RNG, 4)) + 0.1},
                  {"epsilon": 1e-3}, "BatchNormalization", {"epsilon": 1e-3}, {}),
    "reshape": ("reshape", {"x": X4}, {"shape": (0, -1, 6)}, "Reshape", {},
                {"shape": np.array([0, -1, 6], np.int64)}),
    "flatten": ("flatten", {"x": X4}, {"axis": 2}, "Flatten", {"axis": 2}, {}),
    "concat": ("concat", {"x0": random(RNG, 2, 1, 3), "x1": random(RNG, 2, 4, 3)}, {"axis": -2},
               "Concat", {"axis": -2}, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluate_agrees_with_onnxruntime(case):
    op, inputs, attrs, onnx_op, onnx_attrs, constants = CASES[case]
    ours = get_op(op).evaluate(inputs, attrs)["y"]
    theirs = run_onnx(onnx_op, inputs, onnx_attrs, constants)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
