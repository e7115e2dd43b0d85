"""``infer-reductions``: the promise of ``reduce()`` on loops written as
plain folds whose result does not depend on the order.

A loop that folds a variable with ``best = max(best, a[i, k])`` or
``count = count + flag`` computes the same value in any order and
grouping when the op is exact: integer (and bool) add, mul, and, or, xor,
min and max, which wrap or compare without rounding, and float min and
max, which are C's fmin/fmax: the least (greatest) of the operands that
are not NaN, NaN only when all are, so associative and commutative (C
leaves open only which zero a tie of -0 and +0 yields).  Such a loop
gets the Reduction (For.reduce) that ``reduce()`` would have written,
so back ends may fold it in lanes (the cpu's vector loops, a GPU's work
groups) as they do the loops the user marked.  Float sums and products
round differently in another order and are left as written: that choice
is the user's, through ``reduce()``.

A variable qualifies on a loop when the loop's body changes it only by
updates ``v = op(v, value)`` whose value does not read it, reads it
nowhere else and does not declare it (core/ir/reduction.py's promise),
and the body has no effect whose order could show: no store, atomic
update, return or barrier, and no call of a helper that has one.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import Module
from ..ir.kernel import (
    REDUCE_OPS, Assign, AtomicUpdate, Barrier, Binary, Call, For, Intrinsic, KernelFunction,
    Let, Reduction, Return, Stmt, Store,
)
from ..ir.reduction import BINARY_FORMS, BOOL_FORMS, folded_value, promise_problem
from ..ir.types import ScalarType
from ..ir.visit import rewrite, walk
from .registry import register_pass

FLOAT_EXACT = ("min", "max")
"""Ops whose float folds do not depend on the order (fmin/fmax)."""

_OP_OF_FORM = {form: op for forms in (BINARY_FORMS, BOOL_FORMS) for op, form in forms.items()}


@register_pass("infer-reductions")
def infer_reductions(module: Module) -> Module:
    """Mark loops that fold a variable with an exact op (integer ops,
    float min/max) as reductions, as reduce() does."""
    functions = {name: _inferred(function, module) for name, function in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def reassociated(function: KernelFunction, module: Module) -> KernelFunction:
    """``function`` with every fold infer-reductions marks, float sums and
    products included: the caller's promise that their order does not
    matter (parallel-reduce's ``reassociate``, a tuner told so)."""
    return _inferred(function, module, floats=True)


def declared_types(function: KernelFunction) -> dict[str, ScalarType]:
    """The type of each local variable ``function`` declares, for names
    declared with one type only (an inner block may shadow a name with
    another type; such names are left out, so no fold of them is taken
    for exact)."""
    declared: dict[str, set] = {}
    for stmt in walk(function.body):
        if isinstance(stmt, Let):
            declared.setdefault(stmt.name, set()).add(stmt.type)
    return {name: kinds.pop() for name, kinds in declared.items() if len(kinds) == 1}


def _inferred(function: KernelFunction, module: Module, floats: bool = False) -> KernelFunction:
    types = declared_types(function)

    def mark(node):
        if not isinstance(node, For) or has_effects(node.body, module):
            return None
        found = loop_reductions(node, types, floats)
        return dataclasses.replace(node, reduce=node.reduce + found) if found else None
    body = rewrite(function.body, mark)
    return function if body == function.body else dataclasses.replace(function, body=body)


def loop_reductions(loop: For, types: dict, floats: bool = False) -> tuple[Reduction, ...]:
    """The Reductions ``loop`` keeps without promising them (see the
    module text), beyond those it already carries; ``floats``: float
    sums and products too."""
    marked = {r.var for r in loop.reduce}
    declared = {s.name for s in walk(loop.body) if isinstance(s, Let)}
    found: dict[str, Reduction] = {}
    for stmt in walk(loop.body):
        if not isinstance(stmt, Assign) or stmt.name in marked | declared | set(found):
            continue
        op = _fold_op(stmt)
        type = types.get(stmt.name)
        if op is None or not isinstance(type, ScalarType) or not _reorderable(op, type, floats):
            continue
        reduction = Reduction(stmt.name, op)
        if folded_value(stmt, reduction) is not None and promise_problem(loop, reduction) is None:
            found[stmt.name] = reduction
    return tuple(found.values())


def has_effects(stmts, module: Module, seen: frozenset = frozenset()) -> bool:
    """Whether ``stmts`` store, update atomically, return (from the
    kernel: ``seen`` is empty), wait at a barrier, or call a helper that
    does any but return (iterations reordered would reorder those)."""
    effects = (Store, AtomicUpdate, Barrier) + (() if seen else (Return,))
    for node in walk(stmts):
        if isinstance(node, effects):
            return True
        if isinstance(node, Call) and node.function not in seen:
            helper = module.functions.get(node.function)
            if helper is None or has_effects(helper.body, module, seen | {node.function}):
                return True
    return False


def _fold_op(stmt: Stmt) -> str | None:
    value = stmt.value
    if isinstance(value, Intrinsic) and value.name in ("min", "max"):
        return value.name
    if isinstance(value, Binary):
        return _OP_OF_FORM.get(value.op)
    return None


def _reorderable(op: str, type: ScalarType, floats: bool) -> bool:
    """Whether folds by ``op`` may run in any order: exact ops, and with
    ``floats`` (the caller's promise) every float fold too."""
    return op in REDUCE_OPS and (floats or not type.is_float or op in FLOAT_EXACT)
