"""sin and cos of f32 written out as LLVM instructions, so that loops
using them vectorise (as ``exp_f32`` in vector_math.py: libm's ``sinf``
and ``cosf`` are calls, and a loop with a call stays scalar).

The argument is reduced in f64, exactly enough for every f32, by the
method of Payne and Hanek without its loop and without a table lookup
per element.  ``y = |x| * 2/pi`` is needed mod 4 (its integer part mod 4
is the quadrant, its fraction the angle); the bits of 2/pi whose products
with ``|x|`` are multiples of 4 do not matter, so for ``|x|`` below 2^53
all of 2/pi's first 140 bits are used, and above it a window starting
further on: four windows (rows) in all, picked per element by compares
and selects (a gather from a table by exponent costs more).  Each
window is five f64 constants of 28 bits, so that each product with the
f32's 24-bit significand is exact.  The two largest products are
reduced mod 4 exactly; the nearest integer ``n`` of the sum is the
quadrant, and the fraction ``f = y - n`` in [-1/2, 1/2] is summed from
the largest part down, each partial sum exact whenever it is small (the
cancellation that makes naive reductions lose every bit happens only in
exact operations).  The error is then below 2^-52 relative to ``f`` for
every f32, where a 2^-24 one would do.

``r = f * pi/2`` is in [-pi/4, pi/4], where the polynomials of FreeBSD's
``__kernel_sindf`` and ``__kernel_cosdf`` (minimax, evaluated in f64,
errors below 2^-37) give sin r and cos r; the quadrant picks one of
them and its sign, and the result is rounded once to f32: within 1 ulp
of the exact value for every f32 input, sin(-0) = -0, and inf or NaN
give NaN.  Where a kernel takes both of one angle, LLVM shares the
reduction.  f64 sin and cos stay libm calls.
"""
from __future__ import annotations

import functools

from llvmlite import ir

from .vector_math import call_intrinsic, polynomial

F32, F64 = ir.FloatType(), ir.DoubleType()
I32 = ir.IntType(32)

CHUNK_BITS = 28
"""Bits of 2/pi per constant: an f32 has 24, so each product is exact."""
CHUNKS = 5
ROWS = 4
"""Row q starts at bit 1 + 28 q of 2/pi; it serves |x| from 2^(25 + 28 q)
(row 0: from 0) up to the next row's start."""

SIN_POLY = tuple(float.fromhex(h) for h in (
    "-0x15555554cbac77p-55", "0x111110896efbb2p-59", "-0x1a00f9e2cae774p-65",
    "0x16cd878c3b46a7p-71"))
"""sin r = r + r^3 (S1 + S2 r^2 + S3 r^4 + S4 r^6) on [-pi/4, pi/4] (FreeBSD k_sinf.c),
lowest coefficient first."""
COS_POLY = tuple(float.fromhex(h) for h in (
    "-0x1ffffffd0c5e81p-54", "0x155553e1053a42p-57", "-0x16c087e80f1e27p-62",
    "0x199342e0ee5069p-68"))
"""cos r = 1 + C0 r^2 + C1 r^4 + C2 r^6 + C3 r^8 on [-pi/4, pi/4] (FreeBSD k_cosf.c),
lowest coefficient first."""
HALF_PI = 1.5707963267948966


def two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2^bits), from Machin's formula in integers."""
    scale = 1 << (bits + 64)             # 64 guard bits

    def arctan_of_inverse(n: int) -> int:   # atan(1/n) * scale
        total, power, i = 0, scale // n, 0
        while power:
            term = power // (2 * i + 1)
            total += -term if i % 2 else term
            power //= n * n
            i += 1
        return total
    pi = 16 * arctan_of_inverse(5) - 4 * arctan_of_inverse(239)
    return (2 * scale << bits) // pi


@functools.cache
def reduction_table() -> list[list[float]]:
    """Row ``q``: bits ``1 + 28 q`` on of 2/pi, 28 to a constant.  With
    |x| = M 2^E (M < 2^24 an integer) and 28 q + 2 <= E <= 28 q + 29 in
    row q > 0 (E <= 29 in row 0), the bits 2^-k before the row's first
    multiply |x| to multiples of 4 (k <= E - 2), and the 140 bits of the
    row leave an error below 2^(25 + 28 - 140) = 2^-87 in y."""
    precision = 320
    two_over_pi = two_over_pi_bits(precision)
    rows = []
    for q in range(ROWS):
        chunks = []
        for j in range(CHUNKS):
            last = 1 + CHUNK_BITS * (q + j + 1) - 1       # the chunk's lowest bit: 2^-last
            value = (two_over_pi >> (precision - last)) & ((1 << CHUNK_BITS) - 1)
            chunks.append(float(value) * 2.0 ** -last)
        rows.append(chunks)
    return rows


def _d(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def _i(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _row_constants(builder: ir.IRBuilder, magnitude) -> list:
    """The chunks of the row of 2/pi for the f32 ``magnitude``."""
    table = reduction_table()
    chunks = [_d(c) for c in table[0]]
    for q in range(1, ROWS):
        above = builder.fcmp_unordered(">=", magnitude, _f32(2.0 ** (25 + CHUNK_BITS * q)))
        chunks = [builder.select(above, _d(c), chunk) for c, chunk in zip(table[q], chunks)]
    return chunks


def _mod_4(builder: ir.IRBuilder, value):
    """``value`` mod 4, exactly for a non-negative f64."""
    quarter = call_intrinsic(builder, "llvm.floor", F64, builder.fmul(value, _d(0.25)))
    return builder.fsub(value, builder.fmul(quarter, _d(4.0)))


def _quadrant_and_angle(builder: ir.IRBuilder, magnitude):
    """(n mod 4 as i32, r in f64) with |x| = (n + f) pi/2, r = f pi/2."""
    wide = builder.fpext(magnitude, F64)
    parts = [builder.fmul(wide, chunk) for chunk in _row_constants(builder, magnitude)]
    parts[0], parts[1] = _mod_4(builder, parts[0]), _mod_4(builder, parts[1])
    nearest = builder.fadd(builder.fadd(parts[0], parts[1]), builder.fadd(parts[2], _d(0.5)))
    n = call_intrinsic(builder, "llvm.floor", F64, nearest)
    fraction = builder.fsub(parts[0], n)
    for part in parts[1:]:
        fraction = builder.fadd(fraction, part)
    quadrant = builder.and_(builder.fptosi(n, I32), _i(3))
    return quadrant, builder.fmul(fraction, _d(HALF_PI))


def _sine_and_cosine_polynomials(builder: ir.IRBuilder, r):
    """(sin r, cos r): r + r^3 S(r^2) and 1 + r^2 C(r^2)."""
    z = builder.fmul(r, r)
    sine = builder.fadd(r, builder.fmul(builder.fmul(z, r),
                                        polynomial(builder, SIN_POLY[::-1], z)))
    cosine = builder.fadd(_d(1.0), builder.fmul(z, polynomial(builder, COS_POLY[::-1], z)))
    return sine, cosine


def sin_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sin x for an f32 ``x`` (see the module's text)."""
    return _sine_or_cosine(builder, x, cosine=False)


def cos_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """cos x for an f32 ``x`` (see the module's text)."""
    return _sine_or_cosine(builder, x, cosine=True)


def _sine_or_cosine(builder: ir.IRBuilder, x, cosine: bool):
    magnitude = call_intrinsic(builder, "llvm.fabs", F32, x)
    quadrant, r = _quadrant_and_angle(builder, magnitude)
    sine, cos_r = _sine_and_cosine_polynomials(builder, r)
    # sin: quadrants 0..3 give sin r, cos r, -sin r, -cos r; cos: cos r, -sin r, -cos r, sin r
    odd = builder.icmp_unsigned("!=", builder.and_(quadrant, _i(1)), _i(0))
    value = builder.select(odd, sine, cos_r) if cosine else builder.select(odd, cos_r, sine)
    flip = builder.add(quadrant, _i(1)) if cosine else quadrant
    negative = builder.icmp_unsigned("!=", builder.and_(flip, _i(2)), _i(0))
    value = builder.select(negative, builder.fneg(value), value)
    result = builder.fptrunc(value, F32)
    if not cosine:   # sin is odd: the sign of x
        sign = builder.and_(builder.bitcast(x, I32), _i(-0x80000000))
        result = builder.bitcast(builder.xor(builder.bitcast(result, I32), sign), F32)
    not_finite = builder.fcmp_unordered("uno", builder.fsub(x, x), _f32(0.0))
    return builder.select(not_finite, _f32(float("nan")), result)


def _f32(value: float) -> ir.Constant:
    return ir.Constant(F32, value)
