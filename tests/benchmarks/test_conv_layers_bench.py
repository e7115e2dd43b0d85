"""conv_layers_bench pairs hpvm's convolutions with onnxruntime's profiled
ones, in model order, on a small block (its functions, not a model of real
size)."""
import numpy as np
import pytest

from benchmarks.conv_layers_bench import by_kind, conv_shapes, hpvm_layers, onnxruntime_layers

torch = pytest.importorskip("torch")


def test_each_side_times_its_convolutions_in_model_order(tmp_path):
    from hpvm.frontend.onnx import testing
    from hpvm.frontend.torch import load
    model = testing.resnet_block(8).eval()
    x = np.random.default_rng(0).standard_normal((1, 8, 6, 6)).astype(np.float32)
    module = load(model, (torch.from_numpy(x),))
    convs = conv_shapes(module)
    assert [c[1:4] for c in convs] == [((1, 8, 6, 6), (8, 8, 3, 3), (1, 1))] * 2
    assert all(c[4] == 2 * 8 * 36 * 8 * 9 for c in convs)
    call, nodes = hpvm_layers(module, x, 1, 3)
    assert call > 0 and {c[0] for c in convs} <= set(nodes)
    ort_call, ort_nodes = onnxruntime_layers(testing.export(model, (8, 6, 6)), x, 1, 3, tmp_path)
    assert ort_call > 0 and [k for _, k, _ in ort_nodes].count("Conv") + [
        k for _, k, _ in ort_nodes].count("FusedConv") == 2
    assert not list(tmp_path.iterdir())  # the profile is removed


def test_kinds_are_summed_largest_first():
    pairs = [("add", 0.001), ("conv2d", 0.0015), ("view", 1e-7), ("conv2d", 0.0005)]
    assert by_kind(pairs) == "conv2d 2.00, add 1.00"
