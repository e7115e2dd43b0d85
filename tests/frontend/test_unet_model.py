"""A U-Net-like model written as its authors write it (two levels: conv
blocks, max pooling, upsampling by nearest and bilinear interpolation,
concatenated skips, a 1-D convolution head over rows), through
torch.export and through torch.onnx.export, on interp and cpu, against
PyTorch."""
import numpy as np
import pytest

from hpvm.runtime import compile

torch = pytest.importorskip("torch")
nn = torch.nn


def block(inputs, outputs):
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1), nn.BatchNorm2d(outputs),
                         nn.ReLU(), nn.Conv2d(outputs, outputs, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.down1, self.down2 = block(3, width), block(width, 2 * width)
        self.bottom = block(2 * width, 2 * width)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.merge2, self.merge1 = block(4 * width, width), block(2 * width, width)
        self.rows = nn.Conv1d(width, 2, 3, padding=1)

    def forward(self, x):
        first = self.down1(x)
        second = self.down2(nn.functional.max_pool2d(first, 2))
        bottom = self.bottom(nn.functional.max_pool2d(second, 2))
        second = self.merge2(torch.cat([self.up2(bottom), second], dim=1))
        first = self.merge1(torch.cat([self.up1(second), first], dim=1))
        return self.rows(first.mean(dim=2))


def made():
    torch.manual_seed(0)
    model = UNet().eval()
    with torch.no_grad():  # running statistics that are not the identity
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
    return model


def through_onnx(model, x):
    from hpvm.frontend.onnx import load
    from hpvm.frontend.onnx.testing import export_example
    return load(export_example(model, x))


def through_export(model, x):
    from hpvm.frontend.torch import load
    return load(model, (x,), input_names=("x",))


@pytest.mark.parametrize("route", ["export", "onnx"])
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_unet_matches_torch(route, target):
    model = made()
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x).numpy()
    module = (through_export if route == "export" else through_onnx)(model, x)
    got = next(iter(compile(module, [target])(x=x.numpy()).values()))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
