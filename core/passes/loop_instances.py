"""``loop-instances``: a task that is one loop over independent iterations
becomes a node of as many instances, which targets run in parallel.

A program written sequentially puts its loop in one task::

    with task(...):
        for i in range(M):
            acc = 0.0
            for k in range(K): acc += a[i, k] * x[k]
            out[i] = acc

One instance runs every row on one core.  The rows share nothing, so the
node can be what ``parallel_loop(M)`` writes: M instances, instance i
running iteration i (the cpu spreads them over its cores and vector
lanes, a GPU over its work items).  Each iteration computes what it did,
in the same order, so the results are the same bit for bit.

Which nodes: those named in ``nodes`` (``node`` or ``graph.node``), or
every kernel node that runs once, in a graph that does not stream, whose
function's body is values (lets) and then one loop stepping by 1, whose
bounds read only constants, sizes and integer scalar inputs (the
replication is sized from them), and whose iterations share nothing the
body writes or assigns (loop_nests.iterations_share: each buffer
written is accessed with the loop's variable at one index position in
every access).  The values before the loop are computed by every
instance.  A named node that does not qualify is refused with the reason.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.analysis import uses_barrier
from ..ir.graph import Graph, KernelBody, Module, Node
from ..ir.kernel import Call, For, InstanceCount, InstanceId, Let, Load, Var
from ..ir.types import I64
from ..ir.visit import walk
from .loop_nests import sharing_problem
from .errors import PassError
from .module_tools import iter_nodes, named_kernel_nodes
from .names import unique_name
from .reduce_forms import as_i64, offset, trip_count
from .registry import Option, register_pass
from .tensor_graph import replace_node


@register_pass("loop-instances", options=[
    Option("nodes", list, (), "task nodes to run as instances of their loop, as node or "
                              "graph.node (default: every one that qualifies)")])
def loop_instances(module: Module, nodes: tuple[str, ...]) -> Module:
    """Run each qualifying task's loop as the node's instances."""
    if nodes:
        selected = named_kernel_nodes(module, nodes, "loop-instances")
        for graph, node in selected:
            problem = instances_problem(module, graph, node)
            if problem is not None:
                raise PassError(Diagnostic(
                    Location(graph=graph.name, node=node.name),
                    f"loop-instances: node '{node.name}' {problem}",
                    "leave it out of nodes=; its loop runs in one instance"))
    else:
        selected = [(g, n) for g, n in iter_nodes(module)
                    if instances_problem(module, g, n) is None]
    for graph_name, node_name in [(g.name, n.name) for g, n in selected]:
        graph = module.graph(graph_name)
        module = _as_instances(module, graph, graph.node(node_name))
    return module


def instances_problem(module: Module, graph: Graph, node: Node) -> str | None:
    """Why ``node`` cannot run its loop as instances (module docstring)."""
    if not isinstance(node.body, KernelBody):
        return "is not a kernel node"
    if node.replication:
        return "is replicated already"
    if graph.is_streaming:
        return "is in a streaming graph"
    function = module.function(node.body.function)
    body = function.body
    if not body or not isinstance(body[-1], For) or \
            not all(isinstance(s, Let) for s in body[:-1]):
        return "has a body other than values and then one loop"
    loop = body[-1]
    if loop.step != 1:
        return f"has a loop '{loop.var}' that steps by other than 1"
    sizes = {p.name for p in function.params if not p.is_buffer and p.type.kind == "int"}
    sizes |= set(function.shape_symbols)
    if any(isinstance(n, (Load, Call, InstanceId, InstanceCount))
           or isinstance(n, Var) and n.name not in sizes for n in walk((loop.start, loop.stop))):
        return (f"has a loop '{loop.var}' whose bounds read more than constants, sizes and "
                "integer scalar inputs (the node's replication is sized from them)")
    if any(isinstance(n, (InstanceId, InstanceCount)) for n in walk(body)) or \
            uses_barrier(module, function.name):
        return "reads its instance or waits at a barrier"
    return sharing_problem(loop, module)


def _as_instances(module: Module, graph: Graph, node: Node) -> Module:
    function = module.function(node.body.function)
    loop = function.body[-1]
    position = Let(loop.var, I64, offset(as_i64(loop.start), InstanceId(0), 1))
    name = unique_name(f"{function.name}_instances", module.functions)
    new = dataclasses.replace(function, name=name,
                              body=(*function.body[:-1], position, *loop.body))
    rewritten = dataclasses.replace(node, body=KernelBody(name), replication=(trip_count(loop),))
    return dataclasses.replace(module, functions={**module.functions, name: new},
                               graphs={**module.graphs,
                                       graph.name: replace_node(graph, rewritten)})
