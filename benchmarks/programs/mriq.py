"""Parboil mri-q: the Q matrix of non-Cartesian MRI reconstruction.

Parboil (Stratton et al., 2012), benchmark ``mri-q``, after Stone et al.,
"Accelerating advanced MRI reconstructions on GPUs" (2008).  Two kernels,
as in Parboil's ``ComputePhiMagCPU`` and ``ComputeQCPU``:

    phi_mag[k] = phi_r[k]^2 + phi_i[k]^2
    Qr[i] = sum_k phi_mag[k] * cos(2 pi (kx[k] x[i] + ky[k] y[i] + kz[k] z[i]))
    Qi[i] = sum_k phi_mag[k] * sin(2 pi (...))

in f32, k in order.  Here they are two nodes joined by the phi_mag edge.

Deviations: Parboil packs (kx, ky, kz, phi_mag) into one array of structs;
here they are separate buffers.  Inputs are random instead of Parboil's
scan files: voxel coordinates in [-0.5, 0.5), k-space samples in
[-16, 16) (a 32-wide k-space).  "Small" is tiny; "large" has the 32^3
voxels of Parboil's small dataset with 512 of its 3072 k-space samples
(the full set takes seconds on a 2-core CPU).

Peers: numba (Parboil's loops, voxels in parallel) and hand-written OpenCL
C (mriq.cl: Parboil's GPU scheme, k-space chunks in constant memory).
"""
from __future__ import annotations

import math
from pathlib import Path

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, buffer, cos, f32, parallel_loop, sin

from benchmarks.peers import numba_peer, opencl_peer
from benchmarks.suite import Benchmark

TWO_PI = 6.2831853071795864769252867665590058   # Parboil's PIx2
SIZES = {"small": (300, 64), "large": (32 ** 3, 512)}   # (voxels, k-space samples)


@hl.program
def mriq(kx: Buffer[f32, "K"], ky: Buffer[f32, "K"], kz: Buffer[f32, "K"],
         phi_r: Buffer[f32, "K"], phi_i: Buffer[f32, "K"],
         x: Buffer[f32, "X"], y: Buffer[f32, "X"], z: Buffer[f32, "X"],
         Qr: Out[Buffer[f32, "X"]], Qi: Out[Buffer[f32, "X"]]):
    phi_mag = buffer(f32, ("K",))
    for k in parallel_loop(K, ins=(phi_r, phi_i), outs=(phi_mag,), name="phi_mag"):
        phi_mag[k] = phi_r[k] * phi_r[k] + phi_i[k] * phi_i[k]
    for i in parallel_loop(X, ins=(kx, ky, kz, phi_mag, x, y, z), outs=(Qr, Qi), name="compute_q"):
        real: f32 = 0.0
        imag: f32 = 0.0
        for k in range(K):
            angle = TWO_PI * (kx[k] * x[i] + ky[k] * y[i] + kz[k] * z[i])
            real += phi_mag[k] * cos(angle)
            imag += phi_mag[k] * sin(angle)
        Qr[i] = real
        Qi[i] = imag


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    voxels, samples = SIZES[size]

    def uniform(low, high, count):
        return rng.uniform(low, high, count).astype(np.float32)
    inputs = {name: uniform(-16, 16, samples) for name in ("kx", "ky", "kz")}
    inputs.update({name: uniform(-1, 1, samples) for name in ("phi_r", "phi_i")})
    inputs.update({name: uniform(-0.5, 0.5, voxels) for name in ("x", "y", "z")})
    return inputs


def reference(inputs: dict) -> dict:
    """In float64 from the f32 inputs, one voxel block at a time."""
    f64 = {name: value.astype(np.float64) for name, value in inputs.items()}
    phi_mag = f64["phi_r"] ** 2 + f64["phi_i"] ** 2
    real, imag = np.empty(f64["x"].size), np.empty(f64["x"].size)
    for start in range(0, f64["x"].size, 4096):
        block = slice(start, start + 4096)
        angle = TWO_PI * (np.outer(f64["x"][block], f64["kx"]) + np.outer(f64["y"][block], f64["ky"])
                          + np.outer(f64["z"][block], f64["kz"]))
        real[block], imag[block] = np.cos(angle) @ phi_mag, np.sin(angle) @ phi_mag
    return {"Qr": real.astype(np.float32), "Qi": imag.astype(np.float32)}


TWO_PI_F32 = np.float32(TWO_PI)


@numba.njit(parallel=True)
def _mriq_numba(kx, ky, kz, phi_r, phi_i, x, y, z):
    """Parboil's ComputePhiMagCPU and ComputeQCPU, voxels in parallel, f32."""
    phi_mag = phi_r * phi_r + phi_i * phi_i
    real, imag = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
    for i in numba.prange(x.size):
        real_acc, imag_acc = np.float32(0), np.float32(0)
        for k in range(kx.size):
            angle = TWO_PI_F32 * (kx[k] * x[i] + ky[k] * y[i] + kz[k] * z[i])
            real_acc += phi_mag[k] * math.cos(angle)
            imag_acc += phi_mag[k] * math.sin(angle)
        real[i], imag[i] = real_acc, imag_acc
    return real, imag


def _run_numba(inputs: dict) -> dict:
    names = ("kx", "ky", "kz", "phi_r", "phi_i", "x", "y", "z")
    real, imag = _mriq_numba(*(inputs[name] for name in names))
    return {"Qr": real, "Qi": imag}


CHUNK = 1024      # k-space samples per constant-memory chunk (Parboil's)


def _setup_opencl(cl, inputs):
    k_space = [cl.input(name) for name in ("kx", "ky", "kz", "phi_r", "phi_i")]
    voxels = [cl.input(name) for name in ("x", "y", "z")]
    real = cl.output("Qr", voxels[0].shape, np.float32)
    imag = cl.output("Qi", voxels[0].shape, np.float32)
    samples, count = k_space[0].size, voxels[0].size
    starts = range(0, samples, CHUNK)
    chunks = [cl.scratch((min(CHUNK, samples - start), 4), np.float32) for start in starts]
    round_up = -(-count // 128) * 128

    def launch():
        for start, chunk in zip(starts, chunks):
            size = np.int32(chunk.shape[0])
            cl.launch("pack_k_values", (chunk.shape[0],), None, *k_space, chunk, np.int32(start), size)
            cl.launch("compute_q", (round_up,), (128,), chunk, size, np.int32(start == 0), *voxels,
                      real, imag, np.int32(count))
    return launch


BENCHMARKS = [Benchmark(
    name="mriq", suite="parboil", program=mriq, make_inputs=make_inputs, reference=reference,
    # The f32 angle (|angle| < 2 pi * 24) carries an absolute error of about
    # 24 * 2 pi * eps ~ 1e-5 rad, so each term is off by ~1e-5 * phi_mag (<= 2);
    # summed over K = 64 samples (small) with f32 accumulation that is
    # ~1e-4 at worst against sums of size ~10: atol 5e-4, rtol 1e-4.
    rtol=1e-4, atol=5e-4,
    peers=(numba_peer(_run_numba),
           opencl_peer((Path(__file__).parent / "mriq.cl").read_text(), _setup_opencl,
                       name="opencl (hand, constant memory)")),
    description="MRI-Q: phi magnitudes, then Q by a sin/cos sum over k-space per voxel",
)]
