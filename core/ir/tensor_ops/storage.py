"""Narrow storage types (bf16, the float8 and float4 formats, 4- and 2-bit
integers; ir/types.py) in tensor ops.

A tensor op on narrow values computes in their ``compute`` type (f32 or
i32) and rounds its results back: ``evaluate`` widens the inputs, runs
the op and narrows the outputs; a lowered kernel reads a narrow element as
its storage integer and decodes it (exactly), and encodes what it stores.
Both round a float to nearest, ties to even, through f32, as ml_dtypes
does; a ``cast`` with ``saturate`` (ONNX's default) to a float8 type
clamps values out of range (infinities too) to the largest finite ones,
where otherwise they become infinity or NaN as the format has them.
Integers wrap.  The interpreter (numpy and ml_dtypes) and every kernel
give the same bits.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..graph import TensorBody
from ..kernel import (
    AtomicUpdate, Bitcast, Cast, Const, Expr, Intrinsic, KernelFunction, Load, Select, Store,
)
from ..parameter import Parameter
from ..types import BOOL, F32, I32, NARROW_DTYPE_NAMES, SCALAR_TYPES, U32, BufferType, ScalarType
from ..visit import rewrite, walk


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format of ``exponent`` and ``mantissa`` bits and a
    sign.  ``specials``: ``ieee`` (infinity and NaNs at the top exponent),
    ``fn`` (no infinity; NaN is all ones), ``fnuz`` (no infinity, no -0;
    NaN is the code of -0), ``finite`` (no infinity or NaN; NaN becomes
    -0, as ml_dtypes makes it)."""

    exponent: int
    mantissa: int
    bias: int
    specials: str

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exponent + self.mantissa)

    @property
    def largest(self) -> int:
        """The code of the largest finite magnitude."""
        top = self.sign_bit - 1
        return {"ieee": top - (1 << self.mantissa), "fn": top - 1}.get(self.specials, top)

    @property
    def overflow(self) -> int:
        """The magnitude's code a value too large becomes (unsaturated)."""
        return {"ieee": ((1 << self.exponent) - 1) << self.mantissa,
                "fn": self.sign_bit - 1}.get(self.specials, self.largest)

    @property
    def nan(self) -> int:
        if self.specials == "ieee":
            return self.overflow | (1 << (self.mantissa - 1))
        return self.sign_bit - 1 if self.specials == "fn" else self.sign_bit


FLOAT_FORMATS = {
    "bf16": FloatFormat(8, 7, 127, "ieee"),
    "f8e4m3fn": FloatFormat(4, 3, 7, "fn"),
    "f8e4m3fnuz": FloatFormat(4, 3, 8, "fnuz"),
    "f8e5m2": FloatFormat(5, 2, 15, "ieee"),
    "f8e5m2fnuz": FloatFormat(5, 2, 16, "fnuz"),
    "f4e2m1": FloatFormat(2, 1, 1, "finite"),
}
SATURATING = ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz")
"""The types a saturating cast clamps (ONNX's Cast ``saturate``)."""


def has_narrow(types) -> bool:
    return any(t.element.is_narrow for t in types)


# numpy: the interpreter's side ---------------------------------------------
def widen_array(array: np.ndarray) -> np.ndarray:
    """A narrow-typed array in its compute type (other arrays unchanged)."""
    narrow = NARROW_DTYPE_NAMES.get(array.dtype.name)
    return array if narrow is None else array.astype(narrow.compute_type.numpy_dtype)


def narrow_array(array: np.ndarray, type: ScalarType, saturate: bool = False) -> np.ndarray:
    """``array`` (a compute-type result) rounded to narrow ``type``."""
    if type.is_float:
        values = np.asarray(array).astype(np.float32)
        if saturate and type.name in SATURATING:
            import ml_dtypes
            info = ml_dtypes.finfo(type.numpy_dtype)
            values = np.clip(values, np.float32(info.min), np.float32(info.max))
        with np.errstate(all="ignore"):
            return values.astype(type.numpy_dtype)
    with np.errstate(all="ignore"):
        bits = np.asarray(array).astype(np.int64) & ((1 << type.bits) - 1)
    return bits.astype(np.uint8).view(type.numpy_dtype)


# kernels ---------------------------------------------------------------------
def _u32(value: int) -> Const:
    return Const(value, U32)


def decode(bits: Expr, type: ScalarType) -> Expr:
    """The value of ``type`` whose storage bits are ``bits``, in its compute
    type (exact)."""
    if not type.is_float:
        width = 1 << type.bits
        value = Cast(bits, I32) & Const(width - 1, I32)
        if not type.is_signed:
            return value
        return Select(value.ge(Const(width // 2, I32)), value - Const(width, I32), value)
    if type.name == "bf16":
        return Bitcast(Cast(bits, U32) << _u32(16), F32)
    f = FLOAT_FORMATS[type.name]
    code = Cast(bits, U32)
    magnitude = code & _u32(f.sign_bit - 1)
    exponent = magnitude >> _u32(f.mantissa)
    normal = Bitcast((magnitude + _u32((127 - f.bias) << f.mantissa)) << _u32(23 - f.mantissa),
                     F32)
    small = Cast(magnitude, F32) * Const(2.0 ** (1 - f.bias - f.mantissa), F32)
    value = Select(exponent.eq(_u32(0)), small, normal)
    if f.specials == "ieee":
        top = _u32((1 << f.exponent) - 1)
        special = Select(magnitude.eq(_u32(f.overflow)), Const(float("inf"), F32),
                         Const(float("nan"), F32))
        value = Select(exponent.eq(top), special, value)
    elif f.specials == "fn":
        value = Select(magnitude.eq(_u32(f.nan)), Const(float("nan"), F32), value)
    negative = (code & _u32(f.sign_bit)).ne(_u32(0))
    value = Select(negative, -value, value)
    if f.specials == "fnuz":
        value = Select(code.eq(_u32(f.nan)), Const(float("nan"), F32), value)
    return value


def encode(value: Expr, type: ScalarType, saturate: bool = False) -> Expr:
    """The storage bits of ``value`` (of ``type``'s compute type) rounded
    to ``type``; see the module's rules."""
    storage = type.storage_type
    if not type.is_float:
        return Cast(Cast(value, I32) & Const((1 << type.bits) - 1, I32), storage)
    f = FLOAT_FORMATS[type.name]
    value = value if value.type == F32 else Cast(value, F32)
    bits = Bitcast(value, U32)
    if type.name == "bf16":  # f32's exponent: its upper half, rounded
        quiet = (bits >> _u32(16)) | _u32(0x40)
        nan = (bits & _u32(0x7FFFFFFF)).gt(_u32(0x7F800000))
        return Cast(Select(nan, quiet, _rounded_bits(bits, 16)), storage)
    magnitude = bits & _u32(0x7FFFFFFF)
    rounded = _rounded_bits(magnitude, 23 - f.mantissa)
    normal = rounded - _u32((127 - f.bias) << f.mantissa)
    scaled = Bitcast(magnitude, F32) * Const(2.0 ** (f.bias - 1 + f.mantissa), F32)
    small = Cast(_round_half_even(scaled), U32)
    code = Select(magnitude.lt(_u32((128 - f.bias) << 23)), small, normal)
    too_large = code.gt(_u32(f.largest))
    if saturate and type.name in SATURATING:
        code = Select(too_large, _u32(f.largest), code)
    elif f.specials == "fnuz":
        code = Select(too_large, _u32(f.nan), code)
    else:
        code = Select(too_large, _u32(f.overflow), code)
    sign = (bits >> _u32(31)) << _u32(f.exponent + f.mantissa)
    if f.specials == "fnuz":  # no -0, and NaN's code has the sign bit
        keeps_sign = Select(code.eq(_u32(0)), Const(False, BOOL), code.ne(_u32(f.nan)))
        sign = Select(keeps_sign, sign, _u32(0))
    signed = code | sign
    nan = magnitude.gt(_u32(0x7F800000))
    if f.specials == "finite":  # no NaN: ml_dtypes makes it the zero of the other sign
        nan_code = sign ^ _u32(f.sign_bit)
    else:
        nan_code = _u32(f.nan) | (sign if f.specials in ("ieee", "fn") else _u32(0))
    return Cast(Select(nan, nan_code, signed), storage)


def _rounded_bits(bits: Expr, shift: int) -> Expr:
    """``bits >> shift``, rounded to nearest, ties to even."""
    odd = (bits >> _u32(shift)) & _u32(1)
    return (bits + _u32((1 << (shift - 1)) - 1) + odd) >> _u32(shift)


def _round_half_even(x: Expr) -> Expr:
    low = Intrinsic("floor", (x,))
    fraction = x - low
    half = Const(0.5, x.type)
    odd = (low - Const(2.0, x.type) * Intrinsic("floor", (low * half,))).eq(Const(1.0, x.type))
    up = Select(fraction.gt(half), Const(True, BOOL),
                Select(fraction.eq(half), odd, Const(False, BOOL)))
    return Select(up, low + Const(1.0, x.type), low)


# the lowering of a node with narrow ports ---------------------------------------
def widened_attrs(op: str, attrs) -> dict:
    """An op's attributes on widened ports: a cast to a narrow type casts to
    its compute type."""
    attrs = dict(attrs)
    if op == "cast":
        attrs["to"] = SCALAR_TYPES[attrs["to"]].compute_type.name
    return attrs


def saturates(op: str, attrs) -> bool:
    """Whether the op's narrow results saturate (a cast with ``saturate``)."""
    return op == "cast" and bool(attrs.get("saturate", True))


def widened_body(body: TensorBody) -> TensorBody:
    """``body`` with every narrow port in its compute type."""
    params = tuple(dataclasses.replace(p, type=_widened(p.type)) for p in body.params)
    return dataclasses.replace(body, params=params, attrs=widened_attrs(body.op, body.attrs))


def _widened(t: BufferType) -> BufferType:
    return dataclasses.replace(t, element=t.element.compute_type)


def narrowed_kernel(function: KernelFunction, params: tuple[Parameter, ...],
                    saturate: bool) -> KernelFunction:
    """``function`` (lowered from the widened body) over the narrow
    ``params``: its loads of narrow buffers decode, its stores encode.
    ValueError when it reads back or updates a narrow result (its
    intermediate values would be rounded)."""
    narrow = {p.name: p.type.element for p in params if p.type.element.is_narrow}
    results = {p.name for p in params if p.direction != "in" and p.name in narrow}
    for item in walk(function.body):
        if isinstance(item, Load) and item.buffer in results or (
                isinstance(item, AtomicUpdate) and item.buffer in narrow):
            raise ValueError(f"its kernel reads back its {narrow[item.buffer]} result "
                             f"'{item.buffer}'")

    def visit(node):
        if isinstance(node, Load) and node.buffer in narrow:
            element = narrow[node.buffer]
            return decode(dataclasses.replace(node, type=element.storage_type), element)
        if isinstance(node, Store) and node.buffer in narrow:  # its value is rewritten
            return dataclasses.replace(node, value=encode(node.value, narrow[node.buffer],
                                                          saturate))
        return None

    return dataclasses.replace(function, params=params, body=rewrite(function.body, visit))
