"""Outlining sibling leaf nodes into one internal node keeps what the
program computes, and refuses groups that cannot be one node."""
import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir import BindIn, BindOut, Edge, Graph, Module, Parameter
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import verify
from hpvm.passes.outline import OutlineError, convex_groups, outline

_spec = importlib.util.spec_from_file_location(
    "runtime_programs", Path(__file__).parents[1] / "runtime" / "programs.py")
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)

A = np.random.default_rng(0).standard_normal(16).astype(np.float32)


def fan_out() -> Module:
    """The chain s -> t -> u, with t's output also a program output."""
    module = programs.chain()
    graph = module.root_graph
    graph = replace(graph, params=graph.params + (Parameter("mid", programs.VECTOR, "out"),),
                    bind_outs=graph.bind_outs + (BindOut("t", "y", "mid"),))
    return replace(module, graphs={"main": graph})


@pytest.mark.parametrize("members", [["s", "t"], ["t", "u"], ["s", "t", "u"], ["t"]])
def test_an_outlined_group_computes_what_the_nodes_did(members):
    module = fan_out()
    outlined, name = outline(module, "main", members, "group")
    verify(outlined)
    root = outlined.root_graph
    assert name in {n.name for n in root.nodes}
    assert not {n.name for n in root.nodes} & set(members)
    assert parse_module(print_module(outlined)) == outlined
    expected = run_module(module, {"a": A})
    actual = run_module(outlined, {"a": A})
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key])


def test_a_value_read_by_two_members_enters_once():
    vector = programs.VECTOR
    graph = Graph("main", (Parameter("a", vector, "in"), Parameter("c", vector, "out"),
                           Parameter("d", vector, "out")),
                  tuple(programs.node(n, "double") for n in "stu"),
                  (Edge("s", "y", "t", "x"), Edge("s", "y", "u", "x")),
                  (BindIn("a", "s", "x"),), (BindOut("t", "y", "c"), BindOut("u", "y", "d")))
    module = replace(programs.chain(), graphs={"main": graph})
    outlined, name = outline(module, "main", ["t", "u"], "g")
    verify(outlined)
    child = outlined.graph(outlined.root_graph.node(name).body.graph)
    assert [p.name for p in child.params] == ["s_y", "t_y", "u_y"]
    assert len(outlined.root_graph.edges) == 1
    expected = run_module(module, {"a": A})
    assert all(np.array_equal(run_module(outlined, {"a": A})[k], expected[k]) for k in "cd")


def test_a_group_that_would_depend_on_itself_is_refused():
    with pytest.raises(OutlineError, match=r"\['t'\] both read from and feed the group"):
        outline(programs.chain(), "main", ["s", "u"], "g")


@pytest.mark.parametrize("members", [["updater"], ["copy", "updater"], ["reader", "updater"]])
def test_an_in_place_update_leaves_the_group_as_a_new_value(members):
    module = programs.diamond()
    outlined, name = outline(module, "main", members, "g")
    verify(outlined)
    child = outlined.graph(outlined.root_graph.node(name).body.graph)
    assert "updater_x" in {p.name for p in child.params if p.direction == "out"}
    assert all(p.direction in ("in", "out") for p in child.params)
    expected = run_module(module, {"a": A})
    actual = run_module(outlined, {"a": A})
    for key in expected:    # the reader still sees the value before the update
        np.testing.assert_array_equal(actual[key], expected[key])


def test_a_streaming_edge_into_the_group_is_refused():
    with pytest.raises(OutlineError, match="streaming"):
        outline(programs.chain(streaming=True), "main", ["t", "u"], "g")


def test_unknown_nodes_are_named():
    with pytest.raises(OutlineError, match=r"no node\(s\) \['v'\]"):
        outline(programs.chain(), "main", ["t", "v"], "g")


def chain_graph(names, edges) -> Graph:
    nodes = tuple(programs.node(n, "double") for n in names)
    return Graph("main", (), nodes, tuple(Edge(a, "y", b, "x") for a, b in edges))


def test_groups_are_convex_and_as_few_as_the_walk_finds():
    # a -> b -> d and a -> c -> d with b outside: {a, c} and {d} (d would
    # close a path a -> b -> d leaving the group).
    graph = chain_graph("abcd", [("a", "b"), ("b", "d"), ("a", "c"), ("c", "d")])
    assert convex_groups(graph, {"a", "c", "d"}) == [["a", "c"], ["d"]]
    assert convex_groups(graph, {"a", "b", "c", "d"}) == [["a", "b", "c", "d"]]
    # two chains joined only through an outside node stay apart
    graph = chain_graph("abc", [("a", "b"), ("b", "c")])
    assert convex_groups(graph, {"a", "c"}) == [["a"], ["c"]]


def test_a_source_joins_its_readers_group():
    graph = chain_graph("wab", [("w", "b"), ("a", "b")])
    assert convex_groups(graph, {"w", "a", "b"}) == [["w", "a", "b"]]
