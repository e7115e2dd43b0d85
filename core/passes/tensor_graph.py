"""Graph queries and rewrites shared by the tensor passes (fuse-ops,
fold-tensor-constants, fuse-elementwise): who consumes a port, which
constant feeds a port, and rebuilding a graph with nodes replaced, removed
or with a port renamed."""
from __future__ import annotations

import dataclasses

import numpy as np

from typing import Callable

from ..ir.graph import BindOut, ConstantBody, Edge, Graph, Module, Node, TensorBody


def consumers(graph: Graph, node: str, port: str) -> list[Edge]:
    return [e for e in graph.edges if e.src_node == node and e.src_port == port]


def is_bound_out(graph: Graph, node: str, port: str) -> bool:
    return any(b.src_node == node and b.src_port == port for b in graph.bind_outs)


def sole_consumer(graph: Graph, node: str, port: str) -> Edge | None:
    """The one edge reading ``node.port`` if nothing else reads it."""
    edges = consumers(graph, node, port)
    if len(edges) != 1 or is_bound_out(graph, node, port):
        return None
    return edges[0]


def producer(graph: Graph, node: str, port: str) -> Edge | None:
    """The edge feeding ``node.port`` (None: a graph input or nothing)."""
    return next((e for e in graph.edges if e.dst_node == node and e.dst_port == port), None)


def constant_input(graph: Graph, node: str, port: str) -> np.ndarray | None:
    """The array a ConstantBody node feeds into ``node.port``, if one does."""
    edge = producer(graph, node, port)
    if edge is None:
        return None
    source = graph.node(edge.src_node)
    return source.body.data if isinstance(source.body, ConstantBody) else None


def feeds_of(graph: Graph, sources: dict[str, tuple[str, str]], node: str):
    """(edges, bind-ins) feeding each port ``p`` of ``node`` from whatever
    fed ``sources[p]`` (a node and port)."""
    edges, bind_ins = [], []
    for target, (source, port) in sources.items():
        edge = producer(graph, source, port)
        if edge is not None:
            edges.append(dataclasses.replace(edge, dst_node=node, dst_port=target))
        bind_ins.extend(dataclasses.replace(b, dst_node=node, dst_port=target)
                        for b in graph.bind_ins if (b.dst_node, b.dst_port) == (source, port))
    return tuple(edges), tuple(bind_ins)


def port_type(node_or_function, port: str):
    """The type of port ``port`` of a tensor node or a kernel function."""
    params = node_or_function.body.params if isinstance(node_or_function, Node) \
        else node_or_function.params
    return next(p.type for p in params if p.name == port)


def tensor_inputs(node: Node) -> dict[str, object]:
    """Input port -> BufferType of a tensor node."""
    assert isinstance(node.body, TensorBody)
    return {p.name: p.type for p in node.body.params if p.direction == "in"}


def reroute(graph: Graph, old: tuple[str, str], new: tuple[str, str]) -> Graph:
    """Edges and bind-outs reading ``old`` (node, port) read ``new``."""
    def move(item):
        if (item.src_node, item.src_port) == old:
            return dataclasses.replace(item, src_node=new[0], src_port=new[1])
        return item
    return dataclasses.replace(graph, edges=tuple(move(e) for e in graph.edges),
                               bind_outs=tuple(move(b) for b in graph.bind_outs))


def replace_node(graph: Graph, node: Node) -> Graph:
    nodes = tuple(node if n.name == node.name else n for n in graph.nodes)
    return dataclasses.replace(graph, nodes=nodes)


def drop_edges_into(graph: Graph, node: str) -> Graph:
    return dataclasses.replace(graph, edges=tuple(e for e in graph.edges if e.dst_node != node),
                               bind_ins=tuple(b for b in graph.bind_ins if b.dst_node != node))


def remove_nodes(graph: Graph, names: set[str]) -> Graph:
    """``graph`` without nodes ``names`` and every edge or binding touching them."""
    return dataclasses.replace(
        graph, nodes=tuple(n for n in graph.nodes if n.name not in names),
        edges=tuple(e for e in graph.edges if e.src_node not in names and e.dst_node not in names),
        bind_ins=tuple(b for b in graph.bind_ins if b.dst_node not in names),
        bind_outs=tuple(b for b in graph.bind_outs if b.src_node not in names))


def unused_constants(graph: Graph) -> set[str]:
    """ConstantBody nodes nothing reads."""
    read = {e.src_node for e in graph.edges} | {b.src_node for b in graph.bind_outs}
    return {n.name for n in graph.nodes if isinstance(n.body, ConstantBody) and n.name not in read}


def add_edge(graph: Graph, edge: Edge) -> Graph:
    return dataclasses.replace(graph, edges=graph.edges + (edge,))


def bind_outs_of(graph: Graph, node: str) -> list[BindOut]:
    return [b for b in graph.bind_outs if b.src_node == node]


def rewrite_until_done(graph: Graph, rewrite: Callable[[Graph, Node], Graph | None]) -> Graph:
    """Apply ``rewrite(graph, node)`` (a new graph, or None where nothing
    matches at ``node``) to the first node it matches, again and again,
    until it matches none."""
    while True:
        for node in graph.nodes:
            rewritten = rewrite(graph, node)
            if rewritten is not None:
                graph = rewritten
                break
        else:
            return graph


def rewrite_each_graph(module: Module,
                       rewrite: Callable[[Graph, Node], Graph | None]) -> Module:
    """``module`` with ``rewrite_dropping_constants`` applied to every graph."""
    return dataclasses.replace(module, graphs={
        name: rewrite_dropping_constants(graph, rewrite) for name, graph in module.graphs.items()})


def rewrite_dropping_constants(graph: Graph,
                               rewrite: Callable[[Graph, Node], Graph | None]) -> Graph:
    """``rewrite_until_done``, then without the constant nodes the rewrites
    left unread (those nothing read before stay)."""
    unread_before = unused_constants(graph)
    graph = rewrite_until_done(graph, rewrite)
    return remove_nodes(graph, unused_constants(graph) - unread_before)
