"""The elementwise op (a fused chain): the same values as the separate ops,
and clear errors for malformed steps."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import TENSOR_OPS, get_op, tensor_node

RNG = np.random.default_rng(0)


def f32(*shape):
    return BufferType(F32, shape)


def test_chain_equals_the_separate_ops_exactly():
    x, b = RNG.standard_normal((2, 3, 4)).astype(np.float32), RNG.standard_normal(4).astype(
        np.float32)
    steps = (("add", 1), ("relu",), ("mul", 1), ("tanh",), ("clipped_relu", -0.5, 0.25))
    out = get_op("elementwise").evaluate({"x0": x, "x1": b}, {"steps": steps})["y"]
    expected = TENSOR_OPS["add"].evaluate({"a": x, "b": b})["y"]
    expected = TENSOR_OPS["relu"].evaluate({"x": expected})["y"]
    expected = TENSOR_OPS["mul"].evaluate({"a": expected, "b": b})["y"]
    expected = TENSOR_OPS["tanh"].evaluate({"x": expected})["y"]
    expected = TENSOR_OPS["clipped_relu"].evaluate({"x": expected},
                                                   {"min": -0.5, "max": 0.25})["y"]
    np.testing.assert_array_equal(out, expected)


def test_lowering_with_a_broadcast_operand_matches_evaluate():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((1, 5)).astype(np.float32)
    node = tensor_node("c", "elementwise", {"x0": f32(3, 5), "x1": f32(1, 5)},
                       {"steps": (("add", 1), ("sigmoid",))})
    assert_lowering_matches(node, {"x0": x, "x1": b}, rtol=1e-6, atol=1e-7)


def test_an_operand_no_step_reads_is_an_error():
    with pytest.raises(VerificationError, match="'x2' is read by no step"):
        tensor_node("c", "elementwise", {"x0": f32(3), "x1": f32(3), "x2": f32(3)},
                    {"steps": (("add", 1),)})


def test_an_unknown_step_lists_the_step_forms():
    with pytest.raises(VerificationError, match="steps.*clipped_relu"):
        tensor_node("c", "elementwise", {"x0": f32(3)}, {"steps": (("exp",),)})


def test_an_operand_that_would_grow_the_result_is_an_error():
    with pytest.raises(VerificationError, match="'x1'.*does not broadcast"):
        tensor_node("c", "elementwise", {"x0": f32(1, 3), "x1": f32(2, 3)},
                    {"steps": (("mul", 1),)})



def test_function_steps_equal_the_unary_and_binary_ops():
    """GELU, x * (erf(x / sqrt 2) + 1) * 0.5, reading x as x0 and x1, and a
    reversed division (x2 / v)."""
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    c, one, half = (np.float32(v).reshape(1) for v in (1 / np.sqrt(2), 1.0, 0.5))
    d = RNG.uniform(1, 2, (6,)).astype(np.float32)
    steps = (("mul", 2), ("unary", "erf"), ("add", 3), ("mul", 1), ("mul", 4),
             ("rbinary", "div", 5), ("binary", "max", 3))
    inputs = {"x0": x, "x1": x, "x2": c, "x3": one, "x4": half, "x5": d}
    out = get_op("elementwise").evaluate(inputs, {"steps": steps})["y"]
    unary, binary = TENSOR_OPS["unary"], TENSOR_OPS["binary"]
    v = TENSOR_OPS["mul"].evaluate({"a": x, "b": c})["y"]
    v = unary.evaluate({"x": v}, {"fn": "erf"})["y"]
    v = binary.evaluate({"a": v, "b": one}, {"fn": "add"})["y"] * x * half
    v = binary.evaluate({"a": d, "b": v}, {"fn": "div"})["y"]
    np.testing.assert_array_equal(out, binary.evaluate({"a": v, "b": one}, {"fn": "max"})["y"])
    node = tensor_node("g", "elementwise", {p: BufferType(F32, a.shape) for p, a in inputs.items()},
                       {"steps": steps})
    assert_lowering_matches(node, inputs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("step", [("unary", "isnan"), ("unary", "bitnot"),
                                  ("binary", "less", 1), ("binary", "pow", 2), ("rbinary", "sub")])
def test_function_steps_of_other_results_or_operands_are_errors(step):
    with pytest.raises(VerificationError, match="steps.*unary.*fn"):
        tensor_node("c", "elementwise", {"x0": f32(3), "x1": f32(3)},
                    {"steps": (("add", 1), step)})
