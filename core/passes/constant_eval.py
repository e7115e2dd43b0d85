"""Folding one expression node whose operands are constants, with the IR's
exact semantics: the interpreter's own scalar operations (numpy scalars of
the operation's type), so a folded constant equals what running the code
computes.  Undefined cases (integer division by zero, float-to-int casts of
NaN, infinities or out-of-range values) are left unfolded."""
from __future__ import annotations

import math

import numpy as np

from ..interp import scalar_ops
from ..ir.kernel import (
    FLOAT_ONLY_INTRINSICS, Binary, Cast, Compare, Const, Expr, Intrinsic,
    Select, Unary,
)
from ..ir.types import ScalarType


def evaluate(node: Expr) -> Const | None:
    """``node`` as a Const if all its operands are constants and its value
    is defined; None otherwise."""
    operands = _operands(node)
    if operands is None or not all(isinstance(o, Const) for o in operands):
        return None
    handler = _EVALUATORS.get(type(node))
    if handler is None:
        return None
    with np.errstate(all="ignore"):
        value = handler(node, [_as_numpy(c) for c in operands])
    return None if value is None else Const(np.asarray(value).item(), node.type)


def _operands(node: Expr):
    if isinstance(node, Unary):
        return [node.operand]
    if isinstance(node, (Binary, Compare)):
        return [node.lhs, node.rhs]
    if isinstance(node, Cast):
        return [node.value]
    if isinstance(node, Intrinsic):
        return list(node.args)
    if isinstance(node, Select):
        return [node.cond, node.if_true, node.if_false]
    return None


def _as_numpy(const: Const):
    return np.asarray(const.value, dtype=const.type.numpy_dtype)


def _unary(node: Unary, values):
    return scalar_ops.unary(node.op, values[0]).astype(node.type.numpy_dtype)


def _binary(node: Binary, values):
    lhs, rhs = values
    if node.op in ("div", "rem") and node.type.is_int and rhs == 0:
        return None
    if node.op in ("land", "lor"):
        result = bool(lhs) and bool(rhs) if node.op == "land" else bool(lhs) or bool(rhs)
        return np.asarray(result, dtype=node.type.numpy_dtype)
    return scalar_ops.binary(node.op, lhs, rhs, node.type.numpy_dtype)


def _compare(node: Compare, values):
    return scalar_ops.compare(node.op, *values)


def _cast(node: Cast, values):
    value = values[0]
    target: ScalarType = node.type
    if target.is_int and value.dtype.kind == "f":
        info = np.iinfo(target.numpy_dtype)
        if not math.isfinite(float(value)) or not info.min <= math.trunc(float(value)) <= info.max:
            return None
    return scalar_ops.cast(value, target)


def _intrinsic(node: Intrinsic, values):
    if node.name in FLOAT_ONLY_INTRINSICS and not node.type.is_float:
        return None
    return scalar_ops.intrinsic(node.name, values, node.type.numpy_dtype)


def _select(node: Select, values):
    return values[1] if bool(values[0]) else values[2]


_EVALUATORS = {
    Unary: _unary, Binary: _binary, Compare: _compare, Cast: _cast,
    Intrinsic: _intrinsic, Select: _select,
}
