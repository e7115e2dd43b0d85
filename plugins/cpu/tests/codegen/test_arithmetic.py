"""Scalar operators compiled by the cpu code generator, against numpy
formulas with C semantics and against the reference interpreter."""
import numpy as np
import pytest

from hpvm.ir.kernel import Binary, Const, Unary
from hpvm.ir.types import BOOL, F16, F32, F64, I8, I32, I64, U8, U32, U64
from hpvm_cpu.codegen.testing import check_map

RNG = np.random.default_rng(7)
INT_TYPES = [I8, U8, I32, U32, I64, U64]


def random_ints(type, n=200):
    info = np.iinfo(type.numpy_dtype)
    return RNG.integers(info.min, info.max, n, dtype=type.numpy_dtype, endpoint=True)


def c_div(a, b):
    """C division on int64 values (truncating), no overflow checks."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


@pytest.mark.parametrize("type", INT_TYPES, ids=str)
@pytest.mark.parametrize("op,formula", [("add", np.add), ("sub", np.subtract),
                                        ("mul", np.multiply)])
def test_integer_arithmetic_wraps(type, op, formula):
    a, b = random_ints(type), random_ints(type)
    with np.errstate(over="ignore"):
        expected = formula(a, b)
    check_map({"a": a, "b": b}, type, lambda a, b: Binary(op, a, b), expected)


@pytest.mark.parametrize("type", [I8, I32, I64], ids=str)
def test_signed_division_truncates_toward_zero(type):
    a = np.array([7, -7, 7, -7, 0, 5, -128, 100], dtype=type.numpy_dtype)
    b = np.array([2, 2, -2, -2, 3, 7, 3, -9], dtype=type.numpy_dtype)
    check_map({"a": a, "b": b}, type, lambda a, b: a / b, [3, -3, -3, 3, 0, 0, -42, -11])
    check_map({"a": a, "b": b}, type, lambda a, b: a % b, [1, -1, 1, -1, 0, 5, -2, 1])


@pytest.mark.parametrize("type", [I8, I32, I64], ids=str)
def test_signed_min_divided_by_minus_one_wraps(type):
    lowest = np.iinfo(type.numpy_dtype).min
    a = np.array([lowest, lowest], dtype=type.numpy_dtype)
    b = np.array([-1, -1], dtype=type.numpy_dtype)
    check_map({"a": a, "b": b}, type, lambda a, b: a / b, [lowest, lowest])
    check_map({"a": a, "b": b}, type, lambda a, b: a % b, [0, 0])


@pytest.mark.parametrize("type", [U8, U32, U64], ids=str)
def test_unsigned_division(type):
    a, b = random_ints(type), random_ints(type)
    b[b == 0] = 1
    check_map({"a": a, "b": b}, type, lambda a, b: a / b, a // b)
    check_map({"a": a, "b": b}, type, lambda a, b: a % b, a % b)


def test_random_signed_division_matches_c():
    a, b = random_ints(I32).astype(np.int64), random_ints(I32).astype(np.int64)
    b[b == 0] = 1
    quotient = c_div(a, b)
    check_map({"a": a.astype(np.int32), "b": b.astype(np.int32)}, I32,
              lambda a, b: a / b, quotient)
    check_map({"a": a.astype(np.int32), "b": b.astype(np.int32)}, I32,
              lambda a, b: a % b, a - quotient * b)


@pytest.mark.parametrize("type", INT_TYPES, ids=str)
def test_shift_count_is_taken_modulo_the_width(type):
    a = random_ints(type)
    counts = RNG.integers(0, 3 * type.bits, a.size).astype(type.numpy_dtype)
    masked = counts & (type.bits - 1)
    check_map({"a": a, "s": counts}, type, lambda a, s: a << s, np.left_shift(a, masked))
    check_map({"a": a, "s": counts}, type, lambda a, s: a >> s, np.right_shift(a, masked))


@pytest.mark.parametrize("type", INT_TYPES, ids=str)
def test_bitwise_operators(type):
    a, b = random_ints(type), random_ints(type)
    check_map({"a": a, "b": b}, type, lambda a, b: a & b, a & b)
    check_map({"a": a, "b": b}, type, lambda a, b: a | b, a | b)
    check_map({"a": a, "b": b}, type, lambda a, b: a ^ b, a ^ b)
    check_map({"a": a}, type, lambda a: ~a, ~a)


@pytest.mark.parametrize("type", INT_TYPES, ids=str)
def test_integer_negation_wraps(type):
    a = random_ints(type)
    with np.errstate(over="ignore"):
        check_map({"a": a}, type, lambda a: -a, (0 - a.astype(np.uint64)).astype(a.dtype))


@pytest.mark.parametrize("type", [F16, F32, F64], ids=str)
@pytest.mark.parametrize("op,formula", [("add", np.add), ("sub", np.subtract),
                                        ("mul", np.multiply), ("div", np.divide),
                                        ("rem", np.fmod)])
def test_float_arithmetic_stays_in_its_type(type, op, formula):
    a = RNG.normal(size=300).astype(type.numpy_dtype)
    b = RNG.normal(size=300).astype(type.numpy_dtype)
    check_map({"a": a, "b": b}, type, lambda a, b: Binary(op, a, b), formula(a, b))


@pytest.mark.parametrize("type", [F16, F32, F64], ids=str)
def test_float_negation(type):
    a = RNG.normal(size=50).astype(type.numpy_dtype)
    check_map({"a": a}, type, lambda a: -a, -a)


def test_logical_not_of_bool():
    a = RNG.integers(0, 2, 50).astype(bool)
    check_map({"a": a}, BOOL, lambda a: Unary("not", a), ~a)


@pytest.mark.parametrize("op,formula", [("eq", np.equal), ("ne", np.not_equal),
                                        ("lt", np.less), ("le", np.less_equal),
                                        ("gt", np.greater), ("ge", np.greater_equal)])
@pytest.mark.parametrize("type", [I8, U8, I64, U64, F16, F32, F64], ids=str)
def test_comparisons(type, op, formula):
    if type.is_float:
        a = np.array([1.0, 2.0, np.nan, 1.0, -0.0, np.inf, np.nan], type.numpy_dtype)
        b = np.array([1.0, 1.0, 1.0, np.nan, 0.0, np.inf, np.nan], type.numpy_dtype)
    else:
        a, b = random_ints(type), random_ints(type)
        b[:20] = a[:20]
    with np.errstate(invalid="ignore"):
        expected = formula(a, b)
    check_map({"a": a, "b": b}, BOOL, lambda a, b: getattr(a, op)(b), expected)


def test_bool_logic_operators_without_loads():
    a = RNG.integers(0, 2, 64).astype(bool)
    b = RNG.integers(0, 2, 64).astype(bool)
    check_map({"a": a, "b": b}, BOOL, lambda a, b: Binary("land", a, b), a & b)
    check_map({"a": a, "b": b}, BOOL, lambda a, b: Binary("lor", a, b), a | b)
    check_map({"a": a, "b": b}, BOOL, lambda a, b: a ^ b, a ^ b)


def test_constants_of_every_width():
    a = np.zeros(4, np.int64)
    check_map({"a": a}, I64, lambda a: a + Const(-(2**63), I64), np.full(4, -(2**63)))
    check_map({"a": a.astype(np.uint64)}, U64, lambda a: a + Const(2**64 - 1, U64),
              np.full(4, 2**64 - 1, np.uint64))


def test_a_multiply_add_may_fuse_and_round_once():
    """kernel.py lets a product and the add using it round once (an FMA):
    the IR says so to LLVM, and either rounding is a correct result."""
    from hpvm.ir.types import F32 as f32
    from hpvm_cpu.codegen import compile_kernel_node
    from hpvm_cpu.codegen.testing import map_function, module_of
    function = map_function({"a": f32, "b": f32, "c": f32}, f32, lambda a, b, c: a * b + c)
    kernel = compile_kernel_node(module_of(function), function.name, 1)
    assert "fmul contract" in kernel.llvm_ir and "fadd contract" in kernel.llvm_ir
    a = np.full(4, 1 + 2.0 ** -12, np.float32)  # a * a = 1 + 2^-11 + 2^-24
    c = np.full(4, -(1 + 2.0 ** -11), np.float32)
    out = kernel.run({"a": a, "b": a, "c": c}, (4,))["out"]
    assert set(out.tolist()) <= {0.0, 2.0 ** -24}
