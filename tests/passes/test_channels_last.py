"""The choice of the values stored channels-last between a target's
nodes (hpvm.passes.channels_last), with lowerings stubbed: which ports
each node is asked for, and how a refusal sends values back to NCHW."""
from types import SimpleNamespace

import numpy as np

from hpvm.ir import F32, BufferType
from hpvm.ir.graph import BindOut, ConstantBody, Edge, Graph, Node
from hpvm.passes.channels_last import lowered_with_layouts


def graph(edges, outputs=()) -> Graph:
    """Nodes named by ``edges`` ((source, destination, port) of values at
    port ``y``), ``outputs`` the nodes whose ``y`` the graph returns."""
    names = sorted({n for source, destination, _ in edges for n in (source, destination)})
    body = ConstantBody(BufferType(F32, (1,)), np.zeros(1, np.float32))
    return Graph("main", (), tuple(Node(n, body) for n in names),
                 tuple(Edge(s, "y", d, p) for s, d, p in edges), (),
                 tuple(BindOut(n, "y", f"out_{n}") for n in outputs))


class Lowerings:
    """Stub lowerings: node -> the ports it can store channels-last,
    ``refuses(node, asked)``: ports it refuses when asked for ``asked``."""

    def __init__(self, capable, refuses=lambda node, asked: set()):
        self.capable, self.refuses, self.asked = capable, refuses, []

    def __call__(self, node, ports):
        self.asked.append((node.name, ports))
        honoured = (ports & self.capable[node.name]) - self.refuses(node.name, ports)
        return SimpleNamespace(channels_last=frozenset(honoured))


def chosen(result) -> dict:
    return {name: set(lowered.channels_last) for name, lowered in result.items()}


def candidates(lower):
    return {name: tuple(sorted(ports)) for name, ports in lower.capable.items()}


def test_values_between_capable_ports_are_stored_channels_last():
    lower = Lowerings({"a": {"y"}, "b": {"x", "y"}, "c": {"x"}})
    g = graph([("a", "b", "x"), ("b", "c", "x")])
    assert chosen(lowered_with_layouts(g, candidates(lower), lower)) == {
        "a": {"y"}, "b": {"x", "y"}, "c": {"x"}}


def test_outputs_and_values_read_by_a_node_without_the_port_stay_nchw():
    lower = Lowerings({"a": {"y"}, "b": {"x", "y"}, "c": set(), "d": {"x"}})
    g = graph([("a", "b", "x"), ("a", "c", "x"), ("b", "d", "x")], outputs=("b",))
    assert chosen(lowered_with_layouts(g, candidates(lower), lower)) == {
        "a": set(), "b": set(), "c": set(), "d": set()}


def test_a_refused_port_sends_its_value_back_and_its_nodes_are_lowered_again():
    # b stores its summand z as its result y or not at all (as a
    # lowering that reads z at y's index would)
    def tied(node, asked):
        return {"y", "z"} & asked if node == "b" and len({"y", "z"} & asked) == 1 else set()
    lower = Lowerings({"a": {"y"}, "b": {"x", "y", "z"}, "c": {"x"}, "n": set()}, tied)
    g = graph([("a", "b", "x"), ("n", "b", "z"), ("b", "c", "x")])
    result = chosen(lowered_with_layouts(g, candidates(lower), lower))
    assert result == {"a": {"y"}, "b": {"x"}, "c": set(), "n": set()}
    assert ("c", frozenset()) in lower.asked  # lowered again once b's y went back
