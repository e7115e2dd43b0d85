"""softmax along one axis (ONNX Softmax, opset 13+).

Ports: x, y of the same shape; attribute axis (default -1).  The lowering
runs one instance per row (every position of the other axes); each makes
three passes over its row: max; exp(x - max), stored and summed; and the
quotients, in place (one exponential an element).  The max and the sum
are promised reductions (For.reduce), so a target may run its vector
lanes along the row.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Expr, Intrinsic
from ..types import BufferType
from .lowering import KernelBuilder, add, const_value, maximum, mul, product
from .reduce import fold_promise
from .spec import OpContext, TensorOpSpec


def _infer_softmax(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    if ctx.rank("x") == 0:
        ctx.fail("input 'x' must have rank 1 or more", "pass a tensor with an axis", "x")
    ctx.axis_attr("axis", ctx.rank("x"))
    return {"y": BufferType(element, ctx.shape("x"))}


def _evaluate_softmax(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    shifted = np.exp(x["x"] - np.max(x["x"], axis=axis, keepdims=True))
    return {"y": shifted / np.sum(shifted, axis=axis, keepdims=True)}


def _lower_softmax(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    dims = b.dims("x")
    length, inner = dims[axis], product(dims[axis + 1:])
    rows = mul(product(dims[:axis]), inner)
    row = b.instance()
    if const_value(inner) == 1:
        base = b.let("base", mul(row, length))
    else:
        outer_index = b.let("o", row / inner)
        base = b.let("base", add(mul(mul(outer_index, length), inner), row % inner))

    def at(a: Expr) -> Expr:
        return add(base, mul(a, inner))

    def exp_at(a: Expr, top: Expr) -> Expr:
        return Intrinsic("exp", (b.load("x", at(a)) - top,))

    top = b.let("top", b.const(-np.inf))
    with b.loop("a", length, reduce=fold_promise("max", top)) as a:
        b.assign(top, maximum(top, b.load("x", at(a))))
    total = b.let("total", b.const(0))
    with b.loop("a", length, ivdep=True, reduce=fold_promise("sum", total)) as a:
        term = b.let("e", exp_at(a, top))
        b.store("y", at(a), term)
        b.assign(total, total + term)
    with b.loop("a", length, ivdep=True) as a:
        b.store("y", at(a), b.load("y", at(a)) / total)
    return (rows,)


SOFTMAX = TensorOpSpec(
    "softmax", ("x",), ("y",), _infer_softmax, _evaluate_softmax, _lower_softmax,
    attrs={"axis": -1}, summary="softmax along axis (ONNX Softmax, opset 13+)")

OPS = (SOFTMAX,)
