"""MachSuite stencil/stencil3d: a 7-point stencil with two coefficients on
a 3-D grid of int32.

MachSuite (Reagen et al., IISWC 2014), kernel ``stencil/stencil3d``: the
boundary of ``sol`` is a copy of ``orig``; every interior point is

    sol = C[0] * orig[i, j, k]
        + C[1] * (orig[i+1, j, k] + orig[i-1, j, k] + orig[i, j+1, k]
                  + orig[i, j-1, k] + orig[i, j, k+1] + orig[i, j, k-1])

(MachSuite sums the six neighbours in the order k, j, i; int32 addition
does not care).  MachSuite's index ``k + row_size * (j + col_size * i)``
makes the numpy array (height, cols, rows).  Here the boundary copy and
the stencil are one parallel loop over the grid, one instance per point.

Sizes: "small" is MachSuite's own grid (32 x 32 x 16), "large" 256^3.
Inputs are random int32 in [0, 1000) and coefficients in [-8, 8).
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, i32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

SIZES = {"small": (32, 32, 16), "large": (256, 256, 256)}   # (height, cols, rows)


@hl.program
def ms_stencil3d(C: Buffer[i32, 2], orig: Buffer[i32, "H", "W", "D"],
                 sol: Out[Buffer[i32, "H", "W", "D"]]):
    for i, j, k in parallel_loop(H, W, D, ins=(C, orig), outs=(sol,), name="stencil3d"):
        value = orig[i, j, k]
        if 0 < i < H - 1 and 0 < j < W - 1 and 0 < k < D - 1:
            neighbours = (orig[i, j, k + 1] + orig[i, j, k - 1] + orig[i, j + 1, k]
                          + orig[i, j - 1, k] + orig[i + 1, j, k] + orig[i - 1, j, k])
            value = value * C[0] + neighbours * C[1]
        sol[i, j, k] = value


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    return {"C": rng.integers(-8, 8, 2, dtype=np.int32),
            "orig": rng.integers(0, 1000, SIZES[size], dtype=np.int32)}


def reference(inputs: dict) -> dict:
    orig, (c0, c1) = inputs["orig"], inputs["C"]
    sol = orig.copy()
    neighbours = (orig[2:, 1:-1, 1:-1] + orig[:-2, 1:-1, 1:-1] + orig[1:-1, 2:, 1:-1]
                  + orig[1:-1, :-2, 1:-1] + orig[1:-1, 1:-1, 2:] + orig[1:-1, 1:-1, :-2])
    sol[1:-1, 1:-1, 1:-1] = c0 * orig[1:-1, 1:-1, 1:-1] + c1 * neighbours
    return {"sol": sol}


@numba.njit(parallel=True)
def _stencil3d_numba(coefficients, orig):
    height, cols, rows = orig.shape
    sol = orig.copy()
    c0, c1 = coefficients[0], coefficients[1]
    for i in numba.prange(1, height - 1):
        for j in range(1, cols - 1):
            for k in range(1, rows - 1):
                neighbours = (orig[i, j, k + 1] + orig[i, j, k - 1] + orig[i, j + 1, k]
                              + orig[i, j - 1, k] + orig[i + 1, j, k] + orig[i - 1, j, k])
                sol[i, j, k] = orig[i, j, k] * c0 + neighbours * c1
    return sol


BENCHMARKS = [Benchmark(
    name="ms_stencil3d", suite="machsuite", program=ms_stencil3d, make_inputs=make_inputs,
    reference=reference, rtol=0, atol=0,   # int32 arithmetic: exact
    peers=(numba_peer(lambda inputs: {"sol": _stencil3d_numba(inputs["C"], inputs["orig"])}),),
    description="7-point int32 stencil with two coefficients, boundary copied",
)]
