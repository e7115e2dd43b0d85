"""Reductions as written vs after parallel-reduce, against numpy and torch.

    .venv/bin/python benchmarks/reduce_bench.py [--targets cpu,gpu_opencl]
        [--repeat 15] [--size large|small]

Two programs written with ``reduce``: ``sum_of_squares`` (one task folding
N values: as written one instance does all the work) and ``row_max`` (a
parallel loop over rows, each folding its row).  Each runs as written
and with ``parallel-reduce`` in the form that suits the target (cpu:
``chunks``, one partial result per chunk on every core; gpu_opencl: its
default pipeline: strided chunks over the whole device, then a tree in a
work group's local memory per remaining fold).  Times
are the nodes' kernel times from ``exe.report()`` (medians; copies to and
from a GPU are not counted, as the peers' are not), so the ratio compares
the folding itself with numpy on the host and torch on the GPU.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys

import numpy as np

import hpvm
import hpvm.lang as hl
from hpvm.lang import Buffer, f32, parallel_loop, task

SIZES = {"small": (1 << 16, (64, 256)), "large": (1 << 24, (4096, 4096))}
FORMS = {"cpu": "parallel-reduce{form=chunks lanes=64}", "gpu_opencl": "default"}


@hl.program
def sum_of_squares(x: Buffer[f32, "N"], total: Buffer[f32, 1]):
    with task(ins=(x,), outs=(total,), name="fold"):
        total[0] = sum(x[i] * x[i] for i in range(N))


@hl.program
def row_max(m: Buffer[f32, "R", "C"], best: Buffer[f32, "R"]):
    for r in parallel_loop(R, ins=(m,), outs=(best,), name="rows"):
        best[r] = max(m[r, c] for c in range(C))


def reference(name: str, inputs: dict) -> np.ndarray:
    """The fold in float64."""
    array = next(iter(inputs.values())).astype(np.float64)
    return np.array([array @ array]) if name == "sum_of_squares" else array.max(axis=1)


def relative_error(outputs: dict, exact: np.ndarray) -> float:
    (got,) = outputs.values()
    return float(np.abs(got - exact).max() / np.abs(exact).max())


def kernel_seconds(exe, inputs: dict, repeat: int) -> float:
    exe(**inputs)
    times = []
    for _ in range(repeat):
        exe(**inputs)
        times.append(exe.report().node_seconds)
    return statistics.median(times)


def peers(name: str, inputs: dict, target: str, repeat: int) -> list[tuple[str, float]]:
    import time
    array = next(iter(inputs.values()))
    numpy_fold = (lambda: np.dot(array, array)) if name == "sum_of_squares" else (
        lambda: array.max(axis=1))
    found = []
    if target == "cpu":
        found.append(("numpy", _median(numpy_fold, repeat, time.perf_counter)))
    else:
        try:
            import torch
            if torch.cuda.is_available():
                on_gpu = torch.from_numpy(array).cuda()
                fold = (lambda: torch.dot(on_gpu, on_gpu)) if name == "sum_of_squares" else (
                    lambda: on_gpu.amax(dim=1))
                found.append(("torch CUDA", _median(fold, repeat, time.perf_counter,
                                                   torch.cuda.synchronize)))
        except ImportError:
            pass
    return found


def _median(run, repeat, clock, finish=lambda: None) -> float:
    run()
    finish()
    times = []
    for _ in range(repeat):
        began = clock()
        run()
        finish()
        times.append(clock() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cpu,gpu_opencl")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--size", choices=SIZES, default="large")
    parser.add_argument("--pipeline", default=None,
                        help="the passes for every target instead of its parallel form")
    args = parser.parse_args()
    print(f"command: {' '.join(shlex.quote(a) for a in sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    n, (rows, cols) = SIZES[args.size]
    rng = np.random.default_rng(0)
    programs = [("sum_of_squares", sum_of_squares, {"x": rng.random(n, dtype=np.float32)}),
                ("row_max", row_max, {"m": rng.random((rows, cols), dtype=np.float32)})]
    print("\n| program | target | as written ms | parallel-reduce ms | speedup | peer | peer ms "
          "| ratio (hpvm/peer) | rel. error as written / after |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for name, program, inputs in programs:
        for target in args.targets.split(","):
            written = hpvm.compile(program, [target])
            reduced = hpvm.compile(program, [target],
                                   options={"pipeline": args.pipeline or FORMS[target]})
            exact = reference(name, inputs)
            errors = [relative_error(exe(**inputs), exact) for exe in (written, reduced)]
            assert errors[1] < 1e-4, f"{name} on {target}: error {errors[1]:.1e} after the pass"
            before = kernel_seconds(written, inputs, args.repeat)
            after = kernel_seconds(reduced, inputs, args.repeat)
            found = peers(name, inputs, target, args.repeat) or [("", float("nan"))]
            for peer, seconds in found:
                print(f"| {name} | {target} | {before * 1e3:.3f} | {after * 1e3:.3f} | "
                      f"{before / after:.1f}x | {peer} | {seconds * 1e3:.3f} | "
                      f"{after / seconds:.2f} | {errors[0]:.1e} / {errors[1]:.1e} |")


if __name__ == "__main__":
    main()
