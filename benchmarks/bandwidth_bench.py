"""Memory-bound kernels against the device's copy bandwidth (issue 40:
"memory-bound kernels at least 80% of the measured copy bandwidth").

    python benchmarks/bandwidth_bench.py [--programs map,blur,stencil]
        [--layouts auto,contiguous,strided] [--per-item 4] [--lanes 4] [--repeat 15]
        [--size large] [--options JSON]

Each program (map 64M floats, blur 8192^2, stencil 512 x 512 x 64 at
``--size large``) runs on gpu_opencl as written (no pass fuses its nodes), its
inputs made on the device once and its outputs left there; a row is one
kernel of it (nodes of one function together: stencil's five sweeps of
each direction, its bytes counted once per node), its own time from
OpenCL profiling events (``exe.report()``), the median of ``--repeat``
calls.  Every kernel here reads one array and
writes one of the same size, so its bytes are counted as one read and one
write of every element (a neighbour read twice counts once), and "of
copy" is its rate against a float4 copy kernel over 256 MiB measured in
the same run (roofline_bench.copy_bandwidth), "of its size" against the
same copy of the program's array (the same bytes moved: a smaller copy
loses more to the launch's ramp and tail).  Rows are compiled with each
``per_item_layout`` (steps.LAYOUTS), each ``per_item`` and each ``lanes``
(lanes.py: marching kernels only).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shlex
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hpvm.lang as hl  # noqa: E402
from hpvm.lang import Buffer, f32, parallel_loop  # noqa: E402

from benchmarks.node_times_bench import kernel_times  # noqa: E402
from benchmarks.roofline_bench import copy_bandwidth  # noqa: E402

F32 = 4


@hl.program
def scale_shift(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):  # noqa: F821 (N: a shape symbol)
    for i in parallel_loop(N, ins=(x,), outs=(y,), name="map"):  # noqa: F821
        y[i] = x[i] * 2.0 + 1.0


def _blur_program():
    sys.path.insert(0, str(ROOT / "examples"))
    from blur import blur3x3
    return blur3x3


def _stencil_program():
    from benchmarks.programs.stencil import stencil
    return stencil


PROGRAMS = {
    "map": (lambda: scale_shift, lambda rng, n: {"x": rng.random(n ** 2, dtype=np.float32)}),
    "blur": (_blur_program, lambda rng, n: {"img": rng.random((n, n), dtype=np.float32)}),
    "stencil": (_stencil_program, lambda rng, n: {
        "A": rng.random((n // 128, n // 16, n // 16), dtype=np.float32),
        "c0": np.float32(1 / 6), "c1": np.float32(1 / 36)}),
}
"""name -> (the program, its inputs for a size n): map n^2 floats, blur
n x n, stencil n/16 x n/16 x n/128 (n = 8192: Parboil's 512 x 512 x 64)."""
SIZES = {"large": 8192, "small": 256}


def node_bytes(inputs: dict) -> float:
    """Bytes one node moves: a read and a write of every element of the
    program's array."""
    elements = next(v.size for v in inputs.values() if isinstance(v, np.ndarray) and v.ndim)
    return 2.0 * F32 * elements


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--layouts", default="auto,contiguous,strided")
    parser.add_argument("--per-item", default="4", help="comma-separated per_item values")
    parser.add_argument("--lanes", default="4", help="comma-separated lanes values")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--size", default="large", choices=tuple(SIZES))
    parser.add_argument("--options", default="{}", help="more gpu_opencl options, as JSON")
    args = parser.parse_args(argv)
    bandwidth = copy_bandwidth(args.repeat)
    print(f"command: python {shlex.join(sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    print(f"copy kernel: {bandwidth / 1e9:.0f} GB/s")
    print("| kernel | per_item | layout | lanes | ms | GB/s | of copy | of its size |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.programs.split(","):
        build, make_inputs = PROGRAMS[name]
        program, inputs = build(), make_inputs(np.random.default_rng(0), SIZES[args.size])
        same_size = copy_bandwidth(args.repeat, int(node_bytes(inputs) / 2))
        for per_item, layout, lanes in itertools.product(
                (int(p) for p in args.per_item.split(",")), args.layouts.split(","),
                (int(n) for n in args.lanes.split(","))):
            options = {**json.loads(args.options), "per_item": per_item,
                       "per_item_layout": layout, "lanes": lanes}
            times = kernel_times(program, inputs, {**options, "pipeline": ""}, args.repeat)
            for kernel, (seconds, nodes) in times.items():
                rate = node_bytes(inputs) * nodes / seconds
                print(f"| {name} {kernel} | {per_item} | {layout} | {lanes} | "
                      f"{seconds * 1e3:.4f} | {rate / 1e9:.0f} | {rate / bandwidth:.2f} | "
                      f"{rate / same_size:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
