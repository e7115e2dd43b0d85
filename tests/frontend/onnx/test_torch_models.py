"""Models exported by torch.onnx.export (a LeNet-style CNN, a ResNet basic
block, an MLP; made here, nothing downloaded) run on interp, cpu and aten
after the default fusion and agree with PyTorch; a LeNet trained for a few
seconds on scikit-learn's digits keeps torch's accuracy on cpu and aten.

Tolerances: FP32 results within 1e-4 of torch's (different summation
orders); FP16 (aten precision=fp16) within FP16_TOLERANCE; accuracy on the
held-out digits within ACCURACY_MARGIN of torch's (FP16: twice that).
"""
import numpy as np
import pytest

from hpvm.frontend.onnx import load
from hpvm.ir.graph import TensorBody
from hpvm.runtime import compile

torch = pytest.importorskip("torch")
testing = pytest.importorskip("hpvm.frontend.onnx.testing")

MODELS = {
    "lenet": (testing.lenet, (1, 28, 28)),
    "resnet_block": (lambda: testing.resnet_block(8), (8, 6, 6)),
    "mlp": (lambda: testing.mlp(48), (3, 4, 4)),
}
FP16_TOLERANCE = 3e-2
"""atol and rtol of FP16 outputs against torch's FP32 ones: each op rounds
to 11 significant bits and these O(1) activations pass through at most
five layers."""
ACCURACY_MARGIN = 0.01
"""At most this fraction of the 397 held-out digits may be classified
differently in accuracy terms: 1% is 4 images."""


def exported(name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make()
    return model, load(testing.export(model, shape)), shape


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("target", ["interp", "cpu", "aten"])
def test_exported_model_matches_torch(name, target):
    model, module, shape = exported(name)
    x = np.random.default_rng(0).standard_normal((3,) + shape).astype(np.float32)
    out = compile(module, [target])(x=x)["y"]
    np.testing.assert_allclose(out, testing.torch_outputs(model, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_exported_model_in_fp16_on_aten_is_close_to_torch(name):
    model, module, shape = exported(name)
    x = np.random.default_rng(0).standard_normal((3,) + shape).astype(np.float32)
    out = compile(module, ["aten"], {"precision": "fp16"})(x=x)["y"]
    np.testing.assert_allclose(out, testing.torch_outputs(model, x), rtol=FP16_TOLERANCE,
                               atol=FP16_TOLERANCE)


def test_default_fusion_leaves_two_convs_in_the_resnet_block():
    """The second conv takes the block's input as its residual summand
    and the relu as its activation."""
    _, module, _ = exported("resnet_block")
    ops = sorted(n.body.op for n in module.root_graph.nodes if isinstance(n.body, TensorBody))
    assert ops == ["conv2d", "conv2d"]


def test_default_fusion_leaves_only_convs_pools_and_gemms_in_lenet():
    _, module, _ = exported("lenet")
    ops = [n.body.op for n in module.root_graph.nodes if isinstance(n.body, TensorBody)]
    assert ops == ["conv2d", "max_pool", "conv2d", "max_pool", "flatten", "gemm", "gemm",
                   "gemm"]


@pytest.fixture(scope="module")
def trained_lenet():
    """LeNet for 8x8 digits trained once per session run (about 2 s):
    (torch model, fused module, test images, test labels)."""
    pytest.importorskip("sklearn")
    images, labels = testing.digits()
    torch.manual_seed(0)
    model = testing.train(testing.lenet_digits(), images[:1400], labels[:1400], steps=300)
    return model, load(testing.export(model, (1, 8, 8))), images[1400:], labels[1400:]


def test_training_gives_a_useful_classifier(trained_lenet):
    model, _, images, labels = trained_lenet
    accuracy = (testing.torch_outputs(model, images).argmax(1) == labels).mean()
    assert accuracy > 0.85, f"torch accuracy {accuracy:.3f} after training"


@pytest.mark.parametrize("target,options,margin", [
    ("cpu", {}, ACCURACY_MARGIN),
    ("aten", {}, ACCURACY_MARGIN),
    ("aten", {"precision": "fp16"}, 2 * ACCURACY_MARGIN),
], ids=["cpu", "aten", "aten-fp16"])
def test_trained_lenet_keeps_torchs_accuracy(trained_lenet, target, options, margin):
    model, module, images, labels = trained_lenet
    expected = testing.torch_outputs(model, images).argmax(1)
    predicted = compile(module, [target], options)(x=images)["y"].argmax(1)
    torch_accuracy, accuracy = (expected == labels).mean(), (predicted == labels).mean()
    assert abs(accuracy - torch_accuracy) <= margin, (accuracy, torch_accuracy)
    assert (predicted == expected).mean() >= 1 - margin
