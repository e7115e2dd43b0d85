"""Elements a loop updates kept in a variable while it runs (scalar
replacement, as compilers call it).

``tmp[i, j] = 0; for k: tmp[i, j] = tmp[i, j] + a[i, k] * b[k, j]``
reads and writes one element at every step: as a chain through memory.
With the element in a variable::

    let tmp_ij = 0
    for k: tmp_ij = tmp_ij + a[i, k] * b[k, j]
    tmp[i, j] = tmp_ij

the loop is a fold into a variable, which register tiles and vector
lanes take. It computes the same where every access of the buffer in the
loop is to that one element: the same index expressions, which read no
memory and nothing the loop assigns or declares (its variable included),
and nothing else in the loop (a call, an atomic update) may reach the
buffer. Buffers of other names are other memory, as everywhere in the IR.
A store of the element just before the loop becomes the variable's first
value; otherwise the variable starts from a load. The element is stored
once after the loop.
"""
from __future__ import annotations

import dataclasses

from ..ir.analysis import assigned_variables
from ..ir.kernel import (
    Assign, AtomicUpdate, Call, For, KernelFunction, Let, Load, Stmt, Store, Var,
)
from ..ir.visit import rewrite, walk
from .names import NameGenerator, declared_names, function_names


def promoted(stmts: tuple[Stmt, ...], function: KernelFunction) -> tuple[Stmt, ...]:
    """``stmts`` (of ``function``) with each loop at their top level
    keeping the elements it alone updates in variables (module
    docstring), named apart from ``function``'s names."""
    types = {p.name: p.type.element for p in function.params if p.is_buffer}
    names = NameGenerator(function_names(function))
    out: list[Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, For):
            stores_after = []
            for buffer, indices in _single_elements(stmt):
                name = names.fresh(f"{buffer}_element")
                variable = Var(name, types[buffer])
                at = _stored_before(out, buffer, indices)
                if at is None:
                    out.append(Let(name, variable.type, Load(buffer, indices, variable.type)))
                else:
                    out[at] = Let(name, variable.type, out[at].value)
                stmt = _in_variable(stmt, buffer, variable)
                stores_after.append(Store(buffer, indices, variable))
            out += [stmt, *stores_after]
        else:
            out.append(stmt)
    return tuple(out)


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


def _in_variable(loop: For, buffer: str, variable: Var) -> For:
    def visit(node):
        if isinstance(node, Load) and node.buffer == buffer:
            return variable
        if isinstance(node, Store) and node.buffer == buffer:
            return Assign(variable.name, rewrite(node.value, visit))
        return None
    return dataclasses.replace(loop, body=rewrite(loop.body, visit))


def _single_elements(loop: For) -> list[tuple[str, tuple]]:
    """(buffer, indices) of each buffer ``loop`` stores to at one element
    only, which it may keep in a variable."""
    nodes = list(walk(loop.body))
    if any(isinstance(n, (Call, AtomicUpdate)) for n in nodes):
        return []
    changing = set(assigned_variables(loop.body)) | set(declared_names(loop.body)) | {loop.var}
    found = []
    for buffer in dict.fromkeys(n.buffer for n in nodes if isinstance(n, Store)):
        accesses = {n.indices for n in nodes if isinstance(n, (Load, Store)) and
                    n.buffer == buffer}
        if len(accesses) != 1:
            continue
        (indices,) = accesses
        if any(isinstance(n, Load) or isinstance(n, Var) and n.name in changing
               for n in walk(indices)):
            continue
        found.append((buffer, indices))
    return found
