"""Module-level helpers shared by passes: walking nodes, rebuilding graphs,
the call graph and reachability from the root."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

from ..ir.graph import Graph, GraphBody, KernelBody, Module, Node
from ..ir.kernel import Call, KernelFunction
from ..ir.visit import walk


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

