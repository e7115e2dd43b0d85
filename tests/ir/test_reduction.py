"""Loop reductions (For.reduce): the verifier holds loops to their
promise, the text form carries them, and the identities and combining
expressions passes use are right for every op and type."""
from __future__ import annotations

import math

import pytest

from hpvm.ir import F32, I32, I64, U8, Assign, Binary, Call, Const, For, Intrinsic, Let, Load, Var
from hpvm.ir.kernel import Reduction, Return
from hpvm.ir.parameter import Parameter
from hpvm.ir.reduction import combine, folded_value, identity
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import check

from .test_verify_kernel import kernel, leaf_module

ACC = Var("acc", F32)
X_I = Load("X", (Var("i", I64),), F32)


def reducing(*body, reduce=(Reduction("acc", "add"),), before=(Let("acc", F32, Const(0.0, F32)),),
             helpers=()):
    loop = For("i", Const(0, I64), Var("N", I64), 1, tuple(body), reduce=reduce)
    return check(leaf_module(kernel(*before, loop), *helpers, replication=()))


def messages(report) -> str:
    return " | ".join(d.message for d in report)


def test_a_kept_promise_verifies_clean():
    assert not reducing(Assign("acc", ACC + X_I))
    assert not reducing(Assign("acc", X_I + ACC))   # either operand order


@pytest.mark.parametrize("body, words", [
    ((Assign("acc", ACC - X_I),), "assigns 'acc' other than by 'acc = add(acc, value)'"),
    ((Assign("acc", ACC + ACC),), "assigns 'acc'"),
    ((Let("t", F32, ACC), Assign("acc", ACC + X_I)), "reads 'acc' outside its updates"),
    ((Let("t", F32, X_I),), "never updates 'acc'"),
])
def test_a_broken_promise_is_reported(body, words):
    found = messages(reducing(*body))
    assert words in found and "loop 'i' reducing into 'acc'" in found


def test_the_reduced_variable_must_be_declared_before_the_loop():
    assert "not a scalar variable declared before the loop" in messages(
        reducing(Assign("acc", ACC + X_I), before=()))


def test_bitwise_ops_need_integers_and_helper_ops_their_identity():
    assert "needs integers or bools" in messages(
        reducing(Assign("acc", Binary("xor", ACC, X_I)), reduce=(Reduction("acc", "xor"),)))
    assert "needs its identity" in messages(
        reducing(Assign("acc", Call("f", (ACC, X_I), F32)), reduce=(Reduction("acc", "@f"),)))


def test_a_helper_op_must_fold_two_values_of_the_type():
    args = (Parameter("a", F32), Parameter("b", F32))
    good = kernel(Return(Var("a", F32) + Var("b", F32)), params=args, name="f", return_type=F32)
    bad = kernel(Return(Var("a", F32)), params=args[:1], name="f", return_type=F32)
    update = Assign("acc", Call("f", (ACC, X_I), F32))
    helper = (Reduction("acc", "@f", Const(0.0, F32)),)
    assert not reducing(update, reduce=helper, helpers=(good,))
    assert "must take two f32 values" in messages(reducing(update, reduce=helper, helpers=(bad,)))


TEXT = """hpvm 1.1
module t

func @plus(in a: i32, in b: i32) -> i32 {
  return a + b
}

func @k(in x: i32[N], out y: i32[2]) {
  let low: i32 = i32(2147483647)
  let total: i32 = i32(0)
  for i in 0 .. N step 1 [unroll = 2, reduce low: min, reduce total: @plus = i32(0)] {
    low = min(low, x[i])
    total = @plus(total, x[i])
  }
  y[0] = low
  y[1] = total
}

graph @main(in x: i32[N], out y: i32[2]) {
  node k = @k
  in x -> k.x
  out k.y -> y
}

root @main
"""


def test_reductions_round_trip_through_the_text_form():
    module = parse_module(TEXT)
    loop = module.functions["k"].body[2]
    assert loop.reduce == (Reduction("low", "min"), Reduction("total", "@plus", Const(0, I32)))
    assert not check(module)
    assert print_module(module) == TEXT


def test_a_reduce_attribute_needs_a_declared_variable_and_a_constant_identity():
    with pytest.raises(Exception, match="'nothing'"):
        parse_module(TEXT.replace("reduce low: min", "reduce nothing: min"))
    with pytest.raises(Exception, match="must be a constant"):
        parse_module(TEXT.replace("@plus = i32(0)]", "@plus = low]"))


@pytest.mark.parametrize("op, type, expected", [
    ("add", F32, 0.0), ("mul", I32, 1), ("min", F32, math.inf), ("max", F32, -math.inf),
    ("min", I32, 2**31 - 1), ("max", I32, -2**31), ("max", U8, 0), ("min", U8, 255),
    ("and", I32, -1), ("or", U8, 0), ("xor", I64, 0),
])
def test_identities(op, type, expected):
    assert identity(Reduction("v", op), type) == Const(expected, type)


def test_combining_expressions_and_update_recognition():
    a, b = Var("a", F32), Var("b", F32)
    assert combine(Reduction("a", "max"), a, b, F32) == Intrinsic("max", (a, b))
    assert combine(Reduction("a", "@f"), a, b, F32) == Call("f", (a, b), F32)
    assert folded_value(Assign("a", Intrinsic("max", (b, a))), Reduction("a", "max")) == b
    assert folded_value(Assign("a", Intrinsic("min", (b, a))), Reduction("a", "max")) is None
    assert folded_value(Assign("a", a + a), Reduction("a", "add")) is None
