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
    """The slot array of one call plus what must outlive it; ``symbols``
    holds the shape symbols and integer scalars the arguments bound."""

    def __init__(self, layout: ArgumentLayout, slots: np.ndarray | None = None):
        self.layout = layout
        self.slots = np.zeros(layout.slot_count, dtype=np.uint64) if slots is None else slots
        self.buffers: dict[str, np.ndarray] = {}
        self.scratch: list[np.ndarray] = []
        self.symbols: dict[str, int] = {}

    @property
    def address(self) -> int:
        return self.slots.ctypes.data

    def with_scratch(self) -> "PackedArguments":
        """A copy with fresh scratch areas for private buffers (one per
        thread: instances of different chunks run at the same time)."""
        copy = PackedArguments(self.layout)
        copy.slots[:] = self.slots
        copy.buffers = self.buffers
        copy.symbols = self.symbols
        copy.scratch = [np.empty(self.buffers[b.name].nbytes, np.uint8) for b in self._private()]
        for area, buffer in zip(copy.scratch, self._private()):
            copy.slots[buffer.scratch] = area.ctypes.data
        return copy

    def _private(self) -> list[BufferSlots]:
        return [b for b in self.layout.buffers if b.scratch is not None]


class Packer:
    """Packs the arguments of one kernel; what does not change between
    calls (names, dtypes, slot positions) is worked out once here."""

    def __init__(self, function: str, layout: ArgumentLayout):
        self.function = function
        self.layout = layout
        self._names = tuple(p.name for p in layout.params)
        self._buffers = tuple((b, b.element.numpy_dtype) for b in layout.buffers)
        self._scalars = tuple((s, s.type.numpy_dtype) for s in layout.scalars)

    def pack(self, args: dict[str, Any], replication: tuple[int, ...] = ()) -> PackedArguments:
        """Check ``args`` and fill the slots; ``replication`` may be left
        out and set later with :meth:`set_replication` (it can depend on
        the symbols the arguments bind)."""
        for name in self._names:
            if name not in args:
                raise _error(self.function, name, "no value given",
                             "pass every parameter of the kernel by name")
        slots = [0] * self.layout.slot_count
        slots[:len(replication)] = replication
        packed = PackedArguments(self.layout, slots)
        for param, dtype in self._buffers:
            _pack_buffer(self.function, packed, param, dtype, args[param.name])
        for param, dtype in self._scalars:
            _pack_scalar(self.function, packed, param, dtype, args[param.name])
        packed.slots = np.array(slots, dtype=np.uint64)
        return packed


def set_replication(packed: PackedArguments, replication: tuple[int, ...]) -> None:
    packed.slots[:len(replication)] = replication


def pack_arguments(function: str, layout: ArgumentLayout, args: dict[str, Any],
                   replication: tuple[int, ...]) -> PackedArguments:
    """Check ``args`` against the kernel's parameters and fill the slots.
    Missing ``out`` buffers are not made here: the caller gives every
    buffer (see CompiledKernel.run)."""
    return Packer(function, layout).pack(args, replication)


def _pack_buffer(function: str, packed: PackedArguments, param: BufferSlots, dtype: np.dtype,
                 array) -> None:
    if not isinstance(array, np.ndarray) or array.dtype != dtype:
        got = type(array).__name__ if not isinstance(array, np.ndarray) else f"an array of {array.dtype}"
        raise _error(function, param.name, f"expects a numpy array of {dtype}, got {got}",
                     f"pass np.asarray(value, dtype=np.{dtype})")
    flags = array.flags
    if not flags.c_contiguous or not flags.writeable:
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
            _check_dim(function, param, declared, actual, packed.symbols)
    packed.buffers[param.name] = array
    slots = packed.slots
    slots[param.pointer] = array.ctypes.data
    for slot, size in zip(param.dims, dims):
        slots[slot] = size


def _check_dim(function: str, param: BufferSlots, declared, actual: int, symbols: dict) -> None:
    if isinstance(declared, int):
        if declared != actual:
            raise _error(function, param.name, f"has type {param.type} but a dimension is {actual}",
                         "pass an array of the declared shape")
    elif symbols.setdefault(declared, actual) != actual:
        raise _error(function, param.name,
                     f"binds shape symbol '{declared}' to {actual}, another buffer bound it to "
                     f"{symbols[declared]}", "pass buffers whose shapes agree")


def _pack_scalar(function: str, packed: PackedArguments, param: ScalarSlot, dtype: np.dtype,
                 value) -> None:
    number = _number(function, param, value)
    symbols = packed.symbols
    if param.type.is_int:
        if param.name in symbols and symbols[param.name] != number:
            raise _error(function, param.name,
                         f"is {number} but a buffer's shape says {symbols[param.name]}",
                         "pass the size that matches the buffers")
        symbols[param.name] = number
    packed.slots[param.slot] = _bits(number, dtype)


def scalar_bits(function: str, param: ScalarSlot, value) -> int:
    """The slot value of scalar ``value`` for ``param``."""
    return _bits(_number(function, param, value), param.type.numpy_dtype)


def _number(function: str, param: ScalarSlot, value):
    try:
        return normalize_constant(np.asarray(value).item(), param.type)
    except (TypeError, ValueError, OverflowError):
        raise _error(function, param.name, f"expects a {param.type} scalar, got {value!r}",
                     "pass a Python number or a 0-d array") from None


def _bits(number, dtype: np.dtype) -> int:
    """The value's bytes, little endian, in the low bytes of its slot."""
    return int.from_bytes(np.array(number, dtype=dtype).tobytes(), "little")


def _error(function: str, parameter: str, message: str, fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(Location(function=function, port=parameter), message, fix))
