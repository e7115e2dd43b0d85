"""Trained networks on NVDLA: a LeNet and a small ResNet trained on
scikit-learn's digits here, in FP32 (the interpreter), FP16 and INT8 on
the emulator; INT8 within a point of FP32, and agreeing with onnxruntime
running the same model quantised by onnxruntime's quantize_static on the
same calibration data."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from hpvm.frontend.onnx import import_model, testing  # noqa: E402
from hpvm.interp import run_module  # noqa: E402
from hpvm.runtime import compile  # noqa: E402


@pytest.fixture(scope="module", params=["lenet", "resnet"])
def trained(request):
    train_images, train_labels, images, labels, calibration = testing.digits_split()
    torch.manual_seed(0)
    model = testing.lenet_digits() if request.param == "lenet" else testing.resnet_digits()
    model = testing.train(model, train_images, train_labels, steps=400)
    return request.param, testing.export(model, (1, 8, 8)), calibration, images, labels


def accuracy(logits, labels):
    return float((np.argmax(logits, axis=1) == labels).mean() * 100)


def test_fp16_and_int8_keep_the_accuracy(trained):
    name, proto, calibration, images, labels = trained
    module = import_model(proto)
    fp32 = accuracy(run_module(module, {"x": images})["y"], labels)
    fp16_exe = compile(module, ["nvdla"])
    int8_exe = compile(module, ["nvdla"], options={"precision": "int8",
                                                   "calibration": calibration})
    assert set(fp16_exe.placement.targets.values()) == {"nvdla"}
    fp16 = accuracy(fp16_exe(x=images)["y"], labels)
    int8 = accuracy(int8_exe(x=images)["y"], labels)
    print(f"{name}: FP32 {fp32:.2f}%  FP16 {fp16:.2f}%  INT8 {int8:.2f}%")
    assert fp32 > 90
    assert abs(fp16 - fp32) <= 0.5
    assert int8 >= fp32 - 1.0


def test_int8_agrees_with_onnxruntimes_static_quantisation(trained):
    pytest.importorskip("onnxruntime.quantization")
    name, proto, calibration, images, labels = trained
    theirs = testing.onnxruntime_int8(proto, calibration, {"x": images})
    exe = compile(import_model(proto), ["nvdla"], options={"precision": "int8",
                                                           "calibration": calibration})
    ours = exe(x=images)["y"]
    agreement = float((np.argmax(ours, 1) == np.argmax(theirs, 1)).mean() * 100)
    print(f"{name}: top-1 agreement with onnxruntime INT8 {agreement:.2f}%, accuracy "
          f"hpvm {accuracy(ours, labels):.2f}% onnxruntime {accuracy(theirs, labels):.2f}%")
    assert agreement >= 97
