"""``task-split``: a task that runs several loops in turn becomes a chain
of tasks, one per loop, so that each loop whose iterations are
independent can run as instances (loop-instances).

A program ported from sequential code puts a whole kernel in one task::

    with task(...):
        for i in range(N): tmp[i] = 0.0 ...      # one loop nest
        for i in range(N): D[i, j] ...           # another, reading tmp

Each loop becomes a node of its own, with the statements before it (the
statements after the last loop join the last one, or are a node of their
own where they would keep it from running as instances), as if the tasks had
been written one per loop: a buffer a node reads comes from the node
before it that last wrote it, or from what fed the task; a buffer it
writes is ``inout`` where it had a value before (an input of the task, or
a node before it wrote it) and ``out`` otherwise; what read the task's
outputs reads the last node writing each. So every node computes what
its statements computed in the task, in the same order, bit for bit.

A value (a ``let``) that a later loop reads is computed again there when
it reads no buffer the task writes and is never assigned; otherwise the
loop stays with the one before it, as does a loop reading a variable an
earlier one assigns (the loops kept together compute again the values
each of them reads). A task is split only where one of its parts is then
a loop whose iterations share nothing (what loop-instances takes), its
body declares no array at its top and has no return, barrier or atomic
update, each of its outputs is written by a part, and no part reads an
output before a part writes it (it would have nothing to read from).

A loop that cannot run as instances is first distributed where one of
its pieces then can (loop_distribution.py); one that can, but not as
instances of its two loops (a product's rows and columns,
loop-instances' ``reused``), is cut between its statements where a piece
then can (correlation's ``corr[i, i] = 1`` before each row's sums).

Which nodes: those named in ``nodes`` (``node`` or ``graph.node``), or
every kernel node that qualifies (run once, in a graph that does not
stream). A named node that does not qualify is refused with the reason.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.analysis import assigned_variables
from ..ir.graph import Edge, Graph, KernelBody, Module, Node
from ..ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Call, For, InstanceCount, InstanceId, KernelFunction, Let,
    Load, Return, Stmt, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.uniformity import written_buffers
from ..ir.visit import walk
from .errors import PassError
from .loop_instances import loop_problem, nest_problem
from .module_tools import iter_nodes, named_kernel_nodes, task_problem
from .loop_distribution import cut_apart, distributed
from .names import NameGenerator, function_names, names_in
from .registry import Option, register_pass
from .tensor_graph import bind_outs_of, feeds_of, remove_nodes


@register_pass("task-split", options=[
    Option("nodes", list, (), "tasks to split into one node per loop, as node or graph.node "
                              "(default: every one where a loop can then run as instances)"),
    Option("cores", int, 0, "the cores loop-instances cuts strips of columns for: a loop that "
           "then runs in strips counts as one that runs as instances (0: none)", minimum=0)])
def task_split(module: Module, nodes: tuple[str, ...], cores: int = 0) -> Module:
    """Split each qualifying task into a chain of nodes, one per loop."""
    if nodes:
        selected = named_kernel_nodes(module, nodes, "task-split")
        for graph, node in selected:
            problem = split_problem(module, graph, node, cores)
            if problem is not None:
                raise PassError(Diagnostic(
                    Location(graph=graph.name, node=node.name), f"task-split: node "
                    f"'{node.name}' {problem}", "leave it out of nodes=; it stays one task"))
    else:
        selected = [(g, n) for g, n in iter_nodes(module)
                    if split_problem(module, g, n, cores) is None]
    for graph_name, node_name in [(g.name, n.name) for g, n in selected]:
        graph = module.graph(graph_name)
        module = _split(module, graph, graph.node(node_name), cores)
    return module


def split_problem(module: Module, graph: Graph, node: Node, cores: int = 0) -> str | None:
    """Why ``node`` is not split (module docstring); None when it is."""
    problem = task_problem(graph, node)
    if problem is not None:
        return problem
    function = module.function(node.body.function)
    if function.return_type is not None or any(
            isinstance(n, (Return, Barrier, AtomicUpdate, InstanceId, InstanceCount))
            for n in walk(function.body)) or \
            any(isinstance(s, ArrayDecl) for s in function.body):
        return ("returns, waits at a barrier, updates atomically, reads its instance or "
                "declares an array at its top")
    parts = _parts(function, module, cores)
    if len(parts) < 2:
        return "has no two loops that can run apart"
    written = {b for part in parts for b in written_buffers(part)}
    unwritten = [p.name for p in function.params if p.writes and p.name not in written]
    if unwritten:
        return f"has an output '{unwritten[0]}' that no statement writes"
    made: set[str] = set()
    for part in parts:
        early = [p.name for p in _ports(part, function, made)
                 if p.direction == "in" and function.param(p.name).direction == "out"
                 and p.name not in made]
        if early:
            return f"reads its output '{early[0]}' before a loop writes it"
        made |= written_buffers(part)
    if all(loop_problem(part, function, module, cores) is not None for part in parts):
        return "has no loop that could then run as instances"
    return None


def _parts(function: KernelFunction, module: Module, cores: int
           ) -> list[tuple[Stmt, ...]]:
    """The body as parts, each the statements before a loop and the loop
    (the last also what follows, unless statements follow that would keep
    it from running as instances: a part of their own), values a part
    reads from an earlier one computed again at its start, parts that
    cannot run apart merged."""
    body = _distributed(function, module, cores)
    cuts = [i + 1 for i, s in enumerate(body) if isinstance(s, For)]
    if cuts and (all(isinstance(s, Let) for s in body[cuts[-1]:]) or loop_problem(
            body[cuts[-2] if len(cuts) > 1 else 0:cuts[-1]], function, module, cores) is not None):
        cuts.pop()        # what follows the last loop runs with it, unless that keeps it whole
    parts: list[tuple[int, tuple[Stmt, ...]]] = []     # (where it starts, the part)
    for start, stop in zip([0, *cuts], [*cuts, len(body)]):
        part = _with_values(body[:start], body[start:stop], body)
        while part is None:                # runs with the part before it
            start = parts.pop()[0]
            part = _with_values(body[:start], body[start:stop], body)
        parts.append((start, part))
    return [part for _, part in parts]


def _distributed(function: KernelFunction, module: Module, cores: int) -> tuple[Stmt, ...]:
    """The body with each loop that cannot run as instances distributed
    (loop_distribution.py) where one of its loops then can, a piece that
    still cannot cut between its statements where one of them then runs
    in strips for ``cores`` (bicg's ``q[i] = 0`` before its row's
    additions into every ``s[j]``); and each loop that can, but not as
    instances of two loops (a product's rows and columns, loop-instances'
    ``reused``), cut between its statements where one of its loops then
    can (correlation's diagonal set before each row)."""
    names = NameGenerator(function_names(function))

    def runs(loop: For) -> bool:
        return loop_problem((loop,), function, module, cores) is None

    def cut_for_strips(piece: For) -> tuple[For, ...]:
        cut = cut_apart(piece, names) if cores and not runs(piece) else (piece,)
        return cut if len(cut) > 1 and all(runs(p) for p in cut) else (piece,)
    body: list[Stmt] = []
    for stmt in function.body:
        pieces: tuple[Stmt, ...] = ()
        wanted = False
        if isinstance(stmt, For) and not runs(stmt):
            pieces = tuple(p for piece in distributed(stmt, names) for p in cut_for_strips(piece))
            wanted = any(runs(p) for p in pieces)
        elif isinstance(stmt, For) and nest_problem(stmt, function, module) is not None:
            pieces = cut_apart(stmt, names)
            wanted = any(nest_problem(p, function, module) is None for p in pieces)
        body += pieces if len(pieces) > 1 and wanted else (stmt,)
    return tuple(body)


def _with_values(before: tuple[Stmt, ...], part: tuple[Stmt, ...],
                 body: tuple[Stmt, ...]) -> tuple[Stmt, ...] | None:
    """``part`` with the values it reads from ``before`` computed again at
    its start; None where one cannot be (module docstring)."""
    if not before:
        return part
    lets = {s.name: s for s in before if isinstance(s, Let)}
    assigned = assigned_variables(body)
    written = written_buffers(body)
    needed, queue = set(), [n for n in names_in(part) if n in lets]
    while queue:
        name = queue.pop()
        if name in needed:
            continue
        let = lets[name]
        if name in assigned or let.value is None or any(
                isinstance(n, Call) or isinstance(n, Load) and n.buffer in written
                for n in walk(let.value)):
            return None
        needed.add(name)
        queue += [n.name for n in walk(let.value) if isinstance(n, Var) and n.name in lets]
    return tuple(s for s in before if isinstance(s, Let) and s.name in needed) + part


def _ports(part: tuple[Stmt, ...], function: KernelFunction,
           written_before: set[str]) -> list[Parameter]:
    """The parameters ``part`` reads or writes, each with its direction
    there (module docstring), and an input for each shape symbol that no
    input of the part has (the sizes of what it reads and makes)."""
    stored = written_buffers(part)
    read = names_in(part) | {n.buffer for n in walk(part) if isinstance(n, (Load, Store))}

    def direction(param: Parameter) -> str:
        if not param.is_buffer or param.name not in stored:
            return "in"
        fresh = param.direction == "out" and param.name not in written_before
        return "out" if fresh else "inout"
    ports = {p.name: dataclasses.replace(p, direction=direction(p))
             for p in function.params if p.name in read}
    needed = {s for s in function.shape_symbols if s in read} | {
        s for p in ports.values() if p.is_buffer for s in p.type.symbols}
    for symbol in sorted(needed):
        if not any(_gives(p, symbol) for p in ports.values()):
            carrier = min((p for p in function.params if _gives(p, symbol)),
                          key=lambda p: len(p.type.shape or ()) if p.is_buffer else 0)
            ports[carrier.name] = dataclasses.replace(carrier, direction="in")
    return [ports[p.name] for p in function.params if p.name in ports]


def _gives(param: Parameter, symbol: str) -> bool:
    """Whether an input ``param`` gives the value of shape ``symbol``."""
    if param.direction == "out":
        return False
    return symbol in param.type.symbols if param.is_buffer else param.name == symbol


def _split(module: Module, graph: Graph, node: Node, cores: int) -> Module:
    function = module.function(node.body.function)
    functions = NameGenerator(module.functions)
    node_names = NameGenerator(n.name for n in graph.nodes)
    last_writer: dict[str, str] = {}
    new_nodes, edges, bind_ins, functions_made = [], [], [], {}
    for index, part in enumerate(_parts(function, module, cores)):
        name = node_names.fresh(f"{node.name}_{index}")
        params = _ports(part, function, set(last_writer))
        for param in params:
            if param.direction == "out":
                continue
            if param.name in last_writer:
                edges.append(Edge(last_writer[param.name], param.name, name, param.name))
            else:
                fed_edges, fed_bind_ins = feeds_of(graph, {param.name: (node.name, param.name)},
                                                   name)
                edges += fed_edges
                bind_ins += fed_bind_ins
        last_writer.update((buffer, name) for buffer in written_buffers(part))
        function_name = functions.fresh(f"{function.name}_{index}")
        functions_made[function_name] = dataclasses.replace(
            function, name=function_name, params=tuple(params), body=part)
        new_nodes.append(dataclasses.replace(node, name=name, body=KernelBody(function_name)))
    outgoing = [dataclasses.replace(e, src_node=last_writer[e.src_port])
                for e in graph.edges if e.src_node == node.name]
    bind_outs = [dataclasses.replace(b, src_node=last_writer[b.src_port])
                 for b in bind_outs_of(graph, node.name)]
    at = [n.name for n in graph.nodes].index(node.name)
    rest = remove_nodes(graph, {node.name})
    nodes = (*rest.nodes[:at], *new_nodes, *rest.nodes[at:])
    new_graph = dataclasses.replace(
        rest, nodes=nodes, edges=(*rest.edges, *edges, *outgoing),
        bind_ins=(*rest.bind_ins, *bind_ins), bind_outs=(*rest.bind_outs, *bind_outs))
    return dataclasses.replace(module, functions={**module.functions, **functions_made},
                               graphs={**module.graphs, graph.name: new_graph})

