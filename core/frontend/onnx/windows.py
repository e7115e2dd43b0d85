"""Sliding-window operators (Conv, ConvTranspose, MaxPool, AveragePool,
the global pools) on 1-D signals [N, C, L]: run as their 2-D forms on [N, C, 1, L]
(the window attributes given a leading 1, the pads a leading 0), the
result viewed as [N, C', L']."""
from __future__ import annotations

import numpy as np

from .indexing import view
from .values import ConstValue, GraphState, OnnxNode, Value

WINDOW_ATTRS = {"strides": 1, "dilations": 1, "kernel_shape": 1, "output_padding": 0,
                "output_shape": 1}


def _unit_height(state: GraphState, node: OnnxNode, value: Value) -> Value:
    shape = value.type.shape
    if isinstance(value, ConstValue):
        return ConstValue(np.expand_dims(value.array, 2))
    return view(state, node, value, shape[:2] + (1,) + shape[2:])


def one_dimensional(convert):
    """``convert`` (a 2-D converter) taking 1-D inputs as well."""
    def wrapped(state: GraphState, node: OnnxNode) -> list[Value]:
        x = node.input(state, 0)
        if len(x.type.shape) != 3:
            return convert(state, node)
        # the views are named apart from the node, which keeps its own name
        viewer = OnnxNode(state.node_names.make(f"{node.name}_2d", "view"), "Reshape", [], [],
                          {})
        names = list(node.inputs)
        for index in (0, 1) if node.op_type in ("Conv", "ConvTranspose") else (0,):
            name = f"{node.name}/2d/{index}"
            state.values[name] = _unit_height(state, viewer, node.input(state, index))
            names[index] = name
        attrs = dict(node.attrs)
        for key, unit in WINDOW_ATTRS.items():
            if key in attrs:
                attrs[key] = [unit] + list(attrs[key])
        if "pads" in attrs:
            begin, end = attrs["pads"]
            attrs["pads"] = [0, begin, 0, end]
        flat = OnnxNode(node.name, node.op_type, names, node.outputs, attrs, node.domain)
        results = convert(state, flat)
        return [view(state, viewer, y, (y.type.shape[0], y.type.shape[1], y.type.shape[3]))
                for y in results]
    return wrapped
