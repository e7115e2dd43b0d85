"""Models exported by torch.onnx.export run on hpvm targets and agree with
PyTorch; a LeNet trained for a few seconds on the digits data set keeps its
accuracy through the ONNX front end, fusion and the cpu target."""
import numpy as np
import pytest

from hpvm.frontend.onnx import load
from hpvm.passes import run_pipeline
from hpvm.runtime import compile

torch = pytest.importorskip("torch")
testing = pytest.importorskip("hpvm.frontend.onnx.testing")

MODELS = {
    "lenet": (testing.lenet, (1, 28, 28)),
    "resnet_block": (lambda: testing.resnet_block(8), (8, 6, 6)),
    "mlp": (lambda: testing.mlp(48), (3, 4, 4)),
}


def fused(module):
    import hpvm.passes.fold_tensor_constants  # noqa: F401 (registers the passes)
    import hpvm.passes.fuse_ops  # noqa: F401
    return run_pipeline(module, "fold-tensor-constants,fuse-ops", verify_each=True)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("target", ["interp", "cpu", "aten"])
def test_exported_model_matches_torch(name, target):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make()
    x = np.random.default_rng(0).standard_normal((3,) + shape).astype(np.float32)
    module = fused(load(testing.export(model, shape)))
    out = compile(module, [target])(x=x)["y"]
    np.testing.assert_allclose(out, testing.torch_outputs(model, x), rtol=1e-4, atol=1e-4)


def test_fusion_leaves_no_batchnorm_or_relu_in_the_resnet_block():
    module = fused(load(testing.export(testing.resnet_block(8), (8, 6, 6))))
    ops = sorted(n.body.op for n in module.root_graph.nodes if hasattr(n.body, "op"))
    assert ops == ["add", "conv2d", "conv2d", "relu"]


def test_trained_lenet_keeps_its_accuracy_on_cpu():
    pytest.importorskip("sklearn")
    images, labels = testing.digits()
    train_x, train_y, test_x, test_y = images[:1400], labels[:1400], images[1400:], labels[1400:]
    torch.manual_seed(0)
    model = testing.train(testing.lenet_digits(), train_x, train_y, steps=300)
    expected = testing.torch_outputs(model, test_x).argmax(1)
    module = fused(load(testing.export(model, (1, 8, 8))))
    predicted = compile(module, ["cpu"])(x=test_x)["y"].argmax(1)
    accuracy = (predicted == test_y).mean()
    assert (predicted == expected).mean() > 0.99
    assert accuracy > 0.85, f"accuracy {accuracy:.3f} after training"
