"""Which elements of a buffer each instance of a node touches: the
dependence test of node fusion (and of any pass that moves work between
instances).

An access is *instance-owned* when, for every replication dimension d, one
of its indices is the instance's own id ``instance_id(d)`` (directly, or
through a variable declared once as ``let y: i64 = instance_id(0)`` and
never assigned), always at the same position.  Two instances then never
touch the same element, whatever the other indices are: ``x[c, y, x]``
with ``c`` a loop variable is owned; ``x[y, x + 1]`` (a stencil) is not.
"""
from __future__ import annotations

from .analysis import assigned_variables
from .kernel import (
    AtomicUpdate, Call, Expr, InstanceId, KernelFunction, Let, Load, Stmt, Store, Var,
)
from .visit import walk


def instance_aliases(body: tuple[Stmt, ...]) -> dict[str, int]:
    """Variables that always hold an instance id: name -> dimension."""
    declared: dict[str, list] = {}
    for node in walk(body):
        if isinstance(node, Let):
            declared.setdefault(node.name, []).append(node.value)
    assigned = assigned_variables(body)
    return {name: values[0].dim for name, values in declared.items()
            if len(values) == 1 and name not in assigned and isinstance(values[0], InstanceId)}


def instance_dimension(index: Expr, aliases: dict[str, int]) -> int | None:
    """The dimension whose instance id ``index`` is, or None."""
    if isinstance(index, InstanceId):
        return index.dim
    if isinstance(index, Var):
        return aliases.get(index.name)
    return None


def owned_positions(function: KernelFunction, buffer: str, rank: int) -> tuple[int, ...] | None:
    """Where every access of ``function`` to ``buffer`` has the instance
    ids of dimensions ``0 .. rank-1`` (position per dimension), when all
    its accesses are instance-owned at the same positions; None when one
    is not, or when the buffer is used otherwise (passed to a call, updated
    atomically)."""
    aliases = instance_aliases(function.body)
    return access_positions(function.body, buffer, rank,
                            lambda index: instance_dimension(index, aliases))


def access_positions(stmts, buffer: str, rank: int, dimension_of) -> tuple[int, ...] | None:
    """The index position of each dimension ``0 .. rank-1`` in the accesses
    of ``stmts`` to ``buffer``, where ``dimension_of(index)`` says which
    dimension an index owns (None: none), when every access has them all at
    the same positions (``()`` when there is no access); None otherwise, or
    when the buffer is updated atomically or passed to a call."""
    found: set[tuple[int, ...]] = set()
    for node in walk(stmts):
        if isinstance(node, (Load, Store)) and node.buffer == buffer:
            dims = [dimension_of(i) for i in node.indices]
            try:
                found.add(tuple(dims.index(d) for d in range(rank)))
            except ValueError:
                return None
        elif isinstance(node, AtomicUpdate) and node.buffer == buffer:
            return None
        elif isinstance(node, Call) and any(isinstance(a, Var) and a.name == buffer
                                            for a in node.args):
            return None
    if len(found) > 1:
        return None
    return found.pop() if found else ()
