"""``fuse-elementwise``: chains of elementwise tensor ops become one
``elementwise`` node (hpvm.ir.tensor_ops.chain).

A node of add, mul, relu, tanh, sigmoid, clipped_relu, elementwise, or
unary or binary with a float function (chain.FLOAT_UNARY, FLOAT_BINARY), on
floats, whose result only one such node reads (and no graph output) is
merged with that reader, until no pair qualifies: ``relu(add(conv, x))``
becomes one node reading ``conv`` and ``x`` once and writing once, GELU's
five ops one node reading x twice.  The
running value must keep its shape along the chain (an add whose other
operand would broadcast the result larger ends the chain), and both nodes
must have the same target hint.  The merged node keeps the first node's
name; the results are exactly those of the separate ops.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..ir.graph import Graph, Module, Node, TensorBody
from ..ir.tensor_ops import get_op, tensor_node
from ..ir.tensor_ops.chain import FLOAT_BINARY, FLOAT_UNARY, renumbered
from .registry import register_pass
from .tensor_graph import (
    drop_edges_into, feeds_of, remove_nodes, replace_node, reroute, rewrite_until_done,
    sole_consumer,
)

UNARY_OPS = ("relu", "tanh", "sigmoid")
CHAIN_OPS = ("add", "mul", "clipped_relu", "elementwise", "unary", "binary") + UNARY_OPS
COMMUTATIVE = ("add", "mul", "max", "min")


class Chain(NamedTuple):
    """One node seen as a chain: ``ports`` are its input ports in chain
    order (the running value's first), ``steps`` its steps numbered over
    ``ports``."""

    ports: tuple[str, ...]
    steps: tuple[tuple, ...]


@register_pass("fuse-elementwise")
def fuse_elementwise(module: Module) -> Module:
    """Merge chains of elementwise tensor ops into single elementwise nodes."""
    graphs = {name: rewrite_until_done(graph, _fuse_after)
              for name, graph in module.graphs.items()}
    return dataclasses.replace(module, graphs=graphs)


def _fuse_after(graph: Graph, node: Node) -> Graph | None:
    first = _as_chain(node, None)
    edge = sole_consumer(graph, node.name, "y") if first is not None else None
    if edge is None:
        return None
    consumer = graph.node(edge.dst_node)
    second = _as_chain(consumer, edge.dst_port) if consumer.hint == node.hint else None
    if second is None:
        return None
    return _merge(graph, node, first, consumer, second)


def _as_chain(node: Node, value_port: str | None) -> Chain | None:
    """``node`` as a chain whose running value enters at ``value_port``
    (None: wherever the result's shape allows), or None if it is not one."""
    body = node.body
    if not isinstance(body, TensorBody) or body.op not in CHAIN_OPS:
        return None
    types = {p.name: p.type for p in body.params}
    if not types["y"].element.is_float:
        return None
    if body.op == "elementwise":
        ports = tuple(sorted((p for p in types if p != "y"), key=lambda p: int(p[1:])))
        return Chain(ports, tuple(body.attrs["steps"])) if value_port in (None, "x0") else None
    if body.op in ("add", "mul", "binary"):
        fn = body.attrs.get("fn", body.op)
        if body.op == "binary" and fn not in FLOAT_BINARY:
            return None
        candidates = [value_port] if value_port else ["a", "b"]
        for port in candidates:
            if types[port].shape == types["y"].shape:
                other = "b" if port == "a" else "a"
                if body.op != "binary":
                    return Chain((port, other), ((body.op, 1),))
                kind = "binary" if port == "a" or fn in COMMUTATIVE else "rbinary"
                return Chain((port, other), ((kind, fn, 1),))
        return None
    if body.op == "unary":
        fn = body.attrs.get("fn")
        return Chain(("x",), (("unary", fn),)) if fn in FLOAT_UNARY else None
    if body.op == "clipped_relu":
        attrs = get_op("clipped_relu").resolve_attrs(body.attrs)
        return Chain(("x",), (("clipped_relu", float(attrs["min"]), float(attrs["max"])),))
    return Chain(("x",), ((body.op,),))


def _merge(graph: Graph, first_node: Node, first: Chain, second_node: Node,
           second: Chain) -> Graph:
    offset = len(first.ports) - 1
    steps = first.steps + tuple(renumbered(s, offset) for s in second.steps)
    sources = [(first_node.name, p) for p in first.ports] + [
        (second_node.name, p) for p in second.ports[1:]]
    input_types = {f"x{i}": _port_type(first_node, second_node, src) for i, src in
                   enumerate(sources)}
    fused = tensor_node(first_node.name, "elementwise", input_types,
                        {"steps": steps}, hint=first_node.hint)
    fused = dataclasses.replace(fused, attributes=first_node.attributes)
    edges, bind_ins = feeds_of(graph, {f"x{i}": source for i, source in enumerate(sources)},
                               fused.name)
    graph = drop_edges_into(drop_edges_into(graph, first_node.name), second_node.name)
    graph = replace_node(graph, fused)
    graph = dataclasses.replace(graph, edges=graph.edges + edges,
                                bind_ins=graph.bind_ins + bind_ins)
    graph = reroute(graph, (second_node.name, "y"), (fused.name, "y"))
    return remove_nodes(graph, {second_node.name})


def _port_type(first_node: Node, second_node: Node, source: tuple[str, str]):
    node = first_node if source[0] == first_node.name else second_node
    return next(p.type for p in node.body.params if p.name == source[1])
