"""``fold-tensor-constants``: evaluate tensor ops whose inputs are all
constants.

A tensor-op node fed only by ConstantBody nodes (a reshape of weights, a
transpose folded by an exporter into arithmetic on initializers, a scaled
bias ...) is replaced by a ConstantBody node holding the op's ``evaluate``
result; readers of its output read the constant's ``value`` port.
Constants nothing reads any more are removed.  Folding repeats until no
node qualifies, so chains fold completely.  ``max_elements`` bounds the
size of a folded result (larger results stay as ops).
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import ConstantBody, Graph, Module, Node, TensorBody
from ..ir.tensor_ops import get_op
from ..ir.types import BufferType, scalar_type_of_dtype
from .registry import Option, register_pass
from .tensor_graph import (
    constant_input, reroute, rewrite_dropping_constants,
)


@register_pass("fold-tensor-constants", options=[
    Option("max_elements", int, 1 << 24, "largest result to fold (elements)")])
def fold_tensor_constants(module: Module, max_elements: int) -> Module:
    """Replace tensor ops on constants by constants holding their results."""
    graphs = {name: _fold_graph(graph, max_elements) for name, graph in module.graphs.items()}
    return dataclasses.replace(module, graphs=graphs)


def _fold_graph(graph: Graph, max_elements: int) -> Graph:
    def fold(graph: Graph, node: Node) -> Graph | None:
        folded = _folded(graph, node, max_elements)
        return None if folded is None else _replace_by_constant(graph, node, folded)

    return rewrite_dropping_constants(graph, fold)


def _folded(graph: Graph, node: Node, max_elements: int) -> Node | None:
    body = node.body
    if not isinstance(body, TensorBody) or node.hint is not None:
        return None
    inputs = {}
    for param in body.params:
        if param.direction != "in":
            continue
        array = constant_input(graph, node.name, param.name)
        if array is None:
            return None
        inputs[param.name] = array
    spec = get_op(body.op, node.name)
    if len(spec.outputs) != 1:
        return None
    result = spec.evaluate(inputs, body.attrs, node=node.name)[spec.outputs[0]]
    if result.size > max_elements:
        return None
    element = scalar_type_of_dtype(result.dtype)
    data = result.copy()
    return Node(node.name, ConstantBody(BufferType(element, tuple(result.shape)), data),
                attributes=node.attributes)


def _replace_by_constant(graph: Graph, node: Node, constant: Node) -> Graph:
    output = next(p.name for p in node.body.params if p.direction == "out")
    graph = dataclasses.replace(
        graph, nodes=tuple(constant if n.name == node.name else n for n in graph.nodes),
        edges=tuple(e for e in graph.edges if e.dst_node != node.name))
    return reroute(graph, (node.name, output), (node.name, "value"))
