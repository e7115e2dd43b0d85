"""Small IR programs for runtime tests, built with the Python IR API."""
from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Edge, Graph, InstanceId, KernelBody,
    KernelFunction, Load, Module, Node, Parameter, Store, Var,
)

VECTOR = BufferType(F32, ("N",))


def elementwise(name: str, op) -> KernelFunction:
    """y[i] = op(x[i]) over a vector, one instance per element."""
    i = InstanceId(0)
    body = (Store("y", (i,), op(Load("x", (i,), F32))),)
    return KernelFunction(name, (Parameter("x", VECTOR, "in"), Parameter("y", VECTOR, "out")), body)


def add_inplace() -> KernelFunction:
    """x[i] += 1 in place."""
    i = InstanceId(0)
    body = (Store("x", (i,), Load("x", (i,), F32) + 1.0),)
    return KernelFunction("bump", (Parameter("x", VECTOR, "inout"),), body)


def node(name, function, hint=None):
    return Node(name, KernelBody(function), (Var("N", I64),), hint)


def chain(hints=(None, None, None), streaming=False) -> Module:
    """b = ((a * 2) + 1) * 3 through three nodes s, t, u."""
    functions = {f.name: f for f in (elementwise("double", lambda v: v * 2.0),
                                      elementwise("inc", lambda v: v + 1.0),
                                      elementwise("triple", lambda v: v * 3.0))}
    nodes = (node("s", "double", hints[0]), node("t", "inc", hints[1]), node("u", "triple", hints[2]))
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("b", VECTOR, "out")), nodes,
                  edges=(Edge("s", "y", "t", "x", streaming=streaming),
                         Edge("t", "y", "u", "x", streaming=streaming)),
                  bind_ins=(BindIn("a", "s", "x", streaming),),
                  bind_outs=(BindOut("u", "y", "b", streaming),))
    return Module("chain", functions, {"main": graph}, "main")


def diamond(hints=(None, None, None)) -> Module:
    """c = double(a) and d = bump(a): one value, a reader and an in-place
    updater; the reader must see the original."""
    functions = {f.name: f for f in (elementwise("double", lambda v: v * 2.0), add_inplace())}
    src = Node("copy", KernelBody("double"), (Var("N", I64),), hints[0])
    reader = Node("reader", KernelBody("double"), (Var("N", I64),), hints[1])
    updater = Node("updater", KernelBody("bump"), (Var("N", I64),), hints[2])
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")), (src, reader, updater),
                  edges=(Edge("copy", "y", "reader", "x"), Edge("copy", "y", "updater", "x")),
                  bind_ins=(BindIn("a", "copy", "x"),),
                  bind_outs=(BindOut("reader", "y", "c"), BindOut("updater", "x", "d")))
    return Module("diamond", functions, {"main": graph}, "main")


def parallel_pair(hint: str) -> Module:
    """Two independent nodes: c = double(a), d = inc(a)."""
    functions = {f.name: f for f in (elementwise("double", lambda v: v * 2.0),
                                      elementwise("inc", lambda v: v + 1.0))}
    graph = Graph("main", (Parameter("a", VECTOR, "in"), Parameter("c", VECTOR, "out"),
                           Parameter("d", VECTOR, "out")),
                  (node("p", "double", hint), node("q", "inc", hint)),
                  bind_ins=(BindIn("a", "p", "x"), BindIn("a", "q", "x")),
                  bind_outs=(BindOut("p", "y", "c"), BindOut("q", "y", "d")))
    return Module("pair", functions, {"main": graph}, "main")
