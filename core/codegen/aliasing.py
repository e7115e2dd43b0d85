"""Which kernel buffers no other buffer of the kernel can reach, by what
the runtime promises every target: the memory a back end may declare
unaliased (LLVM's ``noalias``, C's ``restrict``)."""
from __future__ import annotations

from ..ir.kernel import KernelFunction


def aliases_nothing(parameter, kernel: KernelFunction) -> bool:
    """Whether no other buffer of ``kernel``'s can reach the memory
    ``parameter``'s loads and stores touch: a ``restrict`` one; an ``out``
    one, made fresh for its node (the runtime never hands an output the
    buffer of one of its node's inputs); an ``in`` one where the kernel
    writes no buffer it is given to update (read-only buffers may overlap
    one another: noalias speaks only of memory that one of them writes)."""
    if parameter.restrict or parameter.direction == "out":
        return True
    return parameter.direction == "in" and not any(
        other.is_buffer and other.direction in ("inout", "private") for other in kernel.params)
