"""unary, binary, select and cast: shape and type rules, numpy semantics,
and the lowering against evaluate for every scalar function."""
import math

import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches, run_lowered
from hpvm.ir import F32, I32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.scalar_functions import BINARY, UNARY
from hpvm.ir.tensor_ops.testing import types_of

RNG = np.random.default_rng(7)


def sample(domain: str, shape=(3, 4), positive=False, unit=False) -> np.ndarray:
    if domain in ("bool",):
        return RNG.random(shape) < 0.5
    if domain in ("int", "integral"):
        return RNG.integers(-50, 50, shape).astype(np.int32)
    values = RNG.uniform(-0.9, 0.9, shape) if unit else RNG.standard_normal(shape) * 3
    return (np.abs(values) + 1.1 if positive else values).astype(np.float32)


POSITIVE = {"log", "sqrt", "acosh"}
UNIT = {"asin", "acos", "atanh"}


@pytest.mark.parametrize("fn", sorted(UNARY))
def test_unary_lowering_matches_evaluate(fn):
    function = UNARY[fn]
    x = sample(function.domain, positive=fn in POSITIVE, unit=fn in UNIT)
    if fn in ("isnan", "isinf"):
        x[0, :3] = [np.nan, np.inf, -np.inf]
    if fn == "round":
        x[0, :4] = [0.5, 1.5, -2.5, 2.4999]
    node = tensor_node("u", "unary", types_of(x=x), {"fn": fn})
    assert_lowering_matches(node, {"x": x}, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fn", sorted(BINARY))
def test_binary_lowering_matches_evaluate_with_broadcasting(fn):
    function = BINARY[fn]
    domain = "float" if function.domain in ("numeric", "any") else function.domain
    a, b = sample(domain, (2, 3, 4)), sample(domain, (3, 1))
    if fn in ("div", "mod", "fmod"):
        b = np.where(np.abs(b) < 0.5, 1.5, b).astype(b.dtype)
    if fn == "pow":
        a = np.abs(a) + 0.5
    if fn in ("shl", "shr"):
        a, b = np.abs(a), np.abs(b) % 8
    node = tensor_node("b", "binary", types_of(a=a, b=b), {"fn": fn})
    assert_lowering_matches(node, {"a": a, "b": b}, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("fn", ["div", "mod", "fmod"])
def test_integer_division_truncates_and_mod_follows_the_divisor(fn):
    a = np.array([7, -7, 7, -7, 6], np.int64)
    b = np.array([2, 2, -2, -2, 3], np.int64)
    expected = {"div": [3, -3, -3, 3, 2], "mod": [1, 1, -1, -1, 0],
                "fmod": [1, -1, 1, -1, 0]}[fn]
    node = tensor_node("d", "binary", types_of(a=a, b=b), {"fn": fn})
    np.testing.assert_array_equal(get_op("binary").evaluate({"a": a, "b": b}, {"fn": fn})["y"],
                                  expected)
    assert_lowering_matches(node, {"a": a, "b": b})


def test_erf_and_atan_are_accurate_to_single_precision():
    x = np.linspace(-6, 6, 1001).astype(np.float64)
    for fn, reference in (("erf", math.erf), ("atan", math.atan)):
        node = tensor_node("e", "unary", types_of(x=x), {"fn": fn})
        got = run_lowered(node, {"x": x})["y"]
        np.testing.assert_allclose(got, [reference(v) for v in x], atol=3e-7, rtol=1e-6)


def test_comparisons_make_bool():
    out = get_op("binary").infer({"a": BufferType(F32, ("N", 3)), "b": BufferType(F32, (3,))},
                                 {"fn": "less"})["y"]
    assert str(out) == "bool[N, 3]"


def test_unary_rejects_an_element_type_the_function_does_not_take():
    with pytest.raises(VerificationError, match="sqrt takes float inputs, got i32"):
        get_op("unary").infer({"x": BufferType(I32, (3,))}, {"fn": "sqrt"}, node="s")


def test_binary_rejects_mixed_element_types_naming_the_port():
    a, b = np.zeros(3, np.float32), np.zeros(3, np.int32)
    with pytest.raises(VerificationError, match="input 'b' has element type i32"):
        get_op("binary").infer(types_of(a=a, b=b), {"fn": "add"})


def test_unknown_function_lists_the_known_ones():
    with pytest.raises(VerificationError, match="attribute 'fn' must be one of neg, abs"):
        get_op("unary").infer(types_of(x=np.zeros(3, np.float32)), {"fn": "gamma"})


def test_select_broadcasts_its_three_inputs():
    cond = np.array([[True], [False]])
    a, b = sample("float", (2, 3)), sample("float", (3,))
    node = tensor_node("s", "select", types_of(cond=cond, a=a, b=b))
    np.testing.assert_array_equal(get_op("select").evaluate(
        {"cond": cond, "a": a, "b": b})["y"], np.where(cond, a, b))
    assert_lowering_matches(node, {"cond": cond, "a": a, "b": b})


def test_select_needs_a_bool_condition():
    with pytest.raises(VerificationError, match="'cond' must be bool"):
        get_op("select").infer(types_of(cond=np.zeros(2, np.int32), a=np.zeros(2, np.float32),
                                        b=np.zeros(2, np.float32)))


@pytest.mark.parametrize("to", ["bool", "i8", "i32", "i64", "u8", "f16", "f32", "f64"])
@pytest.mark.parametrize("source", [np.float32, np.int64, np.bool_])
def test_cast_lowering_matches_evaluate(source, to):
    x = (RNG.standard_normal((2, 5)) * 20).astype(source)
    if to == "u8" and source is not np.bool_:
        x = np.abs(x)
    node = tensor_node("c", "cast", types_of(x=x), {"to": to})
    assert_lowering_matches(node, {"x": x}, rtol=1e-3)


def test_cast_from_float_to_int_truncates():
    x = np.array([1.7, -1.7, 2.5], np.float32)
    assert get_op("cast").evaluate({"x": x}, {"to": "i32"})["y"].tolist() == [1, -1, 2]
