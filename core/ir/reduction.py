"""Reductions: loops that fold values into a variable (``For.reduce``).

A loop carrying ``Reduction(var, op)`` promises that its body changes
``var`` only by update statements ``var = op(var, value)`` (operands in
either order) whose ``value`` does not read ``var``, and reads ``var``
nowhere else.  Such a loop may run as partial folds combined afterwards,
in any order and grouping: a tree in a GPU work group's local memory, a
partial result per thread (core/passes/parallel_reduce.py).  Integer and
min / max results are then the same; float sums and products round
differently (usually closer to the exact value than one long chain).

This module recognises update statements, checks the promise, and builds
the combining expression and the identity a transformation needs.
"""
from __future__ import annotations

import math

from .kernel import (
    REDUCE_OPS, Assign, Binary, Call, Const, Expr, For, Intrinsic, Reduction, Stmt, Var,
)
from .types import ScalarType
from .visit import children, walk

BINARY_FORMS = {"add": "add", "mul": "mul", "and": "and", "or": "or", "xor": "xor"}
BOOL_FORMS = {"and": "land", "or": "lor"}
INTEGER_ONLY = ("and", "or", "xor")


def combine(reduction: Reduction, a: Expr, b: Expr, type: ScalarType) -> Expr:
    """``op(a, b)`` for ``reduction``'s op on values of ``type``."""
    op = reduction.op
    if op.startswith("@"):
        return Call(op[1:], (a, b), type)
    if op in ("min", "max"):
        return Intrinsic(op, (a, b))
    if type.is_bool and op in BOOL_FORMS:
        return Binary(BOOL_FORMS[op], a, b)
    return Binary(BINARY_FORMS[op], a, b)


def identity(reduction: Reduction, type: ScalarType) -> Const:
    """The neutral element of ``reduction`` on ``type``: its ``identity``
    for helper ops; 0, 1, the type's extremes or all bits for built-ins."""
    if reduction.identity is not None:
        return Const(reduction.identity.value, type)
    op = reduction.op
    if op in ("add", "or", "xor"):
        return Const(False if type.is_bool else 0, type)
    if op == "mul":
        return Const(1, type)
    if op == "and":
        return Const(True if type.is_bool else -1, type)
    if type.is_float:
        return Const(math.inf if op == "min" else -math.inf, type)
    if type.is_bool:
        return Const(op == "min", type)
    low, high = _integer_range(type)
    return Const(high if op == "min" else low, type)


def _integer_range(type: ScalarType) -> tuple[int, int]:
    if type.is_signed:
        return -(1 << (type.bits - 1)), (1 << (type.bits - 1)) - 1
    return 0, (1 << type.bits) - 1


def folded_value(stmt: Stmt, reduction: Reduction) -> Expr | None:
    """The value an update statement ``var = op(var, value)`` folds into
    ``reduction.var``, or None when ``stmt`` is not one."""
    if not isinstance(stmt, Assign) or stmt.name != reduction.var:
        return None
    value, op = stmt.value, reduction.op
    if op.startswith("@"):
        operands = value.args if isinstance(value, Call) and value.function == op[1:] else None
    elif op in ("min", "max"):
        operands = value.args if isinstance(value, Intrinsic) and value.name == op else None
    else:
        forms = {BINARY_FORMS[op], BOOL_FORMS.get(op)}
        operands = (value.lhs, value.rhs) if isinstance(value, Binary) and value.op in forms \
            else None
    if operands is None or len(operands) != 2:
        return None
    for mine, other in (operands, operands[::-1]):
        if _is_var(mine, reduction.var) and not reads_variable(other, reduction.var):
            return other
    return None


def _is_var(expr: Expr, name: str) -> bool:
    return isinstance(expr, Var) and expr.name == name


def reads_variable(root, name: str) -> bool:
    """Whether ``root`` (an expression, statements) reads variable ``name``."""
    return any(isinstance(n, Var) and n.name == name for n in walk(root))


def promise_problem(loop: For, reduction: Reduction) -> str | None:
    """Why ``loop``'s body breaks ``reduction``'s promise, or None."""
    updates = 0
    for stmt in walk(loop.body):
        if not isinstance(stmt, Stmt):
            continue
        if folded_value(stmt, reduction) is not None:
            updates += 1
            continue
        if isinstance(stmt, Assign) and stmt.name == reduction.var:
            return (f"assigns '{reduction.var}' other than by "
                    f"'{reduction.var} = {reduction.op}({reduction.var}, value)'")
        if _reads_directly(stmt, reduction.var):
            return f"reads '{reduction.var}' outside its updates"
    return None if updates else f"never updates '{reduction.var}'"


def _reads_directly(stmt: Stmt, name: str) -> bool:
    """Whether ``stmt``'s own expressions (not nested statements) read ``name``."""
    return any(not isinstance(child, Stmt) and reads_variable(child, name)
               for child in children(stmt))


def op_problem(reduction: Reduction, type: ScalarType) -> str | None:
    """Why ``reduction``'s op cannot fold values of ``type``, or None
    (helper ops are checked against their function by the verifier)."""
    op = reduction.op
    if op.startswith("@"):
        return None if reduction.identity is not None else (
            f"the helper op '{op}' needs its identity (the value x with {op}(x, v) == v)")
    if op not in REDUCE_OPS:
        return f"'{op}' is not a reduction op (use one of {', '.join(REDUCE_OPS)} or @helper)"
    if op in INTEGER_ONLY and type.is_float:
        return f"'{op}' needs integers or bools, not {type}"
    return None
