"""A loop nest made perfect by keeping a fold in the output it ends in,
so that loop-interchange can swap it.

Column sums written with an accumulator walk the matrix a row apart at
every step of the inner loop::

    for j in 0 .. N { let s = init; for i in 0 .. M { s = s + a[i, j] }; out[j] = g(s) }

The variable ``s`` of column ``j`` can live in ``out[j]`` instead (scalar
expansion, with the output as the array): the nest splits into a loop
that starts every column, the nest of updates, which is perfect, and a
loop that finishes every column (left out where ``g(s)`` is ``s``)::

    for j { out[j] = init }
    for j { for i { out[j] = out[j] + a[i, j] } }
    for j { out[j] = g(out[j]) }

Every column's updates run in the same order as before, on the same
type, so the values are the same bit for bit.  It applies when the outer
loop's body is exactly the declaration of ``s`` with a value, the inner
loop and one store to ``out``: ``out`` has ``s``'s type, the store's
indices are the outer loop's variable and expressions no iteration
changes (one element per iteration of the outer loop), nothing else in
the nest reads or writes ``out``, the inner loop's bounds do not read
the outer variable or ``s``, and its body assigns only ``s`` and
variables it declares, with no store, atomic update, barrier, return or
call.
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Call, For, KernelFunction, Let, Load, Return, Stmt,
    Store, Var,
)
from ..ir.reduction import reads_variable
from ..ir.types import BufferType
from ..ir.visit import rewrite, walk
from .loop_nests import one_element_per_value
from .names import substitute


def expanded_into_output(outer: For, function: KernelFunction) -> tuple[For, ...] | None:
    """``outer``'s imperfect nest (a loop of ``function``) as the loops
    above, the middle one a perfect nest; None where it does not apply
    (see the module text)."""
    if len(outer.body) != 3 or bound_dependences(outer, [outer.body])[0]:
        return None
    start, inner, finish = outer.body
    if not (isinstance(start, Let) and start.value is not None and isinstance(inner, For)
            and isinstance(finish, Store)):
        return None
    fold, out = start.name, finish.buffer
    if not one_element_per_value(finish.indices, (outer.var,), (fold,)) or \
            not _updates_only(inner, fold, out, outer.var):
        return None
    if any(isinstance(n, Var) and n.name == fold or isinstance(n, (Load, Store)) and
           n.buffer == out for n in walk((start.value, *finish.indices))):
        return None
    if any(isinstance(n, Load) and n.buffer == out for n in walk(finish.value)):
        return None
    if _element_type(function, out) != start.type:
        return None
    element = Load(out, finish.indices, start.type)
    updates = _stored(substitute(inner.body, values={fold: element}), fold, out, finish.indices)
    loops = [dataclasses.replace(outer, body=(Store(out, finish.indices, start.value),)),
             dataclasses.replace(outer, body=(dataclasses.replace(inner, body=updates),))]
    if finish.value != Var(fold, start.type):
        value = substitute(finish.value, values={fold: element})
        loops.append(dataclasses.replace(outer, body=(Store(out, finish.indices, value),)))
    return tuple(loops)


def _element_type(function: KernelFunction, array: str):
    """The element type of buffer parameter or declared array ``array``."""
    for param in function.params:
        if param.name == array and isinstance(param.type, BufferType):
            return param.type.element
    return next((s.element for s in walk(function.body)
                 if isinstance(s, ArrayDecl) and s.name == array), None)


def _updates_only(inner: For, fold: str, out: str, var: str) -> bool:
    """Whether ``inner`` only updates ``fold`` and its own locals, reads
    no ``out``, and has bounds free of ``var`` and ``fold``."""
    reads_memory, _ = bound_dependences(inner, [])
    if reads_memory or reads_variable((inner.start, inner.stop), var) or \
            reads_variable((inner.start, inner.stop), fold):
        return False
    declared = {s.name for s in walk(inner.body) if isinstance(s, (Let, ArrayDecl))}
    if assigned_variables(inner.body) - declared - {fold}:
        return False
    return not any(isinstance(n, (Store, AtomicUpdate, Barrier, Return, Call))
                   or isinstance(n, Load) and n.buffer == out for n in walk(inner.body))


def _stored(stmts: tuple[Stmt, ...], fold: str, out: str, indices) -> tuple[Stmt, ...]:
    """``stmts`` with every assignment to ``fold`` a store to ``out``."""
    def store(node):
        if isinstance(node, Assign) and node.name == fold:
            return Store(out, indices, node.value)
        return None
    return rewrite(stmts, store)
