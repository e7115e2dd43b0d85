"""FIR filters written the way people write them, each in its own style,
with a numpy reference and a near miss that must be refused:
correlation and convolution, one signal or a batch, the taps indexed
forwards or backwards, the output length given or derived."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f64, i64, parallel_loop


@hl.program
def correlate(x: Buffer[f64, "N"], h: Buffer[f64, "K"], L: i64, y: Out[Buffer[f64, "L"]]):
    """y[n] = sum_k h[k] x[n + k], valid part."""
    for n in parallel_loop(L, ins=(x, h), outs=(y,), name="fir"):
        acc: f64 = 0.0
        for k in range(K):
            acc += h[k] * x[n + k]
        y[n] = acc


@hl.program
def convolve_batch(sig: Buffer[f64, "B", "N"], taps: Buffer[f64, "K"], M: i64,
                   out: Out[Buffer[f64, "B", "M"]]):
    """A batch of signals, y[n] = sum_j taps[j] sig[n + K - 1 - j]."""
    for b, n in parallel_loop(B, M, ins=(sig, taps), outs=(out,), name="conv"):
        total: f64 = 0.0
        for j in range(K):
            total = total + sig[b, n + K - 1 - j] * taps[j]
        out[b, n] = total


@hl.program
def reversed_taps_loop(samples: Buffer[f64, "S"], coeffs: Buffer[f64, "T"], O: i64,
                       filtered: Out[Buffer[f64, "O"]]):
    """Convolution written with the taps loop running backwards over the
    samples: y[n] = sum_t coeffs[T - 1 - t] samples[n + t]."""
    for n in parallel_loop(O, ins=(samples, coeffs), outs=(filtered,), name="fir"):
        s: f64 = 0.0
        t = 0
        while t < T:
            s = s + coeffs[T - 1 - t] * samples[n + t]
            t += 1
        filtered[n] = s


@hl.program
def moving_window(stream: Buffer[f64, "W"], kernel: Buffer[f64, "Q"], R: i64,
                  result: Out[Buffer[f64, "R"]]):
    """A window ending at the output sample: y[i] = sum_k kernel[k]
    stream[i + Q - 1 - k], the summed index shifted (1 .. Q)."""
    for i in parallel_loop(R, ins=(stream, kernel), outs=(result,), name="window"):
        v: f64 = 0.0
        for k in range(1, Q + 1):
            v = v + kernel[k - 1] * stream[i + Q - k]
        result[i] = v


def _valid(x, h):
    return np.lib.stride_tricks.sliding_window_view(x, h.size, axis=-1) @ h


def make_correlate(rng):
    x, h = rng.uniform(-1, 1, 20), rng.uniform(-1, 1, 4)
    return {"x": x, "h": h, "L": 17}


def make_batch(rng):
    return {"sig": rng.uniform(-1, 1, (3, 16)), "taps": rng.uniform(-1, 1, 5), "M": 12}


def make_reversed(rng):
    return {"samples": rng.uniform(-1, 1, 25), "coeffs": rng.uniform(-1, 1, 6), "O": 20}


def make_window(rng):
    return {"stream": rng.uniform(-1, 1, 18), "kernel": rng.uniform(-1, 1, 3), "R": 16}


VARIANTS = [
    {"name": "correlate", "program": correlate, "make": make_correlate,
     "reference": lambda i: {"y": _valid(i["x"], i["h"])},
     "mutant": ("x[n + k]", "x[n + k + 1]", "a window one sample late",
                "structure matched, but")},
    {"name": "convolve_batch", "program": convolve_batch, "make": make_batch,
     "reference": lambda i: {"out": _valid(i["sig"], i["taps"][::-1])},
     "mutant": ("let total: f64 = 0.0", "let total: f64 = 0.5", "a sum from one half",
                "the sum does not start from zero")},
    {"name": "reversed_taps_loop", "program": reversed_taps_loop, "make": make_reversed,
     "reference": lambda i: {"filtered": _valid(i["samples"], i["coeffs"][::-1])},
     "mutant": ("coeffs[T - 1 - t]", "coeffs[T - 2 - t]", "an off-by-one tap index",
                "structure matched, but")},
    {"name": "moving_window", "program": moving_window, "make": make_window,
     "reference": lambda i: {"result": _valid(i["stream"], i["kernel"][::-1])},
     "mutant": ("v = v + kernel[k - 1] * stream[i + Q - k]",
                "v = v - kernel[k - 1] * stream[i + Q - k]", "a difference instead of a sum",
                "no product of two loaded values")},
]
