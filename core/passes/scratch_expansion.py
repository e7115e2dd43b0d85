"""``scratch-expansion``: a buffer that every iteration of a task's loop
writes whole before it reads it, expanded along the loop, so that the
iterations share nothing through it and the loop can run as instances.

PolyBench's doitgen multiplies each row of ``A`` by ``C4`` through one
scratch row, ``sums``, then copies it back::

    for r in 0 .. R {
      for q in 0 .. Q {
        for p in 0 .. P { sums[p] = 0 }
        for s in 0 .. P { for p in 0 .. P { sums[p] += A[r, q, s] * C4[s, p] } }
        for p in 0 .. P { A[r, q, p] = sums[p] }
      }
    }

Every r writes all of ``sums``, so the task runs on one core. Each r
needs only its own copy (array privatisation, as parallelising compilers
call it): iteration r uses row r of a new output ``sums_rows[R, P]``,
and after the loop ``sums`` gets the last row, the value the last
iteration left (the loop runs at least once)::

    for r in 0 .. R { ... sums_rows[r, p] ... }
    if 0 < R { for p in 0 .. P { sums[p] = sums_rows[R - 1, p] } }

task-split then runs the two apart and loop-instances the loop's
iterations as instances. Each iteration computes what it did, in the
same order: the results are the same bit for bit.

Which buffers: an output of the task, accessed in the loop only inside
one block, reached through loops whose bounds are constants and sizes
(every iteration runs it alike), whose first statement touching the
buffer writes all of it (a perfect nest of loops from 0 to each of its
dimensions storing ``buf[v1, .., vn]`` a value that does not read it);
the loop runs from 0 to a size or a constant, by 1. Where the expanded
loop's iterations still share something else, nothing is expanded.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import KernelBody, Module
from ..ir.kernel import (
    Compare, Const, For, If, KernelFunction, Load, Stmt, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.types import I64, BufferType
from ..ir.visit import rewrite, walk
from .loop_instances import counted_from_sizes
from .loop_nests import sharing_problem
from .module_tools import iter_nodes, task_problem
from .names import function_names, unique_name
from .registry import register_pass
from .tensor_graph import replace_node


@register_pass("scratch-expansion")
def scratch_expansion(module: Module) -> Module:
    """Expand, along each task's loop, the scratch buffers its iterations
    share (module docstring)."""
    for graph, node in list(iter_nodes(module)):
        if task_problem(graph, node) is not None:
            continue
        function = module.function(node.body.function)
        expanded = expanded_function(function, module)
        if expanded is None:
            continue
        name = unique_name(f"{function.name}_expanded", module.functions)
        graph = module.graph(graph.name)
        module = dataclasses.replace(
            module, functions={**module.functions, name: dataclasses.replace(expanded, name=name)},
            graphs={**module.graphs, graph.name: replace_node(
                graph, dataclasses.replace(node, body=KernelBody(name)))})
    return module


def expanded_function(function: KernelFunction, module: Module) -> KernelFunction | None:
    """``function`` with its loop's scratch buffers expanded along it;
    None where it has none, or its loop's iterations would still share."""
    body = function.body
    if not body or not isinstance(body[-1], For):
        return None
    loop = body[-1]
    count = _count(loop, function)
    if count is None:
        return None
    scratch = [p for p in function.params if p.is_buffer and p.direction == "out"
               and p.type.shape is not None and _written_whole_first(loop, p, function)]
    if not scratch:
        return None
    taken = function_names(function)
    rows = {}
    for param in scratch:
        rows[param.name] = unique_name(f"{param.name}_rows", taken)
        taken = taken | {rows[param.name]}
    expanded = _in_rows(loop, rows)
    if sharing_problem(expanded, module) is not None:
        return None
    params = function.params + tuple(
        Parameter(rows[p.name], BufferType(p.type.element, (count, *p.type.shape)), "out")
        for p in scratch)
    copies = tuple(_last_row(p, rows[p.name], count, taken) for p in scratch)
    return dataclasses.replace(function, params=params,
                               body=(*body[:-1], expanded, *copies))


def _count(loop: For, function: KernelFunction):
    """The loop's trip count as a dimension (a size's name or a constant)
    where it runs from 0 by 1; None otherwise."""
    if loop.step != 1 or not (isinstance(loop.start, Const) and loop.start.value == 0):
        return None
    stop = loop.stop
    if isinstance(stop, Const) and isinstance(stop.value, int):
        return stop.value
    if isinstance(stop, Var) and stop.name in function.shape_symbols:
        return stop.name
    return None


def _written_whole_first(loop: For, param: Parameter, function: KernelFunction) -> bool:
    """Whether every access of ``param`` in ``loop`` lies in one block,
    reached through loops counted from sizes and constants, whose first
    statement touching it stores all of it (module docstring)."""
    block = _block_of(loop.body, param.name, function)
    first = next((stmt for stmt in block if _touches(stmt, param.name)), None)
    return first is not None and _stores_all(first, param, ())


def _block_of(block: tuple[Stmt, ...], buffer: str, function: KernelFunction):
    """The innermost block holding every access of ``buffer`` in
    ``block``, reached through loops counted from sizes (every iteration
    runs them alike): ``block`` itself where one statement of it holding
    them all is no such loop."""
    touching = [s for s in block if _touches(s, buffer)]
    if len(touching) != 1 or not isinstance(touching[0], For) or \
            not counted_from_sizes(touching[0], function):
        return block
    return _block_of(touching[0].body, buffer, function)


def _stores_all(stmt: Stmt, param: Parameter, variables: tuple[str, ...]) -> bool:
    """Whether ``stmt`` is a perfect nest of loops over each dimension of
    ``param`` from 0, by 1, in order, whose innermost body reaches
    ``param`` only at the element of their variables, storing it first
    a value that reads no ``param``: every element is written before it
    is read."""
    shape = param.type.shape
    dim = shape[len(variables)]
    if not (isinstance(stmt, For) and stmt.step == 1 and isinstance(stmt.start, Const)
            and stmt.start.value == 0 and stmt.stop == _size(dim)):
        return False
    variables = (*variables, stmt.var)
    if len(variables) < len(shape):
        return len(stmt.body) == 1 and _stores_all(stmt.body[0], param, variables)
    element = tuple(Var(v, I64) for v in variables)
    first = next(s for s in stmt.body if _touches(s, param.name))
    return isinstance(first, Store) and first.buffer == param.name and \
        first.indices == element and not _touches(first.value, param.name) and all(
            n.indices == element for n in walk(stmt.body)
            if isinstance(n, (Load, Store)) and n.buffer == param.name) and not any(
            isinstance(n, Var) and n.name == param.name for n in walk(stmt.body))


def _size(dim) -> Const | Var:
    return Const(dim, I64) if isinstance(dim, int) else Var(dim, I64)


def _touches(node, buffer: str) -> bool:
    return any(isinstance(n, (Load, Store)) and n.buffer == buffer or
               isinstance(n, Var) and n.name == buffer for n in walk(node))


def _in_rows(loop: For, rows: dict[str, str]) -> For:
    """``loop`` with each buffer of ``rows`` accessed in its row for the
    iteration (the loop's variable as the first index)."""
    row = Var(loop.var, I64)

    def visit(node):
        if isinstance(node, (Load, Store)) and node.buffer in rows:
            return dataclasses.replace(node, buffer=rows[node.buffer],
                                       indices=(row, *node.indices))
        return None
    return dataclasses.replace(loop, body=rewrite(loop.body, visit))


def _last_row(param: Parameter, rows: str, count, taken: set[str]) -> Stmt:
    """``if 0 < count { param[v..] = rows[count - 1, v..] }``."""
    size = _size(count)
    variables = []
    for dim in param.type.shape:
        variables.append(unique_name(f"{param.name}_{len(variables)}", taken))
        taken = taken | {variables[-1]}
    indices = tuple(Var(v, I64) for v in variables)
    stmt: Stmt = Store(param.name, indices,
                       Load(rows, (size - 1, *indices), param.type.element))
    for variable, dim in reversed(list(zip(variables, param.type.shape))):
        stmt = For(variable, Const(0, I64), _size(dim), 1, (stmt,))
    return If(Compare("lt", Const(0, I64), size), (stmt,))
