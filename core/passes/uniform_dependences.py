"""Whether swapping two loops keeps the order of the iterations that touch
the same element of a buffer, when every access is the loops' variables
shifted by constants.

A running sum down each column, written column by column::

    for j in 0 .. N { for i in 1 .. M { out[i, j] = out[i - 1, j] + a[i, j] } }

reads at iteration (j, i) what iteration (j, i - 1) stored.  An access
``b[j + x_j, i + x_i]`` at iteration (j, i) and an access ``b[j + y_j, i
+ y_i]`` at iteration (j', i') touch one element when (j', i') - (j, i) =
x - y: the distance between the two iterations is the same wherever they
are (a uniform dependence).  The nest runs (j, i) before (j', i') when
the distance is positive in the order (j, i); swapped, in the order (i,
j).  The two orders agree unless the distance rises along one loop and
falls along the other (a distance (1, -1): the element that column j + 1
reads a row earlier, column j writes a row later).  Distances of the same
sign along both loops, or zero along one, keep their order: the swap is
legal where every pair of accesses, one of them a store, has such a
distance (the steps being positive).

Every access must have the two variables (each plus or minus a constant)
at the same two index positions, and the same other indices, expressions
the same in every iteration; otherwise the swap is not judged legal here.
"""
from __future__ import annotations

from itertools import combinations

from ..ir.kernel import AtomicUpdate, Call, Const, Expr, Load, Store, Var
from ..ir.visit import walk
from .loop_nests import shifted


def swap_keeps_dependences(stmts, buffer: str, outer: str, inner: str, changing) -> bool:
    """Whether the accesses of ``stmts`` to ``buffer`` have uniform
    distances (module docstring) that swapping loops ``outer`` and
    ``inner`` (variables; positive steps) keeps in order; ``changing``:
    the variables the iterations assign."""
    accesses = []
    for node in walk(stmts):
        if isinstance(node, (Load, Store)) and node.buffer == buffer:
            access = _shifted(node.indices, outer, inner, set(changing))
            if access is None:
                return False
            accesses.append((isinstance(node, Store), access))
        elif isinstance(node, AtomicUpdate) and node.buffer == buffer or \
                isinstance(node, Call) and any(isinstance(a, Var) and a.name == buffer
                                               for a in node.args):
            return False
    if len({(positions, others) for _, (positions, _, others) in accesses}) > 1:
        return False
    for (store_x, (_, x, _)), (store_y, (_, y, _)) in combinations(accesses, 2):
        apart = (x[0] - y[0], x[1] - y[1])
        if (store_x or store_y) and apart[0] * apart[1] < 0:
            return False
    return True


def _shifted(indices: tuple[Expr, ...], outer: str, inner: str, changing: set[str]):
    """(the positions of ``outer`` and ``inner``, their constant shifts,
    the other indices) of an access, or None where it is not of that form
    or another index could differ between iterations."""
    positions, shifts, others = [None, None], [0, 0], []
    for position, index in enumerate(indices):
        for which, var in enumerate((outer, inner)):
            shift = _shift(index, var)
            if shift is not None:
                if positions[which] is not None:
                    return None
                positions[which], shifts[which] = position, shift
                break
        else:
            moving = changing | {outer, inner}
            if any(isinstance(n, (Load, Call)) or isinstance(n, Var) and n.name in moving
                   for n in walk(index)):
                return None
            others.append(index)
    if None in positions:
        return None
    return tuple(positions), tuple(shifts), tuple(others)


def _shift(index: Expr, var: str) -> int | None:
    """c where ``index`` is ``var`` plus or minus a constant integer c (0
    for ``var`` itself), else None."""
    found = shifted(index, var)
    if found is None or not isinstance(found.offset, Const):
        return None
    return -int(found.offset.value) if found.minus else int(found.offset.value)
