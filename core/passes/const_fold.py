"""``const-fold``: constant folding in kernels and replication expressions.

Expressions on constants are evaluated with the IR's exact semantics (see
constant_eval); exact algebraic identities are applied (``x+0``, ``x*1``,
``x*0`` on integers, ``x-0``, ``select(true, a, b)``, ``land``/``lor`` with
a constant operand ...).  Statements: an ``if`` with a constant condition
becomes the taken branch, a ``for`` that runs zero times and a ``while``
whose condition is false disappear.  Nothing that has an effect (a call)
is ever dropped.
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter

from ..ir.graph import Module
from ..ir.kernel import (
    ArrayDecl, Binary, Cast, Const, Expr, For, If, KernelFunction, Let,
    Select, While,
)
from ..ir.visit import rewrite
from .constant_eval import evaluate
from .dce import is_pure
from .module_tools import map_functions, map_nodes
from .names import NameGenerator, declared_names, function_names, substitute
from .registry import register_pass


@register_pass("const-fold")
def constant_folding(module: Module) -> Module:
    """Fold constant expressions and statements with constant conditions."""
    module = map_functions(module, fold_function)
    return map_nodes(module, lambda graph, node: dataclasses.replace(
        node, replication=tuple(fold_expression(e) for e in node.replication))
        if node.replication else node)


def fold_expression(expr):
    """``expr`` (an expression, or statements) with every foldable
    subexpression folded."""
    return rewrite(expr, _fold_node)


def fold_function(function: KernelFunction) -> KernelFunction:
    """``function`` with its expressions and statements folded."""
    splicer = _BranchSplicer(function)
    body = rewrite(function.body, lambda node: _fold_node(node) or _fold_statement(node, splicer))
    return function if body == function.body else dataclasses.replace(function, body=body)


def _fold_node(node):
    if not isinstance(node, Expr):
        return None
    return evaluate(node) or _simplify(node)


_ANY = object()


def _const(expr, value=_ANY) -> bool:
    """True if ``expr`` is a constant (equal to ``value`` when given; bool
    constants match only True/False)."""
    if not isinstance(expr, Const):
        return False
    if value is _ANY:
        return True
    if expr.type.is_bool:
        return expr.value is value
    return expr.value == value and not isinstance(value, bool)


def _negative_zero(expr) -> bool:
    return (isinstance(expr, Const) and expr.type.is_float and expr.value == 0
            and math.copysign(1.0, expr.value) < 0)


def _positive_zero(expr) -> bool:
    return (isinstance(expr, Const) and expr.type.is_float and expr.value == 0
            and math.copysign(1.0, expr.value) > 0)


def _simplify(node: Expr) -> Expr | None:
    if isinstance(node, Binary):
        if node.op in ("land", "lor"):
            return _simplify_logical(node)
        if node.type.is_int:
            return _simplify_integer(node)
        if node.type.is_float:
            return _simplify_float(node)
    if isinstance(node, Cast) and node.value.type == node.type:
        return node.value
    if isinstance(node, Select):
        return _simplify_select(node)
    return None


def _simplify_integer(node: Binary) -> Expr | None:
    op, lhs, rhs = node.op, node.lhs, node.rhs
    if op in ("add", "or", "xor") and _const(lhs, 0):
        return rhs
    if op in ("add", "sub", "or", "xor", "shl", "shr") and _const(rhs, 0):
        return lhs
    if op == "mul" and _const(lhs, 1):
        return rhs
    if op in ("mul", "div") and _const(rhs, 1):
        return lhs
    all_ones = -1 if node.type.is_signed else (1 << node.type.bits) - 1
    if op == "and" and _const(rhs, all_ones):
        return lhs
    if op == "and" and _const(lhs, all_ones):
        return rhs
    zero = Const(0, node.type)
    if op in ("mul", "and") and (_const(lhs, 0) and is_pure(rhs) or _const(rhs, 0) and is_pure(lhs)):
        return zero
    if op == "rem" and _const(rhs, 1) and is_pure(lhs):
        return zero
    return None


def _simplify_float(node: Binary) -> Expr | None:
    # x + 0.0 is not x when x is -0.0, so only identities exact for every x
    op, lhs, rhs = node.op, node.lhs, node.rhs
    if op == "add" and _negative_zero(rhs) or op == "sub" and _positive_zero(rhs):
        return lhs
    if op == "add" and _negative_zero(lhs):
        return rhs
    if op in ("mul", "div") and _const(rhs, 1.0):
        return lhs
    if op == "mul" and _const(lhs, 1.0):
        return rhs
    return None


def _simplify_logical(node: Binary) -> Expr | None:
    deciding = node.op == "lor"   # the lhs value that decides the result
    if _const(node.lhs):
        return node.lhs if bool(node.lhs.value) == deciding else node.rhs
    if _const(node.rhs):
        if bool(node.rhs.value) != deciding:
            return node.lhs
        if is_pure(node.lhs):
            return node.rhs
    return None


def _simplify_select(node: Select) -> Expr | None:
    if _const(node.cond):
        taken, dropped = ((node.if_true, node.if_false) if node.cond.value
                          else (node.if_false, node.if_true))
        return taken if is_pure(dropped) else None
    if node.if_true == node.if_false and is_pure(node.cond):
        return node.if_true
    return None


def _fold_statement(node, splicer: "_BranchSplicer"):
    if isinstance(node, If) and _const(node.cond):
        return splicer.splice(node.then_body if node.cond.value else node.else_body)
    if isinstance(node, While) and _const(node.cond, False):
        return ()
    if isinstance(node, For) and _const(node.start) and _const(node.stop):
        start, stop = node.start.value, node.stop.value
        if (start >= stop) if node.step > 0 else (start <= stop):
            return ()
    return None


class _BranchSplicer:
    """Splices a taken branch into the enclosing block.  Its top-level
    declarations then live in the enclosing scope, so a name declared
    elsewhere in the function is renamed from its declaration onward (it
    could otherwise shadow an outer variable the following code reads)."""

    def __init__(self, function: KernelFunction):
        self.declared = Counter(declared_names(function.body))
        self.names = NameGenerator(function_names(function))

    def splice(self, block: tuple) -> tuple:
        block = tuple(block)
        for index, stmt in enumerate(block):
            if isinstance(stmt, (Let, ArrayDecl)) and self.declared[stmt.name] > 1:
                fresh = self.names.fresh(stmt.name)
                block = block[:index] + substitute(block[index:], {stmt.name: fresh})
        return block
