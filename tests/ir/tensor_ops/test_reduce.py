"""reduce and arg_reduce: shapes, numpy semantics and the lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axes,keepdims", [((), 1), ((1,), 0), ((0, 2), 1), ((-1,), 0)])
def test_reduce_lowering_matches_numpy(fn, axes, keepdims):
    x = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    attrs = {"fn": fn, "axes": axes, "keepdims": keepdims}
    expected = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[fn](
        x, axis=axes or None, keepdims=bool(keepdims))
    np.testing.assert_allclose(get_op("reduce").evaluate({"x": x}, attrs)["y"], expected,
                               rtol=1e-6)
    assert_lowering_matches(tensor_node("r", "reduce", types_of(x=x), attrs), {"x": x})


@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_integer_and_bool_max(dtype):
    x = RNG.integers(-9, 9, (3, 5)).astype(dtype)
    attrs = {"fn": "max", "axes": (1,), "keepdims": 0}
    assert_lowering_matches(tensor_node("r", "reduce", types_of(x=x), attrs), {"x": x})


def test_reduce_rejects_repeated_axes():
    with pytest.raises(VerificationError, match="distinct axes"):
        get_op("reduce").infer(types_of(x=np.zeros((2, 3), np.float32)),
                               {"fn": "sum", "axes": (1, -1)})


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("axis,keepdims", [(0, 1), (1, 0), (-1, 1)])
def test_arg_reduce_finds_the_first_or_last_extreme(fn, last, axis, keepdims):
    x = RNG.integers(0, 3, (3, 4, 2)).astype(np.float32)  # many ties
    attrs = {"fn": fn, "axis": axis, "keepdims": keepdims, "select_last_index": last}
    y = get_op("arg_reduce").evaluate({"x": x}, attrs)["y"]
    find = np.argmax if fn == "argmax" else np.argmin
    if last:
        expected = x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis)
    else:
        expected = find(x, axis=axis)
    if keepdims:
        expected = np.expand_dims(expected, axis)
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.int64
    assert_lowering_matches(tensor_node("a", "arg_reduce", types_of(x=x), attrs), {"x": x})
