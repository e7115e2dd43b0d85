"""reshape, flatten and concat: shape inference, semantics, lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

RESHAPE, FLATTEN, CONCAT = get_op("reshape"), get_op("flatten"), get_op("concat")


def f32(*shape):
    return BufferType(F32, shape)


# reshape ----------------------------------------------------------------------------
@pytest.mark.parametrize("source,shape,result", [
    ((2, 3, 4), (6, 4), (6, 4)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (0, -1), (2, 12)),
    (("N", 3, 4), (0, -1), ("N", 12)),
    (("N", 3, 4), (-1, 12), ("N", 12)),
    (("N", 12), (0, 3, 4), ("N", 3, 4)),
    (("N", "C"), (0, 0, 1, 1), ("N", "C", 1, 1)),
])
def test_reshape_infers_zero_and_minus_one(source, shape, result):
    assert RESHAPE.infer({"x": f32(*source)}, {"shape": shape})["y"] == f32(*result)


@pytest.mark.parametrize("source,shape", [
    ((2, 3, 4), (5, -1)),
    ((2, 3, 4), (6, 5)),
    (("N", 4), (-1, 8)),
    (("N", "M"), (-1,)),
    ((2, 3), (0, 0, 0)),
])
def test_reshape_rejects_shapes_of_another_size(source, shape):
    with pytest.raises(VerificationError, match="reshape"):
        RESHAPE.infer({"x": f32(*source)}, {"shape": shape})


def test_reshape_allows_one_minus_one_only():
    with pytest.raises(VerificationError, match="more than one -1"):
        RESHAPE.infer({"x": f32(4)}, {"shape": (-1, -1)})


def test_reshape_evaluates_like_numpy():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(RESHAPE.evaluate({"x": x}, {"shape": (0, -1)})["y"],
                                  x.reshape(2, 12))


# flatten ----------------------------------------------------------------------------
@pytest.mark.parametrize("axis,result", [(0, (1, 24)), (1, (2, 12)), (2, (6, 4)),
                                         (3, (24, 1)), (-1, (6, 4))])
def test_flatten_splits_at_the_axis(axis, result):
    assert FLATTEN.infer({"x": f32(2, 3, 4)}, {"axis": axis})["y"] == f32(*result)


def test_flatten_keeps_a_symbolic_batch():
    assert FLATTEN.infer({"x": f32("N", 16, 2, 2)})["y"] == f32("N", 64)


def test_flatten_of_symbolic_product_has_no_name():
    with pytest.raises(VerificationError, match="no single shape symbol names"):
        FLATTEN.infer({"x": f32("N", "C", 4)}, {"axis": 2})


def test_flatten_axis_out_of_range_is_rejected():
    with pytest.raises(VerificationError, match="'axis' must be in \\[-3, 3\\]"):
        FLATTEN.infer({"x": f32(2, 3, 4)}, {"axis": 4})


@pytest.mark.parametrize("op,attrs", [("reshape", {"shape": (0, 2, -1)}), ("flatten", {})])
def test_copy_lowering_matches_evaluate(op, attrs):
    pytest.importorskip("hpvm.interp")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_lowering_matches(tensor_node("r", op, {"x": f32("N", 3, 4)}, attrs), {"x": x})


# concat -----------------------------------------------------------------------------
def test_concat_adds_the_joined_lengths():
    types = {"x0": f32("N", 2, 5), "x1": f32("N", 3, 5), "x2": f32("N", 1, 5)}
    assert CONCAT.infer(types, {"axis": 1})["y"] == f32("N", 6, 5)


def test_concat_of_one_input_keeps_its_shape():
    assert CONCAT.infer({"x0": f32("N", "C")}, {"axis": 1})["y"] == f32("N", "C")


def test_concat_other_dims_must_agree():
    with pytest.raises(VerificationError, match="dimension 0 of 'x1' is 'M' but that of 'x0' is 'N'"):
        CONCAT.infer({"x0": f32("N", 2), "x1": f32("M", 2)}, {"axis": 1})


def test_concat_of_symbolic_lengths_has_no_name():
    with pytest.raises(VerificationError, match="joined dimension 1 of 'x0'"):
        CONCAT.infer({"x0": f32(2, "A"), "x1": f32(2, 3)}, {"axis": 1})


def test_concat_evaluates_like_numpy():
    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((2, n, 3)).astype(np.float32) for n in (1, 2, 3)]
    inputs = {f"x{i}": p for i, p in enumerate(parts)}
    np.testing.assert_array_equal(CONCAT.evaluate(inputs, {"axis": 1})["y"],
                                  np.concatenate(parts, axis=1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_lowering_matches_evaluate(axis):
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(1)
    inputs = {}
    for i, n in enumerate((1, 3, 2)):
        shape = [2, 3, 4]
        shape[axis] = n
        inputs[f"x{i}"] = rng.standard_normal(shape).astype(np.float32)
    assert_lowering_matches(tensor_node("cat", "concat", types_of(**inputs), {"axis": axis}),
                            inputs)
