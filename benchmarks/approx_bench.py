"""Approximation tuning (ApproxTuner) of CNNs: speedup over the exact
program at 1, 2 and 3 points of accuracy loss, per model and target.

Each model (a LeNet, a VGG-style and a ResNet-style CNN,
hpvm.frontend.onnx.image_models) is trained on the synthetic image set
(on the GPU when there is one), exported to ONNX, and tuned once with the
largest loss; the speedup at a smaller loss is the best configuration on
the curve within it (every configuration on the curve was run and meets
its loss).  The peer, in the same run, is the exact program on the same
target; torch eager's time is shown for scale.

    .venv/bin/python benchmarks/approx_bench.py --targets aten --device cuda
    .venv/bin/python benchmarks/approx_bench.py --targets cpu --every 2 --techniques perforation,sampling
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

MODELS = ("lenet", "vgg", "resnet")


@dataclass
class Row:
    model: str
    target: str
    accuracy: float
    exact_ms: float
    torch_ms: float
    speedups: dict
    runs: int
    searched: int
    prediction_error: float
    tune_seconds: float


def make_model(name: str, width: int):
    from hpvm.frontend.onnx import image_models as zoo
    return {"lenet": lambda: zoo.lenet_color(), "vgg": lambda: zoo.vgg_small(width),
            "resnet": lambda: zoo.resnet_small(width)}[name]()


def torch_ms(model, x: np.ndarray, device: str, repeat: int = 10) -> float:
    import torch
    model = model.to(device)
    data = torch.from_numpy(x).to(device)
    times = []
    with torch.no_grad():
        for _ in range(repeat + 1):
            started = time.perf_counter()
            model(data)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
    model.cpu()
    return 1e3 * statistics.median(times[1:])


def bench(name: str, target: str, args) -> Row:
    from hpvm.frontend.onnx import image_models as zoo, load, testing
    from hpvm.tune.approx import accuracy, approx_tune
    images, labels = zoo.synthetic_images(args.train + args.images, seed=1)
    train_device = "cuda" if args.device.startswith("cuda") else "cpu"
    model = zoo.train(make_model(name, args.width), images[:args.train], labels[:args.train],
                      steps=args.steps, device=train_device)
    x, y = images[args.train:], labels[args.train:]
    module = load(testing.export(model, (3, 32, 32)))
    options = {"device": args.device} if target == "aten" else {}
    started = time.perf_counter()
    result = approx_tune(module, [target], {"x": x}, accuracy(y), loss=max(args.losses),
                         budget=args.budget, validate=args.validate,
                         techniques=tuple(args.techniques), every=tuple(args.every),
                         options=options, repeat=args.repeat, seed=0,
                         progress=lambda label, done, total: print(
                             f"  {name}/{target} {done}/{total} {label}", file=sys.stderr)
                         if done % 25 == 0 or done == total else None)
    seconds = time.perf_counter() - started
    curve = result.curve
    if args.svg_dir:
        Path(args.svg_dir).mkdir(parents=True, exist_ok=True)
        Path(args.svg_dir, f"approx_{name}_{target}.svg").write_text(
            curve.svg(f"{name} on {target}"))
    speedups = {loss: max(p.speedup for p in curve.points if curve.loss(p) <= loss)
                for loss in args.losses}
    return Row(name, target, curve.baseline_qos, 1e3 * curve.points[0].seconds,
               torch_ms(model, x, args.device if target == "aten" else "cpu"), speedups,
               result.empirical_runs, result.searched,
               result.agreement.get("mean_abs_error", float("nan")), seconds)


def format_table(rows: list[Row], losses) -> str:
    head = " | ".join(f"@{loss:g} pt" for loss in losses)
    lines = [f"| model | target | accuracy % | exact ms | torch ms | {head} | runs / searched "
             "| predicted-vs-measured error (pt) | tuning s |",
             "|" + "---|" * (8 + len(losses))]
    for r in rows:
        speeds = " | ".join(f"{r.speedups[loss]:.2f}x" for loss in losses)
        lines.append(f"| {r.model} | {r.target} | {r.accuracy:.1f} | {r.exact_ms:.2f} | "
                     f"{r.torch_ms:.2f} | {speeds} | {r.runs} / {r.searched} | "
                     f"{r.prediction_error:.2f} | {r.tune_seconds:.0f} |")
    return "\n".join(lines)


def machine() -> str:
    import torch
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (f"{platform.machine()}, {os.cpu_count()} cores visible{gpu}, Python "
            f"{platform.python_version()}, torch {torch.__version__}")


def _list(text: str, kind=str) -> list:
    return [kind(v.strip()) for v in text.split(",") if v.strip()]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=_list, default=list(MODELS))
    parser.add_argument("--targets", type=_list, default=["aten"])
    parser.add_argument("--device", default="cpu", help="aten's device (cpu, cuda)")
    parser.add_argument("--losses", type=lambda t: _list(t, float), default=[1.0, 2.0, 3.0])
    parser.add_argument("--images", type=int, default=1000, help="tuning images (1000)")
    parser.add_argument("--train", type=int, default=4000, help="training images (4000)")
    parser.add_argument("--steps", type=int, default=600, help="training steps (600)")
    parser.add_argument("--width", type=int, default=32, help="VGG / ResNet width (32)")
    parser.add_argument("--every", type=lambda t: _list(t, int), default=[2, 3, 4])
    parser.add_argument("--techniques", type=_list,
                        default=["fp16", "perforation", "sampling", "reduction-sampling"])
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--validate", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--svg-dir", help="draw each curve here")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = []
    for name in args.models:
        for target in args.targets:
            rows.append(bench(name, target, args))
            print(format_table(rows[-1:], args.losses), file=sys.stderr)
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/approx_bench.py",
                                                 *(sys.argv[1:] if argv is None else argv)])
    print(f"command: {command}")
    print(f"machine: {machine()}; {args.images} tuning images")
    print()
    print(format_table(rows, args.losses))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
