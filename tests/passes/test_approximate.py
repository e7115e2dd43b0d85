"""The approximate pass: knobs parse, apply to the nodes they name
(attributes, precision, perforation_fill nodes wired in), round-trip as
text, and bad pairs are refused with the node and the fix."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.graph import TensorBody
from hpvm.ir.tensor_ops.testing import single_op_module
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import verify
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.approximate import apply_knobs, parse_knob

RNG = np.random.default_rng(0)
CONV_INPUTS = {"x": RNG.standard_normal((2, 3, 8, 8)).astype(np.float32),
               "w": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)}


def conv_module():
    return single_op_module("conv2d", CONV_INPUTS, {"padding": (1, 1, 1, 1)})


def test_knobs_parse_into_precision_and_attributes():
    knob = parse_knob("perf-rows-3-1+fp16")
    assert knob.precision == "fp16" and knob.attrs == {"perforate_rows": (3, 1)}
    assert parse_knob("exact").attrs == {} and parse_knob("exact").precision == "fp32"
    assert parse_knob("redsamp-2-0").ops() == {"max_pool", "avg_pool"}


@pytest.mark.parametrize("text", ["perf-rows-1-0", "perf-rows-2-2", "fast", "samp-2-0+samp-3-0"])
def test_bad_knobs_are_refused(text):
    with pytest.raises(ValueError):
        parse_knob(text)


def test_perforating_rows_and_columns_adds_two_fills_that_restore_the_shape():
    module = run_pipeline(conv_module(), "approximate{knobs=op:perf-rows-2-0+perf-cols-3-1}")
    verify(module)
    graph = module.root_graph
    assert [n.name for n in graph.nodes] == ["op", "op_fill_rows", "op_fill_cols"]
    assert graph.node("op").body.params[-1].type.shape == (2, 4, 4, 5)
    assert [(b.src_node, b.param) for b in graph.bind_outs] == [("op_fill_cols", "y")]
    out = run_module(module, CONV_INPUTS)["y"]
    exact = run_module(conv_module(), CONV_INPUTS)["y"]
    assert out.shape == exact.shape
    np.testing.assert_allclose(out[:, :, 1::2][:, :, :, [0, 2, 3, 5, 6]],
                               exact[:, :, 1::2][:, :, :, [0, 2, 3, 5, 6]], rtol=1e-6)


def test_an_approximated_module_round_trips_as_text():
    module = apply_knobs(conv_module(), {"op": "perf-cols-2-1+samp-3-0+fp16"})
    text = print_module(module)
    assert 'precision = "fp16"' in text and "sample_filter = [3, 0]" in text
    assert print_module(parse_module(text)) == text


def test_the_fills_of_an_fp16_conv_compute_in_fp16():
    module = apply_knobs(conv_module(), {"op": "perf-rows-2-0+perf-cols-2-1+fp16"})
    graph = module.root_graph
    assert [graph.node(n).attributes for n in ("op_fill_rows", "op_fill_cols")] == [
        {"precision": "fp16"}] * 2
    assert apply_knobs(conv_module(), {"op": "perf-rows-2-0"}).root_graph.node(
        "op_fill_rows").attributes == {}


def test_fp16_applies_to_any_float_op():
    module = apply_knobs(single_op_module("relu", {"x": CONV_INPUTS["x"]}), {"op": "fp16"})
    assert module.root_graph.node("op").attributes == {"precision": "fp16"}
    assert isinstance(module.root_graph.node("op").body, TensorBody)


@pytest.mark.parametrize("knobs, words", [
    ({"nope": "fp16"}, "'nope' names no node.*name a leaf node: op"),
    ({"op": "redsamp-2-0"}, "node 'op': approximate: knob 'redsamp-2-0' does not apply to a conv2d.*avg_pool, max_pool"),
    ({"op": "perf-rows-9"}, "unknown knob part"),
])
def test_bad_pairs_name_the_node_and_the_fix(knobs, words):
    with pytest.raises(PassError, match=words):
        apply_knobs(conv_module(), knobs)


def test_a_knob_option_without_a_node_is_refused():
    with pytest.raises(PassError, match="is not node:knob"):
        run_pipeline(conv_module(), "approximate{knobs=fp16}")


def test_perforating_an_axis_twice_is_refused():
    once = apply_knobs(conv_module(), {"op": "perf-rows-2-0"})
    with pytest.raises(PassError, match="already has perforate_rows"):
        apply_knobs(once, {"op": "perf-rows-3-0"})
