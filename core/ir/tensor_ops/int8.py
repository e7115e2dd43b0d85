"""INT8 precision of one tensor node (an ApproxHPVM knob).

A node with the attribute ``precision = "int8"`` quantises its operands --
the op's required inputs (conv2d ``x`` and ``w``, gemm and matmul ``a`` and
``b``), never a bias -- to 8-bit integers, symmetric, one scale per tensor
(the attribute ``int8_scales``: one scale per operand, in port order)::

    q = clamp(floor(v / s + 0.5), -127, 127)        (round half up)

and computes the op on ``q * s``.  An INT8 engine computes the same sums
exactly (integer products in 32-bit accumulators, times ``s_x * s_w``);
the others compute them in f32, equal up to f32 rounding.  The result
stays in the declared type and is not requantised, so neighbouring nodes
are unaffected.

The scales come from calibration (the ``calibrate`` pass: the largest
magnitude each operand takes on a calibration set, over 127).  Each place
that runs a tensor node honours the knob: the interpreter quantises the
arrays (:func:`quantize_inputs`), lowered kernels quantise their operand
loads (:func:`quantize_kernel`), aten multiplies int8 matrices on CUDA.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..graph import Node, TensorBody
from ..kernel import Binary, Const, Intrinsic, KernelFunction, Load
from ..types import F32
from ..visit import rewrite
from .precision import PRODUCT_OPS, operands

SCALES_ATTRIBUTE = "int8_scales"
QMAX = 127


def node_scales(node: Node) -> dict[str, float]:
    """Operand port -> scale of a calibrated node (empty if uncalibrated)."""
    scales = node.attributes.get(SCALES_ATTRIBUTE)
    if not isinstance(node.body, TensorBody) or not isinstance(scales, tuple):
        return {}
    return dict(zip(operands(node.body.op), scales))


def int8_problem(node: Node) -> tuple[str, str] | None:
    """Why ``node`` cannot compute in INT8, and the fix (None if it can)."""
    body = node.body
    if not isinstance(body, TensorBody) or body.op not in PRODUCT_OPS:
        return (f"only {', '.join(PRODUCT_OPS)} nodes compute in INT8", "use fp16 or fp32 here")
    if not all(p.type.element.is_float for p in body.params):
        return "INT8 quantises float operands; this node's are not all float", "use fp32"
    scales = node.attributes.get(SCALES_ATTRIBUTE)
    wanted = operands(body.op)
    if scales is None:
        return ("the node has no int8_scales", "calibrate first: the calibrate pass, e.g. "
                "hpvm opt -p 'calibrate{data=calib.npz},approximate{...}'")
    if (not isinstance(scales, tuple) or len(scales) != len(wanted) or not all(
            isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s)
            and s > 0 for s in scales)):
        return (f"int8_scales={scales!r} is not {len(wanted)} positive finite numbers",
                f"give one scale per operand ({', '.join(wanted)}), or calibrate again")
    return None


def quantize(array: np.ndarray, scale: float) -> np.ndarray:
    """``array`` on the INT8 grid of ``scale`` (dequantised, same dtype)."""
    kind = array.dtype.type
    steps = np.floor(array / kind(scale) + kind(0.5))
    return (np.clip(steps, -QMAX, QMAX) * kind(scale)).astype(array.dtype, copy=False)


def quantize_inputs(inputs: dict, node: Node) -> dict:
    """The arrays of ``inputs`` (port -> array) that ``node`` quantises,
    quantised; the others as they are."""
    scales = node_scales(node)
    return {port: quantize(np.asarray(a), scales[port]) if port in scales else a
            for port, a in inputs.items()}


def quantize_kernel(function: KernelFunction, scales: dict[str, float]) -> KernelFunction:
    """``function`` with every f32 load of a parameter buffer in ``scales``
    (parameter name -> scale) quantised as the module docstring says."""
    def visit(node):
        if isinstance(node, Load) and node.buffer in scales and node.type == F32:
            scale = Const(scales[node.buffer], F32)
            steps = Intrinsic("floor", (Binary("div", node, scale) + Const(0.5, F32),))
            clamped = Intrinsic("min", (Intrinsic("max", (steps, Const(-QMAX, F32))),
                                        Const(QMAX, F32)))
            return clamped * scale
        return None

    return dataclasses.replace(function, body=rewrite(function.body, visit))
