"""Reductions over any axes: ``reduce`` (fn sum, prod, max or min) and
``arg_reduce`` (fn argmax or argmin, the i64 index along one axis).

    reduce      x -> y   attrs: fn, axes (() for all), keepdims (default 1)
    arg_reduce  x -> y   attrs: fn, axis (default 0), keepdims (default 1),
                                select_last_index (default 0: the first)

Means, norms and log-sum-exp are compositions (front ends build them).
Each lowering runs one instance per output element and loops over the
reduced elements in row-major order, accumulating in the element type.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager

import numpy as np

from ..kernel import Const, Expr, Reduction, Select, Var
from ..types import I64, BufferType, ScalarType
from .lowering import KernelBuilder, maximum, minimum, product
from .spec import REQUIRED, OpContext, TensorOpSpec

REDUCE_FUNCTIONS = ("sum", "prod", "max", "min")
ARG_FUNCTIONS = ("argmax", "argmin")


def _fn(ctx: OpContext, allowed: tuple[str, ...]) -> str:
    if ctx.attrs["fn"] not in allowed:
        ctx._bad_attr("fn", "one of " + ", ".join(allowed))
    return ctx.attrs["fn"]


def reduced_axes(ctx: OpContext) -> tuple[int, ...]:
    """The checked, sorted, non-negative ``axes`` (all axes when empty)."""
    rank = ctx.rank("x")
    axes = ctx.ints_attr("axes")
    if any(not -rank <= a < rank for a in axes):
        ctx._bad_attr("axes", f"axes in [{-rank}, {rank - 1}] for a rank-{rank} input")
    normal = sorted({a % rank for a in axes}) if axes else list(range(rank))
    if len(normal) != len(axes) and axes:
        ctx._bad_attr("axes", "distinct axes")
    return tuple(normal)


def _out_shape(ctx: OpContext, axes: tuple[int, ...]) -> tuple:
    keep = ctx.flag_attr("keepdims")
    return tuple(1 if a in axes else d for a, d in enumerate(ctx.shape("x"))
                 if keep or a not in axes)


def _infer_reduce(ctx: OpContext) -> dict[str, BufferType]:
    fn = _fn(ctx, REDUCE_FUNCTIONS)
    element = ctx.element("x")
    if element.is_bool and fn in ("sum", "prod"):
        ctx.fail(f"{fn} of bool values", "cast the input to an integer type first", "x")
    return {"y": BufferType(element, _out_shape(ctx, reduced_axes(ctx)))}


NUMPY_REDUCTIONS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _evaluate_reduce(ctx: OpContext, x: dict) -> dict:
    axes = reduced_axes(ctx)
    function = NUMPY_REDUCTIONS[ctx.attrs["fn"]]
    keep = ctx.flag_attr("keepdims")
    return {"y": function(x["x"], axis=axes, keepdims=keep).astype(x["x"].dtype)}


def initial(element: ScalarType, fn: str) -> Const:
    """The identity of reduction ``fn`` on ``element``."""
    if fn in ("sum", "prod"):
        return Const(0 if fn == "sum" else 1, element)
    if element.is_float:
        return Const(-np.inf if fn == "max" else np.inf, element)
    if element.is_bool:
        return Const(fn == "min", element)
    info = np.iinfo(element.numpy_dtype)
    return Const(int(info.min if fn == "max" else info.max), element)


def combine(fn: str, acc: Expr, value: Expr) -> Expr:
    """``acc`` with ``value`` folded in by reduction ``fn``."""
    if fn == "sum":
        return acc + value
    if fn == "prod":
        return acc * value
    if value.type.is_bool:
        return Select(value, value, acc) if fn == "max" else Select(value, acc, value)
    return maximum(acc, value) if fn == "max" else minimum(acc, value)


def output_instance(b: KernelBuilder, axes: tuple[int, ...]):
    """(flat instance index, x's indices with the kept axes filled in and
    the reduced ones 0, replication): one instance per output element."""
    dims = b.dims("x")
    kept = [a for a in range(len(dims)) if a not in axes]
    i, kept_indices = b.instance_indices([dims[a] for a in kept])
    indices: list[Expr] = [Const(0, I64)] * len(dims)
    for axis, index in zip(kept, kept_indices):
        indices[axis] = index
    return i, indices, (product([dims[a] for a in kept]),)


@contextmanager
def reduced_loops(b: KernelBuilder, axes, indices: list[Expr], start: int = 0,
                  reduce: tuple[Reduction, ...] = ()):
    """Loops over the reduced ``axes`` (from ``start`` on the innermost
    one), setting their entries of ``indices``; each folds into ``reduce``."""
    with ExitStack() as stack:
        for position, axis in enumerate(axes):
            first = Const(start, I64) if position == len(axes) - 1 else None
            indices[axis] = stack.enter_context(
                b.loop(f"r{axis}", b.dim("x", axis), first, reduce=reduce))
        yield


def fold_promise(fn: str, acc: Var) -> tuple[Reduction, ...]:
    """The promise of a loop folding ``fn`` (sum, prod, max, min) into
    ``acc``: its iterations may run in any order (bool max/min, written as
    selects, promise nothing)."""
    if acc.type.is_bool:
        return ()
    return (Reduction(acc.name, {"sum": "add", "prod": "mul"}.get(fn, fn)),)


def _lower_reduce(b: KernelBuilder) -> tuple[Expr, ...]:
    fn, axes = b.ctx.attrs["fn"], reduced_axes(b.ctx)
    i, indices, replication = output_instance(b, axes)
    acc = b.let("acc", initial(b.element("x"), fn))
    with reduced_loops(b, axes, indices, reduce=fold_promise(fn, acc)):
        b.assign(acc, combine(fn, acc, b.load("x", *indices)))
    b.store("y", i, acc)
    return replication


REDUCE = TensorOpSpec(
    "reduce", ("x",), ("y",), _infer_reduce, _evaluate_reduce, _lower_reduce,
    attrs={"fn": REQUIRED, "axes": (), "keepdims": 1},
    summary="y = fn (sum, prod, max, min) of x over axes (all when empty)")


# arg_reduce ------------------------------------------------------------------
def _arg_axis(ctx: OpContext) -> int:
    if ctx.rank("x") == 0:
        ctx.fail("input 'x' must have rank 1 or more", "pass a tensor with an axis", "x")
    return ctx.axis_attr("axis", ctx.rank("x"))


def _infer_arg_reduce(ctx: OpContext) -> dict[str, BufferType]:
    _fn(ctx, ARG_FUNCTIONS)
    ctx.numeric_element()
    ctx.flag_attr("select_last_index")
    return {"y": BufferType(I64, _out_shape(ctx, (_arg_axis(ctx),)))}


def _evaluate_arg_reduce(ctx: OpContext, x: dict) -> dict:
    axis, data = _arg_axis(ctx), x["x"]
    find = np.argmax if ctx.attrs["fn"] == "argmax" else np.argmin
    if ctx.flag_attr("select_last_index"):
        index = data.shape[axis] - 1 - find(np.flip(data, axis), axis=axis)
    else:
        index = find(data, axis=axis)
    if ctx.flag_attr("keepdims"):
        index = np.expand_dims(index, axis)
    return {"y": index.astype(np.int64)}


def _lower_arg_reduce(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = _arg_axis(b.ctx)
    last = b.ctx.flag_attr("select_last_index")
    i, indices, replication = output_instance(b, (axis,))
    best = b.let("best", b.load("x", *indices))
    best_index = b.let("best_index", Const(0, I64))
    with reduced_loops(b, (axis,), indices, start=1):
        value = b.let("v", b.load("x", *indices))
        if b.ctx.attrs["fn"] == "argmax":
            better = value.ge(best) if last else value.gt(best)
        else:
            better = value.le(best) if last else value.lt(best)
        better = b.let("better", better)
        b.assign(best, Select(better, value, best))
        b.assign(best_index, Select(better, indices[axis], best_index))
    b.store("y", i, best_index)
    return replication


ARG_REDUCE = TensorOpSpec(
    "arg_reduce", ("x",), ("y",), _infer_arg_reduce, _evaluate_arg_reduce, _lower_arg_reduce,
    attrs={"fn": REQUIRED, "axis": 0, "keepdims": 1, "select_last_index": 0},
    summary="y = the i64 index of the largest (argmax) or smallest (argmin) x along axis")

OPS = (REDUCE, ARG_REDUCE)
