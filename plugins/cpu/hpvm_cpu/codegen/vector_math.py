"""Math functions written out as LLVM instructions, so that loops using
them vectorise.

``llvm.exp.f32`` becomes a call of libm's ``expf`` unless LLVM is given a
vector math library, which llvmlite's pass builder cannot be; a loop with
such a call stays scalar, one call per element (softmax, sigmoid, GELU's
erf: 1-3 ns an element).  The sequences here use only arithmetic,
compares and selects, which the vectorisers widen like any other.

``exp_f32`` is Cephes' ``expf`` (S. Moshier): x = n ln 2 + r with
|r| <= ln 2 / 2 (ln 2 split in two constants so that n ln 2 is exact), a
degree-6 polynomial for e^r, and the scale 2^n applied as two powers of
two built from their exponent bits, so that results below 2^-126 come
out as denormals as libm's do.  Error within 2 ulp of the exact result
over the whole range; exp(+inf) = inf, exp(-inf) = 0, NaN stays NaN.
"""
from __future__ import annotations

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)

LOG2E = 1.44269504088896341
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)
"""e^r = 1 + r + r^2 * poly(r), highest coefficient first."""
EXP_HIGH = 88.72283935546875
"""Above this, e^x overflows f32."""
EXP_LOW = -103.97208404541016
"""Below this, e^x rounds to 0 even as a denormal."""


def _f(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def _power_of_two(builder: ir.IRBuilder, n) -> ir.Value:
    """2^n as f32 for an i32 n in [-126, 127]."""
    bits = builder.shl(builder.add(n, ir.Constant(I32, 127)), ir.Constant(I32, 23))
    return builder.bitcast(bits, F32)


def exp_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x for an f32 ``x`` (see the module's text)."""
    clamped = builder.select(builder.fcmp_ordered(">", x, _f(EXP_HIGH)), _f(EXP_HIGH), x)
    clamped = builder.select(builder.fcmp_ordered("<", clamped, _f(EXP_LOW)), _f(EXP_LOW),
                             clamped)
    scaled = builder.fadd(builder.fmul(clamped, _f(LOG2E)), _f(0.5))
    floor = builder.module.declare_intrinsic("llvm.floor", [F32])
    n_float = builder.call(floor, [scaled])
    r = builder.fsub(clamped, builder.fmul(n_float, _f(LN2_HI)))
    r = builder.fsub(r, builder.fmul(n_float, _f(LN2_LO)))
    poly = _f(EXP_POLY[0])
    for coefficient in EXP_POLY[1:]:
        poly = builder.fadd(builder.fmul(poly, r), _f(coefficient))
    square = builder.fmul(r, r)
    value = builder.fadd(builder.fadd(builder.fmul(poly, square), r), _f(1.0))
    # 2^n as 2^(n - half) * 2^half: both factors normal for n in [-150, 128]
    n = builder.fptosi(n_float, I32)
    half = builder.ashr(n, ir.Constant(I32, 1))
    value = builder.fmul(value, _power_of_two(builder, builder.sub(n, half)))
    value = builder.fmul(value, _power_of_two(builder, half))
    overflow = builder.fcmp_ordered(">", x, _f(EXP_HIGH))
    value = builder.select(overflow, _f(float("inf")), value)
    underflow = builder.fcmp_ordered("<", x, _f(EXP_LOW))
    value = builder.select(underflow, _f(0.0), value)
    return builder.select(builder.fcmp_unordered("uno", x, x), x, value)
