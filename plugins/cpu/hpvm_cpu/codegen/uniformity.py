"""The kernels lane strips (lanes.py) handle, and their varying variables.

``varying_variables(kernel, dims)`` gives the names of variables varying
along any of ``dims`` (hpvm.ir.uniformity), or None when the kernel uses
something lane strips do not handle.
"""
from __future__ import annotations

from hpvm.ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Call, ExprStmt, KernelFunction, Return,
)
from hpvm.ir.uniformity import Uniformity, written_buffers
from hpvm.ir.visit import walk


class Unsupported(Exception):
    """The kernel uses a construct lane strips do not handle."""


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


def varying_variables(kernel: KernelFunction, dims: tuple[int, ...]) -> frozenset[str] | None:
    """The variables of ``kernel`` varying along ``dims``; None when the
    kernel is not supported (see check_supported)."""
    try:
        check_supported(kernel)
    except Unsupported:
        return None
    return frozenset(Uniformity(kernel, dims).varying)
