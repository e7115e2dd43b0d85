"""A triangle of iterations run as the rectangle around it, its stores
kept to the triangle by a guard.

A symmetric product updates one triangle of its result (PolyBench's
syrk, the lower one; covariance, the upper one)::

    for i in 0 .. N { for j in 0 .. i + 1 { acc = c[i, j] * beta
                                           for k: acc += a[i, k] * a[j, k]
                                           c[i, j] = acc } }

Its rows differ in length, so loop-instances cannot make the nest a node
of two dimensions, nor register-tile schedule it. Run over the box of
every column any row takes (here N x N), each place computing its value
and storing it only inside the triangle (``if j < i + 1 { c[i, j] = acc
}``), it is a rectangle, which register tiles run at a product's rate:
at most twice the arithmetic, each step many times faster than a dot
product's.

Legal where computing outside the triangle has no effect: the inner
loop's start or stop (one of them) is the outer variable plus a value
that reads neither variable, both loops stepping by 1; its body is
values, assignments and loops of them, then stores only; and no load
can leave its buffer: each index reads at most one of the two
variables (through values and the bounds of the loops inside, too), so
that it takes over the box only values it takes in the triangle (every
row and every column of the box holds a place of the triangle); no
integer division or remainder by anything but a constant is computed.
"""
from __future__ import annotations

import dataclasses

from ..ir.kernel import (
    Assign, Binary, Compare, Const, Expr, For, If, Let, Load, Stmt, Store, Var,
)
from ..ir.reduction import reads_variable
from ..ir.visit import walk
from .loop_nests import Shifted, shifted


@dataclasses.dataclass(frozen=True)
class Box:
    """The inner loop over the box (``loop``) and the guard keeping a
    place to the triangle."""

    loop: For
    guard: Expr


def box(outer: For, inner: For) -> Box | str:
    """The box around the triangle ``inner`` makes in ``outer`` (module
    text), or why its bounds make none."""
    lower, upper = (reads_variable(b, outer.var) for b in (inner.start, inner.stop))
    if lower and upper:
        return f"has an inner loop '{inner.var}' whose bounds both read '{outer.var}' (a band)"
    if outer.step != 1 or inner.step != 1:
        return f"has an inner loop '{inner.var}' whose bounds read '{outer.var}', stepping by " \
               "other than 1"
    bound = inner.start if lower else inner.stop
    shift = shifted(bound, outer.var)
    if shift is None or reads_variable(bound, inner.var):
        return (f"has an inner loop '{inner.var}' whose bounds read '{outer.var}' other than as "
                f"'{outer.var}' plus or minus a value")
    column = Var(inner.var, bound.type)
    if lower:     # rows start later and later: the box starts with the first row's
        return Box(dataclasses.replace(inner, start=_at(shift, outer.start, 0), trip_count=None),
                   Compare("ge", column, bound))
    return Box(dataclasses.replace(inner, stop=_at(shift, outer.stop, -1), trip_count=None),
               Compare("lt", column, bound))


def _at(shift: Shifted, base: Expr, extra: int) -> Expr:
    """``base + extra`` shifted by ``shift``, constants folded."""
    if not isinstance(shift.offset, Const):
        return shift.added_to(base + extra if extra else base)
    total = shift.offset.value * (-1 if shift.minus else 1) + extra
    if isinstance(base, Const):
        return Const(base.value + total, base.type)
    return base if total == 0 else base + total if total > 0 else base - (-total)


def guarded(body: tuple[Stmt, ...], outer: For, inner: For, guard: Expr
            ) -> tuple[Stmt, ...] | str:
    """``body`` (the inner loop's, elements kept in variables) computed in
    every place of the box, its stores only where ``guard`` holds; or why
    computing outside the triangle could have an effect."""
    at = next((i for i, s in enumerate(body) if isinstance(s, Store)), len(body))
    prefix, stores = body[:at], body[at:]
    if not all(isinstance(s, Store) for s in stores):
        return "computes more after a store in its triangle (only stores may come last)"
    for stmt in walk(prefix):
        if isinstance(stmt, Stmt) and not isinstance(stmt, (Let, Assign, For)):
            return (f"runs {type(stmt).__name__.lower()} statements before its stores, which "
                    "a box around its triangle would run outside it")
        if isinstance(stmt, Binary) and stmt.op in ("div", "rem") and \
                stmt.type.kind == "int" and not isinstance(stmt.rhs, Const):
            return "divides integers by a variable, which outside its triangle may be 0"
    follows = _following(prefix, outer.var, inner.var)
    for load in (n for n in walk(prefix) if isinstance(n, Load)):
        for index in load.indices:
            read = {n.name for n in walk(index) if isinstance(n, Var)}
            if len({v for name in read for v in follows.get(name, ())}) > 1:
                return (f"reads '{load.buffer}' at an index following both '{outer.var}' and "
                        f"'{inner.var}', which outside its triangle may leave the buffer")
    return (*prefix, If(guard, stores)) if stores else prefix


def _following(stmts: tuple[Stmt, ...], *variables: str) -> dict[str, set[str]]:
    """Which of ``variables`` each name of ``stmts`` follows: the
    variables themselves, values computed from them, loops whose bounds
    read them."""
    follows = {v: {v} for v in variables}

    def of(exprs) -> set[str]:
        return {v for n in walk(exprs) if isinstance(n, Var) for v in follows.get(n.name, ())}
    while True:   # a value assigned later in a loop may follow more on the next step
        before = {name: set(found) for name, found in follows.items()}
        for node in walk(stmts):
            if isinstance(node, (Let, Assign)) and node.value is not None:
                follows[node.name] = follows.get(node.name, set()) | of(node.value)
            elif isinstance(node, For):
                follows[node.var] = follows.get(node.var, set()) | of((node.start, node.stop))
        if follows == before:
            return follows
