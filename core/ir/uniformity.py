"""Which variables of a kernel differ between instances adjacent in one
replication dimension (*varying*), and which are the same for all of them
(*uniform*).

``Uniformity(kernel, dims)`` is flow-insensitive and by name: a variable
is varying if any assignment to it is, and everything assigned under
varying control (an ``if`` on a varying condition, a loop with varying
bounds) is varying.  A load is varying when its indices are, or when the
kernel writes its buffer (another statement of the same instance may have
changed it).  Used by the cpu target's lane strips and by the tile pass.
"""
from __future__ import annotations

from .kernel import (
    Assign, AtomicUpdate, Expr, For, If, InstanceId, KernelFunction, Let, Load, Stmt, Store,
    Var, While,
)
from .visit import walk


def written_buffers(body: tuple[Stmt, ...]) -> frozenset[str]:
    """Buffers and arrays that some statement of ``body`` writes."""
    return frozenset(s.buffer for s in walk(body) if isinstance(s, (Store, AtomicUpdate)))


class Uniformity:
    """The variables of one kernel varying along replication ``dims``."""

    def __init__(self, kernel: KernelFunction, dims: tuple[int, ...]):
        self.dims = dims
        self.written = written_buffers(kernel.body)
        self.varying: set[str] = set()
        while True:
            before = len(self.varying)
            self._statements(kernel.body, False)
            if len(self.varying) == before:
                break

    def is_varying(self, expr: Expr) -> bool:
        """Whether ``expr`` may differ between adjacent instances."""
        for item in walk(expr):
            if isinstance(item, InstanceId) and item.dim in self.dims:
                return True
            if isinstance(item, Var) and item.name in self.varying:
                return True
            if isinstance(item, Load) and item.buffer in self.written:
                return True
        return False

    def _statements(self, body: tuple[Stmt, ...], varying_control: bool) -> None:
        for stmt in body:
            self._statement(stmt, varying_control)

    def _statement(self, stmt: Stmt, varying_control: bool) -> None:
        if isinstance(stmt, (Let, Assign)):
            if varying_control or (stmt.value is not None and self.is_varying(stmt.value)):
                self.varying.add(stmt.name)
        elif isinstance(stmt, For):
            inner = varying_control or self.is_varying(stmt.start) or self.is_varying(stmt.stop)
            self._statements(stmt.body, inner)
        elif isinstance(stmt, If):
            inner = varying_control or self.is_varying(stmt.cond)
            self._statements(stmt.then_body, inner)
            self._statements(stmt.else_body, inner)
        elif isinstance(stmt, While):
            self._statements(stmt.body, varying_control or self.is_varying(stmt.cond))
