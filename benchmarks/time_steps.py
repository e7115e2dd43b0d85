# ruff: noqa: F821  (shape symbols such as N and M are names the kernel language binds)
"""Explicit time steps of the heat equation on a grid, written the ways
solvers write them, for benchmarks/written_forms_bench.py ("steps") and
the tests: each step computes the five-point Laplacian of the grid with
clamped neighbours, then updates the grid ``u + DT * laplacian``, in
place, through a second grid copied back, or from a copy of the old grid
taken first (Rodinia's cfd).  STEPS steps a call; the grid is the
caller's, updated.  hpvm's default pipeline runs the updates out of place
and fuses each into the stencil before it (node-fusion);
``inputs_for`` makes a grid and ``reference`` the result in numpy."""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, buffer, f32, i64, parallel_loop

STEPS = 4
DT = 0.2


@hl.kernel
def laplacian(u: Buffer[f32, "N", "M"], i: i64, j: i64) -> f32:
    up, down = max(i - 1, 0), min(i + 1, N - 1)
    left, right = max(j - 1, 0), min(j + 1, M - 1)
    return u[up, j] + u[down, j] + u[i, left] + u[i, right] - 4.0 * u[i, j]


@hl.program
def in_place(u: InOut[Buffer[f32, "N", "M"]]):
    """The slope into a grid of its own, then ``u += DT * slope``."""
    slope = buffer(f32, ("N", "M"))
    for step in range(STEPS):
        for i, j in parallel_loop(N, M, ins=(u,), outs=(slope,), name="slope"):
            slope[i, j] = laplacian(u, i, j)
        for i, j in parallel_loop(N, M, ins=(u, slope), outs=(u,), name="update"):
            u[i, j] = u[i, j] + DT * slope[i, j]


@hl.program
def copy_back(u: InOut[Buffer[f32, "N", "M"]]):
    """The new grid into a second one, copied back into ``u``."""
    new = buffer(f32, ("N", "M"))
    for step in range(STEPS):
        for i, j in parallel_loop(N, M, ins=(u,), outs=(new,), name="advance"):
            new[i, j] = u[i, j] + DT * laplacian(u, i, j)
        for i, j in parallel_loop(N, M, ins=(new,), outs=(u,), name="copy_back"):
            u[i, j] = new[i, j]


@hl.program
def old_copy(u: InOut[Buffer[f32, "N", "M"]]):
    """Rodinia's cfd: the old grid copied first, the slope, then
    ``u = old + DT * slope``."""
    old = buffer(f32, ("N", "M"))
    slope = buffer(f32, ("N", "M"))
    for step in range(STEPS):
        for i, j in parallel_loop(N, M, ins=(u,), outs=(old,), name="copy"):
            old[i, j] = u[i, j]
        for i, j in parallel_loop(N, M, ins=(u,), outs=(slope,), name="slope"):
            slope[i, j] = laplacian(u, i, j)
        for i, j in parallel_loop(N, M, ins=(old, slope), outs=(u,), name="step"):
            u[i, j] = old[i, j] + DT * slope[i, j]


FORMS = {"in_place": in_place, "copy_back": copy_back, "old_copy": old_copy}


def inputs_for(name: str, rng, n: int, m: int) -> dict:
    """A grid of n x m values (every form takes the same)."""
    return {"u": rng.standard_normal((n, m)).astype(np.float32)}


def reference(name: str, inputs: dict) -> np.ndarray:
    """STEPS steps in numpy, in f32: the grid edge-padded, then shifted
    slices (what every form computes)."""
    u = inputs["u"].copy()
    for _ in range(STEPS):
        p = np.pad(u, 1, mode="edge")
        slope = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - np.float32(4.0) * u
        u = u + np.float32(DT) * slope
    return u


@numba.njit(parallel=True, fastmath=False)
def _numba_steps(u, v):
    n, m = u.shape
    for _ in range(STEPS):
        for i in numba.prange(n):
            up, down = max(i - 1, 0), min(i + 1, n - 1)
            for j in range(m):
                left, right = max(j - 1, 0), min(j + 1, m - 1)
                slope = u[up, j] + u[down, j] + u[i, left] + u[i, right] - np.float32(4.0) * u[i, j]
                v[i, j] = u[i, j] + np.float32(DT) * slope
        u, v = v, u
    return u


def numba_steps(inputs: dict) -> np.ndarray:
    """STEPS steps in numba's parallel loops, between the caller's grid
    (left as it was) and two made here, as the fused steps do."""
    return _numba_steps(inputs["u"].copy(), np.empty_like(inputs["u"]))
