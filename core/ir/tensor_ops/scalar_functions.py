"""The scalar functions of the pointwise ops (pointwise.py): for each, its
reference semantics on numpy arrays and its expression in kernel IR.

A :class:`ScalarFunction` says which element types it takes (``domain``:
"float", "int" (signed and unsigned), "numeric" (int or float), "bool",
"integral" (int or bool) or "any") and whether its result is bool
(comparisons, isnan) or the operands' type.  Functions that kernel IR has
no intrinsic for (erf, atan, round half to even ...) are written with the
ones it has, to single-precision accuracy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..kernel import Cast, Compare, Const, Expr, Intrinsic, Select, Unary
from ..types import BOOL, ScalarType

DOMAINS = {
    "float": lambda t: t.is_float,
    "int": lambda t: t.is_int,
    "numeric": lambda t: not t.is_bool,
    "bool": lambda t: t.is_bool,
    "integral": lambda t: not t.is_float,
    "any": lambda t: True,
}


@dataclass(frozen=True)
class ScalarFunction:
    name: str
    arity: int
    domain: str
    numpy: Callable
    kernel: Callable[..., Expr]
    boolean_result: bool = False

    def accepts(self, element: ScalarType) -> bool:
        return DOMAINS[self.domain](element)

    def result(self, element: ScalarType) -> ScalarType:
        return BOOL if self.boolean_result else element


def _c(value, like: Expr) -> Const:
    return Const(value, like.type)


def _intrinsic(name: str) -> Callable[..., Expr]:
    return lambda *args: Intrinsic(name, args)


def _select(cond: Expr, if_true: Expr, if_false: Expr) -> Expr:
    return Select(cond, if_true, if_false)


# functions without an intrinsic ---------------------------------------------
def _sign(x: Expr) -> Expr:
    return _select(x.gt(_c(0, x)), _c(1, x), _select(x.lt(_c(0, x)), _c(-1, x), _c(0, x)))


def _round_half_even(x: Expr) -> Expr:
    low = Intrinsic("floor", (x,))
    fraction = x - low
    two = _c(2.0, x)
    odd = (low - two * Intrinsic("floor", (low / two,))).eq(_c(1.0, x))
    up = _either(fraction.gt(_c(0.5, x)), _both(fraction.eq(_c(0.5, x)), odd))
    return _select(up, low + _c(1.0, x), low)


def _both(a: Expr, b: Expr) -> Expr:
    """``a and b`` on bools, both evaluated (no short circuit to keep)."""
    return _select(a, b, Const(False, BOOL))


def _either(a: Expr, b: Expr) -> Expr:
    return _select(a, Const(True, BOOL), b)


def _erf(x: Expr) -> Expr:
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7)."""
    a = abs_(x)
    t = _c(1.0, x) / (_c(1.0, x) + _c(0.3275911, x) * a)
    poly = _c(1.061405429, x)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly = poly * t + _c(coefficient, x)
    value = _c(1.0, x) - poly * t * Intrinsic("exp", (-(a * a),))
    return _select(x.lt(_c(0.0, x)), -value, value)


def abs_(x: Expr) -> Expr:
    return Intrinsic("abs", (x,))


def _atan(x: Expr) -> Expr:
    """Cephes' atanf: range reduction to |x| <= tan(pi/8), then a degree-9
    odd polynomial."""
    a = abs_(x)
    big, medium = a.gt(_c(2.414213562373095, x)), a.gt(_c(0.4142135623730950, x))
    reduced = _select(big, _c(-1.0, x) / a,
                      _select(medium, (a - _c(1.0, x)) / (a + _c(1.0, x)), a))
    offset = _select(big, _c(math.pi / 2, x), _select(medium, _c(math.pi / 4, x), _c(0.0, x)))
    z = reduced * reduced
    poly = _c(8.05374449538e-2, x)
    for coefficient in (-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1):
        poly = poly * z + _c(coefficient, x)
    value = offset + poly * z * reduced + reduced
    return _select(x.lt(_c(0.0, x)), -value, value)


def _asin(x: Expr) -> Expr:
    return _atan(x / Intrinsic("sqrt", (_c(1.0, x) - x * x,)))


def _acos(x: Expr) -> Expr:
    return _c(math.pi / 2, x) - _asin(x)


def _exp(x: Expr) -> Expr:
    return Intrinsic("exp", (x,))


def _log(x: Expr) -> Expr:
    return Intrinsic("log", (x,))


def _asinh(x: Expr) -> Expr:
    a = abs_(x)
    value = _log(a + Intrinsic("sqrt", (a * a + _c(1.0, x),)))
    return _select(x.lt(_c(0.0, x)), -value, value)


def _floor_mod(a: Expr, b: Expr) -> Expr:
    """Python's %: the sign of the divisor."""
    rest = a % b
    zero = _c(0, a)
    fix = _select(rest.lt(zero), b.gt(zero), b.lt(zero))
    return _select(_both(rest.ne(zero), fix), rest + b, rest)


def _np_floor_mod(a, b):
    if a.dtype.kind == "f":
        return np.mod(a, b)  # numpy's float mod already follows the divisor's sign
    return np.mod(a, np.where(b == 0, 1, b))


def _np_truncating_divide(a, b):
    if a.dtype.kind == "f":
        return np.divide(a, b)
    safe = np.where(b == 0, 1, b)
    quotient = np.floor_divide(a, safe)
    inexact = (np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))
    return (quotient + inexact).astype(a.dtype)


def _np_fmod(a, b):
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    return np.fmod(a, np.where(b == 0, 1, b))


def _np_round(x):
    return np.round(x)  # numpy rounds half to even, as ONNX's Round


def _np_shift(op):
    def shift(a, b):
        bits = a.dtype.itemsize * 8
        count = (b.astype(np.int64) & (bits - 1)).astype(a.dtype)
        shifted = np.left_shift(a, count) if op == "shl" else np.right_shift(a, count)
        return np.where(b.astype(np.int64) >= bits, _overshifted(op, a), shifted)
    return shift


def _overshifted(op: str, a):
    """A shift by the bit width or more: 0, or the sign (-1 or 0) when a
    signed value is shifted right (ONNX BitShift)."""
    if op == "shr" and a.dtype.kind == "i":
        return np.right_shift(a, a.dtype.itemsize * 8 - 1)
    return np.zeros_like(a)


def _shift(op: str) -> Callable[..., Expr]:
    """Shifts as ONNX's BitShift: by the bit width or more, 0 (or the sign
    of a signed value shifted right); kernel IR takes the count modulo the
    width, so those counts are selected."""
    def kernel(a: Expr, b: Expr) -> Expr:
        shifted = a << b if op == "shl" else a >> b
        over = a >> _c(a.type.bits - 1, a) if op == "shr" and a.type.is_signed else _c(0, a)
        return _select(b.ge(_c(a.type.bits, b)), over, shifted)
    return kernel


def _compare(op: str) -> Callable[..., Expr]:
    return lambda a, b: Compare(op, a, b)


UNARY: dict[str, ScalarFunction] = {f.name: f for f in (
    ScalarFunction("neg", 1, "numeric", np.negative, lambda x: Unary("neg", x)),
    ScalarFunction("abs", 1, "numeric", np.abs, abs_),
    ScalarFunction("sign", 1, "numeric", np.sign, _sign),
    ScalarFunction("exp", 1, "float", np.exp, _exp),
    ScalarFunction("log", 1, "float", np.log, _log),
    ScalarFunction("sqrt", 1, "float", np.sqrt, _intrinsic("sqrt")),
    ScalarFunction("reciprocal", 1, "float", np.reciprocal, lambda x: _c(1.0, x) / x),
    ScalarFunction("floor", 1, "float", np.floor, _intrinsic("floor")),
    ScalarFunction("ceil", 1, "float", np.ceil, _intrinsic("ceil")),
    ScalarFunction("round", 1, "float", _np_round, _round_half_even),
    ScalarFunction("erf", 1, "float", lambda x: _np_erf(x), _erf),
    ScalarFunction("sin", 1, "float", np.sin, _intrinsic("sin")),
    ScalarFunction("cos", 1, "float", np.cos, _intrinsic("cos")),
    ScalarFunction("tan", 1, "float", np.tan,
                   lambda x: Intrinsic("sin", (x,)) / Intrinsic("cos", (x,))),
    ScalarFunction("asin", 1, "float", np.arcsin, _asin),
    ScalarFunction("acos", 1, "float", np.arccos, _acos),
    ScalarFunction("atan", 1, "float", np.arctan, _atan),
    ScalarFunction("sinh", 1, "float", np.sinh,
                   lambda x: (_exp(x) - _exp(-x)) * _c(0.5, x)),
    ScalarFunction("cosh", 1, "float", np.cosh,
                   lambda x: (_exp(x) + _exp(-x)) * _c(0.5, x)),
    ScalarFunction("asinh", 1, "float", np.arcsinh, _asinh),
    ScalarFunction("acosh", 1, "float", np.arccosh,
                   lambda x: _log(x + Intrinsic("sqrt", (x * x - _c(1.0, x),)))),
    ScalarFunction("atanh", 1, "float", np.arctanh,
                   lambda x: _c(0.5, x) * _log((_c(1.0, x) + x) / (_c(1.0, x) - x))),
    ScalarFunction("not", 1, "bool", np.logical_not, lambda x: Unary("not", x)),
    ScalarFunction("bitnot", 1, "int", np.invert, lambda x: Unary("bitnot", x)),
    ScalarFunction("isnan", 1, "float", np.isnan, lambda x: x.ne(x), boolean_result=True),
    ScalarFunction("isinf", 1, "float", np.isinf,
                   lambda x: abs_(x).eq(_c(math.inf, x)), boolean_result=True),
)}

BINARY: dict[str, ScalarFunction] = {f.name: f for f in (
    ScalarFunction("add", 2, "numeric", np.add, lambda a, b: a + b),
    ScalarFunction("sub", 2, "numeric", np.subtract, lambda a, b: a - b),
    ScalarFunction("mul", 2, "numeric", np.multiply, lambda a, b: a * b),
    ScalarFunction("div", 2, "numeric", _np_truncating_divide, lambda a, b: a / b),
    ScalarFunction("pow", 2, "float", np.power, _intrinsic("pow")),
    ScalarFunction("max", 2, "numeric", np.maximum, _intrinsic("max")),
    ScalarFunction("min", 2, "numeric", np.minimum, _intrinsic("min")),
    ScalarFunction("mod", 2, "numeric", _np_floor_mod, _floor_mod),
    ScalarFunction("fmod", 2, "numeric", _np_fmod, lambda a, b: a % b),
    ScalarFunction("and", 2, "bool", np.logical_and, _both),
    ScalarFunction("or", 2, "bool", np.logical_or,
                   _either),
    ScalarFunction("xor", 2, "bool", np.logical_xor, lambda a, b: a.ne(b)),
    ScalarFunction("bitand", 2, "int", np.bitwise_and, lambda a, b: a & b),
    ScalarFunction("bitor", 2, "int", np.bitwise_or, lambda a, b: a | b),
    ScalarFunction("bitxor", 2, "int", np.bitwise_xor, lambda a, b: a ^ b),
    ScalarFunction("shl", 2, "int", _np_shift("shl"), _shift("shl")),
    ScalarFunction("shr", 2, "int", _np_shift("shr"), _shift("shr")),
    ScalarFunction("equal", 2, "any", np.equal, _compare("eq"), boolean_result=True),
    ScalarFunction("not_equal", 2, "any", np.not_equal, _compare("ne"), boolean_result=True),
    ScalarFunction("less", 2, "numeric", np.less, _compare("lt"), boolean_result=True),
    ScalarFunction("less_equal", 2, "numeric", np.less_equal, _compare("le"),
                   boolean_result=True),
    ScalarFunction("greater", 2, "numeric", np.greater, _compare("gt"), boolean_result=True),
    ScalarFunction("greater_equal", 2, "numeric", np.greater_equal, _compare("ge"),
                   boolean_result=True),
)}


def _np_erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x


def cast_expr(value: Expr, to: ScalarType) -> Expr:
    """``value`` converted to ``to`` (kernel IR's Cast: floats to ints
    truncate, to bool is != 0)."""
    return value if value.type == to else Cast(value, to)
