"""const-fold: exact constant evaluation, identities, constant control flow."""
import math
import textwrap

import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir import (
    BOOL, F16, F32, I8, I32, I64, U8, U32, Binary, Call, Cast, Compare,
    Const, Intrinsic, Select, Unary, Var,
)
from hpvm.ir.text import parse_module, print_stmts
from hpvm.passes import run_pipeline
from hpvm.passes.const_fold import fold_expression

x32 = Var("x", I32)
xf = Var("x", F32)
side = Call("side", (), I32)


def fold(expr):
    return fold_expression(expr)


def c(value, type):
    return Const(value, type)


# -- evaluation with the IR's semantics

@pytest.mark.parametrize("expr, expected", [
    (c(-7, I32) / c(2, I32), c(-3, I32)),
    (c(-7, I32) % c(2, I32), c(-1, I32)),
    (c(7, I32) % c(-2, I32), c(1, I32)),
    (c(127, I8) + c(1, I8), c(-128, I8)),
    (c(-128, I8) / c(-1, I8), c(-128, I8)),
    (c(0, U8) - c(1, U8), c(255, U8)),
    (c(1, I32) << c(33, I32), c(2, I32)),
    (c(-8, I32) >> c(1, I32), c(-4, I32)),
    (c(0x80000000, U32) >> c(31, U32), c(1, U32)),
    (Unary("bitnot", c(0, U8)), c(255, U8)),
    (Unary("not", c(True, BOOL)), c(False, BOOL)),
    (Compare("lt", c(-1, I32), c(0, I32)), c(True, BOOL)),
    (Compare("eq", c(math.nan, F32), c(math.nan, F32)), c(False, BOOL)),
    (Cast(c(-2.7, F32), I32), c(-2, I32)),
    (Cast(c(300, I32), U8), c(44, U8)),
    (Cast(c(2.0, F32), BOOL), c(True, BOOL)),
    (Intrinsic("min", (c(3, I32), c(-4, I32))), c(-4, I32)),
    (Intrinsic("abs", (c(-128, I8),)), c(-128, I8)),
    (Select(c(False, BOOL), c(1, I32), c(2, I32)), c(2, I32)),
])
def test_constants_fold_with_ir_semantics(expr, expected):
    assert fold(expr) == expected


def test_float_arithmetic_stays_in_its_type():
    folded = fold(c(0.1, F32) + c(0.2, F32))
    assert folded == c(float(np.float32(0.1) + np.float32(0.2)), F32)


def test_f16_arithmetic_rounds_to_f16():
    folded = fold(c(1.0, F16) + c(0.0004, F16))
    assert folded == c(float(np.float16(1.0) + np.float16(0.0004)), F16)


def test_float_division_by_zero_folds_to_infinity():
    assert fold(c(1.0, F32) / c(0.0, F32)) == c(math.inf, F32)


def test_integer_division_by_zero_is_not_folded():
    for op in ("div", "rem"):
        expr = Binary(op, c(1, I32), c(0, I32))
        assert fold(expr) == expr


@pytest.mark.parametrize("value", [math.nan, math.inf, 3e9])
def test_undefined_float_to_int_casts_are_not_folded(value):
    expr = Cast(c(value, F32), I32)
    assert fold(expr) == expr


def test_nested_constant_expressions_fold_completely():
    expr = (c(2, I64) * c(3, I64) + c(1, I64)).lt(c(8, I64))
    assert fold(expr) == c(True, BOOL)


# -- identities

@pytest.mark.parametrize("expr", [
    x32 + 0, 0 + x32, x32 - 0, x32 * 1, 1 * x32, x32 / 1, x32 | 0, x32 ^ 0,
    x32 << 0, x32 >> 0, x32 & -1, Cast(x32, I32),
    xf + c(-0.0, F32), xf - c(0.0, F32), xf * c(1.0, F32), xf / c(1.0, F32),
])
def test_exact_identities_simplify_to_the_operand(expr):
    assert fold(expr) in (x32, xf)


@pytest.mark.parametrize("expr", [
    xf + c(0.0, F32),       # -0.0 + 0.0 is +0.0
    xf - c(-0.0, F32),      # -0.0 - -0.0 is +0.0
    xf * c(0.0, F32),       # NaN * 0 and inf * 0 are NaN
    side * 0,               # the call must still run
])
def test_inexact_identities_are_left_alone(expr):
    assert fold(expr) == expr


def test_integer_multiplication_by_zero_folds():
    assert fold(x32 * 0) == c(0, I32)
    assert fold(c(0, I32) * x32) == c(0, I32)


def test_select_with_constant_condition_picks_an_arm():
    assert fold(Select(c(True, BOOL), x32, x32 + 1)) == x32
    kept = Select(c(True, BOOL), x32, side)
    assert fold(kept) == kept


def test_logical_operators_with_constant_operands():
    b = Var("b", BOOL)
    call = Call("test", (), BOOL)
    assert fold(Binary("land", c(False, BOOL), call)) == c(False, BOOL)
    assert fold(Binary("land", c(True, BOOL), b)) == b
    assert fold(Binary("lor", c(True, BOOL), call)) == c(True, BOOL)
    assert fold(Binary("lor", c(False, BOOL), b)) == b
    assert fold(Binary("land", b, c(True, BOOL))) == b
    assert fold(Binary("lor", b, c(True, BOOL))) == c(True, BOOL)
    assert fold(Binary("land", call, c(False, BOOL))) == Binary("land", call, c(False, BOOL))


# -- statements and modules

KERNEL = """hpvm 1.0
module t

func @k(in a: f32[N], in n: i32, out b: f32[N]) {
  BODY
}

graph @main(in a: f32[N], in n: i32, out b: f32[N]) {
  node k = @k [REPLICATION]
  in a -> k.a
  in n -> k.n
  out k.b -> b
}

root @main
"""


def kernel_module(statements: str, replication: str = "N"):
    lines = textwrap.dedent(statements).strip().splitlines()
    text = KERNEL.replace("BODY", "\n  ".join(lines)).replace("REPLICATION", replication)
    return parse_module(text)


def const_fold(module):
    return run_pipeline(module, "const-fold", verify_each=True)


def folded_body(statements: str) -> str:
    return print_stmts(const_fold(kernel_module(statements)).functions["k"].body)


def test_if_with_constant_condition_becomes_the_taken_branch():
    assert folded_body("""
        if i32(1) < i32(2) {
          b[instance_id(0)] = f32(1.0)
        } else {
          b[instance_id(0)] = f32(2.0)
        }
    """) == "b[instance_id(0)] = f32(1.0)"
    assert folded_body("""
        if false {
          b[instance_id(0)] = f32(1.0)
        }
        b[0] = f32(3.0)
    """) == "b[0] = f32(3.0)"


def test_spliced_declarations_do_not_capture_later_reads():
    statements = """
        let t: f32 = f32(1.0)
        if true {
          let t: f32 = f32(2.0)
          b[instance_id(0)] = t
        }
        b[instance_id(0)] = b[instance_id(0)] + t
    """
    body = folded_body(statements)
    assert "if" not in body
    assert body.splitlines()[-1] == "b[instance_id(0)] = b[instance_id(0)] + t"
    assert "let t_1: f32 = f32(2.0)" in body
    assert_same_results(kernel_module(statements))


def test_zero_trip_loops_and_false_whiles_are_removed():
    assert folded_body("""
        for i in 5 .. 2 step 1 {
          b[i] = f32(1.0)
        }
        for j in 0 .. 3 step -1 {
          b[j] = f32(1.0)
        }
        while i32(3) < i32(2) {
          b[0] = f32(1.0)
        }
        b[0] = f32(2.0)
    """) == "b[0] = f32(2.0)"


def test_loops_that_run_are_kept():
    body = folded_body("""
        for i in 0 .. 2 step 1 {
          b[i] = f32(1.0)
        }
    """)
    assert body.startswith("for i in 0 .. 2")


def test_replication_expressions_are_folded():
    m = kernel_module("b[instance_id(0)] = f32(1.0)", replication="2 * 4 + 0")
    assert const_fold(m).graphs["main"].nodes[0].replication == (c(8, I64),)


def test_folding_preserves_results():
    m = kernel_module("""
        let t: f32 = a[instance_id(0)] * (f32(2.0) + f32(1.0))
        let q: i32 = (n + i32(0)) * i32(1) + i32(7) / i32(2)
        if i32(3) > i32(2) {
          t = t + f32(q)
        }
        b[instance_id(0)] = select(true, t, f32(0.0))
    """)
    assert_same_results(m)


def assert_same_results(module):
    inputs = {"a": np.arange(5, dtype=np.float32) - 2, "n": 3}
    before = run_module(module, inputs)
    after = run_module(const_fold(module), inputs)
    np.testing.assert_array_equal(before["b"], after["b"])


def test_const_fold_does_not_mutate_its_input():
    m = kernel_module("b[instance_id(0)] = f32(1.0) + f32(2.0)")
    before = repr(m)
    const_fold(m)
    assert repr(m) == before
