"""The calling convention of a compiled node: one array of 8-byte slots.

The generated entry is ``void hpvm_node_<function>(i64 *slots, i64
dim0_begin, i64 dim0_end)``; it runs instances ``[dim0_begin, dim0_end)`` of
replication dimension 0 and all of the inner dimensions.  ``slots`` holds,
in order:

- the replication sizes, one slot per dimension (rank >= 1);
- for each parameter, in declaration order:
  - a buffer: its data pointer, then one slot per dimension (a flat ``[*]``
    buffer has one: its length): the pointer and its size travel together;
    a ``private`` buffer the kernel writes has one more slot, a scratch
    area as large as the buffer, where each instance gets its own copy;
  - a scalar: its value in the first bytes of the slot (little endian;
    bool as one byte, f16 as its 16 bits).

The same layout serves the JIT (marshal.py packs it) and object files
loaded by a runtime written in another language.
"""
from __future__ import annotations

from dataclasses import dataclass

from hpvm.ir.analysis import writes_buffer
from hpvm.ir.kernel import KernelFunction
from hpvm.ir.types import BufferType, ScalarType

ENTRY_PREFIX = "hpvm_node_"
HELPER_PREFIX = "hpvm_fn_"


def entry_symbol(function_name: str) -> str:
    """The exported symbol of the node compiled from ``function_name``."""
    return ENTRY_PREFIX + function_name


def dim_count(type: BufferType) -> int:
    """How many dimensions a buffer passes: its rank, 1 for a flat ``[*]``."""
    return 1 if type.shape is None else len(type.shape)


@dataclass(frozen=True)
class BufferSlots:
    """Where one buffer parameter lives in the slot array."""

    name: str
    type: BufferType
    pointer: int
    dims: tuple[int, ...]
    scratch: int | None = None

    @property
    def element(self) -> ScalarType:
        return self.type.element


@dataclass(frozen=True)
class ScalarSlot:
    """Where one scalar parameter lives in the slot array."""

    name: str
    type: ScalarType
    slot: int


@dataclass(frozen=True)
class ArgumentLayout:
    """The slot layout of one kernel replicated in ``rank`` dimensions;
    ``params`` follows the kernel's parameter order."""

    rank: int
    params: tuple[BufferSlots | ScalarSlot, ...]
    slot_count: int

    @classmethod
    def of(cls, kernel: KernelFunction, rank: int) -> "ArgumentLayout":
        next_slot = rank
        params: list[BufferSlots | ScalarSlot] = []
        for parameter in kernel.params:
            if isinstance(parameter.type, BufferType):
                rank_of_buffer = dim_count(parameter.type)
                dims = tuple(range(next_slot + 1, next_slot + 1 + rank_of_buffer))
                scratch = None
                if parameter.direction == "private" and writes_buffer(kernel.body, parameter.name):
                    scratch = dims[-1] + 1 if dims else next_slot + 1
                params.append(BufferSlots(parameter.name, parameter.type, next_slot, dims, scratch))
                next_slot += 1 + rank_of_buffer + (scratch is not None)
            else:
                params.append(ScalarSlot(parameter.name, parameter.type, next_slot))
                next_slot += 1
        return cls(rank, tuple(params), next_slot)

    @property
    def buffers(self) -> tuple[BufferSlots, ...]:
        return tuple(p for p in self.params if isinstance(p, BufferSlots))

    @property
    def scalars(self) -> tuple[ScalarSlot, ...]:
        return tuple(p for p in self.params if isinstance(p, ScalarSlot))
