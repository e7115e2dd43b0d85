# ruff: noqa: F821  (shape symbols such as M, N and K are names the kernel language binds)
"""Loop nests written as people write them, for the register-tile pass's
tests and benchmarks/written_forms_bench.py:
the suite's sgemm and ms_gemm (f64), matrix products in other layouts and
styles, batched, over integers, a min-plus product, products with a bias
or two sums, and a nest the pass must leave alone.  ``inputs_for`` makes
inputs for an m x k by k x n product."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, Out, f32, i32, parallel_loop

from benchmarks.programs.ms_gemm import ms_gemm
from benchmarks.programs.sgemm import sgemm


@hl.program
def matmul_bt(a: Buffer[f32, "M", "K"], bt: Buffer[f32, "N", "K"], c: Out[Buffer[f32, "M", "N"]]):
    """b stored transposed, as a linear layer's weights are."""
    for row, col in parallel_loop(M, N, ins=(a, bt), outs=(c,), name="linear"):
        total: f32 = 0.0
        for k in range(K):
            total = total + a[row, k] * bt[col, k]
        c[row, col] = total


@hl.program
def matmul_at(at: Buffer[f32, "K", "M"], b: Buffer[f32, "K", "N"], c: Out[Buffer[f32, "M", "N"]]):
    for i, j in parallel_loop(M, N, ins=(at, b), outs=(c,), name="atb"):
        s: f32 = 0.0
        for p in range(K):
            s += at[p, i] * b[p, j]
        c[i, j] = s


@hl.program
def flat_matmul(a: Buffer[f32, "MK"], b: Buffer[f32, "KN"], c: InOut[Buffer[f32, "MN"]],
                m: i32, k: i32, n: i32):
    """Flat buffers, rows found by index arithmetic."""
    for i, j in parallel_loop(m, n, ins=(a, b, c), outs=(c,), name="flat"):
        base = i * k
        acc: f32 = 0.0
        for p in range(k):
            acc += a[base + p] * b[p * n + j]
        c[i * n + j] = acc


@hl.program
def batched(x: Buffer[f32, "B", "M", "K"], w: Buffer[f32, "B", "K", "N"],
            y: Out[Buffer[f32, "B", "M", "N"]]):
    for b, i, j in parallel_loop(B, M, N, ins=(x, w), outs=(y,), name="bmm"):
        acc: f32 = 0.0
        for k in range(K):
            acc += x[b, i, k] * w[b, k, j]
        y[b, i, j] = acc


@hl.program
def int_matmul(a: Buffer[i32, "M", "K"], b: Buffer[i32, "K", "N"], c: Out[Buffer[i32, "M", "N"]]):
    for i, j in parallel_loop(M, N, ins=(a, b), outs=(c,), name="imm"):
        acc: i32 = 0
        for k in range(K):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


@hl.program
def min_plus(d: Buffer[f32, "M", "K"], e: Buffer[f32, "K", "N"], out: Out[Buffer[f32, "M", "N"]]):
    """One relaxation step of all-pairs shortest paths (tropical product)."""
    for i, j in parallel_loop(M, N, ins=(d, e), outs=(out,), name="relax"):
        best: f32 = 1e30
        for k in range(K):
            best = min(best, d[i, k] + e[k, j])
        out[i, j] = best


@hl.program
def biased_relu(x: Buffer[f32, "M", "K"], w: Buffer[f32, "K", "N"], bias: Buffer[f32, "N"],
                y: Out[Buffer[f32, "M", "N"]]):
    """The sum starts from the bias (a load before the loop)."""
    for i, j in parallel_loop(M, N, ins=(x, w, bias), outs=(y,), name="dense"):
        acc: f32 = bias[j]
        for k in range(K):
            acc += x[i, k] * w[k, j]
        y[i, j] = max(acc, 0.0)


@hl.program
def two_sums(a: Buffer[f32, "M", "K"], b: Buffer[f32, "K", "N"], dots: Out[Buffer[f32, "M", "N"]],
             dist: Out[Buffer[f32, "M", "N"]]):
    """Products and squared distances of rows of a with columns of b."""
    for i, j in parallel_loop(M, N, ins=(a, b), outs=(dots, dist), name="pairs"):
        dot: f32 = 0.0
        sq: f32 = 0.0
        for k in range(K):
            x = a[i, k]
            y = b[k, j]
            dot += x * y
            sq += (x - y) * (x - y)
        dots[i, j] = dot
        dist[i, j] = sq


@hl.program
def scaled_terms(a: Buffer[f32, "M", "K"], b: Buffer[f32, "K", "N"], c: Out[Buffer[f32, "M", "N"]],
                 alpha: f32):
    """The scale inside the sum, each term alpha * a * b (PolyBench's
    habit)."""
    for i, j in parallel_loop(M, N, ins=(a, b), outs=(c,), name="scaled"):
        acc: f32 = 0.0
        for k in range(K):
            acc += alpha * a[i, k] * b[k, j]
        c[i, j] = acc


@hl.program
def row_sums(a: Buffer[f32, "M", "K"], out: InOut[Buffer[f32, "M", "N"]]):
    """Reads nothing that follows the columns: no reuse to tile."""
    for i, j in parallel_loop(M, N, ins=(a, out), outs=(out,), name="rows"):
        acc: f32 = 0.0
        for k in range(K):
            acc += a[i, k]
        out[i, j] = acc


def _matrices(dtype, *shapes):
    def make(rng):
        if np.issubdtype(dtype, np.integer):
            return [rng.integers(-9, 10, s).astype(dtype) for s in shapes]
        return [rng.standard_normal(s).astype(dtype) for s in shapes]
    return make


def inputs_for(name: str, rng, m: int, k: int, n: int) -> dict:
    """Inputs of program ``name`` for an m x k by k x n product."""
    if name == "sgemm":
        a, b, c = _matrices(np.float32, (m, k), (k, n), (m, n))(rng)
        return dict(A=a, B=b, C=c, alpha=np.float32(1.5), beta=np.float32(-0.5))
    if name == "matmul_bt":
        a, bt = _matrices(np.float32, (m, k), (n, k))(rng)
        return dict(a=a, bt=bt)
    if name == "matmul_at":
        at, b = _matrices(np.float32, (k, m), (k, n))(rng)
        return dict(at=at, b=b)
    if name == "flat_matmul":
        a, b, c = _matrices(np.float32, (m * k,), (k * n,), (m * n,))(rng)
        return dict(a=a, b=b, c=c, m=np.int32(m), k=np.int32(k), n=np.int32(n))
    if name == "batched":
        x, w = _matrices(np.float32, (3, m, k), (3, k, n))(rng)
        return dict(x=x, w=w)
    if name == "ms_gemm":
        m1, m2 = _matrices(np.float64, (m, m), (m, m))(rng)
        return dict(m1=m1, m2=m2)
    if name == "int_matmul":
        a, b = _matrices(np.int32, (m, k), (k, n))(rng)
        return dict(a=a, b=b)
    if name == "biased_relu":
        x, w, bias = _matrices(np.float32, (m, k), (k, n), (n,))(rng)
        return dict(x=x, w=w, bias=bias)
    a, b = _matrices(np.float32, (m, k), (k, n))(rng)
    if name == "scaled_terms":
        return dict(a=a, b=b, alpha=np.float32(1.5))
    return dict(d=a, e=b) if name == "min_plus" else dict(a=a, b=b)


TILED = {"sgemm": sgemm, "matmul_bt": matmul_bt, "matmul_at": matmul_at,
         "flat_matmul": flat_matmul, "batched": batched, "ms_gemm": ms_gemm,
         "int_matmul": int_matmul, "min_plus": min_plus, "biased_relu": biased_relu,
         "two_sums": two_sums, "scaled_terms": scaled_terms}
"""Programs whose one node the pass schedules."""
UNTILED = {"row_sums": row_sums}
