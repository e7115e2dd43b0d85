"""fuse-ops folds bias, batchnorm and activations into conv2d and gemm, and
the fused module computes what the unfused one does."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.passes import run_pipeline
from hpvm.runtime import compile

RNG = np.random.default_rng(0)


def model(nodes, x_shape, initializers):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a.astype(np.float32), n) for n, a in initializers.items()])
    return load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                optimize=False)


def ops(module):
    return [n.body.op for n in module.root_graph.nodes if hasattr(n.body, "op")]


def op_node(module, op):
    return next(n for n in module.root_graph.nodes if getattr(n.body, "op", None) == op)


def assert_same_results(before, after, x):
    expected = compile(before, ["interp"])(x=x)["y"]
    for target in ("interp", "cpu"):
        np.testing.assert_allclose(compile(after, [target])(x=x)["y"], expected,
                                   rtol=1e-4, atol=1e-5)


def conv_bn_relu():
    c = 4
    return model([
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"])], ["N", 3, 5, 5],
        {"w": RNG.standard_normal((c, 3, 3, 3)), "s": RNG.uniform(0.5, 1.5, c),
         "b": RNG.standard_normal(c), "m": RNG.standard_normal(c), "v": RNG.uniform(0.5, 2, c)})


def test_conv_batchnorm_relu_becomes_one_conv_with_bias_and_activation():
    before = conv_bn_relu()
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["conv2d"]
    conv = op_node(after, "conv2d")
    assert conv.body.attrs["activation"] == "relu"
    assert {p.name for p in conv.body.params} == {"x", "w", "b", "y"}
    assert_same_results(before, after, RNG.standard_normal((2, 3, 5, 5)).astype(np.float32))


def test_conv_then_channel_bias_add_becomes_the_conv_bias():
    before = model([helper.make_node("Conv", ["x", "w"], ["c"]),
                    helper.make_node("Add", ["c", "bias"], ["t"]),
                    helper.make_node("Tanh", ["t"], ["y"])], [1, 2, 4, 4],
                   {"w": RNG.standard_normal((3, 2, 1, 1)), "bias": RNG.standard_normal((3, 1, 1))})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["conv2d"]
    assert_same_results(before, after, RNG.standard_normal((1, 2, 4, 4)).astype(np.float32))


def test_an_add_along_the_width_is_not_taken_as_a_bias():
    before = model([helper.make_node("Conv", ["x", "w"], ["c"]),
                    helper.make_node("Add", ["c", "bias"], ["y"])], [1, 2, 3, 3],
                   {"w": RNG.standard_normal((3, 2, 1, 1)), "bias": RNG.standard_normal(3)})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["conv2d", "add"]


def test_matmul_add_relu_becomes_a_gemm_with_activation():
    before = model([helper.make_node("MatMul", ["x", "w"], ["m"]),
                    helper.make_node("Add", ["m", "bias"], ["a"]),
                    helper.make_node("Relu", ["a"], ["y"])], ["N", 6],
                   {"w": RNG.standard_normal((6, 5)), "bias": RNG.standard_normal(5)})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["gemm"]
    assert op_node(after, "gemm").body.attrs["activation"] == "relu"
    assert_same_results(before, after, RNG.standard_normal((3, 6)).astype(np.float32))


def test_a_result_read_twice_is_not_fused():
    before = model([helper.make_node("Gemm", ["x", "w"], ["g"]),
                    helper.make_node("Relu", ["g"], ["r"]),
                    helper.make_node("Add", ["g", "r"], ["y"])], [2, 3],
                   {"w": RNG.standard_normal((3, 3))})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ops(before)


def test_a_clip_after_conv_or_gemm_becomes_their_activation_on_every_target():
    """ReLU6 (Clip 0..6) and another clip fold into a depthwise conv and a
    gemm as ("clipped_relu", min, max); each target that runs tensor ops
    agrees with the unfused module."""
    from hpvm.registry import get_registry
    bound = lambda name, value: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.float32(value), name))
    before = model([
        bound("lo", 0.0), bound("hi", 6.0), bound("lo2", -0.5), bound("hi2", 0.75),
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], group=4),
        helper.make_node("Clip", ["c", "lo", "hi"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["g"]),
        helper.make_node("Clip", ["g", "lo2", "hi2"], ["y"])], [2, 4, 5, 5],
        {"w": RNG.standard_normal((4, 1, 3, 3)) * 3, "fc": RNG.standard_normal((100, 7))})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert "clipped_relu" not in ops(after)
    assert op_node(after, "conv2d").body.attrs["activation"] == ("clipped_relu", 0.0, 6.0)
    assert op_node(after, "gemm").body.attrs["activation"] == ("clipped_relu", -0.5, 0.75)
    x = RNG.standard_normal((2, 4, 5, 5)).astype(np.float32)
    expected = compile(before, ["interp"])(x=x)["y"]
    registry = get_registry()
    for target in ("interp", "cpu", "aten", "movidius"):
        if registry.target(target).availability.available:
            np.testing.assert_allclose(compile(after, [target])(x=x)["y"], expected,
                                       rtol=1e-4, atol=1e-5, err_msg=target)


def residual_block(add_inputs=("n", "x"), x_shape=("N", 4, 5, 5)):
    c = 4
    return model([
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
        helper.make_node("Add", list(add_inputs), ["a"]),
        helper.make_node("Relu", ["a"], ["y"])], list(x_shape),
        {"w": RNG.standard_normal((c, x_shape[1], 3, 3)), "s": RNG.uniform(0.5, 1.5, c),
         "b": RNG.standard_normal(c), "m": RNG.standard_normal(c), "v": RNG.uniform(0.5, 2, c)})


@pytest.mark.parametrize("add_inputs", [("n", "x"), ("x", "n")])
def test_a_residual_add_becomes_the_conv_summand_before_its_activation(add_inputs):
    """relu(bn(conv(x)) + x), the add's operands either way round: one
    conv with weights and bias folded, ``x`` as its summand ``z`` and the
    relu as its activation."""
    before = residual_block(add_inputs)
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["conv2d"]
    conv = op_node(after, "conv2d")
    assert {p.name for p in conv.body.params} == {"x", "w", "b", "z", "y"}
    assert conv.body.attrs["activation"] == "relu"
    assert_same_results(before, after, RNG.standard_normal((2, 4, 5, 5)).astype(np.float32))


def test_an_add_that_broadcasts_is_not_a_residual_summand():
    before = model([helper.make_node("Conv", ["x", "w"], ["c"]),
                    helper.make_node("Add", ["c", "x"], ["y"])], [1, 3, 1, 1],
                   {"w": RNG.standard_normal((3, 3, 1, 1))})
    assert ops(run_pipeline(before, "fuse-ops", verify_each=True)) == ["conv2d"]
    broadcast = model([helper.make_node("Conv", ["x", "w"], ["c"]),
                       helper.make_node("Add", ["c", "x"], ["y"])], [1, 1, 3, 3],
                      {"w": RNG.standard_normal((3, 1, 1, 1))})
    assert ops(run_pipeline(broadcast, "fuse-ops", verify_each=True)) == ["conv2d", "add"]


def test_a_batchnorm_after_a_residual_add_is_not_folded_into_the_weights():
    """bn(conv(x) + x): folding would scale the summand as well."""
    c = 3
    before = model([
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "x"], ["a"]),
        helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["y"])],
        ["N", c, 4, 4],
        {"w": RNG.standard_normal((c, c, 3, 3)), "s": RNG.uniform(0.5, 1.5, c),
         "b": RNG.standard_normal(c), "m": RNG.standard_normal(c), "v": RNG.uniform(0.5, 2, c)})
    after = run_pipeline(before, "fuse-ops", verify_each=True)
    assert ops(after) == ["conv2d", "batchnorm"]
    assert_same_results(before, after, RNG.standard_normal((2, c, 4, 4)).astype(np.float32))
