"""A loop nest made perfect by keeping its folds in the outputs it ends
in, so that loop-interchange can swap it.

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

Several folds work alike (a column's sum and sum of squares, then its
mean and variance from both): each lives in the first output of its type
that the nest stores and no other fold took, and the finishing loop reads
every fold back before it runs the stores as written.

Every column's updates run in the same order as before, on the same
type, so the values are the same bit for bit.  It applies when the outer
loop's body is exactly the declarations of the folds with values, the
inner loop and the stores, one to each output, as many as the folds or
more: every fold has an output of its type, each store's indices are the
outer loop's variable and expressions no iteration changes (one element
per iteration of the outer loop), nothing else in the nest reads or
writes the outputs, the starting values read no fold, the inner loop's
bounds do not read the outer variable or a fold, and its body assigns
only the folds and variables it declares, with no atomic update,
barrier, return or call.  Leading lets the inner loop does not assign
are values, not folds: each loop computes again those it reads, where
they call nothing, read no fold and nothing the nest stores.  The inner
loop may store to other buffers
(``out[i, j] = a[i, j] * w[j]`` beside the sum) where neither the
starting values nor the final stores read them: the starts then all run
before those stores, and the finishes after (loop-interchange checks
the stores of the nest it swaps).
"""
from __future__ import annotations

import dataclasses
import itertools

from ..ir.analysis import assigned_variables, bound_dependences
from ..ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Call, For, KernelFunction, Let, Load, Return, Stmt,
    Store, Var,
)
from ..ir.reduction import reads_variable
from ..ir.types import BufferType
from ..ir.visit import rewrite, walk
from .loop_nests import one_element_per_value, recomputable
from .names import substitute


def expanded_into_output(outer: For, function: KernelFunction) -> tuple[For, ...] | None:
    """``outer``'s imperfect nest (a loop of ``function``) as the loops
    above, the middle one a perfect nest; None where it does not apply
    (see the module text)."""
    if bound_dependences(outer, [outer.body])[0]:
        return None
    lets = list(itertools.takewhile(lambda s: isinstance(s, Let), outer.body))
    if not lets or len(outer.body) < len(lets) + 2 or \
            not isinstance(inner := outer.body[len(lets)], For):
        return None
    finish = outer.body[len(lets) + 1:]
    assigned = assigned_variables(inner.body)
    starts = [let for let in lets if let.name in assigned]
    values = [let for let in lets if let.name not in assigned]
    folds = [start.name for start in starts]
    if not starts or any(start.value is None for start in starts) or not all(
            isinstance(f, Store) for f in finish) or len(finish) < len(folds):
        return None
    outs = [f.buffer for f in finish]
    declared = {n.name for n in walk(inner.body) if isinstance(n, (Let, ArrayDecl))}
    stored = _updates(inner, folds, outs, outer.var, declared)
    if len(set(outs)) != len(outs) or len(set(folds)) != len(folds) or stored is None or \
            not all(one_element_per_value(f.indices, (outer.var,), folds) for f in finish):
        return None
    if not all(recomputable(value, set(folds), {*outs, *stored}, declared) for value in values):
        return None
    if any(isinstance(n, Var) and n.name in folds or isinstance(n, (Load, Store)) and
           n.buffer in (*outs, *stored) for n in walk((*(s.value for s in starts),
                                                        *(i for f in finish for i in f.indices)))):
        return None
    if any(isinstance(n, Load) and n.buffer in (*outs, *stored)
           for f in finish for n in walk(f.value)):
        return None
    homes = _homes(function, starts, finish)
    if homes is None:
        return None
    elements = {fold: Load(home.buffer, home.indices, start.type)
                for fold, start, home in zip(folds, starts, homes)}
    updates = inner.body
    for fold, home in zip(folds, homes):
        updates = _stored(updates, fold, home.buffer, home.indices)
    updates = substitute(updates, values=elements)
    begin = tuple(Store(home.buffer, home.indices, start.value)
                  for start, home in zip(starts, homes))
    loops = [dataclasses.replace(outer, body=_with_values(values, begin)),
             dataclasses.replace(outer, body=(dataclasses.replace(
                 inner, body=_with_values(values, updates)),))]
    if tuple(finish) != tuple(Store(home.buffer, home.indices, Var(fold, start.type))
                              for fold, start, home in zip(folds, starts, homes)):
        reads = tuple(Let(fold, start.type, elements[fold]) for fold, start in zip(folds, starts))
        loops.append(dataclasses.replace(outer, body=_with_values(values, reads + tuple(finish))))
    return tuple(loops)


def _with_values(values: list[Let], stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``stmts`` after those of the lets ``values`` they read (directly or
    through another of them), in order."""
    needed: set[str] = {n.name for n in walk(stmts) if isinstance(n, Var)}
    for value in reversed(values):
        if value.name in needed:
            needed |= {n.name for n in walk(value.value) if isinstance(n, Var)}
    return (*(value for value in values if value.name in needed), *stmts)


def _homes(function: KernelFunction, starts: list[Let], finish) -> list[Store] | None:
    """The store whose element each fold lives in: the first of its type
    not taken, in order; None where a fold has none."""
    free = list(finish)
    homes = []
    for start in starts:
        home = next((f for f in free if _element_type(function, f.buffer) == start.type), None)
        if home is None:
            return None
        free.remove(home)
        homes.append(home)
    return homes


def _element_type(function: KernelFunction, array: str):
    """The element type of buffer parameter or declared array ``array``."""
    for param in function.params:
        if param.name == array and isinstance(param.type, BufferType):
            return param.type.element
    return next((s.element for s in walk(function.body)
                 if isinstance(s, ArrayDecl) and s.name == array), None)


def _updates(inner: For, folds: list[str], outs: list[str], var: str,
             declared: set[str]) -> set[str] | None:
    """The buffers ``inner`` stores to, where it only updates ``folds``,
    its own locals (``declared``) and buffers other than ``outs``, reads
    no ``outs``, and has bounds free of ``var`` and the folds; else None."""
    reads_memory, _ = bound_dependences(inner, [])
    bounds = (inner.start, inner.stop)
    if reads_memory or any(reads_variable(bounds, name) for name in (var, *folds)):
        return None
    if assigned_variables(inner.body) - declared - set(folds):
        return None
    if any(isinstance(n, (AtomicUpdate, Barrier, Return, Call))
           or isinstance(n, (Load, Store)) and n.buffer in outs for n in walk(inner.body)):
        return None
    return {n.buffer for n in walk(inner.body) if isinstance(n, Store)} - declared


def _stored(stmts: tuple[Stmt, ...], fold: str, out: str, indices) -> tuple[Stmt, ...]:
    """``stmts`` with every assignment to ``fold`` a store to ``out``."""
    def store(node):
        if isinstance(node, Assign) and node.name == fold:
            return Store(out, indices, node.value)
        return None
    return rewrite(stmts, store)
