"""Which values of a kernel can never be NaN.

A float ``min``/``max`` is C's fmin/fmax: a NaN operand yields the other
one.  On x86 that takes a compare, a NaN test and a select, where one
``minps`` does when an operand is known not to be NaN (``minps a, b`` is
``a < b ? a : b``, so a NaN ``a`` yields ``b``).  The accumulator of a
minimum or maximum, ``best = min(best, x[k])`` from ``best = 1e30`` or
``-inf``, is such an operand: fmin returns NaN only when both operands
are, so a variable that starts from a number and is only ever combined
by min/max stays a number, whatever ``x`` holds.

:func:`nan_free_names` finds the scalar variables and private or local
arrays of a kernel of which that holds for every value written, as the
greatest fixed point: every such name is assumed free of NaN, and a name
is dropped when some write to it may be NaN under the assumptions left,
until nothing changes.  Parameters, buffers and values returned by calls
may always be NaN.  A name declared more than once (in separate scopes)
is judged over all of its writes together.  Reading an array element
that was never written (``= undef``) is outside the IR's semantics and
assumed not to happen.
"""
from __future__ import annotations

from .kernel import (
    ArrayDecl, Assign, AtomicUpdate, Call, Cast, Const, Expr, Intrinsic, KernelFunction, Let,
    Load, Select, Store, Unary, Var,
)
from .visit import walk

PRESERVING = frozenset({"abs", "floor", "ceil", "exp", "tanh"})
"""Intrinsics whose value is a number whenever their operand is (on
infinities included: exp(inf) = inf, tanh(-inf) = -1)."""


def nan_free_names(kernel: KernelFunction) -> frozenset[str]:
    """The variables and arrays of ``kernel`` that never hold NaN (see the
    module text)."""
    writes: dict[str, list[Expr | None]] = {}
    excluded = {p.name for p in kernel.params}
    for node in walk(kernel.body):
        if isinstance(node, Let):
            writes.setdefault(node.name, []).append(node.value)
        elif isinstance(node, Assign):
            writes.setdefault(node.name, []).append(node.value)
        elif isinstance(node, Store):
            writes.setdefault(node.buffer, []).append(node.value)
        elif isinstance(node, ArrayDecl):
            writes.setdefault(node.name, [])
        elif isinstance(node, AtomicUpdate):
            excluded.update(filter(None, (node.buffer, node.result)))
        elif isinstance(node, Call):
            excluded.update(a.name for a in node.args if isinstance(a, Var))
    names = set(writes) - excluded
    changed = True
    while changed:
        changed = False
        for name in list(names):
            if not all(value is None or is_nan_free(value, names) for value in writes[name]):
                names.discard(name)
                changed = True
    return frozenset(names)


def is_nan_free(expr: Expr, names) -> bool:
    """Whether ``expr`` is never NaN, given that the variables and arrays
    in ``names`` never hold NaN."""
    if not getattr(expr.type, "is_float", False):
        return True
    if isinstance(expr, Const):
        return expr.value == expr.value
    if isinstance(expr, Var):
        return expr.name in names
    if isinstance(expr, Load):
        return expr.buffer in names
    if isinstance(expr, Intrinsic) and expr.name in ("min", "max"):
        return any(is_nan_free(a, names) for a in expr.args)
    if isinstance(expr, Intrinsic) and expr.name in PRESERVING:
        return all(is_nan_free(a, names) for a in expr.args)
    if isinstance(expr, Unary) and expr.op == "neg":
        return is_nan_free(expr.operand, names)
    if isinstance(expr, Cast):
        return is_nan_free(expr.value, names)
    if isinstance(expr, Select):
        return is_nan_free(expr.if_true, names) and is_nan_free(expr.if_false, names)
    return False
