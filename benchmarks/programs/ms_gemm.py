"""MachSuite gemm/ncubed: dense matrix multiply ``prod = m1 @ m2`` in f64.

MachSuite (Reagen et al., "MachSuite: Benchmarks for Accelerator Design and
Customized Architectures", IISWC 2014), kernel ``gemm/ncubed``: the naive
triple loop over square row-major matrices of doubles; for each (i, j) the
sum over k of ``m1[i, k] * m2[k, j]`` is accumulated in k order.  Here the
(i, j) loops are a parallel loop (one node instance per element of prod)
and the k loop stays sequential, as in the C code.

Sizes: "small" is MachSuite's own (64 x 64); "large" is 512 x 512, a few
hundred ms on a CPU.  Deviation: none in the arithmetic; MachSuite passes
flat arrays, here they are 2-D numpy arrays of the same layout.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f64, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

SIZES = {"small": 64, "large": 512}


@hl.program
def ms_gemm(m1: Buffer[f64, "N", "N"], m2: Buffer[f64, "N", "N"], prod: Out[Buffer[f64, "N", "N"]]):
    for i, j in parallel_loop(N, N, ins=(m1, m2), outs=(prod,), name="gemm"):
        total: f64 = 0.0
        for k in range(N):
            total += m1[i, k] * m2[k, j]
        prod[i, j] = total


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    n = SIZES[size]
    return {"m1": rng.uniform(-1, 1, (n, n)), "m2": rng.uniform(-1, 1, (n, n))}


def reference(inputs: dict) -> dict:
    return {"prod": inputs["m1"] @ inputs["m2"]}


@numba.njit(parallel=True)
def _gemm_numba(m1, m2):
    """The same loops: parallel rows, sequential k per element."""
    n = m1.shape[0]
    prod = np.empty((n, n))
    for i in numba.prange(n):
        for j in range(n):
            total = 0.0
            for k in range(n):
                total += m1[i, k] * m2[k, j]
            prod[i, j] = total
    return prod


BENCHMARKS = [Benchmark(
    name="ms_gemm", suite="machsuite", program=ms_gemm, make_inputs=make_inputs,
    reference=reference,
    # f64 sums of N products in [-1, 1] in k order vs BLAS's blocked order:
    # the two differ by about N * eps64 * N ~ 1e-11 at N = 512.
    rtol=1e-10, atol=1e-10,
    peers=(numba_peer(lambda inputs: {"prod": _gemm_numba(inputs["m1"], inputs["m2"])}),),
    description="naive n^3 matrix multiply in f64, one instance per output element",
)]
