"""Approximation knobs on aten: the perforation, sampling and fill ops
compute what the reference does (CPU, and CUDA where PyTorch sees a GPU),
a node of precision fp16 computes in half precision, and an int8 node
quantises its operands as the reference does (through cuBLAS's integer
GEMM for a matrix product by constant weights on CUDA)."""
import dataclasses

import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.testing import (
    APPROXIMATION_CASES, INT8_CASES, approximation_case, int8_case, single_op_module,
)
from hpvm.passes.approximate import apply_knobs
from hpvm.runtime import compile

torch = pytest.importorskip("torch")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
FP16_TOLERANCE = 2e-2
"""As test_aten_target's: O(1) inputs, at most 36 products per result."""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(APPROXIMATION_CASES))
def test_approximation_matches_the_reference(name, device):
    module, inputs, _ = approximation_case(name)
    out = compile(module, ["aten"], {"device": device})(**inputs)["y"]
    np.testing.assert_allclose(out, run_module(module, inputs)["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_an_fp16_node_computes_in_half_precision(device):
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32),
              "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)}
    module = single_op_module("conv2d", inputs, {"padding": (1, 1, 1, 1)},
                              attributes={"precision": "fp16"})
    out = compile(module, ["aten"], {"device": device})(**inputs)["y"]
    exact = TENSOR_OPS["conv2d"].evaluate(inputs, {"padding": (1, 1, 1, 1)})["y"]
    emulated = run_module(module, inputs)["y"]
    assert not np.array_equal(emulated, exact)
    np.testing.assert_allclose(out, emulated, rtol=FP16_TOLERANCE, atol=FP16_TOLERANCE)
    np.testing.assert_allclose(out, exact, rtol=FP16_TOLERANCE, atol=FP16_TOLERANCE)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(INT8_CASES))
def test_an_int8_node_quantises_like_the_reference(name, device):
    module, inputs = int8_case(name)
    exe = compile(module, ["aten"], {"device": device})
    out = exe(**inputs)["y"]
    np.testing.assert_allclose(out, run_module(module, inputs)["y"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(exe(**inputs)["y"], out)  # the cached weights agree


@pytest.mark.parametrize("device", DEVICES)
def test_perforation_fill_matches_the_reference_for_every_pattern_and_size(device):
    from hpvm_aten.ops import perforation_fill
    from hpvm.ir.tensor_ops.perforation import kept_length
    rng = np.random.default_rng(3)
    for every in (2, 3, 4):
        for offset in range(every):
            for size in range(1, 10):
                for axis in (2, 3):
                    shape = [2, 3, 4, 4]
                    shape[axis] = kept_length(size, every, offset)
                    x = rng.standard_normal(shape).astype(np.float32)
                    attrs = {"axis": axis, "every": every, "offset": offset, "size": size}
                    expected = TENSOR_OPS["perforation_fill"].evaluate({"x": x}, attrs)["y"]
                    out_shape = list(shape)
                    out_shape[axis] = size
                    for layout in (torch.contiguous_format, torch.channels_last):
                        data = torch.from_numpy(x).to(device).contiguous(memory_format=layout)
                        got = perforation_fill({"x": data}, attrs, tuple(out_shape))
                        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-6,
                                                   err_msg=f"{attrs} {layout}")


@pytest.mark.parametrize("device", DEVICES)
def test_a_perforated_fp16_conv_and_its_fills_match_the_reference(device):
    """The conv's channels-last result goes straight into the fill nodes
    (one kernel each on a GPU with Triton)."""
    rng = np.random.default_rng(4)
    inputs = {"x": rng.standard_normal((2, 3, 9, 10)).astype(np.float32),
              "w": rng.standard_normal((8, 3, 3, 3)).astype(np.float32)}
    exact = single_op_module("conv2d", inputs, {"padding": (1, 1, 1, 1), "activation": "relu"},
                             constants=("w",))
    for knob in ("perf-rows-2-0+perf-cols-3-1+fp16", "perf-rows-3-2", "perf-cols-2-1"):
        module = apply_knobs(exact, {"op": knob})
        out = compile(module, ["aten"], {"device": device})(x=inputs["x"])["y"]
        tolerance = FP16_TOLERANCE if "fp16" in knob else 1e-5
        np.testing.assert_allclose(out, run_module(module, {"x": inputs["x"]})["y"],
                                   rtol=tolerance, atol=tolerance, err_msg=knob)


TF32_TOLERANCE = {"cpu": 1e-5, "cuda": 2e-2}
"""The CPU rounds operands as the reference does; on CUDA cuDNN and cuBLAS
convert them themselves, or pick an FP32 kernel for a small problem: the
result may differ from the reference by TF32's own rounding error (2**-11
per operand, as FP16's tolerance allows)."""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["conv-int8", "gemm-int8", "matmul-int8"])
def test_a_tf32_node_matches_the_reference(name, device):
    module, inputs = int8_case(name)  # the same products, in TF32 instead
    node = module.root_graph.node("op")
    module = _with_node(module, dataclasses.replace(node, attributes={"precision": "tf32"}))
    out = compile(module, ["aten"], {"device": device})(**inputs)["y"]
    tolerance = TF32_TOLERANCE[device]
    np.testing.assert_allclose(out, run_module(module, inputs)["y"], rtol=tolerance,
                               atol=tolerance)


@pytest.mark.parametrize("device", DEVICES)
def test_exact_products_are_ieee_single_precision_and_precision_tf32_rounds_them(device):
    """A 576-term convolution: TF32 tensor cores would be ~1e-3 off."""
    rng = np.random.default_rng(6)
    inputs = {"x": rng.standard_normal((4, 64, 8, 8)).astype(np.float32),
              "w": rng.standard_normal((64, 64, 3, 3)).astype(np.float32)}
    exact = single_op_module("conv2d", inputs, {"padding": (1, 1, 1, 1)}, constants=("w",))
    reference = run_module(exact, {"x": inputs["x"]})["y"]
    out = compile(exact, ["aten"], {"device": device})(x=inputs["x"])["y"]
    np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4)
    rounded = compile(exact, ["aten"], {"device": device, "precision": "tf32"})(x=inputs["x"])["y"]
    tf32 = run_module(apply_knobs(exact, {"op": "tf32"}), {"x": inputs["x"]})["y"]
    np.testing.assert_allclose(rounded, tf32, rtol=TF32_TOLERANCE[device],
                               atol=TF32_TOLERANCE[device] * 5)


def _with_node(module, node):
    graph = module.root_graph
    nodes = tuple(node if n.name == node.name else n for n in graph.nodes)
    return dataclasses.replace(module, graphs={graph.name: dataclasses.replace(graph, nodes=nodes)})
