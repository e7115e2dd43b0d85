"""max_pool and avg_pool: shape inference, semantics, lowering."""
import itertools

import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, I32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

MAX_POOL, AVG_POOL = get_op("max_pool"), get_op("avg_pool")


def f32(*shape):
    return BufferType(F32, shape)


def pool_loops(x, kernel, stride=(1, 1), padding=(0, 0, 0, 0), mode="max",
               count_include_pad=False):
    """Pooling as the textbook loop nest (float64)."""
    batch, channels, height, width = x.shape
    out_h = (height + padding[0] + padding[2] - kernel[0]) // stride[0] + 1
    out_w = (width + padding[1] + padding[3] - kernel[1]) // stride[1] + 1
    y = np.zeros((batch, channels, out_h, out_w))
    for n, c, oh, ow in itertools.product(range(batch), range(channels), range(out_h), range(out_w)):
        cells = []
        for r, s in itertools.product(range(kernel[0]), range(kernel[1])):
            ih, iw = oh * stride[0] - padding[0] + r, ow * stride[1] - padding[1] + s
            if 0 <= ih < height and 0 <= iw < width:
                cells.append(float(x[n, c, ih, iw]))
        if mode == "max":
            y[n, c, oh, ow] = max(cells)
        else:
            y[n, c, oh, ow] = sum(cells) / (kernel[0] * kernel[1] if count_include_pad else len(cells))
    return y


def test_pool_infers_the_window_count():
    out = MAX_POOL.infer({"x": f32("N", 8, 32, 32)}, {"kernel": (2, 2), "stride": (2, 2)})
    assert out["y"] == f32("N", 8, 16, 16)


def test_pool_keeps_symbolic_size_with_same_padding_and_stride_one():
    out = AVG_POOL.infer({"x": f32("N", 8, "H", "W")}, {"kernel": (3, 3), "padding": (1, 1, 1, 1)})
    assert out["y"] == f32("N", 8, "H", "W")


def test_pool_needs_a_kernel():
    with pytest.raises(VerificationError, match="attribute 'kernel' is required"):
        MAX_POOL.infer({"x": f32(1, 1, 4, 4)})


def test_pool_padding_must_be_smaller_than_the_kernel():
    with pytest.raises(VerificationError, match="bottom padding 2 is not smaller than the kernel"):
        MAX_POOL.infer({"x": f32(1, 1, 4, 4)}, {"kernel": (2, 2), "padding": (0, 0, 2, 0)})


def test_avg_pool_rejects_integers_but_max_pool_takes_them():
    ints = BufferType(I32, (1, 1, 4, 4))
    assert MAX_POOL.infer({"x": ints}, {"kernel": 2})["y"] == BufferType(I32, (1, 1, 3, 3))
    with pytest.raises(VerificationError, match="needs float inputs"):
        AVG_POOL.infer({"x": ints}, {"kernel": 2})


ATTRS = [
    {"kernel": (2, 2), "stride": (2, 2)},
    {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 1, 1, 0)},
    {"kernel": (3, 3), "padding": (2, 2, 2, 2)},
]


@pytest.mark.parametrize("attrs", ATTRS)
def test_max_pool_matches_the_loop_nest(attrs):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype(np.float32)
    np.testing.assert_array_equal(MAX_POOL.evaluate({"x": x}, attrs)["y"], pool_loops(x, **attrs))


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("attrs", ATTRS)
def test_avg_pool_matches_the_loop_nest(attrs, include):
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 6)).astype(np.float32)
    y = AVG_POOL.evaluate({"x": x}, {**attrs, "count_include_pad": include})["y"]
    np.testing.assert_allclose(y, pool_loops(x, mode="avg", count_include_pad=include, **attrs),
                               rtol=1e-5, atol=1e-6)


def test_max_pool_on_integers_matches_the_loop_nest():
    x = np.arange(-20, 16, dtype=np.int32).reshape(1, 1, 6, 6)
    attrs = {"kernel": (2, 2), "padding": (1, 1, 1, 1), "stride": (2, 2)}
    np.testing.assert_array_equal(MAX_POOL.evaluate({"x": x}, attrs)["y"], pool_loops(x, **attrs))


@pytest.mark.parametrize("op", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("attrs", ATTRS)
def test_pool_lowering_matches_evaluate(op, attrs):
    pytest.importorskip("hpvm.interp")
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(np.float32)
    assert_lowering_matches(tensor_node("p", op, types_of(x=x), attrs), {"x": x})


def test_avg_pool_lowering_counting_padding_matches_evaluate():
    pytest.importorskip("hpvm.interp")
    x = np.random.default_rng(3).standard_normal((1, 2, 4, 4)).astype(np.float32)
    node = tensor_node("p", "avg_pool", {"x": f32("N", 2, "H", "W")},
                       {"kernel": 3, "padding": 1, "count_include_pad": True})
    assert_lowering_matches(node, {"x": x})
