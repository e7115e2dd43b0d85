"""Vector lanes along a kernel's own loops instead of across its instances,
and how wide a strip across instances is.

Lane strips (lanes.py) run adjacent instances in the lanes, which is right
when adjacent instances read adjacent elements (``c[i, j] += a[i, k] *
b[k, j]`` across j).  A row reduction or a softmax reads a row per
instance: across instances its loads are a row apart (gathers), along its
loop they are adjacent.  Such a kernel is left to LLVM's loop vectoriser,
which runs the lanes along the loop, folding reductions into a partial
result per lane (the loop's For.reduce promise lets it reorder them).

A column reduction (``acc += a[i, j]`` over i, across j) is the other way
round: its strips walk down the rows, a row apart each step, and a strip
of 16 lanes reads one cache line of each row, each in another page, which
the prefetchers do not follow (4096^2 f32 on one core of the 2-core EPYC:
16.1 ms; numpy's ``a.sum(0)`` 3.0).  Such strips are WIDEN times wider
(64 lanes: 5.3 ms), so that each step reads a run of lines.
"""
from __future__ import annotations

from hpvm.ir.analysis import assigned_variables
from hpvm.ir.kernel import For, If, KernelFunction, Let, Load, Stmt, Store, While
from hpvm.ir.strides import IndexStrides, instance_of, loop_variable
from hpvm.ir.uniformity import Uniformity
from hpvm.ir.visit import walk


def lanes_along_loops(kernel: KernelFunction, uniformity: Uniformity, dim: int) -> bool:
    """Whether every loop of ``kernel`` with varying work of its own (not
    only in loops inside it) is one LLVM vectorises along itself
    (innermost, changing no outer variable but the reductions it
    promises) and writes each element adjacent to the previous
    iteration's, reading so or one element throughout, while no access in
    it that moves along it is to adjacent elements for adjacent instances
    of replication dimension ``dim`` (one that stays put is read once:
    gemver's ``a[i, j] + u[i] * v[j]`` in instance i runs along j).  A
    nest of such loops (``for k: for j: c[i, j] += a[i, k] * b[k, j]`` in
    instance i) runs its innermost loops in lanes."""
    strides = IndexStrides(kernel.body)
    loops = [loop for loop in walk(kernel.body) if isinstance(loop, (For, While))
             and _varying_accesses(loop, uniformity)]
    return bool(loops) and all(_along(loop, strides, uniformity, dim) for loop in loops)


def _varying_accesses(loop, uniformity: Uniformity) -> list[Load | Store]:
    """The loop's varying loads and its stores, but those in loops inside
    it."""
    return [e for part in _own_parts(loop.body) for e in walk(part)
            if isinstance(e, Load) and uniformity.is_varying(e) or isinstance(e, Store)]


def _own_parts(body: tuple[Stmt, ...]):
    """The statements of ``body`` outside loops in it: an If's condition
    and its branches' statements, not the If."""
    for stmt in body:
        if isinstance(stmt, If):
            yield stmt.cond
            yield from _own_parts(stmt.then_body + stmt.else_body)
        elif not isinstance(stmt, (For, While)):
            yield stmt


def _along(loop, strides: IndexStrides, uniformity: Uniformity, dim: int) -> bool:
    if not isinstance(loop, For) or loop.step != 1 or _has_loop(loop.body):
        return False
    declared_inside = {s.name for s in walk(loop.body) if isinstance(s, Let)}
    carried = assigned_variables(loop.body) - declared_inside
    if not carried <= {r.var for r in loop.reduce}:
        return False
    along, across = loop_variable(loop.var), instance_of(dim)
    walks = [(at, strides.element_stride(at.indices, along))
             for at in _varying_accesses(loop, uniformity)]
    return all(step in ((1,) if isinstance(at, Store) else (0, 1)) for at, step in walks) \
        and not any(strides.element_stride(at.indices, across) == 1
                    for at, step in walks if step != 0)


def _has_loop(body: tuple[Stmt, ...]) -> bool:
    return any(isinstance(s, (For, While)) for s in walk(body))


WIDEN = 4
"""How many times wider a strip is whose loops walk across rows."""


def strip_width(kernel: KernelFunction, uniformity: Uniformity, dim: int, lanes: int) -> int:
    """``lanes``, or WIDEN times that where every loop doing varying work
    reads adjacent elements for adjacent instances of ``dim`` and jumps
    (a stride other than 0 or 1, or one not known) from one iteration to
    the next: strips walking down columns."""
    if lanes < 2:
        return lanes
    strides = IndexStrides(kernel.body)
    across = instance_of(dim)
    walks = [(loop_variable(loop.var), at.indices) for loop in walk(kernel.body)
             if isinstance(loop, For) for at in _varying_accesses(loop, uniformity)]
    down_columns = bool(walks) and all(
        strides.element_stride(at, across) == 1
        and strides.element_stride(at, along) not in (0, 1) for along, at in walks)
    return lanes * WIDEN if down_columns else lanes
