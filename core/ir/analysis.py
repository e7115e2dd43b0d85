"""Small analyses of kernel IR shared by passes, the interpreter and back
ends."""
from __future__ import annotations

from .kernel import Assign, AtomicUpdate, Barrier, Call, For, Load, Stmt, Store, Var
from .visit import walk


def writes_buffer(stmts: tuple[Stmt, ...], name: str) -> bool:
    """Whether ``stmts`` may write buffer ``name``: a store or atomic update
    to it, or passing it to a call (the callee may write it)."""
    for node in walk(stmts):
        if isinstance(node, (Store, AtomicUpdate)) and node.buffer == name:
            return True
        if isinstance(node, Call) and any(isinstance(a, Var) and a.name == name
                                          for a in node.args):
            return True
    return False


def assigned_variables(stmts) -> set[str]:
    """Variables ``stmts`` assign (``x = ...``, or an atomic update's result)."""
    found = set()
    for node in walk(stmts):
        if isinstance(node, Assign):
            found.add(node.name)
        elif isinstance(node, AtomicUpdate) and node.result:
            found.add(node.result)
    return found


def bound_dependences(loop: For, bodies) -> tuple[bool, set[str]]:
    """What could make ``loop``'s bounds change while ``bodies`` run:
    (whether they read memory or call a function, the variables they read
    that ``bodies`` assign).  Passes that evaluate the bounds again around
    a transformed loop need both to be empty."""
    bounds = (loop.start, loop.stop)
    reads_memory = any(isinstance(n, (Load, Call)) for n in walk(bounds))
    read = {n.name for n in walk(bounds) if isinstance(n, Var)}
    return reads_memory, read & set().union(*(assigned_variables(b) for b in bodies))


def uses_barrier(module, function: str, seen: frozenset = frozenset()) -> bool:
    """Whether kernel ``function`` of ``module``, or a helper it calls,
    waits at a work-group barrier (targets without work groups refuse it)."""
    kernel = module.functions.get(function)
    if kernel is None or function in seen:
        return False
    return any(isinstance(item, Barrier) or (isinstance(item, Call) and uses_barrier(
        module, item.function, seen | {function})) for item in walk(kernel.body))
