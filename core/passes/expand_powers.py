"""``expand-powers``: ``pow(x, 2)`` and ``pow(x, 3)`` as products of x.

A ``binary`` pow whose exponent is a constant with every element 2 (or
every element 3), on a base of the result's shape, becomes the
``elementwise`` chain ``x * x`` (or ``(x * x) * x``) reading x twice.
x^2 is then exactly what pow computes (one rounding of the square); x^3
takes two roundings, within 1 ulp of the exact cube as pow's results
are.  A product costs a fraction of a pow, and as a chain it fuses with
the elementwise ops around it (fuse-elementwise), where pow, a scalar
function, stays a kernel of its own: RMSNorm's ``x.pow(2)`` and GPT-2's
GELU, ``0.044715 * pow(x, 3)``, are how models are written.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.graph import Graph, Module, Node, TensorBody
from ..ir.tensor_ops import tensor_node
from .registry import register_pass
from .tensor_graph import (
    constant_input, drop_edges_into, feeds_of, replace_node, rewrite_each_graph,
    tensor_inputs,
)

EXPANDED = {2.0: 1, 3.0: 2}
"""Exponent -> multiplications by x."""


@register_pass("expand-powers")
def expand_powers(module: Module) -> Module:
    """Write pow(x, 2) and pow(x, 3) with a constant exponent as products."""
    return rewrite_each_graph(module, _expanded)


def _expanded(graph: Graph, node: Node) -> Graph | None:
    body = node.body
    if not isinstance(body, TensorBody) or body.op != "binary" or body.attrs.get("fn") != "pow":
        return None
    base = tensor_inputs(node)["a"]
    result = next(p.type for p in body.params if p.name == "y")
    exponent = constant_input(graph, node.name, "b")
    if exponent is None or base.shape != result.shape or not result.element.is_float:
        return None
    values = np.unique(exponent)
    if values.size != 1 or float(values[0]) not in EXPANDED:
        return None
    steps = (("mul", 1),) * EXPANDED[float(values[0])]
    product = dataclasses.replace(
        tensor_node(node.name, "elementwise", {"x0": base, "x1": base}, {"steps": steps},
                    node.hint), attributes=node.attributes)
    edges, bind_ins = feeds_of(graph, {"x0": (node.name, "a"), "x1": (node.name, "a")}, node.name)
    graph = replace_node(drop_edges_into(graph, node.name), product)
    return dataclasses.replace(graph, edges=graph.edges + edges,
                               bind_ins=graph.bind_ins + bind_ins)
