"""Which other dimension an instance of ``register-tile`` takes several
values of (register_tile_body.py says how many).

A node such as a convolution, ``y[k, oh, ow] = sum w[k, c, r, s] *
x[c, oh + r, ow + s]`` tiled over rows ``k`` and columns ``ow``, packs a
panel of the filters per block of steps for each instance, and each value
packed serves only the columns of one output row.  Where the row reads
and the loop's bounds do not follow a third dimension (``oh``), an
instance takes several of its values: the rows' panel is packed once per
block and serves them all, each value with its own column panel and
accumulators.  The prelude's values that follow that dimension are read
as their expressions where they are used.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..ir.kernel import Expr, InstanceId, Var
from ..ir.visit import walk
from .names import substitute
from .register_tile_plan import NestPlan


class Grouped(NamedTuple):
    """``plan`` with the prelude's values that follow dimension ``dim``
    inlined; ``dim`` None where no dimension qualifies."""

    plan: NestPlan
    dim: int | None


def grouping_plan(plans: list[NestPlan], rank: int) -> Grouped:
    """The first of ``plans`` (register_tile_plan.nest_plans) whose
    instances can take several values of another dimension, else the
    first: with the channels last (``y[oh, ow, k]``), rows ``k`` and
    columns ``ow`` let an instance pack the filters once for several
    output rows, where columns ``k`` would pack them again for each."""
    grouped = [grouped_plan(plan, rank) for plan in plans]
    return next((g for g in grouped if g.dim is not None), grouped[0])


def grouped_plan(plan: NestPlan, rank: int) -> Grouped:
    """The last dimension other than the rows and columns that the row
    reads (packed) and the loop's bounds do not follow, or none."""
    if not plan.row_packed:
        return Grouped(plan, None)
    for dim in reversed(range(rank)):
        if dim in (plan.rows, plan.cols):
            continue
        values = _following(plan, dim)
        bounds = (plan.loop.start, plan.loop.stop)
        if not any(_follows(expr, dim, values) for expr in plan.row_packed + bounds):
            return Grouped(dataclasses.replace(
                plan, uniform=tuple(let for let in plan.uniform if let.name not in values),
                accumulators=substitute(plan.accumulators, values=values),
                steps=substitute(plan.steps, values=values),
                results=substitute(plan.results, values=values),
                packed=tuple(substitute(load, values=values) for load in plan.packed),
                col_values=tuple(substitute(value, values=values)
                                 for value in plan.col_values)), dim)
    return Grouped(plan, None)


def _following(plan: NestPlan, dim: int) -> dict[str, Expr]:
    """The prelude's uniform values that follow ``dim``, each as its
    expression of the instance ids (earlier such values inlined)."""
    values: dict[str, Expr] = {}
    for let in plan.uniform:
        if let.value is not None and _follows(let.value, dim, values):
            values[let.name] = substitute(let.value, values=values)
    return values


def _follows(expr, dim: int, values: dict[str, Expr]) -> bool:
    return any(isinstance(n, InstanceId) and n.dim == dim or
               isinstance(n, Var) and n.name in values for n in walk(expr))
