"""Lowering ``Return`` into a flag: the statements after a return are
guarded so that a body can be embedded in a larger one (inlining a helper,
running every instance of a kernel in a loop)."""
from __future__ import annotations

import dataclasses

from ..ir.kernel import (
    Assign, Binary, Const, For, If, Return, Stmt, Unary, Var, While,
)
from ..ir.types import BOOL
from ..ir.visit import walk


def contains_return(stmts) -> bool:
    return any(isinstance(node, Return) for node in walk(stmts))


def returns_only_at_end(body: tuple[Stmt, ...]) -> bool:
    """True if no Return occurs except, possibly, as the last top-level
    statement: then no flag is needed."""
    if body and isinstance(body[-1], Return):
        body = body[:-1]
    return not contains_return(body)


def lower_returns(body: tuple[Stmt, ...], done: str, result: str | None = None,
                  at_end: bool = True) -> tuple[Stmt, ...]:
    """``body`` where each ``Return v`` becomes ``result = v; done = true``
    and every statement that a return would skip runs only while ``done``
    is false (loops stop doing work once it is set).  ``at_end``: nothing
    follows ``body``, so a return there need not set the flag.  The caller
    declares ``done`` (false) and ``result``."""
    not_done = Unary("not", Var(done, BOOL))
    out: list[Stmt] = []
    for index, stmt in enumerate(body):
        last = index == len(body) - 1
        if isinstance(stmt, Return):
            if stmt.value is not None and result is not None:
                out.append(Assign(result, stmt.value))
            if not at_end:
                out.append(Assign(done, Const(True, BOOL)))
            return tuple(out)
        if not contains_return(stmt):
            out.append(stmt)
            continue
        out.append(_lower_statement(stmt, done, result, not_done, at_end and last))
        if not last:
            out.append(If(not_done, lower_returns(body[index + 1:], done, result, at_end)))
        return tuple(out)
    return tuple(out)


def _lower_statement(stmt: Stmt, done: str, result: str | None, not_done,
                     at_end: bool) -> Stmt:
    if isinstance(stmt, If):
        return dataclasses.replace(
            stmt, then_body=lower_returns(stmt.then_body, done, result, at_end),
            else_body=lower_returns(stmt.else_body, done, result, at_end))
    if isinstance(stmt, For):
        return dataclasses.replace(
            stmt, body=(If(not_done, lower_returns(stmt.body, done, result, False)),))
    if isinstance(stmt, While):
        return dataclasses.replace(
            stmt, cond=Binary("land", not_done, stmt.cond),
            body=lower_returns(stmt.body, done, result, False))
    raise AssertionError(f"a Return inside {type(stmt).__name__}")
