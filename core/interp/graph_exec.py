"""Running dataflow graphs: nodes in topological order, buffers by value.

:func:`run_graph` runs a graph on its parameter values and returns its
outputs; :func:`run_node` runs one node on its port values (the reference
device uses it for single launches).  Buffers are never updated in place
behind a consumer's back: ``inout`` ports work on a copy, ``out`` ports get
fresh zero-filled arrays, ``in`` buffers are read only.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.graph import (
    ConstantBody, Graph, GraphBody, KernelBody, Module, Node, TensorBody,
)
from hpvm.ir.parameter import Parameter
from hpvm.ir.shapes import bind_symbols, output_shape, replication_sizes

from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.int8 import quantize_inputs
from hpvm.ir.tensor_ops.precision import node_precision, round_arrays, tf32_operands
from .kernel_launch import launch_kernel


def run_graph(module: Module, graph: Graph, inputs: Mapping[str, Any],
              observe=None) -> dict[str, Any]:
    """Run ``graph`` with ``inputs`` (its in/inout/private and scalar
    parameters by name); returns its out and inout parameters by name.
    ``observe(graph, node, port, value)``, if given, sees every value a
    node produces, at every level (calibration, debugging)."""
    values: dict[tuple[str, str], Any] = {}
    for node in topological_order(graph):
        ports = _node_inputs(module, graph, node, inputs, values)
        for port, value in run_node(module, graph, node, ports, observe).items():
            values[(node.name, port)] = value
            if observe is not None:
                observe(graph.name, node.name, port, value)
    return _graph_outputs(graph, inputs, values)


def topological_order(graph: Graph) -> list[Node]:
    """The nodes, producers before consumers (ties keep declaration order);
    an ExecutionError names the nodes of a cycle."""
    consumers: dict[str, set[str]] = {n.name: set() for n in graph.nodes}
    pending = {n.name: set() for n in graph.nodes}
    for edge in graph.edges:
        for name in (edge.src_node, edge.dst_node):
            if name not in pending:
                raise _graph_error(graph, f"edge {edge.src_node}.{edge.src_port} -> "
                                   f"{edge.dst_node}.{edge.dst_port} names unknown node "
                                   f"'{name}'", "connect only nodes of the graph")
        consumers[edge.src_node].add(edge.dst_node)
        pending[edge.dst_node].add(edge.src_node)
    order: list[Node] = []
    ready = [n for n in graph.nodes if not pending[n.name]]
    while ready:
        node = ready.pop(0)
        order.append(node)
        for other in graph.nodes:
            if node.name in pending[other.name]:
                pending[other.name].discard(node.name)
                if not pending[other.name]:
                    ready.append(other)
    if len(order) != len(graph.nodes):
        stuck = sorted(name for name, srcs in pending.items() if srcs)
        raise _graph_error(graph, f"nodes {', '.join(stuck)} form a cycle",
                           "remove an edge so the graph is acyclic")
    return order


def _node_inputs(module: Module, graph: Graph, node: Node, inputs: Mapping[str, Any],
                 values: Mapping[tuple[str, str], Any]) -> dict[str, Any]:
    sources: dict[str, list] = {}
    for edge in graph.edges:
        if edge.dst_node == node.name:
            sources.setdefault(edge.dst_port, []).append((edge.src_node, edge.src_port))
    for bind in graph.bind_ins:
        if bind.dst_node == node.name:
            sources.setdefault(bind.dst_port, []).append(bind.param)
    ports: dict[str, Any] = {}
    for param in _ports(module, graph, node):
        if param.direction == "out":
            continue
        found = sources.get(param.name, [])
        if len(found) != 1:
            raise _port_error(graph, node, param,
                              "receives no value" if not found else
                              f"receives {len(found)} values",
                              "connect exactly one edge or bind_in to it")
        source = found[0]
        if isinstance(source, str):
            if source not in inputs:
                raise _port_error(graph, node, param,
                                  f"is bound to graph parameter '{source}', which has no value",
                                  f"give the graph an input '{source}'")
            ports[param.name] = inputs[source]
        elif source not in values:
            raise _port_error(graph, node, param,
                              f"is fed by {source[0]}.{source[1]}, which is not an output "
                              f"of node '{source[0]}'", "connect an out or inout port")
        else:
            ports[param.name] = values[source]
    return ports


def _ports(module: Module, graph: Graph, node: Node) -> tuple[Parameter, ...]:
    try:
        return module.node_params(node)
    except KeyError as error:
        raise _graph_error(graph, f"node '{node.name}': {error.args[0]}",
                           "define the function or graph the node uses") from None


def _graph_outputs(graph: Graph, inputs: Mapping[str, Any],
                   values: Mapping[tuple[str, str], Any]) -> dict[str, Any]:
    outputs: dict[str, Any] = {}
    for bind in graph.bind_outs:
        key = (bind.src_node, bind.src_port)
        if key not in values:
            raise _graph_error(graph, f"bind_out {bind.src_node}.{bind.src_port} -> "
                               f"'{bind.param}' names a port that produced nothing",
                               "bind an out or inout port of a node of the graph")
        outputs[bind.param] = values[key]
    for param in graph.params:
        if param.writes and param.name not in outputs:
            if param.direction == "inout" and param.name in inputs:
                outputs[param.name] = inputs[param.name]
            else:
                raise _graph_error(graph, f"output '{param.name}' is produced by no node",
                                   f"add a bind_out to '{param.name}'")
    return outputs


def run_node(module: Module, graph: Graph, node: Node, ports: Mapping[str, Any],
             observe=None) -> dict[str, Any]:
    """Run ``node`` on ``ports`` (values of its in/inout/private and scalar
    ports); returns its out and inout ports' new values."""
    body = node.body
    if isinstance(body, KernelBody):
        return _run_kernel_node(module, graph, node, ports)
    if isinstance(body, ConstantBody):
        return {"value": np.array(body.data, dtype=body.type.element.numpy_dtype)}
    if isinstance(body, TensorBody):
        return _run_tensor_node(graph, node, body, ports)
    if isinstance(body, GraphBody):
        _check_single_instance(module, graph, node, ports)
        return run_graph(module, module.graph(body.graph), ports, observe)
    raise _graph_error(graph, f"node '{node.name}' has an unknown body "
                       f"{type(body).__name__}", "use a kernel, tensor, constant or graph body")


def _run_kernel_node(module: Module, graph: Graph, node: Node, ports: Mapping[str, Any]):
    function = module.function(node.body.function)
    where = Location(graph=graph.name, node=node.name)
    symbols = bind_symbols(function.params, ports, where)
    replication = _replication(graph, node, symbols)
    args: dict[str, Any] = {}
    for param in function.params:
        if param.direction == "out":
            args[param.name] = np.zeros(output_shape(param, symbols, where),
                                        dtype=param.type.element.numpy_dtype)
        elif param.direction == "inout":
            args[param.name] = np.array(ports[param.name], order="C", copy=True)
        else:
            args[param.name] = ports[param.name]
    group = node.attributes.get("group")
    launch_kernel(module, function, args, replication, group, where, node.padded_groups)
    return {p.name: args[p.name] for p in function.params if p.writes}


def _replication(graph: Graph, node: Node, symbols: Mapping[str, int]) -> tuple[int, ...]:
    try:
        return replication_sizes(node.replication, symbols,
                                 Location(graph=graph.name, node=node.name))
    except (KeyError, ValueError, ZeroDivisionError) as error:
        raise _graph_error(graph, f"node '{node.name}': replication cannot be evaluated "
                           f"({error})", "write replication sizes with the node's buffer "
                           "size symbols and integer scalar inputs") from None


def _check_single_instance(module: Module, graph: Graph, node: Node, ports) -> None:
    if not node.replication:
        return
    symbols = bind_symbols(_ports(module, graph, node), ports,
                           Location(graph=graph.name, node=node.name))
    if int(np.prod(_replication(graph, node, symbols))) != 1:
        raise _graph_error(graph, f"node '{node.name}': the interpreter cannot replicate an "
                           "internal node", "replicate the leaf nodes of its child graph")


def _run_tensor_node(graph: Graph, node: Node, body: TensorBody, ports: Mapping[str, Any]):
    spec = TENSOR_OPS.get(body.op)
    if spec is None:
        raise _graph_error(graph, f"node '{node.name}': unknown tensor op '{body.op}'",
                           f"use one of {', '.join(sorted(TENSOR_OPS))}")
    precision = node_precision(node)
    inputs = {p.name: ports[p.name] for p in body.params if p.direction != "out"}
    if precision == "int8":
        inputs = quantize_inputs(inputs, node)
    elif precision == "tf32":
        inputs = tf32_operands(inputs, body.op)
    results = round_arrays(spec.evaluate(round_arrays(inputs, precision), body.attrs,
                                         node=node.name), precision)
    outputs = {}
    for param in body.params:
        if param.writes:
            if param.name not in results:
                raise _graph_error(graph, f"node '{node.name}': tensor op '{body.op}' "
                                   f"produced no '{param.name}'",
                                   f"name the op's outputs {', '.join(results)}")
            outputs[param.name] = np.asarray(
                results[param.name]).astype(param.type.element.numpy_dtype, copy=False)
    return outputs


def _graph_error(graph: Graph, message: str, fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(Location(graph=graph.name), message, fix))


def _port_error(graph: Graph, node: Node, param: Parameter, message: str,
                fix: str) -> ExecutionError:
    return ExecutionError(Diagnostic(Location(graph=graph.name, node=node.name,
                                              port=param.name), message, fix))
