"""``fuse-rows``: a reduction along the rows of a tensor and the
elementwise ops around it become one ``rowwise`` node
(hpvm.ir.tensor_ops.rowwise), so that a layer norm, an RMS norm or a
softmax written as a dozen ops reads its input once per loop over a row
instead of writing and reading a tensor per op.

A group starts at a ``reduce`` (float, keepdims) over the trailing axes
of its input, or a softmax along its last axis (its max, exponentials,
sum and quotients become instructions: the scale and the mask before an
attention's softmax join it), whose input's shape is the group's frame
S, and grows through
values none of whose readers is outside it: producers of its inputs (but
those computing a transcendental function, which every loop over the row
would compute again), and the readers of its values, all of them or
none, when they are reduces of the same frame or elementwise ops (add,
mul, relu, tanh, sigmoid, clipped_relu, unary, binary, elementwise; the
functions of fuse-elementwise) whose result broadcasts to S with its row
axes all 1 or all S's.  The group is fused when exactly one of its values
is read outside it (or is a graph output), that value has the shape S,
and every other value is read inside it: no path can then leave the
group and come back (it would be a cycle through that value).  Its
inputs from outside become the node's ports (each source once); the node
keeps the name of that last op.  Each reduce is tried once as a seed.
Run after fuse-elementwise, whose chains it reads step by step.
"""
from __future__ import annotations

import dataclasses

import networkx as nx

from ..errors import VerificationError
from ..ir.graph import Graph, Module, Node, TensorBody
from ..ir.tensor_ops import get_op, tensor_node
from ..ir.tensor_ops.chain import FLOAT_BINARY, FLOAT_UNARY, FUNCTION_STEPS, function_arguments
from ..ir.tensor_ops.reduce import reduced_axes
from ..ir.tensor_ops.rowwise import COSTLY
from ..ir.tensor_ops.spec import OpContext
from .registry import register_pass
from .tensor_graph import drop_edges_into, feeds_of, remove_nodes, replace_node, reroute

ELEMENTWISE_OPS = ("add", "mul", "relu", "tanh", "sigmoid", "clipped_relu", "unary", "binary",
                   "elementwise", "select")


@register_pass("fuse-rows")
def fuse_rows(module: Module) -> Module:
    """Fuse row reductions with the elementwise ops around them."""
    graphs = {name: _fused_rows(graph) for name, graph in module.graphs.items()}
    return dataclasses.replace(module, graphs=graphs)


def _fused_rows(graph: Graph) -> Graph:
    """``graph`` with every group fused, each reduce tried once as a seed
    (a fusion makes no other group possible: a rowwise node joins none)."""
    for seed in [n.name for n in graph.nodes if _row_frame(n) is not None]:
        node = next((n for n in graph.nodes if n.name == seed), None)
        fused = _fuse_at(graph, node) if node is not None else None
        graph = fused if fused is not None else graph
    return graph


def _fuse_at(graph: Graph, node: Node) -> Graph | None:
    frame = _row_frame(node)
    if frame is None:
        return None
    group = _Group(graph, node, *frame)
    sink = group.grow()
    if sink is None:
        return None
    try:
        return group.fused(sink)
    except VerificationError:  # an input whose row axes are neither all 1 nor all S's
        return None


def _row_frame(node: Node) -> tuple[tuple, int] | None:
    """(S, row axes) of a float keepdims reduce over the trailing axes of S,
    or of a float softmax along the last axis of S."""
    body = node.body
    if not isinstance(body, TensorBody) or body.op not in ("reduce", "softmax"):
        return None
    x = next(p.type for p in body.params if p.name == "x")
    if body.op == "softmax":
        axis = get_op("softmax").resolve_attrs(body.attrs)["axis"]
        last = x.element.is_float and x.shape and axis % len(x.shape) == len(x.shape) - 1
        return (tuple(x.shape), 1) if last else None
    attrs = get_op("reduce").resolve_attrs(body.attrs)
    if not x.element.is_float or not attrs["keepdims"] or not x.shape:
        return None
    ctx = OpContext("reduce", {"x": x}, attrs, node.name)
    axes = reduced_axes(ctx)
    rank = len(x.shape)
    if tuple(sorted(axes)) != tuple(range(rank - len(axes), rank)):
        return None
    return tuple(x.shape), len(axes)


def _costly(node: Node) -> bool:
    """Whether the op computes a transcendental function: as a producer
    it would be computed again in every loop over the row."""
    body = node.body
    if body.op in ("tanh", "sigmoid", "softmax"):
        return True
    steps = body.attrs.get("steps", ())
    functions = {body.attrs.get("fn")} | {s[1] for s in steps if s[0] in ("unary", "binary",
                                                                        "rbinary")}
    return bool(functions & set(COSTLY)) or any(s[0] in ("tanh", "sigmoid") for s in steps)


class _Group:
    def __init__(self, graph: Graph, seed: Node, shape: tuple, axes: int):
        self.graph, self.shape, self.axes, self.hint = graph, shape, axes, seed.hint
        self.members = {seed.name}
        self.nodes = {n.name: n for n in graph.nodes}
        self.into: dict[str, list] = {}
        self.readers: dict[tuple[str, str], set[str]] = {}
        for edge in graph.edges:
            self.into.setdefault(edge.dst_node, []).append(edge)
            self.readers.setdefault((edge.src_node, edge.src_port), set()).add(edge.dst_node)
        self.bound = {(b.src_node, b.src_port) for b in graph.bind_outs}

    def grow(self) -> str | None:
        """Grow the group; its one value read outside, or None when it is
        not one to fuse."""
        changed = True
        while changed:
            changed = False
            for name in list(self.members):
                for candidate in self._producers(name) + self._readers(name):
                    if candidate not in self.members:
                        self.members.add(candidate)
                        changed = True
        sinks = [n for n in self.members if self._read_outside(n)]
        if len(sinks) != 1 or len(self.members) < 2 or any(
                not self.readers.get((n, self._output(n))) for n in self.members - set(sinks)):
            return None  # a member nothing reads could hide a path back into the group
        sink = self.nodes[sinks[0]]
        result = next(p.type for p in sink.body.params if p.direction == "out")
        return sinks[0] if tuple(result.shape) == self.shape else None

    def _fits(self, node: Node) -> bool:
        body = node.body
        if not isinstance(body, TensorBody) or node.hint != self.hint:
            return False
        if body.op in ("reduce", "softmax"):
            return _row_frame(node) == (self.shape, self.axes)
        if body.op not in ELEMENTWISE_OPS or body.op in ("unary", "binary") and \
                body.attrs.get("fn") not in (FLOAT_UNARY if body.op == "unary" else FLOAT_BINARY):
            return False
        result = next(p.type for p in body.params if p.direction == "out")
        return result.element.is_float and self._in_frame(tuple(result.shape))

    def _in_frame(self, shape: tuple) -> bool:
        if len(shape) > len(self.shape):
            return False
        padded = (1,) * (len(self.shape) - len(shape)) + shape
        row, frame_row = padded[-self.axes:], self.shape[-self.axes:]
        return all(d in (1, f) for d, f in zip(padded, self.shape)) and (
            all(d == 1 for d in row) or row == frame_row)

    def _output(self, name: str) -> str:
        return next(p.name for p in self.nodes[name].body.params if p.direction == "out")

    def _producers(self, name: str) -> list[str]:
        """Producers of ``name``'s inputs that fit and that only the group reads."""
        found = []
        for edge in self.into.get(name, ()):
            source = self.nodes[edge.src_node]
            value = (edge.src_node, edge.src_port)
            if edge.src_node not in self.members and self._fits(source) \
                    and not _costly(source) and value not in self.bound \
                    and self.readers[value] <= self.members | {name}:
                found.append(source.name)
        return found

    def _readers(self, name: str) -> list[str]:
        """The readers of ``name``'s value when every one of them fits."""
        value = (name, self._output(name))
        readers = self.readers.get(value, set()) - self.members
        if not readers or value in self.bound:
            return []
        return sorted(readers) if all(self._fits(self.nodes[r]) for r in readers) else []

    def _read_outside(self, name: str) -> bool:
        value = (name, self._output(name))
        return value in self.bound or not self.readers.get(value, set()) <= self.members

    def fused(self, sink: str) -> Graph:
        graph = self.graph
        order = [n for n in nx.topological_sort(nx.DiGraph(
            [(e.src_node, e.dst_node) for e in graph.edges
             if e.src_node in self.members and e.dst_node in self.members]))
            if n in self.members]
        order += sorted(self.members - set(order))
        program = _Program(graph, self.members, self.into)
        for name in order:
            program.add(graph.node(name))
        node = graph.node(sink)
        types = {f"x{i}": t for i, (_, t) in enumerate(program.sources)}
        fused = tensor_node(sink, "rowwise", types,
                            {"axes": self.axes, "program": tuple(program.instructions)},
                            hint=self.hint)
        fused = dataclasses.replace(fused, attributes=node.attributes)
        edges, bind_ins = feeds_of(graph, {f"x{i}": at for i, (at, _) in
                                           enumerate(program.sources)}, sink)
        others = self.members - {sink}
        graph = drop_edges_into(graph, sink)
        graph = replace_node(graph, fused)
        graph = dataclasses.replace(graph, edges=graph.edges + edges,
                                    bind_ins=graph.bind_ins + bind_ins)
        graph = reroute(graph, (sink, self._output(sink)), (sink, "y"))
        return remove_nodes(graph, others)


class _Program:
    """The rowwise program of a group's nodes, added producers first."""

    def __init__(self, graph: Graph, members: set[str], into: dict[str, list]):
        self.graph, self.members, self.into = graph, members, into
        self.instructions: list[tuple] = []
        self.sources: list[tuple[tuple[str, str], object]] = []  # ((node, port), type)
        self.keys: dict = {}       # an outside source -> its input's value
        self.values: dict = {}     # (member, output port) -> value

    def add(self, node: Node) -> None:
        body = node.body
        read = {p.name: self._value(node, p.name, p.type) for p in body.params
                if p.direction == "in"}
        out = next(p.name for p in body.params if p.direction == "out")
        op, attrs = body.op, body.attrs
        if op == "reduce":
            result = self._emit(("reduce", attrs["fn"], read["x"]))
        elif op == "softmax":
            top = self._emit(("reduce", "max", read["x"]))
            exp = self._emit(("unary", "exp", self._emit(("binary", "sub", read["x"], top))))
            result = self._emit(("binary", "div", exp, self._emit(("reduce", "sum", exp))))
        elif op in ("add", "mul"):
            result = self._emit(("binary", op, read["a"], read["b"]))
        elif op == "binary":
            result = self._emit(("binary", attrs["fn"], read["a"], read["b"]))
        elif op == "unary":
            result = self._emit(("unary", attrs["fn"], read["x"]))
        elif op == "select":
            result = self._emit(("select", read["cond"], read["a"], read["b"]))
        elif op == "clipped_relu":
            bounds = get_op(op).resolve_attrs(attrs)
            result = self._emit(("clip", float(bounds["min"]), float(bounds["max"]), read["x"]))
        elif op == "elementwise":
            result = self._chain(attrs["steps"], read)
        else:
            result = self._emit(("unary", op, read["x"]))
        self.values[(node.name, out)] = result

    def _chain(self, steps, read: dict) -> int:
        value = read["x0"]
        for step in steps:
            name = step[0]
            if name in ("add", "mul"):
                value = self._emit(("binary", name, value, read[f"x{step[1]}"]))
            elif name in FUNCTION_STEPS:
                value = self._emit(("binary", step[1],
                                    *function_arguments(step, value, read[f"x{step[2]}"])))
            elif name == "unary":
                value = self._emit(("unary", step[1], value))
            elif name == "clipped_relu":
                value = self._emit(("clip", float(step[1]), float(step[2]), value))
            else:
                value = self._emit(("unary", name, value))
        return value

    def _value(self, node: Node, port: str, type_) -> int:
        edge = next((e for e in self.into.get(node.name, ()) if e.dst_port == port), None)
        if edge is not None and edge.src_node in self.members:
            return self.values[(edge.src_node, edge.src_port)]
        if edge is not None:
            key = ("edge", edge.src_node, edge.src_port)
        else:
            bind = next(b for b in self.graph.bind_ins
                        if (b.dst_node, b.dst_port) == (node.name, port))
            key = ("param", bind.param)
        if key not in self.keys:
            self.keys[key] = self._emit(("input", len(self.sources)))
            self.sources.append(((node.name, port), type_))
        return self.keys[key]

    def _emit(self, instruction: tuple) -> int:
        self.instructions.append(instruction)
        return len(self.instructions) - 1
