"""Hand-written OpenCL marches of the stencil's sweep against the copy
kernel: what a sweep of Parboil's grid can reach (issue 40: "memory-bound
kernels at least 80% of the measured copy bandwidth").

    python benchmarks/stencil_variants_bench.py [--widths 1,2,4] [--rows 1,2]
        [--planes 4,8,16] [--unrolled 0,1] [--grid 64,512,512] [--repeat 25]

A variant marches along z: each work item computes W adjacent x (one
vector access a row), R rows and K planes; the planes below and at hand
stay in registers, so each step loads the plane above and the rows north
and south of the item's rows, and x's neighbours from the cache.  The K
loop is unrolled or left to the compiler.  Each variant runs in five
work-group shapes; a row gives its best, checked against the sweep
computed in numpy (benchmarks/programs/stencil.py's weights).  Rates count
a read and a write of the grid a sweep; "of copy" is against a float4
copy kernel over 256 MiB (roofline_bench.copy_bandwidth), and the first
rows are copies of the grid's own size, float4 and one float a work item.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.roofline_bench import copy_bandwidth, event_seconds  # noqa: E402

GROUPS = ((32, 4, 1), (64, 2, 1), (64, 4, 1), (128, 1, 1), (128, 2, 1))
"""Work-group shapes (x, y, z) each variant runs in."""

SOURCE = """
#if W == 1
typedef float vec;
#define LOAD(p) (*(p))
#define STORE(v, p) (*(p) = (v))
#else
#define CAT(a, b) a##b
#define JOIN(a, b) CAT(a, b)
typedef JOIN(float, W) vec;
#define LOAD(p) JOIN(vload, W)(0, p)
#define STORE(v, p) JOIN(vstore, W)(v, 0, p)
#endif
#define AT(z, y) (((z) * NY + (y)) * NX)

__kernel void march(__global const float* restrict grid, __global float* restrict out,
                    int NZ, int NY, int NX, float c0, float c1) {
    const int x = get_global_id(0) * W, y0 = get_global_id(1) * R, z0 = get_global_id(2) * K;
    if (x >= NX || y0 >= NY) return;
    const int plane = NY * NX;
    vec below[R], here[R], above[R];
    #pragma unroll
    for (int r = 0; r < R; r++) {
        below[r] = z0 > 0 ? LOAD(grid + AT(z0 - 1, y0 + r) + x) : (vec)(0.0f);
        here[r] = LOAD(grid + AT(z0, y0 + r) + x);
    }
#if UNROLLED
    #pragma unroll
#else
    #pragma unroll 1
#endif
    for (int k = 0; k < K; k++) {
        const int z = z0 + k;
        if (z >= NZ) break;
        const int base = AT(z, 0) + x;
        const vec south = y0 > 0 ? LOAD(grid + base + (y0 - 1) * NX) : (vec)(0.0f);
        const vec north = y0 + R < NY ? LOAD(grid + base + (y0 + R) * NX) : (vec)(0.0f);
        #pragma unroll
        for (int r = 0; r < R; r++)
            above[r] = z + 1 < NZ ? LOAD(grid + base + plane + (y0 + r) * NX) : (vec)(0.0f);
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const int y = y0 + r, i = base + y * NX;
            vec value = here[r];
            if (0 < y && y < NY - 1 && 0 < z && z < NZ - 1) {
                const vec s = r > 0 ? here[r - 1] : south;
                const vec n = r + 1 < R ? here[r + 1] : north;
                const float left = x > 0 ? grid[i - 1] : 0.0f;
                const float right = x + W < NX ? grid[i + W] : 0.0f;
#if W == 1
                const vec west = left, east = right;
#elif W == 2
                const vec west = (vec)(left, here[r].s0), east = (vec)(here[r].s1, right);
#else
                const vec west = (vec)(left, here[r].s012), east = (vec)(here[r].s123, right);
#endif
                const vec swept = (((((above[r] + below[r]) + n) + s) + east) + west) * c1
                                  - here[r] * c0;
#if W == 1
                value = (0 < x && x < NX - 1) ? swept : value;
#else
                if (0 < x && x + W < NX) {
                    value = swept;
                } else {  /* a vector at the grid's left or right edge */
                    float lanes[W], kept[W];
                    STORE(swept, lanes);
                    STORE(here[r], kept);
                    for (int w = 0; w < W; w++)
                        if (0 < x + w && x + w < NX - 1) kept[w] = lanes[w];
                    value = LOAD(kept);
                }
#endif
            }
            STORE(value, out + i);
        }
        #pragma unroll
        for (int r = 0; r < R; r++) {
            below[r] = here[r];
            here[r] = above[r];
        }
    }
}
"""


def sweep(grid: np.ndarray, c0: float, c1: float) -> np.ndarray:
    """One Jacobi sweep in float32, neighbours summed in the kernels'
    order; the boundary unchanged."""
    out = grid.copy()
    out[1:-1, 1:-1, 1:-1] = (((((grid[2:, 1:-1, 1:-1] + grid[:-2, 1:-1, 1:-1])
                                + grid[1:-1, 2:, 1:-1]) + grid[1:-1, :-2, 1:-1])
                              + grid[1:-1, 1:-1, 2:]) + grid[1:-1, 1:-1, :-2]) * np.float32(c1) \
        - grid[1:-1, 1:-1, 1:-1] * np.float32(c0)
    return out


def variants(grid: np.ndarray, configs, repeat: int):
    """(W, R, K, unrolled, best seconds, its group, whether every group
    computed the sweep) for each of ``configs``; the output is filled with
    NaN before each group's runs, so a point no group writes fails."""
    import pyopencl as cl

    from benchmarks.peers import _opencl_device
    context, _ = _opencl_device()
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    flags = cl.mem_flags
    source = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=grid)
    target = cl.Buffer(context, flags.READ_WRITE, grid.nbytes)
    c0, c1 = np.float32(1 / 6), np.float32(1 / 36)
    want = sweep(grid, c0, c1)
    nz, ny, nx = grid.shape
    for width, rows, planes, unrolled in configs:
        program = cl.Program(context, f"#define W {width}\n#define R {rows}\n#define K {planes}\n"
                                      f"#define UNROLLED {unrolled}\n" + SOURCE).build()
        kernel = cl.Kernel(program, "march")
        kernel.set_args(source, target, np.int32(nz), np.int32(ny), np.int32(nx), c0, c1)
        best, correct = (float("inf"), None), True
        for group in GROUPS:
            columns = -(-nx // width)
            global_size = (-(-columns // group[0]) * group[0],
                           -(-ny // rows // group[1]) * group[1], -(-nz // planes))
            cl.enqueue_fill_buffer(queue, target, np.float32(np.nan), 0, grid.nbytes)
            seconds = event_seconds(queue, kernel, global_size, group, repeat)
            got = np.empty_like(grid)
            cl.enqueue_copy(queue, got, target)
            correct &= bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))
            best = min(best, (seconds, group))
        yield width, rows, planes, unrolled, best[0], best[1], correct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="1,2,4", help="adjacent x a work item (1, 2, 4)")
    parser.add_argument("--rows", default="1,2")
    parser.add_argument("--planes", default="4,8,16")
    parser.add_argument("--unrolled", default="0,1")
    parser.add_argument("--grid", default="64,512,512", help="NZ,NY,NX (Parboil's default)")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    ints = lambda text: [int(v) for v in text.split(",")]  # noqa: E731
    shape = tuple(ints(args.grid))
    widths = ints(args.widths)
    rows = ints(args.rows)
    if len(shape) != 3 or any(w not in (1, 2, 4) or shape[2] % w for w in widths) \
            or any(shape[1] % r for r in rows):
        parser.error("--grid: NZ,NY,NX; --widths: 1, 2 or 4, each dividing NX; --rows: each "
                     "dividing NY")
    grid = np.random.default_rng(0).random(shape, dtype=np.float32)
    peak = copy_bandwidth(args.repeat)
    moved = 2.0 * grid.nbytes
    print(f"command: python {shlex.join(sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    print(f"copy kernel (256 MiB, float4): {peak / 1e9:.0f} GB/s")
    print("| variant | ms | GB/s | of copy |")
    print("| --- | ---: | ---: | ---: |")
    for lanes in (4, 1):
        rate = copy_bandwidth(args.repeat, grid.nbytes, lanes)
        print(f"| copy of the grid's size, {lanes} float{'s' if lanes > 1 else ''} a work item | "
              f"{moved / rate * 1e3:.4f} | {rate / 1e9:.0f} | {rate / peak:.2f} |")
    configs = [(w, r, k, u) for w in widths for r in rows for k in ints(args.planes)
               for u in ints(args.unrolled)]
    failed = False
    for width, rows, planes, unrolled, seconds, group, correct in variants(grid, configs,
                                                                           args.repeat):
        rate = moved / seconds
        failed |= not correct
        print(f"| W {width} R {rows} K {planes}{' unrolled' if unrolled else ''}, "
              f"groups {group[0]} x {group[1]}{'' if correct else ' WRONG'} | "
              f"{seconds * 1e3:.4f} | {rate / 1e9:.0f} | {rate / peak:.2f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
