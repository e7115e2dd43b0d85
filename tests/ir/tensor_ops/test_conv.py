"""conv2d: shape inference, reference semantics against explicit loops,
and its lowering."""
import itertools

import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

CONV = get_op("conv2d")


def f32(*shape):
    return BufferType(F32, shape)


def conv_loops(x, w, b=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """conv2d written as the textbook loop nest (float64)."""
    batch, _, height, width = x.shape
    kernels, per_group, rows, cols = w.shape
    out_h = (height + padding[0] + padding[2] - dilation[0] * (rows - 1) - 1) // stride[0] + 1
    out_w = (width + padding[1] + padding[3] - dilation[1] * (cols - 1) - 1) // stride[1] + 1
    y = np.zeros((batch, kernels, out_h, out_w))
    for n, k, oh, ow in itertools.product(range(batch), range(kernels), range(out_h), range(out_w)):
        group = k // (kernels // groups)
        acc = 0.0 if b is None else float(b[k])
        for c, r, s in itertools.product(range(per_group), range(rows), range(cols)):
            ih = oh * stride[0] - padding[0] + r * dilation[0]
            iw = ow * stride[1] - padding[1] + s * dilation[1]
            if 0 <= ih < height and 0 <= iw < width:
                acc += float(x[n, group * per_group + c, ih, iw]) * float(w[k, c, r, s])
        y[n, k, oh, ow] = acc
    return y


def random(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# shape inference ------------------------------------------------------------
def test_infers_output_size_from_stride_padding_and_dilation():
    out = CONV.infer({"x": f32(1, 3, 32, 32), "w": f32(16, 3, 5, 3)},
                     {"stride": (2, 1), "padding": (1, 2, 1, 0), "dilation": (1, 2)})
    assert out == {"y": f32(1, 16, 15, 30)}


def test_symbolic_batch_passes_through():
    assert CONV.infer({"x": f32("N", 3, 8, 8), "w": f32(4, 3, 3, 3)})["y"] == f32("N", 4, 6, 6)


def test_symbolic_spatial_dims_pass_through_same_padding():
    out = CONV.infer({"x": f32("N", 3, "H", "W"), "w": f32(4, 3, 3, 3)},
                     {"padding": (1, 1, 1, 1)})
    assert out["y"] == f32("N", 4, "H", "W")


def test_symbolic_height_with_stride_two_has_no_output_name():
    with pytest.raises(VerificationError, match="give 'x' a fixed height"):
        CONV.infer({"x": f32("N", 3, "H", 8), "w": f32(4, 3, 3, 3)},
                   {"stride": (2, 1), "padding": (1, 1, 1, 1)})


def test_channel_mismatch_says_which_counts_differ():
    with pytest.raises(VerificationError,
                       match="conv2d: input 'w' has 3 channels per group but 'x' has 4"):
        CONV.infer({"x": f32(1, 4, 8, 8), "w": f32(2, 3, 3, 3)})


def test_groups_split_the_channels():
    out = CONV.infer({"x": f32(1, 4, 5, 5), "w": f32(6, 2, 3, 3)}, {"groups": 2})
    assert out["y"] == f32(1, 6, 3, 3)


def test_groups_must_divide_the_channel_counts():
    with pytest.raises(VerificationError, match="groups=3 must divide"):
        CONV.infer({"x": f32(1, 4, 5, 5), "w": f32(6, 2, 3, 3)}, {"groups": 3})


def test_bias_must_have_one_value_per_output_channel():
    with pytest.raises(VerificationError, match="length of 'b' is 5"):
        CONV.infer({"x": f32(1, 3, 5, 5), "w": f32(4, 3, 3, 3), "b": f32(5)})


def test_kernel_larger_than_padded_input_is_rejected():
    with pytest.raises(VerificationError, match="window \\(5\\) is larger"):
        CONV.infer({"x": f32(1, 1, 3, 3), "w": f32(1, 1, 5, 5)})


def test_wrong_rank_is_rejected():
    with pytest.raises(VerificationError, match="input 'x' must have rank 4"):
        CONV.infer({"x": f32(3, 8, 8), "w": f32(4, 3, 3, 3)})


# reference semantics ---------------------------------------------------------
@pytest.mark.parametrize("attrs", [
    {},
    {"padding": (1, 1, 1, 1)},
    {"stride": (2, 2), "padding": (0, 1, 2, 1)},
    {"dilation": (2, 1), "padding": (2, 0, 1, 0)},
    {"groups": 2, "stride": (1, 2)},
])
def test_evaluate_matches_the_loop_nest(attrs):
    rng = np.random.default_rng(0)
    x, w, b = random(rng, 2, 4, 6, 7), random(rng, 6, 4 // attrs.get("groups", 1), 3, 2), random(rng, 6)
    y = CONV.evaluate({"x": x, "w": w, "b": b}, attrs)["y"]
    np.testing.assert_allclose(y, conv_loops(x, w, b, **attrs), rtol=1e-5, atol=1e-5)
    assert y.dtype == np.float32


def test_evaluate_without_bias_matches_the_loop_nest():
    rng = np.random.default_rng(1)
    x, w = random(rng, 1, 2, 4, 4), random(rng, 3, 2, 2, 2)
    np.testing.assert_allclose(CONV.evaluate({"x": x, "w": w})["y"], conv_loops(x, w),
                               rtol=1e-5, atol=1e-5)


# lowering --------------------------------------------------------------------
def test_lowering_with_symbolic_shapes_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(2)
    node = tensor_node("c", "conv2d", {"x": f32("N", 2, "H", "W"), "w": f32(3, 2, 3, 3),
                                       "b": f32(3)}, {"padding": (1, 1, 1, 1)})
    assert_lowering_matches(node, {"x": random(rng, 2, 2, 5, 4), "w": random(rng, 3, 2, 3, 3),
                                   "b": random(rng, 3)})


def test_lowering_with_groups_stride_and_dilation_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(3)
    inputs = {"x": random(rng, 1, 4, 7, 6), "w": random(rng, 4, 2, 2, 3)}
    node = tensor_node("c", "conv2d", types_of(**inputs),
                       {"groups": 2, "stride": (2, 1), "dilation": (2, 1), "padding": (1, 0, 0, 2)})
    assert_lowering_matches(node, inputs)


# residual summand ------------------------------------------------------------
def test_a_residual_summand_is_added_before_the_activation():
    rng = np.random.default_rng(4)
    x, w, b, z = random(rng, 2, 3, 5, 5), random(rng, 4, 3, 3, 3), random(rng, 4), \
        random(rng, 2, 4, 5, 5)
    attrs = {"padding": (1, 1, 1, 1), "activation": "relu"}
    y = CONV.evaluate({"x": x, "w": w, "b": b, "z": z}, attrs)["y"]
    expected = np.maximum(conv_loops(x, w, b, padding=(1, 1, 1, 1)) + z, 0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_a_residual_summand_must_have_the_result_shape():
    with pytest.raises(VerificationError, match="dimension 1 of 'z' is 3 but dimension 1 of "
                                                "the result is 4"):
        CONV.infer({"x": f32(1, 3, 5, 5), "w": f32(4, 3, 3, 3), "z": f32(1, 3, 3, 3)})


def test_a_convolution_with_a_residual_summand_is_not_perforated():
    with pytest.raises(VerificationError, match="residual summand 'z' cannot be perforated"):
        CONV.infer({"x": f32(1, 3, 5, 5), "w": f32(4, 3, 3, 3), "z": f32(1, 4, 3, 3)},
                   {"perforate_rows": (2, 0)})


@pytest.mark.parametrize("attrs", [{"padding": (1, 1, 1, 1), "activation": "relu"},
                                   {"groups": 3, "stride": (2, 1)}])
def test_lowering_with_a_residual_summand_matches_evaluate(attrs):
    pytest.importorskip("hpvm.interp")
    rng = np.random.default_rng(5)
    inputs = {"x": random(rng, 2, 3, 6, 5), "w": random(rng, 6, 3 // attrs.get("groups", 1), 3, 3)}
    y = CONV.infer(types_of(**inputs), attrs)["y"]
    inputs["z"] = random(rng, *y.shape)
    assert_lowering_matches(tensor_node("c", "conv2d", types_of(**inputs), attrs), inputs)
