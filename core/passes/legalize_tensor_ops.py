"""``legalize-tensor-ops``: replace tensor-op nodes by kernel nodes.

Each TensorBody node becomes a KernelBody node running the op's reference
lowering (``TENSOR_OPS[op].lower``), with the replication the lowering
gives; its ports keep their names, so edges and bindings are unchanged.
``keep`` lists ops left as tensor nodes, for targets that run them
natively.  A node of reduced precision (tensor_ops/precision.py) gets a
kernel rounding its loads and stores.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..errors import Diagnostic, Location
from ..ir.graph import Graph, KernelBody, Module, Node, TensorBody
from ..ir.tensor_ops import TENSOR_OPS, get_op
from ..ir.tensor_ops.int8 import SCALES_ATTRIBUTE, node_scales, quantize_kernel
from ..ir.tensor_ops.precision import (
    LOWERED_PRECISIONS, PRECISION_ATTRIBUTE, node_precision, round_kernel,
)
from .errors import PassError
from .module_tools import map_nodes
from .names import unique_name
from .registry import Option, register_pass


@register_pass("legalize-tensor-ops", options=[
    Option("keep", list, (), "tensor ops to keep as tensor nodes (e.g. conv2d,relu)")])
def legalize_tensor_ops(module: Module, keep: tuple[str, ...]) -> Module:
    """Lower tensor-op nodes to kernel nodes with the ops' reference kernels."""
    unknown = [op for op in keep if op not in TENSOR_OPS]
    if unknown:
        raise PassError(Diagnostic(
            Location(), f"legalize-tensor-ops: unknown tensor op(s) in 'keep': "
            f"{', '.join(unknown)}", f"known ops: {', '.join(sorted(TENSOR_OPS))}"))
    return lower_tensor_nodes(module, lambda node: node.body.op not in keep)


def lower_tensor_nodes(module: Module, chosen: Callable[[Node], bool],
                       tiles=None) -> Module:
    """``module`` with the tensor-op nodes ``chosen`` picks lowered to
    kernel nodes (a target that runs some nodes of an op itself), their
    register tiles shaped by ``tiles`` (tensor_ops.lowering.RegisterTiles;
    None: the default).  A node in a precision kernels lack (tf32) stays a
    tensor node: placement gives it only to targets that run it natively."""
    functions = dict(module.functions)

    def lower(graph: Graph, node: Node) -> Node:
        if not isinstance(node.body, TensorBody) or not chosen(node):
            return node
        precision = node_precision(node)
        if precision not in LOWERED_PRECISIONS:
            return node
        function, replication = get_op(node.body.op).lower(node.name, node.body, tiles)
        if precision == "fp16":
            function = round_kernel(function)
        elif precision == "int8":
            function = quantize_kernel(function, node_scales(node))
        name = unique_name(function.name, functions)
        functions[name] = dataclasses.replace(function, name=name)
        attributes = {k: v for k, v in node.attributes.items()
                      if k not in (PRECISION_ATTRIBUTE, SCALES_ATTRIBUTE)}
        return dataclasses.replace(node, body=KernelBody(name), replication=tuple(replication),
                                   attributes=attributes)

    lowered = map_nodes(module, lower)
    return dataclasses.replace(lowered, functions=functions)
