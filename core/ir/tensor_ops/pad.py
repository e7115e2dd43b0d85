"""pad: a border around a tensor (ONNX Pad; Keras ZeroPadding2D).

Ports: x; y with y.shape[a] = x.shape[a] + pads[a] + pads[rank + a].
Attributes: pads (2 * rank integers >= 0: every axis's leading amount,
then every axis's trailing amount, as ONNX orders them), mode (constant:
the border is ``value``; edge: it repeats the nearest element; reflect: it
mirrors the elements next to the edge, which is not repeated, so a pad
must be smaller than its axis), value (constant mode).  Padded axes need a
fixed size.  Lowers to one instance per result element reading its source
element (clamped or mirrored), or ``value`` outside ``x``.
"""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..kernel import Binary, Const, Expr, Unary
from ..types import I64, BufferType
from .dims import describe
from .lowering import (
    KernelBuilder, add, in_range, maximum, minimum, mul, padded_shape, product, replication_over,
)
from .spec import REQUIRED, OpContext, TensorOpSpec

MODES = ("constant", "edge", "reflect")


def padding_attrs(pads: tuple[int, ...]) -> dict:
    """The attributes of zero padding by ``pads``."""
    return {"pads": tuple(pads), "mode": "constant", "value": 0.0}


def pad_widths(ctx: OpContext) -> list[tuple[int, int]]:
    """Per axis (leading, trailing), checked against the mode and shape."""
    rank = ctx.rank("x")
    pads = ctx.ints_attr("pads", minimum=0)
    if len(pads) != 2 * rank:
        ctx._bad_attr("pads", f"{2 * rank} integers >= 0 (leading then trailing, per axis)")
    mode = ctx.attrs["mode"]
    if mode not in MODES:
        ctx._bad_attr("mode", "one of " + ", ".join(f"'{m}'" for m in MODES))
    ctx.float_attr("value")
    widths = list(zip(pads[:rank], pads[rank:]))
    for axis, (dim, (lead, trail)) in enumerate(zip(ctx.shape("x"), widths)):
        if not lead and not trail:
            continue
        if not isinstance(dim, int):
            ctx.fail(f"dimension {axis} of 'x' is the symbol {describe(dim)}; padding it needs "
                     "its size", "give that dimension a fixed size", "x")
        if mode == "reflect" and max(lead, trail) >= dim:
            ctx.fail(f"reflect padding of {max(lead, trail)} on axis {axis} of size {dim}",
                     "pad a reflected axis by less than its size", "x")
    return widths


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.numeric_element()
    return {"y": BufferType(element, padded_shape(ctx.shape("x"), pad_widths(ctx)))}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    widths = pad_widths(ctx)
    mode = ctx.attrs["mode"]
    if mode == "constant":
        value = np.asarray(ctx.attrs["value"]).astype(x["x"].dtype)
        return {"y": np.pad(x["x"], widths, mode="constant", constant_values=value)}
    return {"y": np.pad(x["x"], widths, mode=mode)}


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    widths = pad_widths(b.ctx)
    mode = b.ctx.attrs["mode"]
    if mode == "constant" and b.tiles.vectors and b.ctx.rank("x") > 1:
        return _lower_constant_rows(b, widths)
    out_dims = b.dims("y")
    i, indices = b.instance_indices(out_dims)
    padded = [axis for axis, (lead, trail) in enumerate(widths) if lead or trail]
    source = list(indices)
    for axis in padded:
        source[axis] = add(indices[axis], Const(-widths[axis][0], I64))
        last = Const(b.ctx.shape("x")[axis] - 1, I64)
        if mode == "edge":
            source[axis] = minimum(maximum(source[axis], Const(0, I64)), last)
        elif mode == "reflect":  # last - |last - |s||
            distance = _absolute(add(last, _negated(_absolute(source[axis]))))
            source[axis] = add(last, _negated(distance))
    if mode != "constant" or not padded:
        b.store("y", i, b.load("x", *source))
        return replication_over(out_dims)
    result = b.let("v", b.const(b.ctx.attrs["value"]))
    inside = None
    for axis in padded:
        check = in_range(source[axis], b.dim("x", axis))
        inside = check if inside is None else Binary("land", inside, check)
    with b.when(inside):
        b.assign(result, b.load("x", *source))
    b.store("y", i, result)
    return replication_over(out_dims)


def _lower_constant_rows(b: KernelBuilder, widths: list[tuple[int, int]]
                         ) -> tuple[Expr, ...]:
    """On vector targets, one instance per row of ``y`` (its last axis):
    a row inside ``x`` is the leading value, the row of ``x`` copied, the
    trailing value, three loops the target vectorises; a row of the
    border is the value throughout.  (One instance per element, guarded,
    ran at a tenth of a copy's rate: a convolution's padded input,
    128 x 58 x 58, took 1 ms on two cores.)"""
    out_dims, in_dims = b.dims("y"), b.dims("x")
    _, indices = b.instance_indices(out_dims[:-1])
    value = b.const(b.ctx.attrs["value"], "y")
    lead, out_width = widths[-1][0], out_dims[-1]
    source_row = inside = None
    for axis, index in enumerate(indices):
        source = add(index, Const(-widths[axis][0], I64)) if widths[axis][0] else index
        if any(widths[axis]):
            check = in_range(source, in_dims[axis])
            inside = check if inside is None else Binary("land", inside, check)
        source_row = source if source_row is None else add(mul(source_row, in_dims[axis]),
                                                           source)
    row = b.let("row", mul(b.instance(), out_width))
    start = b.let("from", mul(source_row, in_dims[-1]))

    def fill(first: Expr, stop: Expr) -> None:
        with b.loop("j", stop, start=first, ivdep=True) as j:
            b.store("y", (add(row, j),), value)
    if inside is not None:
        flag = b.let("inside", inside)
        with b.when(Unary("not", flag)):
            fill(Const(0, I64), out_width)
        context = b.when(flag)
    else:
        context = nullcontext()
    with context:
        fill(Const(0, I64), Const(lead, I64))
        with b.loop("j", in_dims[-1], ivdep=True) as j:
            b.store("y", (add(row, add(j, Const(lead, I64))),), b.load("x", add(start, j)))
        fill(add(in_dims[-1], Const(lead, I64)), out_width)
    return (product(out_dims[:-1]),)


def _negated(e: Expr) -> Expr:
    return mul(Const(-1, I64), e)


def _absolute(e: Expr) -> Expr:
    return maximum(e, _negated(e))


PAD = TensorOpSpec(
    "pad", ("x",), ("y",), _infer, _evaluate, _lower,
    attrs={"pads": REQUIRED, "mode": "constant", "value": 0.0},
    summary="a border of pads[a] leading / pads[rank + a] trailing elements per axis "
            "(ONNX Pad: constant, edge or reflect)")

OPS = (PAD,)
