"""CNNs on a synthetic image set, for approximation tuning's tests and
benchmarks (no downloads): a LeNet, a VGG-style and a ResNet-style network
for 3x32x32 images of 10 classes, and the images.

The synthetic set: class ``c`` is a grating at angle ``c * 18`` degrees
with a random frequency, phase, colour and contrast, plus noise -- easy
for a CNN to learn to 80-90% in a few hundred steps, hard enough that approximations
cost accuracy.  Needs torch::

    images, labels = synthetic_images(2000)
    model = train(vgg_small(), images, labels, steps=400)
"""
from __future__ import annotations

import numpy as np

CLASSES = 10


def synthetic_images(count: int, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` float32 images [count, 3, size, size] in [0, 1] and int64
    labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, count)
    grid = np.arange(size, dtype=np.float32) / size
    rows, cols = np.meshgrid(grid, grid, indexing="ij")
    angle = labels * np.pi / CLASSES + rng.normal(0, 0.07, count)
    frequency = rng.uniform(3, 6, count)
    phase = rng.uniform(0, 2 * np.pi, count)
    along = (np.cos(angle)[:, None, None] * cols + np.sin(angle)[:, None, None] * rows)
    wave = np.sin(2 * np.pi * frequency[:, None, None] * along + phase[:, None, None])
    colour = rng.uniform(0.3, 1.0, (count, 3))
    contrast = rng.uniform(0.5, 1.0, count)
    images = 0.5 + 0.5 * contrast[:, None, None, None] * colour[:, :, None, None] * wave[:, None]
    images = images + rng.normal(0, 0.35, images.shape)
    return np.clip(images, 0, 1).astype(np.float32), labels.astype(np.int64)


def lenet_color(width: int = 6):
    """LeNet-5 for 3x32x32 images: conv5x5(width) relu maxpool,
    conv5x5(16) relu maxpool, fc 400-120-84-10 (the width scales the
    first layer)."""
    from torch import nn  # torch (optional, heavy)
    return nn.Sequential(
        nn.Conv2d(3, width, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, CLASSES)).eval()


def vgg_small(width: int = 32):
    """VGG-style (with batch norm, which wider ones need to train): three
    blocks of two conv3x3-bn-relu and a 2x2 max pool (width, 2*width,
    4*width channels), then fc 256-10."""
    from torch import nn  # torch (optional, heavy)
    layers, channels = [], 3
    for out in (width, 2 * width, 4 * width):
        for source in (channels, out):
            layers += [nn.Conv2d(source, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU()]
        layers.append(nn.MaxPool2d(2))
        channels = out
    layers += [nn.Flatten(), nn.Linear(channels * 16, 256), nn.ReLU(), nn.Linear(256, CLASSES)]
    return nn.Sequential(*layers).eval()


def resnet_small(width: int = 32):
    """ResNet-style: conv3x3-bn-relu, two basic blocks, a strided conv,
    two more blocks, global average pooling, fc."""
    from torch import nn  # torch (optional, heavy)

    class Block(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(channels), nn.ReLU(),
                nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(channels))

        def forward(self, x):
            return (self.body(x) + x).relu()

    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
        Block(width), Block(width),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(2 * width), nn.ReLU(),
        Block(2 * width), Block(2 * width),
        nn.AvgPool2d(16), nn.Flatten(), nn.Linear(2 * width, CLASSES)).eval()


def train(model, images: np.ndarray, labels: np.ndarray, steps: int = 400, batch: int = 64,
          seed: int = 0, device: str = "cpu"):
    """Train ``model`` with Adam on ``device``; returns it on the CPU in
    eval mode."""
    import torch  # torch (optional, heavy)
    torch.manual_seed(seed)
    model = model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    x = torch.from_numpy(images).to(device)
    y = torch.from_numpy(labels).to(device)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        order = torch.from_numpy(rng.permutation(len(x))[:batch]).to(device)
        loss = torch.nn.functional.cross_entropy(model(x[order]), y[order])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.cpu().eval()


def accuracy_of(model, images: np.ndarray, labels: np.ndarray) -> float:
    """Top-1 accuracy (percent) of a torch model."""
    import torch  # torch (optional, heavy)
    with torch.no_grad():
        predicted = model(torch.from_numpy(images)).argmax(1).numpy()
    return 100.0 * float(np.mean(predicted == labels))
