"""``scatter``: x with updates written at flat positions, in order.

    scatter  x, positions, updates -> y   attr reduction: none add mul max min

``y`` has x's shape and type; ``positions`` (i32 or i64, a negative one
counting from the end of x's elements) has the shape of ``updates``; the
updates are applied one after another in row-major order, each replacing
(``none``) or combining with what is there.  The front ends make ONNX's
ScatterElements and ScatterND (and torch's scatter and index_put) by
computing the flat positions with pointwise ops.  The lowering runs one
instance per element of y, which takes x's value and goes through the
updates in order: deterministic wherever updates collide.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Intrinsic, Select
from ..types import I64, BufferType
from .lowering import KernelBuilder, replication_over
from .spec import OpContext, TensorOpSpec

_COMBINE = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
            "min": np.minimum}


def _reduction(ctx: OpContext) -> str:
    if ctx.attrs["reduction"] not in _COMBINE:
        ctx._bad_attr("reduction", "one of " + ", ".join(_COMBINE))
    return ctx.attrs["reduction"]


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    _reduction(ctx)
    if ctx.element("positions").name not in ("i32", "i64"):
        ctx.fail(f"'positions' must be i32 or i64, got {ctx.element('positions')}",
                 "cast the positions to i64", "positions")
    if ctx.shape("positions") != ctx.shape("updates"):
        ctx.fail(f"'positions' {ctx.types['positions']} and 'updates' "
                 f"{ctx.types['updates']} differ in shape", "give one position per update",
                 "updates")
    if ctx.element("updates") != ctx.element("x"):
        ctx.fail(f"'updates' are {ctx.element('updates')} but 'x' is {ctx.element('x')}",
                 "cast the updates to x's element type", "updates")
    return {"y": BufferType(ctx.element("x"), ctx.shape("x"))}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    y = np.array(x["x"])
    flat = y.reshape(-1)
    positions = x["positions"].reshape(-1).astype(np.int64)
    positions = np.where(positions < 0, positions + flat.size, positions)
    combine = _COMBINE[_reduction(ctx)]
    for position, update in zip(positions, x["updates"].reshape(-1)):
        flat[position] = update if combine is None else combine(flat[position], update)
    return {"y": y}


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    reduction = _reduction(b.ctx)
    size = replication_over(b.dims("y"))[0]
    i = b.instance()
    value = b.let("v", b.load("x", i))
    count = replication_over(b.dims("updates"))[0]
    with b.loop("k", count) as k:
        position = b.let("p", b.load("positions", k).cast(I64))
        position = Select(position.lt(Const(0, I64)), position + size, position)
        update = b.load("updates", k)
        if reduction == "none":
            combined: Expr = update
        elif reduction in ("max", "min"):
            combined = Intrinsic(reduction, (value, update))
        else:
            combined = value + update if reduction == "add" else value * update
        b.assign(value, Select(position.eq(i), combined, value))
    b.store("y", i, value)
    return (size,)


SCATTER = TensorOpSpec(
    "scatter", ("x", "positions", "updates"), ("y",), _infer, _evaluate, _lower,
    attrs={"reduction": "none"},
    summary="y = x with updates written (or combined) at flat positions, in order")

OPS = (SCATTER,)
