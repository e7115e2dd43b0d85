"""The pointwise, reduction and indexing primitives of hpvm's tensor IR on
ATen, with the IR's semantics (hpvm.ir.tensor_ops.pointwise, reduce,
indexing): integer division truncating, Python's modulo, shifts by the
bit width or more giving 0 (or the sign), negative indices counted from
the end."""
from __future__ import annotations

import torch

from hpvm.ir.types import SCALAR_TYPES

DTYPES = {"bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
          "i64": torch.int64, "u8": torch.uint8, "u16": torch.uint16, "u32": torch.uint32,
          "u64": torch.uint64, "f16": torch.float16, "f32": torch.float32,
          "f64": torch.float64}


UNARY = {  # torch.round rounds half to even, as the IR's round
    "neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "exp": torch.exp, "log": torch.log,
    "sqrt": torch.sqrt, "reciprocal": torch.reciprocal, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "erf": torch.erf, "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "not": torch.logical_not, "bitnot": torch.bitwise_not,
    "isnan": torch.isnan, "isinf": torch.isinf,
}


def _divide(a, b):
    if a.is_floating_point():
        return torch.div(a, b)
    return torch.div(a, torch.where(b == 0, torch.ones_like(b), b), rounding_mode="trunc")


def _modulo(fmod: bool):
    def modulo(a, b):
        if not a.is_floating_point():
            b = torch.where(b == 0, torch.ones_like(b), b)
        return torch.fmod(a, b) if fmod else torch.remainder(a, b)
    return modulo


def _shift(left: bool):
    def shift(a, b):
        bits = a.element_size() * 8
        count = (b.to(torch.int64) & (bits - 1)).to(a.dtype)
        shifted = torch.bitwise_left_shift(a, count) if left else \
            torch.bitwise_right_shift(a, count)
        over = torch.bitwise_right_shift(a, bits - 1) if not left and a.is_signed() \
            else torch.zeros_like(a)
        return torch.where(b.to(torch.int64) >= bits, over, shifted)
    return shift


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _divide, "pow": torch.pow,
    "max": torch.maximum, "min": torch.minimum, "mod": _modulo(False), "fmod": _modulo(True),
    "and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor,
    "bitand": torch.bitwise_and, "bitor": torch.bitwise_or, "bitxor": torch.bitwise_xor,
    "shl": _shift(True), "shr": _shift(False), "equal": torch.eq, "not_equal": torch.ne,
    "less": torch.lt, "less_equal": torch.le, "greater": torch.gt, "greater_equal": torch.ge,
}


def cast(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data, to = x["x"], DTYPES[attrs["to"]]
    if data.is_floating_point() and not SCALAR_TYPES[attrs["to"]].is_float and \
            attrs["to"] != "bool":
        data = torch.trunc(data)
    return data.to(to)


def _axes(data: torch.Tensor, axes) -> list[int]:
    return [a % data.dim() for a in axes] if axes else list(range(data.dim()))


def reduce(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data, keep = x["x"], bool(attrs["keepdims"])
    axes = _axes(data, attrs["axes"])
    fn = attrs["fn"]
    if fn == "sum":
        return torch.sum(data, dim=axes, keepdim=keep, dtype=data.dtype)
    if fn in ("max", "min"):
        return (torch.amax if fn == "max" else torch.amin)(data, dim=axes, keepdim=keep)
    for axis in sorted(axes, reverse=True):
        data = torch.prod(data, dim=axis, keepdim=keep, dtype=data.dtype)
    return data


def arg_reduce(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    axis = attrs["axis"] % data.dim()
    find = torch.argmax if attrs["fn"] == "argmax" else torch.argmin
    if attrs["select_last_index"]:
        index = data.shape[axis] - 1 - find(torch.flip(data, (axis,)), dim=axis)
    else:
        index = find(data, dim=axis)  # the first extreme (PyTorch documents it)
    return index.unsqueeze(axis) if attrs["keepdims"] else index


def _wrapped(indices: torch.Tensor, size: int) -> torch.Tensor:
    indices = indices.to(torch.int64)
    return torch.where(indices < 0, indices + size, indices)


def gather(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    axis = attrs["axis"] % data.dim()
    indices = _wrapped(x["indices"], data.shape[axis])
    picked = torch.index_select(data, axis, indices.reshape(-1))
    return picked.reshape(tuple(out_shape))


def gather_elements(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    axis = attrs["axis"] % data.dim()
    return torch.gather(data, axis, _wrapped(x["indices"], data.shape[axis]))


def cumsum(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    axis = attrs["axis"] % data.dim()
    if attrs["reverse"]:
        data = torch.flip(data, (axis,))
    if attrs.get("fn", "sum") == "prod":
        total = torch.cumprod(data, dim=axis, dtype=data.dtype)
        if attrs["exclusive"]:
            first = torch.ones_like(data.narrow(axis, 0, 1))
            total = torch.cat([first, total.narrow(axis, 0, data.shape[axis] - 1)], axis)
    else:
        total = torch.cumsum(data, dim=axis, dtype=data.dtype)
        if attrs["exclusive"]:
            total = total - data
    return torch.flip(total, (axis,)) if attrs["reverse"] else total


def bitcast(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    return x["x"].contiguous().view(DTYPES[attrs["to"]])


_SCATTER_REDUCE = {"mul": "prod", "max": "amax", "min": "amin"}


def scatter(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """The updates written at their flat positions (a negative one counted
    from the end); ``add``, ``mul``, ``max``, ``min`` combine."""
    y = x["x"].clone().reshape(-1)
    positions = x["positions"].reshape(-1).to(torch.int64)
    positions = torch.where(positions < 0, positions + y.numel(), positions)
    updates = x["updates"].reshape(-1).to(y.dtype)
    reduction = attrs["reduction"]
    if reduction == "none":
        y[positions] = updates
    elif reduction == "add":
        y.index_add_(0, positions, updates)
    else:
        y.scatter_reduce_(0, positions, updates, _SCATTER_REDUCE[reduction])
    return y.reshape(out_shape)


def sort(x: dict, attrs: dict, out_shape) -> tuple[torch.Tensor, torch.Tensor]:
    result = torch.sort(x["x"], dim=attrs["axis"], descending=bool(attrs["descending"]),
                        stable=True)
    return result.values, result.indices


PRIMITIVE_OPS = {
    "bitcast": bitcast, "scatter": scatter, "sort": sort,
    "unary": lambda x, attrs, shape: UNARY[attrs["fn"]](x["x"]),
    "binary": lambda x, attrs, shape: BINARY[attrs["fn"]](x["a"], x["b"]),
    "select": lambda x, attrs, shape: torch.where(x["cond"], x["a"], x["b"]),
    "cast": cast,
    "reduce": reduce,
    "arg_reduce": arg_reduce,
    "expand": lambda x, attrs, shape: x["x"].expand(tuple(shape)).contiguous(),
    "gather": gather,
    "gather_elements": gather_elements,
    "cumsum": cumsum,
}
