# ruff: noqa: F821  (shape symbols such as N and M are names the kernel language binds)
"""A five-point Jacobi step written as kernel programs the ways people
write it, for benchmarks/written_forms_bench.py and the cpu's tests: the
interior tested with a branch (a store in each arm, or a value updated
under the test), the neighbours' coordinates clamped, only the interior
replicated (an in-out grid whose boundary is kept), a flat buffer with
index arithmetic, and rows with the columns as a loop.  Every form but
``clamped`` keeps the boundary and gives the interior
0.2 * (centre + north + south + west + east) in that order; ``clamped``
also updates the boundary, from clamped neighbours.  ``inputs_for``
makes inputs for an n x m grid."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, Out, f32, i64, parallel_loop


@hl.program
def branch_stores(a: Buffer[f32, "N", "M"], b: Out[Buffer[f32, "N", "M"]]):
    for i, j in parallel_loop(N, M, ins=(a,), outs=(b,), name="branch_stores"):
        if 0 < i < N - 1 and 0 < j < M - 1:
            b[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
        else:
            b[i, j] = a[i, j]


@hl.program
def updated_value(a: Buffer[f32, "N", "M"], b: Out[Buffer[f32, "N", "M"]]):
    """Parboil's style: the old value, replaced inside."""
    for i, j in parallel_loop(N, M, ins=(a,), outs=(b,), name="updated_value"):
        value = a[i, j]
        if i > 0 and i < N - 1 and j > 0 and j < M - 1:
            value = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
        b[i, j] = value


@hl.program
def clamped(a: Buffer[f32, "N", "M"], b: Out[Buffer[f32, "N", "M"]]):
    for i, j in parallel_loop(N, M, ins=(a,), outs=(b,), name="clamped"):
        up, down = max(i - 1, 0), min(i + 1, N - 1)
        left, right = max(j - 1, 0), min(j + 1, M - 1)
        b[i, j] = 0.2 * (a[i, j] + a[up, j] + a[down, j] + a[i, left] + a[i, right])


@hl.program
def interior(a: Buffer[f32, "N", "M"], b: InOut[Buffer[f32, "N", "M"]]):
    for i, j in parallel_loop(N - 2, M - 2, ins=(a, b), outs=(b,), name="interior"):
        b[i + 1, j + 1] = 0.2 * (a[i + 1, j + 1] + a[i, j + 1] + a[i + 2, j + 1]
                                 + a[i + 1, j] + a[i + 1, j + 2])


@hl.program
def flat(a: Buffer[f32, "NM"], b: InOut[Buffer[f32, "NM"]], n: i64, m: i64):
    for i, j in parallel_loop(n - 2, m - 2, ins=(a, b), outs=(b,), name="flat"):
        at = (i + 1) * m + j + 1
        b[at] = 0.2 * (a[at] + a[at - m] + a[at + m] + a[at - 1] + a[at + 1])


@hl.program
def row_loops(a: Buffer[f32, "N", "M"], b: InOut[Buffer[f32, "N", "M"]]):
    for i in parallel_loop(N - 2, ins=(a, b), outs=(b,), name="row_loops"):
        for j in range(1, M - 1):
            b[i + 1, j] = 0.2 * (a[i + 1, j] + a[i, j] + a[i + 2, j] + a[i + 1, j - 1]
                                 + a[i + 1, j + 1])


FORMS = {"branch_stores": branch_stores, "updated_value": updated_value, "clamped": clamped,
         "interior": interior, "flat": flat, "row_loops": row_loops}


def inputs_for(name: str, rng, n: int, m: int) -> dict:
    """Inputs of form ``name`` for an n x m grid (in-out grids start as a
    copy of the input, so that their boundary is the input's)."""
    a = rng.random((n, m), dtype=np.float32)
    if name == "flat":
        return dict(a=a.ravel(), b=a.ravel().copy(), n=np.int64(n), m=np.int64(m))
    if name in ("interior", "row_loops"):
        return dict(a=a, b=a.copy())
    return dict(a=a)


def reference(name: str, a: np.ndarray) -> np.ndarray:
    """Form ``name``'s grid from ``a`` (n x m), in numpy, float32, the
    neighbours summed in the forms' order."""
    padded = np.pad(a, 1, mode="edge")
    north, south = padded[:-2, 1:-1], padded[2:, 1:-1]
    west, east = padded[1:-1, :-2], padded[1:-1, 2:]
    swept = np.float32(0.2) * ((((a + north) + south) + west) + east)
    if name == "clamped":
        return swept
    out = a.copy()
    out[1:-1, 1:-1] = swept[1:-1, 1:-1]
    return out
