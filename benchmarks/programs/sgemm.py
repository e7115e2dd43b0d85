"""Parboil sgemm: ``C = alpha * A @ B + beta * C`` in single precision.

Parboil (Stratton et al., "Parboil: A Revised Benchmark Suite for Scientific
and Commercial Throughput Computing", 2012), benchmark ``sgemm``; its CPU
reference ``basicSgemm`` computes, per output element, ``c = sum_k a * b``
in f32 in k order, then ``C = C * beta + alpha * c``.  Sizes follow its
datasets: "small" is Parboil's small (128 x 96 times 96 x 160), "large" its
medium scaled to a few hundred ms on a CPU (512 x 512 x 512).

Deviation: Parboil stores A column-major and passes B transposed (the 'N',
'T' call); here A (M x K), B (K x N) and C (M x N) are row-major numpy
arrays.  The arithmetic per element is the same.

Peers: numba (the same loops, rows in parallel) and hand-written OpenCL C
(sgemm.cl: local-memory tiles of 32 x 32, four outputs per work item).
"""
from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, f32, parallel_loop

from benchmarks.peers import numba_peer, opencl_peer
from benchmarks.suite import Benchmark

SIZES = {"small": (128, 96, 160), "large": (512, 512, 512)}   # (M, K, N)


@hl.program
def sgemm(A: Buffer[f32, "M", "K"], B: Buffer[f32, "K", "N"], C: InOut[Buffer[f32, "M", "N"]],
          alpha: f32, beta: f32):
    for i, j in parallel_loop(M, N, ins=(A, B, C), outs=(C,), name="sgemm"):
        acc: f32 = 0.0
        for k in range(K):
            acc += A[i, k] * B[k, j]
        C[i, j] = C[i, j] * beta + alpha * acc


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    m, k, n = SIZES[size]
    return {"A": rng.standard_normal((m, k), dtype=np.float32),
            "B": rng.standard_normal((k, n), dtype=np.float32),
            "C": rng.standard_normal((m, n), dtype=np.float32),
            "alpha": np.float32(1.5), "beta": np.float32(-0.5)}


def reference(inputs: dict) -> dict:
    """In float64, rounded once to f32 at the end."""
    a, b, c = (inputs[name].astype(np.float64) for name in ("A", "B", "C"))
    result = float(inputs["alpha"]) * (a @ b) + float(inputs["beta"]) * c
    return {"C": result.astype(np.float32)}


@numba.njit(parallel=True)
def _sgemm_numba(a, b, c, alpha, beta):
    """The program's algorithm: parallel rows, k summed in order in f32."""
    m, k_size = a.shape
    n = b.shape[1]
    result = np.empty((m, n), np.float32)
    for i in numba.prange(m):
        for j in range(n):
            acc = np.float32(0)
            for k in range(k_size):
                acc += a[i, k] * b[k, j]
            result[i, j] = c[i, j] * beta + alpha * acc
    return result


def _run_numba(inputs: dict) -> dict:
    return {"C": _sgemm_numba(*(inputs[name] for name in ("A", "B", "C", "alpha", "beta")))}


TILE, ITEM_ROWS = 32, 8     # TS and TS / WPT of sgemm.cl


def _setup_opencl(cl, inputs):
    a, b, c_in = cl.input("A"), cl.input("B"), cl.input("C")
    c_out = cl.output("C", c_in.shape, np.float32)
    (m, k_size), n = a.shape, b.shape[1]
    groups = (-(-n // TILE), -(-m // TILE))
    scalars = (np.int32(m), np.int32(n), np.int32(k_size), np.float32(inputs["alpha"]),
               np.float32(inputs["beta"]))
    return lambda: cl.launch("sgemm_tiled", (groups[0] * TILE, groups[1] * ITEM_ROWS),
                             (TILE, ITEM_ROWS), *scalars, a, b, c_in, c_out)


BENCHMARKS = [Benchmark(
    name="sgemm", suite="parboil", program=sgemm, make_inputs=make_inputs, reference=reference,
    # f32 accumulation of K standard-normal products in k order: the rounding
    # error is about sqrt(K) * eps * |terms| (K = 96: ~1e-5 on sums of size
    # ~10), so atol 1e-4 with rtol 1e-4 has a 10x margin; the f64 reference
    # is exact to f32 rounding.
    rtol=1e-4, atol=1e-4,
    peers=(numba_peer(_run_numba),
           opencl_peer((Path(__file__).parent / "sgemm.cl").read_text(), _setup_opencl,
                       name="opencl (hand, tiled)")),
    description="C = alpha*A@B + beta*C, one node instance per element of C",
)]
