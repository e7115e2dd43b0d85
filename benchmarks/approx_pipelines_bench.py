"""Approximation tuning of image pipelines written as kernels (blur,
camera): speedup over the exact program at PSNR 30 and 20 dB, per
program and target.

Each program of the suite is tuned once (predictive, perforation of its
nodes' instances, rows or columns, K in 2, 3, 4) for the lowest PSNR
asked; the speedup at a higher floor is the best configuration on the
curve that meets it (every configuration on the curve was run).  The peer,
in the same run, is the exact program on the same target (1.00x); numba's
time for the same program is shown for scale.  The blur runs on a scene
(the demo's shapes, resized, with sensor noise), not on white noise,
which no interpolation could predict.

    .venv/bin/python benchmarks/approx_pipelines_bench.py --targets cpu --size large
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.approx_support import (  # noqa: E402
    add_tuning_arguments, command_line, markdown_table, median_ms, parse_list, run_all, tune,
    write_rows,
)

PROGRAMS = ("blur", "camera")


@dataclass
class Row:
    program: str
    target: str
    exact_ms: float
    numba_ms: float
    speedups: dict
    configurations: dict
    runs: int
    searched: int
    prediction_error: float
    tune_seconds: float


def scene(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """The demo's picture bilinearly resized to ``height`` x ``width``, in
    [0, 1], with 1% noise."""
    from hpvm.demo.image import bundled_image
    picture = bundled_image().astype(np.float64)
    picture = (picture - picture.min()) / max(np.ptp(picture), 1e-9)
    rows = np.linspace(0, picture.shape[0] - 1, height)
    cols = np.linspace(0, picture.shape[1] - 1, width)
    r0, c0 = np.floor(rows).astype(int), np.floor(cols).astype(int)
    r1, c1 = np.minimum(r0 + 1, picture.shape[0] - 1), np.minimum(c0 + 1, picture.shape[1] - 1)
    fr, fc = (rows - r0)[:, None], (cols - c0)[None, :]
    top = picture[r0][:, c0] * (1 - fc) + picture[r0][:, c1] * fc
    bottom = picture[r1][:, c0] * (1 - fc) + picture[r1][:, c1] * fc
    image = top * (1 - fr) + bottom * fr + 0.01 * rng.standard_normal((height, width))
    return np.ascontiguousarray(image, dtype=np.float32)


def make_inputs(bench, size: str) -> dict:
    rng = np.random.default_rng(0)
    inputs = bench.make_inputs(size, rng)
    if bench.name == "blur":
        inputs["img"] = scene(*inputs["img"].shape, rng)
    return inputs


def numba_ms(bench, inputs: dict, repeat: int) -> float:
    peer = next((p for p in bench.peers if p.name == "numba"), None)
    if peer is None or peer.available() is not None:
        return float("nan")
    return median_ms(peer.prepare(inputs), repeat)


def bench(name: str, target: str, args) -> Row:
    from benchmarks.suite import get
    from hpvm.tune.approx import psnr
    program = get(name)
    inputs = make_inputs(program, args.size)
    tuned = tune(program.program, target, inputs, psnr(), f"{name}/{target}", args.svg_dir,
                 minimum=min(args.psnr), techniques=("perforation",), every=tuple(args.every),
                 validate=args.validate, repeat=args.repeat)
    points = tuned.result.curve.points
    best = {floor: max((p for p in points if p.qos >= floor), key=lambda p: p.speedup)
            for floor in args.psnr}
    return Row(name, target, 1e3 * points[0].seconds, numba_ms(program, inputs, args.repeat),
               {floor: point.speedup for floor, point in best.items()},
               {floor: point.knobs for floor, point in best.items()},
               tuned.result.empirical_runs, tuned.result.searched, tuned.prediction_error(),
               tuned.seconds)


def format_table(rows: list[Row], floors) -> str:
    columns = (["program", "target", "exact ms", "numba ms"]
               + [f"@{floor:g} dB" for floor in floors]
               + ["runs / searched", "predicted-vs-measured error (dB)", "tuning s"])
    return markdown_table(columns, [
        [r.program, r.target, f"{r.exact_ms:.2f}", f"{r.numba_ms:.2f}"]
        + [f"{r.speedups[floor]:.2f}x" for floor in floors]
        + [f"{r.runs} / {r.searched}", f"{r.prediction_error:.2f}", f"{r.tune_seconds:.0f}"]
        for r in rows])


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=parse_list, default=list(PROGRAMS))
    parser.add_argument("--targets", type=parse_list, default=["cpu"])
    parser.add_argument("--size", choices=("small", "large"), default="large")
    parser.add_argument("--psnr", type=lambda t: parse_list(t, float), default=[30.0, 20.0],
                        help="PSNR floors in dB (30,20)")
    add_tuning_arguments(parser, validate=12)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = run_all(args.programs, args.targets, lambda name, target: bench(name, target, args),
                   lambda some: format_table(some, args.psnr))
    print(f"command: {command_line('approx_pipelines_bench.py', argv)}")
    print(f"machine: {platform.machine()} {platform.processor()}, {os.cpu_count()} cores "
          f"visible, Python {platform.python_version()}; size {args.size}")
    print()
    print(format_table(rows, args.psnr))
    for r in rows:
        for floor, knobs in r.configurations.items():
            print(f"{r.program}/{r.target} @{floor:g} dB: "
                  f"{', '.join(f'{n}:{k}' for n, k in knobs.items()) or 'exact'}")
    write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
