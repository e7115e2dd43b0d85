"""Matrix products written the way people write them, each in its own
style, with a numpy reference and a near miss that must be refused:
i-j-k with a local sum, either operand transposed, the summed loop
shifted or run backwards, a while loop, one instance per row."""
from __future__ import annotations

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f64, parallel_loop


@hl.program
def ijk_local_sum(A: Buffer[f64, "M", "K"], B: Buffer[f64, "K", "N"], C: Out[Buffer[f64, "M", "N"]]):
    """The schoolbook product, one instance per element."""
    for i, j in parallel_loop(M, N, ins=(A, B), outs=(C,), name="matmul"):
        s: f64 = 0.0
        for k in range(K):
            s += A[i, k] * B[k, j]
        C[i, j] = s


@hl.program
def transposed_first(at: Buffer[f64, "K", "M"], b: Buffer[f64, "K", "N"],
                     c: Out[Buffer[f64, "M", "N"]]):
    """C = A^T B with A given as stored (K x M), the summed loop shifted by
    one (1 .. K, reading k - 1)."""
    for row, col in parallel_loop(M, N, ins=(at, b), outs=(c,), name="atb"):
        total: f64 = 0.0
        for k in range(1, K + 1):
            total = total + at[k - 1, row] * b[k - 1, col]
        c[row, col] = total


@hl.program
def row_per_instance(x: Buffer[f64, "R", "D"], w: Buffer[f64, "H", "D"], y: Out[Buffer[f64, "R", "H"]]):
    """A linear layer y = x w^T: one instance per row of x, a loop over the
    outputs, the dot product by a while loop."""
    for r in parallel_loop(R, ins=(x, w), outs=(y,), name="linear"):
        for h in range(H):
            acc: f64 = 0.0
            d = 0
            while d < D:
                acc = acc + w[h, d] * x[r, d]
                d = d + 1
            y[r, h] = acc


@hl.program
def backwards_sum(p: Buffer[f64, "I", "J"], q: Buffer[f64, "J", "L"], out: Out[Buffer[f64, "I", "L"]]):
    """The summed index run from the last to the first."""
    for a, c in parallel_loop(I, L, ins=(p, q), outs=(out,), name="product"):
        sum_: f64 = 0.0
        for bb in range(J - 1, -1, -1):
            sum_ = p[a, bb] * q[bb, c] + sum_
        out[a, c] = sum_


def _pair(rng, left, right):
    return rng.uniform(-1, 1, left), rng.uniform(-1, 1, right)


def make_ijk(rng):
    a, b = _pair(rng, (5, 7), (7, 6))
    return {"A": a, "B": b}


def make_transposed(rng):
    a, b = _pair(rng, (7, 5), (7, 4))
    return {"at": a, "b": b}


def make_rows(rng):
    x, w = _pair(rng, (6, 9), (3, 9))
    return {"x": x, "w": w}


def make_backwards(rng):
    p, q = _pair(rng, (4, 8), (8, 5))
    return {"p": p, "q": q}


VARIANTS = [
    {"name": "ijk_local_sum", "program": ijk_local_sum, "make": make_ijk,
     "reference": lambda i: {"C": i["A"] @ i["B"]},
     "mutant": ("let s: f64 = 0.0", "let s: f64 = 1.0", "a sum from one",
                "the sum does not start from zero")},
    {"name": "transposed_first", "program": transposed_first, "make": make_transposed,
     "reference": lambda i: {"c": i["at"].T @ i["b"]},
     "mutant": ("b[k - 1, col]", "b[k, col]", "an off-by-one row of the second factor",
                "structure matched, but")},
    {"name": "row_per_instance", "program": row_per_instance, "make": make_rows,
     "reference": lambda i: {"y": i["x"] @ i["w"].T},
     "mutant": ("acc = acc + w[h, d] * x[r, d]", "acc = acc + w[h, d] + x[r, d]",
                "a sum of the factors instead of their product", "no sum + product")},
    {"name": "backwards_sum", "program": backwards_sum, "make": make_backwards,
     "reference": lambda i: {"out": i["p"] @ i["q"]},
     "mutant": ("p[a, bb] * q[bb, c]", "p[a, bb] * q[c, bb]", "a transposed read of a "
                "non-square matrix", "structure matched, but")},
]
