"""Which kernel buffers no other buffer of the kernel can reach, by what
the runtime promises every target: the memory a back end may declare
unaliased (LLVM's ``noalias``, C's ``restrict``)."""
from __future__ import annotations

from ..ir.kernel import KernelFunction


def aliases_nothing(parameter, kernel: KernelFunction, updated: bool = False) -> bool:
    """Whether no other buffer of ``kernel``'s can reach the memory
    ``parameter``'s loads and stores touch: a ``restrict`` one; an ``out``
    one, made fresh for its node (the runtime never hands an output the
    buffer of one of its node's inputs); an ``in`` one where the kernel
    writes no buffer it is given to update (read-only buffers may overlap
    one another: noalias speaks only of memory that one of them writes).

    ``updated``: also an ``inout`` one, and an ``in`` one beside it: the
    runtime never hands a buffer a node updates in place memory that
    another argument of the node reads (memory.acquire_for_update, the
    static planner's ``_updated``; a donated input sharing memory with
    another is copied, donation.usable_donations).  The cpu declares them
    so (LLVM's SLP vectoriser then moves symm's loads of ``B`` past its
    stores to ``C``: 147 -> 35 ms at 1000^2 on 2 cores); OpenCL's
    ``restrict`` does not yet (it changes gpu_opencl's per_item layouts,
    steps.py: not measured on a GPU)."""
    if parameter.restrict or parameter.direction == "out":
        return True
    writes = ("private",) if updated else ("inout", "private")
    return parameter.direction in (("in", "inout") if updated else ("in",)) and not any(
        other.is_buffer and other.direction in writes for other in kernel.params)
