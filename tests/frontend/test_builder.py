"""The graph builder: leaves, internal nodes, edges, bindings, streaming."""
import numpy as np
import pytest

import hpvm.lang as hl
from hpvm.frontend import FrontendError
from hpvm.interp import Interpreter, run_module
from hpvm.ir.kernel import Binary
from hpvm.lang import Buffer, Out, f32, i64, instance_id


@hl.kernel
def inc(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    i = instance_id(0)
    y[i] = x[i] + 1


@hl.kernel
def twice(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    i = instance_id(0)
    y[i] = x[i] * 2


@hl.kernel
def blocks(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], size: i64):
    b = instance_id(0)
    for k in range(size):
        y[b * size + k] = x[b * size + k]


def chain(n_stages=3, streaming=False):
    g = hl.Graph("chain")
    nodes = [g.leaf(inc, replication=("N",), name=f"s{k}") for k in range(n_stages)]
    g.bind_in("x", nodes[0].inp("x"), streaming=streaming)
    for a, b in zip(nodes, nodes[1:]):
        g.edge(a.out("y"), b.inp("x"), kind="one-to-one", streaming=streaming)
    g.bind_out(nodes[-1].out("y"), "y", streaming=streaming)
    return g


def test_parameters_are_declared_by_bindings():
    graph = chain().build().root_graph
    assert [(p.name, p.direction, str(p.type)) for p in graph.params] == [
        ("x", "in", "f32[N]"), ("y", "out", "f32[N]")]


def test_streaming_pipeline_returns_frames_in_push_order():
    run = Interpreter(chain(streaming=True).build())
    run.start()
    for k in range(10):
        run.push(x=np.full(3, k, np.float32))
    results = [run.pop()["y"][0] for _ in range(10)]
    assert results == [k + 3 for k in range(10)]


def test_internal_node_ports_are_the_child_graph_parameters():
    inner = hl.Graph("inner")
    a, b = inner.leaf(inc, replication=("N",)), inner.leaf(twice, replication=("N",))
    inner.bind_in("x", a.inp("x"))
    inner.edge(a.out("y"), b.inp("x"))
    inner.bind_out(b.out("y"), "y")
    outer = hl.Graph("outer")
    node = outer.internal(inner)
    outer.bind_in("x", node.inp("x"))
    outer.bind_out(node.out("y"), "y")
    module = outer.build()
    assert set(module.graphs) == {"outer", "inner"}
    np.testing.assert_array_equal(run_module(module, {"x": np.ones(2, np.float32)})["y"], [4, 4])


def test_replication_may_be_an_expression_string():
    g = hl.Graph("g")
    node = g.leaf(blocks, replication=("N // size",))
    g.bind_in("x", node.inp("x"))
    g.bind_in("size", node.inp("size"))
    g.bind_out(node.out("y"), "y")
    module = g.build()
    assert isinstance(module.root_graph.nodes[0].replication[0], Binary)
    out = run_module(module, {"x": np.arange(6, dtype=np.float32), "size": 2})
    np.testing.assert_array_equal(out["y"], np.arange(6))


def test_a_kernel_used_twice_is_one_function():
    module = chain().build()
    assert list(module.functions) == ["inc"]


@hl.kernel
def twice3(x: Buffer[f32, 3], y: Out[Buffer[f32, 3]]):
    i = instance_id(0)
    y[i] = x[i] * 2


def test_constant_node_feeds_a_leaf():
    g = hl.Graph("g")
    weights = g.constant(np.array([1, 2, 3], np.float32), name="w")
    node = g.leaf(twice3, replication=(3,))
    g.edge(weights.out("value"), node.inp("x"))
    g.bind_out(node.out("y"), "y")
    np.testing.assert_array_equal(run_module(g.build(), {})["y"], [2, 4, 6])


def test_unknown_port_is_refused_with_the_list_of_ports():
    g = hl.Graph("g")
    node = g.leaf(inc, replication=("N",))
    with pytest.raises(FrontendError, match="no port 'z'") as info:
        node.inp("z")
    assert "in x" in info.value.diagnostics[0].fix
    assert info.value.diagnostics[0].location.file == __file__


def test_edge_from_an_input_port_is_refused():
    g = hl.Graph("g")
    node = g.leaf(inc, replication=("N",))
    with pytest.raises(FrontendError, match="not an output"):
        node.out("x")


def test_edge_between_different_buffer_types_is_refused():
    @hl.kernel
    def ints(x: Buffer[i64, "N"], y: Out[Buffer[i64, "N"]]):
        i = instance_id(0)
        y[i] = x[i]
    g = hl.Graph("g")
    a, b = g.leaf(inc, replication=("N",)), g.leaf(ints, replication=("N",))
    with pytest.raises(FrontendError, match="different buffer types"):
        g.edge(a.out("y"), b.inp("x"))


def test_duplicate_node_name_is_refused():
    g = hl.Graph("g")
    g.leaf(inc, name="a")
    with pytest.raises(FrontendError, match="already has a node 'a'"):
        g.leaf(inc, name="a")


def test_unknown_edge_kind_is_refused():
    g = hl.Graph("g")
    a, b = g.leaf(inc, replication=("N",)), g.leaf(twice, replication=("N",))
    with pytest.raises(FrontendError, match="edge kind"):
        g.edge(a.out("y"), b.inp("x"), kind="broadcast")
