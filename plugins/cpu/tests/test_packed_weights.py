"""Constant weights packed once, when compiling: matrix products whose
``b`` is a constant read it from runs packed for their register tiles
(packed_products.column_panels), and 1x1 convolutions with constant
weights are computed transposed against them (conv.py).  The cpu module
feeds such a port from a new constant node (RELAID_FROM); the device
feeds the kernel that node's data while the runtime passes the original.
Every case is checked against the interpreter through hpvm.compile."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir import F32, BufferType, Parameter
from hpvm.ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, KernelBody, Module, Node
from hpvm.ir.kernel import ArrayDecl
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.tensor_ops.packed_products import column_panels
from hpvm.ir.tensor_ops.testing import single_op_module
from hpvm.ir.verify import verify
from hpvm.ir.visit import walk
from hpvm.passes.legalize_tensor_ops import RELAID_FROM, lower_tensor_nodes
from hpvm_cpu.target import register_tiles


def arrays(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {port: rng.standard_normal(shape).astype(np.float32) for port, shape in shapes.items()}


def lowered(module):
    """The module as the cpu target lowers it for AVX-512 tiles."""
    result = lower_tensor_nodes(module, lambda node: True, register_tiles(512, 2),
                                relayout=True)
    verify(result)
    return result


def relaid_nodes(module):
    return [n for g in module.graphs.values() for n in g.nodes if RELAID_FROM in n.attributes]


def packs_in_kernel(module) -> bool:
    """Whether a kernel still packs a private panel of ``b``."""
    return any(isinstance(s, ArrayDecl) and s.name.startswith("panel")
               for f in module.functions.values() for s in walk(f.body))


def check_on_cpu(module, inputs, rtol=1e-4):
    """The cpu's results equal the interpreter's, on three calls (the
    first launches nodes one by one, later ones may run a bound schedule)."""
    expected = run_module(module, inputs)["y"]
    exe = hpvm.compile(module, targets=["cpu"], options={"threads": 2})
    for _ in range(3):
        np.testing.assert_allclose(exe(**inputs)["y"], expected, rtol=rtol, atol=rtol)


def test_column_panels_lay_out_runs_of_columns_padded_with_zeros():
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    panels = column_panels(matrix, 3)
    assert panels.shape == (2, 3, 3)
    np.testing.assert_array_equal(panels[0], matrix[:, :3])
    np.testing.assert_array_equal(panels[1], np.pad(matrix[:, 3:], ((0, 0), (0, 2))))


@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_reads_constant_weights_packed_when_compiling(trans_b):
    """Ragged rows (19), a last panel narrower than the others (110
    columns: 3 x 32 + 14), bias and a clip, b stored either way.  (Just
    above the packing threshold: the interpreter runs the packed kernel
    slowly.)"""
    m, k, n = 19, 150, 110
    inputs = arrays(1, a=(m, k))
    weights = arrays(2, b=(n, k) if trans_b else (k, n), c=(n,))
    module = single_op_module("gemm", {**inputs, **weights},
                              {"trans_b": trans_b, "activation": ("clipped_relu", -1.0, 1.5)},
                              constants=("b", "c"))
    result = lowered(module)
    [packed] = relaid_nodes(result)
    assert packed.attributes[RELAID_FROM] == "b_const"
    assert packed.body.type.shape == (4, k, 32)
    assert not packs_in_kernel(result)
    np.testing.assert_allclose(run_module(result, inputs)["y"], run_module(module, inputs)["y"],
                               rtol=1e-5, atol=1e-5)
    check_on_cpu(module, inputs)


def test_batched_matmul_by_constant_weights_as_linear_layers_have_them():
    inputs = arrays(3, a=(2, 40, 96))
    module = single_op_module("matmul", {**inputs, **arrays(4, b=(96, 200))}, constants=("b",))
    assert relaid_nodes(lowered(module))
    check_on_cpu(module, inputs)


def test_weights_given_as_an_input_are_packed_by_each_instance():
    inputs = arrays(5, a=(37, 150), b=(150, 300))
    module = single_op_module("gemm", inputs)
    result = lowered(module)
    assert not relaid_nodes(result) and packs_in_kernel(result)


@pytest.mark.parametrize("x, w", [((2, 256, 7, 9), (72, 256, 1, 1)),
                                  ((1, 300, 14, 14), (64, 300, 1, 1))])
def test_pointwise_convolution_with_constant_weights_is_computed_transposed(x, w):
    """Pixels as the tiles' rows (63 and 196 of 8-row blocks), output
    channels as columns, w' packed when compiling; bias and ReLU6 fused."""
    inputs = arrays(6, x=x)
    weights = arrays(7, w=w, b=(w[0],))
    module = single_op_module("conv2d", {**inputs, **weights},
                              {"activation": ("clipped_relu", 0.0, 6.0)}, constants=("w", "b"))
    result = lowered(module)
    [packed] = relaid_nodes(result)
    assert packed.body.type.shape == (-(-w[0] // 32), w[1], 32)
    check_on_cpu(module, inputs)


def test_pointwise_convolution_of_a_wide_image_and_few_channels_keeps_its_weights():
    """Below MIN_TRANSPOSED_CHANNELS, on rows as wide as a register tile,
    the stores of transposed tiles cost more than they save."""
    module = single_op_module("conv2d", arrays(8, x=(1, 64, 20, 20), w=(256, 64, 1, 1)),
                              constants=("w",))
    assert not relaid_nodes(lowered(module))


def test_weights_shared_by_two_products_are_packed_for_each():
    """A constant read by two nodes gets a packed copy per node; the
    original stays, as the runtime feeds it."""
    inputs = arrays(9, a=(48, 128))
    w_type = BufferType(F32, (128, 128))
    first = tensor_node("first", "matmul", {"a": BufferType(F32, (48, 128)), "b": w_type})
    second = tensor_node("second", "matmul", {"a": BufferType(F32, (48, 128)), "b": w_type})
    graph = Graph(
        "main", (Parameter("a", BufferType(F32, (48, 128))),
                 Parameter("y", BufferType(F32, (48, 128)), "out")),
        (first, second, Node("w", ConstantBody(w_type, arrays(10, w=(128, 128))["w"]))),
        (Edge("w", "value", "first", "b"), Edge("w", "value", "second", "b"),
         Edge("first", "y", "second", "a")),
        (BindIn("a", "first", "a"),), (BindOut("second", "y", "y"),))
    module = Module("shared", {}, {"main": graph}, "main")
    result = lowered(module)
    assert len(relaid_nodes(result)) == 2
    nodes = result.graphs["main"].nodes
    assert any(n.name == "w" and RELAID_FROM not in n.attributes for n in nodes)
    assert all(isinstance(n.body, (KernelBody, ConstantBody)) for n in nodes)
    check_on_cpu(module, inputs, rtol=1e-3)


@pytest.mark.parametrize("x, w, attrs", [
    ((1, 64, 9, 11), (40, 64, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((2, 32, 13, 13), (64, 32, 3, 3), {"padding": (1, 1, 1, 1), "stride": (2, 2)}),
    ((1, 16, 10, 12), (33, 16, 3, 3), {"padding": (2, 1, 0, 1), "dilation": (2, 1)}),
    ((1, 128, 20, 20), (512, 128, 1, 1), {"stride": (2, 2)}),
    ((1, 160, 30, 7), (48, 160, 3, 3), {"padding": (1, 1, 1, 1)}),
])
def test_convolution_with_constant_weights_is_a_transposed_packed_product(x, w, attrs):
    """conv_products.py: pixels as the tiles' rows, read from a private
    copy of the input rows whose zeros are the padding; strides,
    dilations, uneven padding, a last tile of output channels narrower
    than the others, chunks of rows (30 rows of 160 channels do not fit
    one copy), bias and ReLU fused."""
    inputs = arrays(11, x=x)
    weights = arrays(12, w=w, b=(w[0],))
    module = single_op_module("conv2d", {**inputs, **weights}, {**attrs, "activation": "relu"},
                              constants=("w", "b"))
    [packed] = relaid_nodes(lowered(module))
    assert packed.body.type.shape == (-(-w[0] // 32), w[1] * w[2] * w[3], 32)
    check_on_cpu(module, inputs)
