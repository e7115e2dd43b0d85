"""Loop distribution: one loop whose body does several things in turn as
several loops, each doing one of them for every iteration.

PolyBench's atax computes a row's product and then adds the row into
the result in one loop::

    for i: tmp[i] = 0; for j: tmp[i] += A[i, j] * x[j]
           for j: y[j] += A[i, j] * tmp[i]

As two loops, the first runs its rows apart (each writes its own
``tmp[i]``), and the second is a nest whose loops can be swapped. The
statements of the body are cut where every iteration of the part before
the cut may run before any of the part after it: exactly where the two
loops, fused again, would be legal for loop-fusion (fusion_problem:
every buffer one part writes and the other accesses is accessed at the
iteration's own element in both; no variable assigned in one is used in
the other), and no value the part before declares is read after it.
Cuts fall after the body's loops: statements before a loop stay with it
(``tmp[i] = 0`` with the sum it starts). Where that finds none, the
body's loops are first cut between their statements (bicg's inner loop
adds into ``s[j]`` and ``q[i]`` at each step).
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables
from ..ir.kernel import For, Let, Stmt
from .loop_fusion import fusion_problem
from .names import NameGenerator, fresh_copy, names_in


def distributed(loop: For, names: NameGenerator) -> tuple[For, ...]:
    """``loop`` as loops over its bounds, one per part of its body cut
    where that computes the same (module docstring); ``(loop,)`` where
    no cut is legal. Where none is, the loops of the body are first each
    cut between their statements, which may make cuts after them (bicg's
    one inner loop updating ``s[j]`` and ``q[i]``). The loops after the
    first declare fresh names (``names``) for the variables they declare,
    the loop's own included."""
    pieces = _cut(loop, loop.body, names, after_loops=True)
    if len(pieces) > 1:
        return pieces
    body = tuple(piece for stmt in loop.body for piece in (
        _cut(stmt, stmt.body, names, after_loops=False) if isinstance(stmt, For) else (stmt,)))
    pieces = _cut(loop, body, names, after_loops=True) if body != loop.body else ()
    return pieces if len(pieces) > 1 else (loop,)


def cut_apart(loop: For, names: NameGenerator) -> tuple[For, ...]:
    """``loop`` as loops over its bounds, its body cut between any two
    statements where legal (correlation's ``corr[i, i] = 1`` before the
    loop over the row's other columns); ``(loop,)`` where no cut is."""
    return _cut(loop, loop.body, names, after_loops=False)


def _cut(loop: For, body: tuple[Stmt, ...], names: NameGenerator,
         after_loops: bool) -> tuple[For, ...]:
    """``loop`` over ``body`` as one loop per part of it, cut after its
    loops (``after_loops``) or between any two statements, where legal."""
    parts: list[tuple[Stmt, ...]] = []
    start = 0
    for at in [i + 1 for i, stmt in enumerate(body[:-1])
               if isinstance(stmt, For) or not after_loops]:
        first, rest = body[start:at], body[at:]
        if {s.name for s in first if isinstance(s, Let)} & names_in(rest):
            continue
        if fusion_problem(_over(loop, first), _over(loop, rest)) is None:
            parts.append(first)
            start = at
    parts.append(body[start:])
    return (_over(loop, parts[0]), *(fresh_copy((_over(loop, part),), names)[0]
                                     for part in parts[1:]))


def _over(loop: For, body: tuple[Stmt, ...]) -> For:
    """``loop`` running ``body``, with the promises of the folds it makes."""
    assigned = assigned_variables(body)
    return dataclasses.replace(loop, body=body,
                               reduce=tuple(r for r in loop.reduce if r.var in assigned))
