# ruff: noqa: F821  (shape symbols such as M and K are names the kernel language binds)
"""Reductions of a matrix written as kernel programs, for
benchmarks/written_forms_bench.py and the cpu's tests: row sums as a
loop (a chain in the order written) and with ``reduce`` (any order),
column sums, a matrix-vector product (also as loops in one task) and
row maxima.  ``inputs_for``
makes inputs for an m x k matrix and ``reference`` each form's result in
numpy."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f32, parallel_loop, reduce, task


@hl.program
def row_sums(a: Buffer[f32, "M", "K"], out: Out[Buffer[f32, "M"]]):
    for i in parallel_loop(M, ins=(a,), outs=(out,), name="row_sums"):
        acc: f32 = 0.0
        for k in range(K):
            acc += a[i, k]
        out[i] = acc


@hl.program
def row_sums_reduce(a: Buffer[f32, "M", "K"], out: Out[Buffer[f32, "M"]]):
    for i in parallel_loop(M, ins=(a,), outs=(out,), name="row_sums_reduce"):
        out[i] = reduce("+", (a[i, k] for k in range(K)), initial=0.0)


@hl.program
def column_sums(a: Buffer[f32, "M", "K"], out: Out[Buffer[f32, "K"]]):
    for j in parallel_loop(K, ins=(a,), outs=(out,), name="column_sums"):
        acc: f32 = 0.0
        for i in range(M):
            acc += a[i, j]
        out[j] = acc


@hl.program
def matvec(a: Buffer[f32, "M", "K"], x: Buffer[f32, "K"], out: Out[Buffer[f32, "M"]]):
    for i in parallel_loop(M, ins=(a, x), outs=(out,), name="matvec"):
        acc: f32 = 0.0
        for k in range(K):
            acc += a[i, k] * x[k]
        out[i] = acc


@hl.program
def row_maxima(a: Buffer[f32, "M", "K"], out: Out[Buffer[f32, "M"]]):
    for i in parallel_loop(M, ins=(a,), outs=(out,), name="row_maxima"):
        best: f32 = -3.0e38
        for k in range(K):
            best = max(best, a[i, k])
        out[i] = best


@hl.program
def matvec_loops(a: Buffer[f32, "M", "K"], x: Buffer[f32, "K"], out: Out[Buffer[f32, "M"]]):
    """The matrix-vector product as a sequential program writes it: one
    task, a loop over rows around each row's chain of sums."""
    with task(ins=(a, x), outs=(out,), name="matvec_loops"):
        for i in range(M):
            acc: f32 = 0.0
            for k in range(K):
                acc += a[i, k] * x[k]
            out[i] = acc


FORMS = {"row_sums": row_sums, "row_sums_reduce": row_sums_reduce,
         "column_sums": column_sums, "matvec": matvec, "row_maxima": row_maxima,
         "matvec_loops": matvec_loops}


def inputs_for(name: str, rng, m: int, k: int) -> dict:
    a = rng.standard_normal((m, k)).astype(np.float32)
    return dict(a=a, x=rng.standard_normal(k).astype(np.float32)) \
        if name in ("matvec", "matvec_loops") else dict(a=a)


def reference(name: str, inputs: dict) -> np.ndarray:
    """What numpy computes for form ``name`` (summed in its own order)."""
    a = inputs["a"]
    return {"row_sums": lambda: a.sum(1), "row_sums_reduce": lambda: a.sum(1),
            "column_sums": lambda: a.sum(0), "matvec": lambda: a @ inputs["x"],
            "row_maxima": lambda: a.max(1), "matvec_loops": lambda: a @ inputs["x"]}[name]()
