"""MachSuite fft/strided: in-place radix-2 decimation-in-frequency FFT of
complex f64 signals, output in bit-reversed order.

MachSuite (Reagen et al., IISWC 2014), kernel ``fft/strided``: for span =
N/2, N/4, ..., 1 (stage ``log`` = 0, 1, ...), every butterfly pairs
``even`` with ``odd = even + span`` (even's span bit clear):

    (even, odd) <- (even + odd, even - odd)
    odd *= twid[(even << log) & (N - 1)]    (skipped when that index is 0)

with ``twid[n] = cos(2 pi n / N) - i sin(2 pi n / N)`` passed in as
``real_twid`` / ``img_twid`` (N / 2 entries each), as MachSuite's
generator makes them.  The result is the DFT of the input with element k
at position bitreverse(k).

Formulation: each stage is a node, a parallel loop over the N / 2
butterflies (butterfly t has ``even = (t // span) * 2 * span + t % span``,
the value MachSuite's strided ``odd |= span`` loop reaches).  A dataflow
graph's node count is fixed when the program is built, so the program
unrolls STAGES = 10 stages with span = N >> (stage + 1); it handles any
N = 2^k <= 2^STAGES, stages whose span is 0 (k < STAGES) doing nothing.
Deviation: the program transforms a batch of B independent signals (rows
of ``real`` / ``img``) so the large size is big enough to time; MachSuite
transforms one.  Sizes: "small" 4 signals of N = 256, "large" 4096
signals of MachSuite's N = 1024.  Inputs are uniform in [-1, 1) (MachSuite
uses random() integers).
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, f64, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

STAGES = 10
SIZES = {"small": (4, 256), "large": (4096, 1024)}   # (signals, points)


@hl.program
def ms_fft(real: InOut[Buffer[f64, "B", "N"]], img: InOut[Buffer[f64, "B", "N"]],
           real_twid: Buffer[f64, "H"], img_twid: Buffer[f64, "H"]):
    for stage in range(STAGES):
        for b, t in parallel_loop(B, H, ins=(real, img, real_twid, img_twid), outs=(real, img),
                                  name="fft_stage"):
            span = N >> (stage + 1)
            if span > 0:
                even = t // span * 2 * span + t % span
                odd = even + span
                real_even, real_odd = real[b, even], real[b, odd]
                img_even, img_odd = img[b, even], img[b, odd]
                real[b, even] = real_even + real_odd
                img[b, even] = img_even + img_odd
                real_odd = real_even - real_odd
                img_odd = img_even - img_odd
                root = (even << stage) & (N - 1)
                if root != 0:
                    real[b, odd] = real_twid[root] * real_odd - img_twid[root] * img_odd
                    img[b, odd] = real_twid[root] * img_odd + img_twid[root] * real_odd
                else:
                    real[b, odd] = real_odd
                    img[b, odd] = img_odd


def twiddles(points: int) -> tuple[np.ndarray, np.ndarray]:
    """MachSuite's twiddle factors: cos and -sin of 2 pi n / points."""
    angle = 2 * np.pi * np.arange(points // 2) / points
    return np.cos(angle), -np.sin(angle)


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    signals, points = SIZES[size]
    if points & (points - 1) or points > 1 << STAGES:
        raise ValueError(f"fft: N = {points} must be a power of two <= 2^{STAGES}")
    real_twid, img_twid = twiddles(points)
    return {"real": rng.uniform(-1, 1, (signals, points)), "img": rng.uniform(-1, 1, (signals, points)),
            "real_twid": real_twid, "img_twid": img_twid}


def bit_reversed(points: int) -> np.ndarray:
    """Indices 0 .. points-1 with their log2(points) bits reversed."""
    bits = points.bit_length() - 1
    index = np.arange(points)
    return sum(((index >> bit) & 1) << (bits - 1 - bit) for bit in range(bits))


def reference(inputs: dict) -> dict:
    spectrum = np.fft.fft(inputs["real"] + 1j * inputs["img"], axis=1)
    spectrum = spectrum[:, bit_reversed(spectrum.shape[1])]
    return {"real": spectrum.real, "img": spectrum.imag}


@numba.njit(parallel=True)
def _fft_numba(real, img, real_twid, img_twid):
    signals, points = real.shape
    for b in numba.prange(signals):
        span, log = points >> 1, 0
        while span:
            for t in range(points >> 1):
                even = t // span * 2 * span + t % span
                odd = even + span
                real_odd = real[b, even] - real[b, odd]
                img_odd = img[b, even] - img[b, odd]
                real[b, even] += real[b, odd]
                img[b, even] += img[b, odd]
                root = (even << log) & (points - 1)
                real[b, odd] = real_twid[root] * real_odd - img_twid[root] * img_odd
                img[b, odd] = real_twid[root] * img_odd + img_twid[root] * real_odd
            span, log = span >> 1, log + 1
    return real, img


def _numba_run(inputs: dict) -> dict:
    real, img = _fft_numba(inputs["real"].copy(), inputs["img"].copy(),
                           inputs["real_twid"], inputs["img_twid"])
    return {"real": real, "img": img}


BENCHMARKS = [Benchmark(
    name="ms_fft", suite="machsuite", program=ms_fft, make_inputs=make_inputs, reference=reference,
    # Outputs are sums of N terms of size <= 1 (|X| ~ sqrt(N) ~ 32); each of
    # the log2 N stages adds ~eps64 relative error, so hpvm and numpy's FFT
    # agree to ~log2(N) * eps64 * N ~ 2e-12.
    rtol=1e-10, atol=1e-10,
    peers=(numba_peer(_numba_run),),
    description="radix-2 DIF FFT (MachSuite strided), one node per stage, a batch of signals",
)]
