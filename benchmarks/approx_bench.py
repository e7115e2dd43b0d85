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

    def run():
        model(data)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    with torch.no_grad():
        milliseconds = median_ms(run, repeat)
    model.cpu()
    return milliseconds


def bench(name: str, target: str, args) -> Row:
    from hpvm.frontend.onnx import image_models as zoo, load, testing
    from hpvm.tune.approx import accuracy
    images, labels = zoo.synthetic_images(args.train + args.images, seed=1)
    train_device = "cuda" if args.device.startswith("cuda") else "cpu"
    model = zoo.train(make_model(name, args.width), images[:args.train], labels[:args.train],
                      steps=args.steps, device=train_device)
    x, y = images[args.train:], labels[args.train:]
    module = load(testing.export(model, (3, 32, 32)))
    options = {"device": args.device, "precision": args.precision} if target == "aten" else {}
    tuned = tune(module, target, {"x": x}, accuracy(y), f"{name}/{target}", args.svg_dir,
                 loss=max(args.losses), budget=args.budget, validate=args.validate,
                 techniques=tuple(args.techniques), every=tuple(args.every),
                 options=options, repeat=args.repeat)
    curve = tuned.result.curve
    speedups = tuned.speedups({loss: lambda p, loss=loss: curve.loss(p) <= loss
                               for loss in args.losses})
    return Row(name, target, curve.baseline_qos, 1e3 * curve.points[0].seconds,
               torch_ms(model, x, args.device if target == "aten" else "cpu"), speedups,
               tuned.result.empirical_runs, tuned.result.searched, tuned.prediction_error(),
               tuned.seconds)


def format_table(rows: list[Row], losses) -> str:
    columns = (["model", "target", "accuracy %", "exact ms", "torch ms"]
               + [f"@{loss:g} pt" for loss in losses]
               + ["runs / searched", "predicted-vs-measured error (pt)", "tuning s"])
    return markdown_table(columns, [
        [r.model, r.target, f"{r.accuracy:.1f}", f"{r.exact_ms:.2f}", f"{r.torch_ms:.2f}"]
        + [f"{r.speedups[loss]:.2f}x" for loss in losses]
        + [f"{r.runs} / {r.searched}", f"{r.prediction_error:.2f}", f"{r.tune_seconds:.0f}"]
        for r in rows])


def machine() -> str:
    import torch
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (f"{platform.machine()}, {os.cpu_count()} cores visible{gpu}, Python "
            f"{platform.python_version()}, torch {torch.__version__}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=parse_list, default=list(MODELS))
    parser.add_argument("--targets", type=parse_list, default=["aten"])
    parser.add_argument("--device", default="cpu", help="aten's device (cpu, cuda)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "tf32"),
                        help="aten's precision of the exact program (tf32: products on "
                        "TF32 tensor cores, PyTorch's default for convolutions)")
    parser.add_argument("--losses", type=lambda t: parse_list(t, float), default=[1.0, 2.0, 3.0])
    parser.add_argument("--images", type=int, default=1000, help="tuning images (1000)")
    parser.add_argument("--train", type=int, default=4000, help="training images (4000)")
    parser.add_argument("--steps", type=int, default=600, help="training steps (600)")
    parser.add_argument("--width", type=int, default=32, help="VGG / ResNet width (32)")
    parser.add_argument("--techniques", type=parse_list,
                        default=["fp16", "perforation", "sampling", "reduction-sampling"])
    parser.add_argument("--budget", type=int, default=None)
    add_tuning_arguments(parser, validate=20)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = run_all(args.models, args.targets, lambda name, target: bench(name, target, args),
                   lambda some: format_table(some, args.losses))
    print(f"command: {command_line('approx_bench.py', argv)}")
    print(f"machine: {machine()}; {args.images} tuning images")
    print()
    print(format_table(rows, args.losses))
    write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
