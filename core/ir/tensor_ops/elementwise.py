"""Elementwise ops: add and mul (numpy/ONNX broadcasting), bias_add, the
activations relu, clipped_relu, tanh and sigmoid, and prelu (ONNX PRelu:
y = x where x >= 0, slope * x elsewhere, slope broadcasting to x).

Every lowering runs one instance per output element; inputs with the
output's shape are addressed flat, broadcast inputs by their own indices.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Expr, Intrinsic
from ..types import BufferType
from .dims import broadcast_shape, require_equal
from .lowering import KernelBuilder, div, maximum, minimum, product, replication_over
from .spec import OpContext, TensorOpSpec


# add, mul ----------------------------------------------------------------
def _infer_broadcast(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.numeric_element()
    return {"y": BufferType(element, broadcast_shape(ctx, ("a", "b")))}


def _lower_binary(op: str):
    def lower(b: KernelBuilder) -> tuple[Expr, ...]:
        out_dims = b.dims("y")
        if b.types["a"].shape == b.types["b"].shape == b.types["y"].shape:
            i = b.instance()
            lhs, rhs = b.load("a", i), b.load("b", i)
            b.store("y", i, lhs + rhs if op == "add" else lhs * rhs)
        else:
            i, at, replication = b.broadcast_grid(("a", "b"))
            lhs, rhs = b.load("a", at["a"]), b.load("b", at["b"])
            b.store("y", i, lhs + rhs if op == "add" else lhs * rhs)
            return replication
        return replication_over(out_dims)
    return lower


ADD = TensorOpSpec(
    "add", ("a", "b"), ("y",), _infer_broadcast,
    lambda ctx, x: {"y": np.add(x["a"], x["b"])}, _lower_binary("add"),
    summary="y = a + b, with numpy/ONNX broadcasting")

MUL = TensorOpSpec(
    "mul", ("a", "b"), ("y",), _infer_broadcast,
    lambda ctx, x: {"y": np.multiply(x["a"], x["b"])}, _lower_binary("mul"),
    summary="y = a * b, with numpy/ONNX broadcasting")


# bias_add ----------------------------------------------------------------
def _infer_bias_add(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.numeric_element()
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    ctx.expect_rank("b", 1)
    require_equal(ctx, ctx.shape("b")[0], ctx.shape("x")[axis],
                  "the length of 'b'", f"dimension {axis} of 'x'", "b")
    return {"y": BufferType(element, ctx.shape("x"))}


def _evaluate_bias_add(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x"))
    bias = x["b"].reshape((-1,) + (1,) * (x["x"].ndim - axis - 1))
    return {"y": x["x"] + bias}


def _lower_bias_add(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x"))
    dims = b.dims("x")
    inner = product(dims[axis + 1:])
    i = b.instance()
    channel = b.let("c", div(i, inner) % dims[axis] if axis > 0 else div(i, inner))
    b.store("y", i, b.load("x", i) + b.load("b", channel))
    return replication_over(dims)


BIAS_ADD = TensorOpSpec(
    "bias_add", ("x", "b"), ("y",), _infer_bias_add, _evaluate_bias_add, _lower_bias_add,
    attrs={"axis": 1}, summary="y = x + b along axis (b has x.shape[axis] elements)")


# activations -------------------------------------------------------------
def _unary(name: str, evaluate, kernel_expr, attrs=None, check_attrs=None,
           float_only=True, summary="") -> TensorOpSpec:
    """An elementwise op y = f(x); ``kernel_expr(builder, x_expr)`` is f in
    kernel IR; ``check_attrs(ctx)`` validates the attributes."""
    def infer(ctx: OpContext) -> dict[str, BufferType]:
        element = ctx.float_element() if float_only else ctx.numeric_element()
        if check_attrs:
            check_attrs(ctx)
        return {"y": BufferType(element, ctx.shape("x"))}

    def lower(b: KernelBuilder) -> tuple[Expr, ...]:
        i = b.instance()
        b.store("y", i, kernel_expr(b, b.load("x", i)))
        return replication_over(b.dims("x"))

    return TensorOpSpec(name, ("x",), ("y",), infer, lambda ctx, x: {"y": evaluate(ctx, x["x"])},
                        lower, attrs=attrs or {}, summary=summary)


def _clip_bounds(ctx: OpContext) -> tuple[float, float]:
    """(min, max); min > max is allowed and makes every result max (ONNX)."""
    return ctx.float_attr("min"), ctx.float_attr("max")


def _evaluate_clipped_relu(ctx: OpContext, x: np.ndarray) -> np.ndarray:
    low, high = _clip_bounds(ctx)
    return np.minimum(np.maximum(x, x.dtype.type(low)), x.dtype.type(high))


def _lower_clipped_relu(b: KernelBuilder, x: Expr) -> Expr:
    low, high = _clip_bounds(b.ctx)
    return minimum(maximum(x, b.const(low)), b.const(high))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


RELU = _unary("relu", lambda ctx, x: np.maximum(x, x.dtype.type(0)),
              lambda b, x: maximum(x, b.const(0)), float_only=False,
              summary="y = max(x, 0)")
CLIPPED_RELU = _unary("clipped_relu", _evaluate_clipped_relu, _lower_clipped_relu,
                      attrs={"min": 0.0, "max": 6.0}, check_attrs=_clip_bounds,
                      summary="y = min(max(x, min), max)")
TANH = _unary("tanh", lambda ctx, x: np.tanh(x), lambda b, x: Intrinsic("tanh", (x,)),
              summary="y = tanh(x)")
SIGMOID = _unary("sigmoid", lambda ctx, x: _sigmoid(x),
                 lambda b, x: b.const(1) / (b.const(1) + Intrinsic("exp", (-x,))),
                 summary="y = 1 / (1 + exp(-x))")

# prelu ---------------------------------------------------------------------
def _infer_prelu(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    shape = broadcast_shape(ctx, ("x", "slope"))
    if shape != ctx.shape("x"):
        ctx.fail(f"'slope' {ctx.types['slope']} must broadcast to x {ctx.types['x']} without "
                 "growing it", "give slope x's shape, or one that broadcasts to it", "slope")
    return {"y": BufferType(element, ctx.shape("x"))}


def _evaluate_prelu(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    return {"y": np.where(data < 0, data * x["slope"], data)}


def _lower_prelu(b: KernelBuilder) -> tuple[Expr, ...]:
    out_dims = b.dims("y")
    if b.types["slope"].shape == b.types["x"].shape:
        i = b.instance()
        slope = b.load("slope", i)
    else:
        i, indices = b.instance_indices(out_dims)
        slope = b.load_broadcast("slope", indices)
    value = b.let("v", b.load("x", i))
    # max(v, 0) + slope * min(v, 0): v where v >= 0, slope * v elsewhere.
    b.store("y", i, maximum(value, b.const(0)) + slope * minimum(value, b.const(0)))
    return replication_over(out_dims)


PRELU = TensorOpSpec(
    "prelu", ("x", "slope"), ("y",), _infer_prelu, _evaluate_prelu, _lower_prelu,
    summary="y = x where x >= 0, else slope * x (ONNX PRelu; slope broadcasts to x)")

OPS = (ADD, MUL, BIAS_ADD, RELU, CLIPPED_RELU, TANH, SIGMOID, PRELU)
