"""The edge-detection pipeline of ``hpvm demo`` (core/demo/edge_detection.py,
imported, not copied): gaussian blur, sobel x and y, gradient magnitude, a
two-step max reduction, normalise and threshold; 7 nodes.

Inputs are 8-bit images scaled to [0, 1) (multiples of 1/256): every sum
up to the gradient is then exact in f32 whatever its order, so a threshold
decision cannot flip between implementations and the 0/1 output is
compared exactly.

Peers: numba (one parallel pass per stage, like the graph's nodes) and
Halide (smooth and magnitude computed whole, rows' maxima in
parallel, then the threshold).
"""
from __future__ import annotations

import numba
import numpy as np

from hpvm.demo.edge_detection import edge_detect, reference

from ..peers import halide_peer, numba_peer
from ..suite import Benchmark

SIZES = {"small": (24, 32), "large": (2048, 2048)}   # (H, W)


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    """Rectangles of random grey levels plus noise, quantised to 8 bits."""
    height, width = SIZES[size]
    levels = rng.integers(0, 200, (8, 8))
    blocks = np.kron(levels, np.ones((-(-height // 8), -(-width // 8))))[:height, :width]
    noise = rng.integers(0, 56, (height, width))
    img = ((blocks + noise) / 256).astype(np.float32)
    return {"img": img, "threshold": np.float32(0.3)}


@numba.njit
def _at(img, y, x):
    height, width = img.shape
    return img[min(max(y, 0), height - 1), min(max(x, 0), width - 1)]


@numba.njit(parallel=True)
def _edges_numba(img, threshold):
    height, width = img.shape
    smooth, mag, edges = np.empty_like(img), np.empty_like(img), np.empty_like(img)
    for row in numba.prange(height):
        y = np.int64(row)  # prange's index is unsigned: y - 1 would be a float
        for x in range(width):
            total = 4 * _at(img, y, x)
            total += 2 * (_at(img, y - 1, x) + _at(img, y + 1, x) + _at(img, y, x - 1) + _at(img, y, x + 1))
            total += (_at(img, y - 1, x - 1) + _at(img, y - 1, x + 1) + _at(img, y + 1, x - 1)
                      + _at(img, y + 1, x + 1))
            smooth[y, x] = total / np.float32(16)
    for row in numba.prange(height):
        y = np.int64(row)
        for x in range(width):
            gx = (_at(smooth, y - 1, x + 1) + 2 * _at(smooth, y, x + 1) + _at(smooth, y + 1, x + 1)
                  - _at(smooth, y - 1, x - 1) - 2 * _at(smooth, y, x - 1) - _at(smooth, y + 1, x - 1))
            gy = (_at(smooth, y + 1, x - 1) + 2 * _at(smooth, y + 1, x) + _at(smooth, y + 1, x + 1)
                  - _at(smooth, y - 1, x - 1) - 2 * _at(smooth, y - 1, x) - _at(smooth, y - 1, x + 1))
            mag[y, x] = np.sqrt(gx * gx + gy * gy)
    peak = mag.max()
    scale = peak if peak > 0 else np.float32(1)
    for y in numba.prange(height):
        for x in range(width):
            edges[y, x] = np.float32(1) if mag[y, x] / scale > threshold else np.float32(0)
    return edges


def _build_halide(hl, inputs):
    img = inputs["img"]
    height, width = img.shape
    c = hl.BoundaryConditions.repeat_edge(hl.Buffer(img))
    x, y = hl.Var("x"), hl.Var("y")
    smooth, mag, row_max, peak, edges = (hl.Func(n) for n in ("smooth", "mag", "row_max", "peak", "edges"))
    smooth[x, y] = (4 * c[x, y] + 2 * (c[x, y - 1] + c[x, y + 1] + c[x - 1, y] + c[x + 1, y])
                    + (c[x - 1, y - 1] + c[x + 1, y - 1] + c[x - 1, y + 1] + c[x + 1, y + 1])) / 16.0
    s = hl.BoundaryConditions.repeat_edge(smooth, [(0, width), (0, height)])
    gx = s[x + 1, y - 1] + 2 * s[x + 1, y] + s[x + 1, y + 1] - s[x - 1, y - 1] - 2 * s[x - 1, y] - s[x - 1, y + 1]
    gy = s[x - 1, y + 1] + 2 * s[x, y + 1] + s[x + 1, y + 1] - s[x - 1, y - 1] - 2 * s[x, y - 1] - s[x + 1, y - 1]
    mag[x, y] = hl.sqrt(gx * gx + gy * gy)
    across, down = hl.RDom([(0, width)]), hl.RDom([(0, height)])
    row_max[y] = hl.maximum(mag[across.x, y])
    peak[()] = hl.maximum(row_max[down.x])
    scale = hl.select(peak[()] > 0, peak[()], 1.0)
    edges[x, y] = hl.select(mag[x, y] / scale > float(inputs["threshold"]), 1.0, 0.0)
    for stage in (smooth, mag):
        stage.compute_root().parallel(y).vectorize(x, 8)
    row_max.compute_root().parallel(y)
    peak.compute_root()
    edges.parallel(y).vectorize(x, 8)
    edges.compile_jit()

    def run():
        out = np.empty_like(img)
        edges.realize(hl.Buffer(out))
        return {"edges": out}
    return run


BENCHMARKS = [Benchmark(
    name="edge", suite="image", program=edge_detect, make_inputs=make_inputs, reference=reference,
    rtol=0, atol=0,
    peers=(numba_peer(lambda inputs: {"edges": _edges_numba(inputs["img"], inputs["threshold"])}),
           halide_peer(_build_halide)),
    description="7-node edge detection: gaussian, sobel x/y, magnitude, max, threshold",
)]
