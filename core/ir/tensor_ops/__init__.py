"""Tensor ops (the ApproxHPVM half of the IR): conv2d, matmul, gemm, add,
mul, bias_add, relu, clipped_relu, tanh, sigmoid, prelu, max_pool, avg_pool,
softmax, batchnorm, lrn, reshape, flatten, concat, slice, transpose, pad,
scatter, sort,
elementwise (a fused chain of elementwise ops, chain.py), rowwise (functions
and reductions along rows, rowwise.py), attention (a rowwise program between
two matrix products, attention.py) and
perforation_fill (perforation.py).

``TENSOR_OPS`` maps op names to their :class:`TensorOpSpec` (ports,
attribute defaults, ``infer`` / ``evaluate`` / ``lower``).  ``tensor_node``
builds a graph node running an op::

    node = tensor_node("conv1", "conv2d",
                       {"x": BufferType(F32, ("N", 3, 32, 32)),
                        "w": BufferType(F32, (16, 3, 3, 3))},
                       {"padding": (1, 1, 1, 1)})
"""
from __future__ import annotations

from typing import Mapping

from ...errors import Diagnostic, Location, VerificationError
from ..graph import Node, TensorBody
from ..parameter import Parameter
from ..types import BufferType
from . import (
    attention, chain, conv, elementwise, indexing, linear, norm, pad, perforation, pointwise,
    pool, reduce, rowwise, scatter, shape_ops, softmax, sort,
)
from .spec import REQUIRED, OpContext, TensorOpSpec, normalize_attr

TENSOR_OPS: dict[str, TensorOpSpec] = {
    spec.name: spec
    for family in (conv, linear, elementwise, pointwise, reduce, indexing, scatter, sort,
                   pool, softmax, norm, shape_ops, pad, chain, rowwise, attention, perforation)
    for spec in family.OPS
}


def get_op(name: str, node: str | None = None) -> TensorOpSpec:
    """The spec of op ``name``; VerificationError listing the ops if unknown."""
    try:
        return TENSOR_OPS[name]
    except KeyError:
        known = ", ".join(sorted(TENSOR_OPS))
        raise VerificationError(Diagnostic(
            Location(node=node), f"unknown tensor op '{name}'",
            f"use one of: {known}")) from None


def tensor_node(name: str, op: str, input_types: Mapping[str, BufferType],
                attrs: Mapping | None = None, hint: str | None = None) -> Node:
    """A leaf node running ``op`` on inputs of ``input_types``; its out ports
    get the types ``infer`` gives.  ``attrs`` are stored as given
    (normalised: lists become tuples); defaults stay implicit."""
    spec = get_op(op, name)
    outputs = spec.infer(input_types, attrs, node=name)
    inputs = spec.context(input_types, attrs, name).types
    params = tuple(Parameter(port, t, "in") for port, t in inputs.items()) + tuple(
        Parameter(port, t, "out") for port, t in outputs.items())
    stored = {key: normalize_attr(value) for key, value in (attrs or {}).items()}
    return Node(name, TensorBody(op, params, stored), hint=hint)


__all__ = ["TENSOR_OPS", "REQUIRED", "OpContext", "TensorOpSpec", "get_op", "tensor_node"]
