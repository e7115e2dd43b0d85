"""Programs become dataflow graphs: nodes from parallel loops and tasks,
edges from program order, directions from use, hierarchy from nesting."""
import numpy as np
import networkx as nx

import hpvm.lang as hl
from hpvm.interp import run_module
from hpvm.ir.graph import GraphBody
from hpvm.lang import Buffer, InOut, buffer, f32, i64, parallel_loop, task


def edges(graph):
    return {(e.src_node, e.src_port, e.dst_node, e.dst_port) for e in graph.edges}


def ports(module, node_name, graph=None):
    graph = graph or module.root_graph
    return {p.name: p.direction for p in module.node_params(graph.node(node_name))}


@hl.program
def diamond(x: Buffer[f32, "N"], out: Buffer[f32, "N"]):
    a = buffer(f32, ("N",))
    b = buffer(f32, ("N",))
    for i in parallel_loop(N, ins=(x,), outs=(a,), name="left"):
        a[i] = x[i] + 1
    for i in parallel_loop(N, ins=(x,), outs=(b,), name="right"):
        b[i] = x[i] * 2
    for i in parallel_loop(N, ins=(a, b), outs=(out,), name="join"):
        out[i] = a[i] + b[i]


def test_edges_follow_program_order():
    graph = diamond.build().root_graph
    assert edges(graph) == {("left", "a", "join", "a"), ("right", "b", "join", "b")}


def test_nodes_without_a_path_between_them_are_parallel():
    graph = diamond.build().root_graph
    dag = nx.DiGraph([(e.src_node, e.dst_node) for e in graph.edges])
    assert not nx.has_path(dag, "left", "right") and not nx.has_path(dag, "right", "left")


def test_graph_parameters_get_directions_from_use():
    graph = diamond.build().root_graph
    assert {p.name: p.direction for p in graph.params} == {"x": "in", "out": "out"}
    assert [(b.src_node, b.param) for b in graph.bind_outs] == [("join", "out")]


def test_scalar_parameters_reach_nodes_through_bind_in():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"], a: f32, unused: i64):
        for i in parallel_loop(N, ins=(x,), outs=(y,), name="scale"):
            y[i] = x[i] * a
    module = p.build()
    assert ports(module, "scale") == {"x": "in", "y": "out", "a": "in"}
    assert ("a", "scale", "a") in {(b.param, b.dst_node, b.dst_port) for b in module.root_graph.bind_ins}


def test_second_writer_updates_the_buffer_in_place():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,), name="first"):
            y[i] = x[i]
        for i in parallel_loop(1, outs=(y,), name="patch"):
            y[0] = 100.0
    module = p.build()
    assert ports(module, "patch")["y"] == "inout"
    assert ("first", "y", "patch", "y") in edges(module.root_graph)
    out = run_module(module, {"x": np.arange(3, dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], [100, 1, 2])


def test_inout_parameter_is_input_and_output():
    @hl.program
    def p(x: InOut[Buffer[f32, "N"]]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = x[i] * 2
    module = p.build()
    assert [p.direction for p in module.root_graph.params] == ["inout"]
    np.testing.assert_array_equal(run_module(module, {"x": np.ones(2, np.float32)})["x"], [2, 2])


def test_missing_size_is_bound_through_an_extra_input_port():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,), name="copy"):
            y[i] = x[i]
        for i in parallel_loop(3, outs=(y,), name="fill"):
            y[i] = f32(N)
    module = p.build()
    assert ports(module, "fill") == {"y": "inout"}
    out = run_module(module, {"x": np.zeros(5, np.float32)})
    np.testing.assert_array_equal(out["y"], [5, 5, 5, 0, 0])


def test_returned_intermediate_buffer_is_an_output():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        doubled = buffer(f32, ("N",))
        for i in parallel_loop(N, ins=(x,), outs=(doubled,)):
            doubled[i] = x[i] * 2
        return doubled
    module = p.build()
    assert module.root_graph.param("doubled").direction == "out"
    np.testing.assert_array_equal(run_module(module, {"x": np.ones(2, np.float32)})["doubled"], [2, 2])


def test_task_without_nodes_is_a_leaf_without_replication():
    @hl.program
    def p(x: Buffer[f32, "N"], total: Buffer[f32, 1]):
        with task(ins=(x,), outs=(total,), name="sum"):
            for k in range(N):
                total[0] += x[k]
    node = p.build().root_graph.node("sum")
    assert node.is_leaf and node.replication == ()


def test_task_holding_loops_is_an_internal_node_with_a_child_graph():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        with task(ins=(x,), outs=(y,), name="stage"):
            t = buffer(f32, ("N",))
            for i in parallel_loop(N, ins=(x,), outs=(t,), name="a"):
                t[i] = x[i] + 1
            for i in parallel_loop(N, ins=(t,), outs=(y,), name="b"):
                y[i] = t[i] * 3
    module = p.build()
    node = module.root_graph.node("stage")
    assert isinstance(node.body, GraphBody)
    child = module.graph(node.body.graph)
    assert [n.name for n in child.nodes] == ["a", "b"]
    assert edges(child) == {("a", "t", "b", "t")}
    np.testing.assert_array_equal(run_module(module, {"x": np.ones(2, np.float32)})["y"], [6, 6])


def test_node_names_default_and_stay_unique():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for step in range(2):
            for i in parallel_loop(N, outs=(x,), name="inc"):
                x[i] += 1.0
    module = p.build()
    assert [n.name for n in module.root_graph.nodes] == ["inc", "inc_1"]
    np.testing.assert_array_equal(run_module(module, {"x": np.zeros(2, np.float32)})["x"], [2, 2])


def test_hint_is_kept_on_the_node():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,), hint="gpu"):
            x[i] = 1.0
    assert p.build().root_graph.nodes[0].hint == "gpu"


def test_program_runs_through_call():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,)):
            y[i] = -x[i]
    np.testing.assert_array_equal(p(x=np.ones(2, np.float32))["y"], [-1, -1])


COUNT = 2


def test_compile_time_if_and_captured_constants():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        if COUNT > 1:
            for i in parallel_loop(N, outs=(x,), name="yes"):
                x[i] = COUNT
        else:
            for i in parallel_loop(N, outs=(x,), name="no"):
                x[i] = 0.0
    assert [n.name for n in p.build().root_graph.nodes] == ["yes"]


def test_private_buffer_gives_each_instance_its_own_copy():
    @hl.program
    def p(scratch: Buffer[f32, 4], out: Buffer[f32, "N"]):
        for i in parallel_loop(N, privates=(scratch,), outs=(out,), name="work"):
            scratch[0] = f32(i)
            out[i] = scratch[0] + scratch[1]
    module = p.build()
    assert ports(module, "work")["scratch"] == "private"
    result = run_module(module, {"scratch": np.array([0, 10, 0, 0], np.float32),
                                 "out": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(result["out"], [10, 11, 12])


def test_nested_helpers_are_inlined():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = quadruple(f32(i))
    module = p.build()
    assert list(module.functions) == ["loop0"]
    np.testing.assert_array_equal(run_module(module, {"x": np.zeros(3, np.float32)})["x"], [0, 4, 8])


@hl.kernel
def double_value(v: f32) -> f32:
    return v * 2


@hl.kernel
def quadruple(v: f32) -> f32:
    return double_value(double_value(v))
