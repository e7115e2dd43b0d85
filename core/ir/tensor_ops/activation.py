"""Fused activations: the ``activation`` attribute of conv2d and gemm.

Operator fusion (pass ``fuse-ops``) folds a relu, tanh or sigmoid that
follows a conv2d or gemm into the producer, so the activation is applied to
each result as it is stored instead of in a second pass over memory.
``"none"`` (the default) applies nothing.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Intrinsic
from .spec import OpContext

ACTIVATIONS = ("none", "relu", "tanh", "sigmoid")


def activation_attr(ctx: OpContext) -> str:
    """The checked ``activation`` attribute of this use of the op."""
    value = ctx.attrs["activation"]
    if value not in ACTIVATIONS:
        ctx._bad_attr("activation", "one of " + ", ".join(f"'{a}'" for a in ACTIVATIONS))
    return value


def apply_numpy(name: str, y: np.ndarray) -> np.ndarray:
    """``y`` with activation ``name`` applied (reference semantics)."""
    if name == "relu":
        return np.maximum(y, y.dtype.type(0))
    if name == "tanh":
        return np.tanh(y)
    if name == "sigmoid":
        one = y.dtype.type(1)
        return one / (one + np.exp(-y))
    return y


def apply_kernel(name: str, value: Expr) -> Expr:
    """``value`` with activation ``name`` applied, in kernel IR."""
    if name == "relu":
        return Intrinsic("max", (value, Const(0.0, value.type)))
    if name == "tanh":
        return Intrinsic("tanh", (value,))
    if name == "sigmoid":
        one = Const(1.0, value.type)
        return one / (one + Intrinsic("exp", (-value,)))
    return value
