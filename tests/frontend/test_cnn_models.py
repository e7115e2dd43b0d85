"""The CNNs of the models benchmark (ResNet-18, ResNet-50, MobileNetV2 as
torchvision writes them, benchmarks/models.py; nothing downloaded), whole,
on a small image: through torch.export and through the file
torch.onnx.export writes, on interp, cpu, aten and movidius (where
OpenVINO is installed), against PyTorch."""
import numpy as np
import pytest

from hpvm.runtime import compile

torch = pytest.importorskip("torch")
from benchmarks.models import MODELS  # noqa: E402 - needs torch

try:
    import openvino  # noqa: F401 - movidius emulates on OpenVINO's CPU device
    TARGETS = ("interp", "cpu", "aten", "movidius")
except ImportError:
    TARGETS = ("interp", "cpu", "aten")
SIZE = 64
"""Pixels per side: the networks are whole (every layer and stride); a
small image keeps the interpreter quick."""


@pytest.mark.parametrize("route", ["export", "onnx"])
@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenetv2"])
def test_cnn_matches_torch(name, route):
    model, _ = MODELS[name]()
    x = torch.randn(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x).numpy()
    if route == "export":
        from hpvm.frontend.torch import load
        module = load(model, (x,), input_names=("x",))
    else:
        from hpvm.frontend.onnx import load
        from hpvm.frontend.onnx.testing import export_example
        module = load(export_example(model, x))
    for target in TARGETS:
        got = next(iter(compile(module, [target])(x=x.numpy()).values()))
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4,
                                   err_msg=f"{name} via {route} on {target}")
