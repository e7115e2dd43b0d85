"""matmul and gemm: shape inference, reference semantics, lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, I32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

MATMUL, GEMM = get_op("matmul"), get_op("gemm")


def f32(*shape):
    return BufferType(F32, shape)


def random(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# matmul -----------------------------------------------------------------------
def test_matmul_infers_rows_by_columns():
    assert MATMUL.infer({"a": f32("M", 4), "b": f32(4, 7)})["y"] == f32("M", 7)


def test_matmul_batches_broadcast():
    assert MATMUL.infer({"a": f32("B", 2, 3), "b": f32(3, 5)})["y"] == f32("B", 2, 5)
    assert MATMUL.infer({"a": f32(1, 2, 3), "b": f32(6, 3, 5)})["y"] == f32(6, 2, 5)


def test_matmul_symbolic_inner_dims_must_share_a_name():
    assert MATMUL.infer({"a": f32(2, "K"), "b": f32("K", 3)})["y"] == f32(2, 3)
    with pytest.raises(VerificationError, match="columns of 'a' \\(K\\) is 'K' but the rows"):
        MATMUL.infer({"a": f32(2, "K"), "b": f32(4, 3)})


def test_matmul_inner_mismatch_is_reported_on_b():
    with pytest.raises(VerificationError) as info:
        MATMUL.infer({"a": f32(2, 3), "b": f32(4, 3)})
    assert info.value.diagnostics[0].location.port == "b"


def test_matmul_batch_mismatch_is_reported():
    with pytest.raises(VerificationError, match="cannot broadcast"):
        MATMUL.infer({"a": f32(2, 2, 3), "b": f32(4, 3, 5)})


def test_matmul_rejects_rank_one():
    with pytest.raises(VerificationError, match="rank 2 or more"):
        MATMUL.infer({"a": f32(3), "b": f32(3, 5)})


def test_matmul_evaluate_is_numpy_matmul():
    rng = np.random.default_rng(0)
    a, b = random(rng, 3, 2, 4), random(rng, 4, 5)
    np.testing.assert_allclose(MATMUL.evaluate({"a": a, "b": b})["y"], a @ b, rtol=1e-6)


def test_matmul_accepts_integers():
    out = MATMUL.infer({"a": BufferType(I32, (2, 3)), "b": BufferType(I32, (3, 1))})
    assert out["y"] == BufferType(I32, (2, 1))


def test_matmul_lowering_matches_evaluate_with_batch_broadcast():
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(1)
    inputs = {"a": random(rng, 1, 3, 4), "b": random(rng, 2, 4, 5)}
    assert_lowering_matches(tensor_node("mm", "matmul", types_of(**inputs)), inputs)


def test_matmul_lowering_on_integers_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(2)
    inputs = {"a": rng.integers(-5, 5, (3, 4), dtype=np.int32),
              "b": rng.integers(-5, 5, (4, 2), dtype=np.int32)}
    assert_lowering_matches(tensor_node("mm", "matmul", types_of(**inputs)), inputs)


# gemm -------------------------------------------------------------------------
def test_gemm_transposes_before_multiplying():
    out = GEMM.infer({"a": f32(4, "M"), "b": f32(7, 4)}, {"trans_a": True, "trans_b": 1})
    assert out["y"] == f32("M", 7)


def test_gemm_c_broadcasts_like_a_bias():
    for c in (f32(7), f32(1, 7), f32(3, 1), f32(3, 7), f32(1)):
        assert GEMM.infer({"a": f32(3, 4), "b": f32(4, 7), "c": c})["y"] == f32(3, 7)


def test_gemm_c_that_does_not_broadcast_is_rejected():
    with pytest.raises(VerificationError, match="'c'"):
        GEMM.infer({"a": f32(3, 4), "b": f32(4, 7), "c": f32(3)})


def test_gemm_trans_flags_must_be_booleans():
    with pytest.raises(VerificationError, match="'trans_a' must be true/false"):
        GEMM.infer({"a": f32(3, 4), "b": f32(4, 7)}, {"trans_a": 2})


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
def test_gemm_evaluate_follows_the_onnx_formula(trans_a, trans_b):
    rng = np.random.default_rng(3)
    a = random(rng, *((4, 3) if trans_a else (3, 4)))
    b = random(rng, *((5, 4) if trans_b else (4, 5)))
    c = random(rng, 5)
    y = GEMM.evaluate({"a": a, "b": b, "c": c},
                      {"alpha": 0.5, "beta": -2.0, "trans_a": trans_a, "trans_b": trans_b})["y"]
    expected = 0.5 * ((a.T if trans_a else a) @ (b.T if trans_b else b)) - 2.0 * c
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_gemm_lowering_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(4)
    inputs = {"a": random(rng, 4, 3), "b": random(rng, 5, 4), "c": random(rng, 3, 1)}
    node = tensor_node("fc", "gemm", types_of(**inputs),
                       {"alpha": 1.5, "beta": 0.25, "trans_a": True, "trans_b": True})
    assert_lowering_matches(node, inputs)
