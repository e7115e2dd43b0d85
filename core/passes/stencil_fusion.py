"""``stencil-fusion``: a producer kernel node folded into the stencil that
reads its output, which recomputes each element where it reads it
(Halide's ``compute_inline``).

node-fusion refuses a consumer that reads elements other instances of the
producer write (blur_y reading blur_x's rows above and below).  Here the
producer's stored value becomes one expression of its instance ids, and
each load of the carried buffer in the consumer becomes that expression
at the load's indices.  The intermediate buffer is never written or read
back; each of its elements is computed once per read instead (three
times for a 3-tap blur), so it pays where memory, not arithmetic, bounds
the pair.

Legal when (each refusal names the reason):
- both are kernel nodes of one graph with the same hint, joined by one
  edge, not streaming, carrying buffer B;
- the producer's body is lets, assignments, ifs and stores of B at its
  own instance's elements (``B[id0, id1, ...]``, or around them channels
  of constant size at constant indices, ``B[0, y, x]``), each element
  stored in every instance, so that every element of B is one expression
  of its indices (stored_elements.py: branches become selects); a read
  at a channel that is not a constant selects among the channels;
- B is the producer's only output and only the consumer reads it;
- the consumer reads B only by loads (it passes it to no call), at some
  element other than its own instance's (else node-fusion fuses the pair
  without recomputing), and has no ``inout`` port.

The fused node keeps the consumer's name, replication and attributes;
the producer's inputs become ports of it.

Options: ``pairs``, producer:consumer node names to fuse (the DSE's
knobs; a pair that is not legal is refused with the reason).  Without
``pairs``, every legal pair whose recomputation is cheap is fused: at most
``max_loads`` loads per consumer instance (the loads of each read's
recomputed value, times the trips of constant loops around it; never a
consumer reading B in another loop).

``form=tile`` (GPUs; stencil_tiles.py) computes the producer's elements
once per work group of ``size`` x ``size`` instances into a local tile
instead, the consumer reading them there; the consumer and the producer
must be two-dimensional.  Without ``pairs`` it fuses every pair whose
reads all lie within a small, known reach of their instance.

Recomputation pays where memory bounds the pair and the producer is
cheap.  Camera's demosaic (a branch per Bayer site, three channels)
recomputed at each of denoise's 27 reads took 6.7x the time of the two
kernels on an H200 (0.44 against 0.066 ms): every read evaluates all
four sites' values of every channel.
"""
from __future__ import annotations

import dataclasses
import math

from ..errors import Diagnostic, Location
from ..ir.graph import Graph, KernelBody, Module, Node
from ..ir.instance_access import owned_positions
from ..ir.kernel import Const, Expr, For, KernelFunction, Load, Store, Var, While
from ..ir.parameter import Parameter
from ..ir.types import I64
from ..ir.visit import BLOCKS, children, rewrite, walk
from .errors import PassError
from .loop_unroll import constant_trip_count
from .names import NameGenerator, function_names, renamed_shape, substitute, unique_name
from .registry import Option, register_pass
from .stencil_tiles import Tiles
from .stored_elements import StoredElements, stored_elements

MAX_LOADS = 12
"""The heuristic's limit on recomputed loads per consumer instance."""
FORMS = ("recompute", "tile")


@register_pass("stencil-fusion", options=[
    Option("pairs", list, (), "PRODUCER:CONSUMER node pairs to fuse (default: every legal, "
           "cheap pair)"),
    Option("form", str, "recompute", "recompute: each read recomputes its element; tile: "
           "each work group computes its region of the producer's output, widened by halo, "
           "into local memory (GPUs)", choices=FORMS),
    Option("size", int, 16, "tile: work-group side, groups of size x size instances",
           minimum=2, maximum=32),
    Option("halo", int, 0, "tile: elements the tile reaches past the group on every side "
           "(0: as far as the consumer's reads reach)", minimum=0, maximum=16),
    Option("rows", int, 1, "tile: instances each work item computes along dimension 0",
           minimum=1, maximum=8),
    Option("max_loads", int, MAX_LOADS, "recompute without pairs: the most loads a fusion "
           "may recompute per consumer instance")])
def stencil_fusion(module: Module, pairs: tuple[str, ...], form: str, size: int, halo: int,
                   rows: int, max_loads: int) -> Module:
    """Fold producers into the stencils that read them, recomputing their
    elements where they are read or once per work group in a local tile."""
    tiles = Tiles(size, halo, rows) if form == "tile" else None
    for text in pairs:
        producer, _, consumer = text.partition(":")
        graph = next((g for g in module.graphs.values()
                      if {producer, consumer} <= {n.name for n in g.nodes}), None)
        if graph is None:
            raise PassError(Diagnostic(Location(), f"stencil-fusion: no graph has nodes "
                                       f"'{producer}' and '{consumer}'",
                                       "write pairs as PRODUCER:CONSUMER node names"))
        found = _Pair.check(module, graph, graph.node(producer), graph.node(consumer), tiles)
        if isinstance(found, str):
            raise PassError(Diagnostic(Location(graph=graph.name, node=consumer),
                                       f"stencil-fusion: cannot fuse '{producer}' into "
                                       f"'{consumer}': {found}", "fuse another pair"))
        module = found.fuse()
    if not pairs:
        while (pair := next((p for p in _legal_pairs(module, tiles) if p.worth_fusing(max_loads)),
                            None)) is not None:
            module = pair.fuse()
    return module


def fusible_stencils(module: Module, tiles: Tiles | None = None) -> list[str]:
    """``producer:consumer`` of every pair that is legal to fuse now (in
    ``tiles``, where given)."""
    return [f"{p.producer.name}:{p.consumer.name}" for p in _legal_pairs(module, tiles)]


def _legal_pairs(module: Module, tiles: Tiles | None):
    for graph in module.graphs.values():
        for edge in graph.edges:
            found = _Pair.check(module, graph, graph.node(edge.src_node),
                                graph.node(edge.dst_node), tiles)
            if not isinstance(found, str):
                yield found


@dataclasses.dataclass
class _Pair:
    """A legal pair: the producer's stored value as an expression of its
    instance ids, and what the rewrite needs."""

    module: Module
    graph: Graph
    producer: Node
    consumer: Node
    buffer: str
    """The carried buffer's name at the producer."""
    port: str
    """Its name at the consumer."""
    elements: StoredElements
    tiles: Tiles | None
    """Where the fused node computes the producer's elements in local
    tiles; None where each read recomputes its element."""

    @classmethod
    def check(cls, module: Module, graph: Graph, producer: Node, consumer: Node,
              tiles: Tiles | None = None) -> "_Pair | str":
        """The pair, or why it cannot be fused (in ``tiles``, where given)."""
        edges = [e for e in graph.edges if e.src_node == producer.name]
        between = [e for e in edges if e.dst_node == consumer.name]
        if not between:
            return "no edge joins them"
        for node in (producer, consumer):
            if not isinstance(node.body, KernelBody):
                return f"'{node.name}' is not a kernel node"
        if producer.hint != consumer.hint:
            return f"their hints differ ({producer.hint} and {consumer.hint})"
        first, second = (module.function(n.body.function) for n in (producer, consumer))
        outputs = [p for p in first.params if p.direction != "in"]
        if len(outputs) != 1 or len(between) != 1 or len(edges) != 1 or between[0].streaming \
                or any(b.src_node == producer.name for b in graph.bind_outs):
            return (f"'{producer.name}' must have one output that only '{consumer.name}' reads, "
                    "by one edge that is not streaming")
        edge = between[0]
        if any(p.direction in ("inout", "private") for p in second.params):
            return f"'{consumer.name}' has an inout or private port"
        if any(isinstance(n, Var) and n.name == edge.dst_port or
               isinstance(n, Store) and n.buffer == edge.dst_port for n in walk(second.body)):
            return f"'{consumer.name}' uses '{edge.dst_port}' other than by loads"
        if owned_positions(second, edge.dst_port, len(consumer.replication)) is not None:
            return (f"'{consumer.name}' reads '{edge.dst_port}' only at its own instance's "
                    "elements (node-fusion fuses such pairs without recomputing)")
        elements = stored_elements(first, edge.src_port, producer.replication)
        if isinstance(elements, str):
            return elements
        if tiles is not None:
            port = next(p for p in second.params if p.name == edge.dst_port)
            tiles = tiles.fitted(consumer, second, port, elements)
            if isinstance(tiles, str):
                return tiles
        return cls(module, graph, producer, consumer, edge.src_port, edge.dst_port, elements,
                   tiles)

    def worth_fusing(self, max_loads: int) -> bool:
        """The default's choice: in tiles, a consumer reading the carried
        buffer as a neighbourhood; else recomputing at most ``max_loads``
        loads per consumer instance."""
        if self.tiles is not None:
            return self.tiles.worth_fusing
        return self.loads <= max_loads

    @property
    def loads(self) -> float:
        """Loads the fused consumer makes per instance to recompute the
        carried buffer: each read's (every channel's where the read's
        channel is not a constant), times the trips of the loops around
        it; infinite in a loop whose trip count is not a constant."""
        def recomputed(read: Load) -> int:
            value = self.elements.at(read.indices, tuple(self.producer.replication))
            return sum(isinstance(n, Load) for n in walk(value))

        def block(stmts) -> float:
            total = 0.0
            for stmt in stmts:
                total += sum(recomputed(n) for c in children(stmt) if isinstance(c, Expr)
                             for n in walk(c) if isinstance(n, Load) and n.buffer == self.port)
                inside = sum(block(getattr(stmt, name)) for name in BLOCKS if hasattr(stmt, name))
                if inside and isinstance(stmt, (For, While)):
                    trips = constant_trip_count(stmt) if isinstance(stmt, For) else None
                    inside = math.inf if trips is None else inside * trips
                total += inside
            return total

        return block(self._consumer_function().body)

    def _consumer_function(self) -> KernelFunction:
        return self.module.function(self.consumer.body.function)

    def fuse(self) -> Module:
        """The module with the producer folded into the consumer."""
        first = self.module.function(self.producer.body.function)
        second = self._consumer_function()
        names = NameGenerator(function_names(second))
        symbols = _symbol_values(first, second, self.buffer, self.port)
        renames = {p.name: names.fresh(p.name) for p in first.params if p.name != self.buffer}
        renames.update({s: names.fresh(s) for s in first.shape_symbols
                        if s not in symbols and s not in renames})
        elements = self.elements.renamed(lambda value: substitute(value, renames, symbols))
        counts = tuple(substitute(e, renames, symbols) for e in self.producer.replication)
        shapes = {**renames, **{s: v.value if isinstance(v, Const) else v.name
                                for s, v in symbols.items()}}

        def recompute(indices: tuple[Expr, ...]) -> Expr:
            return elements.at(indices, counts)

        params = [p for p in second.params if p.name != self.port] + [
            Parameter(renames[p.name], renamed_shape(p.type, shapes), p.direction, p.restrict)
            for p in first.params if p.name != self.buffer]
        name = unique_name(f"{first.name}_{second.name}", self.module.functions)
        attributes = self.consumer.attributes
        if self.tiles is None:
            body = rewrite(second.body, lambda node: recompute(node.indices) if isinstance(
                node, Load) and node.buffer == self.port else None)
        else:
            producer_body = substitute(first.body, renames, symbols)
            port = next(p for p in second.params if p.name == self.port)
            body = self.tiles.body(second.body, producer_body, self.buffer, port, self.elements,
                                   counts, tuple(self.consumer.replication), recompute, names)
            attributes = {**attributes, **self.tiles.attributes()}
        function = KernelFunction(name, tuple(params), body)
        fused = dataclasses.replace(self.consumer, body=KernelBody(name), attributes=attributes,
                                    replication=self.tiles.replication(self.consumer.replication)
                                    if self.tiles else self.consumer.replication)
        graph = _rewire(self.graph, self.producer, fused, renames)
        return dataclasses.replace(self.module, functions={**self.module.functions, name: function},
                                   graphs={**self.module.graphs, graph.name: graph})


def _symbol_values(first: KernelFunction, second: KernelFunction, buffer: str,
                   port: str) -> dict[str, Expr]:
    """The producer's shape symbols of the carried buffer, as the consumer
    reads them (its symbol of that dimension, or the constant size)."""
    produced = next(p.type.shape for p in first.params if p.name == buffer)
    consumed = next(p.type.shape for p in second.params if p.name == port)
    values: dict[str, Expr] = {}
    for ours, theirs in zip(produced or (), consumed or ()):
        if isinstance(ours, str):
            values[ours] = Const(theirs, I64) if isinstance(theirs, int) else Var(theirs, I64)
    return values


def _rewire(graph: Graph, producer: Node, fused: Node, renames: dict[str, str]) -> Graph:
    """``graph`` without the producer: what fed it feeds the fused node's
    renamed ports, and the consumer's node runs the fused function."""
    def moved(item):
        if item.dst_node != producer.name:
            return item
        return dataclasses.replace(item, dst_node=fused.name, dst_port=renames[item.dst_port])

    edges = tuple(moved(e) for e in graph.edges if e.src_node != producer.name)
    nodes = tuple(fused if n.name == fused.name else n for n in graph.nodes
                  if n.name != producer.name)
    return dataclasses.replace(graph, nodes=nodes, edges=edges,
                               bind_ins=tuple(moved(b) for b in graph.bind_ins))
