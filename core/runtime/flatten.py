"""Flattening the hierarchical graph into one DAG of leaf tasks.

Internal nodes are host-side structure: their bindings only route values.
Flattening follows every edge and binding to its leaf producer, so the
scheduler sees one dependency graph and can run independent leaves of
different levels concurrently.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Diagnostic, Location, VerificationError
from ..ir.graph import Graph, GraphBody, Module, Node
from ..target import NodeRef


@dataclass(frozen=True)
class Source:
    """Where a value comes from: a root input (``task`` None, ``port`` the
    root parameter) or the output port of a leaf task."""

    task: int | None
    port: str


@dataclass
class LeafTask:
    """One leaf node occurrence in the flattened program."""

    index: int
    path: tuple[str, ...]
    graph: str
    node: Node
    inputs: dict[str, Source] = field(default_factory=dict)
    deps: set[int] = field(default_factory=set)

    @property
    def ref(self) -> NodeRef:
        return NodeRef(self.graph, self.node.name)

    @property
    def label(self) -> str:
        return "/".join(self.path)


@dataclass
class FlatProgram:
    tasks: list[LeafTask]
    outputs: dict[str, Source]


def flatten(module: Module, whole: frozenset[str] = frozenset()) -> FlatProgram:
    """The root graph of ``module`` as a topologically ordered task list.
    Internal nodes named in ``whole`` (``str(NodeRef)``: partitions a target
    runs as one launch) are tasks themselves, their children not."""
    tasks: list[LeafTask] = []
    root = module.root_graph
    env = {p.name: Source(None, p.name) for p in root.params if p.reads}
    outputs = _flatten_graph(module, root, env, (), tasks, whole)
    return FlatProgram(tasks, outputs)


def _flatten_graph(module: Module, graph: Graph, env: dict[str, Source],
                   path: tuple[str, ...], tasks: list[LeafTask],
                   whole: frozenset[str]) -> dict[str, Source]:
    produced: dict[tuple[str, str], Source] = {}
    for node in _topological(graph):
        inputs = _node_inputs(module, graph, node, env, produced)
        if isinstance(node.body, GraphBody) and str(NodeRef(graph.name, node.name)) not in whole:
            child = module.graph(node.body.graph)
            child_out = _flatten_graph(module, child, inputs, path + (node.name,), tasks, whole)
            for port, source in child_out.items():
                produced[(node.name, port)] = source
            continue
        task = LeafTask(len(tasks), path + (node.name,), graph.name, node, inputs)
        task.deps = {s.task for s in inputs.values() if s.task is not None}
        tasks.append(task)
        for p in module.node_params(node):
            if p.writes:
                produced[(node.name, p.name)] = Source(task.index, p.name)
    return {b.param: produced[(b.src_node, b.src_port)] for b in graph.bind_outs}


def _node_inputs(module, graph, node, env, produced) -> dict[str, Source]:
    inputs: dict[str, Source] = {}
    for b in graph.bind_ins:
        if b.dst_node == node.name:
            inputs[b.dst_port] = env[b.param]
    for e in graph.edges:
        if e.dst_node == node.name:
            inputs[e.dst_port] = produced[(e.src_node, e.src_port)]
    return inputs


def _topological(graph: Graph) -> list[Node]:
    """Nodes in dependency order (stable: ties keep declaration order)."""
    preds = {n.name: set() for n in graph.nodes}
    for e in graph.edges:
        preds[e.dst_node].add(e.src_node)
    order, done = [], set()
    while len(order) < len(graph.nodes):
        ready = [n for n in graph.nodes if n.name not in done and preds[n.name] <= done]
        if not ready:
            cycle = sorted(n.name for n in graph.nodes if n.name not in done)
            raise VerificationError(Diagnostic(
                Location(graph=graph.name), f"nodes {cycle} form a cycle",
                "break the cycle: dataflow graphs must be acyclic"))
        for n in ready:
            order.append(n)
            done.add(n.name)
    return order
