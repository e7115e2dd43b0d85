"""Tensor ops: for every op of hpvm.ir.tensor_ops that the target's matcher
claims, a one-node program placed on the target computes what the
interpreter computes.  Ops it does not claim are skipped and listed."""
from functools import lru_cache

import pytest

from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.testing import INT8_CASES, int8_case
from hpvm_sdk.conformance.graphs import one_node_module
from hpvm_sdk.conformance.summary import SUPPORT_PROPERTY


@lru_cache(maxsize=1)
def _examples():
    from hpvm.ir.tensor_ops.testing import example_nodes
    return example_nodes(seed=0)


@pytest.mark.parametrize("op", sorted(TENSOR_OPS))
def test_claimed_tensor_op_matches_the_interpreter(hpvm_target, op, record_property):
    if op not in _examples():
        pytest.skip(f"hpvm has no example use of tensor op '{op}'")
    node, inputs = _examples()[op]
    module = one_node_module(node)
    if not hpvm_target.target.claims(module, module.root_graph, module.root_graph.nodes[0]):
        record_property(SUPPORT_PROPERTY, f"{op}: not claimed")
        pytest.skip("tensor op not claimed by the target")
    native = op in hpvm_target.target.native_tensor_ops
    record_property(SUPPORT_PROPERTY, f"{op}: {'native' if native else 'lowered to kernels'}")
    exe = hpvm_target.compile(module)
    assert hpvm_target.nodes_on_target(exe), (
        f"target '{hpvm_target.name}' claims tensor op '{op}' but placement put it elsewhere: "
        f"{exe.placement.format()}")
    from hpvm.interp import run_module
    hpvm_target.assert_close(exe(**inputs), run_module(module, inputs), label=op)



@pytest.mark.parametrize("case", sorted(INT8_CASES))
def test_taken_int8_node_matches_the_interpreter(hpvm_target, case, record_property):
    """A node computing in INT8 (operands quantised, tensor_ops/int8.py)
    that placement gives the target computes what the interpreter does;
    a target whose native op cannot is passed over, which placement
    does by itself from ``Target.native_precisions``."""
    from hpvm.interp import run_module
    from hpvm.runtime.placement import takes
    module, inputs = int8_case(case)
    node = module.root_graph.node("op")
    if not takes(hpvm_target.target, module, module.root_graph, node):
        record_property(SUPPORT_PROPERTY, f"{case}: not taken")
        pytest.skip("the target does not take this INT8 node")
    record_property(SUPPORT_PROPERTY, f"{case}: taken")
    exe = hpvm_target.compile(module)
    assert hpvm_target.nodes_on_target(exe), exe.placement.format()
    hpvm_target.assert_close(exe(**inputs), run_module(module, inputs), label=case)
