"""The cpu target's math functions against numpy's, element by element.

    .venv/bin/python benchmarks/math_bench.py [--size 16777216] [--threads 1] [--repeat 10]

Each program maps one function over an f32 array (``out[i] = f(a[i])``,
written in the kernel language); numpy's ufuncs on the same array are
the peer (numpy has SIMD loops of its own for f32 sin, cos, exp, log and
tanh; its f32 power calls libm). Both run on one thread unless ``--threads`` says otherwise (numpy
always on one). The table gives ns an element (median of ``--repeat``
calls, host arrays in and out), the ratio hpvm / numpy, and the largest
error of each against the exact value (numpy in f64), in ulp.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import hpvm
import hpvm.lang as hl
from hpvm.lang import Buffer, Out, cos, exp, f32, log, parallel_loop, pow, sin, tanh

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.onnx_bench import median_ms  # noqa: E402


@hl.program
def sine_and_cosine(a: Buffer[f32, "N"], out: Out[Buffer[f32, "N"]],
                    cosine: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(a,), outs=(out, cosine)):
        out[i] = sin(a[i])
        cosine[i] = cos(a[i])


@hl.program
def exponential(a: Buffer[f32, "N"], out: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(a,), outs=(out,)):
        out[i] = exp(a[i])


@hl.program
def logarithm(a: Buffer[f32, "N"], out: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(a,), outs=(out,)):
        out[i] = log(a[i])


@hl.program
def hyperbolic_tangent(a: Buffer[f32, "N"], out: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(a,), outs=(out,)):
        out[i] = tanh(a[i])


@hl.program
def power(a: Buffer[f32, "N"], out: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(a,), outs=(out,)):
        out[i] = pow(a[i], a[i] - 1.0)


CASES = {
    "sin x and cos x": (sine_and_cosine, lambda a: (np.sin(a), np.cos(a)), (-100.0, 100.0)),
    "exp x": (exponential, lambda a: (np.exp(a),), (-80.0, 80.0)),
    "log x": (logarithm, lambda a: (np.log(a),), (1e-3, 1e3)),
    "tanh x": (hyperbolic_tangent, lambda a: (np.tanh(a),), (-6.0, 6.0)),
    "pow(x, x - 1)": (power, lambda a: (np.power(a, (a - 1).astype(np.float32).astype(a.dtype)),),
                      (0.01, 8.0)),
}
"""name -> (program, numpy's functions (the program's outputs in order),
range of the arguments)."""


def ulp_error(got, exact) -> float:
    """The largest error of the f32 arrays ``got`` against the f64 arrays
    ``exact``, in ulp of the exact value rounded to f32."""
    errors = []
    for ours, truth in zip(got, exact):
        ulp = np.spacing(np.abs(truth.astype(np.float32))).astype(np.float64)
        errors.append(np.max(np.abs(ours.astype(np.float64) - truth) / ulp))
    return float(max(errors))


def rows(size: int, threads: int, repeat: int) -> list[tuple]:
    """(function, hpvm ns, numpy ns, hpvm ulp, numpy ulp) per case."""
    rng = np.random.default_rng(0)
    table = []
    for name, (program, numpy_function, (low, high)) in CASES.items():
        a = rng.uniform(low, high, size).astype(np.float32)
        exe = hpvm.compile(program, ["cpu"], {"threads": threads})
        exact = numpy_function(a.astype(np.float64))
        hpvm_out = tuple(exe(a=a).values())
        numpy_out = numpy_function(a)
        hpvm_ns = median_ms(lambda: exe(a=a), repeat) * 1e6 / size
        numpy_ns = median_ms(lambda: numpy_function(a), repeat) * 1e6 / size
        table.append((name, hpvm_ns, numpy_ns, ulp_error(hpvm_out, exact),
                      ulp_error(numpy_out, exact)))
    return table


def format_rows(table: list[tuple]) -> list[str]:
    lines = ["| function | hpvm cpu ns | numpy ns | hpvm / numpy | hpvm max ulp | numpy max ulp |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {name} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} | {our_ulp:.2f} | "
              f"{their_ulp:.2f} |" for name, ours, theirs, our_ulp, their_ulp in table]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    table = rows(args.size, args.threads, args.repeat)
    print(f"machine: {os.cpu_count()} cpus; {args.size} f32 elements, hpvm on {args.threads} "
          f"thread(s), numpy on one")
    print("\n".join(format_rows(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
