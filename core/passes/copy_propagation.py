"""``copy-propagation``: an output that copies another buffer of its node
element by element is not made; its readers read that buffer instead.

Solvers copy their state before they update it (Rodinia's cfd:
``old_variables[v, i] = variables[v, i]``, then ``variables = old + ...``).
Edges carry values, and a value never changes once made, so the copy's
readers may read what it copied: the buffer that fed the node's ``in``
port (the producer's port or the graph's parameter), or, where the copied
buffer is another output of the same node (a copy node-fusion folded in
after the update), that output.  The copying output then loses its
stores and its port; a node left without outputs goes with dce.

An ``out`` port B copies buffer A when every store to B is
``B[index] = A[index]`` with one A, a buffer parameter (not a private
array), and the index of the store, B's
stores write every element before the node reads any (out_of_place.py's
cover: its reads then read A), A and B have one type, and A, if an
output, is stored only by the instance's own elements and only before the
first store to B.  Ports whose old value is dead are made outputs first
(dead-inputs), so that a copy into a buffer used before is one too.  Ports bound to the graph's
outputs, streams and functions that several nodes run are left as they
are.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import BindIn, Edge, Graph, KernelBody, Module, Node
from ..ir.instance_access import owned_positions
from ..ir.kernel import KernelFunction, Load, Store
from ..ir.visit import rewrite, walk
from .module_tools import iter_nodes
from .out_of_place import OutOfPlace, dead_inputs, out_of_place
from .registry import register_pass


@register_pass("copy-propagation")
def copy_propagation(module: Module) -> Module:
    """Let the readers of an output that copies another buffer read that."""
    module = dead_inputs(module)
    runs: dict[str, int] = {}
    for _, node in iter_nodes(module):
        if isinstance(node.body, KernelBody):
            runs[node.body.function] = runs.get(node.body.function, 0) + 1
    for graph, node in list(iter_nodes(module)):
        if not isinstance(node.body, KernelBody) or runs[node.body.function] != 1:
            continue
        function = module.function(node.body.function)
        for param in function.params:
            if param.direction != "out" or not param.is_buffer:
                continue
            copied = copied_buffer(function, param.name, node.replication)
            graph = module.graph(graph.name)
            if copied is None or not _forwardable(graph, node, param.name):
                continue
            forwarded = _forwarded(graph, node, function, param.name, copied)
            if forwarded is None:
                continue
            function = _without(function, param.name, copied)
            module = dataclasses.replace(
                module, functions={**module.functions, function.name: function},
                graphs={**module.graphs, graph.name: forwarded})
    return module


def copied_buffer(function: KernelFunction, buffer: str, replication) -> str | None:
    """The buffer that ``buffer`` copies element by element, or None."""
    stores = [n for n in walk(function.body) if isinstance(n, Store) and n.buffer == buffer]
    if not stores:
        return None
    sources = {s.value.buffer if isinstance(s.value, Load) and s.value.indices == s.indices
               else None for s in stores}
    if len(sources) != 1 or None in sources:
        return None
    (source,) = sources
    params = {p.name: p for p in function.params}
    if source == buffer or source not in params or params[source].type != params[buffer].type:
        return None
    if out_of_place(function, buffer, replication) != OutOfPlace(0):
        return None
    if any(isinstance(n, Store) and n.buffer == source for n in walk(function.body)):
        first = next(k for k, s in enumerate(function.body)
                     if any(isinstance(n, Store) and n.buffer == buffer for n in walk(s)))
        if owned_positions(function, source, len(replication)) is None or any(
                isinstance(n, Store) and n.buffer == source for n in walk(function.body[first:])):
            return None
    return source


def _forwardable(graph: Graph, node: Node, port: str) -> bool:
    """Whether ``node.port``'s readers may be moved: no graph output, no
    stream."""
    return not any((b.src_node, b.src_port) == (node.name, port) for b in graph.bind_outs) and \
        not any(e.streaming for e in graph.edges if (e.src_node, e.src_port) == (node.name, port))


def _forwarded(graph: Graph, node: Node, function: KernelFunction, port: str,
               copied: str) -> Graph | None:
    """``graph`` with the readers of ``node.port`` reading what it copies
    (None when that cannot be told: an input fed other than once)."""
    readers = [e for e in graph.edges if (e.src_node, e.src_port) == (node.name, port)]
    others = [e for e in graph.edges if e not in readers]
    if function.param(copied).direction == "out":
        moved = [dataclasses.replace(e, src_port=copied) for e in readers]
        return dataclasses.replace(graph, edges=tuple(others + moved))
    if function.param(copied).direction != "in":
        return None
    feeds = [e for e in graph.edges if (e.dst_node, e.dst_port) == (node.name, copied)]
    binds = [b for b in graph.bind_ins if (b.dst_node, b.dst_port) == (node.name, copied)]
    if len(feeds) + len(binds) != 1 or any(e.streaming for e in feeds) or \
            any(b.streaming for b in binds):
        return None
    if feeds:
        (feed,) = feeds
        moved = [Edge(feed.src_node, feed.src_port, e.dst_node, e.dst_port) for e in readers]
        return dataclasses.replace(graph, edges=tuple(others + moved))
    (bind,) = binds
    return dataclasses.replace(graph, edges=tuple(others), bind_ins=graph.bind_ins + tuple(
        BindIn(bind.param, e.dst_node, e.dst_port) for e in readers))


def _without(function: KernelFunction, buffer: str, copied: str) -> KernelFunction:
    """``function`` without output ``buffer``: no stores, its loads read
    ``copied``."""
    def visit(node):
        if isinstance(node, Store) and node.buffer == buffer:
            return ()
        if isinstance(node, Load) and node.buffer == buffer:
            return dataclasses.replace(node, buffer=copied)
        return None
    body = rewrite(function.body, visit)
    return dataclasses.replace(function, body=body,
                               params=tuple(p for p in function.params if p.name != buffer))
