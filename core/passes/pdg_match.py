"""Patterns over program dependence graphs, found by subgraph isomorphism.

A :class:`Pattern` is a small PDG (hpvm.passes.pdg) whose nodes are operations
to find (``add`` of floats with three operands, a ``load``, a loop-carried
``phi`` ...) or wildcards (``"*"``: any value); a pattern node may carry a
``role``, the name a binding rule reads it by.  :func:`find` lists the
places a kernel's PDG holds the pattern (networkx's DiGraphMatcher,
monomorphism: the kernel may do more than the pattern, but every pattern
operation must be there with exactly its operands); :func:`explain` says
which pattern operation is the first one the kernel lacks, for a user
wondering why a kernel was not recognised (:func:`diagnose` also says how
much of the pattern was found, to rank near misses).

Loads and stores in a pattern leave their indices out: a binding rule
checks them (they are the part where kernels differ most: a signature
states the relations indices must satisfy, not how they are computed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from .pdg import COMMUTATIVE, ProgramDependenceGraph

WILDCARD = "*"


@dataclass
class Pattern:
    """A PDG pattern; build it with :meth:`op`, :meth:`load`, :meth:`store`,
    :meth:`loop`, :meth:`phi`, :meth:`branch`, :meth:`guard` and
    :meth:`feed`, in the order a reader
    would explain it (:func:`explain` reports the first missing one)."""

    name: str
    graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    roles: dict[str, int] = field(default_factory=dict)

    def _add(self, label: str, type_: str | None, description: str, role: str | None,
             arity: int | None = None) -> int:
        node = self.graph.number_of_nodes()
        self.graph.add_node(node, label=label, type=type_, description=description, arity=arity)
        if role:
            self.roles[role] = node
        return node

    def op(self, label: str, *operands: int, type_: str = "f", description: str = "",
           role: str | None = None) -> int:
        """Operation ``label`` on exactly ``operands`` (in order unless the
        operation is commutative)."""
        node = self._add(label, type_, description or f"{label} of {len(operands)} operands", role,
                         arity=len(operands))
        for position, operand in enumerate(operands):
            self.feed(operand, node, ("c", operands.count(operand)) if label in COMMUTATIVE else position)
        return node

    def any(self, type_: str | None = None, description: str = "a value", role: str | None = None) -> int:
        """A wildcard: any value (of ``type_`` when given)."""
        return self._add(WILDCARD, type_, description, role)

    def load(self, description: str, role: str | None = None, type_: str = "f") -> int:
        return self._add("load", type_, description, role)

    def store(self, value: int, description: str, role: str | None = None) -> int:
        node = self._add("store", None, description, role)
        self.feed(value, node, "value")
        return node

    def loop(self, description: str, role: str | None = None) -> int:
        return self._add("loop", None, description, role)

    def phi(self, loop: int, description: str, role: str | None = None, type_: str = "f") -> int:
        """A value carried around ``loop``; give its ``next`` with :meth:`feed`."""
        node = self._add("phi", type_, description, role)
        self.graph.add_edge(loop, node, kind="ctl", pos=None)
        return node

    def select(self, cond: int, if_true: int, if_false: int, description: str, type_: str = "f",
               role: str | None = None) -> int:
        """``cond ? if_true : if_false`` (a branch assigning a variable)."""
        node = self._add("select", type_, description, role, arity=3)
        for position, operand in (("cond", cond), ("then", if_true), ("else", if_false)):
            self.feed(operand, node, position)
        return node

    def branch(self, cond: int, description: str, role: str | None = None) -> int:
        """An ``if`` on ``cond``; what it guards: :meth:`guard`."""
        node = self._add("if", None, description, role)
        self.feed(cond, node, "cond")
        return node

    def guard(self, region: int, node: int, part: str) -> None:
        """``node`` runs in ``part`` of ``region`` (an if's ``then`` or
        ``else``, a loop's ``body``)."""
        self.graph.add_edge(region, node, kind="ctl", pos=part)

    def feed(self, source: int, target: int, position) -> None:
        """``source`` is operand ``position`` of ``target``."""
        self.graph.add_edge(source, target, kind="data", pos=position)

    def describe(self, node: int) -> str:
        return self.graph.nodes[node]["description"]


STEPS = 200_000
"""Candidate pairs one search may try: subgraph isomorphism is exponential
in the worst case, and a large kernel must not stall a compile."""


class SearchTooLong(Exception):
    """A pattern search tried more than :data:`STEPS` candidate pairs."""


def find(pdg: ProgramDependenceGraph, pattern: Pattern, limit: int = 64) -> list[dict[str, int]]:
    """Up to ``limit`` occurrences of ``pattern`` in ``pdg``, each as
    {role: PDG node}; SearchTooLong when the search gives up."""
    found, seen = [], set()
    for mapping in _matcher(pdg, pattern.graph).subgraph_monomorphisms_iter():
        inverse = {p: c for c, p in mapping.items()}
        roles = {role: inverse[node] for role, node in pattern.roles.items()}
        key = tuple(sorted(roles.items()))
        if key not in seen:
            seen.add(key)
            found.append(roles)
        if len(found) >= limit:
            break
    return found


def explain(pdg: ProgramDependenceGraph, pattern: Pattern) -> str:
    """Why ``pdg`` does not hold ``pattern`` (:func:`diagnose`'s words)."""
    return diagnose(pdg, pattern)[1]


def diagnose(pdg: ProgramDependenceGraph, pattern: Pattern) -> tuple[float, str]:
    """(the share of the pattern found, why the rest is not): the first
    pattern operation that no occurrence of the ones before it can be
    extended by.  They are taken in build order, each next one a neighbour
    of those before, so every part searched is connected; (1.0, "") when
    the whole pattern is found."""
    nodes = _connected_order(pattern.graph)
    for count in range(1, len(nodes) + 1):
        part = pattern.graph.subgraph(nodes[:count])
        share = (count - 1) / len(nodes)
        try:
            present = _matcher(pdg, part).subgraph_is_monomorphic()
        except SearchTooLong:
            return share, (f"undecided after {STEPS} search steps (the kernel is large); matched as far "
                           f"as {pattern.describe(nodes[count - 2]) if count > 1 else 'nothing'}")
        if not present:
            return share, f"no {pattern.describe(nodes[count - 1])}"
    return 1.0, ""


def _connected_order(graph: nx.DiGraph) -> list[int]:
    """Nodes in build order, except that each next one touches one before."""
    order, waiting = [], list(graph.nodes)
    while waiting:
        reached = next((n for n in waiting if not order or any(
            m in order for m in nx.all_neighbors(graph, n))), waiting[0])
        order.append(reached)
        waiting.remove(reached)
    return order


class _BoundedMatcher(DiGraphMatcher):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = STEPS

    def semantic_feasibility(self, G1_node, G2_node):
        self.steps -= 1
        if self.steps < 0:
            raise SearchTooLong(f"pattern search gave up after {STEPS} steps")
        return super().semantic_feasibility(G1_node, G2_node)


def _matcher(pdg: ProgramDependenceGraph, pattern_graph: nx.DiGraph) -> DiGraphMatcher:
    def node_match(facts: dict, wanted: dict) -> bool:
        if wanted["type"] is not None and facts["type"] != wanted["type"]:
            return False
        if wanted["label"] == WILDCARD:
            return True
        return facts["label"] == wanted["label"] and (
            wanted["arity"] is None or facts["arity"] == wanted["arity"])

    def edge_match(facts: dict, wanted: dict) -> bool:
        return facts["kind"] == wanted["kind"] and (wanted["pos"] is None or facts["pos"] == wanted["pos"])

    return _BoundedMatcher(pdg.graph, pattern_graph, node_match=node_match, edge_match=edge_match)
