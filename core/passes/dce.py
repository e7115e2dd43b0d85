"""``dce``: dead-code elimination.

- in every graph, nodes whose outputs reach no graph output (through edges,
  transitively) are removed with their edges and bindings; dataflow has
  value semantics, so such nodes have no visible effect;
- graphs and functions no longer reachable from the root are removed;
- in kernels: statements after a ``Return`` in the same block, local
  variables that are never read and only assigned pure values (no calls;
  loads count as pure), and empty ``if``/``for`` statements.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import Graph, Module
from ..ir.kernel import (
    Assign, AtomicUpdate, Call, For, If, KernelFunction, Let, Return, Stmt,
    Var, While,
)
from ..ir.visit import rewrite, walk
from .module_tools import reachable
from .registry import register_pass


@register_pass("dce")
def dead_code_elimination(module: Module) -> Module:
    """Remove dead nodes, unreachable graphs/functions and unused locals."""
    graphs = {name: remove_dead_nodes(graph) for name, graph in module.graphs.items()}
    module = dataclasses.replace(module, graphs=graphs)
    live_graphs, live_functions = reachable(module)
    return dataclasses.replace(
        module,
        graphs={n: g for n, g in module.graphs.items() if n in live_graphs},
        functions={n: remove_dead_code(f) for n, f in module.functions.items()
                   if n in live_functions})


def remove_dead_nodes(graph: Graph) -> Graph:
    """``graph`` without the nodes none of whose outputs reach a BindOut."""
    live = {b.src_node for b in graph.bind_outs}
    pending = list(live)
    while pending:
        consumer = pending.pop()
        for edge in graph.edges:
            if edge.dst_node == consumer and edge.src_node not in live:
                live.add(edge.src_node)
                pending.append(edge.src_node)
    if len(live) == len(graph.nodes):
        return graph
    return dataclasses.replace(
        graph,
        nodes=tuple(n for n in graph.nodes if n.name in live),
        edges=tuple(e for e in graph.edges if e.src_node in live and e.dst_node in live),
        bind_ins=tuple(b for b in graph.bind_ins if b.dst_node in live))


def remove_dead_code(function: KernelFunction) -> KernelFunction:
    """``function`` without unreachable statements, unused pure locals and
    empty control flow; repeated until nothing changes."""
    body = _drop_unreachable(function.body)
    while True:
        dead = _dead_variables(body)
        new_body = rewrite(body, lambda node: _remove(node, dead))
        if new_body == body:
            break
        body = new_body
    return function if body == function.body else dataclasses.replace(function, body=body)


def is_pure(expr) -> bool:
    """No calls inside ``expr`` (loads and arithmetic have no effect)."""
    return expr is None or not any(isinstance(n, Call) for n in walk(expr))


def _drop_unreachable(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    def truncate(stmts):
        for index, stmt in enumerate(stmts):
            if isinstance(stmt, Return):
                return stmts[:index + 1]
        return stmts

    def visit(node):
        if isinstance(node, If):
            return dataclasses.replace(node, then_body=truncate(node.then_body),
                                       else_body=truncate(node.else_body))
        if isinstance(node, (For, While)):
            return dataclasses.replace(node, body=truncate(node.body))
        return None

    return truncate(rewrite(body, visit))


def _dead_variables(body: tuple[Stmt, ...]) -> set[str]:
    """Locals never read whose every Let/Assign value is pure."""
    read, impure, declared = set(), set(), set()
    for node in walk(body):
        if isinstance(node, Var):
            read.add(node.name)
        elif isinstance(node, AtomicUpdate) and node.result is not None:
            read.add(node.result)
        elif isinstance(node, (Let, Assign)):
            if isinstance(node, Let):
                declared.add(node.name)
            if not is_pure(node.value):
                impure.add(node.name)
    return declared - read - impure


def _remove(node, dead: set[str]):
    if isinstance(node, (Let, Assign)) and node.name in dead:
        return ()
    if isinstance(node, If) and not node.then_body and not node.else_body and is_pure(node.cond):
        return ()
    if isinstance(node, For) and not node.body and is_pure(node.start) and is_pure(node.stop):
        return ()
    return None
