"""Scalar semantics of the interpreter: operators, casts, intrinsics."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    BOOL, F16, F32, F64, I8, I32, I64, U8, U32, Binary, Cast, Intrinsic, Select, Unary,
)
from hpvm.interp.testing import map_module, run_map

RNG = np.random.default_rng(0)


def run_binary(op, dtype_type, a, b):
    module = map_module({"a": dtype_type, "b": dtype_type}, dtype_type,
                        lambda a, b: Binary(op, a, b))
    return run_map(module, a=a, b=b)


@pytest.mark.parametrize("op, numpy_op", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
    ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
])
def test_integer_binary_ops_wrap_like_numpy(op, numpy_op):
    a = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    b = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    with np.errstate(all="ignore"):
        expected = numpy_op(a, b)
    np.testing.assert_array_equal(run_binary(op, I32, a, b), expected)


def test_addition_wraps_around():
    a = np.array([2**31 - 1, -2**31], np.int32)
    b = np.array([1, -1], np.int32)
    np.testing.assert_array_equal(run_binary("add", I32, a, b), [-2**31, 2**31 - 1])


def test_unsigned_subtraction_wraps_around():
    a = np.array([0, 1], np.uint8)
    b = np.array([1, 3], np.uint8)
    np.testing.assert_array_equal(run_binary("sub", U8, a, b), [255, 254])


def test_division_truncates_toward_zero_like_c():
    a = np.array([7, -7, 7, -7, 0, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    np.testing.assert_array_equal(run_binary("div", I32, a, b), [3, -3, -3, 3, 0, 0])


def test_remainder_has_the_sign_of_the_dividend_like_c():
    a = np.array([7, -7, 7, -7, -1], np.int32)
    b = np.array([2, 2, -2, -2, 5], np.int32)
    np.testing.assert_array_equal(run_binary("rem", I32, a, b), [1, -1, 1, -1, -1])


def test_int_min_divided_by_minus_one_wraps():
    a = np.array([-2**31], np.int32)
    b = np.array([-1], np.int32)
    np.testing.assert_array_equal(run_binary("div", I32, a, b), [-2**31])
    np.testing.assert_array_equal(run_binary("rem", I32, a, b), [0])


def test_unsigned_division():
    a = np.array([4000000000, 7], np.uint32)
    b = np.array([3, 2], np.uint32)
    np.testing.assert_array_equal(run_binary("div", U32, a, b), [1333333333, 3])


def test_integer_division_by_zero_is_an_error_naming_the_instance():
    a = np.array([1, 2, 3], np.int32)
    b = np.array([1, 0, 1], np.int32)
    with pytest.raises(ExecutionError, match=r"division by zero in instance \(1,\)"):
        run_binary("div", I32, a, b)


def test_float_division_by_zero_gives_infinity():
    out = run_binary("div", F32, np.array([1, -1], np.float32), np.zeros(2, np.float32))
    np.testing.assert_array_equal(out, [np.inf, -np.inf])


def test_float_remainder_is_fmod():
    a = np.array([5.5, -5.5], np.float64)
    b = np.array([2.0, 2.0], np.float64)
    np.testing.assert_array_equal(run_binary("rem", F64, a, b), np.fmod(a, b))


def test_float_ops_stay_in_single_precision():
    a = np.array([1.0], np.float32)
    b = np.array([1e-8], np.float32)
    out = run_binary("add", F32, a, b)
    assert out.dtype == np.float32 and out[0] == np.float32(1.0)


def test_half_precision_add_rounds_to_half():
    a = np.array([1.0], np.float16)
    b = np.array([0.0004], np.float16)
    out = run_binary("add", F16, a, b)
    assert out.dtype == np.float16 and out[0] == np.float16(1.0) + np.float16(0.0004)


def test_shift_counts_are_taken_modulo_the_bit_width():
    a = np.array([1, 1, 1], np.int32)
    b = np.array([3, 33, -1], np.int32)
    np.testing.assert_array_equal(run_binary("shl", I32, a, b), [8, 2, -2**31])


def test_right_shift_is_arithmetic_for_signed_and_logical_for_unsigned():
    signed = run_binary("shr", I8, np.array([-128], np.int8), np.array([7], np.int8))
    unsigned = run_binary("shr", U8, np.array([128], np.uint8), np.array([7], np.uint8))
    assert signed[0] == -1 and unsigned[0] == 1


@pytest.mark.parametrize("op, numpy_op", [
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
])
def test_comparisons(op, numpy_op):
    a = np.array([1, 2, 3, -1], np.int64)
    b = np.array([2, 2, 2, -1], np.int64)
    module = map_module({"a": I64, "b": I64}, BOOL, lambda a, b: getattr(a, op)(b))
    np.testing.assert_array_equal(run_map(module, a=a, b=b), numpy_op(a, b))


def test_comparison_with_nan_is_false_except_ne():
    a = np.array([np.nan], np.float32)
    lt = map_module({"a": F32}, BOOL, lambda a: a.lt(1.0))
    ne = map_module({"a": F32}, BOOL, lambda a: a.ne(a))
    assert not run_map(lt, a=a)[0] and run_map(ne, a=a)[0]


def test_negation_wraps():
    module = map_module({"a": I32}, I32, lambda a: -a)
    np.testing.assert_array_equal(run_map(module, a=np.array([-2**31, 5], np.int32)),
                                  [-2**31, -5])


def test_bitnot():
    module = map_module({"a": U8}, U8, lambda a: ~a)
    np.testing.assert_array_equal(run_map(module, a=np.array([0, 0xF0], np.uint8)),
                                  [0xFF, 0x0F])


def test_logical_not():
    module = map_module({"a": BOOL}, BOOL, lambda a: Unary("not", a))
    np.testing.assert_array_equal(run_map(module, a=np.array([True, False])), [False, True])


def test_logical_and_or_on_bools():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    land = map_module({"a": BOOL, "b": BOOL}, BOOL, lambda a, b: Binary("land", a, b))
    lor = map_module({"a": BOOL, "b": BOOL}, BOOL, lambda a, b: Binary("lor", a, b))
    np.testing.assert_array_equal(run_map(land, a=a, b=b), a & b)
    np.testing.assert_array_equal(run_map(lor, a=a, b=b), a | b)


def test_float_to_int_cast_truncates_toward_zero():
    module = map_module({"a": F32}, I32, lambda a: Cast(a, I32))
    out = run_map(module, a=np.array([2.7, -2.7, 0.5, -0.5], np.float32))
    np.testing.assert_array_equal(out, [2, -2, 0, 0])


def test_cast_to_bool_is_not_equal_zero():
    module = map_module({"a": F32}, BOOL, lambda a: Cast(a, BOOL))
    out = run_map(module, a=np.array([0.0, -0.0, 0.1, np.nan], np.float32))
    np.testing.assert_array_equal(out, [False, False, True, True])


def test_integer_narrowing_cast_wraps():
    module = map_module({"a": I32}, I8, lambda a: Cast(a, I8))
    np.testing.assert_array_equal(run_map(module, a=np.array([200, -129, 256], np.int32)),
                                  [-56, 127, 0])


def test_bool_to_float_cast_gives_zero_or_one():
    module = map_module({"a": BOOL}, F32, lambda a: Cast(a, F32))
    np.testing.assert_array_equal(run_map(module, a=np.array([True, False])), [1.0, 0.0])


def test_double_to_half_cast_rounds():
    module = map_module({"a": F64}, F16, lambda a: Cast(a, F16))
    a = np.array([1.0001, 65504.0, 1e6])
    with np.errstate(over="ignore"):
        expected = a.astype(np.float16)
    np.testing.assert_array_equal(run_map(module, a=a), expected)


UNARY_INTRINSICS = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
}


@pytest.mark.parametrize("name", sorted(UNARY_INTRINSICS))
def test_unary_intrinsic_matches_numpy(name):
    a = RNG.uniform(0.1, 4.0, 32).astype(np.float32) * np.where(
        name in ("sqrt", "log"), 1, RNG.choice([-1, 1], 32)).astype(np.float32)
    module = map_module({"a": F32}, F32, lambda a: Intrinsic(name, (a,)))
    out = run_map(module, a=a)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, UNARY_INTRINSICS[name](a), rtol=1e-6)


@pytest.mark.parametrize("name, numpy_op", [("min", np.fmin), ("max", np.fmax),
                                            ("pow", np.power)])
def test_binary_intrinsic_matches_numpy(name, numpy_op):
    a = RNG.uniform(0.1, 4.0, 32)
    b = RNG.uniform(-2.0, 2.0, 32)
    module = map_module({"a": F64, "b": F64}, F64, lambda a, b: Intrinsic(name, (a, b)))
    np.testing.assert_allclose(run_map(module, a=a, b=b), numpy_op(a, b), rtol=1e-12)


def test_integer_min_max_and_abs():
    a = np.array([-5, 3, -2**31], np.int32)
    b = np.array([2, -7, 0], np.int32)
    for name, expected in (("min", np.minimum(a, b)), ("max", np.maximum(a, b))):
        module = map_module({"a": I32, "b": I32}, I32, lambda a, b: Intrinsic(name, (a, b)))
        np.testing.assert_array_equal(run_map(module, a=a, b=b), expected)
    module = map_module({"a": I32}, I32, lambda a: Intrinsic("abs", (a,)))
    np.testing.assert_array_equal(run_map(module, a=a), [5, 3, -2**31])


def test_float_min_ignores_nan_like_fmin():
    module = map_module({"a": F32, "b": F32}, F32, lambda a, b: Intrinsic("min", (a, b)))
    out = run_map(module, a=np.array([np.nan], np.float32), b=np.array([1.0], np.float32))
    assert out[0] == 1.0


def test_half_intrinsic_is_computed_and_rounded_to_half():
    module = map_module({"a": F16}, F16, lambda a: Intrinsic("exp", (a,)))
    a = np.array([0.5, 1.5], np.float16)
    out = run_map(module, a=a)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.exp(a.astype(np.float32)).astype(np.float16))


def test_select_picks_per_instance():
    module = map_module({"a": F32, "b": F32}, F32,
                        lambda a, b: Select(a.gt(b), a - b, b - a))
    a = np.array([1, 5, 3], np.float32)
    b = np.array([4, 2, 3], np.float32)
    np.testing.assert_array_equal(run_map(module, a=a, b=b), np.abs(a - b))
