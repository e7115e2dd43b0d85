"""batchnorm in inference mode (ONNX BatchNormalization, training_mode=0),
and lrn, local response normalisation across channels (ONNX LRN).

batchnorm: ports x [N, C, ...], scale, bias, mean, var (each [C]); y like
x: y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis
1).  Attribute: epsilon (default 1e-5).

lrn: y[n, c, ...] = x[n, c, ...] / (bias + alpha / size * sum of x[n, k,
...]^2 over channels k from c - floor((size - 1) / 2) to c + ceil((size -
1) / 2), clipped to [0, C - 1]) ** beta.  Attributes: size (required),
alpha (1e-4), beta (0.75), bias (1.0).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Intrinsic
from ..types import I64, BufferType
from .dims import require_equal
from .lowering import KernelBuilder, div, maximum, minimum, mul, product, replication_over
from .spec import REQUIRED, OpContext, TensorOpSpec

_PARAMETERS = ("scale", "bias", "mean", "var")


def _infer_batchnorm(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    ctx.float_attr("epsilon")
    if ctx.rank("x") < 2:
        ctx.fail(f"input 'x' must be [N, C, ...] (rank 2 or more), got {ctx.types['x']}",
                 "pass a batch of channels", "x")
    channels = ctx.shape("x")[1]
    for port in _PARAMETERS:
        ctx.expect_rank(port, 1)
        require_equal(ctx, ctx.shape(port)[0], channels, f"the length of '{port}'",
                      "the channel count of 'x' (dimension 1)", port)
    return {"y": BufferType(element, ctx.shape("x"))}


def _evaluate_batchnorm(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    kind = data.dtype.type
    shape = (-1,) + (1,) * (data.ndim - 2)
    scale, bias, mean, var = (x[p].reshape(shape) for p in _PARAMETERS)
    deviation = np.sqrt(var + kind(ctx.float_attr("epsilon")))
    return {"y": (data - mean) / deviation * scale + bias}


def _lower_batchnorm(b: KernelBuilder) -> tuple[Expr, ...]:
    dims = b.dims("x")
    i = b.instance()
    inner = product(dims[2:])
    channel = b.let("c", div(i, inner) % dims[1])
    deviation = Intrinsic("sqrt", (b.load("var", channel) + b.const(b.ctx.float_attr("epsilon")),))
    normalized = (b.load("x", i) - b.load("mean", channel)) / deviation
    b.store("y", i, normalized * b.load("scale", channel) + b.load("bias", channel))
    return replication_over(dims)


BATCHNORM = TensorOpSpec(
    "batchnorm", ("x",) + _PARAMETERS, ("y",), _infer_batchnorm, _evaluate_batchnorm,
    _lower_batchnorm, attrs={"epsilon": 1e-5},
    summary="batch normalisation, inference mode (ONNX BatchNormalization)")

def _lrn_window(ctx: OpContext) -> tuple[int, int]:
    """Channels before and after the centre that the sum covers."""
    size = ctx.int_attr("size")
    if size < 1:
        ctx._bad_attr("size", "a positive integer")
    return (size - 1) // 2, size // 2


def _infer_lrn(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    _lrn_window(ctx)
    for name in ("alpha", "beta", "bias"):
        ctx.float_attr(name)
    if ctx.rank("x") < 3:
        ctx.fail(f"input 'x' must be [N, C, D1, ...] (rank 3 or more), got {ctx.types['x']}",
                 "pass a batch of feature maps", "x")
    return {"y": BufferType(element, ctx.shape("x"))}


def _evaluate_lrn(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    kind = data.dtype.type
    before, after = _lrn_window(ctx)
    squares = np.pad(data * data, [(0, 0), (before, after)] + [(0, 0)] * (data.ndim - 2))
    window = sum(squares[:, k:k + data.shape[1]] for k in range(before + after + 1))
    size = ctx.int_attr("size")
    scale = kind(ctx.float_attr("bias")) + kind(ctx.float_attr("alpha")) / kind(size) * window
    return {"y": data / scale ** kind(ctx.float_attr("beta"))}


def _lower_lrn(b: KernelBuilder) -> tuple[Expr, ...]:
    dims = b.dims("x")
    before, after = _lrn_window(b.ctx)
    i = b.instance()
    inner = product(dims[2:])
    channel = b.let("c", div(i, inner) % dims[1])
    base = b.let("base", i - mul(channel, inner))
    first = b.let("first", maximum(channel - before, Const(0, I64)))
    last = b.let("last", minimum(channel + (after + 1), dims[1]))
    total = b.let("total", b.const(0))
    with b.loop("k", last, start=first) as k:
        value = b.load("x", base + mul(k, inner))
        b.assign(total, total + value * value)
    attr = b.ctx.float_attr
    scale = b.const(attr("bias")) + b.const(attr("alpha") / b.ctx.int_attr("size")) * total
    b.store("y", i, b.load("x", i) / Intrinsic("pow", (scale, b.const(attr("beta")))))
    return replication_over(dims)


LRN = TensorOpSpec(
    "lrn", ("x",), ("y",), _infer_lrn, _evaluate_lrn, _lower_lrn,
    attrs={"size": REQUIRED, "alpha": 1e-4, "beta": 0.75, "bias": 1.0},
    summary="local response normalisation across channels (ONNX LRN)")

OPS = (BATCHNORM, LRN)
