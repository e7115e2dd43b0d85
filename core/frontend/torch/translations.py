"""ATen operators of today's models (transformers above all) as ONNX
operators: rank-N linear and matmul, layer and RMS norm, gelu, scaled dot
product attention, embedding, masked_fill and where, the pointwise math,
reductions, indexing and casts.

A translation takes the converter ``c`` (aten._Converter: ``c.onnx(name,
op_type, inputs, attrs)`` builds an ONNX node on Values and numpy
constants), the node's name and its arguments by schema name.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ...ir.types import scalar_type_of_dtype
from ..onnx.names import ELEMENT_TYPES
from ..onnx.values import ConstValue, Unsupported

Translation = Callable[[Any, str, dict], Any]
ONNX_TYPE = {element.name: code for code, element in ELEMENT_TYPES.items()}


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty((), dtype=dtype).numpy().dtype


def operand(value, like=None):
    """A Python number as a constant of ``like``'s element type (f32 when
    there is none)."""
    if isinstance(value, (bool, int, float)):
        dtype = like.type.element.numpy_dtype if like is not None and hasattr(like, "type") \
            else np.float32
        return np.array(value, dtype)
    return value


def _shape(value) -> tuple:
    return value.array.shape if isinstance(value, ConstValue) else value.type.shape


def binary(op_type: str, left="input", right="other") -> Translation:
    def translate(c, name: str, a: dict):
        x, y = a[left], a[right]
        if a.get("alpha", 1) != 1:
            y = c.onnx(f"{name}_scale", "Mul", [y, operand(a["alpha"], y)])[0]
        tensor = x if not isinstance(x, (bool, int, float)) else y
        return c.onnx(name, op_type, [operand(x, tensor), operand(y, tensor)])[0]
    return translate


def unary(op_type: str, **attrs) -> Translation:
    def translate(c, name: str, a: dict):
        return c.onnx(name, op_type, [a["input"]], attrs)[0]
    return translate


def _reverse_sub(c, name: str, a: dict):
    return binary("Sub", "other", "input")(c, name, a)


def _rsqrt(c, name: str, a: dict):
    return c.onnx(name, "Reciprocal", [c.onnx(f"{name}_sqrt", "Sqrt", [a["input"]])[0]])[0]


def _silu(c, name: str, a: dict):
    x = a["input"]
    return c.onnx(name, "Mul", [x, c.onnx(f"{name}_sigmoid", "Sigmoid", [x])[0]])[0]


def _gelu(c, name: str, a: dict):
    return c.onnx(name, "Gelu", [a["input"]], {"approximate": a.get("approximate", "none")})[0]


def _clamp(c, name: str, a: dict):
    x = a["input"]
    low, high = a.get("min"), a.get("max")
    return c.onnx(name, "Clip", [x, None if low is None else operand(low, x),
                                 None if high is None else operand(high, x)])[0]


def _linear(c, name: str, a: dict):
    """x @ weight^T + bias for x of any rank (weight^T is folded when the
    weight is a constant)."""
    x, weight, bias = a["input"], a["weight"], a.get("bias")
    if len(_shape(x)) == 2:
        return c.onnx(name, "Gemm", [x, weight, bias], {"transB": 1})[0]
    transposed = c.onnx(f"{name}_t", "Transpose", [weight], {"perm": [1, 0]})[0]
    product = c.onnx(name, "MatMul", [x, transposed])[0]
    return product if bias is None else c.onnx(f"{name}_bias", "Add", [product, bias])[0]


def _bmm(c, name: str, a: dict):
    return c.onnx(name, "MatMul", [a["input"], a["mat2"]])[0]


def _layer_norm(c, name: str, a: dict):
    x, shape = a["input"], list(a["normalized_shape"])
    rank = len(_shape(x))
    inputs = [x, a.get("weight"), a.get("bias")]
    if inputs[1] is None:
        inputs[1] = np.ones(shape, x.type.element.numpy_dtype)
    attrs = {"axis": rank - len(shape), "epsilon": float(a.get("eps", 1e-5))}
    return c.onnx(name, "LayerNormalization", inputs, attrs)[0]


def _native_layer_norm(c, name: str, a: dict):
    x = a["input"]
    shape = list(a["normalized_shape"])
    inputs = [x, a.get("weight"), a.get("bias")]
    if inputs[1] is None:
        inputs[1] = np.ones(shape, x.type.element.numpy_dtype)
    attrs = {"axis": len(_shape(x)) - len(shape), "epsilon": float(a["eps"])}
    return tuple(c.onnx(name, "LayerNormalization", inputs, attrs, outputs=3))


def _rms_norm(c, name: str, a: dict):
    x, shape = a["input"], list(a["normalized_shape"])
    weight = a.get("weight")
    if weight is None:
        weight = np.ones(shape, x.type.element.numpy_dtype)
    eps = a.get("eps")
    eps = float(np.finfo(x.type.element.numpy_dtype).eps) if eps is None else float(eps)
    return c.onnx(name, "RMSNormalization", [x, weight],
                  {"axis": len(_shape(x)) - len(shape), "epsilon": eps})[0]


def _group_norm(c, name: str, a: dict):
    """Groups as rows: [N, G, rest], instance-normalised, then per channel
    scaled and shifted."""
    x, groups = a["input"], int(a["num_groups"])
    shape = _shape(x)
    rows = c.onnx(f"{name}_groups", "Reshape", [x, np.array([shape[0], groups, -1], np.int64)])[0]
    ones = np.ones(groups, x.type.element.numpy_dtype)
    normal = c.onnx(f"{name}_norm", "InstanceNormalization", [rows, ones, ones * 0],
                    {"epsilon": float(a["eps"])})[0]
    value = c.onnx(f"{name}_back", "Reshape", [normal, np.array(shape, np.int64)])[0]
    channel = np.array([shape[1]] + [1] * (len(shape) - 2), np.int64)
    for key, op in (("weight", "Mul"), ("bias", "Add")):
        if a.get(key) is not None:
            parameter = c.onnx(f"{name}_{key}", "Reshape", [a[key], channel])[0]
            value = c.onnx(f"{name}_{op.lower()}", op, [value, parameter])[0]
    return value


def _attention(c, name: str, a: dict):
    """scaled_dot_product_attention on [..., L, E] as ONNX Attention (4-D)."""
    q, k, v = a["query"], a["key"], a["value"]
    if len(_shape(q)) != 4:
        raise Unsupported(f"scaled_dot_product_attention on rank-{len(_shape(q))} inputs",
                          "pass [batch, heads, length, size] tensors")
    if a.get("dropout_p", 0.0):
        raise Unsupported("attention dropout is not supported", "call model.eval()")
    attrs = {"is_causal": int(bool(a.get("is_causal")))}
    if a.get("scale") is not None:
        attrs["scale"] = float(a["scale"])
    inputs = [q, k, v, a.get("attn_mask")]
    if a.get("enable_gqa") is False and _shape(q)[1] != _shape(k)[1]:
        raise Unsupported("query and key head counts differ without enable_gqa", "")
    return c.onnx(name, "Attention", inputs, attrs)[0]


def _einsum(c, name: str, a: dict):
    return c.onnx(name, "Einsum", list(a["tensors"]), {"equation": a["equation"]})[0]


def _upsample(mode: str) -> Translation:
    """aten.upsample_{nearest,bilinear}2d as ONNX Resize to the sizes
    PyTorch computes, with PyTorch's coordinate rules."""
    def translate(c, name: str, a: dict):
        x = a["input"]
        shape = _shape(x)
        sizes = a.get("output_size")
        if sizes is None:
            factors = a.get("scale_factors") or (a.get("scales_h"), a.get("scales_w"))
            sizes = [int(d * f) for d, f in zip(shape[2:], factors)]
        if mode == "nearest":
            attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                     "nearest_mode": "floor"}
        else:
            corners = "align_corners" if a.get("align_corners") else "pytorch_half_pixel"
            attrs = {"mode": "linear", "coordinate_transformation_mode": corners}
        full = np.array(list(shape[:2]) + [int(s) for s in sizes], np.int64)
        return c.onnx(name, "Resize", [x, None, None, full], attrs)[0]
    return translate


def _embedding(c, name: str, a: dict):
    return c.onnx(name, "Gather", [a["weight"], a["indices"]], {"axis": 0})[0]


def _masked_fill(c, name: str, a: dict):
    x = a["input"]
    return c.onnx(name, "Where", [a["mask"], operand(a["value"], x), x])[0]


def _where(c, name: str, a: dict):
    x, y = a["self"] if "self" in a else a["input"], a["other"]
    tensor = x if not isinstance(x, (bool, int, float)) else y
    return c.onnx(name, "Where", [a["condition"], operand(x, tensor), operand(y, tensor)])[0]


def reduce(op_type: str) -> Translation:
    """Reductions over ``dim`` (all axes when None); opset 17's ReduceSum
    takes its axes as an input, the others as an attribute."""
    def translate(c, name: str, a: dict):
        x = a["input"]
        dims = a.get("dim")
        axes = [int(d) for d in ([dims] if isinstance(dims, int) else (dims or ()))]
        attrs = {"keepdims": int(bool(a.get("keepdim")))}
        inputs = [x]
        if axes and op_type == "ReduceSum":
            inputs.append(np.array(axes, np.int64))
        elif axes:
            attrs["axes"] = axes
        return c.onnx(name, op_type, inputs, attrs)[0]
    return translate


def _div(c, name: str, a: dict):
    mode = a.get("rounding_mode")
    quotient = binary("Div")(c, name if mode is None else f"{name}_exact", a)
    if mode is None:
        return quotient
    if mode != "floor" or not quotient.type.element.is_float:
        raise Unsupported(f"division with rounding_mode='{mode}' on "
                          f"{quotient.type.element} is not supported",
                          "divide floats and round with torch.floor")
    return c.onnx(name, "Floor", [quotient])[0]


def _arg(op_type: str) -> Translation:
    def translate(c, name: str, a: dict):
        x, dim = a["input"], a.get("dim")
        if dim is None:
            x = c.onnx(f"{name}_flat", "Reshape", [x, np.array([-1], np.int64)])[0]
            dim = 0
        return c.onnx(name, op_type, [x], {"axis": int(dim),
                                           "keepdims": int(bool(a.get("keepdim")))})[0]
    return translate


def _unsqueeze(c, name: str, a: dict):
    return c.onnx(name, "Unsqueeze", [a["input"], np.array([int(a["dim"])], np.int64)])[0]


def _squeeze(c, name: str, a: dict):
    dims = a.get("dim")
    dims = [dims] if isinstance(dims, int) else list(dims or ())
    x = a["input"]
    rank = len(_shape(x))
    dims = [d for d in dims if _shape(x)[d % rank] == 1]  # torch skips other sizes
    if not dims and a.get("dim") is not None:
        return x
    return c.onnx(name, "Squeeze", [x] + ([np.array(dims, np.int64)] if dims else []))[0]


def _select(c, name: str, a: dict):
    return c.onnx(name, "Gather", [a["input"], np.array(int(a["index"]), np.int64)],
                  {"axis": int(a["dim"])})[0]


def _slice(c, name: str, a: dict):
    x = a["input"]
    dim = int(a.get("dim", 0))
    start = a.get("start")
    end = a.get("end")
    big = np.iinfo(np.int64).max
    bounds = [np.array([0 if start is None else int(start)], np.int64),
              np.array([big if end is None else min(int(end), big)], np.int64),
              np.array([dim], np.int64), np.array([int(a.get("step", 1))], np.int64)]
    return c.onnx(name, "Slice", [x] + bounds)[0]


def _split(c, name: str, a: dict):
    x = a["input"]
    dim = int(a.get("dim", 0)) % len(_shape(x))
    size, length = a["split_size"] if "split_size" in a else a["split_size_or_sections"], \
        _shape(x)[dim]
    sizes = list(size) if isinstance(size, (list, tuple)) else \
        [min(size, length - start) for start in range(0, length, size)]
    return tuple(c.onnx(name, "Split", [x, np.array(sizes, np.int64)], {"axis": dim},
                        outputs=len(sizes)))


def _index_select(c, name: str, a: dict):
    return c.onnx(name, "Gather", [a["input"], a["index"]], {"axis": int(a["dim"])})[0]


def _expand(c, name: str, a: dict):
    x = a["input"]
    shape = list(_shape(x))
    sizes = list(a["size"])
    offset = len(sizes) - len(shape)
    wanted = [shape[i - offset] if s == -1 else s for i, s in enumerate(sizes)]
    return c.onnx(name, "Expand", [x, np.array(wanted, np.int64)])[0]


def _repeat(c, name: str, a: dict):
    x = a["input"]
    repeats = list(a["repeats"])
    missing = len(repeats) - len(_shape(x))
    if missing:
        x = c.onnx(f"{name}_rank", "Reshape",
                   [x, np.array([1] * missing + list(_shape(x)), np.int64)])[0]
    return c.onnx(name, "Tile", [x, np.array(repeats, np.int64)])[0]


def _triangle(upper: int) -> Translation:
    def translate(c, name: str, a: dict):
        return c.onnx(name, "Trilu", [a["input"], np.array(int(a.get("diagonal", 0)), np.int64)],
                      {"upper": upper})[0]
    return translate


def _cumsum(c, name: str, a: dict):
    return c.onnx(name, "CumSum", [a["input"], np.array(int(a["dim"]), np.int64)])[0]


def _softmax_like(op_type: str) -> Translation:
    def translate(c, name: str, a: dict):
        return c.onnx(name, op_type, [a["input"]], {"axis": int(a["dim"])})[0]
    return translate


def _stack(c, name: str, a: dict):
    tensors, dim = list(a["tensors"]), int(a.get("dim", 0))
    rank = len(_shape(tensors[0])) + 1
    axes = np.array([dim % rank], np.int64)
    rows = [c.onnx(f"{name}_{i}", "Unsqueeze", [t, axes])[0] for i, t in enumerate(tensors)]
    return c.onnx(name, "Concat", rows, {"axis": dim % rank})[0]


def _cast(c, name: str, a: dict):
    """aten.to / _to_copy / type_as: a copy, converted when the dtype changes
    (device and memory format do not change values)."""
    x = a["input"]
    dtype = a.get("dtype")
    if dtype is None:
        return x
    element = scalar_type_of_dtype(numpy_dtype(dtype))
    if element == x.type.element:
        return x
    return c.onnx(name, "Cast", [x], {"to": ONNX_TYPE[element.name]})[0]


TRANSFORMER_TRANSLATIONS: dict[str, Translation] = {
    "aten.linear": _linear, "aten.bmm": _bmm,
    "aten.layer_norm": _layer_norm, "aten.native_layer_norm": _native_layer_norm,
    "aten.rms_norm": _rms_norm, "aten.group_norm": _group_norm,
    "aten.gelu": _gelu, "aten.silu": _silu, "aten.scaled_dot_product_attention": _attention,
    "aten.upsample_nearest2d": _upsample("nearest"),
    "aten.upsample_bilinear2d": _upsample("linear"), "aten.einsum": _einsum,
    "aten.embedding": _embedding, "aten.masked_fill": _masked_fill, "aten.where": _where,
    "aten.div": _div, "aten.pow": binary("Pow", "input", "exponent"),
    "aten.rsub": _reverse_sub, "aten.maximum": binary("Max"), "aten.minimum": binary("Min"),
    "aten.eq": binary("Equal"), "aten.lt": binary("Less"), "aten.gt": binary("Greater"),
    "aten.le": binary("LessOrEqual"), "aten.ge": binary("GreaterOrEqual"),
    "aten.logical_and": binary("And"), "aten.logical_or": binary("Or"),
    "aten.logical_not": unary("Not"), "aten.bitwise_not": unary("Not"),
    "aten.exp": unary("Exp"), "aten.log": unary("Log"), "aten.sqrt": unary("Sqrt"),
    "aten.rsqrt": _rsqrt, "aten.neg": unary("Neg"), "aten.abs": unary("Abs"),
    "aten.erf": unary("Erf"), "aten.sin": unary("Sin"), "aten.cos": unary("Cos"),
    "aten.reciprocal": unary("Reciprocal"), "aten.softplus": unary("Softplus"),
    "aten.hardswish": unary("HardSwish"), "aten.hardsigmoid": unary("HardSigmoid", alpha=1 / 6),
    "aten.leaky_relu": lambda c, n, a: c.onnx(n, "LeakyRelu", [a["input"]],
                                              {"alpha": float(a.get("negative_slope", 0.01))})[0],
    "aten.elu": lambda c, n, a: c.onnx(n, "Elu", [a["input"]], {"alpha": float(a["alpha"])})[0],
    "aten.clamp": _clamp, "aten.clip": _clamp,
    "aten.sum": reduce("ReduceSum"), "aten.amax": reduce("ReduceMax"),
    "aten.amin": reduce("ReduceMin"), "aten.prod": reduce("ReduceProd"),
    "aten.argmax": _arg("ArgMax"), "aten.argmin": _arg("ArgMin"),
    "aten.unsqueeze": _unsqueeze, "aten.squeeze": _squeeze, "aten.select": _select,
    "aten.slice": _slice, "aten.split": _split, "aten.split_with_sizes": _split,
    "aten.index_select": _index_select, "aten.expand": _expand, "aten.repeat": _repeat,
    "aten.tril": _triangle(0), "aten.triu": _triangle(1), "aten.cumsum": _cumsum,
    "aten.log_softmax": _softmax_like("LogSoftmax"),
    "aten._log_softmax": _softmax_like("LogSoftmax"), "aten.stack": _stack,
    "aten.to": _cast, "aten._to_copy": _cast, "aten.type_as": _cast,
}
