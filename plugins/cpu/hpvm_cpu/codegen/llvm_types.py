"""How IR scalar types look in LLVM: register types, memory types, constants.

``bool`` is ``i1`` in registers and one byte (``i8``) in memory, like numpy's
bool arrays.  ``f16`` is ``half`` in registers and memory; arithmetic on it
is done in ``float`` (see arithmetic.py).  A narrow storage type (bf16,
f8..., i4 ...) is its storage integer: kernels only move its bits.
"""
from __future__ import annotations

from llvmlite import ir

from hpvm.ir.types import ScalarType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I64 = ir.IntType(64)
HALF = ir.HalfType()
FLOAT = ir.FloatType()
DOUBLE = ir.DoubleType()
POINTER = ir.PointerType()
VOID = ir.VoidType()

_FLOATS = {16: HALF, 32: FLOAT, 64: DOUBLE}

# llvmlite fills the table it escapes string constants and metadata with on
# its first call, unguarded: a second thread compiling at the same moment
# (target._in_parallel) can read it half-filled.  Fill it here, at import.
ir.values._escape_string(b"")


def register_type(type: ScalarType) -> ir.Type:
    """The LLVM type of a value of ``type`` held in a register."""
    type = type.storage_type
    if type.is_bool:
        return I1
    if type.is_float:
        return _FLOATS[type.bits]
    return ir.IntType(type.bits)


def memory_type(type: ScalarType) -> ir.Type:
    """The LLVM type of an element of ``type`` stored in a buffer."""
    return I8 if type.is_bool else register_type(type)


def byte_size(type: ScalarType) -> int:
    """Bytes one element of ``type`` takes in memory."""
    return type.itemsize


def constant(value, type: ScalarType) -> ir.Constant:
    """An LLVM constant of ``type`` holding the Python number ``value``."""
    type = type.storage_type
    if type.is_float:
        return ir.Constant(register_type(type), float(value))
    if type.is_bool:
        return ir.Constant(I1, int(bool(value)))
    return ir.Constant(register_type(type), int(value) & ((1 << type.bits) - 1))


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def load_element(builder: ir.IRBuilder, pointer, type: ScalarType, metadata=None):
    """Load an element of ``type`` (bool bytes become ``i1``: byte != 0);
    ``metadata``: {kind: MDValue} attached to the load."""
    value = builder.load(pointer, typ=memory_type(type), align=byte_size(type))
    attach_metadata(value, metadata)
    if type.is_bool:
        return builder.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    return value


def store_element(builder: ir.IRBuilder, value, pointer, type: ScalarType, metadata=None):
    """Store ``value`` (a register value of ``type``) as one element."""
    if type.is_bool:
        value = builder.zext(value, I8)
    attach_metadata(builder.store(value, pointer, align=byte_size(type)), metadata)


def attach_metadata(instruction, metadata) -> None:
    """Attach ``metadata`` ({kind: MDValue}, or None) to ``instruction``."""
    for kind, node in (metadata or {}).items():
        instruction.set_metadata(kind, node)
