"""CNNs on aten (CUDA) against torch eager on the same GPU.

    python benchmarks/aten_cnn_bench.py [--models vgg,resnet] [--images 2000] [--width 64]

Each model (hpvm.frontend.onnx.image_models, untrained weights: speed
only) is exported to ONNX, loaded, and run exact (IEEE FP32: TF32 tensor
cores off), with aten's ``precision=tf32`` (convolutions and matrix
products on TF32 tensor cores), and with every node that takes a knob in
FP16.  Times are medians of 10 runs on inputs staged on the GPU
(``Executable.stage``), the copy of the logits back included.  The
peers, in the same run: the torch module eager in FP32 (PyTorch's
default: TF32 convolutions), and in FP16 with channels-last memory (the
fastest eager form).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.approx_support import markdown_table, median_ms, parse_list  # noqa: E402


def hpvm_ms(module, x: np.ndarray, knobs: dict, precision: str = "fp32") -> float:
    from hpvm.passes.approximate import apply_knobs
    from hpvm.runtime import compile
    exe = compile(apply_knobs(module, knobs), ["aten"], {"device": "cuda", "precision": precision})
    try:
        staged = exe.stage(x=x)
        return median_ms(lambda: exe(**staged), 10)
    finally:
        exe.close()


def torch_ms(model, x: np.ndarray, dtype, channels_last: bool) -> float:
    import torch
    model = model.to("cuda", dtype)
    data = torch.from_numpy(x).to("cuda", dtype)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        data = data.contiguous(memory_format=torch.channels_last)

    def run():
        model(data).float().cpu()
    with torch.no_grad():
        return median_ms(run, 10)


def row(name: str, images: int, width: int) -> list[str]:
    import torch
    from hpvm.frontend.onnx import image_models as zoo, load, testing
    from hpvm.tune.approx.knobs import approximable_nodes
    model = zoo.vgg_small(width) if name == "vgg" else zoo.resnet_small(width)
    module = load(testing.export(model, (3, 32, 32)))
    x = np.random.default_rng(0).standard_normal((images, 3, 32, 32)).astype(np.float32)
    exact = hpvm_ms(module, x, {})
    tf32 = hpvm_ms(module, x, {}, "tf32")
    half = hpvm_ms(module, x, {node: "fp16" for node in approximable_nodes(module)})
    eager = torch_ms(model, x, torch.float32, False)
    eager_half = torch_ms(model, x, torch.float16, True)
    return [f"{name}-{width}", f"{exact:.2f}", f"{tf32:.2f}", f"{half:.2f}", f"{eager:.2f}",
            f"{eager_half:.2f}", f"{eager / tf32:.2f}x", f"{eager_half / half:.2f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=parse_list, default=["vgg", "resnet"])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("aten_cnn_bench: needs a CUDA GPU")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{args.images} images")
    print(markdown_table(
        ["model", "hpvm exact (FP32) ms", "hpvm precision=tf32 ms", "hpvm all-FP16 ms",
         "torch FP32 (TF32 convs) ms", "torch FP16 channels-last ms",
         "torch FP32 / hpvm tf32", "torch FP16 / hpvm FP16"],
        [row(name, args.images, args.width) for name in args.models]))


if __name__ == "__main__":
    main()
