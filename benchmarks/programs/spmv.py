"""Parboil spmv: sparse matrix times dense vector, ``y = A @ x``.

Parboil (Stratton et al., 2012), benchmark ``spmv``: one output element per
row, the row's non-zeros multiplied by the gathered x elements and summed
in f32.  Its matrices are square (1138_bus, bcsstk18, Dubcova3).

Deviations: Parboil stores the matrix in JDS (jagged diagonal) format; here
it is CSR (``row_ptr``, ``cols``, ``vals``), as issue 6 asks.  The matrices
are random with a banded sparsity pattern (non-zeros near the diagonal, as
in the finite-element matrices Parboil uses) instead of files: "small" is
about the shape of 1138_bus scaled down, "large" that of Dubcova3 (146689
rows, ~3.6 M non-zeros).  Parboil repeats the product 50 times; here the
program computes it once.

Peers: numba (the same loops, rows in parallel) and hand-written OpenCL C
(spmv.cl: CSR-vector, eight work items per row).
"""
from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f32, i32, parallel_loop

from benchmarks.peers import numba_peer, opencl_peer
from benchmarks.suite import Benchmark

# (rows, mean non-zeros per row, half-width of the band holding them)
SIZES = {"small": (200, 6, 20), "large": (146689, 25, 2000)}


@hl.program
def spmv(row_ptr: Buffer[i32, "N1"], cols: Buffer[i32, "NNZ"], vals: Buffer[f32, "NNZ"],
         x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    for row in parallel_loop(N, ins=(row_ptr, cols, vals, x), outs=(y,), name="spmv_csr"):
        acc: f32 = 0.0
        for p in range(row_ptr[row], row_ptr[row + 1]):
            acc += vals[p] * x[cols[p]]
        y[row] = acc


def random_csr(rows: int, mean_per_row: int, band: int, rng: np.random.Generator):
    """A square CSR matrix: row r holds 1 .. 2*mean_per_row - 1 non-zeros in
    columns r - band .. r + band (wrapped), sorted, duplicates allowed."""
    counts = rng.integers(1, 2 * mean_per_row, size=rows)
    row_ptr = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(counts, out=row_ptr[1:])
    row_of = np.repeat(np.arange(rows), counts)
    cols = (row_of + rng.integers(-band, band + 1, size=row_of.size)) % rows
    cols = cols[np.lexsort((cols, row_of))].astype(np.int32)
    vals = rng.standard_normal(row_of.size, dtype=np.float32)
    return row_ptr, cols, vals


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    rows, mean_per_row, band = SIZES[size]
    row_ptr, cols, vals = random_csr(rows, mean_per_row, band, rng)
    return {"row_ptr": row_ptr, "cols": cols, "vals": vals,
            "x": rng.standard_normal(rows, dtype=np.float32)}


def reference(inputs: dict) -> dict:
    """Per-row sums of vals * x[cols] in float64."""
    row_ptr, x = inputs["row_ptr"], inputs["x"]
    row_of = np.repeat(np.arange(x.size), np.diff(row_ptr))
    products = inputs["vals"].astype(np.float64) * x[inputs["cols"]]
    return {"y": np.bincount(row_of, weights=products, minlength=x.size).astype(np.float32)}


@numba.njit(parallel=True)
def _spmv_numba(row_ptr, cols, vals, x):
    """The program's algorithm: parallel rows, each summed in order in f32."""
    y = np.empty(x.size, np.float32)
    for row in numba.prange(x.size):
        acc = np.float32(0)
        for p in range(row_ptr[row], row_ptr[row + 1]):
            acc += vals[p] * x[cols[p]]
        y[row] = acc
    return y


def _run_numba(inputs: dict) -> dict:
    return {"y": _spmv_numba(*(inputs[name] for name in ("row_ptr", "cols", "vals", "x")))}


LANES, GROUP = 8, 128      # of spmv.cl


def _setup_opencl(cl, inputs):
    arrays = [cl.input(name) for name in ("row_ptr", "cols", "vals", "x")]
    rows = arrays[-1].size
    y = cl.output("y", (rows,), np.float32)
    global_size = -(-rows * LANES // GROUP) * GROUP
    return lambda: cl.launch("spmv_csr_vector", (global_size,), (GROUP,), *arrays, y, np.int32(rows))


BENCHMARKS = [Benchmark(
    name="spmv", suite="parboil", program=spmv, make_inputs=make_inputs, reference=reference,
    # At most 2 * mean - 1 (11 when small) standard-normal products summed in
    # f32: rounding error below 11 * eps * (sum of |terms|, ~10) ~ 1e-5.
    rtol=1e-5, atol=2e-5,
    peers=(numba_peer(_run_numba),
           opencl_peer((Path(__file__).parent / "spmv.cl").read_text(), _setup_opencl,
                       name="opencl (hand, csr-vector)")),
    description="CSR sparse matrix-vector product, one node instance per row",
)]
