"""The approximation attributes of tensor ops (perforate_rows / _cols and
sample_filter on conv2d, sample on pools) and perforation_fill: lowered
kernels compute what evaluate does (both conv lowerings), kept positions
are exact, the error on smooth data is small, bad patterns are refused."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError, VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import TENSOR_OPS, tensor_node
from hpvm.ir.tensor_ops.perforation import kept_length, kept_positions

pytest.importorskip("hpvm.interp")

CONV = TENSOR_OPS["conv2d"]
PATTERNS = [(2, 0), (2, 1), (3, 1), (4, 3)]


def conv_inputs(seed=0, channels=4, size=(9, 10)):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((2, channels) + size).astype(np.float32),
            "w": rng.standard_normal((6, channels, 3, 3)).astype(np.float32),
            "b": rng.standard_normal(6).astype(np.float32)}


def smooth_image(size=32):
    """A batch of smooth images: neighbouring pixels are close."""
    grid = np.linspace(0, 3, size, dtype=np.float32)
    image = np.sin(grid[:, None]) * np.cos(grid[None, :] * 0.7)
    return np.stack([image, image.T])[None].astype(np.float32)


def node_of(op, inputs, attrs, symbolic=()):
    types = {port: BufferType(F32, ("N",) + a.shape[1:] if port in symbolic else a.shape)
             for port, a in inputs.items()}
    return tensor_node("n", op, types, attrs)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("axis", ["perforate_rows", "perforate_cols"])
@pytest.mark.parametrize("groups", [1, 2], ids=["tiled", "reference"])
def test_perforated_conv_lowering_matches_evaluate(pattern, axis, groups):
    inputs = conv_inputs()
    if groups == 2:
        inputs["w"] = inputs["w"][:, :2]
    attrs = {"padding": (1, 1, 1, 1), "groups": groups, axis: pattern}
    assert_lowering_matches(node_of("conv2d", inputs, attrs, ("x",)), inputs)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("groups", [1, 2], ids=["tiled", "reference"])
def test_sampled_conv_lowering_matches_evaluate(pattern, groups):
    inputs = conv_inputs(1)
    if groups == 2:
        inputs["w"] = inputs["w"][:, :2]
    attrs = {"padding": (0, 1, 2, 1), "groups": groups, "sample_filter": pattern,
             "perforate_rows": (2, 1), "activation": "relu"}
    assert_lowering_matches(node_of("conv2d", inputs, attrs), inputs)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("axis", [2, 3])
def test_perforation_fill_lowering_matches_evaluate(pattern, axis):
    size = 7
    shape = [2, 3, 5, 5]
    shape[axis] = kept_length(size, *pattern)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    attrs = {"axis": axis, "every": pattern[0], "offset": pattern[1], "size": size}
    assert_lowering_matches(node_of("perforation_fill", {"x": x}, attrs), {"x": x})


@pytest.mark.parametrize("pattern", PATTERNS)
def test_perforated_conv_then_fill_is_exact_on_kept_rows_and_close_on_smooth_data(pattern):
    inputs = {"x": smooth_image(), "w": np.full((3, 2, 3, 3), 0.1, np.float32)}
    exact = CONV.evaluate(inputs, {"padding": (1, 1, 1, 1)})["y"]
    compact = CONV.evaluate(inputs, {"padding": (1, 1, 1, 1), "perforate_rows": pattern})["y"]
    every, offset = pattern
    filled = TENSOR_OPS["perforation_fill"].evaluate(
        {"x": compact}, {"axis": 2, "every": every, "offset": offset, "size": 32})["y"]
    kept = kept_positions(32, every, offset)
    np.testing.assert_array_equal(filled[:, :, kept], exact[:, :, kept])
    error = np.abs(filled - exact).mean() / np.abs(exact).mean()
    assert 0 < error < 0.05


def test_a_sampled_filter_is_rescaled_so_constant_inputs_keep_their_sum():
    inputs = {"x": np.ones((1, 4, 6, 6), np.float32), "w": np.ones((2, 4, 3, 3), np.float32)}
    exact = CONV.evaluate(inputs)["y"]
    sampled = CONV.evaluate(inputs, {"sample_filter": (3, 0)})["y"]
    np.testing.assert_allclose(sampled, exact, rtol=1e-6)


@pytest.mark.parametrize("op", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("pattern", [(2, 0), (2, 1), (3, 2), (4, 0)])
def test_sampled_pool_lowering_matches_evaluate(op, pattern):
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 6)).astype(np.float32)
    attrs = {"kernel": (2, 3), "stride": (2, 3), "sample": pattern}
    assert_lowering_matches(node_of(op, {"x": x}, attrs, ("x",)), {"x": x})


def test_sampled_pools_use_only_the_kept_cells():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    attrs = {"kernel": (2, 2), "stride": (2, 2), "sample": (2, 1)}  # keep cells 0 and 2
    np.testing.assert_array_equal(TENSOR_OPS["max_pool"].evaluate({"x": x}, attrs)["y"],
                                  [[[[4, 6], [12, 14]]]])
    np.testing.assert_array_equal(TENSOR_OPS["avg_pool"].evaluate({"x": x}, attrs)["y"],
                                  [[[[2, 4], [10, 12]]]])


@pytest.mark.parametrize("attrs, words", [
    ({"sample_filter": (1, 0)}, "2 <= every"),
    ({"perforate_rows": (2, 2)}, "offset < every"),
    ({"perforate_cols": 2}, "perforate_cols"),
])
def test_bad_conv_patterns_name_the_attribute(attrs, words):
    with pytest.raises(ExecutionError, match=words):
        CONV.evaluate(conv_inputs(), attrs)


def test_pool_sampling_refuses_padding():
    types = {"x": BufferType(F32, (1, 1, 4, 4))}
    with pytest.raises(VerificationError, match="no padding"):
        tensor_node("pool", "max_pool", types,
                    {"kernel": (2, 2), "padding": (1, 1, 0, 0), "sample": (2, 0)})


def test_perforation_fill_checks_the_compact_length():
    types = {"x": BufferType(F32, (1, 1, 5, 4))}
    with pytest.raises(VerificationError, match="size=9 keeps 4"):
        tensor_node("fill", "perforation_fill", types,
                    {"axis": 2, "every": 2, "offset": 0, "size": 9})
