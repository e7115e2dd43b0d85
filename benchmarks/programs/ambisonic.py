"""Third-order ambisonic encoding of N mono sources, as ILLIXR's spatial
audio pipeline does (its libspatialaudio encoder): each source, at an
azimuth and elevation, is weighted by the 16 real spherical harmonics of
its direction and the weighted sources are summed into one sound field of
16 channels (B-format, ACN channel order, SN3D normalisation: ambiX).

Two nodes: ``harmonics`` (one instance per source: its 16 coefficients)
and ``encode`` (one instance per channel and sample: the sum over sources).
Sizes: "small" 4 sources x 64 samples; "large" 64 sources x 48000 samples
(one second at 48 kHz; ILLIXR encodes blocks of 1024 samples).
"""
from __future__ import annotations

import math

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, buffer, f32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

SIZES = {"small": (4, 64), "large": (64, 48000)}   # (sources, samples)
CHANNELS = 16                                      # (order + 1)^2, order 3
HALF_ROOT3 = math.sqrt(3) / 2
HALF_ROOT15 = math.sqrt(15) / 2
ROOT3_8 = math.sqrt(3 / 8)
ROOT5_8 = math.sqrt(5 / 8)


@hl.program
def ambisonic(samples: Buffer[f32, "S", "T"], azimuth: Buffer[f32, "S"], elevation: Buffer[f32, "S"],
              field: Buffer[f32, 16, "T"]):
    harmonics = buffer(f32, ("S", 16))
    for s in parallel_loop(S, ins=(azimuth, elevation), outs=(harmonics,), name="harmonics"):
        sin_a, cos_a = math.sin(azimuth[s]), math.cos(azimuth[s])
        sin_2a, cos_2a = math.sin(2 * azimuth[s]), math.cos(2 * azimuth[s])
        sin_3a, cos_3a = math.sin(3 * azimuth[s]), math.cos(3 * azimuth[s])
        sin_e, cos_e = math.sin(elevation[s]), math.cos(elevation[s])
        harmonics[s, 0] = 1.0
        harmonics[s, 1] = sin_a * cos_e
        harmonics[s, 2] = sin_e
        harmonics[s, 3] = cos_a * cos_e
        harmonics[s, 4] = HALF_ROOT3 * sin_2a * cos_e * cos_e
        harmonics[s, 5] = HALF_ROOT3 * sin_a * 2 * sin_e * cos_e
        harmonics[s, 6] = (3 * sin_e * sin_e - 1) / 2
        harmonics[s, 7] = HALF_ROOT3 * cos_a * 2 * sin_e * cos_e
        harmonics[s, 8] = HALF_ROOT3 * cos_2a * cos_e * cos_e
        harmonics[s, 9] = ROOT5_8 * sin_3a * cos_e * cos_e * cos_e
        harmonics[s, 10] = HALF_ROOT15 * sin_2a * sin_e * cos_e * cos_e
        harmonics[s, 11] = ROOT3_8 * sin_a * cos_e * (5 * sin_e * sin_e - 1)
        harmonics[s, 12] = sin_e * (5 * sin_e * sin_e - 3) / 2
        harmonics[s, 13] = ROOT3_8 * cos_a * cos_e * (5 * sin_e * sin_e - 1)
        harmonics[s, 14] = HALF_ROOT15 * cos_2a * sin_e * cos_e * cos_e
        harmonics[s, 15] = ROOT5_8 * cos_3a * cos_e * cos_e * cos_e

    for k, t in parallel_loop(16, T, ins=(harmonics, samples), outs=(field,), name="encode"):
        total: f32 = 0.0
        for s in range(S):
            total += harmonics[s, k] * samples[s, t]
        field[k, t] = total


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    """Sources of random audio in [-1, 1] at random directions."""
    sources, length = SIZES[size]
    return {"samples": rng.uniform(-1, 1, (sources, length)).astype(np.float32),
            "azimuth": rng.uniform(-np.pi, np.pi, sources).astype(np.float32),
            "elevation": rng.uniform(-np.pi / 2, np.pi / 2, sources).astype(np.float32)}


def spherical_harmonics(azimuth: np.ndarray, elevation: np.ndarray) -> np.ndarray:
    """(sources, 16) real SN3D harmonics in ACN order, computed in float64."""
    a, e = azimuth.astype(np.float64), elevation.astype(np.float64)
    sin_e, cos_e = np.sin(e), np.cos(e)
    return np.stack([
        np.ones_like(a), np.sin(a) * cos_e, sin_e, np.cos(a) * cos_e,
        HALF_ROOT3 * np.sin(2 * a) * cos_e ** 2, HALF_ROOT3 * np.sin(a) * np.sin(2 * e),
        (3 * sin_e ** 2 - 1) / 2, HALF_ROOT3 * np.cos(a) * np.sin(2 * e),
        HALF_ROOT3 * np.cos(2 * a) * cos_e ** 2,
        ROOT5_8 * np.sin(3 * a) * cos_e ** 3, HALF_ROOT15 * np.sin(2 * a) * sin_e * cos_e ** 2,
        ROOT3_8 * np.sin(a) * cos_e * (5 * sin_e ** 2 - 1), sin_e * (5 * sin_e ** 2 - 3) / 2,
        ROOT3_8 * np.cos(a) * cos_e * (5 * sin_e ** 2 - 1), HALF_ROOT15 * np.cos(2 * a) * sin_e * cos_e ** 2,
        ROOT5_8 * np.cos(3 * a) * cos_e ** 3,
    ], axis=1)


def reference(inputs: dict) -> dict:
    """In float64 from the f32 inputs, rounded once to f32."""
    coefficients = spherical_harmonics(inputs["azimuth"], inputs["elevation"])
    return {"field": (coefficients.T @ inputs["samples"].astype(np.float64)).astype(np.float32)}


@numba.njit(parallel=True)
def _encode_numba(coefficients, samples):
    sources, length = samples.shape
    field = np.empty((CHANNELS, length), np.float32)
    for t in numba.prange(length):
        for k in range(CHANNELS):
            total = np.float32(0)
            for s in range(sources):
                total += coefficients[s, k] * samples[s, t]
            field[k, t] = total
    return field


def _numba(inputs: dict) -> dict:
    """Harmonics in numpy (16 x sources values), the encoding in numba."""
    coefficients = spherical_harmonics(inputs["azimuth"], inputs["elevation"]).astype(np.float32)
    return {"field": _encode_numba(coefficients, inputs["samples"])}


BENCHMARKS = [Benchmark(
    name="ambisonic", suite="audio", program=ambisonic, make_inputs=make_inputs, reference=reference,
    # f32 harmonics (sin/cos within a few ulp) and an f32 sum over up to 64
    # sources of |terms| <= 1: errors stay below 1e-5; 1e-4 leaves margin.
    rtol=1e-4, atol=1e-4,
    peers=(numba_peer(_numba),),
    description="order-3 ambisonic (16-channel ambiX) encoding of N mono sources",
)]
