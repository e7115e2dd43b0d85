"""expand, gather, gather_elements and cumsum: shapes, numpy semantics
and the lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

RNG = np.random.default_rng(5)


def test_expand_broadcasts_both_ways():
    x = RNG.standard_normal((3, 1)).astype(np.float32)
    y = get_op("expand").evaluate({"x": x}, {"shape": (2, 1, 4)})["y"]
    np.testing.assert_array_equal(y, np.broadcast_to(x, (2, 3, 4)))
    assert_lowering_matches(tensor_node("e", "expand", types_of(x=x), {"shape": (2, 1, 4)}),
                            {"x": x})


def test_expand_keeps_a_symbolic_batch():
    out = get_op("expand").infer({"x": BufferType(F32, ("N", 1))}, {"shape": (1, 5)})["y"]
    assert str(out) == "f32[N, 5]"


def test_expand_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(VerificationError, match="cannot broadcast"):
        get_op("expand").infer(types_of(x=np.zeros((3, 2), np.float32)), {"shape": (4, 3)})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_shape", [(), (2,), (2, 3)])
def test_gather_takes_along_an_axis_with_negative_indices(axis, index_shape):
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    size = x.shape[axis]
    indices = RNG.integers(-size, size, index_shape).astype(np.int64)
    y = get_op("gather").evaluate({"x": x, "indices": indices}, {"axis": axis})["y"]
    np.testing.assert_array_equal(y, np.take(x, indices % size, axis=axis))
    node = tensor_node("g", "gather", types_of(x=x, indices=indices), {"axis": axis})
    assert_lowering_matches(node, {"x": x, "indices": indices})


def test_gather_needs_integer_indices():
    with pytest.raises(VerificationError, match="'indices' must be i32 or i64"):
        get_op("gather").infer(types_of(x=np.zeros((3, 2), np.float32),
                                        indices=np.zeros(2, np.float32)))


def test_gather_elements_picks_per_position():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[2, -1], [0, 1]], np.int32)
    y = get_op("gather_elements").evaluate({"x": x, "indices": indices}, {"axis": 0})["y"]
    np.testing.assert_array_equal(y, [[8, 9], [0, 5]])
    node = tensor_node("g", "gather_elements", types_of(x=x, indices=indices), {"axis": 0})
    assert_lowering_matches(node, {"x": x, "indices": indices})


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_cumsum_matches_its_definition(exclusive, reverse, dtype):
    x = RNG.integers(-5, 5, (3, 4)).astype(dtype)
    attrs = {"axis": 1, "exclusive": exclusive, "reverse": reverse}
    y = get_op("cumsum").evaluate({"x": x}, attrs)["y"]
    line = x[:, ::-1] if reverse else x
    expected = np.cumsum(line, axis=1) - (line if exclusive else 0)
    np.testing.assert_array_equal(y, expected[:, ::-1] if reverse else expected)
    assert_lowering_matches(tensor_node("c", "cumsum", types_of(x=x), attrs), {"x": x})
