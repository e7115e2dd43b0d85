"""The rowwise op: a layer norm and a softmax as programs over rows, the
same values as numpy's, lowered and interpreted alike, and clear errors
for malformed programs."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import BOOL, F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import lowered_module, types_of
from hpvm.ir.text import print_module

RNG = np.random.default_rng(0)
LAYER_NORM = (("input", 0), ("reduce", "sum", 0), ("input", 1), ("binary", "mul", 1, 2),
              ("binary", "sub", 0, 3), ("binary", "mul", 4, 4), ("reduce", "sum", 5),
              ("binary", "mul", 6, 2), ("input", 2), ("binary", "add", 7, 8),
              ("unary", "sqrt", 9), ("unary", "reciprocal", 10), ("binary", "mul", 4, 11),
              ("input", 3), ("binary", "mul", 12, 13), ("input", 4), ("binary", "add", 14, 15))
SOFTMAX = (("input", 0), ("reduce", "max", 0), ("binary", "sub", 0, 1), ("unary", "exp", 2),
           ("reduce", "sum", 3), ("binary", "div", 3, 4))


def f32(*shape):
    return BufferType(F32, shape)


def layer_norm_inputs():
    x = RNG.standard_normal((4, 6, 16)).astype(np.float32)
    return {"x0": x, "x1": np.float32([1 / 16]), "x2": np.float32([1e-5]),
            "x3": RNG.standard_normal(16).astype(np.float32),
            "x4": RNG.standard_normal(16).astype(np.float32)}


def test_a_layer_norm_program_is_numpy_s_layer_norm():
    inputs = layer_norm_inputs()
    y = get_op("rowwise").evaluate(inputs, {"program": LAYER_NORM})["y"]
    x = inputs["x0"]
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5) * inputs["x3"] + inputs["x4"],
                               rtol=1e-5, atol=1e-5)
    node = tensor_node("ln", "rowwise", types_of(**inputs), {"program": LAYER_NORM})
    assert_lowering_matches(node, inputs, rtol=1e-5, atol=1e-5)


def test_a_softmax_over_two_axes_reads_its_exponentials_back_from_y():
    x = RNG.standard_normal((3, 4, 8)).astype(np.float32)
    y = get_op("rowwise").evaluate({"x0": x}, {"program": SOFTMAX, "axes": 2})["y"]
    e = np.exp(x - x.max((1, 2), keepdims=True))
    np.testing.assert_allclose(y, e / e.sum((1, 2), keepdims=True), rtol=1e-6)
    node = tensor_node("sm", "rowwise", {"x0": f32(3, 4, 8)}, {"program": SOFTMAX, "axes": 2})
    text = print_module(lowered_module(node)[0])
    assert text.count("exp(") == 1 and text.count("= y[") == 1  # stored, then read back
    assert_lowering_matches(node, {"x0": x}, rtol=1e-6, atol=1e-6)


def test_an_input_broadcast_along_the_outer_axes_reads_its_own_rows():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    z = RNG.standard_normal((3, 5)).astype(np.float32)
    program = (("input", 0), ("input", 1), ("binary", "add", 0, 1), ("reduce", "max", 2),
               ("binary", "sub", 2, 3))
    inputs = {"x0": x, "x1": z}
    y = get_op("rowwise").evaluate(inputs, {"program": program})["y"]
    np.testing.assert_allclose(y, (x + z) - (x + z).max(-1, keepdims=True))
    assert_lowering_matches(tensor_node("b", "rowwise", types_of(**inputs), {"program": program}),
                            inputs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("program, message", [
    ((("input", 0), ("reduce", "sum", 0)), "one value per row"),
    ((("input", 0), ("reduce", "sum", 0), ("reduce", "sum", 1), ("binary", "add", 0, 2)),
     "reduces a per-row value"),
    ((("input", 0), ("unary", "exp", 3)), "program.*instructions"),
    ((("input", 0), ("unary", "isnan", 0)), "program.*instructions"),
    ((("input", 0), ("reduce", "mean", 0), ("binary", "sub", 0, 1)), "program.*instructions"),
])
def test_malformed_programs_are_errors(program, message):
    with pytest.raises(VerificationError, match=message):
        tensor_node("r", "rowwise", {"x0": f32(2, 8)}, {"program": program})


def test_an_input_whose_row_is_neither_whole_nor_one_is_an_error():
    with pytest.raises(VerificationError, match="'x1'.*last 2 axes"):
        tensor_node("r", "rowwise", {"x0": f32(2, 3, 8), "x1": f32(1, 8)},
                    {"axes": 2, "program": (("input", 0), ("input", 1), ("reduce", "sum", 0),
                                            ("binary", "sub", 1, 2))})


def test_an_input_no_instruction_reads_is_an_error():
    with pytest.raises(VerificationError, match="'x1' is read by no instruction"):
        tensor_node("r", "rowwise", {"x0": f32(2, 8), "x1": f32(1)},
                    {"program": (("input", 0), ("reduce", "sum", 0), ("binary", "sub", 0, 1))})


MASKED_SOFTMAX = (("input", 0), ("input", 1), ("input", 2), ("select", 1, 2, 0),
                  ("reduce", "max", 3), ("binary", "sub", 3, 4), ("unary", "exp", 5),
                  ("reduce", "sum", 6), ("binary", "div", 6, 7))


def test_a_boolean_mask_selects_between_values_as_masked_fill_does():
    x = RNG.standard_normal((2, 5, 9)).astype(np.float32)
    mask = np.tril(np.ones((5, 9), bool), 3)  # broadcast over the batch, whole rows
    inputs = {"x0": x, "x1": ~mask, "x2": np.float32([-np.inf])}
    y = get_op("rowwise").evaluate(inputs, {"program": MASKED_SOFTMAX})["y"]
    filled = np.where(~mask, np.float32(-np.inf), x)
    e = np.exp(filled - filled.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6)
    node = tensor_node("sm", "rowwise", types_of(**inputs), {"program": MASKED_SOFTMAX})
    assert node.body.params[-1].type == f32(2, 5, 9)
    assert_lowering_matches(node, inputs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("program, message", [
    ((("input", 0), ("input", 1), ("binary", "add", 0, 1)), "bool elements as a number"),
    ((("input", 0), ("input", 1), ("select", 0, 1, 0)), "condition, which must be an input"),
])
def test_masks_are_read_only_as_conditions(program, message):
    types = {"x0": f32(2, 8), "x1": BufferType(BOOL, (2, 8))}
    with pytest.raises(VerificationError, match=message):
        tensor_node("r", "rowwise", types, {"program": program})
