"""Halide's two-stage 3x3 box blur: a horizontal blur into an intermediate
buffer, then a vertical blur of that buffer.  Borders clamp to the edge.

    blur_x(x, y) = (in(x-1, y) + in(x, y) + in(x+1, y)) / 3
    blur_y(x, y) = (blur_x(x, y-1) + blur_x(x, y) + blur_x(x, y+1)) / 3

The two stages are two nodes; the edge between them (carrying ``bx``) is
inferred because the second reads what the first wrote.
"""
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, buffer, f32, i64, parallel_loop


@hl.kernel
def clamp(v: i64, lo: i64, hi: i64) -> i64:
    """A helper: inlined wherever a kernel calls it."""
    return min(max(v, lo), hi)


@hl.program
def blur3x3(img: Buffer[f32, "H", "W"], out: Buffer[f32, "H", "W"]):
    bx = buffer(f32, ("H", "W"))
    for y, x in parallel_loop(H, W, ins=(img,), outs=(bx,), name="blur_x"):
        left, right = clamp(x - 1, 0, W - 1), clamp(x + 1, 0, W - 1)
        bx[y, x] = (img[y, left] + img[y, x] + img[y, right]) / 3
    for y, x in parallel_loop(H, W, ins=(bx,), outs=(out,), name="blur_y"):
        up, down = clamp(y - 1, 0, H - 1), clamp(y + 1, 0, H - 1)
        out[y, x] = (bx[up, x] + bx[y, x] + bx[down, x]) / 3


def make_inputs(rng):
    return {"img": rng.random((32, 48), dtype=np.float32)}


def reference(inputs):
    img = inputs["img"]
    padded = np.pad(img, ((0, 0), (1, 1)), mode="edge")
    bx = (padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]) / np.float32(3)
    padded = np.pad(bx, ((1, 1), (0, 0)), mode="edge")
    return {"out": (padded[:-2] + padded[1:-1] + padded[2:]) / np.float32(3)}


if __name__ == "__main__":
    inputs = make_inputs(np.random.default_rng(0))
    result = blur3x3.run(**inputs)
    print("max error vs numpy:", np.abs(result["out"] - reference(inputs)["out"]).max())
