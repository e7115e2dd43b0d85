"""Small analyses of kernel IR shared by passes, the interpreter and back
ends."""
from __future__ import annotations

from .kernel import AtomicUpdate, Call, Stmt, Store, Var
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
