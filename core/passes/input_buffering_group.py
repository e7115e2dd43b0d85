"""input-buffering's ``form=group`` (see input_buffering.py): one copy per
work group of a replicated node, in local memory, made by the whole group.
"""
from __future__ import annotations

import dataclasses
import math

from ..errors import Diagnostic, Location
from ..ir.graph import PADDED_GROUPS, KernelBody, Module, Node
from ..ir.kernel import (
    ArrayDecl, Barrier, Const, For, If, InstanceId, KernelFunction, Let, Load, Stmt, Store, Var,
)
from ..ir.types import I64
from ..ir.visit import walk
from .errors import PassError
from .module_tools import iter_nodes, map_nodes
from .names import NameGenerator, function_names, substitute
from .tile_forms import active

DEFAULT_GROUPS = {1: (256,), 2: (16, 16), 3: (4, 8, 8)}
"""The work group given to a node without one, by replication rank."""


def group_problem(function: KernelFunction, runners: list[Node]) -> str | None:
    """Why the nodes ``runners`` of ``function`` cannot share a copy per
    work group, or None."""
    if not runners:
        return "belongs to a function no node runs"
    if any(not node.replication for node in runners):
        return "belongs to a function a single work item runs (use form=single)"
    if len({len(node.replication) for node in runners}) > 1 or \
            len({_group(node) for node in runners}) > 1:
        return "belongs to a function nodes with different work groups run"
    partial = [n.name for n in runners if "group" in n.attributes and not n.padded_groups]
    if partial:
        return (f"node '{partial[0]}' has a work group that may end short (no padded_groups): "
                "its instances could not copy the whole buffer")
    synchronises = any(isinstance(s, Barrier) or (isinstance(s, ArrayDecl) and s.space == "local")
                       for s in walk(function.body))
    if synchronises and not all(node.padded_groups for node in runners):
        return "belongs to a function that synchronises its work group already"
    return None


def _group(node: Node) -> tuple[int, ...]:
    group = node.attributes.get("group")
    return tuple(group) if group is not None else DEFAULT_GROUPS[len(node.replication)]


def group_copies(module: Module, function: KernelFunction, wanted: set[str],
                 max_local_bytes: int) -> Module:
    """``module`` with ``function``'s parameters ``wanted`` copied per work
    group, and the nodes running it given whole work groups."""
    runners = [node for _, node in iter_nodes(module)
               if isinstance(node.body, KernelBody) and node.body.function == function.name]
    params = [p for p in function.params if p.name in wanted]
    total = sum(math.prod(p.type.shape) * p.type.element.numpy_dtype.itemsize for p in params)
    if total > max_local_bytes:
        raise PassError(Diagnostic(
            Location(function=function.name),
            f"input-buffering: the copies of {', '.join(p.name for p in params)} take {total} "
            f"bytes of local memory, over max_local_bytes={max_local_bytes}",
            "buffer fewer parameters (params=...) or raise max_local_bytes"))
    group = _group(runners[0])
    guarded = all(node.padded_groups for node in runners)   # the body guards itself already
    names = NameGenerator(function_names(function))
    lane = Var(names.fresh("lane"), I64)
    offset = None
    for dim, size in enumerate(group):
        stride = math.prod(group[dim + 1:])
        term = InstanceId(dim) % size if stride == 1 else (InstanceId(dim) % size) * stride
        offset = term if offset is None else offset + term
    copies: list[Stmt] = [Let(lane.name, I64, offset)]
    renames = {}
    for param in params:
        copy, index = names.fresh(f"{param.name}_local"), Var(names.fresh("copy_index"), I64)
        copies += [ArrayDecl(copy, param.type.element, param.type.shape, "local"),
                   For(index.name, lane, Const(math.prod(param.type.shape), I64),
                       math.prod(group), (Store(copy, (index,), Load(param.name, (index,),
                                                                      param.type.element)),))]
        renames[param.name] = copy
    body = substitute(function.body, renames)
    if not guarded:
        body = (If(active(tuple(range(len(group)))), body),)
    new = dataclasses.replace(function, body=(*copies, Barrier(), *body))

    def whole_groups(graph, node):
        if node not in runners:
            return node
        return dataclasses.replace(node, attributes={**node.attributes, "group": group,
                                                     PADDED_GROUPS: True})

    module = dataclasses.replace(module, functions={**module.functions, new.name: new})
    return map_nodes(module, whole_groups)
