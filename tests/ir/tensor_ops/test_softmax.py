"""softmax: shape inference, semantics, lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node

SOFTMAX = get_op("softmax")


def f32(*shape):
    return BufferType(F32, shape)


def test_softmax_keeps_the_shape():
    assert SOFTMAX.infer({"x": f32("N", 10)})["y"] == f32("N", 10)


def test_softmax_axis_must_exist():
    with pytest.raises(VerificationError, match="'axis' must be an axis in \\[-2, 1\\]"):
        SOFTMAX.infer({"x": f32("N", 10)}, {"axis": 2})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_rows_sum_to_one_and_follow_the_formula(axis):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32) * 10
    y = SOFTMAX.evaluate({"x": x}, {"axis": axis})["y"]
    wide = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(y, wide / wide.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-7)


def test_softmax_is_stable_for_large_inputs():
    y = SOFTMAX.evaluate({"x": np.array([1000.0, 1000.0], np.float32)})["y"]
    np.testing.assert_array_equal(y, [0.5, 0.5])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_lowering_matches_evaluate(axis):
    pytest.importorskip("hpvm.interp")
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32) * 5
    node = tensor_node("s", "softmax", {"x": f32("N", 3, 4)}, {"axis": axis})
    assert_lowering_matches(node, {"x": x}, rtol=1e-5, atol=1e-6)


def test_softmax_lowering_runs_one_instance_per_row():
    node = tensor_node("s", "softmax", {"x": f32(6, 10)})
    _, replication = SOFTMAX.lower("s", node.body)
    assert [e.value for e in replication] == [6]
