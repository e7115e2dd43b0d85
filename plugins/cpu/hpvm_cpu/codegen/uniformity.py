"""Which variables of a kernel differ between instances adjacent in one
replication dimension (*varying*), and which are the same for all of them
(*uniform*): the analysis behind lane strips (lanes.py).

``varying_variables(kernel, dims)`` gives the names of variables varying
along any of ``dims``, or
None when the kernel uses something lane strips do not handle.  It is
flow-insensitive and by name: a variable is varying if any assignment to it
is, and everything assigned under varying control (an ``if`` on a varying
condition, a loop with varying bounds) is varying.  A load is varying when
its indices are, or when the kernel writes its buffer (another statement of
the same instance may have changed it).
"""
from __future__ import annotations

from hpvm.ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Call, Expr, ExprStmt, For, If,
    InstanceId, KernelFunction, Let, Load, Return, Stmt, Store, Var, While,
)
from hpvm.ir.visit import walk


class Unsupported(Exception):
    """The kernel uses a construct lane strips do not handle."""


def written_buffers(body: tuple[Stmt, ...]) -> frozenset[str]:
    """Buffers and arrays that some statement of ``body`` writes."""
    return frozenset(s.buffer for s in walk(body) if isinstance(s, (Store, AtomicUpdate)))


def check_supported(kernel: KernelFunction) -> None:
    """Raise Unsupported for calls, returns, barriers, private arrays,
    atomics with a result and written private buffer parameters."""
    written = written_buffers(kernel.body)
    if any(p.direction == "private" and p.name in written for p in kernel.params):
        raise Unsupported("a written private buffer parameter")
    for item in walk(kernel.body):
        if isinstance(item, (Call, ExprStmt, Return, Barrier)):
            raise Unsupported(type(item).__name__)
        if isinstance(item, ArrayDecl) and item.space == "private":
            raise Unsupported("a private array")
        if isinstance(item, AtomicUpdate) and item.result is not None:
            raise Unsupported("an atomic update with a result")


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


def varying_variables(kernel: KernelFunction, dims: tuple[int, ...]) -> frozenset[str] | None:
    """The variables of ``kernel`` varying along ``dims``; None when the
    kernel is not supported (see check_supported)."""
    try:
        check_supported(kernel)
    except Unsupported:
        return None
    return frozenset(Uniformity(kernel, dims).varying)
