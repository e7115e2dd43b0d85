"""batchnorm in inference mode (ONNX BatchNormalization, training_mode=0).

Ports: x [N, C, ...], scale, bias, mean, var (each [C]); y like x:
y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1).
Attribute: epsilon (default 1e-5).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Expr, Intrinsic
from ..types import BufferType
from .dims import require_equal
from .lowering import KernelBuilder, div, product, replication_over
from .spec import OpContext, TensorOpSpec

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

OPS = (BATCHNORM,)
