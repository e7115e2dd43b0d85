"""``fuse-ops``: operator fusion on tensor-op graphs.

Rewrites, applied until none matches (the intermediate result must have no
other reader and must not be a graph output):

- conv2d -> batchnorm, all weights constant: the normalisation is folded
  into the convolution's weights and bias;
- conv2d without bias -> bias_add (axis 1) or add of a [K] / [1, K, 1, 1] /
  [K, 1, 1] tensor: the conv takes it as its bias ``b``;
- gemm without ``c`` -> bias_add (axis 1) or add of a tensor broadcasting to
  its result: the gemm takes it as ``c`` (beta 1);
- matmul (rank 2) -> add: a gemm with ``c``;
- conv2d -> add of a tensor of the conv's result shape (ResNet's
  ``conv(x) + identity``): the conv takes it as its residual summand ``z``;
- conv2d or gemm -> relu / tanh / sigmoid / clipped_relu: the producer's
  ``activation`` (a clip as ``("clipped_relu", min, max)``).

The fused ops are ordinary tensor ops (conv2d and gemm with attributes),
so every target runs them: natively (aten) or through their lowering.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.graph import ConstantBody, Edge, Graph, Module, Node, TensorBody
from ..ir.tensor_ops import get_op, tensor_node
from ..ir.types import BufferType
from .registry import register_pass
from .tensor_graph import (
    constant_input, feeds_of, remove_nodes, reroute, rewrite_each_graph, sole_consumer,
    tensor_inputs,
)

ACTIVATION_OPS = ("relu", "tanh", "sigmoid", "clipped_relu")


@register_pass("fuse-ops")
def fuse_ops(module: Module) -> Module:
    """Fuse conv/gemm with following bias, batchnorm and activation ops."""
    return rewrite_each_graph(module, _fuse_after)


def _fuse_after(graph: Graph, node: Node) -> Graph | None:
    """``graph`` with ``node``'s sole consumer fused into it, or None."""
    body = node.body
    if not isinstance(body, TensorBody) or body.op not in ("conv2d", "gemm", "matmul"):
        return None
    edge = sole_consumer(graph, node.name, "y")
    if edge is None:
        return None
    consumer = graph.node(edge.dst_node)
    if not isinstance(consumer.body, TensorBody) or consumer.hint != node.hint:
        return None
    for rule in _RULES:
        result = rule(graph, node, consumer, edge.dst_port)
        if result is not None:
            return result
    return None


# the rules --------------------------------------------------------------------
def _activation(graph, node, consumer, port):
    attrs = node.body.attrs
    if consumer.body.op not in ACTIVATION_OPS or node.body.op == "matmul":
        return None
    if attrs.get("activation", "none") != "none":
        return None
    activation = consumer.body.op
    if activation == "clipped_relu":
        bounds = {**get_op(activation).attrs, **consumer.body.attrs}
        activation = (activation, float(bounds["min"]), float(bounds["max"]))
    fused = _rebuilt(node, tensor_inputs(node), {**attrs, "activation": activation})
    return _absorb(graph, fused, consumer, moves={})


def _bias(graph, node, consumer, port):
    op, attrs = node.body.op, node.body.attrs
    if attrs.get("activation", "none") != "none" or consumer.body.op not in ("add", "bias_add"):
        return None
    other = _other_operand(consumer, port)
    if other is None:
        return None
    other_type = tensor_inputs(consumer)[other]
    out_type = _output_type(node)
    if op == "conv2d" and "b" not in tensor_inputs(node):
        return _conv_bias(graph, node, consumer, other, other_type, out_type)
    if op in ("gemm", "matmul") and "c" not in tensor_inputs(node) and _broadcasts_to(
            other_type, out_type) and out_type.element.is_float and out_type.rank == 2:
        inputs = {**tensor_inputs(node), "c": other_type}
        base = dict(attrs) if op == "gemm" else {}
        fused = _rebuilt(node, inputs, {**base, "beta": 1.0}, op="gemm")
        return _absorb(graph, fused, consumer, moves={other: "c"})
    return None


def _conv_bias(graph, node, consumer, other, other_type, out_type):
    kernels = out_type.shape[1]
    inputs = {**tensor_inputs(node), "b": BufferType(other_type.element, (kernels,))}
    fused = _rebuilt(node, inputs, dict(node.body.attrs))
    if consumer.body.op == "bias_add":
        if consumer.body.attrs.get("axis", 1) not in (1, -3):
            return None
        return _absorb(graph, fused, consumer, moves={other: "b"})
    # An add of [K] would broadcast along the width: only [K, 1, 1] and
    # [1, K, 1, 1] are per-channel.
    data = constant_input(graph, consumer.name, other)
    if other_type.shape not in ((kernels, 1, 1), (1, kernels, 1, 1)) or data is None:
        return None
    return _absorb(graph, fused, consumer, moves={}, constants={"b": data.reshape(kernels)})


def _residual(graph, node, consumer, port):
    attrs = node.body.attrs
    if node.body.op != "conv2d" or consumer.body.op != "add" or "z" in tensor_inputs(node) \
            or attrs.get("activation", "none") != "none" \
            or attrs.get("perforate_rows") or attrs.get("perforate_cols"):
        return None
    other = _other_operand(consumer, port)
    out_type = _output_type(node)
    if other is None or tensor_inputs(consumer)[other] != out_type:
        return None
    fused = _rebuilt(node, {**tensor_inputs(node), "z": out_type}, dict(attrs))
    return _absorb(graph, fused, consumer, moves={other: "z"})


def _batchnorm(graph, node, consumer, port):
    if node.body.op != "conv2d" or consumer.body.op != "batchnorm":
        return None
    if node.body.attrs.get("activation", "none") != "none" or "z" in tensor_inputs(node):
        return None  # the normalisation would scale the summand too
    params = {p: constant_input(graph, consumer.name, p) for p in ("scale", "bias", "mean", "var")}
    weights = constant_input(graph, node.name, "w")
    if weights is None or any(v is None for v in params.values()):
        return None
    has_bias = "b" in tensor_inputs(node)
    bias = constant_input(graph, node.name, "b") if has_bias else np.zeros(weights.shape[0],
                                                                          weights.dtype)
    if bias is None:
        return None
    kind = weights.dtype.type
    epsilon = kind(consumer.body.attrs.get("epsilon", 1e-5))
    factor = params["scale"] / np.sqrt(params["var"] + epsilon)
    new_w = (weights * factor.reshape(-1, 1, 1, 1)).astype(weights.dtype)
    new_b = ((bias - params["mean"]) * factor + params["bias"]).astype(weights.dtype)
    inputs = {**tensor_inputs(node), "b": BufferType(tensor_inputs(node)["w"].element,
                                                    (weights.shape[0],))}
    fused = _rebuilt(node, inputs, dict(node.body.attrs))
    graph = _drop_input(graph, node.name, "w")
    graph = _drop_input(graph, node.name, "b")
    return _absorb(graph, fused, consumer, moves={}, constants={"w": new_w, "b": new_b})


_RULES = (_batchnorm, _bias, _residual, _activation)


# helpers ----------------------------------------------------------------------
def _output_type(node: Node) -> BufferType:
    return next(p.type for p in node.body.params if p.direction == "out")


def _other_operand(consumer: Node, port: str) -> str | None:
    if consumer.body.op == "bias_add":
        return "b" if port == "x" else None
    return {"a": "b", "b": "a"}.get(port)


def _broadcasts_to(small: BufferType, big: BufferType) -> bool:
    if small.rank > big.rank:
        return False
    return all(s == 1 or s == b for s, b in zip(reversed(small.shape), reversed(big.shape)))


def _rebuilt(node: Node, inputs: dict, attrs: dict, op: str | None = None) -> Node:
    fused = tensor_node(node.name, op or node.body.op, inputs, attrs, hint=node.hint)
    return dataclasses.replace(fused, attributes=node.attributes)


def _drop_input(graph: Graph, node: str, port: str) -> Graph:
    return dataclasses.replace(
        graph, edges=tuple(e for e in graph.edges if (e.dst_node, e.dst_port) != (node, port)))


def _absorb(graph: Graph, fused: Node, consumer: Node, moves: dict[str, str],
            constants: dict | None = None) -> Graph:
    """Replace the producer by ``fused`` and remove ``consumer``: its
    readers read ``fused.y``; the sources of its ports ``moves`` keys feed
    the fused node's ports ``moves`` values; ``constants`` (port -> array)
    become new ConstantBody nodes feeding the fused node."""
    moved_edges, moved_bind_ins = feeds_of(
        graph, {target: (consumer.name, source) for source, target in moves.items()}, fused.name)
    edges, bind_ins = list(graph.edges + moved_edges), list(graph.bind_ins + moved_bind_ins)
    nodes = [fused if n.name == fused.name else n for n in graph.nodes]
    taken = {n.name for n in nodes}
    for port, data in (constants or {}).items():
        name = _fresh(f"{fused.name}_{port}", taken)
        data = np.array(data, order="C")
        nodes.append(Node(name, ConstantBody(BufferType(_output_type(fused).element,
                                                        tuple(data.shape)), data)))
        edges.append(Edge(name, "value", fused.name, port))
    graph = dataclasses.replace(graph, nodes=tuple(nodes), edges=tuple(edges),
                                bind_ins=tuple(bind_ins))
    graph = reroute(graph, (consumer.name, "y"), (fused.name, "y"))
    return remove_nodes(graph, {consumer.name})


def _fresh(base: str, taken: set[str]) -> str:
    name, count = base, 0
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    taken.add(name)
    return name
