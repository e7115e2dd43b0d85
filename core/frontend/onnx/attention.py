"""ONNX Attention (opset 23) as a composition of tensor ops, following the
operator's definition step by step:

    scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T      (softcapped)
           + bias          (attn_mask, causal, window and length masks)
    Y      = softmax(scores) @ V        (rows whose bias is all -inf: 0)

with 3-D inputs split into heads (q_num_heads, kv_num_heads), past keys
and values joined before the new ones (and returned as present_key and
present_value), grouped-query attention (each key/value head serving
q_num_heads / kv_num_heads query heads), and the optional fourth output
(qk_matmul_output_mode 0-3), sliding windows (left_window_size,
right_window_size) and per-batch key lengths (nonpad_kv_seqlen) as
further masks.  ``softmax_precision`` computes the softmax in that float
type, its result cast back to Q's type for the output and the product
with V.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.types import I64
from .indexing import view
from .names import ELEMENT_TYPES
from .pointwise import binary, cast, scalar, select
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _fixed(value: Value, what: str) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in value.type.shape):
        raise Unsupported(f"Attention's {what} has symbolic sizes {value.type}",
                          "give the model fixed sizes")
    return value.type.shape


def _heads(state: GraphState, node: OnnxNode, x: Value, heads: int, what: str) -> Value:
    """A 3-D [B, S, H * D] input as [B, H, S, D]."""
    batch, length, hidden = _fixed(x, what)
    split = view(state, node, x, (batch, length, heads, hidden // heads))
    return state.step(node, "transpose", {"x": split}, {"perm": (0, 2, 1, 3)})


def _joined(state: GraphState, node: OnnxNode, past: Value | None, new: Value) -> Value:
    if past is None:
        return new
    return state.step(node, "concat", {"x0": past, "x1": new}, {"axis": 2})


def _repeated_heads(state: GraphState, node: OnnxNode, x: Value, times: int) -> Value:
    """[B, H, L, D] with every head repeated ``times`` (np.repeat on axis 1)."""
    if times == 1:
        return x
    batch, heads, length, size = _fixed(x, "keys")
    wide = state.step(node, "expand", {"x": view(state, node, x, (batch, heads, 1, length, size))},
                      {"shape": (batch, heads, times, length, size)})
    return view(state, node, wide, (batch, heads * times, length, size))


def _mask_bias(state: GraphState, node: OnnxNode, mask: Value, like: Value,
               total: int) -> Value:
    """attn_mask as an additive bias of ``like``'s type, padded with -inf
    up to ``total`` keys."""
    if mask.type.element.is_bool:
        mask = select(state, node, mask, scalar(0.0, like), scalar(-math.inf, like))
    shape = _fixed(mask, "attn_mask")
    if shape[-1] < total:
        padding = np.full(shape[:-1] + (total - shape[-1],), -np.inf,
                          dtype=like.type.element.numpy_dtype)
        mask = state.step(node, "concat", {"x0": mask, "x1": ConstValue(padding)},
                          {"axis": len(shape) - 1})
    return mask


def attention(state: GraphState, node: OnnxNode) -> list[Value]:
    q, k, v = (node.input(state, i) for i in range(3))
    rank = len(q.type.shape)
    if rank == 3:
        q_heads, kv_heads = node.attr("q_num_heads"), node.attr("kv_num_heads")
        if not q_heads or not kv_heads:
            raise Unsupported("3-D Attention needs q_num_heads and kv_num_heads",
                              "give both attributes")
        q = _heads(state, node, q, q_heads, "Q")
        k = _heads(state, node, k, kv_heads, "K")
        v = _heads(state, node, v, kv_heads, "V")
    past_key, past_value = node.input(state, 4), node.input(state, 5)
    present_key, present_value = _joined(state, node, past_key, k), _joined(state, node,
                                                                          past_value, v)
    q_shape, k_shape = _fixed(q, "Q"), _fixed(present_key, "K")
    queries, keys = q_shape[2], k_shape[2]
    scale = node.attr("scale", None)
    root = scalar(math.sqrt(1 / math.sqrt(q_shape[3]) if scale is None else scale), q)

    groups = q_shape[1] // k_shape[1]
    k_all = _repeated_heads(state, node, present_key, groups)
    v_all = _repeated_heads(state, node, present_value, groups)
    k_t = state.step(node, "transpose", {"x": binary(state, node, "mul", k_all, root)},
                     {"perm": (0, 1, 3, 2)})
    scores = state.step(node, "matmul", {"a": binary(state, node, "mul", q, root), "b": k_t})
    softcap = node.attr("softcap", 0.0)
    if softcap and softcap > 0:
        capped = state.step(node, "tanh", {"x": binary(state, node, "div", scores,
                                                       scalar(softcap, q))})
        scores = binary(state, node, "mul", capped, scalar(softcap, q))
    after_matmul = scores

    bias, masked_rows = _bias(state, node, q, queries, keys,
                              0 if past_key is None else _fixed(past_key, "past_key")[2])
    if bias is not None:
        scores = binary(state, node, "add", scores, bias)
    precise = _softmax_input(node, scores)
    probabilities = state.step(node, "softmax", {"x": cast(state, node, scores, precise)},
                               {"axis": -1})
    if masked_rows is not None:
        probabilities = select(state, node, masked_rows, scalar(0.0, probabilities),
                                probabilities)
    probabilities = cast(state, node, probabilities, q.type.element)
    y = state.step(node, "matmul", {"a": probabilities, "b": v_all})
    if rank == 3:
        batch, heads, length, size = y.type.shape
        moved = state.step(node, "transpose", {"x": y}, {"perm": (0, 2, 1, 3)})
        y = view(state, node, moved, (batch, length, heads * size))
    mode = node.attr("qk_matmul_output_mode", 0)
    qk_output = {0: after_matmul, 1: after_matmul, 2: scores, 3: probabilities}.get(mode)
    if qk_output is None:
        node.reject("qk_matmul_output_mode", mode, "a mode of 0 to 3")
    return [y, present_key, present_value, qk_output][:len(node.outputs)]


def _softmax_input(node: OnnxNode, scores: Value):
    """The element type the softmax computes in: ``softmax_precision``
    where given, else the scores' own."""
    precision = node.attr("softmax_precision", None)
    if precision is None:
        return scores.type.element
    element = ELEMENT_TYPES.get(precision)
    if element is None or not element.is_float:
        node.reject("softmax_precision", precision, "an ONNX float type (1: float, 10: "
                    "float16, 11: double, 16: bfloat16)")
    return element


def _bias(state: GraphState, node: OnnxNode, q: Value, queries: int, keys: int,
          past: int) -> tuple[Value | None, Value | None]:
    """(additive bias, or None; the rows whose bias is all -inf as a bool
    Value, or None when there can be none): the mask, the causal and the
    sliding-window limits, and the keys past each batch entry's
    ``nonpad_kv_seqlen``.  A query at position ``i + offset`` (offset: the
    past's length, or per batch entry ``nonpad_kv_seqlen - queries``)
    sees key ``j`` when ``j <= i + offset`` (causal) and
    ``-right <= i + offset - j <= left`` (windows, where given)."""
    mask, lengths = node.input(state, 3), node.input(state, 6)
    terms = [] if mask is None else [_mask_bias(state, node, mask, q, keys)]
    per_batch = lengths is not None and node.input(state, 4) is None
    if per_batch:
        shaped = state.step(node, "reshape", {"x": cast(state, node, lengths, I64)},
                            {"shape": (-1, 1, 1, 1)})
        offset: Value | int = binary(state, node, "sub", shaped, ConstValue(np.int64(queries)))
    else:
        offset = past
    rows = np.arange(queries, dtype=np.int64).reshape(queries, 1)
    cols = np.arange(keys, dtype=np.int64).reshape(1, keys)
    left, right = node.attr("left_window_size", -1), node.attr("right_window_size", -1)
    limits = []  # (lowest allowed i + offset - j, or None; highest, or None)
    if node.attr("is_causal", 0):
        limits.append((0, None))
    if left >= 0 or right >= 0:
        limits.append((-right if right >= 0 else None, left if left >= 0 else None))
    for low, high in limits:
        terms.append(_window(state, node, q, rows, cols, offset, low, high))
    if lengths is not None:
        shaped = state.step(node, "reshape", {"x": cast(state, node, lengths, I64)},
                            {"shape": (-1, 1, 1, 1)})
        inside = binary(state, node, "less", ConstValue(cols.reshape(1, 1, 1, keys)), shaped)
        terms.append(select(state, node, inside, scalar(0.0, q), scalar(-math.inf, q)))
    if not terms:
        return None, None
    bias = terms[0]
    for term in terms[1:]:
        bias = binary(state, node, "add", bias, term)
    if isinstance(bias, ConstValue):
        empty = np.all(bias.array == -np.inf, axis=-1, keepdims=True)
        return bias, (ConstValue(empty) if empty.any() else None)
    top = state.step(node, "reduce", {"x": bias}, {"fn": "max", "axes": (-1,)})
    return bias, binary(state, node, "equal", top, scalar(-math.inf, q))


def _window(state: GraphState, node: OnnxNode, q: Value, rows, cols, offset, low, high):
    """0 where ``low <= i + offset - j <= high`` (a None bound: no limit),
    -inf elsewhere; a constant when the offset is."""
    if isinstance(offset, int):
        distance = rows + offset - cols
        allowed = np.ones(distance.shape, bool)
        if low is not None:
            allowed &= distance >= low
        if high is not None:
            allowed &= distance <= high
        return ConstValue(np.where(allowed, 0.0, -np.inf).astype(q.type.element.numpy_dtype))
    distance = binary(state, node, "sub", binary(state, node, "add", offset, ConstValue(rows)),
                      ConstValue(cols))
    allowed = None
    for bound, fn in ((low, "greater_equal"), (high, "less_equal")):
        if bound is not None:
            test = binary(state, node, fn, distance, scalar(bound, distance))
            allowed = test if allowed is None else binary(state, node, "and", allowed, test)
    return select(state, node, allowed, scalar(0.0, q), scalar(-math.inf, q))
