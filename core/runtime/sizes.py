"""The sizes a run would see, without running: shape-symbol and integer
scalar values at every leaf node, propagated from the root inputs through
the flattened program exactly as the runtime binds them.

Cost models use them for trip counts and replication sizes
(``Target.estimate(..., sizes=node_sizes(module, inputs))``).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import Location
from ..ir.graph import Module
from ..ir.shapes import bind_symbols, output_shape
from ..target import NodeRef
from .flatten import Source, flatten


def node_sizes(module: Module, inputs: Mapping[str, Any]) -> dict[NodeRef, dict[str, int]]:
    """Per leaf node: the values of its scope's shape symbols and integer
    scalar ports for a run on ``inputs`` (arrays or anything with a shape;
    scalars).  Nodes reached twice (a graph used twice) keep the first."""
    program = flatten(module)
    values: dict[Source, Any] = {Source(None, name): _placeholder(value)
                                 for name, value in inputs.items()}
    sizes: dict[NodeRef, dict[str, int]] = {}
    for task in program.tasks:
        where = Location(graph=task.graph, node=task.node.name)
        params = module.node_params(task.node)
        given = {p.name: values[task.inputs[p.name]] for p in params
                 if p.name in task.inputs and task.inputs[p.name] in values}
        symbols = bind_symbols(tuple(p for p in params if p.name in given), given, where)
        sizes.setdefault(task.ref, symbols)
        for p in params:
            if not p.writes:
                continue
            if p.name in given:
                shape = np.shape(given[p.name])
            else:
                shape = output_shape(p, symbols, where)
            values[Source(task.index, p.name)] = np.broadcast_to(np.uint8(0), shape)
    return sizes


def _placeholder(value):
    """Arrays as zero-stride stand-ins of their shape (no memory); scalars
    as they are."""
    shape = np.shape(value)
    return np.broadcast_to(np.uint8(0), shape) if shape else value
