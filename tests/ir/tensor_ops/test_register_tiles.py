"""The register-tiled lowerings of conv2d and gemm shaped for vector units
(lowering.RegisterTiles with ``vectors``): equal to evaluate on sizes that
leave remainders, tails split into power-of-two tiles, column loops
unrolled, conv tiles as deep as a divisor of the channel count allows."""
import numpy as np
import pytest

from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir.kernel import ArrayDecl, For
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.tensor_ops.lowering import RegisterTiles
from hpvm.ir.tensor_ops.testing import lowered_module, types_of
from hpvm.ir.visit import walk

pytest.importorskip("hpvm.interp")

VECTOR_TILES = [RegisterTiles(16, 8, True), RegisterTiles(16, 4, True), RegisterTiles(8, 4, True)]


def arrays(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {port: rng.standard_normal(shape).astype(np.float32) for port, shape in shapes.items()}


def conv_node(inputs, **attrs):
    return tensor_node("conv", "conv2d", types_of(**inputs), attrs)


def accumulators(node, tiles):
    """The shapes of the lowered kernel's accumulator arrays."""
    module, name, _ = lowered_module(node, tiles)
    return [s.shape for s in walk(module.functions[name].body)
            if isinstance(s, ArrayDecl) and s.name.startswith("acc")]


@pytest.mark.parametrize("tiles", VECTOR_TILES, ids=str)
@pytest.mark.parametrize("x, w, attrs", [
    ((2, 3, 6, 13), (6, 3, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((1, 2, 9, 24), (12, 2, 3, 3), {}),
    ((2, 4, 11, 29), (8, 4, 3, 3), {"padding": (1, 1, 1, 1), "stride": (2, 2)}),
    ((1, 1, 7, 7), (5, 1, 5, 5), {"padding": (2, 2, 2, 2)}),
])
def test_vector_tiled_conv_matches_evaluate(tiles, x, w, attrs):
    inputs = arrays(sum(x + w), x=x, w=w, b=(w[0],))
    assert_lowering_matches(conv_node(inputs, **attrs), inputs, rtol=1e-4, atol=1e-4,
                            tiles=tiles)


@pytest.mark.parametrize("tiles", VECTOR_TILES, ids=str)
@pytest.mark.parametrize("m, k, n, trans_b", [(13, 9, 29, False), (8, 5, 16, False),
                                              (3, 17, 7, True), (1, 1, 1, False),
                                              (9, 24, 17, False)])
def test_vector_tiled_gemm_matches_evaluate(tiles, m, k, n, trans_b):
    inputs = arrays(m + k + n, a=(m, k), b=(n, k) if trans_b else (k, n), c=(n,))
    node = tensor_node("fc", "gemm", types_of(**inputs), {"trans_b": trans_b})
    assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-4, tiles=tiles)


def test_a_row_remainder_becomes_power_of_two_tiles_of_the_deepest_dividing_block():
    inputs = arrays(0, x=(1, 2, 5, 29), w=(12, 2, 1, 1), b=(12,))
    node = conv_node(inputs)
    # 29 columns: one full tile of 16, then 8 + 4 + 1; 12 channels: 6 deep.
    assert accumulators(node, RegisterTiles(16, 8, True)) == [(6, 16), (6, 8), (6, 4), (6, 1)]
    # The default tiles (one instance per thread) keep one tail tile.
    assert accumulators(node, RegisterTiles()) == [(4, 8), (4, 5)]


@pytest.mark.parametrize("k, unrolled", [(4, [16]), (16, [8, 16]), (19, [8, 16, 16])])
def test_vector_tiles_unroll_their_column_loops_and_blocks_of_reduction_steps(k, unrolled):
    inputs = arrays(0, a=(8, k), b=(k, 16), c=(16,))
    node = tensor_node("fc", "gemm", types_of(**inputs))
    module, name, _ = lowered_module(node, RegisterTiles(16, 8, True))
    # ... and the loops storing the tile's eight rows, so that it stays in registers
    assert [s.unroll for s in walk(module.functions[name].body)
            if isinstance(s, For) and s.unroll] == unrolled + [16] * 8


def test_vector_tiled_gemm_with_a_symbolic_reduction_matches_evaluate():
    from hpvm.ir import F32, BufferType
    inputs = arrays(3, a=(5, 21), b=(21, 18), c=(18,))
    types = types_of(**inputs)
    types["a"], types["b"] = BufferType(F32, (5, "K")), BufferType(F32, ("K", 18))
    node = tensor_node("fc", "gemm", types)
    assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-4, tiles=RegisterTiles(16, 8, True))
