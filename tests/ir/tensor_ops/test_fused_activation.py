"""conv2d and gemm apply their ``activation`` attribute in evaluate and in
their (register-tiled) lowerings."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of
from hpvm.ir.types import F32, BufferType

RNG = np.random.default_rng(3)


def random(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid"])
def test_conv2d_applies_its_activation(activation):
    x, w, b = random(2, 3, 6, 7), random(4, 3, 3, 3), random(4)
    plain = get_op("conv2d").evaluate({"x": x, "w": w, "b": b}, {"padding": 1})["y"]
    fused = get_op("conv2d").evaluate({"x": x, "w": w, "b": b},
                                      {"padding": 1, "activation": activation})["y"]
    expected = {"relu": np.maximum(plain, 0), "tanh": np.tanh(plain),
                "sigmoid": 1 / (1 + np.exp(-plain))}[activation]
    np.testing.assert_allclose(fused, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs", [
    {"padding": (1, 2, 0, 1), "activation": "relu"},
    {"stride": 2, "padding": 1, "dilation": 2},
    {"activation": "sigmoid"},
])
def test_tiled_conv2d_lowering_matches_evaluate(attrs):
    inputs = {"x": random(2, 3, 9, 19), "w": random(6, 3, 3, 2), "b": random(6)}
    types = types_of(**inputs)
    types["x"] = BufferType(F32, ("N", 3, 9, 19))
    assert_lowering_matches(tensor_node("c", "conv2d", types, attrs), inputs, 1e-4, 1e-4)


@pytest.mark.parametrize("rows", [1, 5, 8])
def test_tiled_gemm_lowering_matches_evaluate_for_any_row_count(rows):
    inputs = {"a": random(rows, 7), "b": random(7, 19), "c": random(19)}
    types = types_of(**inputs)
    types["a"] = BufferType(F32, ("M", 7))
    node = tensor_node("g", "gemm", types, {"alpha": 0.5, "beta": 2.0, "activation": "relu"})
    assert_lowering_matches(node, inputs, 1e-4, 1e-4)


def test_tiled_gemm_lowering_with_transposed_operands():
    inputs = {"a": random(7, 5), "b": random(9, 7)}
    node = tensor_node("g", "gemm", types_of(**inputs), {"trans_a": True, "trans_b": True})
    assert_lowering_matches(node, inputs, 1e-4, 1e-4)


def test_an_unknown_activation_is_rejected():
    with pytest.raises(VerificationError, match="activation"):
        get_op("gemm").infer(types_of(a=random(2, 2), b=random(2, 2)), {"activation": "gelu"})
