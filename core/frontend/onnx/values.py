"""What an ONNX tensor name stands for while a graph is imported, and the
IR graph being built from it.

A tensor is one of: a graph input (:class:`InputValue`), a port of an IR
node (:class:`PortValue`), an array known at import time
(:class:`ConstValue`: initializers, Constant nodes, folded shape
arithmetic), or a shape vector some of whose entries are shape symbols
(:class:`ShapeValue`, from ``Shape`` of a tensor with a symbolic batch).
Constants become ConstantBody nodes only where a tensor op reads them.
An :class:`OnnxNode` is the ONNX node being converted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from ...ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, Node
from ...ir.parameter import Parameter
from ...ir.tensor_ops import tensor_node
from ...ir.types import BufferType, scalar_type_of_dtype
from .names import UniqueNames


BROADCASTING_OPS = ("add", "mul", "binary", "select")


class Unsupported(Exception):
    """An ONNX node this importer cannot express; ``fix`` says what to do."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass(frozen=True)
class InputValue:
    param: str
    type: BufferType


@dataclass(frozen=True)
class PortValue:
    node: str
    port: str
    type: BufferType


@dataclass(frozen=True, eq=False)
class ConstValue:
    array: np.ndarray

    @property
    def type(self) -> BufferType:
        return BufferType(scalar_type_of_dtype(self.array.dtype), tuple(self.array.shape))


@dataclass(frozen=True)
class ShapeValue:
    """An i64 tensor of rank 0 (``scalar``) or 1 whose entries are ints or
    shape-symbol names."""

    dims: tuple
    scalar: bool = False


Value = Union[InputValue, PortValue, ConstValue, ShapeValue]


class GraphState:
    """The IR graph under construction and the ONNX name -> Value map."""

    def __init__(self, names: UniqueNames, node_names: UniqueNames | None = None):
        self.names = names
        self.node_names = node_names or UniqueNames()
        """Names of IR nodes; a converter that makes several nodes names
        them here (``step``)."""
        self.values: dict[str, Value] = {}
        self.params: list[Parameter] = []
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.bind_ins: list[BindIn] = []
        self.bind_outs: list[BindOut] = []
        self._built: set[str] = set()
        self._constant_nodes: dict[int, tuple[ConstValue, PortValue]] = {}
        """By id of the ConstValue, kept alive here so that ids stay unique."""

    # values ---------------------------------------------------------------
    def value(self, name: str) -> Value:
        try:
            return self.values[name]
        except KeyError:
            raise Unsupported(f"input tensor '{name}' is not produced by any node, initializer "
                              "or graph input", "check that the model is valid (onnx.checker)")

    def constant(self, name: str, what: str) -> np.ndarray:
        """The array of tensor ``name``, which must be known at import time."""
        value = self.value(name)
        if isinstance(value, ShapeValue) and all(isinstance(d, int) for d in value.dims):
            return np.array(value.dims[0] if value.scalar else value.dims, dtype=np.int64)
        if not isinstance(value, ConstValue):
            raise Unsupported(f"{what} ('{name}') must be a constant (an initializer or "
                              "computed from constants and shapes)",
                              "make it an initializer, or constant-fold the model first")
        return value.array

    def is_constant(self, name: str) -> bool:
        return isinstance(self.values.get(name), ConstValue)

    # building -------------------------------------------------------------
    def add_input(self, name: str, type: BufferType) -> None:
        param = self.names.make(name, "input")
        self.params.append(Parameter(param, type, "in"))
        self.values[name] = InputValue(param, type)

    def add_op(self, name: str, op: str, inputs: dict[str, Value], attrs: dict | None = None
               ) -> PortValue:
        """A tensor-op node reading ``inputs`` (port -> Value); its output
        ``y`` as a Value."""
        if op in BROADCASTING_OPS:
            inputs = _scalars_as_vectors(inputs)
        sources = {port: self._source(value, f"{name}_{port}") for port, value in inputs.items()}
        node = tensor_node(name, op, {port: s.type for port, s in sources.items()}, attrs)
        self.nodes.append(node)
        self._built.add(name)
        for port, source in sources.items():
            self._connect(source, name, port)
        out = next(p for p in node.body.params if p.direction == "out")
        return PortValue(name, out.name, out.type)

    def step(self, node: "OnnxNode", op: str, inputs: dict[str, Value],
             attrs: dict | None = None) -> PortValue:
        """One of the tensor-op nodes that ONNX ``node`` becomes: the first
        takes its name, the others are named after it (``name_1`` ...)."""
        name = node.name if node.name not in self._built else self.node_names.make(node.name, op)
        return self.add_op(name, op, inputs, attrs)

    def results(self, value: PortValue) -> list[PortValue]:
        """Every result of the node ``value`` is the first result of."""
        node = next(n for n in self.nodes if n.name == value.node)
        return [PortValue(node.name, p.name, p.type) for p in node.body.params
                if p.direction == "out"]

    def add_output(self, name: str, value: Value) -> None:
        source = self._source(value, f"{name}_value")
        if isinstance(source, InputValue):  # an output that is an input: copy it
            node = self.names.make(f"{name}_copy", "copy")
            source = self.add_op(node, "reshape", {"x": source},
                                 {"shape": (0,) * len(source.type.shape)})
        param = self.names.make(name, "output")
        self.params.append(Parameter(param, source.type, "out"))
        self.bind_outs.append(BindOut(source.node, source.port, param))

    def graph(self, name: str) -> Graph:
        return Graph(name, tuple(self.params), tuple(self.nodes), tuple(self.edges),
                     tuple(self.bind_ins), tuple(self.bind_outs))

    def _source(self, value: Value, hint: str) -> InputValue | PortValue:
        if isinstance(value, ShapeValue):
            if not all(isinstance(d, int) for d in value.dims):
                raise Unsupported(f"a shape with symbolic sizes {list(value.dims)} is used as "
                                  "data", "use the shape only as the shape input of Reshape")
            value = ConstValue(np.array(value.dims[0] if value.scalar else value.dims, np.int64))
        if not isinstance(value, ConstValue):
            return value
        key = id(value)
        if key not in self._constant_nodes:
            node = self.names.make(hint, "const")
            data = np.array(value.array, order="C")
            self.nodes.append(Node(node, ConstantBody(value.type, data)))
            self._constant_nodes[key] = (value, PortValue(node, "value", value.type))
        return self._constant_nodes[key][1]

    def _connect(self, source: InputValue | PortValue, node: str, port: str) -> None:
        if isinstance(source, InputValue):
            self.bind_ins.append(BindIn(source.param, node, port))
        else:
            self.edges.append(Edge(source.node, source.port, node, port))


def _scalars_as_vectors(inputs: dict[str, Value]) -> dict[str, Value]:
    """Rank-0 constant operands of broadcasting ops as [1] (the same broadcast when
    the other operand has a rank): rank-0 buffers are best avoided."""
    ranks = [len(v.type.shape) for v in inputs.values() if not isinstance(v, ShapeValue)]
    if max(ranks, default=0) == 0:
        return inputs
    return {port: ConstValue(v.array.reshape(1)) if isinstance(v, ConstValue) and v.array.ndim == 0
            else v for port, v in inputs.items()}


@dataclass
class OnnxNode:
    """One ONNX node: ``name`` is its IR node name; ``inputs`` and
    ``outputs`` are ONNX tensor names ('' for an omitted optional one)."""

    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict
    domain: str = ""

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def text(self, name: str, default: str) -> str:
        """A string attribute (onnx gives them as bytes) as text."""
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def input(self, state: GraphState, index: int) -> Value | None:
        if index >= len(self.inputs) or not self.inputs[index]:
            return None
        return state.value(self.inputs[index])

    def reject(self, attribute: str, value, supported: str) -> None:
        raise Unsupported(f"attribute {attribute}={value!r} is not supported",
                          f"export the model with {supported}")
