"""Activations stored channels-last between the nodes of one target.

A target that lowers tensor ops itself (lower_tensor_nodes) may store
the 4-D activations passing between two of its nodes in NHWC order,
element (n, c, h, w) at ((n H + h) W + w) C + c, instead of NCHW: the
order in which convolutions read them as matrices of pixels by channels,
a whole vector of channels at each pixel, as oneDNN's and XNNPACK's
kernels keep them from layer to layer.  The runtime never looks inside
such a buffer (it holds the same N C H W elements, typed NCHW), and only
kernels of that target read it, each told so when lowered
(KernelBuilder.stored_channels_last).

A value is stored so when its producer's lowering and every consumer's
can take that port channels-last (an op's ``layout_ports``, each node
lowered once asking for all of them) and it is no output of the graph.
Lowerings handle each port in either order, so that the first
convolution after an NCHW input writes channels-last and the last one
before a pool that reads NCHW writes NCHW; where one refuses a port when
lowered with the others it was given (a residual summand stored unlike
the result), the values at that port go back to NCHW and the nodes
touching them are lowered again.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from ..ir.graph import Graph, Node
from ..ir.tensor_ops.spec import Lowered

CHANNELS_LAST_ATTRIBUTE = "channels_last"
"""Attribute of a kernel node lowered by lower_tensor_nodes: its ports
stored channels-last, comma-separated."""

Value = tuple[str, str]
"""(node, output port)."""


def lowered_with_layouts(graph: Graph, candidates: dict[str, tuple[str, ...]],
                         lower: Callable[[Node, frozenset], Lowered]) -> dict[str, Lowered]:
    """The lowerings of the nodes ``candidates`` names (node -> its op's
    layout ports it has), with the values between them stored
    channels-last where the module's text says; ``lower(node, ports)``
    lowers a node with ``ports`` stored so."""
    results: dict[tuple[str, frozenset], Lowered] = {}

    def attempt(name: str, ports) -> Lowered:
        key = (name, frozenset(ports))
        if key not in results:
            results[key] = lower(graph.node(name), key[1])
        return results[key]

    capable = {name: attempt(name, ports).channels_last for name, ports in candidates.items()}
    uses: dict[Value, list[Value]] = defaultdict(list)
    for edge in graph.edges:
        uses[(edge.src_node, edge.src_port)].append((edge.dst_node, edge.dst_port))
    outputs = {(bind.src_node, bind.src_port) for bind in graph.bind_outs}

    def takes(node: str, port: str) -> bool:
        return port in capable.get(node, ())

    stored = {value for value, readers in uses.items()
              if takes(*value) and value not in outputs and all(takes(*r) for r in readers)}
    while True:
        requested: dict[str, set[str]] = defaultdict(set)
        for value in stored:
            for node, port in [value, *uses[value]]:
                requested[node].add(port)
        lowered = {name: attempt(name, requested.get(name, ())) for name in candidates}
        refused = {(name, port) for name, ports in requested.items()
                   for port in ports if port not in lowered[name].channels_last}
        if not refused:
            return lowered
        stored = {value for value in stored
                  if value not in refused and not refused.intersection(uses[value])}
