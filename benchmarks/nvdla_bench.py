"""NVDLA (emulated): accuracy of FP32 / FP16 / INT8 on networks trained on
scikit-learn's digits here, agreement with onnxruntime's own INT8
(quantize_static, same calibration data), and the cycle model's time per
batch on nv_full and nv_small.

    .venv/bin/python benchmarks/nvdla_bench.py [--batch 64] [--steps 400]

The networks (hpvm.frontend.onnx.testing.lenet_digits and resnet_digits)
train for ``--steps`` Adam steps on 1200 digits; the other 597 are the
held-out set.  Calibration: 400 training images.  Modelled times are the
cycle model's (plugins/nvdla/hpvm_nvdla/cost.py), not a measurement: no
NVDLA hardware here.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv=None) -> int:
    import torch
    from hpvm.frontend.onnx import import_model, testing
    from hpvm.interp import run_module
    from hpvm.runtime import compile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="batch of the modelled times")
    parser.add_argument("--steps", type=int, default=400, help="training steps")
    args = parser.parse_args(argv)
    train_images, train_labels, held, truth, calibration = testing.digits_split()
    print(f"command: .venv/bin/python benchmarks/nvdla_bench.py --batch {args.batch} "
          f"--steps {args.steps}\n")
    print("| network | FP32 (interp) | FP16 | INT8 | onnxruntime INT8 | top-1 agreement, INT8 vs "
          "onnxruntime INT8 | modelled ms/batch nv_full FP16 | nv_full INT8 | nv_small INT8 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, make in (("LeNet (digits)", testing.lenet_digits),
                       ("ResNet (digits)", testing.resnet_digits)):
        torch.manual_seed(0)
        model = testing.train(make(), train_images, train_labels, steps=args.steps)
        proto = testing.export(model, (1, 8, 8))
        module = import_model(proto)

        def accuracy(logits):
            return float((np.argmax(logits, 1) == truth).mean() * 100)
        row, times = [accuracy(run_module(module, {"x": held})["y"])], []
        batch = np.resize(held, (args.batch,) + held.shape[1:])
        ours = None
        for config, precision in (("nv_full", "fp16"), ("nv_full", "int8"), ("nv_small", "int8")):
            options = {"config": config, "precision": precision}
            if precision == "int8":
                options["calibration"] = calibration
            exe = compile(module, ["nvdla"], options=options)
            if config == "nv_full":
                out = exe(x=held)["y"]
                row.append(accuracy(out))
                ours = out if precision == "int8" else ours
            exe(x=batch)
            times.append(sum(r.seconds for r in exe.report().records) * 1e3)
        theirs = testing.onnxruntime_int8(proto, calibration, {"x": held})
        agreement = float((np.argmax(ours, 1) == np.argmax(theirs, 1)).mean() * 100)
        print(f"| {name} | {row[0]:.2f}% | {row[1]:.2f}% | {row[2]:.2f}% | "
              f"{accuracy(theirs):.2f}% | {agreement:.2f}% | "
              + " | ".join(f"{t:.4f}" for t in times) + " |")
    print(f"\nThe cycle model on benchmarks/onnx_bench.py's models, batch {args.batch}:\n")
    print("| model | configuration | precision | modelled ms | MACs | compute cycles | "
          "memory cycles | layers |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    from hpvm.registry import get_registry
    from hpvm.runtime.sizes import node_sizes
    from hpvm.target import NodeRef
    target = get_registry().target("nvdla").target
    for name, model, shape in (("LeNet-5", testing.lenet(), (1, 28, 28)),
                               ("ResNet block (32 ch, 16x16)", testing.resnet_block(32),
                                (32, 16, 16))):
        module = import_model(testing.export(model, shape))
        x = np.zeros((args.batch,) + shape, np.float32)
        nodes = [NodeRef(module.root, n.name) for n in module.root_graph.nodes]  # all claimed
        for config, precision in (("nv_full", "fp16"), ("nv_full", "int8"), ("nv_small", "int8")):
            estimate = target.estimate(module, nodes,
                                       {"config": config, "precision": precision},
                                       sizes=node_sizes(module, {"x": x}))
            print(f"| {name} | {config} | {precision} | {estimate['seconds'] * 1e3:.3f} | "
                  f"{estimate['macs']:.3g} | {estimate['compute_cycles']:.3g} | "
                  f"{estimate['memory_cycles']:.3g} | {estimate['layers']} |")
    return 0



if __name__ == "__main__":
    sys.exit(main())
