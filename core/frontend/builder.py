"""The graph builder (the HPVM-C idea): full control over the DFG.

    g = Graph("pipeline")
    scale = g.leaf(scale_kernel, replication=("N",), hint="gpu")
    shift = g.leaf(shift_kernel, replication=("N",))
    g.bind_in("frame", scale.inp("x"), streaming=True)
    g.edge(scale.out("y"), shift.inp("x"), kind="one-to-one", streaming=True)
    g.bind_out(shift.out("y"), "result", streaming=True)
    module = g.build()

Graph parameters are declared implicitly by ``bind_in`` / ``bind_out``
(their type is the bound port's; bound in and out: ``inout``), or
explicitly with ``param``.  ``internal(child)`` makes an internal node
whose ports are the child graph's parameters.  Replication sizes are ints,
names (shape symbols or integer scalar ports), Python expression strings
over those names (``"N // 4"``), or kernel IR expressions.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..ir.graph import (
    EDGE_KINDS, BindIn, BindOut, ConstantBody, Edge, GraphBody, KernelBody, Module, Node,
)
from ..ir.graph import Graph as IRGraph
from ..ir.kernel import Cast, Const, Expr, KernelFunction, Var
from ..ir.parameter import Parameter
from ..ir.types import I64, BufferType, scalar_type_of_dtype
from .builder_support import caller_location, collect_module, graph_error
from .kernels import KernelDef
from .scope import KernelScope
from .source import FunctionSource
from .statements import StmtTranslator
from .verifying import verify_module


@dataclass(frozen=True)
class PortRef:
    """A node's port, made by ``NodeHandle.inp`` / ``NodeHandle.out``."""

    graph: "Graph"
    node: str
    port: str
    param: Parameter


class NodeHandle:
    """A node added to a Graph; ``inp(port)`` / ``out(port)`` name its ports."""

    def __init__(self, graph: "Graph", node: Node, params: tuple[Parameter, ...]):
        self.graph, self.node, self.params = graph, node, params

    @property
    def name(self) -> str:
        return self.node.name

    def _port(self, port: str, wanted: str) -> PortRef:
        param = next((p for p in self.params if p.name == port), None)
        names = ", ".join(f"{p.direction} {p.name}" for p in self.params)
        if param is None:
            raise self.graph.error(f"has no port '{port}'", f"ports: {names}", node=self.name, port=port)
        if wanted == "out" and not param.writes:
            raise self.graph.error(f"port '{port}' is '{param.direction}', not an output",
                                   f"use .inp('{port}'), or .out() of: {names}", node=self.name, port=port)
        if wanted == "in" and not param.reads:
            raise self.graph.error(f"port '{port}' is 'out', not an input",
                                   f"use .out('{port}')", node=self.name, port=port)
        return PortRef(self.graph, self.name, port, param)

    def inp(self, port: str) -> PortRef:
        return self._port(port, "in")

    def out(self, port: str) -> PortRef:
        return self._port(port, "out")


class Graph:
    """A graph under construction; ``build()`` returns the Module whose root
    it is (child graphs of internal nodes included)."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: list[Node] = []
        self.params: dict[str, Parameter] = {}
        self.edges: list[Edge] = []
        self.bind_ins: list[BindIn] = []
        self.bind_outs: list[BindOut] = []
        self.kernels: dict[str, KernelFunction] = {}   # node name -> function
        self.helpers: dict[str, KernelFunction] = {}   # functions reduce ops call
        self.children: dict[str, "Graph"] = {}        # node name -> child graph
        self._handles: dict[str, NodeHandle] = {}

    def error(self, message: str, fix: str = "", node=None, port=None):
        return graph_error(self.name, message, fix, node, port)

    # -- nodes ---------------------------------------------------------------
    def leaf(self, kernel, replication=(), hint: str | None = None, name: str | None = None,
             attributes: dict | None = None) -> NodeHandle:
        """A leaf node running ``kernel`` (an @kernel or a KernelFunction)."""
        function = kernel.function() if isinstance(kernel, KernelDef) else kernel
        if not isinstance(function, KernelFunction):
            raise self.error(f"leaf kernel {kernel!r} is not an @hpvm.kernel function",
                             "decorate the function with @hpvm.kernel")
        name = self._new_name(name or function.name)
        rep = self._replication(name, replication, function.params)
        node = Node(name, KernelBody(function.name), rep, hint, dict(attributes or {}))
        self.kernels[name] = function
        if isinstance(kernel, KernelDef):
            self.helpers.update(kernel.helpers)
        return self._add(node, function.params)

    def internal(self, child: "Graph", hint: str | None = None, name: str | None = None) -> NodeHandle:
        """An internal node whose child graph is ``child``."""
        name = self._new_name(name or child.name)
        self.children[name] = child
        return self._add(Node(name, GraphBody(child.name), (), hint), tuple(child.interface()))

    def constant(self, data, name: str | None = None) -> NodeHandle:
        """A node holding a fixed array; its output port is ``value``."""
        data = np.asarray(data)
        body = ConstantBody(BufferType(scalar_type_of_dtype(data.dtype), data.shape), data)
        return self._add(Node(self._new_name(name or "constant"), body), body.params)

    def _new_name(self, name: str) -> str:
        if name in self._handles:
            raise self.error(f"already has a node '{name}'", "pass a different name=", node=name)
        return name

    def _add(self, node: Node, params) -> NodeHandle:
        self.nodes.append(node)
        handle = self._handles[node.name] = NodeHandle(self, node, tuple(params))
        return handle

    def _replication(self, node: str, sizes, params) -> tuple[Expr, ...]:
        sizes = sizes if isinstance(sizes, (tuple, list)) else (sizes,)
        if len(sizes) > 3:
            raise self.error(f"replication {tuple(sizes)} has more than 3 dimensions",
                             "use 1 to 3 sizes", node=node)
        return tuple(self._size(node, size, params) for size in sizes)

    def _size(self, node: str, size, params) -> Expr:
        if isinstance(size, Expr):
            return size
        if isinstance(size, int) and not isinstance(size, bool):
            return Const(size, I64)
        if not isinstance(size, str):
            raise self.error(f"replication size {size!r} is not an int, a name or an expression",
                             'write replication=(64,) or ("N",) or ("N // 4",)', node=node)
        where = caller_location()
        source = FunctionSource(None, None, where.file or "<replication>", where.line or 1, 0, {})
        symbols = {s: Var(s, I64) for p in params if p.is_buffer for s in p.type.symbols}
        scalars = {p.name: Var(p.name, p.type) for p in params if not p.is_buffer and p.type.is_int}
        try:
            tree = ast.parse(size, mode="eval").body
        except SyntaxError:
            raise self.error(f"replication size '{size}' is not an expression", "", node=node) from None
        value = StmtTranslator(KernelScope(source, symbols=symbols, scalars=scalars)).scalar(tree)
        if not value.type.is_int:
            raise self.error(f"replication size '{size}' is {value.type}, not an integer", "", node=node)
        return value.expr if value.type == I64 else Cast(value.expr, I64)

    # -- connections -----------------------------------------------------------
    def _own(self, ref: PortRef) -> PortRef:
        if not isinstance(ref, PortRef) or ref.graph is not self:
            raise self.error(f"{ref!r} is not a port of a node of this graph",
                             "use node.inp('x') / node.out('y') of nodes made by this graph")
        return ref

    def edge(self, src: PortRef, dst: PortRef, kind: str = "all-to-all", streaming: bool = False) -> None:
        """Data from ``src`` (an output port) to ``dst`` (an input port)."""
        src, dst = self._own(src), self._own(dst)
        if kind not in EDGE_KINDS:
            raise self.error(f"edge kind '{kind}' is unknown", f"use one of {', '.join(EDGE_KINDS)}")
        if not src.param.writes:
            raise self.error(f"edge source {src.node}.{src.port} is not an output",
                             "use node.out(port)", node=src.node, port=src.port)
        if not dst.param.reads or not dst.param.is_buffer:
            raise self.error(f"edge target {dst.node}.{dst.port} is not a buffer input",
                             "use node.inp(port) of a buffer port; scalars come through bind_in",
                             node=dst.node, port=dst.port)
        if src.param.type.element != dst.param.type.element or (
                src.param.type.rank != dst.param.type.rank and None not in (src.param.type.rank, dst.param.type.rank)):
            raise self.error(f"edge {src.node}.{src.port} ({src.param.type}) -> {dst.node}.{dst.port} "
                             f"({dst.param.type}) joins different buffer types",
                             "connect ports of the same element type and rank", node=dst.node, port=dst.port)
        self.edges.append(Edge(src.node, src.port, dst.node, dst.port, kind, streaming))

    def param(self, name: str, type, direction: str | None = None) -> None:
        """Declare graph parameter ``name`` (optional: binds declare them)."""
        if name in self.params and self.params[name].type != type:
            raise self.error(f"parameter '{name}' is {self.params[name].type}, not {type}",
                             "bind ports of one type to a parameter", port=name)
        self.params[name] = Parameter(name, type, direction or "in")

    def bind_in(self, param: str, dst: PortRef, streaming: bool = False) -> None:
        """Graph parameter ``param`` feeds input port ``dst``."""
        dst = self._own(dst)
        self._declare(param, dst.param, "in")
        self.bind_ins.append(BindIn(param, dst.node, dst.port, streaming))

    def bind_out(self, src: PortRef, param: str, streaming: bool = False) -> None:
        """Output port ``src`` produces graph parameter ``param``."""
        src = self._own(src)
        self._declare(param, src.param, "out")
        self.bind_outs.append(BindOut(src.node, src.port, param, streaming))

    def _declare(self, name: str, port: Parameter, use: str) -> None:
        known = self.params.get(name)
        if known is None:
            self.params[name] = Parameter(name, port.type, use)
            return
        if known.type != port.type:
            raise self.error(f"parameter '{name}' is {known.type} but is bound to a port of type "
                             f"{port.type}", "bind ports of one type to a parameter", port=name)
        if known.direction != use:
            self.params[name] = Parameter(name, known.type, "inout")

    # -- result ----------------------------------------------------------------
    def interface(self) -> list[Parameter]:
        """The graph's parameters (as they are now)."""
        return list(self.params.values())

    def ir(self) -> IRGraph:
        """This graph alone as IR (kernel names as given)."""
        return IRGraph(self.name, tuple(self.interface()), tuple(self.nodes), tuple(self.edges),
                       tuple(self.bind_ins), tuple(self.bind_outs))

    def build(self, name: str | None = None, verify: bool = True) -> Module:
        """The Module rooted at this graph (verified unless ``verify=False``)."""
        module = collect_module(self, name or self.name)
        if verify:
            verify_module(module)
        return module
