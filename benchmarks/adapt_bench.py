"""Run-time adaptation under an injected slowdown: an approximated CNN
with a latency goal keeps it while competing processes load every core,
by moving along its approximation curve, and moves back when they stop.

A VGG-style CNN is trained on the synthetic images, tuned (``approx_tune``
on --target with a 3-point accuracy loss), and run with ``set_goal`` at
--slack times the exact program's latency: first unloaded, then with one
busy process per core, then unloaded again.  Prints per phase the median
latency, the share of runs over the goal and the mean accuracy of the
configurations used; draws latency and QoS over the runs (--svg).

    .venv/bin/python benchmarks/adapt_bench.py --target cpu --svg adapt.svg
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

LOAD = "import numpy as np\na = np.ones((400, 400))\nwhile True:\n    a = a @ a / 400\n"


def tuned_executable(args):
    from hpvm.frontend.onnx import image_models as zoo, load, testing
    from hpvm.tune.approx import accuracy, approx_tune
    images, labels = zoo.synthetic_images(args.train + args.images, seed=2)
    model = zoo.train(zoo.vgg_small(args.width), images[:args.train], labels[:args.train],
                      steps=args.steps)
    x, y = images[args.train:], labels[args.train:]
    module = load(testing.export(model, (3, 32, 32)))
    result = approx_tune(module, [args.target], {"x": x}, accuracy(y), loss=3.0,
                         techniques=("perforation", "sampling", "reduction-sampling"),
                         every=(2, 3), repeat=3, validate=16)
    print(result.curve.format())
    return result.executable(), x


def run_phases(exe, x, args) -> tuple[list, float]:
    exact = statistics.median(_time(exe, x) for _ in range(5))
    goal_ms = exact * 1e3 * args.slack
    print(f"exact latency {exact * 1e3:.2f} ms; goal {goal_ms:.2f} ms")
    exe.set_goal(latency_ms=goal_ms, window=args.window)
    phases = []
    for name, runs, loaded in (("unloaded", args.runs, False), ("loaded", 2 * args.runs, True),
                               ("unloaded again", 2 * args.runs, False)):
        workers = [subprocess.Popen([sys.executable, "-c", LOAD],
                                    env={**os.environ, "OMP_NUM_THREADS": "1",
                                         "OPENBLAS_NUM_THREADS": "1"})
                   for _ in range(os.cpu_count() or 1)] if loaded else []
        time.sleep(0.5 if loaded else 0)
        start = len(exe.adaptation_history())
        for _ in range(runs):
            exe(x=x)
        for worker in workers:
            worker.kill()
        phases.append((name, exe.adaptation_history()[start:], loaded))
    return phases, goal_ms


def _time(exe, x) -> float:
    started = time.perf_counter()
    exe(x=x)
    return time.perf_counter() - started


def main(argv=None) -> int:
    from hpvm.tune.approx.adaptation_plot import adaptation_svg
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--slack", type=float, default=1.2, help="goal / exact latency")
    parser.add_argument("--runs", type=int, default=15, help="runs of the first phase")
    parser.add_argument("--window", type=int, default=3)
    parser.add_argument("--svg", help="draw latency and QoS over the runs")
    args = parser.parse_args(argv)
    exe, x = tuned_executable(args)
    phases, goal_ms = run_phases(exe, x, args)
    configurations = exe.configurations()
    print(f"\ncommand: .venv/bin/python benchmarks/adapt_bench.py {' '.join(sys.argv[1:])}")
    print("| phase | runs | median ms | over the goal | mean accuracy of the configurations used |")
    print("|---|---|---|---|---|")
    for name, history, _ in phases:
        latencies = [seconds * 1e3 for _, seconds, _ in history]
        over = sum(ms > goal_ms for ms in latencies) / len(latencies)
        qos = statistics.mean(configurations[i]["qos"] for *_, i in history)
        print(f"| {name} | {len(history)} | {statistics.median(latencies):.2f} | {over:.0%} | "
              f"{qos:.1f} |")
    if args.svg:
        history = [entry for _, h, _ in phases for entry in h]
        load = [loaded for _, h, loaded in phases for _ in h]
        with open(args.svg, "w") as out:
            out.write(adaptation_svg(history, configurations, goal_ms,
                                     f"VGG on {args.target}: latency goal under load", load))
    exe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
