"""The hierarchical dataflow graph: modules, graphs, nodes, edges, bindings.

A :class:`Module` holds kernel functions and named graphs; ``root`` names the
program's graph.  A :class:`Graph` has parameters (its interface), nodes,
edges between node ports, and bindings from its own parameters to node ports
(``BindIn``) or from node ports to its parameters (``BindOut``).

Node bodies:
- :class:`KernelBody`: a leaf running a KernelFunction; its ports are the
  function's parameters.
- :class:`TensorBody`: a leaf running a tensor op (conv2d, matmul ...); its
  ports are declared in ``params`` with the names the op defines.
- :class:`ConstantBody`: a leaf with one output port ``value`` holding a
  fixed array (weights of an imported network, lookup tables).
- :class:`GraphBody`: an internal node whose child graph is ``graph``; its
  ports are the child graph's parameters.

Replication (leaf kernel nodes): 1 to 3 size expressions evaluated in the
node's own scope: the shape symbols of its buffer ports and its integer
scalar ``in`` ports.  Dimension 0 is the outermost.

Edges carry buffers by value: a consumer sees the value its producer left.
``one-to-one`` edges join instance i of the producer to instance i of the
consumer (same replication); ``all-to-all`` edges make every consumer
instance wait for every producer instance.  ``streaming`` edges and bindings
carry a sequence of values: the graph is then a pipeline fed by ``push``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np

from .kernel import Expr, KernelFunction
from .parameter import Parameter
from .types import BufferType

FORMAT_VERSION = (1, 3)
"""Version of the IR and of its text form: (major, minor).  A reader accepts
any minor version of its own major version.  1.1 added loop reductions
(``For.reduce``, ``[reduce var: op]``); 1.3 arrays left undefined until
written (``ArrayDecl.zeroed``, ``private a: f32[4] = undef``)."""

EDGE_KINDS = ("all-to-all", "one-to-one")
MAX_REPLICATION_DIMS = 3

AttrValue = Union[bool, int, float, str, tuple]
"""Attribute values: scalars, strings and (nested) tuples of them."""


@dataclass(frozen=True)
class KernelBody:
    function: str


@dataclass(frozen=True)
class TensorBody:
    """A tensor op: ``op`` names an entry of core.ir.tensor_ops; ``params``
    are the ports (inputs ``in``, results ``out``) and ``attrs`` its
    attributes (stride, padding ...)."""

    op: str
    params: tuple[Parameter, ...]
    attrs: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ConstantBody:
    """A fixed array; its single output port is named ``value``."""

    type: BufferType
    data: np.ndarray

    def __eq__(self, other):
        return (isinstance(other, ConstantBody) and self.type == other.type
                and self.data.dtype == other.data.dtype
                and np.array_equal(self.data, other.data, equal_nan=True))

    __hash__ = None

    @property
    def params(self) -> tuple[Parameter, ...]:
        return (Parameter("value", self.type, "out"),)


@dataclass(frozen=True)
class GraphBody:
    graph: str


NodeBody = Union[KernelBody, TensorBody, ConstantBody, GraphBody]


PADDED_GROUPS = "padded_groups"
"""Node attribute: run in whole work groups (see Node.padded_groups)."""


@dataclass(frozen=True)
class Node:
    """A node of a graph.

    ``hint`` names a preferred target (``"gpu_opencl"``, ``"cpu"`` ...);
    ``attributes`` carry anything else passes and targets agree on.
    """

    name: str
    body: NodeBody
    replication: tuple[Expr, ...] = ()
    hint: str | None = None
    attributes: dict[str, AttrValue] = field(default_factory=dict)

    @property
    def is_leaf(self) -> bool:
        return not isinstance(self.body, GraphBody)

    @property
    def padded_groups(self) -> bool:
        """Whether the node runs in whole work groups, extra instances
        included (attribute ``padded_groups``; docs/text-format.md)."""
        return self.attributes.get(PADDED_GROUPS) is True


@dataclass(frozen=True)
class Edge:
    src_node: str
    src_port: str
    dst_node: str
    dst_port: str
    kind: str = "all-to-all"
    streaming: bool = False


@dataclass(frozen=True)
class BindIn:
    """Graph parameter ``param`` feeds ``node.port``."""

    param: str
    dst_node: str
    dst_port: str
    streaming: bool = False


@dataclass(frozen=True)
class BindOut:
    """``node.port`` produces graph parameter ``param``."""

    src_node: str
    src_port: str
    param: str
    streaming: bool = False


@dataclass(frozen=True)
class Graph:
    name: str
    params: tuple[Parameter, ...]
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    bind_ins: tuple[BindIn, ...] = ()
    bind_outs: tuple[BindOut, ...] = ()

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"graph '{self.name}' has no node '{name}'")

    def param(self, name: str) -> Parameter:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"graph '{self.name}' has no parameter '{name}'")

    @property
    def is_streaming(self) -> bool:
        return any(b.streaming for b in self.bind_ins) or any(
            b.streaming for b in self.bind_outs)


@dataclass(frozen=True)
class Module:
    """A program: kernel functions and graphs; ``root`` is the entry graph.

    Dict order is kept and is the order of the text form.
    """

    name: str
    functions: dict[str, KernelFunction]
    graphs: dict[str, Graph]
    root: str
    version: tuple[int, int] = FORMAT_VERSION

    @property
    def root_graph(self) -> Graph:
        return self.graphs[self.root]

    def function(self, name: str) -> KernelFunction:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"module '{self.name}' has no function '@{name}'") from None

    def graph(self, name: str) -> Graph:
        try:
            return self.graphs[name]
        except KeyError:
            raise KeyError(f"module '{self.name}' has no graph '@{name}'") from None

    def node_params(self, node: Node) -> tuple[Parameter, ...]:
        """The ports of ``node``, whatever its body."""
        body = node.body
        if isinstance(body, KernelBody):
            return self.function(body.function).params
        if isinstance(body, GraphBody):
            return self.graph(body.graph).params
        return body.params

    def node_param(self, node: Node, port: str) -> Parameter:
        for p in self.node_params(node):
            if p.name == port:
                return p
        raise KeyError(f"node '{node.name}' has no port '{port}'")
