"""MachSuite spmv/crs: sparse matrix (compressed row storage) times a dense
vector, in f64.

MachSuite (Reagen et al., IISWC 2014), kernel ``spmv/crs``: for every row
i, ``out[i] = sum_{j in rowDelimiters[i] .. rowDelimiters[i+1]} val[j] *
vec[cols[j]]`` accumulated in j order.  Here the row loop is a parallel
loop (one instance per row) and the j loop stays sequential.

Sizes: "small" is MachSuite's own shape (494 rows, about 1666 non-zeros,
the size of its 494_bus matrix); "large" 1 M rows with about 16 non-zeros
each.  Deviation: the matrices are random banded ones (Parboil spmv's
``random_csr``) instead of the 494_bus file; values are f64 as in
MachSuite.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f64, i32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark
from .spmv import random_csr

# (rows, mean non-zeros per row, half-width of the band holding them)
SIZES = {"small": (494, 3, 30), "large": (1_000_000, 16, 5000)}


@hl.program
def ms_spmv_crs(val: Buffer[f64, "NNZ"], cols: Buffer[i32, "NNZ"], rowDelimiters: Buffer[i32, "N1"],
                vec: Buffer[f64, "N"], out: Out[Buffer[f64, "N"]]):
    for i in parallel_loop(N, ins=(val, cols, rowDelimiters, vec), outs=(out,), name="spmv_crs"):
        total: f64 = 0.0
        for j in range(rowDelimiters[i], rowDelimiters[i + 1]):
            total += val[j] * vec[cols[j]]
        out[i] = total


def random_matrix(size: str, rng: np.random.Generator):
    """``(row_ptr, cols, vals)``: a random square CSR matrix, vals in f64."""
    rows, mean_per_row, band = SIZES[size]
    row_ptr, cols, vals = random_csr(rows, mean_per_row, band, rng)
    return row_ptr, cols, vals.astype(np.float64)


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    row_ptr, cols, vals = random_matrix(size, rng)
    return {"val": vals, "cols": cols, "rowDelimiters": row_ptr,
            "vec": rng.standard_normal(row_ptr.size - 1)}


def reference(inputs: dict) -> dict:
    row_ptr, vec = inputs["rowDelimiters"], inputs["vec"]
    row_of = np.repeat(np.arange(vec.size), np.diff(row_ptr))
    products = inputs["val"] * vec[inputs["cols"]]
    return {"out": np.bincount(row_of, weights=products, minlength=vec.size)}


@numba.njit(parallel=True)
def _spmv_crs_numba(val, cols, row_delimiters, vec):
    out = np.empty(vec.size)
    for i in numba.prange(vec.size):
        total = 0.0
        for j in range(row_delimiters[i], row_delimiters[i + 1]):
            total += val[j] * vec[cols[j]]
        out[i] = total
    return out


def _numba_run(inputs: dict) -> dict:
    return {"out": _spmv_crs_numba(inputs["val"], inputs["cols"], inputs["rowDelimiters"], inputs["vec"])}


BENCHMARKS = [Benchmark(
    name="ms_spmv_crs", suite="machsuite", program=ms_spmv_crs, make_inputs=make_inputs,
    reference=reference,
    # f64 sums of at most 31 standard-normal products; bincount may add them
    # in another order: differences ~ 31 * eps64 * 30 ~ 2e-13.
    rtol=1e-12, atol=1e-12,
    peers=(numba_peer(_numba_run),),
    description="CSR sparse matrix-vector product in f64, one instance per row",
)]
