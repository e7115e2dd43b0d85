"""``legalize-tensor-ops``: replace tensor-op nodes by kernel nodes.

Each TensorBody node becomes a KernelBody node running the op's reference
lowering (``TENSOR_OPS[op].lower``), with the replication the lowering
gives; its ports keep their names, so edges and bindings are unchanged.
``keep`` lists ops left as tensor nodes, for targets that run them
natively.  A node of reduced precision (tensor_ops/precision.py) gets a
kernel rounding its loads and stores.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..errors import Diagnostic, Location
from ..ir.graph import ConstantBody, Edge, Graph, KernelBody, Module, Node, TensorBody
from ..ir.parameter import Parameter
from ..ir.tensor_ops import TENSOR_OPS, get_op
from ..ir.tensor_ops.pad import padding_attrs
from ..ir.tensor_ops.int8 import SCALES_ATTRIBUTE, node_scales, quantize_kernel
from ..ir.types import BufferType, scalar_type_of_dtype
from ..ir.tensor_ops.precision import (
    LOWERED_PRECISIONS, PRECISION_ATTRIBUTE, node_precision, round_kernel,
)
from .channels_last import CHANNELS_LAST_ATTRIBUTE, lowered_with_layouts
from .errors import PassError
from .names import unique_name
from .registry import Option, register_pass
from .tensor_graph import constant_input, port_type, producer


@register_pass("legalize-tensor-ops", options=[
    Option("keep", list, (), "tensor ops to keep as tensor nodes (e.g. conv2d,relu)")])
def legalize_tensor_ops(module: Module, keep: tuple[str, ...]) -> Module:
    """Lower tensor-op nodes to kernel nodes with the ops' reference kernels."""
    unknown = [op for op in keep if op not in TENSOR_OPS]
    if unknown:
        raise PassError(Diagnostic(
            Location(), f"legalize-tensor-ops: unknown tensor op(s) in 'keep': "
            f"{', '.join(unknown)}", f"known ops: {', '.join(sorted(TENSOR_OPS))}"))
    return lower_tensor_nodes(module, lambda node: node.body.op not in keep)


def lower_tensor_nodes(module: Module, chosen: Callable[[Node], bool],
                       tiles=None, relayout: bool = False, pad_inputs: bool = False,
                       channels_last: Callable[[str, Node], bool] | None = None) -> Module:
    """``module`` with the tensor-op nodes ``chosen`` picks lowered to
    kernel nodes (a target that runs some nodes of an op itself), their
    register tiles shaped by ``tiles`` (tensor_ops.lowering.RegisterTiles;
    None: the default).  A node in a precision kernels lack (tf32) stays a
    tensor node: placement gives it only to targets that run it natively.

    With ``relayout``, a lowering may read a port fed by a constant node
    in a layout of its own (weights packed once, here): the kernel's port
    is then fed by a new constant node holding that copy, marked with
    RELAID_FROM (the original constant's name).  The runtime still feeds
    the node the original constant, so a target that asks for this feeds
    the marked constant's data itself (the cpu target's device does).

    With ``pad_inputs``, a lowering may read an input zero-padded
    (KernelBuilder.read_padded): a kernel node padding it is put before
    the node, marked with PADS_INPUT_OF (the node's name).  The runtime
    still feeds the node the unpadded value, so a target that asks for
    this runs the marked node's kernel before the node's, into a buffer
    of its own (the cpu target's device does).

    With ``channels_last`` (graph name, node -> whether the target runs
    it), the activations passing between such nodes are stored
    channels-last where their lowerings can (channels_last.py; the
    lowered nodes name those ports in CHANNELS_LAST_ATTRIBUTE): the
    runtime never reads them, so a target that asks for this needs
    nothing else.

    Nodes whose lowerings are the same kernel (layers of one shape) share
    one function, so that a target compiles it once."""
    functions = dict(module.functions)
    same_kernels: dict = {}

    def lowerable(node: Node) -> bool:
        return isinstance(node.body, TensorBody) and chosen(node) \
            and node_precision(node) in LOWERED_PRECISIONS

    def lowering(graph: Graph, node: Node, stored=frozenset()):
        exact = node_precision(node) == "fp32"
        constants = _constant_inputs(graph, node) if relayout and exact else {}
        return get_op(node.body.op).lower_with_constants(
            node.name, node.body, tiles, constants, pad_inputs and exact, stored)

    def layouts(graph: Graph) -> dict:
        """Node -> its lowering, with activations stored channels-last."""
        if channels_last is None:
            return {}
        candidates = {node.name: ports for node in graph.nodes if lowerable(node)
                      and node_precision(node) == "fp32" and channels_last(graph.name, node)
                      for ports in [_layout_ports(node)] if ports}
        return lowered_with_layouts(graph, candidates,
                                    lambda node, stored: lowering(graph, node, stored))

    def lower(graph: Graph, node: Node, done: dict) -> tuple[Node, dict, dict]:
        if not lowerable(node):
            return node, {}, {}
        precision = node_precision(node)
        function, replication, relaid, padded, stored = done.get(node.name) \
            or lowering(graph, node)
        if precision == "fp16":
            function = round_kernel(function)
        elif precision == "int8":
            function = quantize_kernel(function, node_scales(node))
        name = _shared_function(function, len(replication), functions, same_kernels)
        attributes = {k: v for k, v in node.attributes.items()
                      if k not in (PRECISION_ATTRIBUTE, SCALES_ATTRIBUTE)}
        attributes[LOWERED_FROM] = node.body.op
        if stored:
            attributes[CHANNELS_LAST_ATTRIBUTE] = ",".join(sorted(stored))
        padded = {port: (port_type(node, port), port_type(functions[name], port), pads)
                  for port, pads in padded.items()}
        return dataclasses.replace(node, body=KernelBody(name), replication=tuple(replication),
                                   attributes=attributes), relaid, padded

    def padding_node(graph: Graph, node: str, port: str, types, pads) -> Node:
        """A kernel node padding ``node.port``'s value (of ``types[0]``)
        into ``types[1]``."""
        params = (Parameter("x", types[0], "in"), Parameter("y", types[1], "out"))
        name = unique_name(f"{node}_{port}_padded", {n.name for n in graph.nodes})
        function, replication = get_op("pad").lower(
            name, TensorBody("pad", params, padding_attrs(pads)), tiles)
        function = _shared_function(function, len(replication), functions, same_kernels)
        return Node(name, KernelBody(function), tuple(replication),
                    attributes={PADS_INPUT_OF: node})

    graphs = {}
    for graph_name, graph in module.graphs.items():
        done = layouts(graph)
        lowered = [lower(graph, node, done) for node in graph.nodes]
        graph = dataclasses.replace(graph, nodes=tuple(node for node, *_ in lowered))
        for node, relaid, padded in lowered:
            for port, array in relaid.items():
                graph = _feed_relaid(graph, node.name, port, array)
            for port, (*types, pads) in padded.items():
                graph = _feed_through(graph, node.name, port,
                                      padding_node(graph, node.name, port, types, pads))
        graphs[graph_name] = graph
    return dataclasses.replace(module, graphs=graphs, functions=functions)


def _layout_ports(node: Node) -> tuple[str, ...]:
    """The ports of a tensor node its op may store channels-last."""
    names = {p.name for p in node.body.params}
    return tuple(p for p in get_op(node.body.op).layout_ports if p in names)


def _shared_function(function, rank: int, functions: dict, same_kernels: dict) -> str:
    """The name under which ``function`` (run with replication of ``rank``
    dims) is in ``functions``: that of an equal kernel lowered before, or
    its own made unique and added."""
    key = (dataclasses.replace(function, name=""), rank)
    name = same_kernels.get(key)
    if name is None:
        name = same_kernels[key] = unique_name(function.name, functions)
        functions[name] = dataclasses.replace(function, name=name)
    return name


LOWERED_FROM = "lowered_from"
"""Attribute of a kernel node made from a tensor node: the op it runs (a
target may reshape such kernels, whose schedule is the lowering's and not
a programmer's: gpu_opencl folds their reductions in work groups)."""
RELAID_FROM = "relaid_from"
"""Attribute of a constant node made by lower_tensor_nodes: the name of
the constant whose rearranged copy it holds."""


def relaid_inputs(graph: Graph, node: str) -> dict:
    """Input port of ``node`` -> the data of the relaid constant
    (RELAID_FROM) feeding it: what a device feeds those ports."""
    return {port: source.body.data for port, source in _sources(graph, node).items()
            if RELAID_FROM in source.attributes}


PADS_INPUT_OF = "pads_input_of"
"""Attribute of a kernel node made by lower_tensor_nodes: the name of the
node whose input it pads (its port ``y`` feeds that input)."""


def padded_inputs(graph: Graph, node: str) -> dict[str, Node]:
    """Input port of ``node`` -> the node (PADS_INPUT_OF) padding what the
    runtime feeds that port: what a device runs before ``node``."""
    return {port: source for port, source in _sources(graph, node).items()
            if source.attributes.get(PADS_INPUT_OF) == node}


def _sources(graph: Graph, node: str) -> dict[str, Node]:
    """Input port of ``node`` -> the node an edge feeds it from."""
    return {edge.dst_port: graph.node(edge.src_node) for edge in graph.edges
            if edge.dst_node == node}


def _constant_inputs(graph: Graph, node: Node) -> dict:
    """Input port -> the array a constant node feeds it."""
    found = {}
    for param in node.body.params:
        if param.direction == "in" and param.is_buffer:
            array = constant_input(graph, node.name, param.name)
            if array is not None:
                found[param.name] = array
    return found


def _feed_through(graph: Graph, node: str, port: str, between: Node) -> Graph:
    """``graph`` with what feeds ``node.port`` (an edge or a graph
    parameter) feeding ``between``'s port ``x`` instead, and ``between``'s
    port ``y`` feeding ``node.port``."""
    def moved(feed):
        fed = (feed.dst_node, feed.dst_port) == (node, port)
        return dataclasses.replace(feed, dst_node=between.name, dst_port="x") if fed else feed
    edges = tuple(moved(e) for e in graph.edges) + (Edge(between.name, "y", node, port),)
    return dataclasses.replace(graph, nodes=graph.nodes + (between,), edges=edges,
                               bind_ins=tuple(moved(b) for b in graph.bind_ins))


def _feed_relaid(graph: Graph, node: str, port: str, array) -> Graph:
    """``graph`` with ``node.port`` fed by a new constant node holding
    ``array`` instead of the constant feeding it now."""
    edge = producer(graph, node, port)
    names = {n.name for n in graph.nodes}
    name = unique_name(f"{edge.src_node}_for_{node}", names)
    constant = Node(name, ConstantBody(BufferType(scalar_type_of_dtype(array.dtype),
                                                  tuple(array.shape)), array),
                    attributes={RELAID_FROM: edge.src_node})
    edges = tuple(Edge(name, "value", e.dst_node, e.dst_port) if e == edge else e
                  for e in graph.edges)
    return dataclasses.replace(graph, nodes=graph.nodes + (constant,), edges=edges)
