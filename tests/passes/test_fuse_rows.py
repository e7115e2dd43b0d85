"""fuse-rows: a reduction along rows and the elementwise ops around it
become one rowwise node computing what they did; groups whose values are
read outside, reductions over other axes and groups that would make a
cycle are left alone."""
import numpy as np
from onnx import helper

from hpvm.ir.text import parse_module, print_module
from hpvm.passes import TENSOR_PIPELINE, run_pipeline
from hpvm.runtime import compile

from .test_fuse_elementwise import model as onnx_model, ops

RNG = np.random.default_rng(0)


def model(nodes, inputs, initializers=None, outputs=("y",)):
    return onnx_model(nodes, inputs, initializers, outputs, opset=18)


def axes(*values):
    return np.array(values, np.int64)


def layer_norm(residual=False):
    """ONNX's LayerNormalization, after a residual add when asked."""
    nodes = [helper.make_node("LayerNormalization", ["h", "g", "b"], ["y"], axis=-1)]
    if residual:
        nodes.insert(0, helper.make_node("Add", ["x", "z"], ["h"]))
    inputs = {"x": ["N", 5, 32], "z": ["N", 5, 32]} if residual else {"h": ["N", 5, 32]}
    return model(nodes, inputs, {"g": RNG.standard_normal(32).astype(np.float32),
                                 "b": RNG.standard_normal(32).astype(np.float32)})


def softmax_by_hand(extra_output=False):
    nodes = [helper.make_node("ReduceMax", ["x", "ax"], ["m"], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"]), helper.make_node("Exp", ["d"], ["e"]),
             helper.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=1),
             helper.make_node("Div", ["e", "s"], ["y"])]
    return model(nodes, {"x": [3, 4, 16]}, {"ax": axes(-1)},
                 outputs=("y", "s") if extra_output else ("y",))


def same_values(before, after, **inputs):
    for target in ("interp", "cpu"):
        expected = compile(before, [target])(**inputs)
        actual = compile(after, [target])(**inputs)
        for name, value in expected.items():
            np.testing.assert_allclose(actual[name], value, rtol=1e-5, atol=1e-5)


def test_a_layer_norm_with_its_residual_add_is_one_node():
    before = run_pipeline(layer_norm(residual=True), TENSOR_PIPELINE.replace(",fuse-rows", ""))
    assert ops(before).count("reduce") == 2 and len(ops(before)) > 5
    after = run_pipeline(before, "fuse-rows", verify_each=True)
    assert ops(after) == ["rowwise"]
    x, z = (RNG.standard_normal((2, 5, 32)).astype(np.float32) for _ in range(2))
    same_values(before, after, x=x, z=z)
    assert print_module(parse_module(print_module(after))) == print_module(after)


def test_the_default_pipeline_fuses_a_softmax_written_by_hand():
    before = softmax_by_hand()
    after = run_pipeline(before, TENSOR_PIPELINE, verify_each=True)
    assert ops(after) == ["rowwise"]
    same_values(before, after, x=RNG.standard_normal((3, 4, 16)).astype(np.float32))


def test_a_value_read_outside_keeps_the_ops_apart():
    after = run_pipeline(softmax_by_hand(extra_output=True), "fuse-rows")
    assert "rowwise" not in ops(after)


def test_a_reduction_over_a_leading_axis_is_not_a_row():
    before = model([helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=1),
                    helper.make_node("Sub", ["x", "s"], ["y"])], {"x": [4, 8]}, {"ax": axes(0)})
    assert "rowwise" not in ops(run_pipeline(before, "fuse-rows"))


def test_a_group_whose_values_leave_and_come_back_is_left_alone():
    """d = x - sum(x) is read by exp and by the add, and exp's value comes
    back to the add through a matmul: exp and the add are both read
    outside the group (fusing would have made a cycle)."""
    before = model([helper.make_node("ReduceSum", ["x", "ax"], ["s"], keepdims=1),
                    helper.make_node("Sub", ["x", "s"], ["d"]),
                    helper.make_node("Exp", ["d"], ["e"]),
                    helper.make_node("MatMul", ["e", "w"], ["t"]),
                    helper.make_node("Add", ["d", "t"], ["y"])],
                   {"x": [4, 8]}, {"ax": axes(-1), "w": RNG.standard_normal((8, 8)).astype(
                       np.float32)})
    after = run_pipeline(before, "fuse-rows", verify_each=True)
    assert "rowwise" not in ops(after)
    same_values(before, after, x=RNG.standard_normal((4, 8)).astype(np.float32))


def test_an_attention_s_scale_and_mask_join_its_softmax():
    """softmax(q k^T / c + mask): the division and the add are read only by
    the softmax, so the three make one pass over the scores."""
    before = model([helper.make_node("MatMul", ["q", "kt"], ["s"]),
                    helper.make_node("Div", ["s", "c"], ["d"]),
                    helper.make_node("Add", ["d", "mask"], ["a"]),
                    helper.make_node("Softmax", ["a"], ["y"], axis=-1)],
                   {"q": [2, 6, 4], "kt": [2, 4, 6], "mask": [2, 1, 6]},
                   {"c": np.array([2.0], np.float32)})
    after = run_pipeline(before, TENSOR_PIPELINE, verify_each=True)
    assert ops(after) == ["matmul", "rowwise"]
    q, kt, mask = (RNG.standard_normal(s).astype(np.float32)
                   for s in ((2, 6, 4), (2, 4, 6), (2, 1, 6)))
    same_values(before, after, q=q, kt=kt, mask=mask)


def test_a_softmax_alone_stays_the_softmax_op():
    before = model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": [3, 8]})
    assert ops(run_pipeline(before, TENSOR_PIPELINE)) == ["softmax"]
