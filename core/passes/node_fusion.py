"""``node-fusion`` (HPVM2FPGA's NF): a producer and a consumer leaf kernel
node joined by edges become one node whose kernel runs the producer's
body, then the consumer's, in every instance.

Legal when (each refusal names the reason):
- both are kernel nodes of one graph with the same replication (compared
  after the consumer's shape symbols are matched to the producer's through
  the buffers the edges carry), no hint or the same one, no streaming
  edge, no ``private`` port, no barrier, no ``return``, an ``inout`` port
  only where its node may update it out of place (out_of_place.py: the
  pair is fused out of place then); first, every port whose old value is
  dead becomes an output (dead-inputs), so that the edges that ordered
  its writes after the old value's readers do not keep a fused node's
  buffer in memory;
- no other path leads from the producer to the consumer (the fused node
  would depend on itself);
- every buffer an edge carries is accessed *instance-owned* in both
  kernels (core/ir/instance_access.py): instance i of the consumer reads
  only what instance i of the producer wrote, so running them back to back
  per instance computes what running every producer instance first does.

A carried buffer that nothing else reads after fusion (no other edge, no
graph output), whose dimensions other than the instance ones are
constants, becomes a private array of the fused kernel: the intermediate
image is never written to memory.  Otherwise it stays an output port.

Options: ``pairs``, producer:consumer node names to fuse (the DSE's knobs,
one per fusible edge; a pair that is not legal is refused with the
reason).  Pairs are fused in order, and a name keeps meaning the node it
was fused into: ``a:b,b:c`` fuses the chain into one node.  Without
``pairs``, every legal pair is fused, repeatedly, in graph order (the
heuristic).
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import Edge, Graph, KernelBody, Module, Node
from ..ir.instance_access import instance_aliases, owned_positions
from ..ir.kernel import (
    ArrayDecl, Assign, Barrier, Const, Expr, KernelFunction, Let, Load, Return, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.types import I64, BufferType
from ..ir.visit import rewrite, walk
from .errors import PassError
from .out_of_place import dead_inputs, in_place_problem, run_out_of_place
from .names import (
    NameGenerator, declared_names, function_names, renamed_shape, substitute, unique_name,
)
from .registry import Option, register_pass


@register_pass("node-fusion", options=[
    Option("pairs", list, (), "PRODUCER:CONSUMER node pairs to fuse (default: every legal pair)")])
def node_fusion(module: Module, pairs: tuple[str, ...]) -> Module:
    """Fuse producer-consumer kernel nodes that run instance by instance."""
    module = dead_inputs(module)
    if pairs:
        fused_into: dict[str, str] = {}  # a fused node's old name -> the node it is now part of
        for text in pairs:
            producer, consumer, graph = _find_pair(module, text, fused_into)
            problem = _problem(module, graph, producer, consumer)
            if problem is not None:
                raise PassError(Diagnostic(Location(graph=graph.name, node=consumer.name),
                                           f"node-fusion: cannot fuse '{producer.name}' into "
                                           f"'{consumer.name}': {problem}",
                                           "fuse another pair"))
            module, fused = _fuse(module, graph, producer, consumer)
            for old, now in list(fused_into.items()):
                if now in (producer.name, consumer.name):
                    fused_into[old] = fused
            fused_into[producer.name] = fused_into[consumer.name] = fused
        return module
    while (pair := next(_legal_pairs(module), None)) is not None:
        module = _fuse(module, *pair)[0]
    return module


def fusible_pairs(module: Module) -> list[str]:
    """``producer:consumer`` of every pair that is legal to fuse now."""
    return list(dict.fromkeys(f"{producer.name}:{consumer.name}"
                              for _, producer, consumer in _legal_pairs(dead_inputs(module))))


def _legal_pairs(module: Module):
    """(graph, producer, consumer) of each edge whose nodes may be fused, in
    graph and edge order."""
    for graph in module.graphs.values():
        for edge in graph.edges:
            producer, consumer = graph.node(edge.src_node), graph.node(edge.dst_node)
            if _problem(module, graph, producer, consumer) is None:
                yield graph, producer, consumer


def _edges_between(graph: Graph, producer: Node, consumer: Node) -> list[Edge]:
    return [e for e in graph.edges if e.src_node == producer.name and e.dst_node == consumer.name]


def _find_pair(module: Module, text: str, fused_into: dict[str, str]) -> tuple[Node, Node, Graph]:
    producer, _, consumer = text.partition(":")
    producer, consumer = fused_into.get(producer, producer), fused_into.get(consumer, consumer)
    for graph in module.graphs.values():
        names = {n.name for n in graph.nodes}
        if producer in names and consumer in names:
            return graph.node(producer), graph.node(consumer), graph
    raise PassError(Diagnostic(Location(), f"node-fusion: no graph has nodes '{producer}' and "
                               f"'{consumer}'", "write pairs as PRODUCER:CONSUMER node names"))


# -- legality -------------------------------------------------------------
def _problem(module: Module, graph: Graph, producer: Node, consumer: Node) -> str | None:
    for node in (producer, consumer):
        if not isinstance(node.body, KernelBody):
            return f"'{node.name}' is not a kernel node"
        function = module.function(node.body.function)
        if any(p.direction == "private" for p in function.params):
            return f"'{node.name}' has a private port"
        in_place = next((problem for p in function.params if p.direction == "inout"
                         if (problem := in_place_problem(graph, node, function, p.name))), None)
        if in_place:
            return f"'{node.name}' updates a buffer in place: {in_place}"
        if any(isinstance(n, (Barrier, Return)) for n in walk(function.body)):
            return f"'{node.name}' uses a barrier or returns early"
    edges = _edges_between(graph, producer, consumer)
    if not edges:
        return "no edge joins them"
    if producer.hint != consumer.hint:
        return f"their hints differ ({producer.hint} and {consumer.hint})"
    if any(e.streaming for e in edges):
        return "an edge between them is streaming"
    if _other_path(graph, producer.name, consumer.name):
        return "another node lies on a path between them"
    first, second = (module.function(n.body.function) for n in (producer, consumer))
    symbols = _symbol_map(first, second, edges)
    if symbols is None:
        return "the buffers they share have different shapes"
    renamed = tuple(substitute(e, values=_size_values(second, symbols))
                    for e in consumer.replication)
    if renamed != producer.replication or not producer.replication:
        return "their replications differ"
    rank = len(producer.replication)
    for edge in edges:
        at_producer = owned_positions(first, edge.src_port, rank)
        at_consumer = owned_positions(second, edge.dst_port, rank)
        if at_producer is None or at_consumer is None or \
                (at_producer and at_consumer and at_producer != at_consumer):
            return (f"'{consumer.name}' reads '{edge.src_port}' at elements other instances of "
                    f"'{producer.name}' write (a stencil)")
    return None


def _other_path(graph: Graph, source: str, target: str) -> bool:
    """Whether ``target`` is reachable from ``source`` through another node."""
    successors: dict[str, set[str]] = {}
    for edge in graph.edges:
        successors.setdefault(edge.src_node, set()).add(edge.dst_node)
    pending = [n for n in successors.get(source, ()) if n != target]
    seen = set(pending)
    while pending:
        node = pending.pop()
        if node == target:
            return True
        for following in successors.get(node, ()):
            if following not in seen:
                seen.add(following)
                pending.append(following)
    return False


def _symbol_map(first: KernelFunction, second: KernelFunction, edges) -> dict | None:
    """The consumer's shape symbols in terms of the producer's, from the
    buffers the edges carry; None when their shapes disagree."""
    mapping: dict = {}
    for edge in edges:
        produced = _param(first, edge.src_port).type
        consumed = _param(second, edge.dst_port).type
        if not (isinstance(produced, BufferType) and isinstance(consumed, BufferType)) or \
                produced.element != consumed.element or produced.shape is None or \
                consumed.shape is None or len(produced.shape) != len(consumed.shape):
            return None
        for theirs, ours in zip(consumed.shape, produced.shape):
            if isinstance(theirs, int):
                if theirs != ours:
                    return None
            elif mapping.setdefault(theirs, ours) != ours:
                return None
    return mapping


def _param(function: KernelFunction, name: str) -> Parameter:
    return next(p for p in function.params if p.name == name)


# -- the rewrite ------------------------------------------------------------
def _fuse(module: Module, graph: Graph, producer: Node, consumer: Node) -> tuple[Module, str]:
    """``module`` with the pair fused, and the fused node's name."""
    for node in (producer, consumer):
        module = run_out_of_place(module, graph.name, node.name)
    graph = module.graph(graph.name)
    producer, consumer = graph.node(producer.name), graph.node(consumer.name)
    first, second = (module.function(n.body.function) for n in (producer, consumer))
    edges = _edges_between(graph, producer, consumer)
    carried = {e.dst_port: e.src_port for e in edges}
    names = NameGenerator(function_names(first) | {p.name for p in first.params})
    symbols = _symbol_map(first, second, edges)
    # The consumer's ports, locals and free shape symbols get names of their own.
    renames = {}
    for param in second.params:
        if param.name in carried:
            renames[param.name] = carried[param.name]
        else:
            renames[param.name] = names.fresh(param.name)
    for symbol in second.shape_symbols:
        if symbol not in symbols:
            symbols[symbol] = renames[symbol] if symbol in renames else names.fresh(symbol)
    for name in dict.fromkeys(declared_names(second.body)):  # in order: names as stable
        renames[name] = names.fresh(name)
    second_body = _share_instance_ids(first.body, substitute(second.body, renames,
                                                             _size_values(second, symbols)))
    params = list(first.params)
    for param in second.params:
        if param.name not in carried:
            params.append(Parameter(renames[param.name], renamed_shape(param.type, symbols),
                                    param.direction, param.restrict))
    body = first.body + second_body
    kept_edges = [e for e in graph.edges if e not in edges]
    still_read = {e.src_port for e in kept_edges if e.src_node == producer.name} | \
        {b.src_port for b in graph.bind_outs if b.src_node == producer.name}
    rank = len(producer.replication)
    for port in [p for p in dict.fromkeys(carried.values()) if p not in still_read]:
        demoted = _as_private_array(body, _param(first, port), rank, names)
        if demoted is not None:
            body = demoted
            params = [p for p in params if p.name != port]
    name = unique_name(f"{first.name}_{second.name}", module.functions)
    fused_function = KernelFunction(name, tuple(params), body)
    fused_node = dataclasses.replace(producer, name=unique_name(
        f"{producer.name}_{consumer.name}", {n.name for n in graph.nodes}),
        body=KernelBody(name))
    new_graph = _rewire(graph, producer, consumer, fused_node, renames, kept_edges)
    functions = {**module.functions, name: fused_function}
    return dataclasses.replace(module, functions=functions,
                               graphs={**module.graphs, graph.name: new_graph}), fused_node.name


def _share_instance_ids(first_body, second_body):
    """``second_body`` reading the first body's instance-id variables
    (``let y: i64 = instance_id(0)``) instead of declaring its own, so that
    what follows them (loops) may be fused too."""
    ours = {dim: name for name, dim in instance_aliases(first_body).items()
            if any(isinstance(s, Let) and s.name == name for s in first_body)}
    theirs = {name: dim for name, dim in instance_aliases(second_body).items()
              if dim in ours and any(isinstance(s, Let) and s.name == name for s in second_body)}
    kept = tuple(s for s in second_body if not (isinstance(s, Let) and s.name in theirs))
    return substitute(kept, values={name: Var(ours[dim], I64) for name, dim in theirs.items()})


def _size_values(function: KernelFunction, symbols: dict) -> dict[str, Expr]:
    """Reads of ``function``'s shape symbols as the expressions ``symbols``
    maps them to (a producer's symbol, a new name, or a constant size)."""
    values = {}
    for symbol, target in symbols.items():
        scalar = next((p.type for p in function.params if p.name == symbol and not p.is_buffer),
                      I64)
        values[symbol] = Const(target, I64) if isinstance(target, int) else Var(target, scalar)
    return values


def _as_private_array(body, param: Parameter, rank: int, names: NameGenerator):
    """``body`` with buffer ``param`` replaced by private storage of its
    non-instance dimensions (a scalar variable when there are none), or
    None when those are not constants.  Both start at zero, as the buffer
    the runtime would have allocated."""
    positions = owned_positions(KernelFunction("fused", (param,), body), param.name, rank)
    shape = param.type.shape
    if not positions or shape is None:
        return None
    kept = [i for i in range(len(shape)) if i not in positions]
    if not all(isinstance(shape[i], int) for i in kept):
        return None
    element = param.type.element
    storage = names.fresh(f"{param.name}_private")

    def visit(node):
        if not isinstance(node, (Load, Store)) or node.buffer != param.name:
            return None
        if kept:
            return dataclasses.replace(node, buffer=storage,
                                       indices=tuple(node.indices[i] for i in kept))
        if isinstance(node, Load):
            return Var(storage, element)
        return Assign(storage, node.value)

    declaration = (ArrayDecl(storage, element, tuple(shape[i] for i in kept), "private") if kept
                   else Let(storage, element, Const(_zero_of(element), element)))
    return (declaration,) + rewrite(body, visit)


def _rewire(graph: Graph, producer: Node, consumer: Node, fused: Node, renames: dict,
            kept_edges: list[Edge]) -> Graph:
    """``graph`` with ``fused`` in place of the pair: edges and bindings
    of either now name the fused node and its (renamed) ports."""
    def end(node: str, port: str) -> tuple[str, str]:
        if node == producer.name:
            return fused.name, port
        if node == consumer.name:
            return fused.name, renames[port]
        return node, port

    def source(item):
        node, port = end(item.src_node, item.src_port)
        return dataclasses.replace(item, src_node=node, src_port=port)

    def destination(item):
        node, port = end(item.dst_node, item.dst_port)
        return dataclasses.replace(item, dst_node=node, dst_port=port)

    edges = [destination(source(edge)) for edge in kept_edges]
    bind_ins = [destination(b) for b in graph.bind_ins]
    bind_outs = [source(b) for b in graph.bind_outs]
    nodes = [fused if n.name == producer.name else n
             for n in graph.nodes if n.name != consumer.name]
    return dataclasses.replace(graph, nodes=tuple(nodes), edges=tuple(edges),
                               bind_ins=tuple(bind_ins), bind_outs=tuple(bind_outs))


def _zero_of(element):
    if element.is_bool:
        return False
    return 0.0 if element.is_float else 0
