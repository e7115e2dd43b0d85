"""Python values to the slot array of abi.py, with the checks the
generated code leaves out: dtypes, ranks, fixed dimensions and agreeing
shape symbols."""
from __future__ import annotations

from typing import Any

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.kernel import normalize_constant

from .abi import ArgumentLayout, BufferSlots, ScalarSlot


class PackedArguments:
    """The slot array of one call plus what must outlive it."""

    def __init__(self, layout: ArgumentLayout):
        self.layout = layout
        self.slots = np.zeros(layout.slot_count, dtype=np.uint64)
        self.buffers: dict[str, np.ndarray] = {}
        self.scratch: list[np.ndarray] = []

    @property
    def address(self) -> int:
        return self.slots.ctypes.data

    def with_scratch(self) -> "PackedArguments":
        """A copy with fresh scratch areas for private buffers (one per
        thread: instances of different chunks run at the same time)."""
        copy = PackedArguments(self.layout)
        copy.slots[:] = self.slots
        copy.buffers = self.buffers
        copy.scratch = [np.empty(self.buffers[b.name].nbytes, np.uint8) for b in self._private()]
        for area, buffer in zip(copy.scratch, self._private()):
            copy.slots[buffer.scratch] = area.ctypes.data
        return copy

    def _private(self) -> list[BufferSlots]:
        return [b for b in self.layout.buffers if b.scratch is not None]


def pack_arguments(function: str, layout: ArgumentLayout, args: dict[str, Any],
                   replication: tuple[int, ...]) -> PackedArguments:
    """Check ``args`` against the kernel's parameters and fill the slots.
    Missing ``out`` buffers are not made here: the caller gives every
    buffer (see CompiledKernel.run)."""
    packed = PackedArguments(layout)
    for dim, size in enumerate(replication):
        packed.slots[dim] = size
    symbols: dict[str, int] = {}
    for param in layout.params:
        if param.name not in args:
            raise _error(function, param.name, "no value given",
                         "pass every parameter of the kernel by name")
        if isinstance(param, BufferSlots):
            _pack_buffer(function, packed, param, args[param.name], symbols)
    for param in layout.scalars:
        _pack_scalar(function, packed, param, args[param.name], symbols)
    return packed


def _pack_buffer(function: str, packed: PackedArguments, param: BufferSlots, array,
                 symbols: dict[str, int]) -> None:
    dtype = param.element.numpy_dtype
    if not isinstance(array, np.ndarray) or array.dtype != dtype:
        got = type(array).__name__ if not isinstance(array, np.ndarray) else f"an array of {array.dtype}"
        raise _error(function, param.name, f"expects a numpy array of {dtype}, got {got}",
                     f"pass np.asarray(value, dtype=np.{dtype})")
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise _error(function, param.name, "needs a C-contiguous, writeable array",
                     "pass np.ascontiguousarray(value)")
    shape = param.type.shape
    if shape is None:
        dims = (array.size,)
    else:
        if array.ndim != len(shape):
            raise _error(function, param.name,
                         f"has type {param.type} but the array has shape {array.shape}",
                         f"pass an array of rank {len(shape)}")
        dims = array.shape
        for declared, actual in zip(shape, dims):
            _check_dim(function, param, declared, actual, symbols)
    packed.buffers[param.name] = array
    packed.slots[param.pointer] = array.ctypes.data
    for slot, size in zip(param.dims, dims):
        packed.slots[slot] = size


def _check_dim(function: str, param: BufferSlots, declared, actual: int, symbols: dict) -> None:
    if isinstance(declared, int):
        if declared != actual:
            raise _error(function, param.name, f"has type {param.type} but a dimension is {actual}",
                         "pass an array of the declared shape")
    elif symbols.setdefault(declared, actual) != actual:
        raise _error(function, param.name,
                     f"binds shape symbol '{declared}' to {actual}, another buffer bound it to "
                     f"{symbols[declared]}", "pass buffers whose shapes agree")


def _pack_scalar(function: str, packed: PackedArguments, param: ScalarSlot, value,
                 symbols: dict[str, int]) -> None:
    try:
        number = normalize_constant(np.asarray(value).item(), param.type)
    except (TypeError, ValueError, OverflowError):
        raise _error(function, param.name, f"expects a {param.type} scalar, got {value!r}",
                     "pass a Python number or a 0-d array") from None
    if param.name in symbols and param.type.is_int and symbols[param.name] != number:
        raise _error(function, param.name,
                     f"is {number} but a buffer's shape says {symbols[param.name]}",
                     "pass the size that matches the buffers")
    raw = np.array(number, dtype=param.type.numpy_dtype).tobytes()
    packed.slots[param.slot:param.slot + 1].view(np.uint8)[:len(raw)] = np.frombuffer(raw, np.uint8)


def _error(function: str, parameter: str, message: str, fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(Location(function=function, port=parameter), message, fix))
