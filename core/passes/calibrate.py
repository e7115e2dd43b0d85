"""``calibrate``: record the INT8 scales of every matrix and convolution
product (the ``int8_scales`` attribute; tensor_ops/int8.py).

The program runs on the interpreter over calibration inputs; each
operand's scale is the largest magnitude it takes (or a percentile of its
magnitudes) over 127.  Nothing computes differently until a node's
precision is set to ``int8`` (the ``approximate`` pass's ``int8`` knob)::

    hpvm opt model.hpvm -p "calibrate{data=calib.npz},approximate{knobs=conv1:int8}"
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, HpvmError, Location
from ..interp.calibration import METHODS, value_magnitudes, value_source
from ..ir.graph import Module, TensorBody
from ..ir.tensor_ops.int8 import QMAX, SCALES_ATTRIBUTE
from ..ir.tensor_ops.precision import PRODUCT_OPS, operands
from ..npz import read_npz
from .errors import PassError
from .module_tools import map_nodes
from .registry import Option, register_pass


@register_pass("calibrate", options=[
    Option("data", str, "", "an .npz of the program's inputs (arrays by input name)"),
    Option("method", str, "max", "the magnitude a scale covers: the largest, or a percentile",
           choices=METHODS),
    Option("percentile", float, 99.99, "the percentile of method=percentile", minimum=50,
           maximum=100)])
def calibrate_pass(module: Module, data: str, method: str, percentile: float) -> Module:
    """Record INT8 scales of conv2d, gemm and matmul operands from
    calibration inputs (for the approximate pass's int8 knob)."""
    if not data:
        raise PassError(Diagnostic(Location(), "calibrate: no calibration data",
                                   "give data=FILE.npz, the program's inputs by name"))
    try:
        return calibrate(module, read_npz(data), method, percentile)
    except HpvmError as error:
        raise PassError(Diagnostic(Location(file=data), f"calibrate: {error}",
                                   "give an .npz of the program's inputs by name")) from None


def calibrate(module: Module, batches, method: str = "max",
              percentile: float = 99.99) -> Module:
    """``module`` with ``int8_scales`` on every float conv2d, gemm and
    matmul node, measured on ``batches`` (one dict of input arrays, or a
    list of them)."""
    magnitudes = value_magnitudes(module, batches, method, percentile)

    def annotate(graph, node):
        body = node.body
        if (not isinstance(body, TensorBody) or body.op not in PRODUCT_OPS
                or not all(p.type.element.is_float for p in body.params)):
            return node
        sources = [value_source(module, graph.name, node.name, port)
                   for port in operands(body.op)]
        if any(source not in magnitudes for source in sources):
            return node
        scales = tuple((magnitudes[s] or 1.0) / QMAX for s in sources)
        return dataclasses.replace(node, attributes={**node.attributes, SCALES_ATTRIBUTE: scales})

    return map_nodes(module, annotate)
