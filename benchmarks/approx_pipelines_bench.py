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
import json
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

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
    return image.astype(np.float32)


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
    run = peer.prepare(inputs)
    run()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def bench(name: str, target: str, args) -> Row:
    from benchmarks.suite import get
    from hpvm.tune.approx import approx_tune, psnr
    program = get(name)
    inputs = make_inputs(program, args.size)
    started = time.perf_counter()
    result = approx_tune(program.program, [target], inputs, psnr(), minimum=min(args.psnr),
                         techniques=("perforation",), every=tuple(args.every),
                         validate=args.validate, repeat=args.repeat, seed=0,
                         progress=lambda label, done, total: print(
                             f"  {name}/{target} {done}/{total} {label}", file=sys.stderr)
                         if done % 10 == 0 or done == total else None)
    seconds = time.perf_counter() - started
    curve = result.curve
    if args.svg_dir:
        Path(args.svg_dir).mkdir(parents=True, exist_ok=True)
        Path(args.svg_dir, f"approx_{name}_{target}.svg").write_text(
            curve.svg(f"{name} on {target}"))
    best = {floor: max((p for p in curve.points if p.qos >= floor), key=lambda p: p.speedup)
            for floor in args.psnr}
    return Row(name, target, 1e3 * curve.points[0].seconds, numba_ms(program, inputs, args.repeat),
               {floor: point.speedup for floor, point in best.items()},
               {floor: point.knobs for floor, point in best.items()},
               result.empirical_runs, result.searched,
               result.agreement.get("mean_abs_error", float("nan")), seconds)


def format_table(rows: list[Row], floors) -> str:
    head = " | ".join(f"@{floor:g} dB" for floor in floors)
    lines = [f"| program | target | exact ms | numba ms | {head} | runs / searched "
             "| predicted-vs-measured error (dB) | tuning s |",
             "|" + "---|" * (7 + len(floors))]
    for r in rows:
        speeds = " | ".join(f"{r.speedups[floor]:.2f}x" for floor in floors)
        lines.append(f"| {r.program} | {r.target} | {r.exact_ms:.2f} | {r.numba_ms:.2f} | "
                     f"{speeds} | {r.runs} / {r.searched} | {r.prediction_error:.2f} | "
                     f"{r.tune_seconds:.0f} |")
    return "\n".join(lines)


def _list(text: str, kind=str) -> list:
    return [kind(v.strip()) for v in text.split(",") if v.strip()]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=_list, default=list(PROGRAMS))
    parser.add_argument("--targets", type=_list, default=["cpu"])
    parser.add_argument("--size", choices=("small", "large"), default="large")
    parser.add_argument("--psnr", type=lambda t: _list(t, float), default=[30.0, 20.0],
                        help="PSNR floors in dB (30,20)")
    parser.add_argument("--every", type=lambda t: _list(t, int), default=[2, 3, 4])
    parser.add_argument("--validate", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--svg-dir", help="draw each curve here")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = []
    for name in args.programs:
        for target in args.targets:
            rows.append(bench(name, target, args))
            print(format_table(rows[-1:], args.psnr), file=sys.stderr)
    command = " ".join(shlex.quote(a) for a in [
        ".venv/bin/python", "benchmarks/approx_pipelines_bench.py",
        *(sys.argv[1:] if argv is None else argv)])
    print(f"command: {command}")
    print(f"machine: {platform.machine()} {platform.processor()}, {os.cpu_count()} cores "
          f"visible, Python {platform.python_version()}; size {args.size}")
    print()
    print(format_table(rows, args.psnr))
    for r in rows:
        for floor, knobs in r.configurations.items():
            print(f"{r.program}/{r.target} @{floor:g} dB: "
                  f"{', '.join(f'{n}:{k}' for n, k in knobs.items()) or 'exact'}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
