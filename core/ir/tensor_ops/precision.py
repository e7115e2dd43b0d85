"""Reduced precision of one tensor node (an ApproxHPVM knob).

A node attribute ``precision = "fp16"`` says: the op's inputs and results
are rounded to IEEE half precision, the arithmetic in between stays in the
declared (f32) type -- what a GPU's FP16 tensor-core kernels do (half
operands, wider accumulation).  The buffers keep their declared types, so
neighbouring nodes are unaffected.  ``"fp32"`` (or no attribute) is exact;
``"int8"`` quantises the operands of a matrix or convolution product
(int8.py).

Each place that runs a tensor node honours it: the interpreter rounds the
arrays (:func:`round_arrays`), lowered kernels round their loads and stores
(:func:`round_kernel`), a native target computes in half.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import Diagnostic, Location, VerificationError
from ..graph import Node
from ..kernel import Cast, KernelFunction, Load, Store
from ..types import F16, F32
from ..visit import rewrite

PRECISION_ATTRIBUTE = "precision"
PRECISIONS = ("fp32", "fp16", "int8")


def node_precision(node: Node) -> str:
    """``node``'s precision: "fp32" unless its attributes say otherwise;
    VerificationError naming the node for an unknown value."""
    value = node.attributes.get(PRECISION_ATTRIBUTE, "fp32")
    if value not in PRECISIONS:
        raise VerificationError(Diagnostic(
            Location(node=node.name), f"attribute precision={value!r} is not supported",
            f"use one of: {', '.join(PRECISIONS)}"))
    return value


def is_half(node: Node) -> bool:
    return node_precision(node) == "fp16"


def round_arrays(arrays: dict, precision: str) -> dict:
    """Float arrays of ``arrays`` rounded through ``precision`` (kept in
    their own dtype); only fp16 rounds results."""
    if precision != "fp16":
        return arrays
    return {name: a.astype(np.float16).astype(a.dtype)
            if isinstance(a, np.ndarray) and a.dtype == np.float32 else a
            for name, a in arrays.items()}


def round_kernel(function: KernelFunction) -> KernelFunction:
    """``function`` with every f32 load of a parameter buffer and every f32
    value stored to one rounded through f16."""
    buffers = {p.name for p in function.params}

    def through_half(value):
        return Cast(Cast(value, F16), F32)

    def visit(node):
        if isinstance(node, Load) and node.buffer in buffers and node.type == F32:
            return through_half(node)
        if isinstance(node, Store) and node.buffer in buffers and node.value.type == F32:
            return dataclasses.replace(node, value=through_half(node.value))
        return None

    return dataclasses.replace(function, body=rewrite(function.body, visit))
