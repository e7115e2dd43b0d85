"""The magnitudes a program's values take on calibration data (INT8
quantisation picks its scales from them).

A value is named ``graph/node.port`` (a node's output) or ``root/name``
(an input of the root graph); :func:`value_source` names the value a
node's input port reads.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from ..errors import Diagnostic, ExecutionError, HpvmError, Location
from ..ir.graph import GraphBody, Module
from .api import run_module

METHODS = ("max", "percentile")


def value_magnitudes(module: Module, batches: Mapping | Iterable[Mapping],
                     method: str = "max", percentile: float = 99.99) -> dict[str, float]:
    """Value name -> the largest magnitude the float value takes over
    ``batches`` (dicts of input arrays; one dict is one batch), or that
    percentile of its magnitudes; ExecutionError naming the batch when one
    does not run."""
    batches = [batches] if isinstance(batches, Mapping) else list(batches)
    parts: dict[str, list[np.ndarray]] = {}

    def record(key: str, value) -> None:
        array = np.asarray(value)
        if array.dtype.kind == "f":
            parts.setdefault(key, []).append(np.abs(array).reshape(-1))

    for index, batch in enumerate(batches):
        if not isinstance(batch, Mapping):
            raise _batch_error(index, f"is a {type(batch).__name__}",
                               "give a dict of arrays by input name")
        try:
            run_module(module, batch, observe=lambda g, n, p, v: record(f"{g}/{n}.{p}", v))
        except HpvmError as error:
            raise _batch_error(index, f"does not run: {str(error).splitlines()[0]}",
                               "give arrays of the program's input names and shapes") from None
        for name, value in batch.items():
            record(f"{module.root}/{name}", value)
    magnitudes = {}
    for key, arrays in parts.items():
        data = np.concatenate(arrays)
        if data.size == 0:
            magnitudes[key] = 0.0
        elif method == "max":
            magnitudes[key] = float(data.max())
        else:
            magnitudes[key] = float(np.percentile(data, percentile))
    return magnitudes


def value_source(module: Module, graph_name: str, node: str, port: str) -> str | None:
    """The name of the value input ``port`` of ``node`` reads, following
    a child graph's inputs out to its parent; None if nothing feeds it."""
    graph = module.graph(graph_name)
    for edge in graph.edges:
        if edge.dst_node == node and edge.dst_port == port:
            return f"{graph.name}/{edge.src_node}.{edge.src_port}"
    for bind in graph.bind_ins:
        if bind.dst_node == node and bind.dst_port == port:
            if graph.name == module.root:
                return f"{graph.name}/{bind.param}"
            parent = next(((g, n) for g in module.graphs.values() for n in g.nodes
                           if isinstance(n.body, GraphBody) and n.body.graph == graph.name),
                          None)
            return parent and value_source(module, parent[0].name, parent[1].name, bind.param)
    return None


def _batch_error(index: int, why: str, fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(Location(), f"calibration batch {index} {why}", fix))
