"""MachSuite spmv/ellpack: sparse matrix (ELLPACK) times a dense vector,
in f64.

MachSuite (Reagen et al., IISWC 2014), kernel ``spmv/ellpack``: every row
holds exactly L (value, column) slots, padded with zero values; for row
i, ``out[i] = out[i] + sum_{j < L} nzval[i, j] * vec[cols[i, j]]``, the
sum starting from the incoming ``out[i]`` and accumulated in j order.
Here the row loop is a parallel loop (one instance per row) and ``out``
is an in/out buffer, as in MachSuite.

Sizes: "small" is MachSuite's own shape (494 rows, L = 10), "large" 1 M
rows with L = 31 slots (about 16 used on average).  Deviation: the
matrices are random banded ones (see ms_spmv_crs) converted to ELLPACK,
padding slots pointing at column 0 with value 0.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, f64, i32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark
from .ms_spmv_crs import random_matrix

SLOTS = {"small": 10, "large": 31}   # L: at least the longest row of random_matrix(size)


@hl.program
def ms_spmv_ellpack(nzval: Buffer[f64, "N", "L"], cols: Buffer[i32, "N", "L"], vec: Buffer[f64, "N"],
                    out: InOut[Buffer[f64, "N"]]):
    for i in parallel_loop(N, ins=(nzval, cols, vec, out), outs=(out,), name="spmv_ellpack"):
        total = out[i]
        for j in range(L):
            total += nzval[i, j] * vec[cols[i, j]]
        out[i] = total


def csr_to_ellpack(row_ptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, width: int):
    """``(nzval, cols)`` of shape (rows, width); padding slots hold value 0
    at column 0."""
    counts = np.diff(row_ptr)
    rows = counts.size
    if counts.max() > width:
        raise ValueError(f"a row has {counts.max()} non-zeros, more than the {width} ELLPACK slots")
    row_of = np.repeat(np.arange(rows), counts)
    slot = np.arange(cols.size) - np.repeat(row_ptr[:-1], counts)
    ell_vals = np.zeros((rows, width))
    ell_cols = np.zeros((rows, width), dtype=np.int32)
    ell_vals[row_of, slot] = vals
    ell_cols[row_of, slot] = cols
    return ell_vals, ell_cols


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    row_ptr, cols, vals = random_matrix(size, rng)
    nzval, ell_cols = csr_to_ellpack(row_ptr, cols, vals, SLOTS[size])
    rows = row_ptr.size - 1
    return {"nzval": nzval, "cols": ell_cols, "vec": rng.standard_normal(rows),
            "out": rng.standard_normal(rows)}


def reference(inputs: dict) -> dict:
    products = inputs["nzval"] * inputs["vec"][inputs["cols"]]
    return {"out": inputs["out"] + products.sum(axis=1)}


@numba.njit(parallel=True)
def _spmv_ellpack_numba(nzval, cols, vec, out):
    rows, slots = nzval.shape
    result = np.empty(rows)
    for i in numba.prange(rows):
        total = out[i]
        for j in range(slots):
            total += nzval[i, j] * vec[cols[i, j]]
        result[i] = total
    return result


def _numba_run(inputs: dict) -> dict:
    return {"out": _spmv_ellpack_numba(inputs["nzval"], inputs["cols"], inputs["vec"], inputs["out"])}


BENCHMARKS = [Benchmark(
    name="ms_spmv_ellpack", suite="machsuite", program=ms_spmv_ellpack, make_inputs=make_inputs,
    reference=reference,
    # f64 sums of L + 1 terms of size ~1 in another order than numpy's
    # pairwise sum: differences ~ L * eps64 * L ~ 2e-13.
    rtol=1e-12, atol=1e-12,
    peers=(numba_peer(_numba_run),),
    description="ELLPACK sparse matrix-vector product in f64, out += A @ vec, one instance per row",
)]
