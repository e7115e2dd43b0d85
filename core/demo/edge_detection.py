"""Edge detection as a 7-node dataflow graph:

    gaussian blur -> sobel_x  -> magnitude -> row_max -> max -> threshold
                  \\-> sobel_y -/                                  /
                                                       (magnitude) /

sobel_x and sobel_y have no path between them, so they may run in
parallel (task parallelism).  The maximum is a two-step reduction: a
parallel loop over rows, then one task over the row maxima, each a
``reduce`` that parallel-reduce may spread over a work group or threads.  The output is
1 where the normalised gradient magnitude exceeds ``threshold``, else 0.
"""
import math

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, buffer, f32, i64, parallel_loop, reduce, task

GAUSS = 16.0   # a constant captured from the Python scope


@hl.kernel
def at(img: Buffer[f32, "H", "W"], y: i64, x: i64) -> f32:
    """img[y, x] with coordinates clamped to the image (edge padding)."""
    return img[min(max(y, 0), H - 1), min(max(x, 0), W - 1)]


@hl.program
def edge_detect(img: Buffer[f32, "H", "W"], edges: Buffer[f32, "H", "W"], threshold: f32):
    smooth = buffer(f32, ("H", "W"))
    gx = buffer(f32, ("H", "W"))
    gy = buffer(f32, ("H", "W"))
    mag = buffer(f32, ("H", "W"))
    row_max = buffer(f32, ("H",))
    peak = buffer(f32, (1,))

    for y, x in parallel_loop(H, W, ins=(img,), outs=(smooth,), name="gaussian"):
        total = 4 * at(img, y, x)
        total += 2 * (at(img, y - 1, x) + at(img, y + 1, x) + at(img, y, x - 1) + at(img, y, x + 1))
        total += at(img, y - 1, x - 1) + at(img, y - 1, x + 1) + at(img, y + 1, x - 1) + at(img, y + 1, x + 1)
        smooth[y, x] = total / GAUSS

    for y, x in parallel_loop(H, W, ins=(smooth,), outs=(gx,), name="sobel_x"):
        gx[y, x] = (at(smooth, y - 1, x + 1) + 2 * at(smooth, y, x + 1) + at(smooth, y + 1, x + 1)
                    - at(smooth, y - 1, x - 1) - 2 * at(smooth, y, x - 1) - at(smooth, y + 1, x - 1))

    for y, x in parallel_loop(H, W, ins=(smooth,), outs=(gy,), name="sobel_y"):
        gy[y, x] = (at(smooth, y + 1, x - 1) + 2 * at(smooth, y + 1, x) + at(smooth, y + 1, x + 1)
                    - at(smooth, y - 1, x - 1) - 2 * at(smooth, y - 1, x) - at(smooth, y - 1, x + 1))

    for y, x in parallel_loop(H, W, ins=(gx, gy), outs=(mag,), name="magnitude"):
        mag[y, x] = math.sqrt(gx[y, x] ** 2 + gy[y, x] ** 2)

    for y in parallel_loop(H, ins=(mag,), outs=(row_max,), name="row_max"):
        row_max[y] = reduce(max, (mag[y, x] for x in range(W)))

    with task(ins=(row_max,), outs=(peak,), name="max"):
        peak[0] = reduce(max, (row_max[y] for y in range(H)))

    for y, x in parallel_loop(H, W, ins=(mag, peak), outs=(edges,), name="threshold"):
        scale = peak[0] if peak[0] > 0 else 1.0
        edges[y, x] = 1.0 if mag[y, x] / scale > threshold else 0.0


def make_inputs(rng):
    img = np.zeros((24, 32), dtype=np.float32)
    img[6:18, 8:24] = 1.0
    img += 0.05 * rng.random(img.shape, dtype=np.float32)
    return {"img": img, "threshold": np.float32(0.3)}


def reference(inputs):
    img = inputs["img"]

    def conv(a, k):
        p = np.pad(a, 1, mode="edge")
        h, w = a.shape
        return sum(k[dy, dx] * p[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3))

    smooth = conv(img, np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32)) / np.float32(GAUSS)
    gx = conv(smooth, np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32))
    gy = conv(smooth, np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32))
    mag = np.sqrt(gx * gx + gy * gy)
    peak = mag.max() if mag.max() > 0 else np.float32(1)
    return {"edges": (mag / peak > inputs["threshold"]).astype(np.float32)}
