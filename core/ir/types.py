"""Types of the HPVM IR: scalar types and buffer types.

Scalars are the usual fixed-width numeric types, and the narrow *storage
types* models keep weights and activations in (bf16, the float8 and float4
formats, 4- and 2-bit integers): an element of one takes the bytes of its
``storage`` integer (numpy's ml_dtypes layout), tensor ops compute on it in
its ``compute`` type (f32 or i32) and round the results back, and kernels
only read and write its bits (tensor_ops/storage.py).  A buffer is a typed array
whose shape is either unknown (``f32[*]``: a flat array of any length) or a
tuple of dimensions, each a non-negative integer or a *shape symbol* (a name
such as ``"H"``).  Shape symbols are bound from the actual arrays when a node
runs: inside a kernel they read as ``i64`` values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    """A scalar type: ``kind`` is one of bool, int, uint, float."""

    name: str
    kind: str
    bits: int
    storage: str | None = None
    """Narrow storage types: the name of the unsigned integer type whose
    bytes hold one element; None for the types kernels compute in."""

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_narrow(self) -> bool:
        """A storage type (bf16, f8*, f4e2m1, i4, u4, i2, u2)."""
        return self.storage is not None

    @property
    def storage_type(self) -> "ScalarType":
        """The type kernels read and write an element as: the storage
        integer of a narrow type, the type itself otherwise."""
        return SCALAR_TYPES[self.storage] if self.storage else self

    @property
    def compute_type(self) -> "ScalarType":
        """The type tensor ops compute a narrow type's values in (f32 for
        the floats, i32 for the integers); the type itself otherwise."""
        if not self.storage:
            return self
        return F32 if self.is_float else I32

    @property
    def itemsize(self) -> int:
        """Bytes one element takes in memory (a bool: one)."""
        return self.numpy_dtype.itemsize

    @property
    def numpy_dtype(self) -> np.dtype:
        return _numpy_dtype(_NUMPY_NAMES[self.name])


BOOL = ScalarType("bool", "bool", 1)
I8 = ScalarType("i8", "int", 8)
I16 = ScalarType("i16", "int", 16)
I32 = ScalarType("i32", "int", 32)
I64 = ScalarType("i64", "int", 64)
U8 = ScalarType("u8", "uint", 8)
U16 = ScalarType("u16", "uint", 16)
U32 = ScalarType("u32", "uint", 32)
U64 = ScalarType("u64", "uint", 64)
F16 = ScalarType("f16", "float", 16)
F32 = ScalarType("f32", "float", 32)
F64 = ScalarType("f64", "float", 64)

BF16 = ScalarType("bf16", "float", 16, "u16")
F8E4M3FN = ScalarType("f8e4m3fn", "float", 8, "u8")
F8E4M3FNUZ = ScalarType("f8e4m3fnuz", "float", 8, "u8")
F8E5M2 = ScalarType("f8e5m2", "float", 8, "u8")
F8E5M2FNUZ = ScalarType("f8e5m2fnuz", "float", 8, "u8")
F4E2M1 = ScalarType("f4e2m1", "float", 4, "u8")
I4 = ScalarType("i4", "int", 4, "u8")
U4 = ScalarType("u4", "uint", 4, "u8")
I2 = ScalarType("i2", "int", 2, "u8")
U2 = ScalarType("u2", "uint", 2, "u8")
NARROW_TYPES = (BF16, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1, I4, U4, I2, U2)

SCALAR_TYPES: dict[str, ScalarType] = {
    t.name: t for t in (BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32, F64) + NARROW_TYPES
}

_NUMPY_NAMES = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
    "bf16": "bfloat16", "f8e4m3fn": "float8_e4m3fn", "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2": "float8_e5m2", "f8e5m2fnuz": "float8_e5m2fnuz", "f4e2m1": "float4_e2m1fn",
    "i4": "int4", "u4": "uint4", "i2": "int2", "u2": "uint2",
}


NARROW_DTYPE_NAMES = {_NUMPY_NAMES[t.name]: t for t in NARROW_TYPES}
"""numpy's (ml_dtypes') dtype name -> the narrow storage type."""


def _numpy_dtype(name: str) -> np.dtype:
    """numpy's dtype ``name``; the narrow ones come from ml_dtypes (imported
    only when one is used)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def scalar_type_of_dtype(dtype) -> ScalarType:
    """The IR scalar type of a numpy dtype; ValueError if there is none."""
    dtype = np.dtype(dtype)
    for name, numpy_name in _NUMPY_NAMES.items():
        if dtype.name == numpy_name or dtype == _numpy_dtype(numpy_name):
            return SCALAR_TYPES[name]
    raise ValueError(f"numpy dtype {dtype} has no HPVM scalar type; use one of "
                     f"{', '.join(_NUMPY_NAMES.values())}")


Dim = Union[int, str]
"""One buffer dimension: a fixed size or the name of a shape symbol."""


@dataclass(frozen=True)
class BufferType:
    """An array of ``element``; ``shape`` None means any length (flat)."""

    element: ScalarType
    shape: tuple[Dim, ...] | None = None

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.element}[*]"
        return f"{self.element}[{', '.join(str(d) for d in self.shape)}]"

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def symbols(self) -> tuple[str, ...]:
        """Shape symbols in order of first appearance."""
        if self.shape is None:
            return ()
        seen: list[str] = []
        for dim in self.shape:
            if isinstance(dim, str) and dim not in seen:
                seen.append(dim)
        return tuple(seen)

    def concrete_shape(self, symbols: dict[str, int]) -> tuple[int, ...]:
        """The shape with every symbol replaced by its value in ``symbols``."""
        if self.shape is None:
            raise ValueError(f"buffer type {self} has no shape")
        return tuple(symbols[d] if isinstance(d, str) else d for d in self.shape)


Type = Union[ScalarType, BufferType]


def is_buffer(t: Type) -> bool:
    return isinstance(t, BufferType)
