"""PyTorch models without an ONNX file: hpvm.frontend.torch.load (through
torch.export) and torch.compile(backend="hpvm") give eager's outputs, on the
reference interpreter and the cpu target; operators hpvm lacks are refused
by name (load) or left to PyTorch (torch.compile)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hpvm.errors import ParseError  # noqa: E402
from hpvm.frontend.onnx import testing  # noqa: E402
from hpvm.frontend.torch import dynamo, load  # noqa: E402
from hpvm.runtime import compile  # noqa: E402


class MobileBlock(torch.nn.Module):
    """A MobileNet-style block: depthwise 3x3, pointwise 1x1, batchnorm,
    ReLU6, global average pooling and a classifier."""

    def __init__(self, channels=8, classes=5):
        super().__init__()
        self.depthwise = torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.pointwise = torch.nn.Conv2d(channels, 2 * channels, 1)
        self.bn2 = torch.nn.BatchNorm2d(2 * channels)
        self.classifier = torch.nn.Linear(2 * channels, classes)

    def forward(self, x):
        x = torch.nn.functional.relu6(self.bn1(self.depthwise(x)))
        x = torch.nn.functional.relu6(self.bn2(self.pointwise(x)))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


class WithLogGamma(torch.nn.Module):
    """conv, an operator hpvm lacks (lgamma), conv."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 4, 3)
        self.second = torch.nn.Conv2d(4, 2, 3)

    def forward(self, x):
        return torch.relu(self.second(torch.lgamma(self.first(x))))


def model(name):
    torch.manual_seed(0)
    if name == "lenet":
        return testing.lenet().eval(), (3, 1, 28, 28)
    if name == "resnet":
        return testing.resnet_block(8).eval(), (3, 8, 12, 12)
    block = MobileBlock().eval()
    for bn in (block.bn1, block.bn2):  # statistics that are not the identity
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return block, (3, 8, 10, 10)


def eager(net, x):
    with torch.no_grad():
        return net(x).numpy()


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("name", ["lenet", "resnet", "mobile"])
def test_load_gives_eagers_outputs(name, target):
    net, shape = model(name)
    x = torch.randn(shape)
    module = load(net, (x,))
    inputs = [p.name for p in module.root_graph.params if p.direction == "in"]
    assert len(inputs) == 1  # weights are constants, not inputs
    exe = compile(module, [target])
    for seed in range(2):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        np.testing.assert_allclose(exe(**{inputs[0]: x.numpy()})["y"], eager(net, x),
                                   rtol=1e-4, atol=1e-5)


class ChannelsLast(torch.nn.Module):
    """Channels-last input moved to NCHW and back, reflect and zero
    padding, in-place arithmetic and a matmul: what Keras's torch backend
    and hand-written models emit around convolutions."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.weight = torch.nn.Parameter(torch.randn(4, 2))

    def forward(self, x):
        y = torch.nn.functional.pad(x.permute(0, 3, 1, 2), (1, 1, 2, 0), mode="reflect")
        y = self.conv(torch.nn.functional.pad(y, (0, 1, 1, 0)))
        y = y.transpose(1, 3).contiguous()
        y.mul_(2.0)
        return torch.matmul(y, self.weight).mean(dim=(1, 2))


def test_layout_changes_padding_and_in_place_ops_translate():
    torch.manual_seed(0)
    net = ChannelsLast().eval()
    x = torch.randn(2, 7, 6, 3)
    module = load(net, (x,))
    exe = compile(module, ["cpu"])
    name = next(p.name for p in module.root_graph.params if p.direction == "in")
    np.testing.assert_allclose(exe(**{name: x.numpy()})["y"], eager(net, x), rtol=1e-4, atol=1e-5)


def test_load_names_every_operator_it_lacks():
    net = WithLogGamma().eval()
    with pytest.raises(ParseError, match=r"aten\.lgamma: operator not supported by hpvm"):
        load(net, (torch.randn(1, 3, 8, 8),))


@pytest.fixture
def compiled_graphs(monkeypatch):
    """The GraphModules the backend returned."""
    made = []
    original = dynamo.compile_graph

    def recording(graph_module, example_inputs, **kwargs):
        result = original(graph_module, example_inputs, **kwargs)
        made.append(result)
        return result
    monkeypatch.setattr(dynamo, "compile_graph", recording)
    torch._dynamo.reset()
    yield made
    torch._dynamo.reset()


def pieces(graph_module):
    return [m for m in graph_module.modules() if isinstance(m, dynamo.HpvmPiece)]


@pytest.mark.parametrize("name", ["lenet", "resnet", "mobile"])
def test_torch_compile_runs_the_model_on_hpvm_and_compiles_once(name, compiled_graphs):
    from hpvm.frontend.torch import backend
    net, shape = model(name)
    fast = torch.compile(net, backend=backend, options={"targets": ["cpu"]})
    for seed in range(3):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            out = fast(x)
        assert isinstance(out, torch.Tensor)
        np.testing.assert_allclose(out.numpy(), eager(net, x), rtol=1e-4, atol=1e-5)
    assert len(compiled_graphs) == 1  # the later calls reuse the compiled graph
    assert len(pieces(compiled_graphs[0])) == 1  # the whole model is one hpvm program


def test_torch_compile_leaves_missing_operators_to_pytorch(compiled_graphs):
    from hpvm.frontend.torch import backend
    net = WithLogGamma().eval()
    fast = torch.compile(net, backend=backend, options={"targets": ["cpu"]})
    x = torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        np.testing.assert_allclose(fast(x).numpy(), eager(net, x), rtol=1e-4, atol=1e-5)
    assert len(pieces(compiled_graphs[0])) == 2  # the convolutions; lgamma stays in torch


def test_explain_counts_the_operators_hpvm_runs_and_says_why_the_rest_stay():
    from hpvm.frontend.torch import explain
    torch._dynamo.reset()
    reports = explain(WithLogGamma().eval(), (torch.randn(2, 3, 9, 9),))
    assert len(reports) == 1
    report = reports[0]
    assert report.on_hpvm == report.operators - 1
    assert list(report.left) == [("aten.lgamma", "hpvm has no translation")]
    assert "PyTorch runs aten.lgamma (hpvm has no translation)" in str(report)


class OnlyLogGamma(torch.nn.Module):
    def forward(self, x):
        return torch.lgamma(x)


def test_a_graph_pytorch_runs_whole_warns_and_logs(caplog):
    from hpvm.frontend.torch import explain
    torch._dynamo.reset()
    with caplog.at_level("INFO", logger="hpvm.frontend.torch"):
        with pytest.warns(UserWarning, match="PyTorch runs the whole graph"):
            reports = explain(OnlyLogGamma(), (torch.rand(4) + 1,))
    assert reports[0].on_hpvm == 0
    assert "hpvm runs 0 of 1 operators" in caplog.text


def test_the_backend_is_registered_by_name():
    assert "hpvm" in torch._dynamo.list_backends()


class Noisy(torch.nn.Module):
    def forward(self, x):
        return x + torch.randn(x.shape)


def test_random_operators_are_not_frozen_into_constants():
    with pytest.raises(ParseError, match=r"aten\.randn: operator not supported by hpvm"):
        load(Noisy().eval(), (torch.randn(2, 3),))
