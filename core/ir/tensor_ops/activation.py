"""Fused activations: the ``activation`` attribute of conv2d and gemm.

Operator fusion (pass ``fuse-ops``) folds a relu, tanh, sigmoid or
clipped_relu that follows a conv2d or gemm into the producer, so the
activation is applied to each result as it is stored instead of in a
second pass over memory.  The attribute is one of ACTIVATIONS, or
``("clipped_relu", min, max)`` (the elementwise chain's step: ReLU6 and
every other clip); ``"none"`` (the default) applies nothing.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Intrinsic
from .spec import OpContext

ACTIVATIONS = ("none", "relu", "tanh", "sigmoid")
CLIPPED = "clipped_relu"

Activation = str | tuple
"""A name of ACTIVATIONS or ``("clipped_relu", min, max)``."""


def clip_bounds(activation: Activation) -> tuple[float, float] | None:
    """(min, max) of a clipped activation, else None."""
    if isinstance(activation, tuple) and len(activation) == 3 and activation[0] == CLIPPED \
            and all(type(v) in (int, float) for v in activation[1:]):
        return float(activation[1]), float(activation[2])
    return None


def activation_attr(ctx: OpContext) -> Activation:
    """The checked ``activation`` attribute of this use of the op."""
    value = ctx.attrs["activation"]
    if value not in ACTIVATIONS and clip_bounds(value) is None:
        ctx._bad_attr("activation", "one of " + ", ".join(f"'{a}'" for a in ACTIVATIONS)
                      + f" or ('{CLIPPED}', min, max)")
    return value


def apply_numpy(name: Activation, y: np.ndarray) -> np.ndarray:
    """``y`` with activation ``name`` applied (reference semantics)."""
    bounds = clip_bounds(name)
    if bounds is not None:
        kind = y.dtype.type
        return np.minimum(np.maximum(y, kind(bounds[0])), kind(bounds[1]))
    if name == "relu":
        return np.maximum(y, y.dtype.type(0))
    if name == "tanh":
        return np.tanh(y)
    if name == "sigmoid":
        one = y.dtype.type(1)
        return one / (one + np.exp(-y))
    return y


def apply_kernel(name: Activation, value: Expr) -> Expr:
    """``value`` with activation ``name`` applied, in kernel IR."""
    bounds = clip_bounds(name)
    if bounds is not None:
        low = Intrinsic("max", (value, Const(bounds[0], value.type)))
        return Intrinsic("min", (low, Const(bounds[1], value.type)))
    if name == "relu":
        return Intrinsic("max", (value, Const(0.0, value.type)))
    if name == "tanh":
        return Intrinsic("tanh", (value,))
    if name == "sigmoid":
        one = Const(1.0, value.type)
        return one / (one + Intrinsic("exp", (-value,)))
    return value


def channel_result(b, activation: Activation, k: Expr, total: Expr, at,
                   summand_at=None) -> Expr:
    """act(total + bias[k] + z[at]): a convolution's sum for output
    channel ``k``, stored at ``at`` of ``y`` (a flat index or a tuple of
    indices), through the node's bias (port ``b``) and residual summand
    (port ``z``, of ``y``'s shape; read at ``summand_at`` where given: z
    stored unlike y, channels_last.py), where it has them, and its
    activation; ``b`` is the lowering's KernelBuilder."""
    if "b" in b.types:
        total = total + b.load("b", k)
    return apply_kernel(activation, with_summand(b, total, at if summand_at is None
                                                 else summand_at))


def with_summand(b, total: Expr, at) -> Expr:
    """``total + z[at]`` where the node has a residual summand ``z`` (a
    tensor of ``y``'s shape that operator fusion moved in: ResNet's
    ``relu(conv(x) + identity)``), else ``total``."""
    if "z" not in b.types:
        return total
    return total + b.load("z", *(at if isinstance(at, tuple) else (at,)))
