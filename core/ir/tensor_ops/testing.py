"""Running an op's reference lowering on the interpreter, for tests that
compare it with ``evaluate``::

    node = tensor_node("c", "conv2d", types_of(x=x, w=w), {"padding": 1})
    lowered = run_lowered(node, {"x": x, "w": w})
    reference = evaluate_node(node, {"x": x, "w": w})
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import Location
from ..graph import Module, Node, TensorBody
from ..shapes import bind_symbols, replication_sizes
from ..types import BufferType, scalar_type_of_dtype
from . import get_op


def types_of(**arrays: np.ndarray) -> dict[str, BufferType]:
    """Concrete BufferTypes of the given arrays, by port name."""
    return {port: BufferType(scalar_type_of_dtype(a.dtype), tuple(a.shape))
            for port, a in arrays.items()}


def evaluate_node(node: Node, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``evaluate`` of the op of tensor node ``node``."""
    body = node.body
    assert isinstance(body, TensorBody)
    return get_op(body.op).evaluate(inputs, body.attrs, node=node.name)


def lowered_module(node: Node) -> tuple[Module, str, tuple]:
    """A module holding the lowering of ``node``: (module, kernel name,
    replication expressions)."""
    body = node.body
    assert isinstance(body, TensorBody)
    function, replication = get_op(body.op).lower(node.name, body)
    return Module(node.name, {function.name: function}, {}, "main"), function.name, replication


def run_lowered(node: Node, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs of ``node``'s lowered kernel run on the interpreter, with the
    replication evaluated in the node's scope bound from ``inputs``."""
    from hpvm.interp import run_kernel  # the interpreter depends on the IR, not back

    module, name, replication = lowered_module(node)
    symbols = bind_symbols(node.body.params, inputs, Location(node=node.name))
    results = run_kernel(module, name, dict(inputs), replication_sizes(replication, symbols))
    outputs = get_op(node.body.op).outputs
    return {port: results[port] for port in outputs}
