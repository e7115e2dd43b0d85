"""The attention op: rows(a @ b) @ c as numpy computes it, lowered (register
tiles of several shapes, ragged row blocks, broadcast batches, masks and
scales as row inputs) and interpreted alike, and clear errors."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.lowering import RegisterTiles
from hpvm.ir.tensor_ops.testing import lowered_module, types_of
from hpvm.ir.text import print_module

RNG = np.random.default_rng(0)
SCALED_SOFTMAX = (("input", 0), ("input", 1), ("binary", "mul", 0, 1), ("reduce", "max", 2),
                  ("binary", "sub", 2, 3), ("unary", "exp", 4), ("reduce", "sum", 5),
                  ("binary", "div", 5, 6))
MASKED_SOFTMAX = (("input", 0), ("input", 1), ("binary", "add", 0, 1), ("reduce", "max", 2),
                  ("binary", "sub", 2, 3), ("unary", "exp", 4), ("reduce", "sum", 5),
                  ("binary", "div", 5, 6))
TILES = [RegisterTiles(), RegisterTiles(cols=16, rows=4, vectors=True),
         RegisterTiles(cols=8, rows=3, vectors=True)]


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("tiles", TILES)
def test_scaled_dot_product_attention_over_heads(tiles):
    inputs = {"x0": floats(2, 3, 10, 8), "x1": floats(2, 3, 8, 24), "x2": floats(2, 3, 24, 8),
              "x3": np.float32([0.35])}
    y = get_op("attention").evaluate(inputs, {"program": SCALED_SOFTMAX})["y"]
    expected = softmax(inputs["x0"] @ inputs["x1"] * np.float32(0.35)) @ inputs["x2"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    node = tensor_node("attn", "attention", types_of(**inputs), {"program": SCALED_SOFTMAX})
    assert node.body.params[-1].type == BufferType(F32, (2, 3, 10, 8))
    assert_lowering_matches(node, inputs, rtol=1e-5, atol=1e-5, tiles=tiles)


@pytest.mark.parametrize("tiles", TILES)
def test_a_mask_per_query_and_key_broadcast_over_heads_and_shared_keys(tiles):
    # keys and values shared by the batch (no batch dims), a mask [B, 1, M, N]
    inputs = {"x0": floats(2, 2, 7, 4), "x1": floats(4, 13), "x2": floats(13, 5),
              "x3": np.where(RNG.random((2, 1, 7, 13)) < 0.3, -1e4, 0).astype(np.float32)}
    y = get_op("attention").evaluate(inputs, {"program": MASKED_SOFTMAX})["y"]
    expected = softmax(inputs["x0"] @ inputs["x1"] + inputs["x3"]) @ inputs["x2"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    node = tensor_node("attn", "attention", types_of(**inputs), {"program": MASKED_SOFTMAX})
    assert_lowering_matches(node, inputs, rtol=1e-5, atol=1e-5, tiles=tiles)


def test_a_program_whose_result_reads_the_scores_again_does_not_overwrite_them():
    # y = s * exp(s) / sum(exp(s)): the exponentials may not replace the scores
    program = (("input", 0), ("unary", "exp", 0), ("reduce", "sum", 1),
               ("binary", "div", 1, 2), ("binary", "mul", 0, 3))
    inputs = {"x0": floats(9, 6), "x1": floats(6, 11), "x2": floats(11, 3)}
    s = inputs["x0"] @ inputs["x1"]
    expected = s * np.exp(s) / np.exp(s).sum(-1, keepdims=True) @ inputs["x2"]
    np.testing.assert_allclose(get_op("attention").evaluate(inputs, {"program": program})["y"],
                               expected, rtol=1e-4, atol=1e-5)
    node = tensor_node("a", "attention", types_of(**inputs), {"program": program})
    for tiles in TILES:
        assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-4, tiles=tiles)


@pytest.mark.parametrize("queries", [37, 64])
def test_blocks_of_rows_share_packed_panels_of_the_keys(queries):
    # one core: each instance takes up to four blocks of rows (a last one ragged)
    tiles = RegisterTiles(cols=8, rows=4, vectors=True, cores=1)
    inputs = {"x0": floats(2, queries, 16), "x1": floats(2, 16, 40), "x2": floats(2, 40, 12),
              "x3": np.float32([0.25])}
    node = tensor_node("attn", "attention", types_of(**inputs), {"program": SCALED_SOFTMAX})
    text = print_module(lowered_module(node, tiles)[0])
    assert "panel" in text
    assert_lowering_matches(node, inputs, rtol=1e-5, atol=1e-5, tiles=tiles)


def test_a_symbolic_batch_and_query_count_lower():
    types = {"x0": BufferType(F32, ("B", "M", 8)), "x1": BufferType(F32, ("B", 8, 16)),
             "x2": BufferType(F32, ("B", 16, 8)), "x3": BufferType(F32, (1,))}
    node = tensor_node("attn", "attention", types, {"program": SCALED_SOFTMAX})
    assert node.body.params[-1].type == BufferType(F32, ("B", "M", 8))
    inputs = {"x0": floats(3, 5, 8), "x1": floats(3, 8, 16), "x2": floats(3, 16, 8),
              "x3": np.float32([0.5])}
    assert_lowering_matches(node, inputs, rtol=1e-5, atol=1e-5, tiles=TILES[1])


@pytest.mark.parametrize("types, program, message", [
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (6, 16)),
      "x2": BufferType(F32, (16, 8))}, (("input", 0), ("reduce", "max", 0),
                                        ("binary", "sub", 0, 1)), "columns of 'x0'"),
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (8, 16)),
      "x2": BufferType(F32, (12, 8))}, (("input", 0), ("reduce", "max", 0),
                                        ("binary", "sub", 0, 1)), "rows of 'x2'"),
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (8, "N")),
      "x2": BufferType(F32, ("N", 8))}, (("input", 0), ("reduce", "max", 0),
                                         ("binary", "sub", 0, 1)), "fixed size"),
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (8, 16)),
      "x2": BufferType(F32, (16, 8))}, (("input", 0), ("reduce", "max", 0)),
     "row program.*one value per row"),
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (8, 16)),
      "x2": BufferType(F32, (16, 8)), "x3": BufferType(F32, (2, 4, 16))},
     (("input", 0), ("input", 1), ("binary", "add", 0, 1)), "broadcast the scores"),
    ({"x0": BufferType(F32, (4, 8)), "x1": BufferType(F32, (8, 16))},
     (("input", 0),), "'x2' is missing"),
])
def test_bad_uses_are_errors_naming_the_port(types, program, message):
    with pytest.raises(VerificationError, match=message):
        tensor_node("attn", "attention", types, {"program": program})
