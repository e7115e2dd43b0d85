"""The NVDLA engines emulated in numpy, layer by layer, in the arithmetic
of the hardware.

FP16: feature data and weights are FP16; the convolution multiplies FP16
values and accumulates in FP32 (CACC's FP32 accumulators), the result is
rounded to FP16 as it leaves CACC; every SDP operation works on FP16
values and rounds its result to FP16; sigmoid and tanh read SDP's lookup
table (:data:`LUT_ENTRIES` entries over [-LUT_RANGE, LUT_RANGE], linear
interpolation between entries, saturating outside); PDP max is exact and
PDP average sums in FP32 and rounds the mean to FP16; CDP (LRN) computes
in FP32 from the FP16 input (its power lookup table modelled as the
exact function) and rounds to FP16.

INT8 (int8.py): integers end to end with per-tensor scales.
"""
from __future__ import annotations

import numpy as np

from hpvm.ir.tensor_ops.conv import conv2d_sum

from .layers import Layer

LUT_ENTRIES = 257
LUT_RANGE = 8.0


def lut(name: str) -> tuple[np.ndarray, np.ndarray]:
    """SDP's table for ``name`` (sigmoid or tanh): sample points and values."""
    points = np.linspace(-LUT_RANGE, LUT_RANGE, LUT_ENTRIES)
    values = 1.0 / (1.0 + np.exp(-points)) if name == "sigmoid" else np.tanh(points)
    return points, values


def lookup(name: str, x: np.ndarray) -> np.ndarray:
    points, values = lut(name)
    return np.interp(x.astype(np.float64), points, values)


def run_fp16(layers: list[Layer], inputs: dict[str, np.ndarray],
             engine: str = "numpy") -> dict[str, np.ndarray]:
    """Every layer's output (FP16), from the launch's inputs; ``engine``
    computes the convolutions (numpy, or torch on a CUDA GPU)."""
    values = {name: np.asarray(a, np.float32).astype(np.float16) for name, a in inputs.items()}
    for layer in layers:
        x = values[layer.inputs[0]]
        if layer.kind in ("conv", "fc"):
            y = _core_fp16(layer, x, engine)
        elif layer.kind == "pdp":
            y = pool(layer, x.astype(np.float32)).astype(np.float16)
        elif layer.kind == "cdp":
            y = lrn(layer, x.astype(np.float32)).astype(np.float16)
        elif layer.kind == "concat":
            y = np.concatenate([values[v] for v in layer.inputs], axis=layer.attrs["axis"])
        elif layer.kind == "slice":
            y = channel_slice(layer, x)
        else:
            y = x
        for name, operand in layer.steps:
            y = _sdp_fp16(name, operand, y, values)
        values[layer.output] = y.reshape(layer.shape)
    return values


def channel_slice(layer: Layer, x: np.ndarray) -> np.ndarray:
    start, stop = layer.attrs["channels"]
    return x[:, start:stop]


def _core_fp16(layer: Layer, x: np.ndarray, engine: str) -> np.ndarray:
    weight = layer.weight.astype(np.float16).astype(np.float32)
    y = core(layer, x.astype(np.float32), weight, engine)
    if layer.bias is not None:
        y = y + _per_channel(layer.bias.astype(np.float16).astype(np.float32), y)
    return y.astype(np.float16)


def core(layer: Layer, x: np.ndarray, weight: np.ndarray, engine: str = "numpy") -> np.ndarray:
    """The convolution or fully connected product in ``x``'s dtype
    (FP32 or int64 accumulators), by numpy or by torch on the GPU."""
    if engine == "torch":
        from .torch_engine import core_on_gpu
        return core_on_gpu(layer, x, weight)
    if layer.kind == "fc":
        return x.reshape(x.shape[0], -1) @ weight.T
    a = layer.attrs
    return conv2d_sum(x, weight, a["stride"], a["padding"], a["dilation"], a["groups"],
                      (layer.shape[2], layer.shape[3]))


def pool(layer: Layer, x: np.ndarray) -> np.ndarray:
    """PDP: max or average over windows, in ``x``'s dtype (average: the sum
    divided by the window's count, padding counted only when asked)."""
    (kh, kw), (sh, sw) = layer.attrs["kernel"], layer.attrs["stride"]
    top, left, bottom, right = layer.attrs["padding"]
    is_max = layer.attrs["method"] == "max_pool"
    fill = np.finfo(np.float32).min if is_max and x.dtype.kind == "f" else (
        np.iinfo(x.dtype).min if is_max else 0)
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    out_h, out_w = layer.shape[2], layer.shape[3]
    windows = [padded[:, :, r:r + sh * (out_h - 1) + 1:sh, s:s + sw * (out_w - 1) + 1:sw]
               for r in range(kh) for s in range(kw)]
    if is_max:
        return np.maximum.reduce(windows)
    total = np.add.reduce(windows)
    if layer.attrs["count_include_pad"] or not any(layer.attrs["padding"]):
        return total / (kh * kw) if x.dtype.kind == "f" else (total, kh * kw)
    ones = np.pad(np.ones(x.shape[2:], np.int64), ((top, bottom), (left, right)))
    count = np.add.reduce([ones[r:r + sh * (out_h - 1) + 1:sh, s:s + sw * (out_w - 1) + 1:sw]
                           for r in range(kh) for s in range(kw)])
    return total / count if x.dtype.kind == "f" else (total, count)


def lrn(layer: Layer, x: np.ndarray, squares: np.ndarray | None = None) -> np.ndarray:
    """CDP: x / (bias + alpha / size * window sum of squares) ** beta, in
    ``x``'s float type; ``squares``: the squares to sum, when they are not
    ``x * x`` (INT8 passes its exact integer squares, rescaled)."""
    a = layer.attrs
    size = a["size"]
    before, after = (size - 1) // 2, size // 2
    squares = x * x if squares is None else squares
    padded = np.pad(squares, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    window = sum(padded[:, k:k + x.shape[1]] for k in range(size))
    return x / (a["bias"] + a["alpha"] / size * window) ** a["beta"]


def _sdp_fp16(name: str, operand, y: np.ndarray, values: dict) -> np.ndarray:
    y32 = y.astype(np.float32)
    if name == "add_tensor":
        out = y32 + values[operand].astype(np.float32).reshape(y.shape)
    elif name == "mul_tensor":
        out = y32 * values[operand].astype(np.float32).reshape(y.shape)
    elif name == "add_channel":
        out = y32 + _per_channel(operand.astype(np.float16).astype(np.float32), y32)
    elif name == "mul_channel":
        out = y32 * _per_channel(operand.astype(np.float16).astype(np.float32), y32)
    elif name == "relu":
        out = np.maximum(y32, 0)
    elif name == "clip":
        out = np.clip(y32, operand[0], operand[1])
    elif name == "prelu":
        out = np.where(y32 < 0, y32 * _per_channel(operand.astype(np.float16).astype(np.float32),
                                                   y32), y32)
    else:
        out = lookup(name, y32)
    return out.astype(np.float16)


def _per_channel(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """One value per channel (axis 1), shaped to broadcast against ``like``."""
    return values.reshape((1, -1) + (1,) * (like.ndim - 2))
