"""``fold-transposes``: layout changes moved out of the way and cancelled.

Channels-last models (Keras, TensorFlow exports) reach the NCHW tensor ops
through a transpose before and after every convolution and pooling.  This
pass moves each transpose downstream past elementwise ops (relu, tanh,
sigmoid, clipped_relu, and add, mul or elementwise whose other operands
are constants, whose constants it permutes, or values transposed the same
way) and merges two transposes in a row into one, or into none when they
undo each other.  ``conv -> transpose -> add bias -> relu -> transpose ->
max_pool`` becomes ``conv -> add bias -> relu -> max_pool``, which fuse-ops
then fuses.  A transpose before a flatten into a matrix product by
constant weights (a channels-last Flatten before a Dense layer) goes too:
the weights' rows are reordered instead.  A transpose moves only where
its result has one reader and is no graph output; the results are
exactly the same.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.graph import ConstantBody, Edge, Graph, Module, Node, TensorBody
from ..ir.tensor_ops import tensor_node
from ..ir.types import BufferType, scalar_type_of_dtype
from .names import unique_name
from .registry import register_pass
from .tensor_graph import (
    add_edge, constant_input, consumers, drop_edges_into, is_bound_out, producer, remove_nodes,
    replace_node, reroute, rewrite_each_graph, sole_consumer,
)

ELEMENTWISE = ("relu", "tanh", "sigmoid", "clipped_relu", "add", "mul", "elementwise")


@register_pass("fold-transposes")
def fold_transposes(module: Module) -> Module:
    """Sink transposes past elementwise ops and cancel inverse pairs."""
    return rewrite_each_graph(module, _rewrite)


def _perm(node: Node) -> tuple[int, ...] | None:
    """The permutation of a transpose node, else None."""
    body = node.body
    if not isinstance(body, TensorBody) or body.op != "transpose":
        return None
    rank = len(_type(node, "x").shape)
    return tuple(body.attrs.get("perm") or reversed(range(rank)))


def _type(node: Node, port: str) -> BufferType:
    return next(p.type for p in node.body.params if p.name == port)


def _rebuilt(node: Node, op: str, types: dict, attrs: dict) -> Node:
    """A tensor node named like ``node``, with its hint and attributes,
    running ``op`` on inputs of ``types``."""
    return dataclasses.replace(tensor_node(node.name, op, types, attrs, node.hint),
                               attributes=node.attributes)


def _constant(name: str, data: np.ndarray) -> Node:
    return Node(name, ConstantBody(BufferType(scalar_type_of_dtype(data.dtype), data.shape),
                                   data))


def _rewrite(graph: Graph, node: Node) -> Graph | None:
    perm = _perm(node)
    if perm is None:
        return None
    if perm == tuple(range(len(perm))):
        return _bypassed(graph, node)
    readers = [graph.node(e.dst_node) for e in consumers(graph, node.name, "y")]
    second = next((r for r in readers if _perm(r) is not None), None)
    if second is not None:   # any reader that transposes again (others keep this one)
        return _merged(graph, node, perm, second)
    edge = sole_consumer(graph, node.name, "y")
    if edge is None:
        return None
    reader = graph.node(edge.dst_node)
    if isinstance(reader.body, TensorBody) and reader.body.op in ELEMENTWISE \
            and reader.hint == node.hint:
        return _sunk(graph, node, perm, reader, edge.dst_port)
    if isinstance(reader.body, TensorBody) and reader.body.op in ("flatten", "reshape"):
        return _flattened_into_weights(graph, node, perm, reader)
    return None


def _merged(graph: Graph, first: Node, perm: tuple[int, ...], second: Node) -> Graph:
    """``second(first(x))`` as one transpose of ``x``, or as ``x`` itself;
    ``first`` goes once nothing else reads it."""
    composed = tuple(perm[i] for i in _perm(second))
    source = _feed(graph, first.name)
    if composed == tuple(range(len(composed))) and isinstance(source, Edge):
        graph = reroute(graph, (second.name, "y"), (source.src_node, source.src_port))
        return _without_unread(remove_nodes(graph, {second.name}), first.name)
    merged = _rebuilt(second, "transpose", {"x": _type(first, "x")}, {"perm": composed})
    graph = drop_edges_into(replace_node(graph, merged), second.name)
    return _without_unread(_connect(graph, source, merged.name, "x"), first.name)


def _flattened_into_weights(graph: Graph, transpose: Node, perm: tuple[int, ...],
                            flatten: Node) -> Graph | None:
    """``product(flatten(transpose(x)), W)`` as ``product(flatten(x), W')``
    with the rows of the constant W reordered to match (a channels-last
    Flatten before a Dense layer); None unless that is the pattern."""
    x_type = _type(transpose, "x")
    flat = _type(flatten, "y").shape
    if perm[0] != 0 or not all(isinstance(d, int) for d in x_type.shape[1:]) or \
            len(flat) != 2 or flat[1] != int(np.prod(x_type.shape[1:])):
        return None
    edge = sole_consumer(graph, flatten.name, "y")
    product = graph.node(edge.dst_node) if edge is not None and edge.dst_port == "a" else None
    weights = constant_input(graph, product.name, "b") if product is not None else None
    body = product.body if product is not None else None
    if weights is None or weights.ndim != 2 or body.op not in ("matmul", "gemm") or \
            body.attrs.get("trans_a"):
        return None
    # transposed element p of a flattened row is element order[p] of x's
    order = np.transpose(np.arange(flat[1]).reshape(x_type.shape[1:]),
                         [axis - 1 for axis in perm[1:]]).reshape(-1)
    reordered = np.empty_like(weights)
    if body.attrs.get("trans_b"):
        reordered[:, order] = weights
    else:
        reordered[order] = weights
    constant = _constant(unique_name(f"{product.name}_b", {n.name for n in graph.nodes}),
                         reordered)
    graph = dataclasses.replace(graph, nodes=graph.nodes + (constant,), edges=tuple(
        e for e in graph.edges if (e.dst_node, e.dst_port) != (product.name, "b")))
    graph = _connect(graph, (constant.name, "value"), product.name, "b")
    moved = _rebuilt(flatten, flatten.body.op, {"x": x_type}, flatten.body.attrs)
    graph = drop_edges_into(replace_node(graph, moved), flatten.name)
    graph = _connect(graph, _feed(graph, transpose.name), flatten.name, "x")
    return remove_nodes(graph, {transpose.name})


def _bypassed(graph: Graph, node: Node) -> Graph | None:
    """``graph`` with an identity transpose's readers reading its input
    (None where its result is a graph output fed by a graph input)."""
    source = _feed(graph, node.name)
    if isinstance(source, Edge):
        graph = reroute(graph, (node.name, "y"), (source.src_node, source.src_port))
        return remove_nodes(graph, {node.name})
    if is_bound_out(graph, node.name, "y"):
        return None
    bindings = tuple(dataclasses.replace(source, dst_node=e.dst_node, dst_port=e.dst_port)
                     for e in consumers(graph, node.name, "y"))
    graph = dataclasses.replace(graph, bind_ins=graph.bind_ins + bindings)
    return remove_nodes(graph, {node.name})


def _without_unread(graph: Graph, name: str) -> Graph:
    """``graph`` without node ``name`` if nothing reads it any more."""
    if consumers(graph, name, "y") or is_bound_out(graph, name, "y"):
        return graph
    return remove_nodes(graph, {name})


def _sunk(graph: Graph, transpose: Node, perm: tuple[int, ...], op: Node,
          port: str) -> Graph | None:
    """``op(transpose(x), ...)`` as ``transpose(op(x, ...))``, its other
    operands permuted back (constants) or untransposed (values transposed
    the same way); None when an operand is neither."""
    inverse = tuple(int(i) for i in np.argsort(perm))
    rank = len(perm)
    if len(_type(op, "y").shape) != rank:
        return None
    feeds: dict[str, object] = {}   # port -> what feeds it in op' (see _connect)
    taken = {n.name for n in graph.nodes}
    new_constants: list[Node] = []
    removed = [transpose.name]
    types = {}
    for param in op.body.params:
        if param.direction != "in":
            continue
        if param.name == port:
            feeds[param.name] = _feed(graph, transpose.name)
            types[param.name] = _type(transpose, "x")
            continue
        constant = constant_input(graph, op.name, param.name)
        if constant is not None:
            full = constant.reshape((1,) * (rank - constant.ndim) + constant.shape)
            node = _constant(unique_name(f"{op.name}_{param.name}", taken),
                             np.ascontiguousarray(np.transpose(full, inverse)))
            taken.add(node.name)
            new_constants.append(node)
            feeds[param.name] = (node.name, "value")
            types[param.name] = node.body.type
            continue
        other = producer(graph, op.name, param.name)
        twin = graph.node(other.src_node) if other is not None else None
        if twin is None or _perm(twin) != perm or \
                sole_consumer(graph, twin.name, "y") is None or twin.hint != transpose.hint:
            return None
        feeds[param.name] = _feed(graph, twin.name)
        types[param.name] = _type(twin, "x")
        removed.append(twin.name)
    moved = _rebuilt(op, op.body.op, types, op.body.attrs)
    after = _transpose_node(unique_name(f"{op.name}_transposed", taken), _type(moved, "y"),
                            perm, transpose.hint)
    graph = dataclasses.replace(graph, nodes=graph.nodes + tuple(new_constants))
    graph = reroute(graph, (op.name, "y"), (after.name, "y"))
    graph = drop_edges_into(replace_node(graph, moved), op.name)
    graph = dataclasses.replace(graph, nodes=graph.nodes + (after,))
    for port_name, feed in feeds.items():
        graph = _connect(graph, feed, op.name, port_name)
    graph = add_edge(graph, Edge(op.name, "y", after.name, "x"))
    return remove_nodes(graph, set(removed))


def _feed(graph: Graph, node: str):
    """What feeds ``node.x``: an edge or a graph input's binding."""
    return producer(graph, node, "x") or next(
        b for b in graph.bind_ins if (b.dst_node, b.dst_port) == (node, "x"))


def _connect(graph: Graph, feed, node: str, port: str) -> Graph:
    """``graph`` with ``feed`` (an edge, a binding, or a constant's
    (node, port)) also feeding ``node.port``."""
    if isinstance(feed, tuple):
        return add_edge(graph, Edge(feed[0], feed[1], node, port))
    moved = dataclasses.replace(feed, dst_node=node, dst_port=port)
    if isinstance(feed, Edge):
        return add_edge(graph, moved)
    return dataclasses.replace(graph, bind_ins=graph.bind_ins + (moved,))


def _transpose_node(name: str, x_type: BufferType, perm: tuple[int, ...], hint) -> Node:
    return tensor_node(name, "transpose", {"x": x_type}, {"perm": perm}, hint)
