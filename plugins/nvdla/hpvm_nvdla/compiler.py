"""From a launch's members to a loadable; and the cost model's estimate
of placed nodes."""
from __future__ import annotations

import numpy as np

from hpvm.ir.graph import ConstantBody, Module
from hpvm.passes.outline import Members, convex_partitions, members

from . import cost
from .config import Config
from .layers import Layer, build_layers
from .loadable import surface, write


def value_shapes(module: Module, view: Members) -> dict[str, tuple]:
    """Each member output value's shape, the batch as -1."""
    shapes = {}
    for name in view.names:
        node = view.graph.node(name)
        for p in module.node_params(node):
            if p.writes:
                shapes[f"{name}.{p.name}"] = (-1,) + tuple(p.type.shape[1:])
    return shapes


def layers_of(module: Module, view: Members) -> list[Layer]:
    return build_layers(view, value_shapes(module, view))


def input_sources(module: Module, ref) -> dict[str, str]:
    """Each in port of launch ``ref`` -> the calibration key of the value
    feeding it (``graph/node.port``, or ``root/param`` for a program input)."""
    graph = module.graph(ref.graph)
    sources = {}
    for e in graph.edges:
        if e.dst_node == ref.node:
            sources[e.dst_port] = f"{graph.name}/{e.src_node}.{e.src_port}"
    for b in graph.bind_ins:
        if b.dst_node == ref.node:
            if graph.name != module.root:
                from hpvm.errors import TargetError
                raise TargetError(f"nvdla: INT8 needs the scale of '{b.param}', an input of "
                                  f"graph '@{graph.name}'; place nodes of nested graphs in FP16")
            sources[b.dst_port] = f"{graph.name}/{b.param}"
    return sources


def compile_loadable(module: Module, ref, precision: str, config: Config,
                     scales=None) -> tuple[bytes, int]:
    """(the loadable of launch ``ref``, its number of hardware layers)."""
    view = members(module, ref.graph, ref.node)
    layers = layers_of(module, view)
    constants = {f"{n}.value": view.graph.node(n).body.data for n in view.names
                 if isinstance(view.graph.node(n).body, ConstantBody)}
    header = {
        "precision": precision,
        "inputs": [{"name": p.name, "surface": surface(p.type.shape, precision, config)}
                   for p in view.inputs],
        "outputs": [{"name": port, "value": f"{node}.{out}",
                     "surface": surface(module.node_param(view.graph.node(node), out).type.shape,
                                        precision, config)}
                    for port, (node, out) in view.results],
        "constants": {key: np.asarray(data, np.float32).tolist() for key, data in constants.items()
                      if any(f"{n}.{o}" == key for _, (n, o) in view.results)},
    }
    weight_dtype = np.float16
    if precision == "int8":
        from .int8 import quantize
        layers, extra = quantize(layers, scales, view, input_sources(module, ref))
        header.update(extra)
        weight_dtype = np.int8
    return write(layers, header, config, weight_dtype), len(layers)


def estimate_nodes(module: Module, nodes, precision: str, config: Config, sizes) -> dict:
    """The cycle model's totals for leaf ``nodes`` (grouped as partitions
    would be) or partitions; batch from ``sizes`` (1 without)."""
    from hpvm.passes.outline import outline
    totals: dict[str, float] = {}
    for refs in convex_partitions(module, nodes):
        graph_name, group = refs[0].graph, [ref.node for ref in refs]
        scratch, node = (outline(module, graph_name, group, "estimate") if len(group) > 1
                         else (module, group[0]))
        view = members(scratch, graph_name, node)
        batch = _batch(module, graph_name, group, sizes)
        inputs = {p.name: tuple(p.type.shape[1:]) for p in view.inputs}
        for key, value in cost.estimate(layers_of(scratch, view), batch, inputs, precision,
                                        config).items():
            totals[key] = totals.get(key, 0) + value
    return totals


def _batch(module: Module, graph_name: str, group: list[str], sizes) -> int:
    if not sizes:
        return 1
    from hpvm.target import NodeRef
    graph = module.graph(graph_name)
    for name in group:
        node = graph.node(name)
        if isinstance(node.body, ConstantBody):
            continue
        symbols = sizes.get(NodeRef(graph_name, name), {})
        out = next(p for p in module.node_params(node) if p.writes)
        first = out.type.shape[0]  # feature data is [batch, ...]
        return int(first) if isinstance(first, int) else int(symbols.get(first, 1))
    return 1
