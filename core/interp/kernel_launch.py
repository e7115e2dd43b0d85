"""Running one kernel function over a replication: binding its parameters,
shape symbols, instance ids and work groups, then evaluating it SIMT.

Call :func:`launch_kernel` with arrays the caller owns: ``out`` and
``inout`` buffers are updated in place.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.analysis import writes_buffer
from hpvm.ir.graph import Module
from hpvm.ir.kernel import KernelFunction
from hpvm.ir.parameter import Parameter
from hpvm.ir.shapes import check_allocation

from .kernel_eval import KernelEvaluator, WorkGroups
from .memory import Lanes, Storage
from .simt_state import Scope


def launch_kernel(module: Module, function: KernelFunction, args: Mapping[str, Any],
                  replication: tuple[int, ...], group: tuple[int, ...] | None = None,
                  where: Location | None = None, padded: bool = False) -> None:
    """Run ``function`` for every instance of ``replication`` (1 to 3 sizes,
    dim 0 outermost).  ``args`` maps every parameter name to a numpy array
    (buffers; updated in place) or a scalar; ``group`` gives the work-group
    size per dimension for local arrays (default: the whole replication);
    ``padded``: run whole groups, instances past the replication included
    (the node attribute ``padded_groups``)."""
    where = where or Location(function=function.name)
    where = Location(graph=where.graph, node=where.node, function=function.name)
    replication = _check_replication(replication, where)
    running = replication
    if padded and group is not None and len(group) == len(replication):
        running = tuple(-(-r // max(int(g), 1)) * max(int(g), 1)
                        for r, g in zip(replication, group))
    count = math.prod(running)
    # The interpreter holds every instance's ids, and values, as arrays.
    check_allocation((count, len(replication) + 1), 8, where,
                     f"interpreting {count} instances of replication {list(running)}")
    ids = tuple(np.asarray(i, dtype=np.int64)
                for i in np.unravel_index(np.arange(count, dtype=np.int64), running))
    lanes = Lanes(count, ids, function.name, where.node, where.graph)
    groups = work_groups(ids, running, group, where)
    scope = Scope(None, bind_kernel_args(function, args, count, where))
    if count == 0:
        return
    KernelEvaluator(module, lanes, replication, groups).run(function, scope)


def _check_replication(replication, where: Location) -> tuple[int, ...]:
    replication = tuple(int(r) for r in replication) or (1,)
    if len(replication) > 3 or any(r < 0 for r in replication):
        raise ExecutionError(Diagnostic(
            where, f"replication {list(replication)} is invalid",
            "give 1 to 3 non-negative replication sizes"))
    return replication


def work_groups(ids, replication: tuple[int, ...], group, where: Location) -> WorkGroups:
    """Each lane's work group: lanes whose ids agree on ``id // group`` in
    every dimension form one group."""
    if group is None:  # one group: the whole replication (of no instance, maybe)
        group = tuple(max(size, 1) for size in replication)
    group = tuple(int(g) for g in group)
    if len(group) != len(replication) or any(g <= 0 for g in group):
        raise ExecutionError(Diagnostic(
            where, f"work-group size {list(group)} does not fit replication "
                   f"{list(replication)}",
            "give one positive work-group size per replication dimension"))
    per_dim = tuple(max(1, -(-r // g)) for r, g in zip(replication, group))
    coords = tuple(i // g for i, g in zip(ids, group))
    group_ids = np.ravel_multi_index(coords, per_dim).astype(np.int64)
    count = int(np.prod(per_dim))
    return WorkGroups(group_ids, count, np.bincount(group_ids, minlength=count))


def bind_kernel_args(function: KernelFunction, args: Mapping[str, Any], count: int,
                     where: Location) -> dict[str, Any]:
    """The kernel's starting variables: scalars as 0-d values of their
    type, buffers as Storage (private ones copied per instance), and every
    shape symbol as an i64 bound from the actual shapes."""
    values: dict[str, Any] = {}
    symbols: dict[str, tuple[int, str]] = {}
    for param in function.params:
        if param.name not in args:
            raise _param_error(where, param, "has no argument",
                               "pass a value for every kernel parameter")
        value = args[param.name]
        if param.is_buffer:
            private_copies = param.direction == "private" and writes_buffer(function.body, param.name)
            values[param.name] = _buffer_storage(param, value, count, private_copies, where)
            _collect_symbols(param, np.shape(value), symbols, where)
        else:
            values[param.name] = np.asarray(value).astype(param.type.numpy_dtype, copy=False)
    for name, (size, source) in symbols.items():
        if name in values and not isinstance(values[name], Storage):
            if int(values[name]) != size:
                raise ExecutionError(Diagnostic(
                    Location(graph=where.graph, node=where.node, function=where.function,
                             port=name),
                    f"scalar '{name}' is {int(values[name])} but {source} has size {size}",
                    f"pass '{name}' equal to the buffer's size"))
        else:
            values[name] = np.int64(size)
    return values


def _buffer_storage(param: Parameter, array, count: int, private_copies: bool,
                    where: Location) -> Storage:
    if not isinstance(array, np.ndarray):
        raise _param_error(where, param, f"expects a numpy array, got {type(array).__name__}",
                           "pass a numpy array")
    expected = param.type.element.numpy_dtype
    if array.dtype != expected:
        raise _param_error(where, param, f"expects elements of type {param.type.element}, "
                           f"got {array.dtype.name}",
                           f"make the producer's buffer {param.type.element} too")
    shape = None if param.type.shape is None else tuple(array.shape)
    if param.direction == "in" or (param.direction == "private" and not private_copies):
        # a private buffer the kernel never writes needs no per-instance copies
        return Storage(param.name, np.ascontiguousarray(array), shape, read_only=True)
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise _param_error(where, param, "needs a writeable C-contiguous array",
                           "pass np.ascontiguousarray(value).copy()")
    if param.direction != "private":
        return Storage(param.name, array, shape)
    copies = np.broadcast_to(array, (count,) + array.shape).copy()
    return Storage(param.name, copies, tuple(array.shape),
                   np.arange(count, dtype=np.int64) * array.size)


def _collect_symbols(param: Parameter, shape, symbols: dict, where: Location) -> None:
    if param.type.shape is None:
        return
    if len(shape) != len(param.type.shape):
        raise _param_error(where, param, f"expects {param.type}, got shape {list(shape)}",
                           f"pass an array of rank {len(param.type.shape)}")
    for dim, size in zip(param.type.shape, shape):
        source = f"the shape of '{param.name}'"
        if isinstance(dim, int):
            if dim != size:
                raise _param_error(where, param, f"expects {param.type}, got shape "
                                   f"{list(shape)}", f"pass an array of type {param.type}")
        elif dim in symbols and symbols[dim][0] != size:
            raise _param_error(where, param, f"size '{dim}' is {symbols[dim][0]} from "
                               f"{symbols[dim][1]} but {size} from {source}",
                               "pass arrays whose shapes agree on every shared size symbol")
        else:
            symbols.setdefault(dim, (int(size), source))


def _param_error(where: Location, param: Parameter, message: str, fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(
        Location(graph=where.graph, node=where.node, function=where.function, port=param.name),
        message, fix))
