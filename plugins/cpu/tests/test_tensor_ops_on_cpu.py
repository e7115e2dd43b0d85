"""The tiled lowerings of gemm and conv2d compiled for the cpu equal the
ops' reference semantics (evaluate) on ragged and single-element shapes,
with the register tiles the cpu picks for each kind of vector unit."""
import numpy as np
import pytest
from hpvm.errors import Location
from hpvm.ir.kernel import ArrayDecl
from hpvm.ir.shapes import bind_symbols, replication_sizes
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.conv import window_attrs
from hpvm.ir.tensor_ops.conv_grouped import plan as grouped_plan
from hpvm.ir.tensor_ops.conv_panels import plan as panel_plan
from hpvm.ir.tensor_ops.lowering import KernelBuilder, const_value
from hpvm.ir.tensor_ops.matrix_tiles import port_product
from hpvm.ir.tensor_ops.packed_products import lower_packed_product, packed_tile
from hpvm.ir.tensor_ops.testing import evaluate_node, lowered_module, types_of
from hpvm.ir.visit import walk
from hpvm_cpu.codegen import compile_kernel_node
from hpvm_cpu.codegen.machine import MachineSpec
from hpvm_cpu.target import register_tiles

MODELS = ["x86-64-v4", "x86-64-v3", "x86-64"]
"""Code for this machine, lowered with the tiles the cpu picks for AVX-512,
AVX2 and SSE2 machines."""


def run_on_cpu(node, inputs, threads, model="x86-64-v4"):
    bits = MachineSpec.for_model(model).vector_bits()
    module, name, replication = lowered_module(node, register_tiles(bits))
    kernel = compile_kernel_node(module, name, len(replication),
                                 {"threads": threads, "vector_width": bits})
    sizes = replication_sizes(replication, bind_symbols(node.body.params, inputs, Location()))
    return kernel.run(dict(inputs), sizes)


def arrays(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {port: rng.standard_normal(shape).astype(np.float32) for port, shape in shapes.items()}


@pytest.mark.parametrize("m, k, n, trans_b", [(64, 120, 84, True), (5, 13, 3, True),
                                              (1, 1, 1, True), (7, 17, 19, False),
                                              (13, 40, 61, False)])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("model", MODELS)
def test_gemm_on_cpu_matches_evaluate(m, k, n, trans_b, threads, model):
    inputs = arrays(m + k + n, a=(m, k), b=(n, k) if trans_b else (k, n), c=(n,))
    node = tensor_node("fc", "gemm", types_of(**inputs), {"trans_b": trans_b})
    actual = run_on_cpu(node, inputs, threads, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, k, n, trans_b", [(1, 50, 1000, False), (1, 50, 999, True),
                                              (3, 20, 300, False), (9, 16, 130, True)])
def test_gemm_of_few_rows_split_in_column_groups_matches_evaluate(m, k, n, trans_b):
    """Few rows: the instances take groups of columns (matrix_tiles.py),
    the last group narrower where N is not a multiple of the group."""
    inputs = arrays(m * n, a=(m, k), b=(n, k) if trans_b else (k, n), c=(n,))
    node = tensor_node("fc", "gemm", types_of(**inputs), {"trans_b": trans_b,
                                                           "activation": "relu"})
    module, _, replication = lowered_module(node, register_tiles(512))
    assert const_value(replication[0]) > -(-m // 8)
    actual = run_on_cpu(node, inputs, 2)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_packed_gemm_on_cpu_matches_evaluate(trans_a, trans_b, model):
    """Large products pack panels of b (packed_products.py): ragged rows
    (37 of 8-row blocks), a last panel narrower than the others (300
    columns), either operand transposed, bias and activation."""
    m, k, n = 37, 150, 300
    inputs = arrays(5, a=(k, m) if trans_a else (m, k), b=(n, k) if trans_b else (k, n),
                    c=(n,))
    attrs = {"trans_a": trans_a, "trans_b": trans_b, "alpha": 0.5, "beta": 2.0,
             "activation": ("clipped_relu", -1.0, 1.5)}
    node = tensor_node("fc", "gemm", types_of(**inputs), attrs)
    tiles = register_tiles(MachineSpec.for_model(model).vector_bits())
    builder = KernelBuilder(get_op("gemm").context(types_of(**inputs), attrs),
                            node.body.params, tiles)
    assert lower_packed_product(builder, port_product(builder, trans_a, trans_b,
                                                      lambda b, m, n, total, at: total))
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a, b", [((2, 3, 40, 150), (3, 150, 130)), ((1, 200, 64), (64, 512))])
def test_packed_batched_matmul_on_cpu_matches_evaluate(a, b):
    inputs = arrays(6, a=a, b=b)
    node = tensor_node("mm", "matmul", types_of(**inputs), {})
    actual = run_on_cpu(node, inputs, 2)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a, b", [((1, 128, 40), (40, 200)), ((2, 3, 5, 17), (3, 17, 70)),
                                  ((4, 7, 9), (4, 9, 33)), ((2, 1, 6, 8), (1, 5, 8, 3))])
@pytest.mark.parametrize("model", MODELS)
def test_batched_matmul_on_cpu_matches_evaluate(a, b, model):
    """Batched matmuls take register tiles per matrix of the batch,
    operands broadcast along the batch dims."""
    inputs = arrays(len(a) + len(b), a=a, b=b)
    node = tensor_node("mm", "matmul", types_of(**inputs), {})
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, w, padding", [((3, 2, 9, 11), (5, 2, 3, 3), 1),
                                           ((1, 1, 5, 5), (1, 1, 5, 5), 0),
                                           ((2, 6, 14, 14), (16, 6, 5, 5), 0),
                                           ((2, 8, 7, 29), (24, 8, 3, 3), 1)])
@pytest.mark.parametrize("model", MODELS)
def test_conv2d_on_cpu_matches_evaluate(x, w, padding, model):
    inputs = arrays(7, x=x, w=w, b=(w[0],))
    node = tensor_node("conv", "conv2d", types_of(**inputs), {"padding": (padding,) * 4})
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, w, attrs", [
    ((1, 64, 7, 7), (64, 64, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((2, 24, 14, 14), (40, 24, 3, 3), {"padding": (1, 1, 1, 1), "stride": (2, 2)}),
    ((1, 32, 9, 10), (16, 32, 1, 1), {}),
    ((1, 20, 11, 8), (12, 20, 3, 2), {"padding": (2, 0, 1, 1), "dilation": (2, 1),
                                      "activation": "relu"}),
    ((3, 16, 12, 12), (8, 16, 5, 5), {"padding": (2, 2, 2, 2), "stride": (3, 2)}),
    ((1, 96, 7, 7), (320, 96, 1, 1), {}),
    ((2, 8, 6, 7), (8, 8, 3, 3), {"dilation": (2, 1)}),
])
@pytest.mark.parametrize("model", MODELS)
def test_conv2d_panels_on_cpu_match_evaluate(x, w, attrs, model):
    """Small images, where the cpu lowers through panels (conv_panels.py):
    strides, dilations, uneven padding, 1x1, channel counts that are not
    multiples of the tiles."""
    inputs = arrays(11, x=x, w=w, b=(w[0],))
    node = tensor_node("conv", "conv2d", types_of(**inputs), attrs)
    tiles = register_tiles(MachineSpec.for_model(model).vector_bits())
    ctx = get_op("conv2d").context(types_of(**inputs), attrs)
    planned = panel_plan(KernelBuilder(ctx, node.body.params, tiles), *window_attrs(ctx))
    assert planned or tiles.cols == 8  # SSE's 8-lane tiles fill rows of 8 pixels and more
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, w", [((2, 100, 14, 13), (24, 100, 1, 1)),
                                  ((1, 150, 12, 12), (70, 150, 1, 1))])
def test_pointwise_conv2d_as_a_packed_product_matches_evaluate(x, w):
    """1x1 convolutions of small images are products w @ x per image,
    packed (packed_products.py), with the bias and activation fused."""
    inputs = arrays(17, x=x, w=w, b=(w[0],))
    attrs = {"activation": ("clipped_relu", 0.0, 6.0)}
    node = tensor_node("conv", "conv2d", types_of(**inputs), attrs)
    module, _, _ = lowered_module(node, register_tiles(512))
    [function] = module.functions.values()
    assert any(isinstance(s, ArrayDecl) and s.name.startswith("panel")
               for s in walk(function.body))
    actual = run_on_cpu(node, inputs, 2)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, w, attrs", [
    ((1, 32, 112, 112), (32, 1, 3, 3), {"padding": (1, 1, 1, 1), "activation": "relu"}),
    ((2, 16, 40, 37), (16, 1, 3, 3), {"padding": (1, 1, 1, 1), "stride": (2, 2)}),
    ((1, 24, 7, 7), (24, 1, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((2, 6, 3, 2), (12, 1, 3, 3), {"padding": (1, 1, 1, 1), "groups": 6}),
    ((1, 8, 23, 19), (8, 1, 5, 5), {"padding": (2, 1, 3, 2), "stride": (3, 2),
                                    "dilation": (1, 2)}),
    ((1, 12, 9, 10), (6, 4, 3, 3), {"groups": 3, "dilation": (2, 2)}),
    ((1, 8, 160, 150), (8, 1, 7, 7), {"padding": (3, 3, 3, 3)}),
])
@pytest.mark.parametrize("model", MODELS)
def test_conv2d_grouped_on_cpu_match_evaluate(x, w, attrs, model):
    """Grouped and depthwise convolutions, lowered as pixel tiles over
    phase copies (conv_grouped.py): channel multipliers, several channels
    a group, strides, dilations, uneven padding, images smaller than a
    tile and images cut into bands."""
    attrs = {"groups": x[1], **attrs}
    inputs = arrays(13, x=x, w=w, b=(w[0],))
    node = tensor_node("conv", "conv2d", types_of(**inputs), attrs)
    tiles = register_tiles(MachineSpec.for_model(model).vector_bits())
    ctx = get_op("conv2d").context(types_of(**inputs), attrs)
    assert grouped_plan(KernelBuilder(ctx, node.body.params, tiles), *window_attrs(ctx),
                        attrs["groups"])
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, w, attrs", [
    ((1, 128, 14, 14), (64, 128, 1, 1), {}),                         # 1x1, computed transposed
    ((2, 96, 7, 7), (320, 96, 1, 1), {}),                            # 1x1, narrow image
    ((1, 32, 20, 20), (64, 32, 3, 3), {"padding": (1, 1, 1, 1)}),   # transposed products
    ((2, 12, 7, 7), (24, 12, 3, 3), {"padding": (1, 1, 1, 1)}),     # panels
    ((1, 24, 40, 40), (32, 24, 1, 1), {}),                           # row tiles
    ((2, 8, 9, 9), (8, 1, 3, 3), {"padding": (1, 1, 1, 1), "groups": 8}),  # depthwise
    ((1, 3, 11, 11), (16, 3, 3, 3), {"stride": (2, 2)}),             # one instance a value
    ((2, 128, 14, 13), (160, 128, 1, 1), {"stride": (2, 2)}),        # strided 1x1, transposed
    ((1, 192, 9, 10), (96, 192, 1, 1), {"stride": (2, 3)}),
    ((1, 256, 12, 7), (64, 256, 1, 1), {"stride": (3, 1)}),
])
def test_conv2d_with_a_residual_summand_on_cpu_matches_evaluate(x, w, attrs):
    """Every lowering adds the summand ``z`` before the activation, with
    the weights constant as in a model (the lowerings that repack them);
    strided 1x1 convolutions read their pixels where the stride puts
    them."""
    from hpvm.ir.tensor_ops.testing import single_op_module
    from hpvm.runtime import compile
    attrs = {"activation": "relu", **attrs}
    inputs = arrays(16, x=x, w=w, b=(w[0],))
    y = get_op("conv2d").infer(types_of(**inputs), attrs)["y"]
    inputs["z"] = arrays(17, z=y.shape)["z"]
    module = single_op_module("conv2d", inputs, attrs, constants=("w", "b"))
    exe = compile(module, ["cpu"], {"threads": 2})
    names = [p.name for p in module.root_graph.params if p.direction == "in"]
    actual = next(iter(exe(**{n: inputs[n] for n in names}).values()))
    node = tensor_node("conv", "conv2d", types_of(**inputs), attrs)
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op, attrs", [
    ("max_pool", {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1)}),
    ("max_pool", {"kernel": (3, 2), "stride": (2, 1), "padding": (2, 1, 0, 0)}),
    ("max_pool", {"kernel": (2, 2), "stride": (2, 2)}),
    ("avg_pool", {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1)}),
    ("avg_pool", {"kernel": (3, 3), "padding": (2, 0, 1, 2), "count_include_pad": True}),
    ("avg_pool", {"kernel": (2, 3), "stride": (1, 3)}),
])
@pytest.mark.parametrize("model", MODELS)
def test_pools_on_cpu_match_evaluate(op, attrs, model):
    """Pools fold each window's rows, then its columns (pool.py): padding
    on one side only, wider than it is tall, strides apart and equal to
    the kernel, counted or uncounted padding."""
    inputs = arrays(14, x=(2, 3, 11, 17))
    node = tensor_node("pool", op, types_of(**inputs), attrs)
    actual = run_on_cpu(node, inputs, 2, model)["y"]
    np.testing.assert_allclose(actual, evaluate_node(node, inputs)["y"], rtol=1e-5, atol=1e-6)


def test_max_pool_of_integers_on_cpu_matches_evaluate():
    x = np.random.default_rng(15).integers(-1000, 1000, (1, 2, 9, 8)).astype(np.int32)
    node = tensor_node("pool", "max_pool", types_of(x=x),
                       {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1, 1, 1)})
    np.testing.assert_array_equal(run_on_cpu(node, {"x": x}, 1)["y"],
                                  evaluate_node(node, {"x": x})["y"])


@pytest.mark.parametrize("options, shape", [
    ({"cpu_model": "x86-64-v4"}, (16, 8)), ({"cpu_model": "znver4"}, (16, 8)),
    ({"cpu_model": "x86-64-v3"}, (16, 4)), ({"cpu_model": "x86-64"}, (8, 4)),
    ({"cpu_model": "neoverse-v2"}, (8, 4)), ({"triple": "aarch64-linux-gnu"}, (8, 4))])
def test_register_tiles_hold_eight_vector_accumulators(options, shape):
    tiles = register_tiles(MachineSpec.from_options(options).vector_bits())
    assert (tiles.cols, tiles.rows) == shape and tiles.vectors


@pytest.mark.parametrize("bits, tile", [(512, (8, 32)), (256, (4, 16)), (128, (4, 8))])
def test_packed_tiles_take_sixteen_accumulators_only_with_32_registers(bits, tile):
    """AVX-512's 32 registers hold a packed tile of 8 x 2 vectors; with 16
    (AVX2, SSE) the packed product keeps the eight-accumulator tile."""
    assert packed_tile(register_tiles(bits)) == tile


def test_the_cpu_makes_its_tensor_kernels_for_the_widest_vectors_only():
    """A lowered conv2d is made for the host's widest vectors (512 bits
    with AVX-512, where LLVM would pick 256); a kernel program keeps
    LLVM's choice for the CPU."""
    from pathlib import Path

    from hpvm.ir.tensor_ops.testing import single_op_module
    from hpvm.ir.text import load_module
    from hpvm.runtime import compile

    def llvm_ir(module):
        files = compile(module, ["cpu"]).artifacts["cpu"].files
        return [v.decode() for k, v in files.items() if k.endswith(".ll")]

    width = f'"prefer-vector-width"="{MachineSpec.host().vector_bits()}"'
    conv = llvm_ir(single_op_module("conv2d", arrays(1, x=(1, 2, 6, 6), w=(4, 2, 3, 3))))
    assert len(conv) == 1 and width in conv[0]
    examples = Path(__file__).resolve().parents[3] / "examples" / "ir"
    assert not any("prefer-vector-width" in text
                   for text in llvm_ir(load_module(examples / "blur.hpvm")))
