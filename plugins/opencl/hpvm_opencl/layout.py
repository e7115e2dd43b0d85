"""The argument list of an OpenCL node kernel, as the renderer writes it and
the device fills it: for each kernel parameter in order, a buffer's pointer
and one ``long`` per dimension (plus, for a ``private`` buffer the kernel
writes, a scratch buffer with one copy per instance), or a scalar; then the
replication sizes (the true ones: the global size may be padded).

It also answers the questions the code generator and the launcher share:
which private buffers are written, whether a kernel synchronises its work
group (barriers, local arrays), where it is used by nodes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from hpvm.ir.graph import Module
from hpvm.ir.kernel import ArrayDecl, AtomicUpdate, Barrier, Call, KernelFunction, Store, Var
from hpvm.ir.types import BufferType
from hpvm.ir.visit import walk


@dataclass(frozen=True)
class Argument:
    """One kernel argument: ``kind`` is buffer, dim (``index``-th dimension
    of buffer ``name``), length (element count of a flat buffer), scratch,
    scalar (IR type ``type``) or count (replication size ``index``)."""

    kind: str
    name: str = ""
    index: int = 0
    type: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def written_private_buffers(kernel: KernelFunction) -> list[str]:
    """Private buffer parameters the kernel may write (stores, atomics, or
    passing them to a helper): they get a per-instance copy."""
    private = {p.name for p in kernel.params if p.is_buffer and p.direction == "private"}
    written: set[str] = set()
    for item in walk(kernel.body):
        if isinstance(item, (Store, AtomicUpdate)):
            written.add(item.buffer)
        elif isinstance(item, Call):
            written.update(a.name for a in item.args if isinstance(a, Var))
    return [p.name for p in kernel.params if p.name in private & written]


def entry_arguments(kernel: KernelFunction, rank: int) -> list[Argument]:
    """The arguments of the entry running ``kernel`` in ``rank`` dims."""
    scratch = set(written_private_buffers(kernel))
    arguments: list[Argument] = []
    for p in kernel.params:
        if isinstance(p.type, BufferType):
            arguments.append(Argument("buffer", p.name))
            if p.type.shape is None:
                arguments.append(Argument("length", p.name))
            else:
                arguments.extend(Argument("dim", p.name, i) for i in range(len(p.type.shape)))
            if p.name in scratch:
                arguments.append(Argument("scratch", p.name))
        else:
            arguments.append(Argument("scalar", p.name, type=p.type.name))
    arguments.extend(Argument("count", index=d) for d in range(rank))
    return arguments


def synchronizes(module: Module, function: str, seen: frozenset = frozenset()) -> bool:
    """True if ``function`` or a helper it calls uses a barrier or a local
    array: its work groups must then be exactly the node's groups."""
    kernel = module.functions.get(function)
    if kernel is None or function in seen:
        return False
    for item in walk(kernel.body):
        if isinstance(item, Barrier) or (isinstance(item, ArrayDecl) and item.space == "local"):
            return True
        if isinstance(item, Call) and synchronizes(module, item.function, seen | {function}):
            return True
    return False
