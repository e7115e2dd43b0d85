"""Helpers of the graph builder: located errors and module assembly."""
from __future__ import annotations

import dataclasses
import os
import sys

from ..errors import Location
from ..ir.graph import KernelBody, Module
from .errors import frontend_error

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def caller_location() -> Location:
    """The file and line of the user code that called into the builder."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
    if frame is None:
        return Location()
    return Location(file=frame.f_code.co_filename, line=frame.f_lineno)


def graph_error(graph: str, message: str, fix: str = "", node=None, port=None):
    where = caller_location()
    location = Location(graph=graph, node=node, port=port, file=where.file, line=where.line)
    return frontend_error(message, fix, location)


def collect_module(root, name: str) -> Module:
    """Module of builder graph ``root`` and every child graph under it;
    kernel functions are renamed where two different ones share a name."""
    graphs, functions = {}, {}
    pending = [root]
    while pending:
        graph = pending.pop(0)
        if graph.name in graphs:
            if graphs[graph.name] is not graph:
                raise graph_error(graph.name, "two different graphs share this name",
                                  "give each Graph its own name")
            continue
        graphs[graph.name] = graph
        pending.extend(graph.children.values())
    ir_graphs = {}
    for graph in graphs.values():
        nodes = []
        for node in graph.nodes:
            function = graph.kernels.get(node.name)
            if function is not None:
                fname = _function_name(functions, function)
                node = dataclasses.replace(node, body=KernelBody(fname))
            nodes.append(node)
        ir_graphs[graph.name] = dataclasses.replace(graph.ir(), nodes=tuple(nodes))
        for helper in graph.helpers.values():
            if _function_name(functions, helper) != helper.name:
                raise graph_error(graph.name, f"the reduce op '@{helper.name}' shares its name "
                                  "with another function", "rename the helper")
    return Module(name, functions, ir_graphs, root.name)


def _function_name(functions: dict, function) -> str:
    """Register ``function`` under its name (or a fresh one if a different
    function has it already)."""
    name, n = function.name, 1
    while name in functions and functions[name] != function:
        name, n = f"{function.name}_{n}", n + 1
    functions[name] = dataclasses.replace(function, name=name)
    return name
