# ruff: noqa: F821  (shape symbols such as M and N are names the kernel language binds)
"""PolyBench/C 4.2's kernels whose steps read what earlier steps wrote,
ported as benchmarks/polybench.py ports its first ones: the stencils
(jacobi-1d, heat-3d, fdtd-2d, seidel-2d, time steps updating their grids
in place), floyd-warshall (each step relaxes every path through one more
vertex) and the solvers trisolv, lu and cholesky (eliminations, row by
row). They test what the loop passes must leave alone as much as what
they may change.

KERNELS maps each name to a Kernel (polybench_dense.Kernel);
benchmarks/polybench.py serves them with its own.
"""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, f32, sqrt, task

from benchmarks.polybench_dense import Kernel, normal

TSTEPS = 4
"""Time steps of the stencils."""


@hl.program
def jacobi_1d(A: InOut[Buffer[f32, "N"]], B: InOut[Buffer[f32, "N"]]):
    """TSTEPS steps of a three-point average, from A into B and back."""
    with task(ins=(A, B), outs=(A, B), name="jacobi_1d"):
        for t in range(TSTEPS):
            for i in range(1, N - 1):
                B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
            for i in range(1, N - 1):
                A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


@hl.program
def heat_3d(A: InOut[Buffer[f32, "N", "N", "N"]], B: InOut[Buffer[f32, "N", "N", "N"]]):
    """TSTEPS steps of heat diffusion on a cube, from A into B and back."""
    with task(ins=(A, B), outs=(A, B), name="heat_3d"):
        for t in range(TSTEPS):
            for i in range(1, N - 1):
                for j in range(1, N - 1):
                    for k in range(1, N - 1):
                        B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                      + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k]
                                                 + A[i, j - 1, k])
                                      + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k]
                                                 + A[i, j, k - 1])
                                      + A[i, j, k])
            for i in range(1, N - 1):
                for j in range(1, N - 1):
                    for k in range(1, N - 1):
                        A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                      + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k]
                                                 + B[i, j - 1, k])
                                      + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k]
                                                 + B[i, j, k - 1])
                                      + B[i, j, k])


@hl.program
def fdtd_2d(ex: InOut[Buffer[f32, "X", "Y"]], ey: InOut[Buffer[f32, "X", "Y"]],
            hz: InOut[Buffer[f32, "X", "Y"]], fict: Buffer[f32, "T"]):
    """T steps of the 2-D finite-difference time-domain kernel."""
    with task(ins=(ex, ey, hz, fict), outs=(ex, ey, hz), name="fdtd_2d"):
        for t in range(T):
            for j in range(Y):
                ey[0, j] = fict[t]
            for i in range(1, X):
                for j in range(Y):
                    ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
            for i in range(X):
                for j in range(1, Y):
                    ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
            for i in range(X - 1):
                for j in range(Y - 1):
                    hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j]
                                                 - ey[i, j])


@hl.program
def seidel_2d(A: InOut[Buffer[f32, "N", "N"]]):
    """TSTEPS Gauss-Seidel sweeps of a nine-point average, in place."""
    with task(ins=(A,), outs=(A,), name="seidel_2d"):
        for t in range(TSTEPS):
            for i in range(1, N - 1):
                for j in range(1, N - 1):
                    A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                               + A[i, j - 1] + A[i, j] + A[i, j + 1]
                               + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


@hl.program
def floyd_warshall(path: InOut[Buffer[f32, "N", "N"]]):
    """Shortest paths between every pair, through one more vertex a step."""
    with task(ins=(path,), outs=(path,), name="floyd_warshall"):
        for k in range(N):
            for i in range(N):
                for j in range(N):
                    path[i, j] = path[i, j] if path[i, j] < path[i, k] + path[k, j] \
                        else path[i, k] + path[k, j]


@hl.program
def trisolv(L: Buffer[f32, "N", "N"], x: InOut[Buffer[f32, "N"]], b: Buffer[f32, "N"]):
    """L x = b by forward substitution."""
    with task(ins=(L, x, b), outs=(x,), name="trisolv"):
        for i in range(N):
            x[i] = b[i]
            for j in range(i):
                x[i] -= L[i, j] * x[j]
            x[i] = x[i] / L[i, i]


@hl.program
def lu(A: InOut[Buffer[f32, "N", "N"]]):
    """A = L U without pivoting, in place (Doolittle, row by row)."""
    with task(ins=(A,), outs=(A,), name="lu"):
        for i in range(N):
            for j in range(i):
                for k in range(j):
                    A[i, j] -= A[i, k] * A[k, j]
                A[i, j] /= A[j, j]
            for j in range(i, N):
                for k in range(i):
                    A[i, j] -= A[i, k] * A[k, j]


@hl.program
def cholesky(A: InOut[Buffer[f32, "N", "N"]]):
    """A = L L^T, L in the lower triangle, row by row."""
    with task(ins=(A,), outs=(A,), name="cholesky"):
        for i in range(N):
            for j in range(i):
                for k in range(j):
                    A[i, j] -= A[i, k] * A[j, k]
                A[i, j] /= A[j, j]
            for k in range(i):
                A[i, i] -= A[i, k] * A[i, k]
            A[i, i] = sqrt(A[i, i])


def _steps(update, *arrays):
    """``update(a, b)`` then ``update(b, a)``, TSTEPS times, on copies."""
    a, b = (x.copy() for x in arrays)
    for _ in range(TSTEPS):
        update(a, b)
        update(b, a)
    return a, b


def _three_points(a, b):
    b[1:-1] = np.float32(0.33333) * (a[:-2] + a[1:-1] + a[2:])


def _heat(a, b):
    c, eighth = a[1:-1, 1:-1, 1:-1], np.float32(0.125)
    b[1:-1, 1:-1, 1:-1] = (eighth * (a[2:, 1:-1, 1:-1] - 2 * c + a[:-2, 1:-1, 1:-1])
                           + eighth * (a[1:-1, 2:, 1:-1] - 2 * c + a[1:-1, :-2, 1:-1])
                           + eighth * (a[1:-1, 1:-1, 2:] - 2 * c + a[1:-1, 1:-1, :-2]) + c)


def _fdtd(i: dict) -> dict:
    ex, ey, hz = (i[k].copy() for k in ("ex", "ey", "hz"))
    for value in i["fict"]:
        ey[0, :] = value
        ey[1:, :] -= np.float32(0.5) * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= np.float32(0.5) * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= np.float32(0.7) * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1]
                                           - ey[:-1, :-1])
    return dict(ex=ex, ey=ey, hz=hz)


def _seidel(i: dict) -> dict:
    """Row by row: a row's new values depend on its own left neighbours,
    which a running loop over the row follows (numba where installed)."""
    return dict(A=_seidel_sweeps(i["A"].copy()))


def _seidel_rows(a):
    n = a.shape[0]
    for _ in range(TSTEPS):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                a[i, j] = (a[i - 1, j - 1] + a[i - 1, j] + a[i - 1, j + 1] + a[i, j - 1]
                           + a[i, j] + a[i, j + 1] + a[i + 1, j - 1] + a[i + 1, j]
                           + a[i + 1, j + 1]) / np.float32(9.0)
    return a


try:
    import numba
    _seidel_sweeps = numba.njit(cache=False)(_seidel_rows)
except ImportError:     # numba is the bench extra's
    _seidel_sweeps = _seidel_rows


def _floyd(i: dict) -> dict:
    path = i["path"].copy()
    for k in range(len(path)):
        np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :], out=path)
    return dict(path=path)


def _lu(i: dict) -> dict:
    a = i["A"].copy()
    for k in range(len(a)):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return dict(A=a)


def _spd(rng, n):
    """A symmetric positive definite matrix, diagonally dominant."""
    m = normal(rng, n, n) / np.float32(np.sqrt(n))
    return dict(A=(m @ m.T + np.eye(n, dtype=np.float32)).astype(np.float32))


def _lower(rng, n):
    low = np.tril(normal(rng, n, n)) / np.float32(np.sqrt(n))
    np.fill_diagonal(low, 1.0 + np.abs(np.diag(low)))
    return dict(L=low.astype(np.float32), x=np.zeros(n, np.float32), b=normal(rng, n))


def _distances(rng, n):
    return dict(path=rng.uniform(1, 10, (n, n)).astype(np.float32))


KERNELS = {
    "jacobi_1d": Kernel(jacobi_1d, lambda rng, n: dict(A=normal(rng, n * n), B=normal(rng, n * n)),
                        lambda i: dict(zip("AB", _steps(_three_points, i["A"], i["B"]))), False),
    "heat_3d": Kernel(heat_3d, lambda rng, n: dict(
        A=normal(rng, *(3 * (round(n ** (2 / 3)),))), B=normal(rng, *(3 * (round(n ** (2 / 3)),)))),
        lambda i: dict(zip("AB", _steps(_heat, i["A"], i["B"]))), False),
    "fdtd_2d": Kernel(fdtd_2d, lambda rng, n: dict(ex=normal(rng, n, n), ey=normal(rng, n, n),
                                                   hz=normal(rng, n, n), fict=normal(rng, TSTEPS)),
                      _fdtd, False),
    "seidel_2d": Kernel(seidel_2d, lambda rng, n: dict(A=normal(rng, n, n)), _seidel, False),
    "floyd_warshall": Kernel(floyd_warshall, _distances, _floyd),
    "trisolv": Kernel(trisolv, _lower, lambda i: dict(x=np.linalg.solve(i["L"], i["b"])), False),
    "lu": Kernel(lu, _spd, _lu),
    "cholesky": Kernel(cholesky, _spd, lambda i: dict(
        A=np.tril(np.linalg.cholesky(i["A"])) + np.triu(i["A"], 1))),
}
