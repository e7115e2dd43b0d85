"""Narrow storage types (bf16, float8, float4, int4, int2): the encoder and
decoder kernels give ml_dtypes' bits on every float32 class (normal,
subnormal, out of range, infinite, NaN), ops on narrow values compute in
f32 and round their results, and bitcast moves bits."""
import ml_dtypes
import numpy as np
import pytest

from hpvm.interp.testing import run_lowered
from hpvm.ir.tensor_ops import TENSOR_OPS, tensor_node
from hpvm.ir.tensor_ops.storage import FLOAT_FORMATS
from hpvm.ir.tensor_ops.testing import evaluate_node, same_bits, sample_floats, types_of
from hpvm.ir.types import NARROW_TYPES, SCALAR_TYPES

NARROW = [t.name for t in NARROW_TYPES]


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("to", NARROW)
def test_cast_kernel_gives_the_interpreters_bits(to, saturate):
    x = sample_floats()
    node = tensor_node("c", "cast", types_of(x=x), {"to": to, "saturate": saturate})
    expected = evaluate_node(node, {"x": x})["y"]
    actual = run_lowered(node, {"x": x})["y"]
    assert actual.dtype == expected.dtype == SCALAR_TYPES[to].numpy_dtype
    assert same_bits(actual, expected).all(), x[~same_bits(actual, expected)][:5]
    back = tensor_node("d", "cast", types_of(x=expected), {"to": "f32"})
    np.testing.assert_array_equal(run_lowered(back, {"x": expected})["y"],
                                  expected.astype(np.float32))


@pytest.mark.parametrize("to", [n for n in FLOAT_FORMATS if n != "f4e2m1"])
def test_unsaturated_float_casts_round_as_ml_dtypes(to):
    x = sample_floats(seed=1)
    got = TENSOR_OPS["cast"].evaluate({"x": x}, {"to": to, "saturate": False})["y"]
    assert same_bits(got, x.astype(SCALAR_TYPES[to].numpy_dtype)).all()


def test_saturated_float8_clamps_infinities_and_keeps_nan():
    x = np.array([1e9, -np.inf, np.inf, np.nan, 1.0], np.float32)
    got = TENSOR_OPS["cast"].evaluate({"x": x}, {"to": "f8e4m3fn"})["y"].astype(np.float32)
    np.testing.assert_array_equal(got[:3], [448, -448, 448])
    assert np.isnan(got[3]) and got[4] == 1.0


def test_integer_storage_wraps():
    x = np.array([-9, -8, 7, 8, 300, -1], np.int32)
    got = TENSOR_OPS["cast"].evaluate({"x": x}, {"to": "i4"})["y"]
    np.testing.assert_array_equal(got.astype(np.int32), [7, -8, 7, -8, -4, -1])


def test_ops_on_bf16_compute_in_f32_and_round_once():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 5)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((5, 4)).astype(ml_dtypes.bfloat16)
    node = tensor_node("m", "matmul", types_of(a=a, b=b))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    got = evaluate_node(node, {"a": a, "b": b})["y"]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32),
                               rtol=1e-2)
    np.testing.assert_array_equal(run_lowered(node, {"a": a, "b": b})["y"].view(np.uint16),
                                  got.view(np.uint16))


@pytest.mark.parametrize("source,to", [("f32", "i32"), ("i64", "f64"), ("bool", "u8"),
                                       ("bf16", "i16"), ("u16", "bf16"), ("f16", "u16")])
def test_bitcast_moves_bits(source, to):
    x = (np.arange(-6, 6) * 1.75).astype(SCALAR_TYPES[source].numpy_dtype)
    node = tensor_node("b", "bitcast", types_of(x=x), {"to": to})
    expected = x.view(SCALAR_TYPES[to].numpy_dtype)
    np.testing.assert_array_equal(evaluate_node(node, {"x": x})["y"].view(np.uint8),
                                  expected.view(np.uint8))
    np.testing.assert_array_equal(run_lowered(node, {"x": x})["y"].view(np.uint8),
                                  expected.view(np.uint8))


def test_bitcast_refuses_elements_of_another_size():
    from hpvm.errors import VerificationError
    with pytest.raises(VerificationError, match="differ in size"):
        tensor_node("b", "bitcast", types_of(x=np.zeros(3, np.float32)), {"to": "i64"})
