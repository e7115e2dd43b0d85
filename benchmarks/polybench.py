# ruff: noqa: F821  (shape symbols such as M and N are names the kernel language binds)
"""PolyBench/C 4.2's kernels as a C programmer ports them: one task each,
the loops in PolyBench's order and its arrays as its ``kernel_*``
functions take them (in-out where the kernel updates them), for
benchmarks/written_forms_bench.py ("polybench") and the cpu's tests.

Nobody here wrote them for hpvm: they are the loop nests a compiler's
loop optimisations are judged on (Pouchet et al., PolyBench 4.2). The
default pipelines find the parallel loops, orders and tiles in them, or
leave a kernel as written; ``inputs_for`` makes inputs and
``reference`` each kernel's outputs in numpy. CUBIC names the kernels
whose work grows with the cube of the size.
"""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, Out, f32, task

from benchmarks import polybench_dense, polybench_sweeps

TSTEPS = 4
"""Time steps of the stencils (jacobi_2d)."""


@hl.program
def gemm(A: Buffer[f32, "N", "N"], B: Buffer[f32, "N", "N"], C: InOut[Buffer[f32, "N", "N"]],
         alpha: f32, beta: f32):
    """C = alpha A B + beta C, PolyBench 4.2's i-k-j order."""
    with task(ins=(A, B, C), outs=(C,), name="gemm"):
        for i in range(N):
            for j in range(N):
                C[i, j] *= beta
            for k in range(N):
                for j in range(N):
                    C[i, j] += alpha * A[i, k] * B[k, j]


@hl.program
def gemm_ijk(A: Buffer[f32, "N", "N"], B: Buffer[f32, "N", "N"], C: InOut[Buffer[f32, "N", "N"]],
             alpha: f32, beta: f32):
    """The same in PolyBench 3.2's i-j-k order, summed in C."""
    with task(ins=(A, B, C), outs=(C,), name="gemm"):
        for i in range(N):
            for j in range(N):
                C[i, j] *= beta
                for k in range(N):
                    C[i, j] += alpha * A[i, k] * B[k, j]


@hl.program
def two_mm(A: Buffer[f32, "N", "N"], B: Buffer[f32, "N", "N"], C: Buffer[f32, "N", "N"],
           D: InOut[Buffer[f32, "N", "N"]], tmp: Out[Buffer[f32, "N", "N"]],
           alpha: f32, beta: f32):
    """D = alpha A B C + beta D, through tmp (i-j-k, sums in the arrays)."""
    with task(ins=(A, B, C, D), outs=(D, tmp), name="two_mm"):
        for i in range(N):
            for j in range(N):
                tmp[i, j] = 0.0
                for k in range(N):
                    tmp[i, j] += alpha * A[i, k] * B[k, j]
        for i in range(N):
            for j in range(N):
                D[i, j] *= beta
                for k in range(N):
                    D[i, j] += tmp[i, k] * C[k, j]


@hl.program
def syrk(A: Buffer[f32, "N", "M"], C: InOut[Buffer[f32, "N", "N"]], alpha: f32, beta: f32):
    """The lower triangle of C = alpha A A^T + beta C."""
    with task(ins=(A, C), outs=(C,), name="syrk"):
        for i in range(N):
            for j in range(i + 1):
                C[i, j] *= beta
            for k in range(M):
                for j in range(i + 1):
                    C[i, j] += alpha * A[i, k] * A[j, k]


@hl.program
def atax(A: Buffer[f32, "M", "N"], x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]],
         tmp: Out[Buffer[f32, "M"]]):
    """y = A^T (A x), a row of A read twice in turn."""
    with task(ins=(A, x), outs=(y, tmp), name="atax"):
        for i in range(N):
            y[i] = 0.0
        for i in range(M):
            tmp[i] = 0.0
            for j in range(N):
                tmp[i] = tmp[i] + A[i, j] * x[j]
            for j in range(N):
                y[j] = y[j] + A[i, j] * tmp[i]


@hl.program
def bicg(A: Buffer[f32, "N", "M"], r: Buffer[f32, "N"], p: Buffer[f32, "M"],
         s: Out[Buffer[f32, "M"]], q: Out[Buffer[f32, "N"]]):
    """s = A^T r and q = A p in one walk of A."""
    with task(ins=(A, r, p), outs=(s, q), name="bicg"):
        for i in range(M):
            s[i] = 0.0
        for i in range(N):
            q[i] = 0.0
            for j in range(M):
                s[j] = s[j] + r[i] * A[i, j]
                q[i] = q[i] + A[i, j] * p[j]


@hl.program
def mvt(A: Buffer[f32, "N", "N"], y1: Buffer[f32, "N"], y2: Buffer[f32, "N"],
        x1: InOut[Buffer[f32, "N"]], x2: InOut[Buffer[f32, "N"]]):
    """x1 += A y1 and x2 += A^T y2, each its own nest."""
    with task(ins=(A, y1, y2, x1, x2), outs=(x1, x2), name="mvt"):
        for i in range(N):
            for j in range(N):
                x1[i] = x1[i] + A[i, j] * y1[j]
        for i in range(N):
            for j in range(N):
                x2[i] = x2[i] + A[j, i] * y2[j]


@hl.program
def gesummv(A: Buffer[f32, "N", "N"], B: Buffer[f32, "N", "N"], x: Buffer[f32, "N"],
            y: Out[Buffer[f32, "N"]], tmp: Out[Buffer[f32, "N"]], alpha: f32, beta: f32):
    """y = alpha A x + beta B x."""
    with task(ins=(A, B, x), outs=(y, tmp), name="gesummv"):
        for i in range(N):
            tmp[i] = 0.0
            y[i] = 0.0
            for j in range(N):
                tmp[i] = A[i, j] * x[j] + tmp[i]
                y[i] = B[i, j] * x[j] + y[i]
            y[i] = alpha * tmp[i] + beta * y[i]


@hl.program
def gemver(A: InOut[Buffer[f32, "N", "N"]], u1: Buffer[f32, "N"], v1: Buffer[f32, "N"],
           u2: Buffer[f32, "N"], v2: Buffer[f32, "N"], y: Buffer[f32, "N"],
           z: Buffer[f32, "N"], x: InOut[Buffer[f32, "N"]], w: InOut[Buffer[f32, "N"]],
           alpha: f32, beta: f32):
    """A rank-2 update, then x = beta A^T y + z and w += alpha A x."""
    with task(ins=(A, u1, v1, u2, v2, y, z, x, w), outs=(A, x, w), name="gemver"):
        for i in range(N):
            for j in range(N):
                A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
        for i in range(N):
            for j in range(N):
                x[i] = x[i] + beta * A[j, i] * y[j]
        for i in range(N):
            x[i] = x[i] + z[i]
        for i in range(N):
            for j in range(N):
                w[i] = w[i] + alpha * A[i, j] * x[j]


@hl.program
def covariance(data: InOut[Buffer[f32, "N", "M"]], cov: Out[Buffer[f32, "M", "M"]],
               mean: Out[Buffer[f32, "M"]], float_n: f32):
    """Column means taken away, then the upper triangle of data^T data
    / (n - 1), mirrored."""
    with task(ins=(data,), outs=(data, cov, mean), name="covariance"):
        for j in range(M):
            mean[j] = 0.0
            for i in range(N):
                mean[j] += data[i, j]
            mean[j] /= float_n
        for i in range(N):
            for j in range(M):
                data[i, j] -= mean[j]
        for i in range(M):
            for j in range(i, M):
                cov[i, j] = 0.0
                for k in range(N):
                    cov[i, j] += data[k, i] * data[k, j]
                cov[i, j] /= float_n - 1.0
                cov[j, i] = cov[i, j]


@hl.program
def doitgen(A: InOut[Buffer[f32, "R", "Q", "P"]], C4: Buffer[f32, "P", "P"],
            sums: Out[Buffer[f32, "P"]]):
    """Each row of A replaced by its product with C4, through sums."""
    with task(ins=(A, C4), outs=(A, sums), name="doitgen"):
        for r in range(R):
            for q in range(Q):
                for p in range(P):
                    sums[p] = 0.0
                    for s in range(P):
                        sums[p] += A[r, q, s] * C4[s, p]
                for p in range(P):
                    A[r, q, p] = sums[p]


@hl.program
def jacobi_2d(A: InOut[Buffer[f32, "N", "N"]], B: InOut[Buffer[f32, "N", "N"]]):
    """TSTEPS steps of a five-point average, from A into B and back."""
    with task(ins=(A, B), outs=(A, B), name="jacobi_2d"):
        for t in range(TSTEPS):
            for i in range(1, N - 1):
                for j in range(1, N - 1):
                    B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j]
                                     + A[i - 1, j])
            for i in range(1, N - 1):
                for j in range(1, N - 1):
                    A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j]
                                     + B[i - 1, j])


MORE = {**polybench_dense.KERNELS, **polybench_sweeps.KERNELS}
"""The other kernels ported (benchmarks/polybench_dense.py, polybench_sweeps.py)."""
FORMS = {"gemm": gemm, "gemm_ijk": gemm_ijk, "two_mm": two_mm, "syrk": syrk, "atax": atax,
         "bicg": bicg, "mvt": mvt, "gesummv": gesummv, "gemver": gemver, "covariance": covariance,
         "doitgen": doitgen, "jacobi_2d": jacobi_2d,
         **{name: kernel.program for name, kernel in MORE.items()}}
CUBIC = ("gemm", "gemm_ijk", "two_mm", "syrk", "covariance", "doitgen",
         *(name for name, kernel in MORE.items() if kernel.cubic))


def inputs_for(name: str, rng, size: int, grid: int) -> dict:
    """Inputs of kernel ``name``: ``size`` on a side for the CUBIC ones,
    ``grid`` for the others (doitgen: size / 8 rows of size / 8 by size)."""
    n = size if name in CUBIC else grid
    if name in MORE:
        return MORE[name].inputs(rng, n)

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    scalars = dict(alpha=np.float32(1.5), beta=np.float32(1.2))
    vectors = {"atax": ("x",), "bicg": ("r", "p"), "mvt": ("y1", "y2", "x1", "x2"),
               "gesummv": ("x",), "gemver": ("u1", "v1", "u2", "v2", "y", "z", "x", "w")}
    if name in vectors:
        made = dict(A=normal(n, n), **{v: normal(n) for v in vectors[name]})
        if name == "gesummv":
            made["B"] = normal(n, n)
        return dict(made, **scalars) if name in ("gesummv", "gemver") else made
    return {"gemm": lambda: dict(A=normal(n, n), B=normal(n, n), C=normal(n, n), **scalars),
            "gemm_ijk": lambda: dict(A=normal(n, n), B=normal(n, n), C=normal(n, n), **scalars),
            "two_mm": lambda: dict(A=normal(n, n), B=normal(n, n), C=normal(n, n),
                                   D=normal(n, n), **scalars),
            "syrk": lambda: dict(A=normal(n, n), C=normal(n, n), **scalars),
            "covariance": lambda: dict(data=normal(n, n), float_n=np.float32(n)),
            "doitgen": lambda: dict(A=normal(n // 8, n // 8, n), C4=normal(n, n)),
            "jacobi_2d": lambda: dict(A=normal(n, n), B=normal(n, n))}[name]()


def reference(name: str, inputs: dict) -> dict:
    """Kernel ``name``'s outputs from ``inputs``, as a numpy user writes
    them (f32, BLAS's order of sums: within rounding of the kernel's)."""
    if name in MORE:
        return MORE[name].reference(inputs)
    i = inputs
    alpha, beta = i.get("alpha"), i.get("beta")
    if name in ("gemm", "gemm_ijk"):
        out = dict(C=alpha * i["A"] @ i["B"] + beta * i["C"])
    elif name == "two_mm":
        tmp = alpha * i["A"] @ i["B"]
        out = dict(tmp=tmp, D=tmp @ i["C"] + beta * i["D"])
    elif name == "syrk":
        lower = np.tril(alpha * i["A"] @ i["A"].T + beta * i["C"])
        out = dict(C=lower + np.triu(i["C"], 1))
    elif name == "atax":
        tmp = i["A"] @ i["x"]
        out = dict(tmp=tmp, y=i["A"].T @ tmp)
    elif name == "bicg":
        out = dict(s=i["A"].T @ i["r"], q=i["A"] @ i["p"])
    elif name == "mvt":
        out = dict(x1=i["x1"] + i["A"] @ i["y1"], x2=i["x2"] + i["A"].T @ i["y2"])
    elif name == "gesummv":
        tmp = i["A"] @ i["x"]
        out = dict(tmp=tmp, y=alpha * tmp + beta * (i["B"] @ i["x"]))
    elif name == "gemver":
        a = i["A"] + np.outer(i["u1"], i["v1"]) + np.outer(i["u2"], i["v2"])
        x = i["x"] + beta * a.T @ i["y"] + i["z"]
        out = dict(A=a, x=x, w=i["w"] + alpha * a @ x)
    elif name == "covariance":
        mean = i["data"].mean(0)
        centred = i["data"] - mean
        out = dict(mean=mean, data=centred,
                   cov=centred.T @ centred / (i["float_n"] - 1.0))
    elif name == "doitgen":
        out = dict(A=i["A"] @ i["C4"])
    elif name == "jacobi_2d":
        a, b = i["A"].copy(), i["B"].copy()
        for _ in range(TSTEPS):
            b[1:-1, 1:-1] = _five_points(a)
            a[1:-1, 1:-1] = _five_points(b)
        out = dict(A=a, B=b)
    return out


def _five_points(a: np.ndarray) -> np.ndarray:
    return np.float32(0.2) * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                              + a[:-2, 1:-1])
