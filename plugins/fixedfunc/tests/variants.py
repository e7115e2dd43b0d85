"""Kernels written independently of MachSuite's (other loop structure, other
names, other conventions) that fixedfunc must recognise, and near misses it
must refuse.  Each ``make_*`` gives inputs; ``expected_*`` what the kernel
computes, from numpy."""
from __future__ import annotations

import math

import numpy as np

import hpvm.lang as hl
from benchmarks.programs import ms_fft, ms_viterbi
from hpvm.lang import Buffer, InOut, Out, buffer, cos, f64, i32, i64, parallel_loop, sin


# -- FFT --------------------------------------------------------------------
@hl.program
def fft_dit_inline_twiddles(xr: InOut[Buffer[f64, "M", "L"]], xi: InOut[Buffer[f64, "M", "L"]]):
    """Decimation in time, one node per signal, twiddles computed with
    cos/sin; input in bit-reversed order, output natural."""
    for row in parallel_loop(M, ins=(xr, xi), outs=(xr, xi), name="dit"):
        size = 2
        while size <= L:
            half = size // 2
            for k in range(L // 2):
                j = k % half
                top = (k // half) * size + j
                bottom = top + half
                angle = -2.0 * math.pi * f64(j) / f64(size)
                wr = cos(angle)
                wi = sin(angle)
                ur = xr[row, top]
                ui = xi[row, top]
                vr = xr[row, bottom] * wr - xi[row, bottom] * wi
                vi = xr[row, bottom] * wi + xi[row, bottom] * wr
                xr[row, top] = ur + vr
                xi[row, top] = ui + vi
                xr[row, bottom] = ur - vr
                xi[row, bottom] = ui - vi
            size = size * 2


@hl.program
def fft_dif_tables(re: InOut[Buffer[f64, "P"]], im: InOut[Buffer[f64, "P"]],
                   cos_table: Buffer[f64, "Q"], sin_table: Buffer[f64, "Q"]):
    """Decimation in frequency on one signal, a while loop over spans inside
    one single-instance node, twiddles from tables indexed by a product."""
    for _ in parallel_loop(1, ins=(re, im, cos_table, sin_table), outs=(re, im), name="dif"):
        span = P // 2
        stride = 1
        while span >= 1:
            for b in range(P // 2):
                lo = (b // span) * (2 * span) + b % span
                hi = lo + span
                ar = re[lo]
                ai = im[lo]
                br = re[hi]
                bi = im[hi]
                re[lo] = br + ar
                im[lo] = bi + ai
                dr = ar - br
                di = ai - bi
                w = (b % span) * stride
                re[hi] = dr * cos_table[w] - di * sin_table[w]
                im[hi] = di * cos_table[w] + dr * sin_table[w]
            span = span // 2
            stride = stride * 2


def make_fft_dit(rng, signals=3, points=32):
    return {"xr": rng.uniform(-1, 1, (signals, points)), "xi": rng.uniform(-1, 1, (signals, points))}


def expected_fft_dit(inputs):
    points = inputs["xr"].shape[1]
    signal = (inputs["xr"] + 1j * inputs["xi"])[:, ms_fft.bit_reversed(points)]
    spectrum = np.fft.fft(signal, axis=1)
    return {"xr": spectrum.real, "xi": spectrum.imag}


def make_fft_dif(rng, points=64):
    angle = 2 * np.pi * np.arange(points // 2) / points
    return {"re": rng.uniform(-1, 1, points), "im": rng.uniform(-1, 1, points),
            "cos_table": np.cos(angle), "sin_table": -np.sin(angle)}


def expected_fft_dif(inputs):
    spectrum = np.fft.fft(inputs["re"] + 1j * inputs["im"])[ms_fft.bit_reversed(inputs["re"].size)]
    return {"re": spectrum.real, "im": spectrum.imag}


# -- Viterbi ----------------------------------------------------------------
@hl.program
def viterbi_transposed(observations: Buffer[i64, "N", "L"], start: Buffer[f64, "Z"],
                       moves: Buffer[f64, "Z", "Z"], emits: Buffer[f64, "V", "Z"],
                       cost: Out[Buffer[f64, "N", "L", "Z"]], states: Out[Buffer[i64, "N", "L"]]):
    """Transitions as [to, from], emissions as [token, state], the minimum
    from +inf with the min() intrinsic, a backward traceback loop."""
    for n in parallel_loop(N, ins=(observations, start, moves, emits), outs=(cost, states),
                           name="decode"):
        for z in range(Z):
            cost[n, 0, z] = start[z] + emits[observations[n, 0], z]
        for step in range(1, L):
            for to in range(Z):
                best = math.inf
                for frm in range(Z):
                    best = min(best, cost[n, step - 1, frm] + moves[to, frm]
                               + emits[observations[n, step], to])
                cost[n, step, to] = best
        last = 0
        least = cost[n, L - 1, 0]
        for z in range(1, Z):
            if cost[n, L - 1, z] < least:
                least = cost[n, L - 1, z]
                last = z
        states[n, L - 1] = last
        for back in range(L - 1, 0, -1):
            choice = 0
            least = math.inf
            for z in range(Z):
                candidate = cost[n, back - 1, z] + moves[last, z]
                if candidate < least:
                    least = candidate
                    choice = z
            states[n, back - 1] = choice
            last = choice


@hl.program
def viterbi_single(tokens: Buffer[i32, "T"], prior: Buffer[f64, "S"], trans: Buffer[f64, "S", "S"],
                   emit: Buffer[f64, "S", "K"], trellis: Out[Buffer[f64, "T", "S"]],
                   best_path: Out[Buffer[i32, "T"]]):
    """One sequence in one instance, while loops over time, the emission
    written first in each sum, the best final state found by comparing
    with the trellis itself."""
    for _ in parallel_loop(1, ins=(tokens, prior, trans, emit), outs=(trellis, best_path), name="decoder"):
        for s in range(S):
            trellis[0, s] = prior[s] + emit[s, tokens[0]]
        t = 1
        while t < T:
            for cur in range(S):
                acc = emit[cur, tokens[t]] + (trellis[t - 1, 0] + trans[0, cur])
                for p in range(1, S):
                    acc = min(acc, emit[cur, tokens[t]] + (trellis[t - 1, p] + trans[p, cur]))
                trellis[t, cur] = acc
            t += 1
        final = 0
        for s in range(1, S):
            if trellis[T - 1, s] < trellis[T - 1, final]:
                final = s
        best_path[T - 1] = i32(final)
        nxt = final
        t = T - 1
        while t > 0:
            chosen = 0
            lowest = trellis[t - 1, 0] + trans[0, nxt]
            for s in range(1, S):
                candidate = trellis[t - 1, s] + trans[s, nxt]
                if candidate < lowest:
                    lowest = candidate
                    chosen = s
            best_path[t - 1] = i32(chosen)
            nxt = chosen
            t -= 1


def make_viterbi(rng, sequences=3, steps=9, states=5, tokens=6):
    return {"obs": rng.integers(0, tokens, (sequences, steps)),
            "init": ms_viterbi.random_log_table(1, states, rng)[0],
            "transition": ms_viterbi.random_log_table(states, states, rng),
            "emission": ms_viterbi.random_log_table(states, tokens, rng)}


# -- GEMM and FIR ----------------------------------------------------------
@hl.program
def gemm_transposed(left: Buffer[f64, "R", "K"], right_t: Buffer[f64, "C", "K"],
                    product: Out[Buffer[f64, "R", "C"]]):
    """C = A @ B.T with B given transposed, accumulating in k order."""
    for r, c in parallel_loop(R, C, ins=(left, right_t), outs=(product,), name="matmul_nt"):
        acc: f64 = 0.0
        for k in range(K):
            acc = acc + right_t[c, k] * left[r, k]
        product[r, c] = acc


@hl.program
def fir_filter(signal: Buffer[f64, "B", "N"], taps: Buffer[f64, "K"], M: i64,
               filtered: Out[Buffer[f64, "B", "M"]]):
    """A batch of valid-mode convolutions y[n] = sum_k h[k] x[n + K - 1 - k]."""
    for b, n in parallel_loop(B, M, ins=(signal, taps), outs=(filtered,), name="fir"):
        total: f64 = 0.0
        for k in range(K):
            total += taps[k] * signal[b, n + K - 1 - k]
        filtered[b, n] = total



@hl.program
def product_then_scale(a: Buffer[f64, "N", "N"], b: Buffer[f64, "N", "N"], out: Out[Buffer[f64, "N", "N"]]):
    """A GEMM node feeding a plain elementwise node."""
    c = buffer(f64, ("N", "N"))
    for i, j in parallel_loop(N, N, ins=(a, b), outs=(c,), name="product"):
        total: f64 = 0.0
        for k in range(N):
            total += a[i, k] * b[k, j]
        c[i, j] = total
    for i, j in parallel_loop(N, N, ins=(c,), outs=(out,), name="scale"):
        out[i, j] = c[i, j] * 2.0


STOCKHAM_STAGE = """
func @stage{stage}(in sr: f64[B, 16], in si: f64[B, 16], out dr: f64[B, 16], out di: f64[B, 16]) {{
  let b: i64 = instance_id(0)
  let q: i64 = instance_id(1)
  let p: i64 = q / {stride}
  let r: i64 = q % {stride}
  let angle: f64 = f64(-6.283185307179586) * f64(p) / f64({length})
  let wr: f64 = cos(angle)
  let wi: f64 = sin(angle)
  let c0r: f64 = sr[b, r + {stride} * p]
  let c0i: f64 = si[b, r + {stride} * p]
  let c1r: f64 = sr[b, r + {stride} * (p + {half})]
  let c1i: f64 = si[b, r + {stride} * (p + {half})]
  dr[b, r + 2 * {stride} * p] = c0r + c1r
  di[b, r + 2 * {stride} * p] = c0i + c1i
  let xr: f64 = c0r - c1r
  let xi: f64 = c0i - c1i
  dr[b, r + {stride} * (2 * p + 1)] = xr * wr - xi * wi
  di[b, r + {stride} * (2 * p + 1)] = xr * wi + xi * wr
}}
"""


def fft_stockham():
    """Out of place: the Stockham radix-2 FFT of 16 points, natural order in
    and out, one node per stage reading one pair of buffers and writing the
    next (the last writes the outputs), twiddles computed (IR text: the
    Python front end declares no buffers in a program-level loop)."""
    from hpvm.ir.text import parse_module
    stages = "".join(STOCKHAM_STAGE.format(stage=s, stride=1 << s, half=8 >> s, length=16 >> s)
                     for s in range(4))
    wiring = ["  in xr -> s0.sr", "  in xi -> s0.si"]
    wiring += [f"  edge s{s}.{p} -> s{s + 1}.s{p[1]} all-to-all" for s in range(3) for p in ("dr", "di")]
    wiring += ["  out s3.dr -> yr", "  out s3.di -> yi"]
    nodes = [f"  node s{s} = @stage{s} [B, 8]" for s in range(4)]
    return parse_module("hpvm 1.1\nmodule fft_stockham\n" + stages + "\ngraph @main(in xr: f64[B, 16], "
                        "in xi: f64[B, 16], out yr: f64[B, 16], out yi: f64[B, 16]) {\n"
                        + "\n".join(nodes + wiring) + "\n}\n\nroot @main\n")


def make_fft_stockham(rng, signals=3):
    return {"xr": rng.uniform(-1, 1, (signals, 16)), "xi": rng.uniform(-1, 1, (signals, 16))}


def expected_fft_stockham(inputs):
    spectrum = np.fft.fft(inputs["xr"] + 1j * inputs["xi"], axis=1)
    return {"yr": spectrum.real, "yi": spectrum.imag}
