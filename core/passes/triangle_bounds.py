"""The bounds of a swapped nest whose inner loop starts or stops at the
outer variable plus an offset (a triangle, or a band), so that
loop-interchange can swap it.

A lower triangle walked column by column::

    for j in A .. B { for i in j + c .. E { ... } }

runs the iterations A <= j < B, j + c <= i < E.  The same set, row by
row, is::

    for i in A + c .. E { for j in A .. min(B, i - c + 1) { ... } }

An inner loop stopping at the outer variable (an upper triangle), ``for j
in A .. B { for i in S .. j + d }``, becomes ``for i in S .. B - 1 + d {
for j in max(A, i - d + 1) .. B }``; one that does both (a band) takes
both limits.  Every iteration runs once in either order.  The offsets
are expressions that read neither variable; both loops step by 1.
"""
from __future__ import annotations

import dataclasses

from ..ir.kernel import Binary, Const, Expr, For, Intrinsic, Var
from ..ir.reduction import reads_variable
from ..ir.types import I64


@dataclasses.dataclass(frozen=True)
class Shifted:
    """``var + offset`` (``minus``: ``var - offset``)."""

    offset: Expr
    minus: bool = False

    def added_to(self, base: Expr) -> Expr:
        """``base + offset`` (or minus)."""
        return self._with(base, "sub" if self.minus else "add")

    def taken_from(self, base: Expr) -> Expr:
        """``base - offset`` (or plus)."""
        return self._with(base, "add" if self.minus else "sub")

    def _with(self, base: Expr, op: str) -> Expr:
        return base if self.offset == Const(0, I64) else Binary(op, base, self.offset)


def shifted(bound: Expr, var: str) -> Shifted | None:
    """``bound`` as ``var`` plus an expression that does not read it (a sum
    or difference of terms, one of them ``var`` once, added), or None."""
    split = _linear(bound, var)
    if split is None or split[0] != 1:
        return None
    rest = split[1]
    if rest is None:
        return Shifted(Const(0, I64))
    if isinstance(rest, Binary) and rest.op == "sub" and rest.lhs == Const(0, I64):
        return Shifted(rest.rhs, minus=True)
    return Shifted(rest)


def _linear(expr: Expr, var: str) -> tuple[int, Expr | None] | None:
    """(k, rest) with ``expr`` = k x ``var`` + rest (rest None: 0), through
    sums and differences; None where ``var`` is read otherwise."""
    if isinstance(expr, Var) and expr.name == var:
        return 1, None
    if isinstance(expr, Binary) and expr.op in ("add", "sub"):
        left, right = _linear(expr.lhs, var), _linear(expr.rhs, var)
        if left is None or right is None:
            return None
        sign = 1 if expr.op == "add" else -1
        rest = left[1] if right[1] is None else (
            Binary(expr.op, left[1], right[1]) if left[1] is not None
            else right[1] if sign == 1 else Binary("sub", Const(0, I64), right[1]))
        return left[0] + sign * right[0], rest
    return None if reads_variable(expr, var) else (0, expr)


def triangle_problem(outer: For, inner: For) -> str | None:
    """Why the inner loop's bounds, which read the outer variable, do not
    make a triangle or band the swap can bound; None when they do."""
    if outer.step != 1 or inner.step != 1:
        return (f"has an inner loop '{inner.var}' whose bounds read '{outer.var}', with steps "
                "other than 1")
    for bound in (inner.start, inner.stop):
        if reads_variable(bound, outer.var) and shifted(bound, outer.var) is None:
            return (f"has an inner loop '{inner.var}' whose bounds read '{outer.var}' other than "
                    f"as '{outer.var}' plus or minus a value")
    return None


def swapped_bounds(outer: For, inner: For) -> tuple[For, For]:
    """(the new outer loop, over ``inner``'s variable; the new inner loop,
    over ``outer``'s), with bounds that run the same iterations; their
    bodies as given (the caller nests them)."""
    lower = shifted(inner.start, outer.var) if reads_variable(inner.start, outer.var) else None
    upper = shifted(inner.stop, outer.var) if reads_variable(inner.stop, outer.var) else None
    row = Var(inner.var, I64)
    start, stop = inner.start, inner.stop
    first, last = outer.start, outer.stop
    if lower is not None:   # i >= j + c: from A + c; j <= i - c
        start = lower.added_to(outer.start)
        last = Intrinsic("min", (outer.stop, lower.taken_from(row) + 1))
    if upper is not None:   # i < j + d: up to B - 1 + d; j >= i - d + 1
        stop = upper.added_to(outer.stop - 1)
        first = Intrinsic("max", (outer.start, upper.taken_from(row) + 1))
    new_outer = dataclasses.replace(inner, start=start, stop=stop, trip_count=None)
    new_inner = dataclasses.replace(outer, start=first, stop=last, trip_count=None)
    return new_outer, new_inner
