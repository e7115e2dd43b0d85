"""Hoisting calls out of expressions, in evaluation order, so that a call can
be replaced by statements (inlining).

``CallHoister(expand, is_target, names).block(stmts)`` rewrites a statement
list so that every call accepted by ``is_target`` is handed to
``expand(call) -> (statements, result expression or None)`` and its
statements run exactly when, and in the order, the call would have run:

- operands evaluated before a call that read memory (loads) are saved in
  temporaries first, because the call may store to that memory;
- ``land``/``lor`` keep short-circuiting: the right operand's calls run
  only when the left operand does not decide;
- a call in a ``while`` condition or a ``for`` bound (re-evaluated every
  iteration) is expanded inside the loop, which becomes a ``while`` driven
  by a flag.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..ir.kernel import (
    Assign, AtomicUpdate, Binary, Call, Compare, Const, Expr, ExprStmt, For,
    If, Let, Load, Return, Stmt, Store, Unary, Var, While,
)
from ..ir.types import BOOL, I64
from ..ir.visit import walk
from .names import NameGenerator, substitute

Expansion = tuple[list[Stmt], Expr | None]


class CallHoister:
    """See the module docstring."""

    def __init__(self, expand: Callable[[Call], Expansion],
                 is_target: Callable[[Call], bool], names: NameGenerator):
        self.expand = expand
        self.is_target = is_target
        self.names = names

    def has_call(self, root) -> bool:
        return any(isinstance(n, Call) and self.is_target(n) for n in walk(root))

    def block(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in stmts:
            out.extend(self.statement(stmt))
        return tuple(out)

    def statement(self, stmt: Stmt) -> list[Stmt]:
        if isinstance(stmt, (If, For, While)):
            return self._control(stmt)
        if not self.has_call(stmt):
            return [stmt]
        if isinstance(stmt, ExprStmt):
            pre, args = self.operands(stmt.call.args)
            call = dataclasses.replace(stmt.call, args=tuple(args))
            if not self.is_target(call):
                return pre + [ExprStmt(call)]
            return pre + self.expand(call)[0]
        if isinstance(stmt, (Let, Assign, Return)):
            pre, value = self.expression(stmt.value)
            return pre + [dataclasses.replace(stmt, value=value)]
        if isinstance(stmt, (Store, AtomicUpdate)):
            pre, values = self.operands(stmt.indices + (stmt.value,))
            return pre + [dataclasses.replace(stmt, indices=tuple(values[:-1]),
                                              value=values[-1])]
        raise AssertionError(f"call inside {type(stmt).__name__}")

    def _control(self, stmt: Stmt) -> list[Stmt]:
        if isinstance(stmt, If):
            pre, cond = self.expression(stmt.cond)
            return pre + [dataclasses.replace(stmt, cond=cond,
                                              then_body=self.block(stmt.then_body),
                                              else_body=self.block(stmt.else_body))]
        if isinstance(stmt, While):
            if self.has_call(stmt.cond):
                return self._flag_loop(stmt.cond, self.block(stmt.body))
            return [dataclasses.replace(stmt, body=self.block(stmt.body))]
        pre, start = self.expression(stmt.start)
        body = self.block(stmt.body)
        if not self.has_call(stmt.stop):
            return pre + [dataclasses.replace(stmt, start=start, body=body)]
        return pre + self._for_as_while(stmt, start, body)

    def _for_as_while(self, loop: For, start: Expr, body) -> list[Stmt]:
        var = self.names.fresh(loop.var)
        index = Var(var, I64)
        body = substitute(body, {loop.var: var})
        test = Compare("lt" if loop.step > 0 else "gt", index, loop.stop)
        step = Assign(var, Binary("add", index, Const(loop.step, I64)))
        return [Let(var, I64, start)] + self._flag_loop(test, body + (step,))

    def _flag_loop(self, cond: Expr, body) -> list[Stmt]:
        """``while cond { body }`` where evaluating ``cond`` needs statements."""
        going = self.names.fresh("looping")
        cond_pre, cond = self.expression(cond)
        stop = (Assign(going, Const(False, BOOL)),)
        loop = While(Var(going, BOOL), tuple(cond_pre) + (If(cond, tuple(body), stop),))
        return [Let(going, BOOL, Const(True, BOOL)), loop]

    def expression(self, expr: Expr) -> Expansion:
        """(statements to run first, the expression that then has the value)."""
        if expr is None or not self.has_call(expr):
            return [], expr
        if isinstance(expr, Call):
            pre, args = self.operands(expr.args)
            call = dataclasses.replace(expr, args=tuple(args))
            if not self.is_target(call):
                return pre, call
            stmts, result = self.expand(call)
            return pre + stmts, result
        if isinstance(expr, Binary) and expr.op in ("land", "lor") and self.has_call(expr.rhs):
            return self._short_circuit(expr)
        slots = _child_slots(expr)
        pre, values = self.operands([_slot_value(expr, s) for s in slots])
        return pre, _rebuild(expr, slots, values)

    def _short_circuit(self, expr: Binary) -> Expansion:
        pre, lhs = self.expression(expr.lhs)
        flag = self.names.fresh("cond")
        pre.append(Let(flag, BOOL, lhs))
        rhs_pre, rhs = self.expression(expr.rhs)
        test = Var(flag, BOOL) if expr.op == "land" else Unary("not", Var(flag, BOOL))
        pre.append(If(test, tuple(rhs_pre) + (Assign(flag, rhs),)))
        return pre, Var(flag, BOOL)

    def operands(self, exprs) -> tuple[list[Stmt], list[Expr]]:
        """Expand calls in ``exprs`` (evaluated left to right); operands
        before the last call that read memory are saved first."""
        exprs = list(exprs)
        last = max((i for i, e in enumerate(exprs) if self.has_call(e)), default=-1)
        pre: list[Stmt] = []
        out: list[Expr] = []
        for index, expr in enumerate(exprs):
            if index <= last:
                stmts, expr = self.expression(expr)
                pre.extend(stmts)
                if index < last and any(isinstance(n, Load) for n in walk(expr)):
                    temp = self.names.fresh("saved")
                    pre.append(Let(temp, expr.type, expr))
                    expr = Var(temp, expr.type)
            out.append(expr)
        return pre, out


def _child_slots(expr: Expr) -> list[tuple[str, int | None]]:
    """(field, index in a tuple field or None) of each child expression."""
    slots = []
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        if isinstance(value, Expr):
            slots.append((field.name, None))
        elif isinstance(value, tuple):
            slots.extend((field.name, i) for i, v in enumerate(value) if isinstance(v, Expr))
    return slots


def _slot_value(expr: Expr, slot) -> Expr:
    field, index = slot
    value = getattr(expr, field)
    return value if index is None else value[index]


def _rebuild(expr: Expr, slots, values) -> Expr:
    changes: dict = {}
    for (field, index), value in zip(slots, values):
        if index is None:
            changes[field] = value
        else:
            items = list(changes.get(field, getattr(expr, field)))
            items[index] = value
            changes[field] = tuple(items)
    return dataclasses.replace(expr, **changes)
