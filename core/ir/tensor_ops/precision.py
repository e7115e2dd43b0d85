"""Reduced precision of one tensor node (an ApproxHPVM knob).

A node attribute ``precision = "fp16"`` says: the op's inputs and results
are rounded to IEEE half precision, the arithmetic in between stays in the
declared (f32) type -- what a GPU's FP16 tensor-core kernels do (half
operands, wider accumulation).  The buffers keep their declared types, so
neighbouring nodes are unaffected.  ``"fp32"`` (or no attribute) is exact
IEEE single precision.  Two more apply to the matrix and convolution
products (conv2d, gemm, matmul), and to their operands (the required
inputs), never a bias: ``"int8"`` quantises them (int8.py), and ``"tf32"``
rounds them to TensorFloat-32 (10 mantissa bits, to nearest even) and
sums in f32 -- what a GPU's TF32 tensor cores do.

Each place that runs a tensor node honours it: the interpreter rounds the
arrays (:func:`round_arrays`, :func:`round_tf32`), lowered kernels round
their loads and stores (:func:`round_kernel`), a native target computes in
that precision.  Lowered kernels have no TF32 (kernel IR cannot reach a
float's bits): placement gives a TF32 node only to a target that runs it
natively (``Target.native_precisions``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import Diagnostic, Location, VerificationError
from ..graph import Node
from ..kernel import Cast, KernelFunction, Load, Store
from ..types import F16, F32
from ..visit import rewrite
from . import get_op

PRECISION_ATTRIBUTE = "precision"
PRECISIONS = ("fp32", "fp16", "int8", "tf32")
LOWERED_PRECISIONS = ("fp32", "fp16", "int8")
"""The precisions a tensor node lowered to kernels honours."""
PRODUCT_OPS = ("conv2d", "gemm", "matmul")
"""The matrix and convolution products: the ops int8 and tf32 apply to."""
TF32_DROPPED_BITS = 13


def node_precision(node: Node) -> str:
    """``node``'s precision: "fp32" unless its attributes say otherwise;
    VerificationError naming the node for an unknown value."""
    value = node.attributes.get(PRECISION_ATTRIBUTE, "fp32")
    if value not in PRECISIONS:
        raise VerificationError(Diagnostic(
            Location(node=node.name), f"attribute precision={value!r} is not supported",
            f"use one of: {', '.join(PRECISIONS)}"))
    return value


def round_tf32(array: np.ndarray) -> np.ndarray:
    """An f32 array rounded to TF32 (to nearest, ties to even), still f32;
    infinities and NaNs kept."""
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32)
    half = np.uint32((1 << (TF32_DROPPED_BITS - 1)) - 1)
    odd = (bits >> np.uint32(TF32_DROPPED_BITS)) & np.uint32(1)
    rounded = (bits + half + odd) & np.uint32(~((1 << TF32_DROPPED_BITS) - 1) & 0xFFFFFFFF)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, rounded).view(np.float32).reshape(np.shape(array))


def operands(op: str) -> tuple[str, ...]:
    """The operands of product ``op`` (its required inputs, not a bias):
    what int8 quantises and tf32 rounds."""
    return get_op(op).inputs


def tf32_operands(inputs: dict, op: str) -> dict:
    """``inputs`` (port -> array) with the operands of product ``op``
    rounded to TF32."""
    rounded = operands(op)
    return {port: round_tf32(a) if port in rounded else a for port, a in inputs.items()}


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
