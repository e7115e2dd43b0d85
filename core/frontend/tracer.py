"""One graph level of a program being traced: the buffers visible there,
which node (or graph parameter) produced each buffer's current value, and
the nodes, edges and bindings made so far.

Buffers have imperative meaning: a node that writes a buffer which already
holds a value updates it (port ``inout``, fed by the previous writer), so
elements it does not write keep their values.  Edges follow from program
order: a node reading a buffer is fed by the buffer's latest writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import BindIn, BindOut, Edge, Graph, Node
from ..ir.parameter import Parameter
from ..ir.types import BufferType, ScalarType
from .scope import NameAllocator

PARAM = "param"


@dataclass
class BufferInfo:
    """A buffer visible at one graph level.  ``input`` is True when the
    graph receives a value for it, False when it does not, None while
    undecided (a root parameter not yet used: its first use decides)."""

    name: str
    type: BufferType
    is_param: bool
    input: bool | None
    writable: bool = True
    written: bool = False


@dataclass
class Tracer:
    """Builds one Graph; ``parent`` is the tracer of the enclosing level."""

    module: "ModuleState"
    graph_name: str
    source: object                       # FunctionSource of the program
    parent: "Tracer | None" = None
    buffers: dict[str, BufferInfo] = field(default_factory=dict)
    scalars: dict[str, ScalarType] = field(default_factory=dict)
    used_scalars: list[str] = field(default_factory=list)
    constants: dict = field(default_factory=dict)
    producers: dict[str, tuple | None] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    bind_ins: list[BindIn] = field(default_factory=list)
    node_names: NameAllocator = field(default_factory=NameAllocator)
    outputs: list[str] = field(default_factory=list)

    def add_buffer(self, info: BufferInfo) -> None:
        self.buffers[info.name] = info
        self.producers[info.name] = (PARAM,) if info.input else None

    def has_value(self, name: str) -> bool:
        return self.producers.get(name) is not None

    def decide_input(self, name: str, reads: bool) -> None:
        """First use of an undecided parameter: reading makes it an input;
        so does writing when no other buffer or scalar can give its size."""
        info = self.buffers[name]
        if info.input is None:
            info.input = reads or not self._size_known_without(name)
            self.producers[name] = (PARAM,) if info.input else None

    def _size_known_without(self, name: str) -> bool:
        known = {s for s, t in self.scalars.items() if t.is_int}
        for other in self.buffers.values():
            if other.name != name and (other.input is None or self.has_value(other.name)):
                known.update(other.type.symbols)
        return set(self.buffers[name].type.symbols) <= known

    def feed(self, node: str, port: str, buffer: str) -> None:
        """Wire the current value of ``buffer`` into ``node.port``."""
        source = self.producers[buffer]
        if source[0] == PARAM:
            self.bind_ins.append(BindIn(buffer, node, port))
        else:
            self.edges.append(Edge(source[1], source[2], node, port))

    def produce(self, node: str, port: str, buffer: str) -> None:
        self.producers[buffer] = ("node", node, port)
        self.buffers[buffer].written = True

    def use_scalar(self, name: str, node: str) -> None:
        """Bind graph scalar ``name`` into ``node``'s port of that name."""
        if name not in self.used_scalars:
            self.used_scalars.append(name)
        self.bind_ins.append(BindIn(name, node, name))

    def buffer_with_symbol(self, symbol: str) -> str | None:
        """A buffer holding a value whose shape names ``symbol`` (importing
        one from enclosing levels into this graph's parameters if needed)."""
        for info in self.buffers.values():
            if symbol in info.type.symbols and self.has_value(info.name):
                return info.name
        if self.parent is None:
            for info in self.buffers.values():
                if symbol in info.type.symbols and info.input is None:
                    self.decide_input(info.name, True)
                    return info.name
            return None
        name = self.parent.buffer_with_symbol(symbol)
        if name is None or name in self.buffers:
            return None
        self.add_buffer(BufferInfo(name, self.parent.buffers[name].type, True, True, writable=False))
        return name

    def scalar_param(self, name: str) -> Parameter:
        return Parameter(name, self.scalars[name], "in")

    def bind_outs(self) -> list[BindOut]:
        result = []
        for info in self.buffers.values():
            source = self.producers[info.name]
            if (info.is_param and info.written) or info.name in self.outputs:
                result.append(BindOut(source[1], source[2], info.name))
        return result

    def graph(self, params: tuple[Parameter, ...]) -> Graph:
        return Graph(self.graph_name, params, tuple(self.nodes), tuple(self.edges),
                     tuple(self.bind_ins), tuple(self.bind_outs()))


@dataclass
class ModuleState:
    """Functions and graphs made while tracing one program."""

    functions: dict = field(default_factory=dict)
    graphs: dict = field(default_factory=dict)
    function_names: NameAllocator = field(default_factory=NameAllocator)
    names: NameAllocator = field(default_factory=NameAllocator)     # graph names
