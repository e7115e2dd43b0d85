"""Ops that pick or repeat elements: ``expand`` (broadcast to a shape),
``gather`` and ``gather_elements`` (elements chosen by an index tensor),
and ``cumsum`` (running sums along an axis).

    expand           x -> y            attr shape: y = x broadcast with shape
                                       (numpy rules, both ways, as ONNX Expand)
    gather           x, indices -> y   attr axis: y = take(x, indices, axis)
    gather_elements  x, indices -> y   attr axis: y[p] = x[p with p[axis] =
                                       indices[p]] (ONNX GatherElements)
    cumsum           x -> y            attrs axis, exclusive, reverse, fn: sum or prod
                                       (ONNX CumSum, CumProd)

Indices are i32 or i64; a negative index counts from the end.  Every
lowering runs one instance per output element (cumsum: per line along
the axis).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Select
from ..types import I64, BufferType
from .dims import broadcast_shape
from .lowering import KernelBuilder, replication_over
from .pointwise import lower_pointwise
from .reduce import output_instance, reduced_loops
from .spec import REQUIRED, OpContext, TensorOpSpec


# expand --------------------------------------------------------------------
def _infer_expand(ctx: OpContext) -> dict[str, BufferType]:
    wanted = ctx.ints_attr("shape", minimum=1)
    shape = broadcast_shape(ctx, ("x", "x"), shapes=[ctx.shape("x"), wanted])
    return {"y": BufferType(ctx.element("x"), shape)}


EXPAND = TensorOpSpec(
    "expand", ("x",), ("y",), _infer_expand,
    lambda ctx, x: {"y": np.array(np.broadcast_to(
        x["x"], np.broadcast_shapes(x["x"].shape, ctx.attrs["shape"])))},
    lambda b: lower_pointwise(b, ("x",), lambda x: x), attrs={"shape": REQUIRED},
    summary="y = x broadcast with shape (numpy rules both ways; ONNX Expand)")


# gather ----------------------------------------------------------------------
def _check_indices(ctx: OpContext) -> None:
    element = ctx.element("indices")
    if element.name not in ("i32", "i64"):
        ctx.fail(f"'indices' must be i32 or i64, got {element}", "cast the indices to i64",
                 "indices")


def _infer_gather(ctx: OpContext) -> dict[str, BufferType]:
    _check_indices(ctx)
    if ctx.rank("x") == 0:
        ctx.fail("input 'x' must have rank 1 or more", "pass a tensor with an axis", "x")
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    shape = ctx.shape("x")
    return {"y": BufferType(ctx.element("x"), shape[:axis] + ctx.shape("indices") +
                            shape[axis + 1:])}


def _wrapped(indices: np.ndarray, size: int) -> np.ndarray:
    return np.where(indices < 0, indices + size, indices)


def _evaluate_gather(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    return {"y": np.take(x["x"], _wrapped(x["indices"], x["x"].shape[axis]), axis=axis)}


def _index(b: KernelBuilder, position: list[Expr], size: Expr) -> Expr:
    """The index read at ``position`` of 'indices', as i64, wrapped when
    negative."""
    raw = b.load("indices", *position)
    value = b.let("index", raw if raw.type == I64 else raw.cast(I64))
    return Select(value.lt(Const(0, I64)), value + size, value)


def _lower_gather(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    out_dims = b.dims("y")
    i, out = b.instance_indices(out_dims)
    count = len(b.types["indices"].shape)
    position = out[axis:axis + count] or [Const(0, I64)]
    source = out[:axis] + [_index(b, position, b.dim("x", axis))] + out[axis + count:]
    b.store("y", i, b.load("x", *source))
    return replication_over(out_dims)


GATHER = TensorOpSpec(
    "gather", ("x", "indices"), ("y",), _infer_gather, _evaluate_gather, _lower_gather,
    attrs={"axis": 0}, summary="y = x[..., indices, ...] along axis (ONNX Gather)")


def _infer_gather_elements(ctx: OpContext) -> dict[str, BufferType]:
    _check_indices(ctx)
    if ctx.rank("indices") != ctx.rank("x") or ctx.rank("x") == 0:
        ctx.fail(f"'indices' {ctx.types['indices']} must have the rank of 'x' {ctx.types['x']}",
                 "give indices one axis per axis of x", "indices")
    ctx.axis_attr("axis", ctx.rank("x"))
    return {"y": BufferType(ctx.element("x"), ctx.shape("indices"))}


def _evaluate_gather_elements(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    position = list(np.indices(x["indices"].shape))
    position[axis] = _wrapped(x["indices"], x["x"].shape[axis])
    return {"y": x["x"][tuple(position)]}


def _lower_gather_elements(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    out_dims = b.dims("y")
    i, out = b.instance_indices(out_dims)
    source = list(out)
    source[axis] = _index(b, list(out), b.dim("x", axis))
    b.store("y", i, b.load("x", *source))
    return replication_over(out_dims)


GATHER_ELEMENTS = TensorOpSpec(
    "gather_elements", ("x", "indices"), ("y",), _infer_gather_elements,
    _evaluate_gather_elements, _lower_gather_elements, attrs={"axis": 0},
    summary="y[p] = x[p with p[axis] = indices[p]] (ONNX GatherElements)")


# cumsum ----------------------------------------------------------------------
def _infer_cumsum(ctx: OpContext) -> dict[str, BufferType]:
    if ctx.rank("x") == 0:
        ctx.fail("input 'x' must have rank 1 or more", "pass a tensor with an axis", "x")
    ctx.axis_attr("axis", ctx.rank("x"))
    ctx.flag_attr("exclusive")
    ctx.flag_attr("reverse")
    _running(ctx)
    return {"y": BufferType(ctx.numeric_element(), ctx.shape("x"))}


_RUNNING = {"sum": (np.cumsum, 0), "prod": (np.cumprod, 1)}
"""fn -> (numpy's running function, the value before the first element)."""


def _running(ctx: OpContext):
    if ctx.attrs["fn"] not in _RUNNING:
        ctx._bad_attr("fn", "sum or prod")
    return _RUNNING[ctx.attrs["fn"]]


def _evaluate_cumsum(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    data = np.flip(x["x"], axis) if ctx.flag_attr("reverse") else x["x"]
    running, identity = _running(ctx)
    total = running(data, axis=axis, dtype=data.dtype)
    if ctx.flag_attr("exclusive"):
        total = np.concatenate([np.full_like(np.take(total, [0], axis), identity),
                                np.take(total, np.arange(total.shape[axis] - 1), axis)], axis)
    return {"y": np.flip(total, axis) if ctx.flag_attr("reverse") else total}


def _lower_cumsum(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    exclusive, reverse = b.ctx.flag_attr("exclusive"), b.ctx.flag_attr("reverse")
    _, indices, replication = output_instance(b, (axis,))
    identity = _running(b.ctx)[1]
    combine = (lambda a, v: a + v) if identity == 0 else (lambda a, v: a * v)
    total = b.let("total", b.const(identity, "x"))
    length = b.dim("x", axis)
    with reduced_loops(b, (axis,), indices):
        step = indices[axis]
        position = b.let("p", length - Const(1, I64) - step if reverse else step)
        indices[axis] = position
        value = b.load("x", *indices)
        if exclusive:
            b.store("y", tuple(indices), total)
            b.assign(total, combine(total, value))
        else:
            b.assign(total, combine(total, value))
            b.store("y", tuple(indices), total)
    return replication


CUMSUM = TensorOpSpec(
    "cumsum", ("x",), ("y",), _infer_cumsum, _evaluate_cumsum, _lower_cumsum,
    attrs={"axis": 0, "exclusive": 0, "reverse": 0, "fn": "sum"},
    summary="running sums (fn=prod: products) of x along axis (ONNX CumSum, CumProd)")

OPS = (EXPAND, GATHER, GATHER_ELEMENTS, CUMSUM)
