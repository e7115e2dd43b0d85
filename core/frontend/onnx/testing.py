"""Small models made locally, for tests and benchmarks (no downloads): a
LeNet-style CNN, a ResNet basic block and an MLP, defined in PyTorch and
exported with ``torch.onnx.export``; and training on scikit-learn's bundled
digits data set (8x8 images; ``lenet_digits`` takes them as they are) for
tests where accuracy matters (``digits_split``), and onnxruntime's static
INT8 quantisation as a peer (``onnxruntime_int8``).  Needs torch (and
scikit-learn for the data)::

    model = lenet()                              # a torch.nn.Module
    proto = export(model, (1, 28, 28))           # onnx.ModelProto, batch "N"
    images, labels = digits()
    train(lenet_digits(), images, labels, steps=300)
"""
from __future__ import annotations

import io
import tempfile
import warnings
from pathlib import Path

import numpy as np


def lenet():
    """LeNet-5 for 1x28x28 inputs: conv5x5(6, pad 2) relu maxpool,
    conv5x5(16) relu maxpool, fc 400-120-84-10 with relu."""
    from torch import nn  # torch (optional, heavy)
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10)).eval()


def lenet_digits():
    """A LeNet-style CNN for the 8x8 digits: conv3x3(8, pad 1) relu
    maxpool, conv3x3(16, pad 1) relu maxpool, fc 64-32-10 with relu."""
    from torch import nn  # torch (optional, heavy)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).eval()


def resnet_block(channels: int = 32):
    """A ResNet basic block: conv3x3-bn-relu-conv3x3-bn, plus the input,
    relu; in eval mode with non-trivial batch-norm statistics."""
    # torch (optional, heavy)
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + x)

    block = BasicBlock()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for bn in (block.bn1, block.bn2):
            bn.running_mean.uniform_(-0.2, 0.2, generator=generator)
            bn.running_var.uniform_(0.5, 1.5, generator=generator)
            bn.weight.uniform_(0.5, 1.5, generator=generator)
            bn.bias.uniform_(-0.2, 0.2, generator=generator)
    return block.eval()


def resnet_digits():
    """A small ResNet for the 8x8 digits: conv3x3(8)-bn-relu, one basic
    block (resnet_block(8)), 2x2 average pooling, fc 128-10."""
    from torch import nn  # torch (optional, heavy)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         resnet_block(8), nn.AvgPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10)).eval()


def mlp(inputs: int = 64, hidden: int = 64, classes: int = 10):
    """inputs -> hidden -> hidden -> classes with relu, then softmax."""
    from torch import nn  # torch (optional, heavy)
    return nn.Sequential(nn.Flatten(), nn.Linear(inputs, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, classes),
                         nn.Softmax(dim=1)).eval()


def export(model, input_shape: tuple, opset: int = 17):
    """``model`` as an onnx.ModelProto with input ``x`` of shape
    [N, *input_shape] (N dynamic) and output ``y``."""
    # torch (optional, heavy), onnx (heavy)
    import onnx
    import torch
    example = torch.zeros((2,) + tuple(input_shape))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buffer, dynamo=False, opset_version=opset,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    return onnx.load_from_string(buffer.getvalue())


def export_example(model, example, opset: int = 17):
    """``model`` as an onnx.ModelProto traced on the tensor ``example``
    (fixed sizes), with input ``x`` and output ``y``."""
    # torch (optional, heavy), onnx (heavy)
    import onnx
    import torch
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buffer, dynamo=False, opset_version=opset,
                          input_names=["x"], output_names=["y"])
    return onnx.load_from_string(buffer.getvalue())


def digits(size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as float32 images [n, 1, size, size] in [0, 1]
    (8x8 scaled up by pixel repetition and centred) and int64 labels."""
    from sklearn.datasets import load_digits  # scikit-learn (optional)
    data = load_digits()
    images = data.images.astype(np.float32) / 16.0
    scale = size // 8
    images = np.kron(images, np.ones((scale, scale), np.float32))
    margin = size - 8 * scale
    images = np.pad(images, ((0, 0), (margin // 2, margin - margin // 2),
                             (margin // 2, margin - margin // 2)))
    return images[:, None], data.target.astype(np.int64)


def train(model, images: np.ndarray, labels: np.ndarray, steps: int = 300,
          batch: int = 64, seed: int = 0):
    """Train ``model`` (logits out) with Adam for ``steps`` mini-batches (a
    few seconds for LeNet on digits); returns it in eval mode."""
    import torch  # torch (optional, heavy)
    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    # One thread: these models are tiny, and torch's thread pool only spins
    # against the other processes of a busy machine.
    torch.set_num_threads(1)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = torch.from_numpy(images), torch.from_numpy(labels)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        order = torch.from_numpy(rng.permutation(len(x))[:batch])
        loss = torch.nn.functional.cross_entropy(model(x[order]), y[order])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.set_num_threads(threads)
    return model.eval()


def torch_outputs(model, x: np.ndarray) -> np.ndarray:
    import torch  # torch (optional, heavy)
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def digits_split(train_size: int = 1200, calibration_size: int = 400, seed: int = 0):
    """The digits shuffled once: (train images, train labels, held-out
    images, held-out labels, calibration batches of 100 training images as
    ``[{"x": batch}, ...]``)."""
    images, labels = digits()
    order = np.random.default_rng(seed).permutation(len(images))
    images, labels = images[order], labels[order]
    calibration = [{"x": images[i:i + 100]} for i in range(0, calibration_size, 100)]
    return (images[:train_size], labels[:train_size], images[train_size:],
            labels[train_size:], calibration)


def onnxruntime_int8(proto, calibration: list[dict], inputs: dict) -> np.ndarray:
    """``proto`` quantised by onnxruntime's ``quantize_static`` (QDQ,
    per-channel INT8 weights, INT8 activations) on ``calibration`` batches,
    run on ``inputs``: the first output."""
    # onnxruntime (optional), onnx (heavy)
    import onnx
    import onnxruntime
    from onnxruntime import quantization

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter(calibration)

        def get_next(self):
            return next(self.batches, None)

    with tempfile.TemporaryDirectory() as folder:
        source, quantised = Path(folder) / "model.onnx", Path(folder) / "model.int8.onnx"
        onnx.save(proto, source)
        quantization.quantize_static(str(source), str(quantised), Reader(),
                                     quant_format=quantization.QuantFormat.QDQ, per_channel=True,
                                     activation_type=quantization.QuantType.QInt8,
                                     weight_type=quantization.QuantType.QInt8)
        session = onnxruntime.InferenceSession(str(quantised), providers=["CPUExecutionProvider"])
        return session.run(None, inputs)[0]
