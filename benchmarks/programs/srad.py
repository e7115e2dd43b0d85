"""Rodinia SRAD v2: speckle-reducing anisotropic diffusion of an image.

Rodinia 3.1, ``srad/srad_v2`` (Yu & Acton, "Speckle reducing anisotropic
diffusion", IEEE TIP 2002; the CUDA ``srad_cuda_1`` / ``srad_cuda_2``
kernels and the OpenMP ``srad.cpp``).  Each iteration

1. ``roi_statistics``: the mean and variance of J over the region of
   interest rows r1..r2, columns c1..c2 give ``q0sqr = var / mean^2``
   (a host loop in Rodinia; here a one-instance task node of two
   ``reduce`` sums, which parallel-reduce spreads over a work group),
2. ``srad_1``: per pixel, the four differences to the clamped neighbours
   dN, dS, dW, dE and the diffusion coefficient c (clamped to [0, 1]),
3. ``srad_2``: per pixel, the divergence D of c * grad J (c of the south
   and east neighbours) and ``J += lambda / 4 * D``.

Deviations: the neighbour index arrays iN, iS, jW, jE of Rodinia are
computed inline (``max(i - 1, 0)`` ...); the iteration count is the
compile-time constant ITERATIONS (a program-level loop unrolls into a chain
of nodes); everything is f32 as in the CUDA version (the OpenMP version
promotes some constants to double).  Inputs as Rodinia: J = exp(U[0, 1)).
"""
from pathlib import Path

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, buffer, f32, i64, parallel_loop, reduce, task

from benchmarks.peers import numba_peer, opencl_peer
from benchmarks.suite import Benchmark

ITERATIONS = 2
SIZES = {"small": (48, 64, 15), "large": (4096, 4096, 127)}
"""rows, cols and the last row / column of the region of interest (Rodinia's
default run is 2048 x 2048 with ROI 0..127; "large" is four times that)."""


@hl.program
def srad(J: InOut[Buffer[f32, "R", "C"]], r1: i64, r2: i64, c1: i64, c2: i64, lam: f32):
    q0sqr = buffer(f32, (1,))
    dN = buffer(f32, ("R", "C"))
    dS = buffer(f32, ("R", "C"))
    dW = buffer(f32, ("R", "C"))
    dE = buffer(f32, ("R", "C"))
    c = buffer(f32, ("R", "C"))
    for step in range(ITERATIONS):
        with task(ins=(J,), outs=(q0sqr,), name="roi_statistics"):
            total = reduce("+", (J[i, j] for i in range(r1, r2 + 1) for j in range(c1, c2 + 1)))
            total_sq = reduce("+", (J[i, j] * J[i, j] for i in range(r1, r2 + 1)
                                    for j in range(c1, c2 + 1)))
            size = f32((r2 - r1 + 1) * (c2 - c1 + 1))
            mean = total / size
            variance = total_sq / size - mean * mean
            q0sqr[0] = variance / (mean * mean)
        for i, j in parallel_loop(R, C, ins=(J, q0sqr), outs=(dN, dS, dW, dE, c), name="srad_1"):
            centre = J[i, j]
            north = J[max(i - 1, 0), j] - centre
            south = J[min(i + 1, R - 1), j] - centre
            west = J[i, max(j - 1, 0)] - centre
            east = J[i, min(j + 1, C - 1)] - centre
            dN[i, j] = north
            dS[i, j] = south
            dW[i, j] = west
            dE[i, j] = east
            g2 = (north * north + south * south + west * west + east * east) / (centre * centre)
            lap = (north + south + west + east) / centre
            num = 0.5 * g2 - (1.0 / 16.0) * (lap * lap)
            den = 1.0 + 0.25 * lap
            qsqr = num / (den * den)
            q0 = q0sqr[0]
            den = (qsqr - q0) / (q0 * (1.0 + q0))
            c[i, j] = min(max(1.0 / (1.0 + den), 0.0), 1.0)
        for i, j in parallel_loop(R, C, ins=(J, c, dN, dS, dW, dE), outs=(J,), name="srad_2"):
            c_here = c[i, j]
            c_south = c[min(i + 1, R - 1), j]
            c_east = c[i, min(j + 1, C - 1)]
            div = c_here * dN[i, j] + c_south * dS[i, j] + c_here * dW[i, j] + c_east * dE[i, j]
            J[i, j] = J[i, j] + 0.25 * lam * div


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    rows, cols, roi_end = SIZES[size]
    image = np.exp(rng.random((rows, cols), dtype=np.float32)).astype(np.float32)
    return {"J": image, "r1": 0, "r2": roi_end, "c1": 0, "c2": roi_end, "lam": np.float32(0.5)}


def reference(inputs: dict) -> dict:
    """numpy, in float64 (the tolerance covers the f32 program)."""
    image = inputs["J"].astype(np.float64)
    r1, r2, c1, c2 = (inputs[k] for k in ("r1", "r2", "c1", "c2"))
    for _ in range(ITERATIONS):
        roi = image[r1:r2 + 1, c1:c2 + 1]
        mean = roi.mean()
        q0sqr = (np.mean(roi * roi) - mean * mean) / (mean * mean)
        padded = np.pad(image, 1, mode="edge")
        north = padded[:-2, 1:-1] - image
        south = padded[2:, 1:-1] - image
        west = padded[1:-1, :-2] - image
        east = padded[1:-1, 2:] - image
        g2 = (north ** 2 + south ** 2 + west ** 2 + east ** 2) / image ** 2
        lap = (north + south + west + east) / image
        qsqr = (0.5 * g2 - lap ** 2 / 16) / (1 + 0.25 * lap) ** 2
        coeff = np.clip(1 / (1 + (qsqr - q0sqr) / (q0sqr * (1 + q0sqr))), 0, 1)
        padded_c = np.pad(coeff, ((0, 1), (0, 1)), mode="edge")
        div = coeff * north + padded_c[1:, :-1] * south + coeff * west + padded_c[:-1, 1:] * east
        image = image + 0.25 * float(inputs["lam"]) * div
    return {"J": image.astype(np.float32)}


@numba.njit(parallel=True)
def _srad_numba(image, r1, r2, c1, c2, lam, iterations):
    """Rodinia's OpenMP srad_v2 loops, f32, clamped neighbours inline."""
    rows, cols = image.shape
    image = image.copy()
    d_n, d_s = np.empty_like(image), np.empty_like(image)
    d_w, d_e = np.empty_like(image), np.empty_like(image)
    coeff = np.empty_like(image)
    for _ in range(iterations):
        total, total_sq = np.float32(0), np.float32(0)
        for i in range(r1, r2 + 1):
            for j in range(c1, c2 + 1):
                total += image[i, j]
                total_sq += image[i, j] * image[i, j]
        size = np.float32((r2 - r1 + 1) * (c2 - c1 + 1))
        mean = total / size
        q0sqr = (total_sq / size - mean * mean) / (mean * mean)
        for i in numba.prange(rows):
            for j in range(cols):
                centre = image[i, j]
                north = image[max(i - 1, 0), j] - centre
                south = image[min(i + 1, rows - 1), j] - centre
                west = image[i, max(j - 1, 0)] - centre
                east = image[i, min(j + 1, cols - 1)] - centre
                d_n[i, j], d_s[i, j], d_w[i, j], d_e[i, j] = north, south, west, east
                g2 = (north * north + south * south + west * west + east * east) / (centre * centre)
                lap = (north + south + west + east) / centre
                num = np.float32(0.5) * g2 - np.float32(1 / 16) * (lap * lap)
                den = np.float32(1) + np.float32(0.25) * lap
                qsqr = num / (den * den)
                den = (qsqr - q0sqr) / (q0sqr * (np.float32(1) + q0sqr))
                coeff[i, j] = min(max(np.float32(1) / (np.float32(1) + den), np.float32(0)),
                                  np.float32(1))
        for i in numba.prange(rows):
            for j in range(cols):
                here = coeff[i, j]
                div = (here * d_n[i, j] + coeff[min(i + 1, rows - 1), j] * d_s[i, j]
                       + here * d_w[i, j] + coeff[i, min(j + 1, cols - 1)] * d_e[i, j])
                image[i, j] = image[i, j] + np.float32(0.25) * lam * div
    return image


def _run_numba(inputs: dict) -> dict:
    return {"J": _srad_numba(inputs["J"], inputs["r1"], inputs["r2"], inputs["c1"], inputs["c2"],
                             inputs["lam"], ITERATIONS)}


BLOCK = (32, 8)      # work-group shape of srad_1 / srad_2
ROI_ITEMS = 256      # ROI_ITEMS of srad.cl


def _setup_opencl(cl, inputs):
    image = cl.input("J")
    result = cl.output("J", image.shape, np.float32)
    q0sqr = cl.scratch((1,), np.float32)
    diffs = [cl.scratch(image.shape, np.float32) for _ in range(4)]
    coeff = cl.scratch(image.shape, np.float32)
    rows, cols = image.shape
    sizes = (np.int32(rows), np.int32(cols))
    roi = tuple(np.int32(inputs[name]) for name in ("r1", "r2", "c1", "c2"))
    global_size = tuple(-(-n // b) * b for n, b in zip((cols, rows), BLOCK))

    def launch():
        source = image
        for _ in range(ITERATIONS):
            cl.launch("roi_statistics", (ROI_ITEMS,), (ROI_ITEMS,), source, sizes[1], *roi, q0sqr)
            cl.launch("srad_1", global_size, BLOCK, source, *sizes, q0sqr, *diffs, coeff)
            cl.launch("srad_2", global_size, BLOCK, source, result, *sizes, coeff, *diffs,
                      np.float32(inputs["lam"]))
            source = result
    return launch


BENCHMARKS = [Benchmark(
    name="srad", suite="rodinia", program=srad, make_inputs=make_inputs, reference=reference,
    # f32 against a float64 reference: the ROI sums (up to 16K terms, summed
    # sequentially in f32) set q0sqr to about 1e-5 relative; every pixel's
    # update is a few dozen f32 operations per iteration.
    rtol=1e-4, atol=1e-5,
    peers=(numba_peer(_run_numba),
           opencl_peer((Path(__file__).parent / "srad.cl").read_text(), _setup_opencl,
                       name="opencl (hand)")),
    description="speckle-reducing anisotropic diffusion, 2 iterations")]
