"""``llvm.loop`` metadata: unroll counts, vectorisation hints, and access
groups marking a loop's iterations as independent
(``llvm.loop.parallel_accesses``).

llvmlite's ``add_metadata`` uniques nodes; loop IDs must be self-referential
and access groups distinct, so this file makes its own nodes.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import values


class DistinctNode(values.MDValue):
    """A metadata node printed ``distinct !{...}``; ``self_reference`` puts
    the node itself first (the shape of a loop ID)."""

    def __init__(self, module: ir.Module, operands, self_reference: bool = False):
        super().__init__(module, (), name=str(len(module.metadata)))
        self.operands = ((self,) if self_reference else ()) + tuple(operands)

    def descr(self, buf):
        buf += ("distinct ",)
        super().descr(buf)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def access_group(module: ir.Module) -> DistinctNode:
    """A fresh access group: tag every memory access of one loop with it."""
    return DistinctNode(module, ())


def access_group_list(module: ir.Module, groups) -> values.MDValue | None:
    """The ``llvm.access.group`` operand for accesses inside ``groups``."""
    groups = tuple(groups)
    if not groups:
        return None
    if len(groups) == 1:
        return groups[0]
    return module.add_metadata(list(groups))


def loop_id(module: ir.Module, unroll: int | None = None, parallel_group=None,
            vectorize: bool | None = None) -> DistinctNode | None:
    """The ``llvm.loop`` node for a loop, or None when there is nothing to say.
    ``unroll`` 1 disables unrolling; a larger value requests that count.
    ``vectorize`` True asks LLVM to vectorise the loop, False forbids it,
    None leaves it to LLVM."""
    properties = []
    if unroll == 1:
        properties.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    elif unroll is not None:
        properties.append(module.add_metadata([
            ir.MetaDataString(module, "llvm.loop.unroll.count"), ir.Constant(ir.IntType(32), unroll)]))
    if parallel_group is not None:
        properties.append(module.add_metadata([
            ir.MetaDataString(module, "llvm.loop.parallel_accesses"), parallel_group]))
    if vectorize is not None:
        properties.append(module.add_metadata([
            ir.MetaDataString(module, "llvm.loop.vectorize.enable"),
            ir.Constant(ir.IntType(1), int(vectorize))]))
    if not properties:
        return None
    return DistinctNode(module, properties, self_reference=True)

