"""Small graphs the battery places node by node, built with the IR API.

Each node can carry a hint, so a test puts exactly the nodes it wants on
the target under test and on the second (loopback) device::

    module = chain(("mydevice", "sdk_loopback", "mydevice"))
"""
from __future__ import annotations

from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Edge, Graph, InstanceId, KernelBody,
    KernelFunction, Load, Module, Node, Parameter, Store, Var,
)

VECTOR = BufferType(F32, ("N",))
Hints = tuple  # one target name (or None) per node


def _elementwise(name: str, op) -> KernelFunction:
    """y[i] = op(x[i]) over a vector, one instance per element."""
    i = InstanceId(0)
    body = (Store("y", (i,), op(Load("x", (i,), F32))),)
    return KernelFunction(name, (Parameter("x", VECTOR, "in"), Parameter("y", VECTOR, "out")), body)


def _increment_in_place() -> KernelFunction:
    """x[i] += 1."""
    i = InstanceId(0)
    body = (Store("x", (i,), Load("x", (i,), F32) + 1.0),)
    return KernelFunction("bump", (Parameter("x", VECTOR, "inout"),), body)


DOUBLE = _elementwise("double", lambda v: v * 2.0)
INCREMENT = _elementwise("inc", lambda v: v + 1.0)
TRIPLE = _elementwise("triple", lambda v: v * 3.0)


def _node(name: str, function: KernelFunction, hint: str | None) -> Node:
    return Node(name, KernelBody(function.name), (Var("N", I64),), hint)


def _module(name: str, functions, graph: Graph) -> Module:
    return Module(name, {f.name: f for f in functions}, {"main": graph}, "main")


def chain(hints: Hints = (None, None, None)) -> Module:
    """b = ((a * 2) + 1) * 3 through nodes s, t, u (in that order)."""
    nodes = (_node("s", DOUBLE, hints[0]), _node("t", INCREMENT, hints[1]),
             _node("u", TRIPLE, hints[2]))
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("b", VECTOR, "out")), nodes,
                  edges=(Edge("s", "y", "t", "x"), Edge("t", "y", "u", "x")),
                  bind_ins=(BindIn("a", "s", "x"),), bind_outs=(BindOut("u", "y", "b"),))
    return _module("chain", (DOUBLE, INCREMENT, TRIPLE), graph)


def diamond(hints: Hints = (None, None, None)) -> Module:
    """c = 2 * (2a) read by ``reader``, d = 2a + 1 updated in place by
    ``updater``: both consume one value; the reader must see it unchanged."""
    bump = _increment_in_place()
    nodes = (_node("copy", DOUBLE, hints[0]), _node("reader", DOUBLE, hints[1]),
             _node("updater", bump, hints[2]))
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")), nodes,
                  edges=(Edge("copy", "y", "reader", "x"), Edge("copy", "y", "updater", "x")),
                  bind_ins=(BindIn("a", "copy", "x"),),
                  bind_outs=(BindOut("reader", "y", "c"), BindOut("updater", "x", "d")))
    return _module("diamond", (DOUBLE, bump), graph)


def independent_pair(hint: str | None) -> Module:
    """Two nodes with no edge between them: c = 2a, d = a + 1."""
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")),
                  (_node("p", DOUBLE, hint), _node("q", INCREMENT, hint)),
                  bind_ins=(BindIn("a", "p", "x"), BindIn("a", "q", "x")),
                  bind_outs=(BindOut("p", "y", "c"), BindOut("q", "y", "d")))
    return _module("pair", (DOUBLE, INCREMENT), graph)


def one_node_module(node: Node, hint: str | None = None) -> Module:
    """A module whose root graph runs only ``node`` (a tensor-op or
    constant node): every port of the node is a graph parameter."""
    node = Node(node.name, node.body, node.replication, hint, dict(node.attributes))
    params = tuple(node.body.params)
    graph = Graph("main", params, (node,),
                  bind_ins=tuple(BindIn(p.name, node.name, p.name) for p in params if p.reads),
                  bind_outs=tuple(BindOut(node.name, p.name, p.name) for p in params if p.writes))
    return Module(node.name, {}, {"main": graph}, "main")
