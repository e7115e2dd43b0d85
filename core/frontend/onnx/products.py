"""Matrix products as numpy's matmul defines them, for the converters of
MatMul and of the quantized products."""
from __future__ import annotations

from .indexing import view
from .values import GraphState, OnnxNode, Value


def matrix_product(state: GraphState, node: OnnxNode, a: Value, b: Value) -> Value:
    """``a @ b`` (numpy's matmul): a vector operand is made a matrix (a row
    on the left, a column on the right) and its axis dropped from the
    result."""
    vector_a, vector_b = len(a.type.shape) == 1, len(b.type.shape) == 1
    if vector_a:
        a = view(state, node, a, (1,) + a.type.shape)
    if vector_b:
        b = view(state, node, b, b.type.shape + (1,))
    y = state.step(node, "matmul", {"a": a, "b": b})
    if vector_a or vector_b:
        shape = y.type.shape
        dropped = {len(shape) - 2} if vector_a else set()
        dropped |= {len(shape) - 1} if vector_b else set()
        y = view(state, node, y, [d for axis, d in enumerate(shape) if axis not in dropped])
    return y
