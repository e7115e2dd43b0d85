"""Which outputs a node writes whole: every element, in every run.

``Device.allocate`` hands out zero-filled buffers, because a kernel may
write only some elements of an output and leave zeros in the rest.  A
node that writes every element needs no zero fill, and the static schedule
(static_run.py) then keeps its large intermediates from run to run and
makes its outputs without clearing them.

Tensor ops and constants write their outputs whole by definition.  A
kernel writes an output whole when a statement at the top of its body
(not inside a loop, not after one that may return, and inside an ``if``
only where both branches store it so) stores to ``out[i0, ..., ik]``
with ``ij`` the instance's id in dimension j (or a variable set to it
once), and the replication has exactly the output's sizes; or,
one-dimensional, stores to ``out[i]`` over as many instances as the
output has elements (the lowered form of tensor ops); and never reads the
output (``y[i] = y[i] + x[i]`` relies on the zeros).  Or when its stores
cover every element before any instance reads one, loops over the other
dimensions included (``for v: flux[v, i] = ...``; the cover of
passes/out_of_place.py, whose old value is then dead: here the zeros).
"""
from __future__ import annotations

import math

from ..ir.analysis import assigned_variables
from ..ir.graph import ConstantBody, KernelBody, Module, Node, TensorBody
from ..ir.kernel import (
    AtomicUpdate, Call, If, InstanceId, KernelFunction, Let, Load, Return, Stmt, Store, Var,
)
from ..ir.visit import walk
from ..passes.out_of_place import OutOfPlace, out_of_place


def whole_outputs(module: Module, node: Node, replication: tuple[int, ...],
                  shapes: dict[str, tuple[int, ...]]) -> frozenset[str]:
    """The ``out`` ports of ``node`` (shapes: port -> the run's shape) that
    it writes whole over ``replication`` (the run's sizes)."""
    body = node.body
    if isinstance(body, (TensorBody, ConstantBody)):
        return frozenset(shapes)
    if not isinstance(body, KernelBody):
        return frozenset()
    function = module.function(body.function)
    read = _read_buffers(function)
    stored = _stored_by_every_instance(function, len(replication))
    return frozenset(port for port in shapes if
                     port in stored and port not in read and _covers(shapes[port], replication)
                     or _covered_first(function, node, port, replication, shapes[port]))


def _covered_first(function: KernelFunction, node: Node, port: str,
                   replication: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether the kernel stores every element of ``port`` before it reads
    one, its instances spanning the run's ``shape`` where they index it."""
    plan = out_of_place(function, port, node.replication)
    return isinstance(plan, OutOfPlace) and plan.dead and all(
        shape[p] == replication[d] for d, p in enumerate(plan.positions))


def _read_buffers(function: KernelFunction) -> set[str]:
    """Buffers the kernel reads, updates atomically or hands to a call: an
    output among them may rely on starting at zero."""
    read = set()
    for item in walk(function.body):
        if isinstance(item, (Load, AtomicUpdate)):
            read.add(item.buffer)
        elif isinstance(item, Call):
            read.update(a.name for a in item.args if isinstance(a, Var))
    return read


def _stored_by_every_instance(function: KernelFunction, rank: int) -> set[str]:
    """Buffers stored at the top of the body at the instance's own index,
    or so in both branches of an ``if`` there."""
    return _stored(function.body, {}, rank, assigned_variables(function.body))


def _stored(block: tuple[Stmt, ...], ids: dict[str, int], rank: int,
            reassigned: set[str]) -> set[str]:
    """Buffers every run of ``block`` stores at the instance's own index;
    ``ids``: variables holding an instance id (this block's join them)."""
    ids = dict(ids)
    stored: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Let) and isinstance(stmt.value, InstanceId) \
                and stmt.name not in reassigned:
            ids[stmt.name] = stmt.value.dim
        elif isinstance(stmt, Store):
            dims = [_instance_dim(index, ids) for index in stmt.indices]
            if dims == list(range(rank)) or (rank == 1 and dims == [0]):
                stored.add(stmt.buffer)
        elif isinstance(stmt, If):
            stored |= _stored(stmt.then_body, ids, rank, reassigned) & \
                _stored(stmt.else_body, ids, rank, reassigned)
        if any(isinstance(item, Return) for item in walk(stmt)):
            break   # statements after this one may not run
    return stored


def _instance_dim(index, ids: dict[str, int]) -> int | None:
    if isinstance(index, InstanceId):
        return index.dim
    if isinstance(index, Var):
        return ids.get(index.name)
    return None


def _covers(shape: tuple[int, ...], replication: tuple[int, ...]) -> bool:
    """Whether one element per instance fills ``shape``: the same sizes, or
    as many elements as instances for a flat store."""
    if tuple(shape) == tuple(replication):
        return True
    return len(replication) == 1 and math.prod(shape) == replication[0]
