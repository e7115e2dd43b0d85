"""const-fold on random constant expression trees: the folded value equals
what the reference interpreter computes for the unfolded expression."""
import functools
import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hpvm.errors import ExecutionError
from hpvm.interp import run_kernel
from hpvm.ir import (
    BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U32, U64, Binary, BufferType,
    Cast, Compare, Const, Intrinsic, KernelFunction, Parameter, Select, Store,
    Unary,
)
from hpvm.ir.graph import Module
from hpvm.ir.kernel import FLOAT_ONLY_INTRINSICS
from hpvm.ir.visit import walk
from hpvm.passes.const_fold import fold_expression

INTS = (I8, I16, I32, I64, U8, U32, U64)
FLOATS = (F16, F32, F64)
TYPES = INTS + FLOATS + (BOOL,)


@functools.lru_cache(maxsize=None)
def constants(type):
    if type.is_bool:
        values = st.booleans()
    elif type.is_int:
        info = np.iinfo(type.numpy_dtype)
        values = st.one_of(st.integers(int(info.min), int(info.max)),
                           st.sampled_from([0, 1, -1, int(info.min), int(info.max)]))
    else:
        values = st.one_of(st.floats(width=type.bits),
                           st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5]))
    return values.map(lambda v: Const(v, type))


@functools.lru_cache(maxsize=None)
def expressions(type, depth=3):
    """Random expression trees of constants, typed ``type``."""
    leaf = constants(type)
    if depth == 0:
        return leaf
    sub = lambda t: expressions(t, depth - 1)  # noqa: E731
    options = [leaf, st.builds(Select, sub(BOOL), sub(type), sub(type)),
               st.sampled_from(TYPES).flatmap(lambda t: sub(t).map(lambda e: Cast(e, type)))]
    if type.is_bool:
        options += [
            st.builds(Binary, st.sampled_from(["land", "lor"]), sub(BOOL), sub(BOOL)),
            st.builds(Unary, st.just("not"), sub(BOOL)),
            st.sampled_from(INTS + FLOATS).flatmap(lambda t: st.builds(
                Compare, st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]), sub(t), sub(t))),
        ]
    else:
        ops = ["add", "sub", "mul", "div", "rem"]
        if type.is_int:
            ops += ["and", "or", "xor", "shl", "shr"]
        options += [
            st.builds(Binary, st.sampled_from(ops), sub(type), sub(type)),
            st.builds(Unary, st.sampled_from(["neg"] + (["bitnot"] if type.is_int else [])),
                      sub(type)),
            st.builds(Intrinsic, st.just("abs"), st.tuples(sub(type))),
            st.builds(Intrinsic, st.sampled_from(["min", "max"]),
                      st.tuples(sub(type), sub(type))),
        ]
        if type.is_float:
            unary = [n for n in FLOAT_ONLY_INTRINSICS if n != "pow"]
            options += [st.builds(Intrinsic, st.sampled_from(unary), st.tuples(sub(type))),
                        st.builds(Intrinsic, st.just("pow"), st.tuples(sub(type), sub(type)))]
    return st.one_of(options)


typed_expressions = st.sampled_from(TYPES).flatmap(lambda t: expressions(t))


def interpret(expr):
    """The value the interpreter stores for ``expr`` (a 1-element array)."""
    out = Parameter("out", BufferType(expr.type, (1,)), "out")
    function = KernelFunction("k", (out,), (Store("out", (Const(0, I64),), expr),))
    module = Module("m", {"k": function}, {}, "main")
    with np.errstate(all="ignore"):
        return run_kernel(module, "k", {}, (1,))["out"]


def undefined(expr) -> bool:
    """Integer division by zero or float-to-int conversions out of range
    somewhere in ``expr`` (left unfolded on purpose)."""
    for node in walk(expr):
        if isinstance(node, Binary) and node.op in ("div", "rem") and node.type.is_int:
            return True
        if isinstance(node, Cast) and node.type.is_int and node.value.type.is_float:
            return True
    return False


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes() or (
        a.dtype.kind == "f" and bool(np.isnan(a).all() and np.isnan(b).all()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_expressions)
def test_folding_agrees_with_the_interpreter(expr):
    try:
        expected = interpret(expr)
    except ExecutionError:
        assume(False)
    folded = fold_expression(expr)
    assert same_bits(interpret(folded), expected), (expr, folded)
    if not undefined(expr):
        assert isinstance(folded, Const), folded
    if isinstance(folded, Const):
        value = np.asarray(folded.value, dtype=expr.type.numpy_dtype).reshape(1)
        assert same_bits(value, expected) or (
            expr.type.is_float and math.isnan(folded.value) and np.isnan(expected[0]))
