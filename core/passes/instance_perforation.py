"""Loop perforation of a kernel node's instances (ApproxHPVM's perforation
for programs written as kernels: image pipelines and the like).

A skip pattern ``(every, offset)`` on replication dimension ``d`` leaves
out the instances whose id along ``d`` is ``i % every == offset``.  The
node keeps a copy of its kernel whose instance id along ``d`` is mapped
onto the kept ids (the replication shrinks to the kept count), and each
output buffer gets a *fill* node after it: a kernel that updates the
buffer in place, writing every skipped row as the mean of its two
neighbours (the one neighbour at either end).  Readers of the output read
the fill node's result.

This is legal when every access to each output buffer indexes one fixed
axis with the instance's own id along ``d`` (``out[c, y, x]`` with ``y =
instance_id(0)``), that axis is as long as the replication, and nothing
else ties instances together (atomics, barriers, streaming).  A
replication of one row is never perforated, as for tensor perforation
(tensor_ops/perforation.py, whose ``real_position`` this shares).
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import uses_barrier
from ..ir.graph import BindOut, Edge, Graph, KernelBody, Module, Node
from ..ir.instance_access import instance_aliases, instance_dimension
from ..ir.kernel import (
    AtomicUpdate, Call, Const, Expr, If, InstanceCount, InstanceId, Intrinsic, KernelFunction,
    Let, Load, Select, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.tensor_ops.lowering import add
from ..ir.tensor_ops.perforation import real_position
from ..ir.types import I64, BufferType
from ..ir.visit import rewrite, walk
from .names import unique_name

AXES = {"perforate_rows": 0, "perforate_cols": 1}
"""Knob attribute -> the replication dimension it perforates."""
AXIS_WORDS = {dim: attr.removeprefix("perforate_") for attr, dim in AXES.items()}
"""Replication dimension -> its word in knobs and names (rows, cols)."""
MAX_FILL_RANK = 3
"""A fill kernel has one instance per element of a skipped row: at most
three replication dimensions."""


def perforation_refusal(module: Module, graph: Graph, node: Node, dim: int) -> str | None:
    """Why ``node``'s instances along ``dim`` cannot be perforated, or None."""
    if not isinstance(node.body, KernelBody):
        return "only kernel nodes have instances to perforate"
    if dim >= len(node.replication):
        return (f"it has {len(node.replication)} replication dimension(s); "
                f"perforating dimension {dim} needs {dim + 1}")
    if node.attributes.get("group") or uses_barrier(module, node.body.function):
        return "its instances work together in groups (barriers)"
    if any(e.streaming for e in graph.edges if node.name in (e.src_node, e.dst_node)) or any(
            b.streaming for b in graph.bind_outs if b.src_node == node.name):
        return "it is a stage of a streaming pipeline"
    function = module.function(node.body.function)
    if _helpers_use_instance(module, function, set()):
        return "a helper it calls reads instance ids"
    outputs = [p for p in function.params if p.direction in ("out", "inout") and p.is_buffer]
    if not outputs:
        return "it writes no output buffer"
    aliases = instance_aliases(function.body)
    for param in outputs:
        reason = _output_refusal(function, param, node.replication[dim], dim, aliases)
        if reason:
            return reason
    return None


def perforate(module: Module, graph: Graph, node: Node, dim: int, every: int,
              offset: int) -> tuple[dict[str, KernelFunction], Graph]:
    """Module functions and ``graph`` with ``node`` perforated (checked
    first with ``perforation_refusal``)."""
    functions = dict(module.functions)
    function = module.function(node.body.function)
    size = node.replication[dim]
    axis_name = AXIS_WORDS[dim]
    perforated = _perforated_kernel(function, dim, size, every, offset,
                                    unique_name(f"{function.name}_perf_{axis_name}", functions))
    functions[perforated.name] = perforated
    replication = list(node.replication)
    replication[dim] = size - _skipped_count(size, every, offset)
    nodes = [dataclasses.replace(node, body=KernelBody(perforated.name),
                                 replication=tuple(replication))
             if n.name == node.name else n for n in graph.nodes]
    edges, bind_outs = list(graph.edges), list(graph.bind_outs)
    aliases = instance_aliases(function.body)
    taken = {n.name for n in nodes}
    for param in function.params:
        if param.direction != "out" or not param.is_buffer:
            continue
        axis = _row_axis(function, param.name, dim, aliases)
        name = unique_name(f"{node.name}_fill_{axis_name}", taken)
        taken.add(name)
        fill = _fill_kernel(param.type, axis, every, offset,
                            unique_name(f"{name}_{param.name}", functions))
        functions[fill.name] = fill
        nodes.append(Node(name, KernelBody(fill.name), _fill_replication(param.type, axis,
                                                                        every, offset),
                          node.hint))
        edges = [dataclasses.replace(e, src_node=name, src_port="x", kind="all-to-all")
                 if (e.src_node, e.src_port) == (node.name, param.name) else e for e in edges]
        bind_outs = [BindOut(name, "x", b.param, b.streaming)
                     if (b.src_node, b.src_port) == (node.name, param.name) else b
                     for b in bind_outs]
        edges.append(Edge(node.name, param.name, name, "x"))
    return functions, dataclasses.replace(graph, nodes=tuple(nodes), edges=tuple(edges),
                                          bind_outs=tuple(bind_outs))


def _output_refusal(function: KernelFunction, param: Parameter, size: Expr, dim: int,
                    aliases: dict[str, int]) -> str | None:
    if param.direction == "inout":
        return f"it updates '{param.name}' in place (a skipped instance would leave old values)"
    kind = param.type
    if kind.shape is None or kind.element.is_bool:
        return f"output '{param.name}' ({kind}) has no shape or is not numeric"
    if len(kind.shape) > MAX_FILL_RANK:
        return f"output '{param.name}' has rank {len(kind.shape)} (at most {MAX_FILL_RANK})"
    axis = _row_axis(function, param.name, dim, aliases)
    if axis is None:
        return (f"output '{param.name}' is not always indexed by the instance id of "
                f"dimension {dim} at one position")
    if _dim_expr(kind.shape[axis]) != size:
        return (f"output '{param.name}' axis {axis} ({kind.shape[axis]}) is not as long as "
                f"the replication's dimension {dim}")
    return None


def _row_axis(function: KernelFunction, buffer: str, dim: int, aliases) -> int | None:
    """The index position holding the instance id of ``dim`` in every
    access to ``buffer`` (the same in all), or None."""
    positions = set()
    for item in walk(function.body):
        if isinstance(item, (Load, Store)) and item.buffer == buffer:
            found = [k for k, index in enumerate(item.indices)
                     if instance_dimension(index, aliases) == dim]
            if len(found) != 1:
                return None
            positions.add(found[0])
        elif isinstance(item, AtomicUpdate) and item.buffer == buffer:
            return None
        elif isinstance(item, Call) and any(isinstance(a, Var) and a.name == buffer
                                            for a in item.args):
            return None
    return positions.pop() if len(positions) == 1 else None


def _helpers_use_instance(module: Module, function: KernelFunction, seen: set) -> bool:
    for item in walk(function.body):
        if isinstance(item, Call) and item.function not in seen:
            seen.add(item.function)
            helper = module.function(item.function)
            if any(isinstance(e, (InstanceId, InstanceCount)) for e in walk(helper.body)):
                return True
            if _helpers_use_instance(module, helper, seen):
                return True
    return False


def _dim_expr(dim) -> Expr:
    return Var(dim, I64) if isinstance(dim, str) else Const(dim, I64)


def _skipped_count(size: Expr, every: int, offset: int) -> Expr:
    """How many of ``size`` ids the pattern skips: none of a single one."""
    return ((add(size, Const(every - 1 - offset, I64)) / every)
            * Intrinsic("min", (size - 1, Const(1, I64))))


def _perforated_kernel(function: KernelFunction, dim: int, size: Expr, every: int, offset: int,
                       name: str) -> KernelFunction:
    """``function`` run on the kept ids only: instance id ``j`` along
    ``dim`` stands for kept position ``real_position(j)``."""
    kept = InstanceId(dim)
    real = Select(size.lt(2), kept, real_position(kept, every, offset))

    def remap(item):
        if isinstance(item, InstanceId) and item.dim == dim:
            return real
        if isinstance(item, InstanceCount) and item.dim == dim:
            return size
        return None

    return dataclasses.replace(function, name=name, body=rewrite(function.body, remap))


def _fill_replication(kind: BufferType, axis: int, every: int, offset: int) -> tuple[Expr, ...]:
    sizes = [_dim_expr(d) for d in kind.shape]
    sizes[axis] = _skipped_count(sizes[axis], every, offset)
    return tuple(sizes)


def _fill_kernel(kind: BufferType, axis: int, every: int, offset: int,
                 name: str) -> KernelFunction:
    """A kernel updating ``x`` in place: one instance per element of the
    skipped rows, each the mean of its neighbours along ``axis``."""
    size = _dim_expr(kind.shape[axis])
    row = Var("row", I64)

    def at(position: Expr) -> tuple[Expr, ...]:
        return tuple(position if a == axis else InstanceId(a) for a in range(len(kind.shape)))

    def element(position: Expr) -> Expr:
        return Load("x", at(position), kind.element)

    mean = (element(row - 1) + element(row + 1)) / Const(2, kind.element)
    body = (
        Let("row", I64, add(InstanceId(axis) * every, Const(offset, I64))),
        If(row.eq(0), (Store("x", at(row), element(row + 1)),),
           (If(row.eq(size - 1), (Store("x", at(row), element(row - 1)),),
               (Store("x", at(row), mean),)),)),
    )
    return KernelFunction(name, (Parameter("x", kind, "inout"),), body)
