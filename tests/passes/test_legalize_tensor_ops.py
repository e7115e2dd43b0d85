"""legalize-tensor-ops: tensor nodes become kernel nodes running the ops'
reference lowerings."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir import F32, BufferType, Parameter
from hpvm.ir.graph import BindIn, BindOut, Edge, Graph, KernelBody, Module, TensorBody
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.verify import verify
from hpvm.passes import PassError, run_pipeline


def matmul_relu() -> Module:
    """y = relu(a @ b) with a symbolic batch size M."""
    a, b = BufferType(F32, ("M", "K")), BufferType(F32, ("K", "N"))
    product = tensor_node("product", "matmul", {"a": a, "b": b})
    y_type = product.body.params[-1].type
    relu = tensor_node("relu", "relu", {"x": y_type})
    out_type = relu.body.params[-1].type
    graph = Graph(
        "main", (Parameter("a", a), Parameter("b", b), Parameter("y", out_type, "out")),
        (product, relu), (Edge("product", "y", "relu", "x"),),
        (BindIn("a", "product", "a"), BindIn("b", "product", "b")),
        (BindOut("relu", "y", "y"),))
    return Module("mm", {}, {"main": graph}, "main")


INPUTS = {"a": np.arange(6, dtype=np.float32).reshape(2, 3) - 2,
          "b": np.arange(12, dtype=np.float32).reshape(3, 4) - 6}


def legalize(module, options=""):
    result = run_pipeline(module, "legalize-tensor-ops" + options, verify_each=True)
    verify(result)
    return result


def test_tensor_nodes_become_kernel_nodes():
    result = legalize(matmul_relu())
    nodes = result.graphs["main"].nodes
    assert all(isinstance(n.body, KernelBody) for n in nodes)
    assert {n.body.function for n in nodes} == set(result.functions)
    assert all(n.replication for n in nodes)


def test_edges_and_bindings_are_unchanged():
    m = matmul_relu()
    result = legalize(m)
    graph, original = result.graphs["main"], m.graphs["main"]
    assert (graph.edges, graph.bind_ins, graph.bind_outs) == (
        original.edges, original.bind_ins, original.bind_outs)


def test_lowered_module_computes_the_same_values():
    m = matmul_relu()
    expected = run_module(m, INPUTS)["y"]
    np.testing.assert_allclose(run_module(legalize(m), INPUTS)["y"], expected, rtol=1e-6)
    np.testing.assert_allclose(expected, np.maximum(INPUTS["a"] @ INPUTS["b"], 0), rtol=1e-6)


def test_kept_ops_stay_tensor_nodes():
    result = legalize(matmul_relu(), "{keep=relu}")
    bodies = {n.name: n.body for n in result.graphs["main"].nodes}
    assert isinstance(bodies["relu"], TensorBody)
    assert isinstance(bodies["product"], KernelBody)


def test_unknown_kept_op_is_reported():
    with pytest.raises(PassError, match="unknown tensor op.*'keep': relux") as info:
        run_pipeline(matmul_relu(), "legalize-tensor-ops{keep=relux}")
    assert "matmul" in str(info.value)


def test_function_names_do_not_collide():
    m = matmul_relu()
    once = legalize(m, "{keep=relu}")
    taken = dict(once.functions)
    # a module already holding functions with the names the lowering picks
    clash = Module("mm", {**taken}, m.graphs, "main")
    result = legalize(clash)
    assert len(result.functions) == len(taken) + 2


def test_legalize_does_not_mutate_its_input():
    m = matmul_relu()
    before = repr(m)
    legalize(m)
    assert repr(m) == before
