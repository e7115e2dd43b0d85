"""``sort``: the values along an axis in order, and where each came from.

    sort  x -> y, indices   attrs axis (default -1), descending (0 or 1)

The sort is stable: equal values keep the order of their indices (so
ONNX's TopK, a sort and a slice, picks the lower index among ties).  NaN
sorts above every number, as numpy orders it.  ``indices`` are i64.  The
lowering runs one instance per element, which counts the elements of its
line that come before it and writes itself there.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Binary, Const, Expr, Select
from ..types import BOOL, I64, BufferType
from .lowering import KernelBuilder, replication_over
from .spec import OpContext, TensorOpSpec


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    if ctx.rank("x") == 0:
        ctx.fail("input 'x' must have rank 1 or more", "pass a tensor with an axis", "x")
    ctx.axis_attr("axis", ctx.rank("x"))
    ctx.flag_attr("descending")
    element = ctx.numeric_element()
    return {"y": BufferType(element, ctx.shape("x")), "indices": BufferType(I64, ctx.shape("x"))}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    data = x["x"]
    if ctx.flag_attr("descending"):  # the stable ascending order of the reversed line, reversed
        size = data.shape[axis]
        flipped = np.argsort(np.flip(data, axis), axis=axis, kind="stable")
        order = np.flip(size - 1 - flipped, axis)
    else:
        order = np.argsort(data, axis=axis, kind="stable")
    return {"y": np.take_along_axis(data, order, axis), "indices": order.astype(np.int64)}


def _above(a: Expr, b: Expr) -> Expr:
    """``a`` sorts above ``b`` (NaN above every number)."""
    if not a.type.is_float:
        return a.gt(b)
    return Select(b.ne(b), Const(False, BOOL), Binary("lor", a.gt(b), a.ne(a)))


def _same(a: Expr, b: Expr) -> Expr:
    if not a.type.is_float:
        return a.eq(b)
    return Binary("lor", a.eq(b), Binary("land", a.ne(a), b.ne(b)))


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    descending = b.ctx.flag_attr("descending")
    dims = b.dims("x")
    _, indices = b.instance_indices(dims)
    mine = indices[axis]
    value = b.let("v", b.load("x", *indices))
    rank = b.let("rank", Const(0, I64))
    with b.loop("j", dims[axis]) as j:
        other = b.load("x", *(indices[:axis] + [j] + indices[axis + 1:]))
        ahead = _above(other, value) if descending else _above(value, other)
        tie = Binary("land", _same(other, value), j.lt(mine))
        b.assign(rank, Select(Binary("lor", ahead, tie), rank + Const(1, I64), rank))
    place = indices[:axis] + [rank] + indices[axis + 1:]
    b.store("y", tuple(place), value)
    b.store("indices", tuple(place), mine)
    return replication_over(dims)


SORT = TensorOpSpec(
    "sort", ("x",), ("y", "indices"), _infer, _evaluate, _lower,
    attrs={"axis": -1, "descending": 0},
    summary="y = x sorted along axis (stable; descending=1: largest first), and indices: "
            "where each value came from")

OPS = (SORT,)
