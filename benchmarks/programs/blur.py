"""Halide's two-stage 3x3 box blur (Ragan-Kelley et al., PLDI 2013, the
paper's running example): the program of examples/blur.py, imported from
there, not copied.

Peers: numba (two parallel passes), Halide with the paper's schedule
(tiles of 256x32, the horizontal pass computed per tile, vectorised,
parallel rows of tiles), and hand-written OpenCL C from
benchmarks/gpu_opencl_reference.cl: the two kernels ``blur_rows`` /
``blur_columns``, and one kernel with the horizontal pass computed per
work group into local memory (``blur_tile16``: 16 x 16 work items;
``blur_tile32x4``: 32 x 8, four rows each).
"""
from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from hpvm.frontend.compile import load_python_file

from ..peers import halide_peer, numba_peer, opencl_peer
from ..suite import Benchmark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = load_python_file(ROOT / "examples" / "blur.py")
OPENCL_SOURCE = (ROOT / "benchmarks" / "gpu_opencl_reference.cl").read_text()
SIZES = {"small": (48, 64), "large": (2048, 2048)}   # (H, W)


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    return {"img": rng.random(SIZES[size], dtype=np.float32)}


@numba.njit(parallel=True)
def _blur_numba(img):
    height, width = img.shape
    bx = np.empty_like(img)
    out = np.empty_like(img)
    for y in numba.prange(height):
        for x in range(width):
            left, right = max(x - 1, 0), min(x + 1, width - 1)
            bx[y, x] = (img[y, left] + img[y, x] + img[y, right]) / np.float32(3)
    for y in numba.prange(height):
        up, down = max(y - 1, 0), min(y + 1, height - 1)
        for x in range(width):
            out[y, x] = (bx[up, x] + bx[y, x] + bx[down, x]) / np.float32(3)
    return out


def _build_halide(hl, inputs):
    img = inputs["img"]
    height, width = img.shape
    clamped = hl.BoundaryConditions.repeat_edge(hl.Buffer(img))
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3.0
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3.0
    # The paper's schedule; tiles shrink for images smaller than a tile.
    tile_x, tile_y = min(256, width), min(32, height)
    blur_y.tile(x, y, xi, yi, tile_x, tile_y).vectorize(xi, 8).parallel(y)
    blur_x.compute_at(blur_y, x).vectorize(x, 8)
    blur_y.compile_jit()

    def run():
        out = np.empty_like(img)
        blur_y.realize(hl.Buffer(out))
        return {"out": out}
    return run


def _setup_opencl(cl, inputs):
    img = cl.input("img")
    tmp = cl.scratch(img.shape, np.float32)
    out = cl.output("out", img.shape, np.float32)
    height, width = img.shape
    dims = (np.int32(height), np.int32(width))

    def launch():
        cl.launch("blur_rows", (width, height), None, img, tmp, *dims)
        cl.launch("blur_columns", (width, height), None, tmp, out, *dims)
    return launch


def _setup_opencl_tiled(kernel: str, group: tuple[int, int], rows: int):
    """One launch of a kernel computing blur_rows per work group into local
    memory; each work item ``rows`` outputs down a column."""
    def setup(cl, inputs):
        img = cl.input("img")
        out = cl.output("out", img.shape, np.float32)
        height, width = img.shape
        columns, lines = group
        size = (-(-width // columns) * columns, -(-height // (lines * rows)) * lines)

        def launch():
            cl.launch(kernel, size, group, img, out, np.int32(height), np.int32(width))
        return launch
    return setup


BENCHMARKS = [Benchmark(
    name="blur", suite="image", program=EXAMPLE.blur3x3, make_inputs=make_inputs,
    reference=EXAMPLE.reference,
    peers=(numba_peer(lambda inputs: {"out": _blur_numba(inputs["img"])}),
           halide_peer(_build_halide),
           opencl_peer(OPENCL_SOURCE, _setup_opencl, name="opencl (hand)"),
           opencl_peer(OPENCL_SOURCE, _setup_opencl_tiled("blur_tile16", (16, 16), 1),
                       name="opencl (hand, 16x16 local tile)"),
           opencl_peer(OPENCL_SOURCE, _setup_opencl_tiled("blur_tile32x4", (32, 8), 4),
                       name="opencl (hand, 32x8 local tile, 4 rows an item)")),
    description="3x3 box blur as two passes (blur_x, blur_y), edges clamped",
)]
