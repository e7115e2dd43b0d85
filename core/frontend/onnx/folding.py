"""Any ONNX node whose inputs are all known at import time, evaluated then
with onnx's reference implementation (``onnx.reference``), so that
constant subgraphs of every operator (Range, ConstantOfShape, shape
arithmetic ...) become constants instead of nodes.
"""
from __future__ import annotations

import numpy as np

from .values import OnnxNode

NOT_FOLDED = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "Dropout",
})
"""Operators whose result is not a function of their inputs."""


def evaluate(node: OnnxNode, arrays: list, opset: int) -> list[np.ndarray] | None:
    """The outputs of ``node`` on ``arrays`` (None for an omitted input), or
    None when the reference implementation cannot evaluate it."""
    from onnx import helper  # onnx (heavy)
    from onnx.reference import ReferenceEvaluator

    if node.op_type in NOT_FOLDED or not any(a is not None for a in arrays):
        return None
    names = [name for name, array in zip(node.inputs, arrays) if name and array is not None]
    values = [array for array in arrays if array is not None]
    try:
        inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(
            value.dtype), value.shape) for name, value in zip(names, values)]
        outputs = [helper.make_tensor_value_info(name, 0, None) for name in node.outputs if name]
        proto = helper.make_node(node.op_type, node.inputs, node.outputs, **node.attrs)
        model = helper.make_model(helper.make_graph([proto], "fold", inputs, outputs),
                                  opset_imports=[helper.make_opsetid("", opset)])
        results = ReferenceEvaluator(model).run(None, dict(zip(names, values)))
    except Exception:  # noqa: BLE001 - not foldable here; the converter decides
        return None
    if not all(isinstance(r, np.ndarray) for r in results):
        return None  # sequences, optionals
    return [np.asarray(r) for r in results]
