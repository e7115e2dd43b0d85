"""The cpu target against numpy and numba (parallel) on the same machine,
in the same run: Halide's two-stage 3x3 blur (2048x2048) and sgemm (1024^3).

    .venv/bin/python benchmarks/cpu_bench.py [--repeat 7] [--small]

Each implementation runs once to warm up (JIT compiles are not timed),
then ``--repeat`` times; the table gives the median.  The ratio is the
peer's time over hpvm's (above 1: hpvm is faster).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numba
import numpy as np

import hpvm
from hpvm.frontend.compile import load_python_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def median_seconds(run, repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


@numba.njit(parallel=True, fastmath=False, cache=False)
def blur_numba(img):
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


@numba.njit(parallel=True, fastmath=False, cache=False)
def sgemm_numba(a, b):
    """The same algorithm as the hpvm program: parallel i, j; sequential k."""
    m, k = a.shape
    n = b.shape[1]
    c = np.empty((m, n), np.float32)
    for i in numba.prange(m):
        for j in range(n):
            acc = np.float32(0)
            for p in range(k):
                acc += a[i, p] * b[p, j]
            c[i, j] = acc
    return c


def bench_blur(size: int, repeat: int) -> list[tuple]:
    blur = load_python_file(EXAMPLES / "blur.py")
    img = np.random.default_rng(0).random((size, size), dtype=np.float32)
    exe = hpvm.compile(blur.blur3x3, targets=["cpu"])
    expected = blur.reference({"img": img})["out"]
    np.testing.assert_allclose(exe(img=img)["out"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(blur_numba(img), expected, rtol=1e-5, atol=1e-6)
    moved = 3 * img.nbytes  # read the image, write and read bx, write out: >= 3 passes
    runs = {"hpvm cpu": lambda: exe(img=img), "numpy": lambda: blur.reference({"img": img}),
            "numba parallel": lambda: blur_numba(img)}
    return [(f"blur {size}x{size}", name, median_seconds(run, repeat), moved / 1e9, "GB/s")
            for name, run in runs.items()]


def bench_sgemm(size: int, repeat: int) -> list[tuple]:
    matmul = load_python_file(EXAMPLES / "matmul.py")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    exe = hpvm.compile(matmul.matmul, targets=["cpu"])
    np.testing.assert_allclose(exe(A=a, B=b)["C"], a @ b, rtol=1e-3, atol=1e-3)
    runs = {"hpvm cpu": lambda: exe(A=a, B=b), "numpy": lambda: a @ b,
            "numba parallel": lambda: sgemm_numba(a, b)}
    flops = 2 * size ** 3
    return [(f"sgemm {size}^3", name, median_seconds(run, repeat), flops / 1e9, "GFLOP/s")
            for name, run in runs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--small", action="store_true", help="256x256 blur and 256^3 sgemm")
    args = parser.parse_args()
    blur_size, sgemm_size = (256, 256) if args.small else (2048, 1024)
    rows = bench_blur(blur_size, args.repeat) + bench_sgemm(sgemm_size, args.repeat)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numpy {np.__version__}, numba {numba.__version__}")
    print(f"{'program':<16} {'implementation':<16} {'median ms':>10} {'rate':>14} {'peer/hpvm':>10}")
    hpvm_time = {}
    for program, name, seconds, work, unit in rows:
        hpvm_time.setdefault(program, seconds)
        ratio = seconds / hpvm_time[program]
        print(f"{program:<16} {name:<16} {seconds * 1e3:10.2f} {work / seconds:9.2f} {unit:<4} "
              f"{ratio:10.2f}")


if __name__ == "__main__":
    main()
