"""add, mul (broadcasting), bias_add and the activations."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, I32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of


def f32(*shape):
    return BufferType(F32, shape)


def random(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# broadcasting -------------------------------------------------------------------
@pytest.mark.parametrize("a,b,y", [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 1, 3), (4, 1), (2, 4, 3)),
    (("N", 3), (3,), ("N", 3)),
    (("N", 1), (1, "C"), ("N", "C")),
    ((), ("N", 2), ("N", 2)),
    (("N", 5), ("N", 5), ("N", 5)),
])
def test_add_infers_the_broadcast_shape(a, b, y):
    assert get_op("add").infer({"a": f32(*a), "b": f32(*b)})["y"] == f32(*y)


@pytest.mark.parametrize("a,b", [((2, 3), (4, 3)), (("N", 3), ("M", 3)), (("N",), (4,))])
def test_mul_rejects_shapes_that_do_not_broadcast(a, b):
    with pytest.raises(VerificationError, match="mul: cannot broadcast 'b'"):
        get_op("mul").infer({"a": f32(*a), "b": f32(*b)})


def test_add_and_mul_evaluate_like_numpy():
    rng = np.random.default_rng(0)
    a, b = random(rng, 2, 1, 3), random(rng, 4, 1)
    np.testing.assert_array_equal(get_op("add").evaluate({"a": a, "b": b})["y"], a + b)
    np.testing.assert_array_equal(get_op("mul").evaluate({"a": a, "b": b})["y"], a * b)


@pytest.mark.parametrize("op", ["add", "mul"])
def test_broadcast_lowering_matches_evaluate(op):
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(1)
    inputs = {"a": random(rng, 3, 1, 2), "b": random(rng, 4, 1)}
    node = tensor_node("e", op, {"a": f32("B", 1, 2), "b": f32(4, 1)})
    assert_lowering_matches(node, inputs)


def test_integer_add_lowering_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    inputs = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.array([7], np.int32)}
    assert_lowering_matches(tensor_node("e", "add", types_of(**inputs)), inputs)


# bias_add -------------------------------------------------------------------------
def test_bias_add_adds_along_the_channel_axis():
    rng = np.random.default_rng(2)
    x, b = random(rng, 2, 3, 4), random(rng, 3)
    y = get_op("bias_add").evaluate({"x": x, "b": b})["y"]
    np.testing.assert_array_equal(y, x + b[None, :, None])


def test_bias_add_honours_the_axis_attribute():
    rng = np.random.default_rng(3)
    x, b = random(rng, 2, 3, 4), random(rng, 4)
    np.testing.assert_array_equal(get_op("bias_add").evaluate({"x": x, "b": b}, {"axis": -1})["y"],
                                  x + b)


def test_bias_add_length_must_match_the_axis():
    with pytest.raises(VerificationError, match="length of 'b' is 4 but dimension 1 of 'x' is 'C'"):
        get_op("bias_add").infer({"x": f32("N", "C"), "b": f32(4)})


def test_bias_add_keeps_symbolic_shapes():
    assert get_op("bias_add").infer({"x": f32("N", "C", 8), "b": f32("C")})["y"] == \
        f32("N", "C", 8)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_bias_add_lowering_matches_evaluate(axis):
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(4)
    inputs = {"x": random(rng, 2, 3, 4)}
    inputs["b"] = random(rng, inputs["x"].shape[axis])
    assert_lowering_matches(tensor_node("ba", "bias_add", types_of(**inputs), {"axis": axis}),
                            inputs)


# activations ------------------------------------------------------------------------
ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "clipped_relu": lambda x: np.clip(x, 0, 6),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_keeps_the_shape(op):
    assert get_op(op).infer({"x": f32("N", 3)})["y"] == f32("N", 3)


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_evaluates_its_formula(op):
    x = np.linspace(-8, 8, 33, dtype=np.float32)
    y = get_op(op).evaluate({"x": x})["y"]
    np.testing.assert_allclose(y, ACTIVATIONS[op](x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    assert y.dtype == np.float32


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_lowering_matches_evaluate(op):
    pytest.importorskip("hpvm.interp")
    x = np.linspace(-8, 8, 24, dtype=np.float32).reshape(2, 3, 4)
    assert_lowering_matches(tensor_node("act", op, {"x": f32("N", 3, 4)}), {"x": x})


def test_clipped_relu_uses_its_bounds():
    x = np.array([-3.0, -0.5, 0.5, 3.0], np.float32)
    y = get_op("clipped_relu").evaluate({"x": x}, {"min": -1, "max": 1})["y"]
    np.testing.assert_array_equal(y, [-1.0, -0.5, 0.5, 1.0])


def test_clipped_relu_with_min_above_max_gives_max_everywhere():
    # ONNX Clip: when min > max, every value becomes max.
    x = np.array([-3.0, 0.5, 4.0], np.float32)
    y = get_op("clipped_relu").evaluate({"x": x}, {"min": 2.0, "max": 1.0})["y"]
    np.testing.assert_array_equal(y, [1.0, 1.0, 1.0])


def test_relu_works_on_integers():
    x = np.array([-2, 0, 3], np.int32)
    assert get_op("relu").infer({"x": BufferType(I32, (3,))})["y"] == BufferType(I32, (3,))
    np.testing.assert_array_equal(get_op("relu").evaluate({"x": x})["y"], [0, 0, 3])


def test_sigmoid_saturates_without_overflow_warnings():
    x = np.array([-200.0, 200.0], np.float32)
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(get_op("sigmoid").evaluate({"x": x})["y"], [0.0, 1.0])
