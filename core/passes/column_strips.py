"""A loop whose body walks each column in several passes, cut into strips
of columns so that loop-interchange can swap each pass.

Normalising each column first sums it, then divides it by the sum::

    for j in 0 .. N {
      let total = 0
      for i in 0 .. M { total = total + a[i, j] }
      for i in 0 .. M { out[i, j] = a[i, j] / total }
    }

Each pass walks a column, a row apart at every step.  The sum cannot
live in the output as a single pass's fold can (output_expansion.py): the
second pass reads it while it writes the output.  So the loop over
columns runs in strips of S columns, the strip's values of each
variable the body declares live in a private array of S elements,
and each loop of the body, and the statements between loops, runs for
the whole strip before the next (loop distribution)::

    for jj in 0 .. N step S {
      private total_strip[S]
      for j in jj .. min(jj + S, N) { total_strip[j - jj] = 0 }
      for j in jj .. min(jj + S, N) { for i { total_strip[j - jj] += a[i, j] } }
      for j in jj .. min(jj + S, N) { for i { out[i, j] = a[i, j] / total_strip[j - jj] } }
    }

The nests of the strip are perfect, and loop-interchange swaps them
where that is legal and worth it: each row of a strip is then walked
along its columns.  Each column's values are computed by the same
operations in the same order, so the results are the same bit for bit.

Distributing the loop runs a later statement of one column before an
earlier statement of the next; that computes the same when no two
columns share anything written: the body assigns no variable it does not
declare, and every buffer it writes is accessed, in every load and store
of the body, with the column variable itself at one same index position.
The body may not return, wait at a barrier, update atomically, call a
helper with effects, declare an array at its top, or declare the column
variable again; the loop's step is 1 and its bounds read no memory and
nothing the body assigns.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import Module
from ..ir.kernel import (
    ArrayDecl, Assign, For, Intrinsic, KernelFunction, Let,
    Load, Stmt, Store, Var,
)
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .loop_nests import iterations_share
from .names import NameGenerator, declared_names, function_names
from .reduce_forms import as_i64

STRIP_BYTES = 16384
"""What a strip's arrays hold together, at most: S is the largest power
of two up to MAX_STRIP whose arrays fit, a third of a 48 KiB L1 data
cache.  On a 2-core Xeon VM at 2048 x 2048, normalising took 5.93 /
3.59 / 3.17 / 2.89 / 2.61 ms with strips of 16 / 64 / 256 / 512 / 1024
columns (one array), a column softmax 26.6 / 14.4 / 9.5 / 8.5 / 7.9
(two): the longer a row of the strip, the better the walk."""
MAX_STRIP = 1024


def column_strips(outer: For, function: KernelFunction, module: Module) -> For | None:
    """``outer`` cut into strips of distributed statements (module
    docstring), or None where that would not compute the same, or the
    body is one statement."""
    body = outer.body
    if len(body) < 2 or not any(isinstance(s, For) for s in body) or outer.step != 1:
        return None
    if iterations_share(outer, module):
        return None
    declared = declared_names(body)
    names = NameGenerator(function_names(function))
    strip = Var(names.fresh(f"{outer.var}_strip"), I64)
    column = Var(outer.var, I64)
    place = (column - strip,)
    segments = _segments(body)
    later = [{n.name for n in walk(tuple(s for rest in segments[index + 1:] for s in rest))
              if isinstance(n, Var)} for index in range(len(segments))]
    lets = [(s, index) for index, segment in enumerate(segments) for s in segment
            if isinstance(s, Let)]
    kept = {s.name: names.fresh(f"{s.name}_strip") for s, index in lets if s.name in later[index]}
    if any(declared.count(name) > 1 for name in kept):
        return None   # declared again in an inner block: its reads there are another value
    size = _strip_size([s.type for s, _ in lets if s.name in kept])
    arrays = [ArrayDecl(kept[s.name], s.type, (size,), zeroed=s.value is None) for s, _ in lets
              if s.name in kept]
    stop = Intrinsic("min", (strip + size, as_i64(outer.stop)))
    passes = tuple(dataclasses.replace(outer, start=strip, stop=stop, trip_count=None, body=stmts)
                   for stmts in (_in_array(segment, kept, place) for segment in segments)
                   if stmts)
    return dataclasses.replace(outer, var=strip.name, step=size, body=(*arrays, *passes),
                               unroll=None, ivdep=False, trip_count=None, reduce=())


def _strip_size(types) -> int:
    """Columns per strip for arrays of ``types`` (STRIP_BYTES)."""
    size = MAX_STRIP
    while size > 1 and size * sum(max(t.bits, 8) // 8 for t in types) > STRIP_BYTES:
        size //= 2
    return size


def _segments(body: tuple[Stmt, ...]) -> list[tuple[Stmt, ...]]:
    """``body`` as the statements each pass runs: each loop alone, and
    the statements between loops together (their values stay scalars
    where no later pass reads them)."""
    segments: list[tuple[Stmt, ...]] = []
    for stmt in body:
        if isinstance(stmt, For) or not segments or isinstance(segments[-1][-1], For):
            segments.append((stmt,))
        else:
            segments[-1] += (stmt,)
    return segments


def _in_array(stmts: tuple[Stmt, ...], kept: dict[str, str], place: tuple) -> tuple[Stmt, ...]:
    """``stmts`` with the variables of ``kept`` held in their arrays at
    ``place``: a declaration stores its value (one without a value is
    gone: its array starts zeroed, a value the program left undefined),
    an assignment stores, a read loads."""
    def visit(node):
        if isinstance(node, Var) and node.name in kept:
            return Load(kept[node.name], place, node.type)
        if isinstance(node, Let) and node.name in kept:
            return Store(kept[node.name], place, node.value) if node.value is not None else ()
        if isinstance(node, Assign) and node.name in kept:
            return Store(kept[node.name], place, node.value)
        return None
    return rewrite(stmts, visit)

