"""Elements a loop updates kept in a variable while it runs (scalar
replacement, as compilers call it).

``tmp[i, j] = 0; for k: tmp[i, j] = tmp[i, j] + a[i, k] * b[k, j]``
reads and writes one element at every step: as a chain through memory.
With the element in a variable::

    let tmp_ij = 0
    for k: tmp_ij = tmp_ij + a[i, k] * b[k, j]
    tmp[i, j] = tmp_ij

the loop is a fold into a variable, which register tiles and vector
lanes take. It computes the same where the element's index expressions
read no memory and nothing the loop assigns or declares (its variable
included), every other access of the buffer in the loop is never to that
element (affine_dependences.py: PolyBench's trmm sums
``b[i, j] += a[k, i] * b[k, j]`` over ``k > i``, rows below the element),
and nothing else in the loop (a call, an atomic update) may reach the
buffer. Buffers of other names are other memory, as everywhere in the IR.
A store of the element just before the loop becomes the variable's first
value; otherwise the variable starts from a load. The element is stored
once after the loop.

The pass ``element-promotion`` does this in every loop of every kernel
function, in the outermost loop that leaves an element in place first.
There a loop that may not run, and that no access of the element
follows, keeps its load and store under a test that it runs: the element
need not exist when it does not.
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables
from ..ir.graph import Module
from ..ir.kernel import (
    Assign, AtomicUpdate, Call, Compare, Const, For, If, KernelFunction, Let, Load, Stmt, Store,
    Var,
)
from ..ir.visit import map_blocks, rewrite, walk
from .affine_dependences import Access, accesses, never_meets
from .names import NameGenerator, declared_names, function_names
from .registry import register_pass


@register_pass("element-promotion")
def element_promotion(module: Module) -> Module:
    """Keep the elements each loop alone updates in variables while it
    runs, in every loop of every kernel function (module docstring)."""
    functions = {}
    for name, function in module.functions.items():
        names = NameGenerator(function_names(function))
        functions[name] = dataclasses.replace(
            function, body=_promoted_everywhere(function.body, function, names))
    return dataclasses.replace(module, functions=functions)


def _promoted_everywhere(stmts: tuple[Stmt, ...], function: KernelFunction,
                         names: NameGenerator) -> tuple[Stmt, ...]:
    return tuple(map_blocks(stmt, lambda block: _promoted_everywhere(block, function, names))
                 for stmt in promoted(stmts, function, names, guarded=True))


def promoted(stmts: tuple[Stmt, ...], function: KernelFunction,
             names: NameGenerator | None = None, guarded: bool = False) -> tuple[Stmt, ...]:
    """``stmts`` (of ``function``) with each loop at their top level
    keeping the elements it alone updates in variables (module
    docstring), named apart from ``function``'s names and those ``names``
    gave; ``guarded``: the loads and stores of a loop that may not run
    under a test that it runs, where no access of the elements follows."""
    types = {p.name: p.type.element for p in function.params if p.is_buffer}
    names = names or NameGenerator(function_names(function))
    out: list[Stmt] = []
    for at, stmt in enumerate(stmts):
        if not isinstance(stmt, For):
            out.append(stmt)
            continue
        loads = []              # the variables' first values, loaded before the loop
        loaded, stored = [], []  # the stores after it: of elements loaded, of elements stored
        for buffer, indices in _single_elements(stmt, types):
            variable = Var(names.fresh(f"{buffer}_element"), types[buffer])
            before = _stored_before(out, buffer, indices)
            if before is None:
                loads.append(Let(variable.name, variable.type,
                                 Load(buffer, indices, variable.type)))
            else:
                out[before] = Let(variable.name, variable.type, out[before].value)
            stmt = _in_variable(stmt, buffer, indices, variable)
            (stored if before is not None else loaded).append(Store(buffer, indices, variable))
        kept = [*loads, stmt, *loaded]
        if guarded and loads and not _runs(stmt) and not _accessed_next(stmts[at + 1:], loads):
            kept = [If(_nonempty(stmt), tuple(kept))]
        out += [*kept, *stored]
    return tuple(out)


def _runs(loop: For) -> bool:
    """Whether ``loop`` surely runs at least once (constant bounds)."""
    start, stop = loop.start, loop.stop
    if not all(isinstance(b, Const) and isinstance(b.value, int) for b in (start, stop)):
        return False
    return start.value < stop.value if loop.step > 0 else start.value > stop.value


def _nonempty(loop: For) -> Compare:
    return Compare("lt" if loop.step > 0 else "gt", loop.start, loop.stop)


def _accessed_next(rest: tuple[Stmt, ...], loads: list[Let]) -> bool:
    """Whether the statement after a loop is a store that reads or writes
    each element the loop loaded first (so that it exists, and its value
    stored back is overwritten)."""
    if not rest or not isinstance(rest[0], Store):
        return False
    touched = {(n.buffer, n.indices) for n in walk(rest[0]) if isinstance(n, (Load, Store))}
    return all((let.value.buffer, let.value.indices) in touched for let in loads)


def _stored_before(out: list[Stmt], buffer: str, indices: tuple) -> int | None:
    """Where, in the stores ending ``out``, the element is stored last, no
    store after that one reading or writing ``buffer``; None where it is
    not."""
    at = len(out)
    while at and isinstance(out[at - 1], Store):
        at -= 1
        store = out[at]
        if store.buffer == buffer and store.indices == indices:
            return at
        if any(isinstance(n, (Load, Store)) and n.buffer == buffer for n in walk(store)):
            return None
    return None


def _in_variable(loop: For, buffer: str, indices: tuple, variable: Var) -> For:
    def visit(node):
        if isinstance(node, Load) and node.buffer == buffer and node.indices == indices:
            return variable
        if isinstance(node, Store) and node.buffer == buffer and node.indices == indices:
            return Assign(variable.name, rewrite(node.value, visit))
        return None
    return dataclasses.replace(loop, body=rewrite(loop.body, visit))


def _single_elements(loop: For, buffers) -> list[tuple[str, tuple]]:
    """(buffer, indices) of each element of ``buffers`` (parameters: a
    local array stays in memory) that ``loop`` stores to at one place
    throughout and reaches by no other access, which it may keep in a
    variable."""
    nodes = list(walk(loop.body))
    if any(isinstance(n, (Call, AtomicUpdate)) for n in nodes):
        return []
    changing = set(assigned_variables(loop.body)) | set(declared_names(loop.body)) | {loop.var}
    found = []
    for buffer, indices in dict.fromkeys((n.buffer, n.indices) for n in nodes
                                         if isinstance(n, Store) and n.buffer in buffers):
        if any(isinstance(n, Load) or isinstance(n, Var) and n.name in changing
               for n in walk(indices)):
            continue
        others = [a for a in accesses(loop.body, buffer) if a.indices != indices]
        if never_meets(loop, Access(indices, True, ()), others):
            found.append((buffer, indices))
    return found
