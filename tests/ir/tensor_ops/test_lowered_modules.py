"""Every op's lowering as a module: it verifies, survives the text form,
and the interpreter runs it to evaluate()'s results."""
import numpy as np
import pytest

from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F16, BufferType
from hpvm.ir.tensor_ops import TENSOR_OPS, get_op, tensor_node
from hpvm.ir.tensor_ops.testing import example_nodes

EXAMPLES = example_nodes()


def lowered_graph_module(node):
    testing = pytest.importorskip("hpvm.interp.testing")
    function, replication = get_op(node.body.op).lower(node.name, node.body)
    return testing.kernel_module(function, replication)


def test_examples_cover_every_op():
    assert set(EXAMPLES) == set(TENSOR_OPS)


@pytest.mark.parametrize("op", sorted(EXAMPLES))
def test_lowered_module_verifies(op):
    verify = pytest.importorskip("hpvm.ir.verify").verify
    verify(lowered_graph_module(EXAMPLES[op][0]))


@pytest.mark.parametrize("op", sorted(EXAMPLES))
def test_lowered_module_round_trips_through_text(op):
    text = pytest.importorskip("hpvm.ir.text")
    module = lowered_graph_module(EXAMPLES[op][0])
    assert text.parse_module(text.print_module(module)) == module


@pytest.mark.parametrize("op", sorted(EXAMPLES))
def test_lowered_example_matches_evaluate(op):
    pytest.importorskip("hpvm.interp")
    node, inputs = EXAMPLES[op]
    assert_lowering_matches(node, inputs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["conv2d", "gemm", "avg_pool", "softmax", "batchnorm"])
def test_lowering_in_half_precision_matches_evaluate(op):
    pytest.importorskip("hpvm.interp")
    node, inputs = EXAMPLES[op]
    half = {port: a.astype(np.float16) for port, a in inputs.items()}
    types = {p.name: BufferType(F16, p.type.shape) for p in node.body.params
             if p.direction == "in"}
    node = tensor_node(node.name, op, types, node.body.attrs)
    assert_lowering_matches(node, half, rtol=2e-2, atol=2e-2)
