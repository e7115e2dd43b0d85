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

from ..ir.kernel import For, Intrinsic, Var
from ..ir.reduction import reads_variable
from ..ir.types import I64
from .loop_nests import shifted


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
