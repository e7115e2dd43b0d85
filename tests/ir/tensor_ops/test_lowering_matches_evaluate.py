"""Property tests: for random small shapes and attributes, every op's
lowered kernel, run on the interpreter, computes what evaluate() does."""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import tensor_node

pytest.importorskip("hpvm.interp")

EXAMPLES = settings(max_examples=12, deadline=None)
small = st.integers(1, 3)


def arrays(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {port: np.asarray(rng.standard_normal(shape), np.float32)
            for port, shape in shapes.items()}


def scaled(inputs, factor):
    return {port: np.asarray(a * factor, np.float32) for port, a in inputs.items()}


def types(inputs, symbolic_batch=()):
    """Concrete types of ``inputs``, dim 0 named "N" for the given ports."""
    return {port: BufferType(F32, ("N",) + a.shape[1:] if port in symbolic_batch else a.shape)
            for port, a in inputs.items()}


def check(op, inputs, attrs, symbolic_batch=(), tolerance=1e-5):
    node = tensor_node("n", op, types(inputs, symbolic_batch), attrs)
    assert_lowering_matches(node, inputs, rtol=tolerance, atol=tolerance)


def out_size(size, window, stride, pad):
    return (size + pad - window) // stride + 1


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 2), groups=st.integers(1, 2),
       per_group=small, kernels_per_group=st.integers(1, 2), rows=small, cols=small,
       height=st.integers(1, 6), width=st.integers(1, 6),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(*[st.integers(0, 2)] * 4), bias=st.booleans(), symbolic=st.booleans())
def test_conv2d(seed, batch, groups, per_group, kernels_per_group, rows, cols, height, width,
                stride, dilation, padding, bias, symbolic):
    assume(out_size(height, dilation[0] * (rows - 1) + 1, stride[0], padding[0] + padding[2]) >= 1)
    assume(out_size(width, dilation[1] * (cols - 1) + 1, stride[1], padding[1] + padding[3]) >= 1)
    kernels = kernels_per_group * groups
    shapes = {"x": (batch, per_group * groups, height, width), "w": (kernels, per_group, rows, cols)}
    if bias:
        shapes["b"] = (kernels,)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    check("conv2d", arrays(seed, **shapes), attrs, ("x",) if symbolic else (), 1e-4)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), m=small, k=small, n=small,
       batches=st.sampled_from([(None, None), (2, None), (None, 2), (2, 2), (1, 3), (3, 1)]))
def test_matmul(seed, m, k, n, batches):
    a_shape = (m, k) if batches[0] is None else (batches[0], m, k)
    b_shape = (k, n) if batches[1] is None else (batches[1], k, n)
    check("matmul", arrays(seed, a=a_shape, b=b_shape), {}, tolerance=1e-4)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), m=small, k=small, n=small, trans_a=st.booleans(),
       trans_b=st.booleans(), alpha=st.sampled_from([1.0, 0.5, -2.0]),
       beta=st.sampled_from([1.0, 0.0, 3.0]),
       c=st.sampled_from([None, "", "1", "n", "1n", "m1", "mn"]))
def test_gemm(seed, m, k, n, trans_a, trans_b, alpha, beta, c):
    shapes = {"a": (k, m) if trans_a else (m, k), "b": (n, k) if trans_b else (k, n)}
    if c is not None:
        shapes["c"] = tuple({"m": m, "n": n, "1": 1}[d] for d in c)
    attrs = {"alpha": alpha, "beta": beta, "trans_a": trans_a, "trans_b": trans_b}
    check("gemm", arrays(seed, **shapes), attrs, tolerance=1e-4)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), op=st.sampled_from(["add", "mul"]),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3))
def test_add_and_mul(seed, op, shapes):
    a, b = shapes.input_shapes
    check(op, arrays(seed, a=a, b=b), {})


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3),
       data=st.data(), symbolic=st.booleans())
def test_bias_add(seed, shape, data, symbolic):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    inputs = arrays(seed, x=shape, b=(shape[axis],))
    check("bias_add", inputs, {"axis": axis}, ("x",) if symbolic and axis % len(shape) else ())


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=0, max_dims=4, max_side=3),
       op=st.sampled_from(["relu", "clipped_relu", "tanh", "sigmoid"]),
       bounds=st.tuples(st.floats(-2, 0), st.floats(0, 2)), symbolic=st.booleans())
def test_activations(seed, shape, op, bounds, symbolic):
    attrs = {"min": bounds[0], "max": bounds[1]} if op == "clipped_relu" else {}
    inputs = scaled(arrays(seed, x=shape), 4)
    check(op, inputs, attrs, ("x",) if symbolic and shape else ())


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), op=st.sampled_from(["max_pool", "avg_pool"]),
       kernel=st.tuples(small, small), stride=st.tuples(small, small),
       pad_fraction=st.tuples(*[st.floats(0, 0.99)] * 4), height=st.integers(1, 6),
       width=st.integers(1, 6), include=st.booleans(), symbolic=st.booleans())
def test_pools(seed, op, kernel, stride, pad_fraction, height, width, include, symbolic):
    padding = tuple(int(f * kernel[i % 2]) for i, f in enumerate(pad_fraction))
    assume(out_size(height, kernel[0], stride[0], padding[0] + padding[2]) >= 1)
    assume(out_size(width, kernel[1], stride[1], padding[1] + padding[3]) >= 1)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding}
    if op == "avg_pool":
        attrs["count_include_pad"] = include
    check(op, arrays(seed, x=(2, 2, height, width)), attrs, ("x",) if symbolic else ())


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
       data=st.data(), symbolic=st.booleans())
def test_softmax(seed, shape, data, symbolic):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    inputs = scaled(arrays(seed, x=shape), 5)
    check("softmax", inputs, {"axis": axis}, ("x",) if symbolic else (), 1e-5)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=2, max_dims=4, max_side=3),
       epsilon=st.sampled_from([1e-5, 1e-3, 0.5]), symbolic=st.booleans())
def test_batchnorm(seed, shape, epsilon, symbolic):
    channels = (shape[1],)
    inputs = arrays(seed, x=shape, scale=channels, bias=channels, mean=channels, var=channels)
    inputs["var"] = np.abs(inputs["var"])
    check("batchnorm", inputs, {"epsilon": epsilon}, ("x",) if symbolic else ())


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3),
       data=st.data())
def test_reshape(seed, shape, data):
    target = list(data.draw(st.permutations(shape)))
    keep = [i for i, d in enumerate(target) if i < len(shape) and d == shape[i]]
    if keep and data.draw(st.booleans()):
        target[data.draw(st.sampled_from(keep))] = 0
    if data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    assume(target.count(-1) <= 1)
    check("reshape", arrays(seed, x=shape), {"shape": tuple(target)})


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3),
       data=st.data())
def test_flatten(seed, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape)))
    check("flatten", arrays(seed, x=shape), {"axis": axis})


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
       lengths=st.lists(small, min_size=1, max_size=3), data=st.data())
def test_concat(seed, shape, lengths, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shapes = {}
    for i, length in enumerate(lengths):
        part = list(shape)
        part[axis] = length
        shapes[f"x{i}"] = tuple(part)
    check("concat", arrays(seed, **shapes), {"axis": axis})
