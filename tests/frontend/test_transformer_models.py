"""Transformers written the way their authors write them (plain torch.nn,
nothing downloaded): a BERT-style encoder, a ViT-tiny and a GPT-style
decoder block with a causal mask, each through torch.export and through
the file torch.onnx.export writes, on interp, cpu, aten, movidius
(where OpenVINO is installed) and gpu_opencl (where an OpenCL device is),
against PyTorch.  Ops a target does not
take run on the cpu beside it."""
import numpy as np
import pytest

from hpvm.runtime import compile
from hpvm.testing import usable_targets

torch = pytest.importorskip("torch")
nn = torch.nn
try:
    import openvino  # noqa: F401 - movidius emulates on OpenVINO's CPU device
    TARGETS = ("interp", "cpu", "aten", "movidius")
except ImportError:
    TARGETS = ("interp", "cpu", "aten")
TARGETS += tuple(usable_targets(("gpu_opencl",)))


class Bert(nn.Module):
    """Token and position embeddings, two post-norm encoder layers (gelu),
    a tanh pooler over the first token."""

    def __init__(self, vocab=50, width=32, heads=4, layers=2, length=8):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.randn(1, length, width) * 0.1)
        self.norm = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, activation="gelu",
                                           batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(width, width)

    def forward(self, ids):
        hidden = self.encoder(self.norm(self.tokens(ids) + self.positions))
        return torch.tanh(self.pooler(hidden[:, 0]))


class Vit(nn.Module):
    """16 patches of 4x4 by a strided convolution, a class token, pre-norm
    attention blocks, a linear head."""

    def __init__(self, width=32, heads=4, depth=2, classes=10):
        super().__init__()
        self.patches = nn.Conv2d(3, width, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, width) * 0.1)
        self.positions = nn.Parameter(torch.randn(1, 17, width) * 0.1)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(width, heads, 2 * width, activation="gelu",
                                       batch_first=True, norm_first=True, dropout=0.0)
            for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, images):
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


class GptBlock(nn.Module):
    """Causal self-attention written out (q, k, v split, heads, a
    triangular mask by masked_fill, softmax), then an MLP; pre-norm."""

    def __init__(self, width=32, heads=4, length=8):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width))
        self.register_buffer("mask", torch.tril(torch.ones(length, length)).bool())

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        heads = [t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v)]
        scores = heads[0] @ heads[1].transpose(-2, -1) / (width // self.heads) ** 0.5
        scores = scores.masked_fill(~self.mask[:length, :length], float("-inf"))
        attended = (scores.softmax(dim=-1) @ heads[2]).transpose(1, 2).reshape(
            batch, length, width)
        x = x + self.out(attended)
        return x + self.mlp(self.norm2(x))


class RmsNorm(nn.Module):
    """As LLaMA writes it."""

    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.rand(width) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SdpaDecoder(nn.Module):
    """Attention through F.scaled_dot_product_attention(is_causal), an RMS
    norm written out, silu."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.norm = RmsNorm(width)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, -1).permute(0, 2, 1, 3)
                   for t in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + nn.functional.silu(y.permute(0, 2, 1, 3).reshape(batch, length, width))


def example(name):
    generator = torch.Generator().manual_seed(0)
    if name == "bert":
        return torch.randint(0, 50, (2, 8), generator=generator)
    if name == "vit":
        return torch.randn(2, 3, 16, 16, generator=generator)
    return torch.randn(2, 8, 32, generator=generator)


MODELS = {"bert": Bert, "vit": Vit, "gpt_block": GptBlock, "sdpa_decoder": SdpaDecoder}


def made(name):
    torch.manual_seed(0)
    return MODELS[name]().eval()


def through_onnx(model, x):
    from hpvm.frontend.onnx import load
    from hpvm.frontend.onnx.testing import export_example
    return load(export_example(model, x))


def through_export(model, x):
    from hpvm.frontend.torch import load
    return load(model, (x,), input_names=("x",))


@pytest.mark.parametrize("route", ["export", "onnx"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_transformer_matches_torch(name, route):
    model, x = made(name), example(name)
    with torch.no_grad():
        expected = model(x).numpy()
    module = (through_export if route == "export" else through_onnx)(model, x)
    for target in TARGETS:
        out = compile(module, [target])(x=x.numpy())
        got = next(iter(out.values()))
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} via {route} on {target}")
