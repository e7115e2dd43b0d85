"""Small graphs the battery places node by node, built with the IR API.

Every node of these graphs maps a vector ``x: f32[N]`` to ``y: f32[N]``.
A node is either a kernel (``stage=None``: y = 2x, x + 1, 3x) or, for
targets that run only tensor ops, the unary tensor op ``stage`` ("relu" ...).
Each node can carry a hint, so a test puts exactly the nodes it wants on
the target under test and on the second (loopback) device::

    module = chain(("mydevice", "sdk_loopback", "mydevice"))
    module = chain(("npu", "npu", "npu"), stage="relu")
"""
from __future__ import annotations

from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Edge, Graph, InstanceId, KernelBody,
    KernelFunction, Load, Module, Node, Parameter, Store, Var,
)

VECTOR = BufferType(F32, ("N",))
UNARY_TENSOR_OPS = ("relu", "tanh", "sigmoid", "clipped_relu")
"""Tensor ops that can stand in for a kernel node in these graphs."""

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


KERNELS = (_elementwise("double", lambda v: v * 2.0), _elementwise("inc", lambda v: v + 1.0),
           _elementwise("triple", lambda v: v * 3.0))


def _node(name: str, index: int, hint: str | None, stage: str | None) -> Node:
    """Node ``name`` (x -> y): kernel number ``index`` or tensor op ``stage``."""
    if stage is None:
        return Node(name, KernelBody(KERNELS[index].name), (Var("N", I64),), hint)
    from hpvm.ir.tensor_ops import tensor_node
    return tensor_node(name, stage, {"x": VECTOR}, hint=hint)


def _module(name: str, graph: Graph, stage: str | None, extra=()) -> Module:
    functions = {f.name: f for f in KERNELS + tuple(extra)} if stage is None else {}
    return Module(name, functions, {"main": graph}, "main")


def chain(hints: Hints = (None, None, None), stage: str | None = None) -> Module:
    """b = u(t(s(a))) through nodes s, t, u (in that order)."""
    nodes = tuple(_node(name, i, hint, stage) for i, (name, hint) in enumerate(zip("stu", hints)))
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("b", VECTOR, "out")), nodes,
                  edges=(Edge("s", "y", "t", "x"), Edge("t", "y", "u", "x")),
                  bind_ins=(BindIn("a", "s", "x"),), bind_outs=(BindOut("u", "y", "b"),))
    return _module("chain", graph, stage)


def diamond(hints: Hints = (None, None, None)) -> Module:
    """c = 2 * (2a) read by ``reader``, d = 2a + 1 updated in place by
    ``updater``: both consume one value; the reader must see it unchanged.
    Kernels only (tensor ops update nothing in place)."""
    bump = _increment_in_place()
    nodes = (_node("copy", 0, hints[0], None), _node("reader", 0, hints[1], None),
             Node("updater", KernelBody(bump.name), (Var("N", I64),), hints[2]))
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")), nodes,
                  edges=(Edge("copy", "y", "reader", "x"), Edge("copy", "y", "updater", "x")),
                  bind_ins=(BindIn("a", "copy", "x"),),
                  bind_outs=(BindOut("reader", "y", "c"), BindOut("updater", "x", "d")))
    return _module("diamond", graph, None, (bump,))


def independent_pair(hint: str | None, stage: str | None = None) -> Module:
    """Two nodes with no edge between them: c = p(a), d = q(a)."""
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")),
                  (_node("p", 0, hint, stage), _node("q", 1, hint, stage)),
                  bind_ins=(BindIn("a", "p", "x"), BindIn("a", "q", "x")),
                  bind_outs=(BindOut("p", "y", "c"), BindOut("q", "y", "d")))
    return _module("pair", graph, stage)


def one_node_module(node: Node, hint: str | None = None) -> Module:
    """A module whose root graph runs only ``node`` (a tensor-op or
    constant node): every port of the node is a graph parameter."""
    node = Node(node.name, node.body, node.replication, hint, dict(node.attributes))
    params = tuple(node.body.params)
    graph = Graph("main", params, (node,),
                  bind_ins=tuple(BindIn(p.name, node.name, p.name) for p in params if p.reads),
                  bind_outs=tuple(BindOut(node.name, p.name, p.name) for p in params if p.writes))
    return Module(node.name, {}, {"main": graph}, "main")
