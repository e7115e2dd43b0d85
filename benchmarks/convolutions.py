# ruff: noqa: F821  (shape symbols such as C, K and OH are names the kernel language binds)
"""Convolutions written as kernel programs, the ways people write them,
for the register-tile pass's tests and benchmarks/written_forms_bench.py
(``direct``, the seven-loop nest, is loop_nest_bench's): loops over
channels and taps in several orders and layouts, batched and strided, over flattened pixels, one-dimensional,
with a bias and an activation, and a depthwise one the pass must leave
alone (no value reused across output channels).
``inputs_for`` makes inputs for ``channels`` in, ``kernels`` out, an
image of ``size`` and taps of ``taps``."""
from __future__ import annotations

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f32, i64, parallel_loop

from benchmarks.loop_nests import conv as direct


@hl.program
def batched_strided(x: Buffer[f32, "N", "C", "H", "W"], w: Buffer[f32, "K", "C", "R", "S"],
                    y: Out[Buffer[f32, "N", "K", "P"]], P: i64, OW: i64, stride: i64):
    """A batch of images, a stride, each image's output pixels in one
    dimension, the sum in a differently named variable."""
    for n, k, q in parallel_loop(N, K, P, ins=(x, w), outs=(y,), name="conv_nchw"):
        i = q // OW
        j = q % OW
        total: f32 = 0.0
        for c in range(C):
            for dy in range(R):
                for dx in range(S):
                    total = total + x[n, c, i * stride + dy, j * stride + dx] * w[k, c, dy, dx]
        y[n, k, q] = total


@hl.program
def taps_outside(x: Buffer[f32, "C", "H", "W"], w: Buffer[f32, "K", "C", "R", "S"],
                 y: Out[Buffer[f32, "K", "OH", "OW"]], OH: i64, OW: i64):
    """The taps outermost, the channels innermost."""
    for k, oh, ow in parallel_loop(K, OH, OW, ins=(x, w), outs=(y,), name="conv_rsc"):
        acc: f32 = 0.0
        for r in range(R):
            for s in range(S):
                for c in range(C):
                    acc += x[c, oh + r, ow + s] * w[k, c, r, s]
        y[k, oh, ow] = acc


@hl.program
def channels_last(x: Buffer[f32, "H", "W", "C"], w: Buffer[f32, "R", "S", "C", "K"],
                  y: Out[Buffer[f32, "OH", "OW", "K"]], OH: i64, OW: i64):
    """NHWC activations and HWIO filters, as TensorFlow keeps them; the
    output channels are the last dimension."""
    for oh, ow, k in parallel_loop(OH, OW, K, ins=(x, w), outs=(y,), name="conv_nhwc"):
        acc: f32 = 0.0
        for r in range(R):
            for s in range(S):
                for c in range(C):
                    acc += x[oh + r, ow + s, c] * w[r, s, c, k]
        y[oh, ow, k] = acc


@hl.program
def flat_pixels(x: Buffer[f32, "C", "H", "W"], w: Buffer[f32, "K", "C", "R", "S"],
                bias: Buffer[f32, "K"], y: Out[Buffer[f32, "K", "P"]], P: i64, OW: i64):
    """Output pixels flattened into one dimension, the row and column found
    by division; a bias first and a ReLU after."""
    for k, p in parallel_loop(K, P, ins=(x, w, bias), outs=(y,), name="conv_flat"):
        row = p // OW
        col = p % OW
        acc: f32 = bias[k]
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    acc += w[k, c, r, s] * x[c, row + r, col + s]
        y[k, p] = max(acc, 0.0)


@hl.program
def conv1d(x: Buffer[f32, "C", "L"], w: Buffer[f32, "K", "C", "T"],
           y: Out[Buffer[f32, "K", "OL"]], OL: i64):
    """A one-dimensional convolution (audio, sequences)."""
    for k, t in parallel_loop(K, OL, ins=(x, w), outs=(y,), name="conv1d"):
        acc: f32 = 0.0
        for c in range(C):
            for d in range(T):
                acc += w[k, c, d] * x[c, t + d]
        y[k, t] = acc


@hl.program
def depthwise(x: Buffer[f32, "C", "H", "W"], w: Buffer[f32, "C", "R", "S"],
              y: Out[Buffer[f32, "C", "OH", "OW"]], OH: i64, OW: i64):
    """Each channel its own filter: nothing read the same across a row of
    results and down a column."""
    for c, oh, ow in parallel_loop(C, OH, OW, ins=(x, w), outs=(y,), name="depthwise"):
        acc: f32 = 0.0
        for r in range(R):
            for s in range(S):
                acc += w[c, r, s] * x[c, oh + r, ow + s]
        y[c, oh, ow] = acc


def inputs_for(name: str, rng, channels: int, kernels: int, size: int, taps: int) -> dict:
    """Inputs of program ``name``: ``channels`` in, ``kernels`` out, images
    of ``size`` x ``size`` (``size`` long for conv1d), filters of ``taps``
    x ``taps``; no padding, stride 2 for batched_strided."""
    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    out = size - taps + 1
    if name == "batched_strided":
        strided = (size - taps) // 2 + 1
        return dict(x=normal(2, channels, size, size), w=normal(kernels, channels, taps, taps),
                    P=strided * strided, OW=strided, stride=2)
    if name == "channels_last":
        return dict(x=normal(size, size, channels), w=normal(taps, taps, channels, kernels),
                    OH=out, OW=out)
    if name == "flat_pixels":
        return dict(x=normal(channels, size, size), w=normal(kernels, channels, taps, taps),
                    bias=normal(kernels), P=out * out, OW=out)
    if name == "conv1d":
        return dict(x=normal(channels, size), w=normal(kernels, channels, taps), OL=out)
    if name == "depthwise":
        return dict(x=normal(channels, size, size), w=normal(channels, taps, taps), OH=out,
                    OW=out)
    return dict(x=normal(channels, size, size), w=normal(kernels, channels, taps, taps),
                OH=out, OW=out)


TILED = {"direct": direct, "batched_strided": batched_strided, "taps_outside": taps_outside,
         "channels_last": channels_last, "flat_pixels": flat_pixels, "conv1d": conv1d}
"""Programs whose one node the pass schedules."""
UNTILED = {"depthwise": depthwise}
