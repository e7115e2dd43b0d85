"""Numpy implementations of the kernel IR's scalar operations, with the C
semantics the IR prescribes (see hpvm.ir.kernel): wrapping integers,
truncating integer division, shift counts modulo the bit width, float math
kept in its own type.

Every function takes and returns numpy values (0-d or 1-d over instances)
of the operation's dtype.  Callers run them under ``np.errstate(all="ignore")``
because wraparound is the intended behaviour, not a warning.  Division by
zero is checked by the caller, which knows which instances are active.
"""
from __future__ import annotations

import numpy as np

from hpvm.ir.types import ScalarType


def _shift_count(count, dtype: np.dtype):
    bits = dtype.itemsize * 8
    return (np.asarray(count).astype(np.int64) & (bits - 1)).astype(dtype)


def _int_div(a, b):
    # a - fmod(a, b) is an exact multiple of b, so floor division is exact
    # and equals C's truncating division (INT_MIN / -1 wraps to INT_MIN).
    return np.floor_divide(a - np.fmod(a, b), b)


def _div(a, b):
    if np.asarray(a).dtype.kind in "iu":
        return _int_div(a, b)
    return np.divide(a, b)


def _rem(a, b):
    return np.fmod(a, b)


def _min(a, b):
    return np.fmin(a, b) if np.asarray(a).dtype.kind == "f" else np.minimum(a, b)


def _max(a, b):
    return np.fmax(a, b) if np.asarray(a).dtype.kind == "f" else np.maximum(a, b)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _div,
    "rem": _rem,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shl": lambda a, b: np.left_shift(a, _shift_count(b, np.asarray(a).dtype)),
    "shr": lambda a, b: np.right_shift(a, _shift_count(b, np.asarray(a).dtype)),
    "land": np.logical_and,
    "lor": np.logical_or,
}

COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}

INTRINSICS = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "min": _min, "max": _max, "pow": np.power,
}
"""``min``/``max`` on floats follow C's fmin/fmax: a NaN operand yields the
other operand."""


def unary(op: str, value):
    """``neg``, ``not`` (logical, on bool; ``== 0`` otherwise), ``bitnot``."""
    if op == "neg":
        return np.negative(value)
    if op == "not":
        if np.asarray(value).dtype == np.bool_:
            return np.logical_not(value)
        return (np.asarray(value) == 0).astype(np.asarray(value).dtype)
    if op == "bitnot":
        return np.invert(value)
    raise ValueError(f"unknown unary operator '{op}'")


def binary(op: str, lhs, rhs, dtype: np.dtype):
    """``lhs op rhs`` in ``dtype`` (the type of the lhs)."""
    result = BINARY[op](lhs, rhs)
    return _as_dtype(result, dtype)


def compare(op: str, lhs, rhs):
    return COMPARE[op](lhs, rhs)


def intrinsic(name: str, args: list, dtype: np.dtype):
    """A math intrinsic computed in ``dtype`` (f16 via f32, then rounded)."""
    if dtype == np.float16:
        args = [np.asarray(a, dtype=np.float32) for a in args]
    return _as_dtype(INTRINSICS[name](*args), dtype)


def cast(value, target: ScalarType):
    """C conversion: to bool is ``!= 0``; float to int truncates toward zero;
    between integers wraps; to float rounds."""
    value = np.asarray(value)
    dtype = target.numpy_dtype
    if target.is_bool:
        return value != 0
    if target.is_int and value.dtype.kind == "f":
        return _as_dtype(np.trunc(value), dtype)
    return _as_dtype(value, dtype)


def _as_dtype(value, dtype: np.dtype):
    value = np.asarray(value)
    return value if value.dtype == dtype else value.astype(dtype)
