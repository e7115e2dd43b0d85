"""gemm with b transposed (ONNX Linear layers) lowers to blocked dot
products with partial sums (matrix_tiles.lower_dot_products): equal to evaluate
on ragged sizes, single-element dims and symbolic sizes."""
import numpy as np
import pytest

from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.kernel import ArrayDecl, For
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of
from hpvm.ir.tensor_ops.matrix_tiles import DOT_LANES
from hpvm.ir.visit import walk

pytest.importorskip("hpvm.interp")


def gemm_inputs(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((m, k)).astype(np.float32),
            "b": rng.standard_normal((n, k)).astype(np.float32),
            "c": rng.standard_normal(n).astype(np.float32)}


def gemm_node(inputs, symbolic=(), **attrs):
    types = types_of(**inputs)
    for port, axis, name in symbolic:
        shape = list(types[port].shape)
        shape[axis] = name
        types[port] = BufferType(F32, tuple(shape))
    return tensor_node("fc", "gemm", types, {"trans_b": True, **attrs})


@pytest.mark.parametrize("m, k, n", [(64, 120, 84), (5, 13, 3), (1, 1, 1), (3, 8, 2), (7, 17, 5)])
def test_transposed_gemm_matches_evaluate_on_ragged_sizes(m, k, n):
    inputs = gemm_inputs(m, k, n)
    assert_lowering_matches(gemm_node(inputs), inputs, rtol=1e-4, atol=1e-4)


def test_transposed_gemm_with_symbolic_batch_and_inner_size_matches_evaluate():
    inputs = gemm_inputs(6, 19, 3)
    node = gemm_node(inputs, [("a", 0, "N"), ("a", 1, "K"), ("b", 1, "K")])
    assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-4)


def test_transposed_gemm_with_alpha_beta_and_activation_matches_evaluate():
    inputs = gemm_inputs(9, 11, 4)
    node = gemm_node(inputs, alpha=0.5, beta=-2.0, activation="relu")
    assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-4)


def test_transposed_gemm_keeps_partial_sums_in_a_vectorisable_loop():
    node = gemm_node(gemm_inputs(8, 32, 4))
    function, _ = get_op("gemm").lower("fc", node.body)
    arrays = [s for s in walk(function.body) if isinstance(s, ArrayDecl)]
    assert arrays and all(a.shape[-1] == DOT_LANES for a in arrays)
    assert any(isinstance(s, For) and s.ivdep and s.trip_count == DOT_LANES
               for s in walk(function.body))
