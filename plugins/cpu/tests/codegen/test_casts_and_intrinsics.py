"""Casts and math intrinsics compiled by the cpu code generator."""
import numpy as np
import pytest

from hpvm.ir.kernel import Intrinsic, Select
from hpvm.ir.types import (
    BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64,
)
from hpvm_cpu.codegen.testing import check_map

RNG = np.random.default_rng(11)
ALL_INTS = [I8, I16, I32, I64, U8, U16, U32, U64]
FLOATS = [F16, F32, F64]
TOLERANCE = {F16: 1e-3, F32: 1e-6, F64: 1e-13}


def ints_of(type, n=100):
    info = np.iinfo(type.numpy_dtype)
    return RNG.integers(info.min, info.max, n, dtype=type.numpy_dtype, endpoint=True)


@pytest.mark.parametrize("source", ALL_INTS, ids=str)
@pytest.mark.parametrize("target", ALL_INTS, ids=str)
def test_integer_casts_wrap(source, target):
    a = ints_of(source)
    check_map({"a": a}, target, lambda a: a.cast(target), a.astype(target.numpy_dtype))


@pytest.mark.parametrize("source", ALL_INTS + FLOATS, ids=str)
def test_cast_to_bool_is_not_equal_zero(source):
    a = (ints_of(source) if source.is_int else RNG.normal(size=100).astype(source.numpy_dtype))
    a[:10] = 0
    if source.is_float:
        a[10] = np.nan
    check_map({"a": a}, BOOL, lambda a: a.cast(BOOL), a != 0)


@pytest.mark.parametrize("target", ALL_INTS + FLOATS, ids=str)
def test_cast_from_bool(target):
    a = RNG.integers(0, 2, 50).astype(bool)
    check_map({"a": a}, target, lambda a: a.cast(target), a.astype(target.numpy_dtype))


@pytest.mark.parametrize("source", FLOATS, ids=str)
@pytest.mark.parametrize("target", [I8, I32, I64, U8, U32, U64], ids=str)
def test_float_to_integer_truncates_toward_zero(source, target):
    info = np.iinfo(target.numpy_dtype)
    high = min(float(info.max), 60000.0 if source == F16 else 1e9)
    low = max(float(info.min), -high)
    a = RNG.uniform(low, high, 200).astype(source.numpy_dtype)
    a[:4] = [0.5, -0.5, 1.99, -1.99] if target.is_signed else [0.5, 0.99, 1.99, 2.5]
    check_map({"a": a}, target, lambda a: a.cast(target), np.trunc(a).astype(target.numpy_dtype))


@pytest.mark.parametrize("source", ALL_INTS, ids=str)
@pytest.mark.parametrize("target", FLOATS, ids=str)
def test_integer_to_float_rounds(source, target):
    a = ints_of(source)
    with np.errstate(over="ignore"):
        expected = a.astype(target.numpy_dtype)
    check_map({"a": a}, target, lambda a: a.cast(target), expected)


@pytest.mark.parametrize("source", FLOATS, ids=str)
@pytest.mark.parametrize("target", FLOATS, ids=str)
def test_float_to_float_rounds(source, target):
    a = (RNG.normal(size=200) * 1000).astype(source.numpy_dtype)
    with np.errstate(over="ignore"):
        check_map({"a": a}, target, lambda a: a.cast(target), a.astype(target.numpy_dtype))


UNARY_MATH = {
    "sqrt": (np.sqrt, 0.0, 100.0), "exp": (np.exp, -10.0, 10.0), "log": (np.log, 0.01, 100.0),
    "sin": (np.sin, -10.0, 10.0), "cos": (np.cos, -10.0, 10.0), "tanh": (np.tanh, -5.0, 5.0),
    "abs": (np.abs, -10.0, 10.0), "floor": (np.floor, -10.0, 10.0),
    "ceil": (np.ceil, -10.0, 10.0),
}


@pytest.mark.parametrize("type", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY_MATH))
def test_unary_math_intrinsics(type, name):
    formula, low, high = UNARY_MATH[name]
    a = RNG.uniform(low, high, 300).astype(type.numpy_dtype)
    if type == F16:  # computed in float32, rounded once
        expected = formula(a.astype(np.float32)).astype(np.float16)
    else:
        expected = formula(a)
    check_map({"a": a}, type, lambda a: Intrinsic(name, (a,)), expected, rtol=TOLERANCE[type],
              atol=TOLERANCE[type])


@pytest.mark.parametrize("type", FLOATS, ids=str)
@pytest.mark.parametrize("name,formula", [("min", np.fmin), ("max", np.fmax),
                                          ("pow", np.power)])
def test_binary_math_intrinsics(type, name, formula):
    a = RNG.uniform(0.1, 4.0, 300).astype(type.numpy_dtype)
    b = RNG.uniform(-3.0, 3.0, 300).astype(type.numpy_dtype)
    expected = formula(a.astype(np.float32), b.astype(np.float32)).astype(np.float16) \
        if type == F16 else formula(a, b)
    check_map({"a": a, "b": b}, type, lambda a, b: Intrinsic(name, (a, b)), expected,
              rtol=TOLERANCE[type])


@pytest.mark.parametrize("name,formula", [("min", np.fmin), ("max", np.fmax)])
def test_float_min_max_ignore_a_nan_operand(name, formula):
    a = np.array([np.nan, 1.0, np.nan, 2.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 3.0], np.float32)
    check_map({"a": a, "b": b}, F32, lambda a, b: Intrinsic(name, (a, b)), formula(a, b))


@pytest.mark.parametrize("type", [I8, I32, I64, U8, U32, U64], ids=str)
@pytest.mark.parametrize("name,formula", [("min", np.minimum), ("max", np.maximum)])
def test_integer_min_max_respect_signedness(type, name, formula):
    a, b = ints_of(type), ints_of(type)
    check_map({"a": a, "b": b}, type, lambda a, b: Intrinsic(name, (a, b)), formula(a, b))


@pytest.mark.parametrize("type", [I8, I32, I64, U8, U64], ids=str)
def test_integer_abs_wraps_at_the_minimum(type):
    a = ints_of(type)
    a[0] = np.iinfo(type.numpy_dtype).min
    with np.errstate(over="ignore"):
        check_map({"a": a}, type, lambda a: Intrinsic("abs", (a,)), np.abs(a))


@pytest.mark.parametrize("type", [I32, F16, F64, BOOL], ids=str)
def test_select_picks_per_element(type):
    c = RNG.integers(0, 2, 64).astype(bool)
    a = RNG.integers(0, 100, 64).astype(type.numpy_dtype)
    b = RNG.integers(0, 100, 64).astype(type.numpy_dtype)
    check_map({"c": c, "a": a, "b": b}, type, lambda c, a, b: Select(c, a, b), np.where(c, a, b))


def test_f32_exp_is_within_two_ulp_over_its_whole_range():
    """exp on f32 is written out as instructions (vector_math.py, so that
    loops using it vectorise): within 2 ulp of numpy's from overflow down
    through the denormals, and exact at the ends."""
    a = np.concatenate([np.linspace(-104.5, 89.5, 4001), RNG.normal(size=500) * 3,
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.72, -87.4,
                         -100.0, -103.9]]).astype(np.float32)
    with np.errstate(over="ignore"):
        expected = np.exp(a)
    got = check_map({"a": a}, F32, lambda a: Intrinsic("exp", (a,)), expected, rtol=2.4e-7,
                    atol=3e-45)
    assert got[-11] == np.inf and got[-10] == 0.0 and np.isnan(got[-9])
    masked = np.array([-1e4, -1e30, -104.0, -np.inf], np.float32)
    assert not check_map({"a": masked}, F32, lambda a: Intrinsic("exp", (a,)),
                         np.zeros(4, np.float32), rtol=0, atol=0).any()


@pytest.mark.parametrize("name,formula", [("sin", np.sin), ("cos", np.cos)])
def test_f32_sin_cos_are_within_one_ulp_for_every_magnitude(name, formula):
    """sin and cos on f32 are written out as instructions (vector_trig.py):
    within 1 ulp of the exact value (numpy's f64 result) for arguments of
    every exponent, denormals and f32s nearest multiples of pi/2 included,
    where a naive reduction loses every bit; inf and NaN give NaN."""
    magnitudes = RNG.integers(0, 0x7F800000, 3000, dtype=np.uint32).view(np.float32)
    near_multiples = (np.arange(1, 2000) * np.pi / 2).astype(np.float32)
    huge_multiples = (np.pi / 2 * 2.0 ** np.arange(30, 100)).astype(np.float32)
    a = np.concatenate([magnitudes, -magnitudes, near_multiples, huge_multiples,
                        np.linspace(-50, 50, 1001, dtype=np.float32),
                        [0.0, -0.0, 1e-45, -1e-38, np.inf, -np.inf, np.nan]]).astype(np.float32)
    with np.errstate(invalid="ignore"):
        exact = formula(a.astype(np.float64))
    ulp = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
    got = check_map({"a": a}, F32, lambda a: Intrinsic(name, (a,)), exact.astype(np.float32),
                    rtol=2.4e-7, atol=1.5e-45)
    finite = np.isfinite(a)
    assert np.all(np.abs(got[finite].astype(np.float64) - exact[finite]) <= ulp[finite])
    assert np.all(np.isnan(got[~finite]))
    assert name == "cos" or np.signbit(got[a.size - 6])      # sin(-0) = -0


def test_f32_log_is_within_two_ulp_over_its_whole_range():
    """log on f32 is written out as instructions (vector_math.py): within
    2 ulp of the exact value from the denormals to the largest float, and
    exact at the ends."""
    bits = RNG.integers(1, 0x7F800000, 4000, dtype=np.uint32)
    a = np.concatenate([bits.view(np.float32), np.linspace(0.5, 2.0, 1001), [1.0, 2.0],
                        [0.0, -0.0, np.inf, -1.0, -np.inf, np.nan]]).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.log(a.astype(np.float64))
    got = check_map({"a": a}, F32, lambda a: Intrinsic("log", (a,)), exact.astype(np.float32),
                    rtol=2.4e-7, atol=1.2e-7)
    finite = np.isfinite(exact)
    ulp = np.spacing(np.abs(exact[finite].astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got[finite] - exact[finite]) <= 2 * ulp)
    assert list(got[-6:-3]) == [-np.inf, -np.inf, np.inf] and np.all(np.isnan(got[-3:]))


def test_f32_tanh_is_within_three_ulp_and_saturates():
    """tanh on f32 is written out as instructions (vector_math.py): a
    polynomial below 0.625, exp above; within 3 ulp, +-1 far out."""
    a = np.concatenate([np.linspace(-12, 12, 4001), RNG.normal(size=1000),
                        np.linspace(0.6, 0.65, 101), RNG.integers(1, 0x3F000000, 1000,
                                                                  dtype=np.uint32).view(np.float32),
                        [0.0, -0.0, 100.0, -100.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    exact = np.tanh(a.astype(np.float64))
    got = check_map({"a": a}, F32, lambda a: Intrinsic("tanh", (a,)), exact.astype(np.float32),
                    rtol=4e-7, atol=1e-45)
    ulp = np.spacing(np.abs(exact[:-1].astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got[:-1] - exact[:-1]) <= 3 * ulp)
    assert list(got[-5:-1]) == [1.0, -1.0, 1.0, -1.0] and np.isnan(got[-1])
    assert np.signbit(got[-6])      # tanh(-0) = -0


def test_f32_pow_is_within_one_ulp_with_c99s_special_cases():
    """pow on f32 is written out as instructions (vector_pow.py): within
    1 ulp of the exact value (numpy in f64) on bases and exponents of every
    size and sign, and C99's results (numpy's) on zeros, infinities, NaNs,
    negative bases and odd exponents."""
    bases = np.concatenate([RNG.uniform(0, 4, 3000), RNG.uniform(-4, 0, 500),
                            RNG.integers(1, 0x7F800000, 1500, dtype=np.uint32)
                            .view(np.float32)]).astype(np.float32)
    exponents = np.concatenate([RNG.uniform(-8, 8, 3000), RNG.integers(-9, 10, 500),
                                RNG.uniform(-2, 2, 1500)]).astype(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                        1e-45, 3.0], np.float32)
    grid_a, grid_b = np.meshgrid(special, np.concatenate([special, [0.5, 3.0, -3.0, 2.0, 1e30]])
                                 .astype(np.float32))
    a = np.concatenate([bases, grid_a.ravel()])
    b = np.concatenate([exponents, grid_b.ravel()])
    with np.errstate(all="ignore"):
        exact = np.power(a.astype(np.float64), b.astype(np.float64))
        expected = np.power(a, b)
    got = check_map({"a": a, "b": b}, F32, lambda a, b: Intrinsic("pow", (a, b)), expected,
                    rtol=2.4e-7, atol=1.5e-45)
    finite = np.isfinite(exact) & (np.abs(exact) < 3.4e38)
    ulp = np.spacing(np.abs(exact[finite].astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got[finite] - exact[finite]) <= ulp)
    same_special = (got[~finite] == expected[~finite]) | (np.isnan(got[~finite])
                                                          & np.isnan(expected[~finite]))
    assert same_special.all()
    tail, expected_tail = got[bases.size:], expected[bases.size:]
    signed = ~np.isnan(expected_tail)       # pow(-0, 3) = -0, pow(-0, -1) = -inf
    assert np.array_equal(np.signbit(tail[signed]), np.signbit(expected_tail[signed]))
