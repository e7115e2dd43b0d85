"""FFTs written the way people write them, each in its own style, with
a reference from numpy and a near miss that must be refused.

Styles covered: separate real and imaginary buffers and one interleaved
buffer (as Numerical Recipes' ``four1``); decimation in time and in
frequency; in place and out of place; the bit-reversal permutation by a
loop over the bits, by a table and by the reverse-carry recurrence, or
left to the caller; twiddles computed, from a table, and by the rotation
recurrence."""
from __future__ import annotations

import math

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, Out, cos, f64, i64, parallel_loop, sin


def bit_reversed(points: int) -> np.ndarray:
    bits = points.bit_length() - 1
    return np.array([int(format(i, f"0{bits}b")[::-1], 2) for i in range(points)])


@hl.program
def textbook_dit(re: InOut[Buffer[f64, "N"]], im: InOut[Buffer[f64, "N"]]):
    """In place, decimation in time; the bit reversal by a while loop over
    the bits; each butterfly twiddles the odd element, stores the
    difference, then reads the even element again for the sum."""
    for _ in parallel_loop(1, ins=(re, im), outs=(re, im), name="fft"):
        j = 0
        for i in range(N - 1):
            if i < j:
                tr = re[i]
                re[i] = re[j]
                re[j] = tr
                ti = im[i]
                im[i] = im[j]
                im[j] = ti
            m = N // 2
            while m >= 1 and j >= m:
                j = j - m
                m = m // 2
            j = j + m
        size = 2
        while size <= N:
            half = size // 2
            for k in range(N // 2):
                p = (k // half) * size + k % half
                q = p + half
                angle = -2.0 * math.pi * f64(k % half) / f64(size)
                wr = cos(angle)
                wi = sin(angle)
                tr = wr * re[q] - wi * im[q]
                ti = wr * im[q] + wi * re[q]
                re[q] = re[p] - tr
                im[q] = im[p] - ti
                re[p] = re[p] + tr
                im[p] = im[p] + ti
            size = size * 2


@hl.program
def four1(data: InOut[Buffer[f64, "M"]]):
    """Numerical Recipes' four1: real and imaginary parts interleaved in one
    buffer of 2N values, the bit reversal by swaps, the twiddles by the
    rotation recurrence w = w * exp(i theta), loops stepping by variables."""
    for _ in parallel_loop(1, ins=(data,), outs=(data,), name="four1"):
        n = M
        j = 0
        i = 0
        while i < n:
            if j > i:
                tempr = data[j]
                data[j] = data[i]
                data[i] = tempr
                tempi = data[j + 1]
                data[j + 1] = data[i + 1]
                data[i + 1] = tempi
            m = n // 2
            while m >= 2 and j >= m:
                j = j - m
                m = m // 2
            j = j + m
            i = i + 2
        mmax = 2
        while n > mmax:
            istep = mmax * 2
            theta = -2.0 * math.pi / f64(mmax)
            wtemp = sin(0.5 * theta)
            wpr = -2.0 * wtemp * wtemp
            wpi = sin(theta)
            wr = 1.0
            wi = 0.0
            m = 0
            while m < mmax:
                i = m
                while i < n:
                    j = i + mmax
                    tempr = wr * data[j] - wi * data[j + 1]
                    tempi = wr * data[j + 1] + wi * data[j]
                    data[j] = data[i] - tempr
                    data[j + 1] = data[i + 1] - tempi
                    data[i] = data[i] + tempr
                    data[i + 1] = data[i + 1] + tempi
                    i = i + istep
                wtemp = wr
                wr = wtemp * wpr - wi * wpi + wr
                wi = wi * wpr + wtemp * wpi + wi
                m = m + 2
            mmax = istep


@hl.program
def dif_table_reorder(xr: InOut[Buffer[f64, "N"]], xi: InOut[Buffer[f64, "N"]],
                      wr: Buffer[f64, "H"], wi: Buffer[f64, "H"], rev: Buffer[i64, "N"]):
    """Decimation in frequency in place, twiddles from a table indexed by a
    stride that doubles, then the output put in natural order by swaps
    through a bit-reversal table."""
    for _ in parallel_loop(1, ins=(xr, xi, wr, wi, rev), outs=(xr, xi), name="dif"):
        span = N // 2
        stride = 1
        while span >= 1:
            for g in range(0, N, 2):
                block = g // (2 * span)
                off = (g // 2) % span
                a = block * 2 * span + off
                b = a + span
                sr = xr[a] + xr[b]
                si = xi[a] + xi[b]
                dr = xr[a] - xr[b]
                di = xi[a] - xi[b]
                xr[a] = sr
                xi[a] = si
                t = off * stride
                xr[b] = dr * wr[t] - di * wi[t]
                xi[b] = dr * wi[t] + di * wr[t]
            span = span // 2
            stride = stride * 2
        for k in range(N):
            other = rev[k]
            if other > k:
                keep_r = xr[k]
                keep_i = xi[k]
                xr[k] = xr[other]
                xi[k] = xi[other]
                xr[other] = keep_r
                xi[other] = keep_i


@hl.program
def reverse_carry_out_of_place(inr: Buffer[f64, "N"], ini: Buffer[f64, "N"],
                               outr: Out[Buffer[f64, "N"]], outi: Out[Buffer[f64, "N"]]):
    """Out of place: the input copied into the output in bit-reversed order
    (the index advanced by the reverse-carry recurrence), then decimation
    in time on the output with twiddles computed per group."""
    for _ in parallel_loop(1, ins=(inr, ini), outs=(outr, outi), name="fft"):
        r = 0
        for k in range(N):
            outr[r] = inr[k]
            outi[r] = ini[k]
            bit = N // 2
            while bit >= 1 and r >= bit:
                r = r - bit
                bit = bit // 2
            r = r + bit
        length = 2
        while length <= N:
            h = length // 2
            for start in range(0, N, 2):
                base = (start // length) * length
                pos = (start // 2) % h
                top = base + pos
                c = cos(2.0 * math.pi * f64(pos) / f64(length))
                s = -sin(2.0 * math.pi * f64(pos) / f64(length))
                br = outr[top + h] * c - outi[top + h] * s
                bi = outr[top + h] * s + outi[top + h] * c
                ar = outr[top]
                ai = outi[top]
                outr[top] = ar + br
                outi[top] = ai + bi
                outr[top + h] = ar - br
                outi[top + h] = ai - bi
            length = length * 2


@hl.program
def dit_strided_table(re: InOut[Buffer[f64, "N"]], im: InOut[Buffer[f64, "N"]],
                      cos_w: Buffer[f64, "T"], sin_w: Buffer[f64, "T"]):
    """Input already in bit-reversed order (the caller's job); decimation in
    time with twiddles from one table of N / 2 entries indexed by
    k * (N / size); the inner loops over groups and positions."""
    for _ in parallel_loop(1, ins=(re, im, cos_w, sin_w), outs=(re, im), name="dit"):
        size = 2
        while size <= N:
            half = size // 2
            step = N // size
            for group in range(N // size):
                for k in range(half):
                    even = group * size + k
                    odd = even + half
                    w_re = cos_w[k * step]
                    w_im = sin_w[k * step]
                    t_re = re[odd] * w_re - im[odd] * w_im
                    t_im = re[odd] * w_im + im[odd] * w_re
                    e_re = re[even]
                    e_im = im[even]
                    re[even] = e_re + t_re
                    im[even] = e_im + t_im
                    re[odd] = e_re - t_re
                    im[odd] = e_im - t_im
            size = size * 2


@hl.program
def batched_dif_stages(sr: InOut[Buffer[f64, "B", "N"]], si: InOut[Buffer[f64, "B", "N"]]):
    """A batch of signals, one instance per signal and butterfly pair;
    decimation in frequency with a node per stage (the stage index gives
    the span), twiddles computed; output in bit-reversed order."""
    for stage in range(6):
        for b, k in parallel_loop(B, N // 2, ins=(sr, si), outs=(sr, si), name="stage"):
            span = N >> (stage + 1)
            if span > 0:
                lo = (k // span) * 2 * span + k % span
                hi = lo + span
                ar = sr[b, lo]
                ai = si[b, lo]
                br = sr[b, hi]
                bi = si[b, hi]
                sr[b, lo] = ar + br
                si[b, lo] = ai + bi
                angle = -2.0 * math.pi * f64(k % span) / f64(2 * span)
                c = cos(angle)
                s = sin(angle)
                sr[b, hi] = (ar - br) * c - (ai - bi) * s
                si[b, hi] = (ar - br) * s + (ai - bi) * c


def _signal(rng, points):
    return rng.uniform(-1, 1, points), rng.uniform(-1, 1, points)


def _table(points):
    angle = 2 * np.pi * np.arange(points // 2) / points
    return np.cos(angle), -np.sin(angle)


def _spectrum(inputs, re: str, im: str, outputs: tuple[str, str] | None = None) -> dict:
    """numpy's FFT of the signal in ``inputs[re]``, ``inputs[im]``, as
    ``outputs`` (the same names by default)."""
    spectrum = np.fft.fft(inputs[re] + 1j * inputs[im])
    return dict(zip(outputs or (re, im), (spectrum.real, spectrum.imag)))


def make_textbook(rng, points=32):
    re, im = _signal(rng, points)
    return {"re": re, "im": im}


def ref_textbook(inputs):
    return _spectrum(inputs, "re", "im")


def make_four1(rng, points=32):
    data = np.empty(2 * points)
    data[0::2], data[1::2] = _signal(rng, points)
    return {"data": data}


def ref_four1(inputs):
    spectrum = np.fft.fft(inputs["data"][0::2] + 1j * inputs["data"][1::2])
    data = np.empty_like(inputs["data"])
    data[0::2], data[1::2] = spectrum.real, spectrum.imag
    return {"data": data}


def make_dif(rng, points=64):
    xr, xi = _signal(rng, points)
    wr, wi = _table(points)
    return {"xr": xr, "xi": xi, "wr": wr, "wi": wi, "rev": bit_reversed(points)}


def ref_dif(inputs):
    return _spectrum(inputs, "xr", "xi")


def make_out_of_place(rng, points=16):
    inr, ini = _signal(rng, points)
    return {"inr": inr, "ini": ini}


def ref_out_of_place(inputs):
    return _spectrum(inputs, "inr", "ini", ("outr", "outi"))


def make_strided(rng, points=32):
    re, im = _signal(rng, points)
    cos_w, sin_w = _table(points)
    return {"re": re, "im": im, "cos_w": cos_w, "sin_w": sin_w}


def ref_strided(inputs):
    order = bit_reversed(inputs["re"].size)  # the caller's order: bit-reversed
    return _spectrum({"re": inputs["re"][order], "im": inputs["im"][order]}, "re", "im")


def make_batched(rng, signals=3, points=64):
    return {"sr": rng.uniform(-1, 1, (signals, points)), "si": rng.uniform(-1, 1, (signals, points))}


def ref_batched(inputs):
    spectrum = np.fft.fft(inputs["sr"] + 1j * inputs["si"], axis=1)[:, bit_reversed(inputs["sr"].shape[1])]
    return {"sr": spectrum.real, "si": spectrum.imag}


PROBE = "structure matched, but on a probe"
"""The start of a refusal by the probe: the kernel has the structure but
computes something else."""

VARIANTS = [
    {"name": "textbook_dit", "program": textbook_dit, "make": make_textbook,
     "reference": ref_textbook,
     "mutant": ("tr = wr * re[q] - wi * im[q]", "tr = wr * re[q] + wi * im[q]",
                "wrong twiddle sign", "no negated product -(im*wi)")},
    {"name": "four1", "program": four1, "make": make_four1, "reference": ref_four1,
     "mutant": ("data[j] = data[i] - tempr", "data[j] = data[i] + tempr",
                "swapped butterfly sign", "no negated twiddled odd input (re part)")},
    {"name": "dif_table_reorder", "program": dif_table_reorder, "make": make_dif,
     "reference": ref_dif,
     "mutant": ("let t: i64 = off * stride", "let t: i64 = off * stride / 2",
                "wrong twiddle index", PROBE)},
    {"name": "reverse_carry_out_of_place", "program": reverse_carry_out_of_place,
     "make": make_out_of_place, "reference": ref_out_of_place,
     "mutant": ("while bit >= 1 && r >= bit {", "while bit >= 1 && r > bit {",
                "off-by-one in the bit-reversal recurrence",
                "structure matched, but the kernel failed on a probe")},
    {"name": "dit_strided_table", "program": dit_strided_table, "make": make_strided,
     "reference": ref_strided,
     "mutant": ("let w_im: f64 = sin_w[k * step]", "let w_im: f64 = cos_w[k * step]",
                "the cosine table read for the sine", "no twiddle (real part)")},
    {"name": "batched_dif_stages", "program": batched_dif_stages, "make": make_batched,
     "reference": ref_batched,
     "mutant": ("sr[b, lo] = ar + br", "sr[b, lo] = ar - br",
                "swapped butterfly sign in every stage",
                "no negated product -(im*wi) of the difference")},
]
