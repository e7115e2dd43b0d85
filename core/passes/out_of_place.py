"""In-place updates run out of place: an ``inout`` buffer port becomes an
``out`` port, and, where the kernel reads the old value, an ``in`` port
beside it that receives the old value.

A front end makes a port ``inout`` whenever the buffer had a value before
the node: ``variables = old + factor * flux`` in a time step, a second
``compute_flux`` writing the same ``fluxes``, ``u = u + dt * k``.  The
node then updates the old value in place, and node-fusion refuses it,
since a fused kernel would overwrite what other instances still read.
Out of place, the old and new values are two buffers, and node-fusion can
fuse the time step into the flux kernel before it (its fluxes then never
reach memory).

An instance of the kernel (statements in order, no ``return``; the buffer
never updated atomically or passed to a helper) must:

- write every element of the buffer: stores outside any ``while``, in
  both branches of an ``if`` where inside one, inside loops from 0 by
  steps of 1 whose variables are never assigned, with each instance
  dimension's id at one index position whose size is that dimension's
  replication (the same positions in every access), and at every other
  position a constant or the variable of an enclosing loop that runs over
  the whole dimension; together the stores of the statements before one
  completes reach every element (the *cover*);
- until that statement, read an element only before any store that may
  reach it: loads in statements without stores that no earlier store
  may reach; and in a statement with stores, loads at the one element its
  stores write (``u[v, i] = u[v, i] + x[v, i]`` in a loop over ``v``),
  placed before the first store, each loop's variable among the indices;
- after it, read only its own instance's elements (they are the new ones).

The old value is *dead* where nothing reads it before the cover: the port
is simply an output, and the edge or binding that carried the old value
goes.  Otherwise the reads before the cover read a new ``in`` port (the
buffer's name, ``_old``), which the old value's edges now feed.

``dead-inputs`` (the pass) makes every dead-valued inout port an output;
node-fusion runs the pairs it fuses out of place (node_fusion.py).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field

from ..ir.graph import Graph, KernelBody, Module, Node
from ..ir.instance_access import instance_aliases, instance_dimension
from ..ir.kernel import (
    Assign, AtomicUpdate, Const, Expr, For, If, KernelFunction, Load, Return, Stmt, Store, Var,
    While,
)
from ..ir.parameter import Parameter
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .const_fold import fold_expression
from .module_tools import iter_nodes
from .names import function_names, unique_name
from .registry import register_pass

MAX_CHANNELS = 4096
"""The most elements of constant-sized dimensions a cover is checked over."""

ALL = None
"""A pattern's entry for a position that runs over the whole dimension
(or may be any index)."""


@dataclass(frozen=True)
class OutOfPlace:
    """How a port runs out of place: ``old_reads`` top-level statements
    read the old value (0: it is dead); ``positions``: the index position
    of instance dimension 0, 1 ... in every access."""

    old_reads: int
    positions: tuple[int, ...] = field(default=(), compare=False)

    @property
    def dead(self) -> bool:
        return self.old_reads == 0


@register_pass("dead-inputs")
def dead_inputs(module: Module) -> Module:
    """Make inout ports whose incoming value no instance reads out ports."""
    for graph, node in list(iter_nodes(module)):
        if isinstance(node.body, KernelBody):
            module = run_out_of_place(module, graph.name, node.name, dead_only=True)
    return module


def out_of_place(function: KernelFunction, buffer: str,
                 replication: tuple[Expr, ...]) -> OutOfPlace | str:
    """How an instance of ``function`` replicated ``replication`` may
    update ``buffer`` out of place, or why it may not."""
    if any(isinstance(n, Return) for n in walk(function.body)):
        return f"'@{function.name}' may return before it writes '{buffer}'"
    if any(isinstance(n, Var) and n.name == buffer or
           isinstance(n, AtomicUpdate) and n.buffer == buffer for n in walk(function.body)):
        return f"'@{function.name}' updates '{buffer}' atomically or passes it to a helper"
    shape = function.param(buffer).type.shape
    if shape is None:
        return f"'{buffer}' has no shape"
    cover = _Cover(function, buffer, tuple(Const(d, I64) if isinstance(d, int) else Var(d, I64)
                                           for d in shape), replication)
    old_reads = 0
    for position, stmt in enumerate(function.body):
        problem = cover.take(stmt)
        if problem is not None:
            return problem
        if _loads(stmt, buffer):
            old_reads = position + 1
        if cover.complete():
            rest = function.body[position + 1:]
            return cover.owned(rest) or OutOfPlace(old_reads, cover.positions)
    return f"'@{function.name}' does not write every element of '{buffer}'"


def run_out_of_place(module: Module, graph_name: str, node_name: str,
                     dead_only: bool = False) -> Module:
    """``module`` with every inout port of ``node_name`` that may run out
    of place (``dead_only``: whose old value is dead) made an out port, an
    in port beside it taking the old value where it is read."""
    graph = module.graph(graph_name)
    node = graph.node(node_name)
    function = module.function(node.body.function)
    plans = {p.name: plan for p in function.params if p.direction == "inout" and p.is_buffer
             and not _streamed(graph, node.name, p.name)
             and isinstance(plan := out_of_place(function, p.name, node.replication), OutOfPlace)
             and (plan.dead or not dead_only)}
    if not plans:
        return module
    names = set(function_names(function)) | {p.name for p in function.params}
    old_ports = {port: unique_name(f"{port}_old", names) for port, plan in plans.items()
                 if not plan.dead}
    params = []
    for param in function.params:
        if param.name in plans:
            params.append(dataclasses.replace(param, direction="out"))
            if param.name in old_ports:
                params.append(Parameter(old_ports[param.name], param.type, "in", param.restrict))
        else:
            params.append(param)
    body = function.body
    for port, old in old_ports.items():
        count = plans[port].old_reads
        body = _reading(body[:count], port, old) + body[count:]
    shared = any(other.body == node.body for _, other in iter_nodes(module) if other is not node)
    name = unique_name(function.name, module.functions) if shared else function.name
    functions = {**module.functions,
                 name: dataclasses.replace(function, name=name, params=tuple(params),
                                           body=body)}
    new_node = dataclasses.replace(node, body=KernelBody(name))
    graphs = {**module.graphs, graph_name: _refed(graph, node, new_node, plans, old_ports)}
    return dataclasses.replace(module, functions=functions, graphs=graphs)


def in_place_problem(graph: Graph, node: Node, function: KernelFunction, port: str) -> str:
    """Why inout ``port`` of ``node`` (running ``function``) must be
    updated in place ('' when it may run out of place)."""
    if _streamed(graph, node.name, port):
        return f"'{port}' is a stream"
    plan = out_of_place(function, port, node.replication)
    return plan if isinstance(plan, str) else ""


class _Cover:
    """The elements of ``buffer`` the statements so far certainly store."""

    def __init__(self, function: KernelFunction, buffer: str, shape: tuple[Expr, ...],
                 replication: tuple[Expr, ...]):
        self.function, self.buffer, self.shape = function, buffer, shape
        self.replication = tuple(fold_expression(r) for r in replication)
        self.aliases = instance_aliases(function.body)
        self.assigned = {n.name for n in walk(function.body) if isinstance(n, Assign)}
        self.positions: tuple[int, ...] | None = None
        self.stored: list[tuple[int | None, ...]] = []
        """Patterns of every store so far (those the cover counts or not)."""
        self.patterns: list[tuple[int | None, ...]] = []
        """Patterns of the stores that certainly run."""

    def take(self, stmt: Stmt) -> str | None:
        """Check the loads of ``stmt``, then count its stores."""
        loads = [n for n in walk(stmt) if isinstance(n, Load) and n.buffer == self.buffer]
        stores = [n for n in walk(stmt) if isinstance(n, Store) and n.buffer == self.buffer]
        patterns = [self._pattern(a.indices, {}, certain=False) for a in loads + stores]
        if None in patterns:
            return (f"'@{self.function.name}' accesses '{self.buffer}' at elements other "
                    "instances write")
        early = (f"'@{self.function.name}' reads elements of '{self.buffer}' that it may have "
                 "overwritten")
        if any(_may_meet(pattern, stored) for pattern in patterns[:len(loads)]
               for stored in self.stored):
            return early
        if loads and stores and not isinstance(stmt, Store) and \
                not self._same_element(stmt, loads, stores):
            return early
        self._stores(stmt, {}, certain=True)
        return None

    def _same_element(self, stmt: Stmt, loads: list[Load], stores: list[Store]) -> bool:
        """Whether every access of ``stmt`` reaches the element its stores
        write, a different one in each iteration of its loops, and the
        loads come before the first store: each loop's variable is one of
        the indices, which read no variable the kernel assigns."""
        indices = {tuple(a.indices) for a in loads + stores}
        if len(indices) != 1:
            return False
        (index,) = indices
        loops = {n.var for n in walk(stmt) if isinstance(n, For)}
        bare = {i.name for i in index if isinstance(i, Var)}
        read = {n.name for i in index for n in walk(i) if isinstance(n, Var)}
        if any(isinstance(n, While) for n in walk(stmt)) or not loops <= bare or \
                read & self.assigned:
            return False
        order = [n for n in walk(stmt) if isinstance(n, (Load, Store)) and n.buffer == self.buffer]
        first_store = next(k for k, n in enumerate(order) if isinstance(n, Store))
        # walk() yields a store before the loads of its value, which run first.
        value_loads = {id(n) for n in walk(order[first_store].value) if isinstance(n, Load)}
        return all(isinstance(n, Store) or id(n) in value_loads for n in order[first_store:])

    def _stores(self, stmt: Stmt, loops: dict[str, Expr], certain: bool) -> None:
        if isinstance(stmt, Store) and stmt.buffer == self.buffer:
            pattern = self._pattern(stmt.indices, loops, certain)
            self.stored.append(self._pattern(stmt.indices, {}, certain=False))
            if certain and pattern is not None:
                self.patterns.append(pattern)
            return
        if isinstance(stmt, For):
            covering = certain and stmt.step == 1 and stmt.var not in self.assigned and \
                fold_expression(stmt.start) == Const(0, I64)
            inner = {**loops, stmt.var: fold_expression(stmt.stop)} if covering else loops
            for child in stmt.body:
                self._stores(child, inner, covering)
            return
        if isinstance(stmt, If) and certain:   # what both branches certainly store
            before = self.patterns
            branches = []
            for block in (stmt.then_body, stmt.else_body):
                self.patterns = []
                for child in block:
                    self._stores(child, loops, True)
                branches.append(self.patterns)
            self.patterns = before + [p for p in branches[0] if p in branches[1]]
            return
        for block in ("then_body", "else_body", "body"):
            for child in getattr(stmt, block, ()):
                self._stores(child, loops, False)

    def _pattern(self, indices: tuple[Expr, ...], loops: dict[str, Expr], certain: bool):
        """The elements an access reaches: at each non-instance position a
        constant, or ALL (a loop over the whole dimension; any index when
        not ``certain``); None when the instance ids are not where the
        buffer's other accesses have them."""
        rank = len(self.replication)
        dims = [instance_dimension(i, self.aliases) for i in indices]
        if sorted(d for d in dims if d is not None) != list(range(rank)):
            return None
        positions = tuple(dims.index(d) for d in range(rank))
        if self.positions not in (None, positions) or any(
                self.shape[p] != self.replication[d] for d, p in enumerate(positions)):
            return None
        self.positions = positions
        pattern = []
        for p, index in enumerate(indices):
            if p in positions:
                continue
            folded = fold_expression(index)
            if isinstance(folded, Const):
                pattern.append(int(folded.value))
            elif not certain or isinstance(index, Var) and index.name in loops and \
                    loops[index.name] == fold_expression(self.shape[p]):
                pattern.append(ALL)
            else:
                return None
        return tuple(pattern)

    def complete(self) -> bool:
        if self.positions is None:
            return False
        if any(all(entry is ALL for entry in pattern) for pattern in self.patterns):
            return True
        sizes = [fold_expression(d) for p, d in enumerate(self.shape) if p not in self.positions]
        if not all(isinstance(d, Const) for d in sizes) or \
                math.prod(int(d.value) for d in sizes) > MAX_CHANNELS:
            return False
        return all(any(_may_meet(pattern, element) for pattern in self.patterns)
                   for element in itertools.product(*(range(int(d.value)) for d in sizes)))

    def owned(self, stmts: tuple[Stmt, ...]) -> str | None:
        """Why an access after the cover may reach another instance's
        elements, or None."""
        for node in walk(stmts):
            if isinstance(node, (Load, Store)) and node.buffer == self.buffer and \
                    self._pattern(node.indices, {}, certain=False) is None:
                return (f"'@{self.function.name}' accesses '{self.buffer}' at elements other "
                        "instances write")
        return None


def _may_meet(a: tuple, b: tuple) -> bool:
    """Whether two patterns may name one element."""
    return all(x is ALL or y is ALL or x == y for x, y in zip(a, b))


def _reading(stmts: tuple[Stmt, ...], buffer: str, old: str) -> tuple[Stmt, ...]:
    """``stmts`` loading from ``old`` where they loaded from ``buffer``."""
    return rewrite(stmts, lambda n: dataclasses.replace(n, buffer=old)
                   if isinstance(n, Load) and n.buffer == buffer else None)


def _loads(stmt: Stmt, buffer: str) -> bool:
    return any(isinstance(n, Load) and n.buffer == buffer for n in walk(stmt))


def _streamed(graph: Graph, node: str, port: str) -> bool:
    """Whether the old value reaches ``node.port`` as a stream."""
    return any(e.streaming for e in graph.edges if (e.dst_node, e.dst_port) == (node, port)) or \
        any(b.streaming for b in graph.bind_ins if (b.dst_node, b.dst_port) == (node, port))


def _refed(graph: Graph, node: Node, new_node: Node, plans: dict, old_ports: dict) -> Graph:
    """``graph`` with ``new_node`` for ``node``: the old values' edges and
    bindings feed the ``_old`` ports, or go where the old value is dead."""
    def fed(item):
        if (item.dst_node, item.dst_port) != (node.name, item.dst_port) or \
                item.dst_port not in plans:
            return item
        return dataclasses.replace(item, dst_port=old_ports[item.dst_port]) \
            if item.dst_port in old_ports else None

    edges = tuple(e for e in map(fed, graph.edges) if e is not None)
    bind_ins = tuple(b for b in map(fed, graph.bind_ins) if b is not None)
    nodes = tuple(new_node if n is node else n for n in graph.nodes)
    return dataclasses.replace(graph, nodes=nodes, edges=edges, bind_ins=bind_ins)
