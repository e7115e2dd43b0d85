"""Lowering returns into a flag (shared by inline and sequentialize)."""
import textwrap

from hpvm.ir import F32, Const, If, Return, Var
from hpvm.ir.text import print_stmts
from hpvm.passes.returns import lower_returns, returns_only_at_end

v = Var("v", F32)


def lowered(body):
    return print_stmts(lower_returns(tuple(body), "done", "result"))


def test_final_return_needs_no_flag():
    assert returns_only_at_end((Return(v),))
    assert not returns_only_at_end((If(v.gt(0.0), (Return(v),)), Return(v)))


def test_statements_after_an_early_return_are_guarded():
    body = [If(v.gt(1.0), (Return(Const(1.0, F32)),)), Return(v)]
    assert lowered(body) == textwrap.dedent("""\
        if v > f32(1.0) {
          result = f32(1.0)
          done = true
        }
        if !done {
          result = v
        }""")


def test_return_in_a_last_if_sets_no_flag():
    body = [If(v.gt(1.0), (Return(Const(1.0, F32)),), (Return(v),))]
    assert "done" not in lowered(body)
