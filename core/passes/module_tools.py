"""Module-level helpers shared by passes: walking nodes, rebuilding graphs,
the call graph and reachability from the root."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from ..errors import Diagnostic, Location
from ..ir.graph import Graph, GraphBody, KernelBody, Module, Node
from ..ir.kernel import Call, KernelFunction
from ..ir.visit import walk
from .errors import PassError


def iter_nodes(module: Module) -> Iterator[tuple[Graph, Node]]:
    """Every (graph, node) of the module, graphs in module order."""
    for graph in module.graphs.values():
        for node in graph.nodes:
            yield graph, node


def map_nodes(module: Module, fn: Callable[[Graph, Node], Node]) -> Module:
    """``module`` with every node replaced by ``fn(graph, node)``."""
    graphs = {}
    for name, graph in module.graphs.items():
        nodes = tuple(fn(graph, node) for node in graph.nodes)
        changed = any(a is not b for a, b in zip(nodes, graph.nodes))
        graphs[name] = dataclasses.replace(graph, nodes=nodes) if changed else graph
    return dataclasses.replace(module, graphs=graphs)


def map_functions(module: Module, fn: Callable[[KernelFunction], KernelFunction]) -> Module:
    """``module`` with every kernel function replaced by ``fn(function)``."""
    functions = {name: fn(function) for name, function in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def callees(function: KernelFunction) -> list[str]:
    """Names of the functions ``function`` calls, in order of first call."""
    found: list[str] = []
    for node in walk(function.body):
        if isinstance(node, Call) and node.function not in found:
            found.append(node.function)
    return found


def node_functions(module: Module) -> set[str]:
    """Functions that some node runs (KernelBody)."""
    return {node.body.function for _, node in iter_nodes(module)
            if isinstance(node.body, KernelBody)}


def called_functions(module: Module) -> set[str]:
    """Functions that some function calls."""
    return {name for function in module.functions.values() for name in callees(function)}


def reachable(module: Module) -> tuple[set[str], set[str]]:
    """(graphs, functions) reachable from the root graph through internal
    nodes, kernel nodes and calls."""
    graphs: set[str] = set()
    functions: set[str] = set()
    pending_graphs = [module.root]
    pending_functions: list[str] = []
    while pending_graphs:
        name = pending_graphs.pop()
        if name in graphs or name not in module.graphs:
            continue
        graphs.add(name)
        for node in module.graphs[name].nodes:
            if isinstance(node.body, GraphBody):
                pending_graphs.append(node.body.graph)
            elif isinstance(node.body, KernelBody):
                pending_functions.append(node.body.function)
    while pending_functions:
        name = pending_functions.pop()
        if name in functions or name not in module.functions:
            continue
        functions.add(name)
        pending_functions.extend(callees(module.functions[name]))
    return graphs, functions



def named_kernel_nodes(module: Module, names, pass_name: str) -> list[tuple[Graph, Node]]:
    """The kernel nodes ``names`` gives (each ``node`` or ``graph.node``),
    in order; a PassError for a name that matches none or a node that is
    not a kernel node."""
    chosen: list[tuple[Graph, Node]] = []
    for name in names:
        matches = [(g, n) for g, n in iter_nodes(module) if name in (n.name, f"{g.name}.{n.name}")]
        if not matches:
            known = ", ".join(f"{g.name}.{n.name}" for g, n in iter_nodes(module)
                              if isinstance(n.body, KernelBody))
            raise PassError(Diagnostic(Location(), f"{pass_name}: no node named '{name}'",
                                       f"name kernel nodes as node or graph.node: {known}"))
        for graph, node in matches:
            if not isinstance(node.body, KernelBody):
                raise PassError(Diagnostic(
                    Location(graph=graph.name, node=node.name),
                    f"{pass_name}: only kernel nodes can be transformed",
                    "run legalize-tensor-ops first for tensor nodes"))
            if (graph, node) not in chosen:
                chosen.append((graph, node))
    return chosen


def task_problem(graph: Graph, node: Node) -> str | None:
    """Why ``node`` is not a task (a kernel node run once, in a graph that
    does not stream), to follow "node 'x' "; None when it is."""
    if not isinstance(node.body, KernelBody):
        return "is not a kernel node"
    if node.replication:
        return "is replicated already"
    if graph.is_streaming:
        return "is in a streaming graph"
    return None
