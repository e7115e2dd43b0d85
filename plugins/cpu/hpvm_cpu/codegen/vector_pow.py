"""pow of f32 written out as LLVM instructions, so that loops using it
vectorise (libm's ``powf`` is a call: a GELU written as GPT-2's,
``0.044715 * pow(x, 3)``, spent 12 ns an element in it).

``x^y = 2^(y log2 |x|)``, computed in f64 and rounded once to f32:

- ``log2 |x|`` to about 2^-50 relative: |x| = m 2^e with m in
  [sqrt(1/2), sqrt(2)) (as ``log_f32`` splits it), ``log(m) = 2 atanh(s)``
  with ``s = (m - 1) / (m + 1)`` (|s| <= 0.172) and the odd series of atanh to s^17;
- ``t = y log2 |x|``, whose absolute error stays below 2^-38 wherever the
  result is neither 0 nor inf in f32 (|t| < 150);
- ``2^t = 2^n e^(r ln 2)`` with n the nearest integer and |r| <= 1/2, a
  degree-11 Taylor polynomial (error below 2^-47) and 2^n built from its
  exponent bits (t clamped to [-160, 140] first, so that results round to
  0 or inf in f32 as they must).

Within 1 ulp of the exact value.  The special cases are C99's (as numpy
and libm give them): ``pow(x, +-0) = 1`` and ``pow(1, y) = 1`` even for
NaN, ``pow(-1, +-inf) = 1``, a negative finite x with a y that is not an
integer gives NaN, an odd integer y keeps the sign of x (``pow(-0, -1) =
-inf``), and the zeros and infinities of x and y follow from ``log2 |x|``
being -inf or inf.  f64 pow stays a libm call.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .vector_math import call_intrinsic, polynomial, significand_and_exponent

F32, F64 = ir.FloatType(), ir.DoubleType()
I32, I64 = ir.IntType(32), ir.IntType(64)
ATANH_SERIES = tuple(1.0 / k for k in range(17, 1, -2))
"""atanh s = s + s^3 (1/3 + s^2 (1/5 + ...)), highest coefficient first."""
EXP_SERIES = tuple(1.0 / math.factorial(k) for k in range(11, -1, -1))
"""e^u = sum u^k / k!, highest coefficient first."""
T_HIGH, T_LOW = 140.0, -160.0
"""2^t beyond these is inf or 0 in f32 (2^128, 2^-150) and finite in f64."""


def _f(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def _d(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def _log2_of_magnitude(builder: ir.IRBuilder, magnitude) -> ir.Value:
    """log2 of a non-negative f32, in f64 (-inf at 0, inf at inf, NaN at NaN)."""
    m32, exponent = significand_and_exponent(builder, magnitude)
    m = builder.fpext(m32, F64)
    s = builder.fdiv(builder.fsub(m, _d(1.0)), builder.fadd(m, _d(1.0)))
    square = builder.fmul(s, s)
    atanh = builder.fadd(s, builder.fmul(builder.fmul(s, square),
                                         polynomial(builder, ATANH_SERIES, square)))
    log2 = builder.fadd(builder.sitofp(exponent, F64),
                        builder.fmul(atanh, _d(2.0 / math.log(2.0))))
    log2 = builder.select(builder.fcmp_ordered("==", magnitude, _f(0.0)), _d(-math.inf), log2)
    log2 = builder.select(builder.fcmp_ordered("==", magnitude, _f(math.inf)), _d(math.inf),
                          log2)
    return builder.select(builder.fcmp_unordered("uno", magnitude, magnitude), _d(math.nan),
                          log2)


def _exp2(builder: ir.IRBuilder, t) -> ir.Value:
    """2^t in f64 for any f64 t (clamped to [T_LOW, T_HIGH]; NaN stays NaN)."""
    clamped = builder.select(builder.fcmp_ordered(">", t, _d(T_HIGH)), _d(T_HIGH), t)
    clamped = builder.select(builder.fcmp_ordered("<", clamped, _d(T_LOW)), _d(T_LOW), clamped)
    n = call_intrinsic(builder, "llvm.floor", F64, builder.fadd(clamped, _d(0.5)))
    u = builder.fmul(builder.fsub(clamped, n), _d(math.log(2.0)))
    finite_n = builder.select(builder.fcmp_unordered("uno", n, n), _d(0.0), n)
    biased = builder.add(builder.fptosi(finite_n, I64), ir.Constant(I64, 1023))
    scale = builder.bitcast(builder.shl(biased, ir.Constant(I64, 52)), F64)
    return builder.fmul(polynomial(builder, EXP_SERIES, u), scale)


def pow_f32(builder: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y for f32 ``x`` and ``y`` (see the module's text)."""
    magnitude = call_intrinsic(builder, "llvm.fabs", F32, x)
    t = builder.fmul(builder.fpext(y, F64), _log2_of_magnitude(builder, magnitude))
    value = builder.fptrunc(_exp2(builder, t), F32)
    integer = builder.fcmp_ordered("==", call_intrinsic(builder, "llvm.floor", F32, y), y)
    half = builder.fmul(y, _f(0.5))
    half_floor = call_intrinsic(builder, "llvm.floor", F32, half)
    odd = builder.and_(integer, builder.fcmp_ordered("!=", half_floor, half))
    x_negative = builder.icmp_signed("<", builder.bitcast(x, I32), ir.Constant(I32, 0))
    value = builder.select(builder.and_(x_negative, odd), builder.fneg(value), value)
    finite_negative = builder.and_(builder.fcmp_ordered("<", x, _f(0.0)),
                                   builder.fcmp_ordered("!=", x, _f(-math.inf)))
    value = builder.select(builder.and_(finite_negative, builder.not_(integer)), _f(math.nan),
                           value)
    one = builder.or_(builder.fcmp_ordered("==", y, _f(0.0)),
                      builder.fcmp_ordered("==", x, _f(1.0)))
    infinite_y = builder.fcmp_ordered("==", call_intrinsic(builder, "llvm.fabs", F32, y),
                                      _f(math.inf))
    one = builder.or_(one, builder.and_(builder.fcmp_ordered("==", x, _f(-1.0)), infinite_y))
    return builder.select(one, _f(1.0), value)
