"""Shared pieces of the verifier: the diagnostic collector and the type and
scope rules that graph, node and kernel checks all use."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Diagnostic, Location
from .parameter import DIRECTIONS, Parameter
from .types import I64, BufferType, ScalarType


@dataclass
class Report:
    """Collects diagnostics; ``where`` gives the location fields every
    diagnostic of this report starts from (graph, node, function ...)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    where: dict = field(default_factory=dict)

    def error(self, message: str, fix: str = "", **where) -> None:
        """Record one problem at ``self.where`` refined by ``where``."""
        location = Location(**{**self.where, **where})
        self.diagnostics.append(Diagnostic(location, message, fix))

    def at(self, **where) -> "Report":
        """A view of this report whose diagnostics also carry ``where``;
        what it records lands in the same list."""
        return Report(self.diagnostics, {**self.where, **where})


def quoted(names) -> str:
    """``'a', 'b'`` for messages; ``(none)`` when empty."""
    names = list(names)
    return ", ".join(f"'{n}'" for n in names) if names else "(none)"


def buffer_mismatch(source: BufferType, dest: BufferType) -> str | None:
    """Why a value of ``source`` cannot flow into ``dest``, or None if it can.

    Element types must be equal.  An unshaped buffer (``f32[*]``) matches any
    shape; otherwise ranks must agree and fixed dims must be equal (a shape
    symbol matches any size: symbols are local to each node)."""
    if source.element != dest.element:
        return f"element type {source.element} differs from {dest.element}"
    if source.shape is None or dest.shape is None:
        return None
    if len(source.shape) != len(dest.shape):
        return f"rank {len(source.shape)} differs from rank {len(dest.shape)}"
    for axis, (a, b) in enumerate(zip(source.shape, dest.shape)):
        if isinstance(a, int) and isinstance(b, int) and a != b:
            return f"dimension {axis} is {a} on one side and {b} on the other"
    return None


def type_mismatch(source, dest) -> str | None:
    """Like :func:`buffer_mismatch` for any pair of parameter types: scalars
    must be equal; a scalar never matches a buffer."""
    if isinstance(source, BufferType) and isinstance(dest, BufferType):
        return buffer_mismatch(source, dest)
    if isinstance(source, ScalarType) and isinstance(dest, ScalarType):
        return None if source == dest else f"{source} differs from {dest}"
    return f"{source} and {dest} are not both buffers or both scalars"


def is_integer_scalar_in(param: Parameter) -> bool:
    return (isinstance(param.type, ScalarType) and param.type.is_int
            and param.direction == "in")


def node_scope(params) -> dict[str, ScalarType]:
    """Names usable in a node's replication expressions: the shape symbols of
    its buffer ports (i64) and its integer scalar ``in`` ports."""
    scope: dict[str, ScalarType] = {}
    for p in params:
        if isinstance(p.type, BufferType):
            scope.update((s, I64) for s in p.type.symbols)
    for p in params:
        if is_integer_scalar_in(p):
            scope[p.name] = p.type
    return scope


def check_out_shapes(params, report: Report, owner: str) -> None:
    """Every symbol in an ``out`` buffer's shape must be known before the
    node runs: from an in/inout/private buffer's shape or an integer scalar
    ``in`` port.  ``owner`` names the thing in messages (``node 'x'``)."""
    known = set()
    for p in params:
        if isinstance(p.type, BufferType) and p.reads:
            known.update(p.type.symbols)
        elif is_integer_scalar_in(p):
            known.add(p.name)
    for p in params:
        if p.direction != "out" or not isinstance(p.type, BufferType):
            continue
        unknown = [s for s in p.type.symbols if s not in known]
        if unknown:
            report.error(
                f"output '{p.name}' of {owner} has shape {p.type} but "
                f"{quoted(unknown)} cannot be determined from its inputs",
                f"use a symbol of an in/inout buffer port, or add an integer "
                f"scalar in port named {quoted(unknown)}", port=p.name)


def _check_symbol_params(params, report: Report) -> None:
    """A scalar parameter named like a shape symbol gives that symbol's
    value, so it must be an integer."""
    symbols = {s for p in params if isinstance(p.type, BufferType)
               for s in p.type.symbols}
    for p in params:
        if (p.name in symbols and isinstance(p.type, ScalarType)
                and not p.type.is_int):
            report.error(
                f"scalar parameter '{p.name}' names a shape symbol but is "
                f"{p.type}; a shape symbol's value must be an integer",
                f"make '{p.name}' an integer (i64), or rename it",
                port=p.name)


def check_param_list(params, report: Report, owner: str) -> None:
    """Parameter names are unique, directions known, types valid, and
    scalars are only ``in``."""
    seen: set[str] = set()
    _check_symbol_params(params, report)
    for p in params:
        if p.name in seen:
            report.error(f"{owner} declares parameter '{p.name}' twice",
                         "rename or remove one of them", port=p.name)
        seen.add(p.name)
        if p.direction not in DIRECTIONS:
            report.error(f"parameter '{p.name}' has unknown direction "
                         f"'{p.direction}'", f"use one of {quoted(DIRECTIONS)}",
                         port=p.name)
        if isinstance(p.type, ScalarType):
            if p.direction != "in":
                report.error(
                    f"scalar parameter '{p.name}' has direction "
                    f"'{p.direction}'; scalars are always passed in",
                    "make it direction 'in', or use a one-element buffer to "
                    "return a value", port=p.name)
        elif not isinstance(p.type, BufferType):
            report.error(f"parameter '{p.name}' has invalid type {p.type!r}",
                         "use a ScalarType or a BufferType", port=p.name)


def cycles(nodes, edges) -> list[tuple]:
    """Every circle of the directed graph of ``nodes`` and ``edges``
    (pairs), one per strongly connected part that loops: (its smallest
    node, the list of nodes of a cycle found from there)."""
    import networkx as nx  # networkx (heavy: 0.1 s to import, not needed to start hpvm)
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    found = []
    for component in nx.strongly_connected_components(graph):
        first = min(component)
        if len(component) > 1 or graph.has_edge(first, first):
            found.append((first, [edge[0] for edge in nx.find_cycle(graph.subgraph(component),
                                                                   first)]))
    return found
