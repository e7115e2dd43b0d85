# ruff: noqa: F821  (shape symbols such as M and N are names the kernel language binds)
"""Loop nests written in the order that walks memory column by column,
for benchmarks/written_forms_bench.py ("orders") and the cpu's tests:
the nest order a Fortran or MATLAB habit, or a formula's indices, gives.
hpvm's default pipelines swap them (loop-interchange) where the swap
computes the same; ``inputs_for`` makes inputs and ``reference`` each
form's result in numpy."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, exp, f32, i64, parallel_loop, task


@hl.program
def scale_columns(a: Buffer[f32, "M", "N"], w: Buffer[f32, "N"], out: Out[Buffer[f32, "M", "N"]]):
    """Each column scaled by its weight, column after column."""
    with task(ins=(a, w), outs=(out,), name="scale_columns"):
        for j in range(N):
            for i in range(M):
                out[i, j] = a[i, j] * w[j]


@hl.program
def scale_hoisted(a: Buffer[f32, "M", "N"], w: Buffer[f32, "N"], out: Out[Buffer[f32, "M", "N"]]):
    """The same, each column's factor computed once before its walk (a
    programmer's hoisting)."""
    with task(ins=(a, w), outs=(out,), name="scale_hoisted"):
        for j in range(N):
            factor: f32 = w[j] * 0.5
            for i in range(M):
                out[i, j] = a[i, j] * factor


@hl.program
def column_sums(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "N"]]):
    """Each column's sum, accumulated in the output."""
    with task(ins=(a,), outs=(out,), name="column_sums"):
        for j in range(N):
            out[j] = 0.0
        for j in range(N):
            for i in range(M):
                out[j] += a[i, j]


@hl.program
def column_means(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "N"]]):
    """Each column's mean, summed in a local variable."""
    with task(ins=(a,), outs=(out,), name="column_means"):
        for j in range(N):
            total: f32 = 0.0
            for i in range(M):
                total += a[i, j]
            out[j] = total / f32(M)


@hl.program
def column_moments(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "N"]],
                   mean: Out[Buffer[f32, "N"]]):
    """Each column's variance and mean, from a sum and a sum of squares
    kept in two local variables."""
    with task(ins=(a,), outs=(out, mean), name="column_moments"):
        for j in range(N):
            total: f32 = 0.0
            squares: f32 = 0.0
            for i in range(M):
                total += a[i, j]
                squares += a[i, j] * a[i, j]
            mean[j] = total / f32(M)
            out[j] = squares / f32(M) - (total / f32(M)) * (total / f32(M))


@hl.program
def scaled_with_sums(a: Buffer[f32, "M", "N"], w: Buffer[f32, "N"],
                     out: Out[Buffer[f32, "M", "N"]], sums: Out[Buffer[f32, "N"]]):
    """Each column scaled, its sum taken in the same walk."""
    with task(ins=(a, w), outs=(out, sums), name="scaled_with_sums"):
        for j in range(N):
            total: f32 = 0.0
            for i in range(M):
                out[i, j] = a[i, j] * w[j]
                total += a[i, j]
            sums[j] = total


@hl.program
def transpose_add(a: Buffer[f32, "M", "M"], b: Buffer[f32, "M", "M"],
                  out: Out[Buffer[f32, "M", "M"]]):
    """a + b^T, its indices in the order of the formula's b[j, i]."""
    with task(ins=(a, b), outs=(out,), name="transpose_add"):
        for j in range(M):
            for i in range(M):
                out[i, j] = a[i, j] + b[j, i]


@hl.program
def gain_images(images: Buffer[f32, "B", "M", "N"], gain: Buffer[f32, "B"],
                out: Out[Buffer[f32, "B", "M", "N"]]):
    """A batch of images, one instance each, every column in turn."""
    for n in parallel_loop(B, ins=(images, gain), outs=(out,), name="gain_images"):
        for j in range(N):
            for i in range(M):
                out[n, i, j] = images[n, i, j] * gain[n]


@hl.program
def offset_channels(x: Buffer[f32, "M", "N", "C"], bias: Buffer[f32, "C"],
                    out: Out[Buffer[f32, "M", "N", "C"]]):
    """A channels-last image, channel by channel (the loop order of a
    channels-first habit)."""
    with task(ins=(x, bias), outs=(out,), name="offset_channels"):
        for c in range(C):
            for i in range(M):
                for j in range(N):
                    out[i, j, c] = x[i, j, c] + bias[c]


@hl.program
def normalise_columns(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]]):
    """Each column divided by its sum: a walk down the column to sum it,
    then a second one to divide."""
    with task(ins=(a,), outs=(out,), name="normalise_columns"):
        for j in range(N):
            total: f32 = 0.0
            for i in range(M):
                total += a[i, j]
            for i in range(M):
                out[i, j] = a[i, j] / total


@hl.program
def column_softmax(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]]):
    """A softmax over each column, in three walks: its maximum, the sum
    of the exponentials, the quotients."""
    with task(ins=(a,), outs=(out,), name="column_softmax"):
        for j in range(N):
            high: f32 = a[0, j]
            for i in range(1, M):
                high = max(high, a[i, j])
            total: f32 = 0.0
            for i in range(M):
                total += exp(a[i, j] - high)
            for i in range(M):
                out[i, j] = exp(a[i, j] - high) / total


@hl.program
def center_channels(x: Buffer[f32, "M", "N", "C"], out: Out[Buffer[f32, "M", "N", "C"]]):
    """A channels-last image with each channel's mean taken away, channel
    by channel: a walk over the image to sum the channel, a second to
    subtract its mean."""
    with task(ins=(x,), outs=(out,), name="center_channels"):
        for c in range(C):
            total: f32 = 0.0
            for i in range(M):
                for j in range(N):
                    total += x[i, j, c]
            mean = total / f32(M * N)
            for i in range(M):
                for j in range(N):
                    out[i, j, c] = x[i, j, c] - mean


@hl.program
def column_cumsum(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]]):
    """Running sums down each column, column by column: each row adds the
    row before it."""
    with task(ins=(a,), outs=(out,), name="column_cumsum"):
        for j in range(N):
            out[0, j] = a[0, j]
            for i in range(1, M):
                out[i, j] = out[i - 1, j] + a[i, j]


@hl.program
def lower_triangle(a: Buffer[f32, "M", "M"], w: Buffer[f32, "M"],
                   out: Out[Buffer[f32, "M", "M"]]):
    """The lower triangle scaled by its columns' weights, column by column
    from the diagonal down (the rest of the output stays zero)."""
    with task(ins=(a, w), outs=(out,), name="lower_triangle"):
        for j in range(M):
            for i in range(j, M):
                out[i, j] = a[i, j] * w[j]


@hl.program
def column_matvec(a: Buffer[f32, "M", "N"], x: Buffer[f32, "N"], out: Out[Buffer[f32, "M"]]):
    """A matrix-vector product column by column (column-major habit): each
    column scaled by its element of x and added into the result."""
    with task(ins=(a, x), outs=(out,), name="column_matvec"):
        for i in range(M):
            out[i] = 0.0
        for j in range(N):
            for i in range(M):
                out[i] += a[i, j] * x[j]


@hl.program
def column_argmax(a: Buffer[f32, "M", "N"], out: Out[Buffer[i64, "N"]]):
    """Where each column has its greatest value (the first such row), kept
    with the value in two locals down the column."""
    with task(ins=(a,), outs=(out,), name="column_argmax"):
        for j in range(N):
            best: f32 = a[0, j]
            where: i64 = 0
            for i in range(1, M):
                if a[i, j] > best:
                    best = a[i, j]
                    where = i
            out[j] = where


FORMS = {"scale_columns": scale_columns, "scale_hoisted": scale_hoisted,
         "column_sums": column_sums, "column_means": column_means,
         "column_moments": column_moments, "scaled_with_sums": scaled_with_sums,
         "transpose_add": transpose_add, "gain_images": gain_images,
         "offset_channels": offset_channels, "normalise_columns": normalise_columns,
         "column_softmax": column_softmax, "center_channels": center_channels,
         "column_cumsum": column_cumsum, "lower_triangle": lower_triangle,
         "column_matvec": column_matvec, "column_argmax": column_argmax}
BATCH, CHANNELS = 8, 16


def inputs_for(name: str, rng, m: int, n: int) -> dict:
    """Inputs of form ``name`` for m x n matrices (images of a batch of
    BATCH and CHANNELS channels take m x n elements in all)."""
    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    if name == "transpose_add":
        return dict(a=normal(m, m), b=normal(m, m))
    if name == "lower_triangle":
        return dict(a=normal(m, m), w=normal(m))
    if name == "column_matvec":
        return dict(a=normal(m, n), x=normal(n))
    if name == "gain_images":
        return dict(images=normal(BATCH, m // BATCH, n), gain=normal(BATCH))
    if name in ("offset_channels", "center_channels"):
        image = dict(x=normal(m // CHANNELS, n, CHANNELS))
        return dict(image, bias=normal(CHANNELS)) if name == "offset_channels" else image
    inputs = dict(a=normal(m, n))
    weighted = ("scale_columns", "scale_hoisted", "scaled_with_sums")
    return dict(inputs, w=normal(n)) if name in weighted else inputs


def reference(name: str, inputs: dict) -> np.ndarray:
    """What numpy computes for form ``name``."""
    i = inputs
    return {"scale_columns": lambda: i["a"] * i["w"],
            "scale_hoisted": lambda: i["a"] * (i["w"] * np.float32(0.5)),
            "scaled_with_sums": lambda: i["a"] * i["w"],
            "column_sums": lambda: i["a"].sum(0),
            "column_means": lambda: i["a"].mean(0),
            "column_moments": lambda: (i["a"] * i["a"]).mean(0) - i["a"].mean(0) ** 2,
            "transpose_add": lambda: i["a"] + i["b"].T,
            "gain_images": lambda: i["images"] * i["gain"][:, None, None],
            "offset_channels": lambda: i["x"] + i["bias"],
            "normalise_columns": lambda: i["a"] / i["a"].sum(0),
            "column_softmax": lambda: _softmax_columns(i["a"]),
            "center_channels": lambda: i["x"] - i["x"].mean((0, 1)),
            "column_cumsum": lambda: np.cumsum(i["a"], axis=0),
            "lower_triangle": lambda: np.tril(i["a"] * i["w"]),
            "column_matvec": lambda: i["a"] @ i["x"],
            "column_argmax": lambda: i["a"].argmax(0)}[name]()


def _softmax_columns(a: np.ndarray) -> np.ndarray:
    exponentials = np.exp(a - a.max(0))
    return exponentials / exponentials.sum(0)
