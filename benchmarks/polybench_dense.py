# ruff: noqa: F821  (shape symbols such as M and N are names the kernel language binds)
"""PolyBench/C 4.2's other dense kernels, ported as benchmarks/polybench.py
ports its first ones (one task each, PolyBench's loop order, its arrays
as its ``kernel_*`` functions take them): 3mm, syr2k, symm, trmm (BLAS
and products), correlation (datamining) and gramschmidt (a solver).

KERNELS maps each name to a Kernel: the program, its inputs at a size,
its outputs in numpy; benchmarks/polybench.py serves them with its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, Out, f32, sqrt, task


@dataclass(frozen=True)
class Kernel:
    """A ported kernel: ``inputs(rng, n)`` at size ``n`` (``cubic``: its
    work grows with the cube of ``n``), ``reference(inputs)`` its outputs
    as a numpy user computes them."""

    program: object
    inputs: Callable
    reference: Callable
    cubic: bool = True


def normal(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


SCALARS = dict(alpha=np.float32(1.5), beta=np.float32(1.2))


@hl.program
def three_mm(A: Buffer[f32, "N", "N"], B: Buffer[f32, "N", "N"], C: Buffer[f32, "N", "N"],
             D: Buffer[f32, "N", "N"], E: Out[Buffer[f32, "N", "N"]],
             F: Out[Buffer[f32, "N", "N"]], G: Out[Buffer[f32, "N", "N"]]):
    """G = (A B) (C D), each product summed in its array."""
    with task(ins=(A, B, C, D), outs=(E, F, G), name="three_mm"):
        for i in range(N):
            for j in range(N):
                E[i, j] = 0.0
                for k in range(N):
                    E[i, j] += A[i, k] * B[k, j]
        for i in range(N):
            for j in range(N):
                F[i, j] = 0.0
                for k in range(N):
                    F[i, j] += C[i, k] * D[k, j]
        for i in range(N):
            for j in range(N):
                G[i, j] = 0.0
                for k in range(N):
                    G[i, j] += E[i, k] * F[k, j]


@hl.program
def syr2k(A: Buffer[f32, "N", "M"], B: Buffer[f32, "N", "M"], C: InOut[Buffer[f32, "N", "N"]],
          alpha: f32, beta: f32):
    """The lower triangle of C = alpha (A B^T + B A^T) + beta C."""
    with task(ins=(A, B, C), outs=(C,), name="syr2k"):
        for i in range(N):
            for j in range(i + 1):
                C[i, j] *= beta
            for k in range(M):
                for j in range(i + 1):
                    C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


@hl.program
def symm(A: Buffer[f32, "M", "M"], B: Buffer[f32, "M", "N"], C: InOut[Buffer[f32, "M", "N"]],
         alpha: f32, beta: f32):
    """C = alpha A B + beta C with A symmetric, read from its lower
    triangle (the rows above i updated as row i passes)."""
    with task(ins=(A, B, C), outs=(C,), name="symm"):
        for i in range(M):
            for j in range(N):
                temp2: f32 = 0.0
                for k in range(i):
                    C[k, j] += alpha * B[i, j] * A[i, k]
                    temp2 += B[k, j] * A[i, k]
                C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


@hl.program
def trmm(A: Buffer[f32, "M", "M"], B: InOut[Buffer[f32, "M", "N"]], alpha: f32):
    """B = alpha A^T B with A unit lower triangular, in place."""
    with task(ins=(A, B), outs=(B,), name="trmm"):
        for i in range(M):
            for j in range(N):
                for k in range(i + 1, M):
                    B[i, j] += A[k, i] * B[k, j]
                B[i, j] = alpha * B[i, j]


@hl.program
def correlation(data: InOut[Buffer[f32, "N", "M"]], corr: Out[Buffer[f32, "M", "M"]],
                mean: Out[Buffer[f32, "M"]], stddev: Out[Buffer[f32, "M"]], float_n: f32):
    """Columns centred and scaled, then their correlations (the upper
    triangle, mirrored; ones on the diagonal)."""
    with task(ins=(data,), outs=(data, corr, mean, stddev), name="correlation"):
        for j in range(M):
            mean[j] = 0.0
            for i in range(N):
                mean[j] += data[i, j]
            mean[j] /= float_n
        for j in range(M):
            stddev[j] = 0.0
            for i in range(N):
                stddev[j] += (data[i, j] - mean[j]) * (data[i, j] - mean[j])
            stddev[j] /= float_n
            stddev[j] = sqrt(stddev[j])
            stddev[j] = 1.0 if stddev[j] <= 0.1 else stddev[j]
        for i in range(N):
            for j in range(M):
                data[i, j] -= mean[j]
                data[i, j] /= sqrt(float_n) * stddev[j]
        for i in range(M - 1):
            corr[i, i] = 1.0
            for j in range(i + 1, M):
                corr[i, j] = 0.0
                for k in range(N):
                    corr[i, j] += data[k, i] * data[k, j]
                corr[j, i] = corr[i, j]
        corr[M - 1, M - 1] = 1.0


@hl.program
def gramschmidt(A: InOut[Buffer[f32, "M", "N"]], R: Out[Buffer[f32, "N", "N"]],
                Q: Out[Buffer[f32, "M", "N"]]):
    """A = Q R by classical Gram-Schmidt, column by column (R's lower
    triangle left unwritten)."""
    with task(ins=(A,), outs=(A, R, Q), name="gramschmidt"):
        for k in range(N):
            nrm: f32 = 0.0
            for i in range(M):
                nrm += A[i, k] * A[i, k]
            R[k, k] = sqrt(nrm)
            for i in range(M):
                Q[i, k] = A[i, k] / R[k, k]
            for j in range(k + 1, N):
                R[k, j] = 0.0
                for i in range(M):
                    R[k, j] += Q[i, k] * A[i, j]
                for i in range(M):
                    A[i, j] = A[i, j] - Q[i, k] * R[k, j]


def _correlation(i: dict) -> dict:
    data, n = i["data"], i["float_n"]
    mean = data.mean(0)
    stddev = np.sqrt(((data - mean) ** 2).mean(0))
    stddev = np.where(stddev <= 0.1, np.float32(1), stddev).astype(np.float32)
    scaled = (data - mean) / (np.sqrt(n) * stddev)
    corr = scaled.T @ scaled
    np.fill_diagonal(corr, 1.0)
    return dict(mean=mean, stddev=stddev, data=scaled, corr=corr)


def _gramschmidt(i: dict) -> dict:
    """Householder's QR, signed as Gram-Schmidt's (R's diagonal positive);
    A ends as each column less its projections: Q times R's diagonal."""
    q, r = np.linalg.qr(i["A"])
    signs = np.sign(np.diag(r))
    q, r = q * signs, r * signs[:, None]
    return dict(Q=q, R=np.triu(r), A=q * np.diag(r))


def _tall(rng, n):
    """A well-conditioned M x N matrix (M = N + N / 2) for gramschmidt."""
    return dict(A=normal(rng, n + n // 2, n))


KERNELS = {
    "three_mm": Kernel(three_mm, lambda rng, n: {k: normal(rng, n, n) for k in "ABCD"},
                       lambda i: dict(E=i["A"] @ i["B"], F=i["C"] @ i["D"],
                                      G=(i["A"] @ i["B"]) @ (i["C"] @ i["D"]))),
    "syr2k": Kernel(syr2k, lambda rng, n: dict(A=normal(rng, n, n), B=normal(rng, n, n),
                                               C=normal(rng, n, n), **SCALARS),
                    lambda i: dict(C=np.tril(i["alpha"] * (i["A"] @ i["B"].T + i["B"] @ i["A"].T)
                                             + i["beta"] * i["C"]) + np.triu(i["C"], 1))),
    "symm": Kernel(symm, lambda rng, n: dict(A=normal(rng, n, n), B=normal(rng, n, n),
                                             C=normal(rng, n, n), **SCALARS),
                   lambda i: dict(C=i["alpha"] * (np.tril(i["A"]) + np.tril(i["A"], -1).T)
                                  @ i["B"] + i["beta"] * i["C"])),
    "trmm": Kernel(trmm, lambda rng, n: dict(A=normal(rng, n, n), B=normal(rng, n, n),
                                             alpha=SCALARS["alpha"]),
                   lambda i: dict(B=i["alpha"] * (np.tril(i["A"], -1) + np.eye(
                       len(i["A"]), dtype=np.float32)).T @ i["B"])),
    "correlation": Kernel(correlation, lambda rng, n: dict(data=normal(rng, n, n),
                                                           float_n=np.float32(n)),
                          _correlation),
    "gramschmidt": Kernel(gramschmidt, _tall, _gramschmidt),
}
