"""A five-stage camera pipeline in the manner of CAVA (the camera vision
pipeline of HPVM's ApproxHPVM/CAVA work, after Buckler et al.'s
"Reconfiguring the Imaging Pipeline for Computer Vision", ICCV 2017):
one node per stage, a raw RGGB Bayer frame in, planar RGB out.

    demosaic   bilinear interpolation of the missing colours (edges reflected)
    denoise    3x3 binomial (1-2-1) filter per channel (edges clamped)
    colour     3x3 colour-correction matrix (camera RGB -> sRGB primaries)
    gamut      clip to the displayable range [0, 1]
    tone       gamma curve from a 256-entry lookup table, linearly interpolated

Deviations from CAVA: its denoise is a non-local-means filter and its gamut
map uses radial-basis control points; both are replaced by the simpler
filters above so every implementation computes the same function.  The
lookup table is interpolated (not nearest-entry) so that an f32 rounding
difference upstream cannot flip a pixel to the next entry.

Peers: numba (demosaic in one parallel pass, the other four stages fused in
a second) and Halide (demosaic and denoise computed whole, the last three
stages fused into the output loop).
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, buffer, f32, i64, parallel_loop

from ..peers import halide_peer, numba_peer
from ..suite import Benchmark

SIZES = {"small": (16, 24), "large": (1536, 2048)}   # (H, W) of the raw frame; even
CCM = np.array([[1.60, -0.45, -0.15], [-0.25, 1.45, -0.20], [0.05, -0.55, 1.50]], np.float32)


@hl.kernel
def reflect(v: i64, n: i64) -> i64:
    """v in [-1, n] reflected into [0, n - 1] (keeps the Bayer parity)."""
    return (n - 1) - abs((n - 1) - abs(v))


@hl.kernel
def raw_at(raw: Buffer[f32, "H", "W"], y: i64, x: i64) -> f32:
    return raw[reflect(y, H), reflect(x, W)]


@hl.kernel
def clamped(img: Buffer[f32, 3, "H", "W"], c: i64, y: i64, x: i64) -> f32:
    return img[c, min(max(y, 0), H - 1), min(max(x, 0), W - 1)]


@hl.program
def camera(raw: Buffer[f32, "H", "W"], ccm: Buffer[f32, 3, 3], lut: Buffer[f32, 256],
           out: Buffer[f32, 3, "H", "W"]):
    rgb = buffer(f32, (3, "H", "W"))
    clean = buffer(f32, (3, "H", "W"))
    corrected = buffer(f32, (3, "H", "W"))
    mapped = buffer(f32, (3, "H", "W"))

    for y, x in parallel_loop(H, W, ins=(raw,), outs=(rgb,), name="demosaic"):
        centre = raw_at(raw, y, x)
        across = (raw_at(raw, y, x - 1) + raw_at(raw, y, x + 1)) / 2
        upright = (raw_at(raw, y - 1, x) + raw_at(raw, y + 1, x)) / 2
        cross = (raw_at(raw, y - 1, x) + raw_at(raw, y + 1, x) + raw_at(raw, y, x - 1) + raw_at(raw, y, x + 1)) / 4
        diagonal = (raw_at(raw, y - 1, x - 1) + raw_at(raw, y - 1, x + 1)
                    + raw_at(raw, y + 1, x - 1) + raw_at(raw, y + 1, x + 1)) / 4
        if y % 2 == 0 and x % 2 == 0:       # red site
            rgb[0, y, x], rgb[1, y, x], rgb[2, y, x] = centre, cross, diagonal
        elif y % 2 == 0:                    # green site on a red row
            rgb[0, y, x], rgb[1, y, x], rgb[2, y, x] = across, centre, upright
        elif x % 2 == 0:                    # green site on a blue row
            rgb[0, y, x], rgb[1, y, x], rgb[2, y, x] = upright, centre, across
        else:                               # blue site
            rgb[0, y, x], rgb[1, y, x], rgb[2, y, x] = diagonal, cross, centre

    for y, x in parallel_loop(H, W, ins=(rgb,), outs=(clean,), name="denoise"):
        for c in range(3):
            total = 4 * clamped(rgb, c, y, x)
            total += 2 * (clamped(rgb, c, y - 1, x) + clamped(rgb, c, y + 1, x)
                          + clamped(rgb, c, y, x - 1) + clamped(rgb, c, y, x + 1))
            total += (clamped(rgb, c, y - 1, x - 1) + clamped(rgb, c, y - 1, x + 1)
                      + clamped(rgb, c, y + 1, x - 1) + clamped(rgb, c, y + 1, x + 1))
            clean[c, y, x] = total / 16

    for y, x in parallel_loop(H, W, ins=(clean, ccm), outs=(corrected,), name="colour"):
        for c in range(3):
            corrected[c, y, x] = ccm[c, 0] * clean[0, y, x] + ccm[c, 1] * clean[1, y, x] + ccm[c, 2] * clean[2, y, x]

    for y, x in parallel_loop(H, W, ins=(corrected,), outs=(mapped,), name="gamut"):
        for c in range(3):
            mapped[c, y, x] = min(max(corrected[c, y, x], 0.0), 1.0)

    for y, x in parallel_loop(H, W, ins=(mapped, lut), outs=(out,), name="tone"):
        for c in range(3):
            position = mapped[c, y, x] * 255
            index = min(i64(position), 254)
            fraction = position - f32(index)
            out[c, y, x] = lut[index] * (1 - fraction) + lut[index + 1] * fraction


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    """A raw frame of smooth colour gradients plus sensor noise, the colour
    matrix, and an sRGB-like gamma curve (1/2.2) as the lookup table."""
    height, width = SIZES[size]
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    scene = np.stack([x / width, y / height, 1 - (x + y) / (width + height)])   # R, G, B
    mosaic = np.empty((height, width), np.float32)
    mosaic[0::2, 0::2] = scene[0, 0::2, 0::2]
    mosaic[0::2, 1::2] = scene[1, 0::2, 1::2]
    mosaic[1::2, 0::2] = scene[1, 1::2, 0::2]
    mosaic[1::2, 1::2] = scene[2, 1::2, 1::2]
    raw = np.clip(mosaic + 0.02 * rng.standard_normal(mosaic.shape, dtype=np.float32), 0, 1)
    lut = (np.arange(256, dtype=np.float64) / 255) ** (1 / 2.2)
    return {"raw": raw.astype(np.float32), "ccm": CCM.copy(), "lut": lut.astype(np.float32)}


def _demosaic(raw: np.ndarray) -> np.ndarray:
    p = np.pad(raw, 1, mode="reflect")
    h, w = raw.shape
    shifted = lambda dy, dx: p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]   # noqa: E731
    centre = raw
    across = (shifted(0, -1) + shifted(0, 1)) / np.float32(2)
    upright = (shifted(-1, 0) + shifted(1, 0)) / np.float32(2)
    cross = (shifted(-1, 0) + shifted(1, 0) + shifted(0, -1) + shifted(0, 1)) / np.float32(4)
    diagonal = (shifted(-1, -1) + shifted(-1, 1) + shifted(1, -1) + shifted(1, 1)) / np.float32(4)
    even_y = (np.arange(h) % 2 == 0)[:, None]
    even_x = (np.arange(w) % 2 == 0)[None, :]
    red = np.where(even_y & even_x, centre, np.where(even_y, across, np.where(even_x, upright, diagonal)))
    green = np.where(even_y == even_x, cross, centre)
    blue = np.where(even_y & even_x, diagonal, np.where(even_y, upright, np.where(even_x, across, centre)))
    return np.stack([red, green, blue])


def reference(inputs: dict) -> dict:
    rgb = _demosaic(inputs["raw"])
    p = np.pad(rgb, ((0, 0), (1, 1), (1, 1)), mode="edge")
    h, w = rgb.shape[1:]
    weights = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32)
    clean = sum(weights[dy, dx] * p[:, dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3))
    clean = clean / np.float32(16)
    corrected = np.einsum("ck,khw->chw", inputs["ccm"], clean).astype(np.float32)
    mapped = np.clip(corrected, 0, 1)
    position = mapped * np.float32(255)
    index = np.minimum(position.astype(np.int64), 254)
    fraction = position - index.astype(np.float32)
    lut = inputs["lut"]
    return {"out": (lut[index] * (1 - fraction) + lut[index + 1] * fraction).astype(np.float32)}


@numba.njit(parallel=True)
def _camera_numba(raw, ccm, lut):
    height, width = raw.shape
    rgb = np.empty((3, height, width), np.float32)
    out = np.empty((3, height, width), np.float32)
    for row in numba.prange(height):
        y = np.int64(row)  # prange's index is unsigned: y - 1 would be a float
        up, down = abs(y - 1), (height - 1) - abs(height - 2 - y)
        for x in range(width):
            left, right = abs(x - 1), (width - 1) - abs(width - 2 - x)
            centre = raw[y, x]
            across = (raw[y, left] + raw[y, right]) / np.float32(2)
            upright = (raw[up, x] + raw[down, x]) / np.float32(2)
            cross = (raw[up, x] + raw[down, x] + raw[y, left] + raw[y, right]) / np.float32(4)
            diagonal = (raw[up, left] + raw[up, right] + raw[down, left] + raw[down, right]) / np.float32(4)
            if y % 2 == 0 and x % 2 == 0:
                r, g, b = centre, cross, diagonal
            elif y % 2 == 0:
                r, g, b = across, centre, upright
            elif x % 2 == 0:
                r, g, b = upright, centre, across
            else:
                r, g, b = diagonal, cross, centre
            rgb[0, y, x], rgb[1, y, x], rgb[2, y, x] = r, g, b
    for row in numba.prange(height):
        y = np.int64(row)
        up, down = max(y - 1, 0), min(y + 1, height - 1)
        for x in range(width):
            left, right = max(x - 1, 0), min(x + 1, width - 1)
            clean = np.empty(3, np.float32)
            for c in range(3):
                total = 4 * rgb[c, y, x] + 2 * (rgb[c, up, x] + rgb[c, down, x] + rgb[c, y, left] + rgb[c, y, right])
                total += rgb[c, up, left] + rgb[c, up, right] + rgb[c, down, left] + rgb[c, down, right]
                clean[c] = total / np.float32(16)
            for c in range(3):
                value = ccm[c, 0] * clean[0] + ccm[c, 1] * clean[1] + ccm[c, 2] * clean[2]
                position = min(max(value, np.float32(0)), np.float32(1)) * np.float32(255)
                index = min(np.int64(position), 254)
                fraction = position - np.float32(index)
                out[c, y, x] = lut[index] * (1 - fraction) + lut[index + 1] * fraction
    return out


def _build_halide(hl, inputs):
    """Demosaic and denoise computed whole (parallel rows, vectorised);
    colour, gamut and tone fused into the output loop."""
    raw = inputs["raw"]
    height, width = raw.shape
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    r = hl.BoundaryConditions.mirror_interior(hl.Buffer(raw))   # -1 -> 1: the parity is kept
    ccm, lut = hl.Buffer(inputs["ccm"]), hl.Buffer(inputs["lut"])   # ccm[k, c] is numpy's [c, k]
    centre = r[x, y]
    across = (r[x - 1, y] + r[x + 1, y]) / 2.0
    upright = (r[x, y - 1] + r[x, y + 1]) / 2.0
    cross = (r[x, y - 1] + r[x, y + 1] + r[x - 1, y] + r[x + 1, y]) / 4.0
    diagonal = (r[x - 1, y - 1] + r[x + 1, y - 1] + r[x - 1, y + 1] + r[x + 1, y + 1]) / 4.0
    even_y, even_x = y % 2 == 0, x % 2 == 0
    rgb, clean, out = hl.Func("rgb"), hl.Func("clean"), hl.Func("out")
    rgb[x, y, c] = hl.select(
        c == 0, hl.select(even_y, hl.select(even_x, centre, across), hl.select(even_x, upright, diagonal)),
        c == 1, hl.select(even_y == even_x, cross, centre),
        hl.select(even_y, hl.select(even_x, diagonal, upright), hl.select(even_x, across, centre)))
    p = hl.BoundaryConditions.repeat_edge(rgb, [(0, width), (0, height)])
    clean[x, y, c] = (4 * p[x, y, c] + 2 * (p[x, y - 1, c] + p[x, y + 1, c] + p[x - 1, y, c] + p[x + 1, y, c])
                      + (p[x - 1, y - 1, c] + p[x + 1, y - 1, c] + p[x - 1, y + 1, c] + p[x + 1, y + 1, c])) / 16.0
    corrected = ccm[0, c] * clean[x, y, 0] + ccm[1, c] * clean[x, y, 1] + ccm[2, c] * clean[x, y, 2]
    position = hl.clamp(corrected, 0.0, 1.0) * 255.0
    index = hl.min(hl.cast(hl.Int(32), position), 254)
    fraction = position - hl.cast(hl.Float(32), index)
    out[x, y, c] = lut[index] * (1 - fraction) + lut[index + 1] * fraction
    for stage in (rgb, clean):
        stage.compute_root().reorder(x, c, y).parallel(y).vectorize(x, 8)
    out.reorder(x, c, y).parallel(y).vectorize(x, 8)
    out.compile_jit()

    def run():
        result = np.empty((3, height, width), np.float32)
        out.realize(hl.Buffer(result))
        return {"out": result}
    return run


BENCHMARKS = [Benchmark(
    name="camera", suite="image", program=camera, make_inputs=make_inputs, reference=reference,
    # The tone curve's steepest segment multiplies upstream f32 rounding
    # differences (a few ulp of values <= 1) by about 20: atol 1e-4 has margin.
    rtol=1e-4, atol=1e-4,
    peers=(numba_peer(lambda inputs: {"out": _camera_numba(inputs["raw"], inputs["ccm"], inputs["lut"])}),
           halide_peer(_build_halide)),
    description="CAVA-like camera pipeline: demosaic, denoise, colour matrix, gamut clip, gamma LUT",
)]
