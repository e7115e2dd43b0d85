"""MachSuite stencil/stencil2d: a 3 x 3 filter over a 2-D grid of int32.

MachSuite (Reagen et al., IISWC 2014), kernel ``stencil/stencil2d``: for
every r < rows - 2 and c < cols - 2,

    sol[r, c] = sum_{k1, k2 < 3} filter[k1 * 3 + k2] * orig[r + k1, c + k2]

accumulated in (k1, k2) order in int32; the last two rows and columns of
``sol`` are never written (zero here, as the output is a fresh buffer).
Here (r, c) is a parallel loop over the whole of ``sol`` (one instance per
element, the border instances store 0) and the 3 x 3 loops are sequential.

Sizes: "small" is MachSuite's own grid (128 rows x 64 columns), "large"
4096 x 4096.  Inputs are random int32 in [0, 1000) and filter taps in
[-8, 8), so sums stay far from overflow.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, i32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

SIZES = {"small": (128, 64), "large": (4096, 4096)}   # (rows, cols)


@hl.program
def ms_stencil2d(orig: Buffer[i32, "R", "C"], filter: Buffer[i32, 9], sol: Out[Buffer[i32, "R", "C"]]):
    for r, c in parallel_loop(R, C, ins=(orig, filter), outs=(sol,), name="stencil2d"):
        total: i32 = 0
        if r < R - 2 and c < C - 2:
            for k1 in range(3):
                for k2 in range(3):
                    total += filter[k1 * 3 + k2] * orig[r + k1, c + k2]
        sol[r, c] = total


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    rows, cols = SIZES[size]
    return {"orig": rng.integers(0, 1000, (rows, cols), dtype=np.int32),
            "filter": rng.integers(-8, 8, 9, dtype=np.int32)}


def reference(inputs: dict) -> dict:
    orig, taps = inputs["orig"], inputs["filter"].reshape(3, 3)
    rows, cols = orig.shape
    sol = np.zeros_like(orig)
    for k1 in range(3):
        for k2 in range(3):
            sol[:-2, :-2] += taps[k1, k2] * orig[k1:rows - 2 + k1, k2:cols - 2 + k2]
    return {"sol": sol}


@numba.njit(parallel=True)
def _stencil2d_numba(orig, taps):
    rows, cols = orig.shape
    sol = np.zeros_like(orig)
    for r in numba.prange(rows - 2):
        for c in range(cols - 2):
            total = np.int32(0)
            for k1 in range(3):
                for k2 in range(3):
                    total += taps[k1 * 3 + k2] * orig[r + k1, c + k2]
            sol[r, c] = total
    return sol


BENCHMARKS = [Benchmark(
    name="ms_stencil2d", suite="machsuite", program=ms_stencil2d, make_inputs=make_inputs,
    reference=reference, rtol=0, atol=0,   # int32 arithmetic: exact
    peers=(numba_peer(lambda inputs: {"sol": _stencil2d_numba(inputs["orig"], inputs["filter"])}),),
    description="3x3 int32 filter over a 2-D grid, one instance per output element",
)]
