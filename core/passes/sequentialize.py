"""``sequentialize``: run all instances of a replicated leaf node in one.

The node's kernel is rewritten so that its replication becomes loops over
the instance space (dimension 0 outermost): ``InstanceId(d)`` reads the
loop variable and ``InstanceCount(d)`` the size, computed once from the
node's replication expressions (they are written in the node's scope, the
kernel's shape symbols and integer scalar parameters, so they are valid
inside the kernel).  A ``Return`` ends only the current instance.  Local
arrays become private to each instance, and so does every written
``private`` buffer parameter (copied at the start of each instance); a
kernel with a ``Barrier`` is refused.  The node then has no replication.
A function shared by nodes that are not all sequentialized the same way
is cloned (``<fn>_seq``).
The instance loops are marked ``ivdep`` (HPVM2FPGA's IV: instances are
independent by construction) unless the kernel, or a helper it calls,
uses atomics (instances may update one element) or declares arrays (the
loops would share their storage).
Needed by the FPGA target, whose kernels are single work-items.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

from ..errors import Diagnostic, Location
from ..ir.graph import Graph, KernelBody, Module, Node
from ..ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Cast, Const, Expr, For, InstanceCount, InstanceId,
    KernelFunction, Let, Var,
)
from ..ir.types import BOOL, I64
from ..ir.visit import rewrite, walk
from .errors import PassError
from ..ir.analysis import writes_buffer
from .argument_privatisation import private_copies
from .module_tools import callees, called_functions, iter_nodes, map_nodes, named_kernel_nodes
from .names import NameGenerator, function_names, unique_name
from .registry import Option, register_pass
from .returns import contains_return, lower_returns


@register_pass("sequentialize", options=[
    Option("nodes", list, (), "nodes to sequentialize, as name or graph.name "
           "(default: every replicated kernel node)")])
def sequentialize(module: Module, nodes: tuple[str, ...]) -> Module:
    """Turn the replication of leaf kernel nodes into loops in their kernel."""
    selected = _select(module, nodes)
    uses = Counter(node.body.function for _, node in iter_nodes(module)
                   if isinstance(node.body, KernelBody))
    groups: dict[tuple[str, tuple], list[tuple[Graph, Node]]] = {}
    for graph, node in selected:
        groups.setdefault((node.body.function, node.replication), []).append((graph, node))
    functions = dict(module.functions)
    new_function_of: dict[tuple[str, str], str] = {}
    shared = called_functions(module)
    for (function_name, replication), members in groups.items():
        function = module.functions[function_name]
        _check_sequentializable(module, function, members[0])
        name = function_name
        if uses[function_name] != len(members) or function_name in shared:
            name = unique_name(f"{function_name}_seq", functions)
        functions[name] = sequentialize_kernel(
            dataclasses.replace(function, name=name), replication,
            _instances_independent(module, function))
        new_function_of.update({(g.name, n.name): name for g, n in members})

    def rewrite_node(graph: Graph, node: Node) -> Node:
        name = new_function_of.get((graph.name, node.name))
        if name is None:
            return node
        attributes = {k: v for k, v in node.attributes.items() if k != "group"}
        return dataclasses.replace(node, body=KernelBody(name), replication=(),
                                   attributes=attributes)

    return map_nodes(dataclasses.replace(module, functions=functions), rewrite_node)


def _instances_independent(module: Module, function: KernelFunction) -> bool:
    """Whether the instance loops of ``function`` may be marked ivdep: no
    atomics in it or the helpers it calls, and no arrays in it."""
    reachable, pending = set(), [function.name]
    while pending:
        name = pending.pop()
        if name not in reachable and name in module.functions:
            reachable.add(name)
            pending.extend(callees(module.functions[name]))
    bodies = [module.functions[name].body for name in reachable]
    return not any(isinstance(node, AtomicUpdate) for body in bodies for node in walk(body)) \
        and not any(isinstance(node, ArrayDecl) for node in walk(function.body))


def sequentialize_kernel(function: KernelFunction, replication: tuple[Expr, ...],
                         independent: bool = False) -> KernelFunction:
    """``function`` running every instance of ``replication`` in loops
    (marked ivdep when ``independent``)."""
    names = NameGenerator(function_names(function))
    counts = [names.fresh(f"count{d}") for d in range(len(replication))]
    indices = [names.fresh(f"instance{d}") for d in range(len(replication))]

    def visit(node):
        if isinstance(node, InstanceId):
            return _var(indices[node.dim])
        if isinstance(node, InstanceCount):
            return _var(counts[node.dim])
        if isinstance(node, ArrayDecl) and node.space == "local":
            return dataclasses.replace(node, space="private")
        return None

    body = rewrite(function.body, visit)
    if contains_return(body):
        done = names.fresh("instance_done")
        body = (Let(done, BOOL, Const(False, BOOL)),) + lower_returns(body, done)
    privatised, params = _private_copies(dataclasses.replace(function, body=body))
    # Private copies are arrays the instance loops would share.
    independent = independent and len(privatised) == len(body)
    body = privatised
    for dim in reversed(range(len(replication))):
        body = (For(indices[dim], Const(0, I64), _var(counts[dim]), 1, body,
                    ivdep=independent),)
    sizes = tuple(Let(count, I64, size if size.type == I64 else Cast(size, I64))
                  for count, size in zip(counts, replication))
    return dataclasses.replace(function, body=sizes + body, params=params)


def _private_copies(function: KernelFunction):
    """(body, params) giving each instance its own copy of every private
    buffer parameter the kernel writes (argument_privatisation.py), as the node's semantics require
    once instances run one after another in one kernel."""
    written = set()
    for param in function.params:
        if (param.direction != "private" or not param.is_buffer
                or not writes_buffer(function.body, param.name)):
            continue
        shape = param.type.shape
        if shape is None or not all(isinstance(d, int) for d in shape):
            raise PassError(Diagnostic(
                Location(function=function.name, port=param.name),
                f"private buffer of type {param.type} is written, so every instance "
                "needs its own copy, but its size is not fixed",
                "give the parameter a fixed shape, or make it inout if instances may share it"))
        written.add(param.name)
    return private_copies(function, written)


def _var(name: str) -> Var:
    return Var(name, I64)


def _select(module: Module, requested: tuple[str, ...]) -> list[tuple[Graph, Node]]:
    """The (graph, node) pairs to sequentialize."""
    if not requested:
        return [(g, n) for g, n in iter_nodes(module)
                if isinstance(n.body, KernelBody) and n.replication]
    return [(g, n) for g, n in named_kernel_nodes(module, requested, "sequentialize")
            if n.replication]


def _check_sequentializable(module: Module, function: KernelFunction,
                            member: tuple[Graph, Node]) -> None:
    graph, node = member
    where = Location(graph=graph.name, node=node.name, function=function.name)
    rank = len(node.replication)
    if any(isinstance(s, Barrier) for s in walk(function.body)):
        raise PassError(Diagnostic(
            where, "the kernel uses a barrier, which needs its work group's instances "
            "to run concurrently", "remove the barrier or leave this node out of 'nodes'"))
    for s in walk(function.body):
        if isinstance(s, (InstanceId, InstanceCount)) and s.dim >= rank:
            raise PassError(Diagnostic(
                where, f"the kernel reads instance dimension {s.dim} but the node is "
                f"replicated in {rank} dimension(s)", "fix the replication or the kernel"))
    for helper in _helpers(module, function):
        if any(isinstance(s, (Barrier, InstanceId, InstanceCount)) for s in walk(helper.body)):
            raise PassError(Diagnostic(
                where, f"helper '@{helper.name}' reads the instance or uses a barrier",
                "run the 'inline' pass before 'sequentialize'"))


def _helpers(module: Module, function: KernelFunction) -> list[KernelFunction]:
    """Functions called from ``function``, transitively."""
    found: list[str] = []
    pending = callees(function)
    while pending:
        name = pending.pop()
        if name not in found and name in module.functions:
            found.append(name)
            pending.extend(callees(module.functions[name]))
    return [module.functions[n] for n in found]
