"""expand-powers writes pow(x, 2) and pow(x, 3) with a constant exponent as
products of x, which then fuse with the elementwise ops around them; other
powers stay pow."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.passes import TENSOR_PIPELINE, run_pipeline
from hpvm.runtime import compile

RNG = np.random.default_rng(0)


def power_model(exponent, then_add: bool = True, exponent_input: bool = False):
    """y = pow(x, e) (+ s); e a constant, or an input with exponent_input."""
    nodes = [helper.make_node("Pow", ["x", "e"], ["p"])]
    nodes.append(helper.make_node("Add", ["p", "s"], ["y"]) if then_add
                 else helper.make_node("Identity", ["p"], ["y"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])]
    initializers = [numpy_helper.from_array(np.full(5, 0.25, np.float32), "s")]
    exponent = np.asarray(exponent, np.float32)
    if exponent_input:
        inputs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, list(exponent.shape)))
    else:
        initializers.append(numpy_helper.from_array(exponent, "e"))
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializers)
    return load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                optimize=False)


def ops(module):
    return [n.body.op for n in module.root_graph.nodes if hasattr(n.body, "op")]


@pytest.mark.parametrize("exponent,multiplications", [(2.0, 1), (3.0, 2), ([3.0] * 5, 2)])
def test_a_square_or_a_cube_becomes_a_chain_of_products(exponent, multiplications):
    after = run_pipeline(power_model(exponent, then_add=False), "expand-powers",
                         verify_each=True)
    assert ops(after) == ["elementwise"]
    node = next(n for n in after.root_graph.nodes if getattr(n.body, "op", "") == "elementwise")
    assert node.body.attrs["steps"] == (("mul", 1),) * multiplications
    assert not any(n.name.startswith("e") and not hasattr(n.body, "op")
                   for n in after.root_graph.nodes), "the exponent constant is left unread"


@pytest.mark.parametrize("exponent", [2.0, 3.0])
def test_the_products_compute_what_pow_does(exponent):
    """The interpreter's square is pow's exactly; a cube, and the cpu's
    results (which fuse the product with the add), are within an ulp or two
    of the terms."""
    before = power_model(exponent)
    after = run_pipeline(before, TENSOR_PIPELINE, verify_each=True)
    assert "binary" not in ops(after)
    x = np.concatenate([RNG.standard_normal(995) * 10, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32).reshape(-1, 5)
    for target in ("interp", "cpu"):
        got = compile(after, [target])(x=x)["y"]
        expected = compile(before, [target])(x=x)["y"]
        if target == "interp" and exponent == 2.0:
            np.testing.assert_array_equal(got, expected)
        finite = np.isfinite(expected)
        assert np.array_equal(got[~finite], expected[~finite], equal_nan=True)
        scale = np.abs(x[finite]).astype(np.float64) ** exponent + 0.25
        assert np.all(np.abs(got[finite] - expected[finite]) <= 2.4e-7 * scale)


@pytest.mark.parametrize("exponent,exponent_input", [(2.5, False), ([2.0, 3.0, 2.0, 2.0, 2.0],
                                                                  False), (2.0, True)])
def test_other_powers_stay_pow(exponent, exponent_input):
    after = run_pipeline(power_model(exponent, exponent_input=exponent_input), "expand-powers",
                         verify_each=True)
    assert "binary" in ops(after)
