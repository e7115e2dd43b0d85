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
out as denormals as libm's do (below EXP_LOW, where the result is 0, the
sequence computes e^0 and selects 0: a denormal product would cost a
microcode assist, and masked softmax rows, -1e4 or -inf, are full of
them).  Error within 2 ulp of the exact result
over the whole range; exp(+inf) = inf, exp(-inf) = 0, NaN stays NaN.

``log_f32`` is Cephes' ``logf``: x = m 2^e with m in [sqrt(1/2), sqrt(2))
(denormals scaled by 2^23 first), log x = e ln 2 + log(1 + f) with
f = m - 1 and a degree-8 polynomial; within 2 ulp; log 0 = -inf,
log of a negative number NaN, log inf = inf.

``tanh_f32`` is Cephes' ``tanhf``: an odd degree-11 polynomial below
0.625, ``1 - 2 / (e^(2|x|) + 1)`` with the sign of x above (exp_f32),
so 1 from about 9 on; within 3 ulp.  f64 log and tanh stay libm calls.
"""
from __future__ import annotations

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)
SQRT_HALF_TWO = 1.41421356237309504880
LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
            1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
            3.3333331174e-1)
"""log(1 + f) = f - f^2 / 2 + f^3 poly(f), highest coefficient first."""
SMALLEST_NORMAL = 2.0 ** -126
TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
             -3.33332819422e-1)
"""tanh x = x + x^3 poly(x^2) below TANH_SMALL, highest coefficient first."""
TANH_SMALL = 0.625

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


def call_intrinsic(builder: ir.IRBuilder, name: str, type: ir.Type, *args) -> ir.Value:
    """``name`` (an LLVM intrinsic such as ``llvm.floor``) on ``args``, all
    of ``type`` as its result is."""
    signature = ir.FunctionType(type, [type] * len(args))
    return builder.call(builder.module.declare_intrinsic(name, [type], signature), list(args))


def _power_of_two(builder: ir.IRBuilder, n) -> ir.Value:
    """2^n as f32 for an i32 n in [-126, 127]."""
    bits = builder.shl(builder.add(n, ir.Constant(I32, 127)), ir.Constant(I32, 23))
    return builder.bitcast(bits, F32)


def exp_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x for an f32 ``x`` (see the module's text)."""
    clamped = builder.select(builder.fcmp_ordered(">", x, _f(EXP_HIGH)), _f(EXP_HIGH), x)
    # Below EXP_LOW the result is 0, selected at the end: compute e^0 meanwhile, as a
    # denormal product there costs a microcode assist (masked softmax scores, -1e4 or
    # -inf: 3x slower exponentials).
    clamped = builder.select(builder.fcmp_ordered("<", clamped, _f(EXP_LOW)), _f(0.0), clamped)
    scaled = builder.fadd(builder.fmul(clamped, _f(LOG2E)), _f(0.5))
    n_float = call_intrinsic(builder, "llvm.floor", F32, scaled)
    r = builder.fsub(clamped, builder.fmul(n_float, _f(LN2_HI)))
    r = builder.fsub(r, builder.fmul(n_float, _f(LN2_LO)))
    poly = polynomial(builder, EXP_POLY, r)
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


def polynomial(builder: ir.IRBuilder, coefficients, x) -> ir.Value:
    """The polynomial in the type of ``x``, highest coefficient first, by
    Estrin's scheme: pairs ``a + b x`` combined by ``x^2``, ``x^4`` ...,
    a chain of log2(degree) fused multiply-adds where Horner's rule is one
    as long as the degree (vectorised loops are bound by that latency)."""
    terms = [ir.Constant(x.type, c) for c in reversed(coefficients)]
    power = x
    while len(terms) > 1:
        paired = [builder.fadd(low, builder.fmul(high, power, flags=("contract",)),
                               flags=("contract",))
                  for low, high in zip(terms[0::2], terms[1::2])]
        terms = paired + terms[len(paired) * 2:]
        if len(terms) > 1:
            power = builder.fmul(power, power)
    return terms[0]


def significand_and_exponent(builder: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(m, e) with x = m 2^e, m an f32 in [sqrt(1/2), sqrt(2)) and e an i32,
    for a positive finite f32 ``x`` (denormals scaled by 2^23 first); exact."""
    denormal = builder.fcmp_ordered("<", x, _f(SMALLEST_NORMAL))
    scaled = builder.select(denormal, builder.fmul(x, _f(2.0 ** 23)), x)
    bits = builder.bitcast(scaled, I32)
    exponent = builder.sub(builder.lshr(bits, ir.Constant(I32, 23)), ir.Constant(I32, 127))
    exponent = builder.sub(exponent, builder.select(denormal, ir.Constant(I32, 23),
                                                    ir.Constant(I32, 0)))
    mantissa = builder.or_(builder.and_(bits, ir.Constant(I32, 0x7FFFFF)),
                           ir.Constant(I32, 0x3F800000))
    m = builder.bitcast(mantissa, F32)                           # in [1, 2)
    above = builder.fcmp_ordered(">", m, _f(SQRT_HALF_TWO))
    m = builder.select(above, builder.fmul(m, _f(0.5)), m)
    return m, builder.add(exponent, builder.zext(above, I32))


def log_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """log x for an f32 ``x`` (see the module's text)."""
    m, exponent = significand_and_exponent(builder, x)
    f = builder.fsub(m, _f(1.0))
    square = builder.fmul(f, f)
    value = builder.fmul(builder.fmul(f, square), polynomial(builder, LOG_POLY, f))
    e = builder.sitofp(exponent, F32)
    value = builder.fadd(value, builder.fmul(e, _f(LN2_LO)))
    value = builder.fsub(value, builder.fmul(square, _f(0.5)))
    value = builder.fadd(builder.fadd(f, value), builder.fmul(e, _f(LN2_HI)))
    value = builder.select(builder.fcmp_ordered("==", x, _f(float("inf"))), x, value)
    value = builder.select(builder.fcmp_ordered("==", x, _f(0.0)), _f(float("-inf")), value)
    return builder.select(builder.fcmp_unordered("<", x, _f(0.0)), _f(float("nan")), value)


def tanh_f32(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh x for an f32 ``x`` (see the module's text): tanh |x| with the
    sign of x."""
    magnitude = call_intrinsic(builder, "llvm.fabs", F32, x)
    square = builder.fmul(magnitude, magnitude)
    small = builder.fmul(builder.fmul(polynomial(builder, TANH_POLY, square), square), magnitude)
    small = builder.fadd(small, magnitude)
    e = exp_f32(builder, builder.fmul(magnitude, _f(2.0)))
    large = builder.fsub(_f(1.0), builder.fdiv(_f(2.0), builder.fadd(e, _f(1.0))))
    value = builder.select(builder.fcmp_ordered("<", magnitude, _f(TANH_SMALL)), small, large)
    return call_intrinsic(builder, "llvm.copysign", F32, value, x)
