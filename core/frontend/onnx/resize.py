"""ONNX Resize (and the older Upsample) as ``gather`` along each resized
axis: interpolation is separable, so every output position along an axis
reads a few input positions (1 for nearest, 2 for linear, 4 for cubic)
with weights that depend only on the sizes; both are computed here, as
constants, following the operator's coordinate transformations and
rounding rules.  Antialiasing is refused.
"""
from __future__ import annotations

import math

import numpy as np

from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _optional_constant(state: GraphState, node: OnnxNode, index: int, what: str):
    if len(node.inputs) <= index or not node.inputs[index]:
        return None
    array = np.asarray(state.constant(node.inputs[index], f"{node.op_type}'s {what}"))
    return array if array.size else None


def _original(x: np.ndarray, mode: str, scale: float, size: int, out: int,
              roi: tuple[float, float]) -> np.ndarray:
    """The input coordinate of each output position ``x`` (ONNX's
    coordinate_transformation_mode; ``width``, the scaled size before
    rounding to the ``out`` positions, is what the rules divide by)."""
    width = scale * size
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if width != 1 else np.full_like(x, -0.5)
    if mode == "align_corners":
        return x * (size - 1) / (width - 1) if width != 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width != 1:
            return start * (size - 1) + x * (end - start) * (size - 1) / (width - 1)
        return np.full_like(x, start * (size - 1) + (end - start) * (size - 1) / 2)
    raise Unsupported(f"coordinate_transformation_mode '{mode}' is not supported",
                      "use half_pixel, asymmetric, align_corners or pytorch_half_pixel")


def _nearest(x: np.ndarray, rule: str) -> np.ndarray:
    rounding = {"round_prefer_floor": lambda v: np.ceil(v - 0.5),
                "round_prefer_ceil": lambda v: np.floor(v + 0.5),
                "floor": np.floor, "ceil": np.ceil}.get(rule)
    if rounding is None:
        raise Unsupported(f"nearest_mode '{rule}' is not supported",
                          "use round_prefer_floor, round_prefer_ceil, floor or ceil")
    return rounding(x)


def _cubic(t: np.ndarray, a: float) -> list[np.ndarray]:
    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def taps(mode: str, coordinates: np.ndarray, size: int, attrs: dict):
    """(index, weight) per tap for each output position: int64 indices
    clamped to the input, float64 weights; weights None for nearest."""
    if mode == "nearest":
        index = _nearest(coordinates, attrs["nearest_mode"])
        return [(np.clip(index, 0, size - 1).astype(np.int64), None)]
    base = np.floor(coordinates)
    t = coordinates - base
    if mode == "linear":
        offsets, weights = (0, 1), [1 - t, t]
    elif mode == "cubic":
        offsets, weights = (-1, 0, 1, 2), _cubic(t, attrs["cubic_coeff_a"])
    else:
        raise Unsupported(f"mode '{mode}' is not supported", "use nearest, linear or cubic")
    raw = [base + k for k in offsets]
    if attrs["exclude_outside"]:
        weights = [np.where((r < 0) | (r > size - 1), 0.0, w) for r, w in zip(raw, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(np.clip(r, 0, size - 1).astype(np.int64), w) for r, w in zip(raw, weights)]


def _along(state: GraphState, node: OnnxNode, x: Value, axis: int, picks, rank: int,
           inside: np.ndarray | None, extrapolation: float) -> Value:
    """The interpolation along ``axis``: sum of gathered taps times weights."""
    result = None
    dtype = x.type.element.numpy_dtype
    shape = [1] * rank
    for index, weight in picks:
        shape[axis] = len(index)
        tap = state.step(node, "gather", {"x": x, "indices": ConstValue(index)}, {"axis": axis})
        if weight is not None:
            tap = state.step(node, "mul", {"a": tap, "b": ConstValue(
                weight.astype(dtype).reshape(shape))})
        result = tap if result is None else state.step(node, "add", {"a": result, "b": tap})
    if inside is not None and not inside.all():
        shape[axis] = len(inside)
        result = state.step(node, "select", {"cond": ConstValue(inside.reshape(shape)),
                                             "a": result,
                                             "b": ConstValue(np.array([extrapolation], dtype))})
    return result


def _sizes_and_scales(state, node, shape, axes, opset):
    scales = _optional_constant(state, node, 2 if opset >= 11 else 1, "scales")
    sizes = _optional_constant(state, node, 3, "sizes") if opset >= 11 else None
    if scales is None and node.attr("scales") is not None:
        scales = np.asarray(node.attr("scales"))
    if sizes is not None:
        sizes = [int(s) for s in sizes]
        policy = node.text("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            ratios = [sizes[i] / shape[a] for i, a in enumerate(axes)]
            ratio = min(ratios) if policy == "not_larger" else max(ratios)
            sizes = [int(math.floor(ratio * shape[a] + 0.5)) for a in axes]
            return sizes, [ratio] * len(axes)
        return sizes, [sizes[i] / shape[a] for i, a in enumerate(axes)]
    if scales is None:
        raise Unsupported(f"{node.op_type} without scales or sizes", "give one of them")
    scales = [float(s) for s in scales]
    return [int(math.floor(shape[a] * scales[i])) for i, a in enumerate(axes)], scales


def resize(state: GraphState, node: OnnxNode, opset: int) -> list[Value]:
    x = node.input(state, 0)
    shape, rank = x.type.shape, len(x.type.shape)
    if node.attr("antialias", 0):
        node.reject("antialias", 1, "antialias=0")
    if not x.type.element.is_float:
        raise Unsupported(f"{node.op_type} of {x.type.element} values", "resize float tensors")
    axes = [a % rank for a in node.attr("axes", range(rank))]
    if not all(isinstance(shape[a], int) for a in axes):
        raise Unsupported(f"{node.op_type} of symbolic sizes {x.type}", "give fixed sizes")
    sizes, scales = _sizes_and_scales(state, node, shape, axes, opset)
    upsample = node.op_type == "Upsample" or opset < 11  # their rules: asymmetric, floor
    mode = node.text("mode", "nearest")
    transform = "asymmetric" if upsample else node.text(
        "coordinate_transformation_mode", "half_pixel")
    attrs = {"nearest_mode": "floor" if upsample else node.text("nearest_mode",
                                                                 "round_prefer_floor"),
             "cubic_coeff_a": float(node.attr("cubic_coeff_a", -0.75)),
             "exclude_outside": int(node.attr("exclude_outside", 0))}
    roi = _optional_constant(state, node, 1, "roi") if not upsample else None
    value = x
    for position, axis in enumerate(axes):
        size, out, scale = shape[axis], sizes[position], scales[position]
        if out == size and scale == 1 and transform != "tf_crop_and_resize":
            continue
        bounds = (float(roi[position]), float(roi[len(axes) + position])) \
            if roi is not None else (0.0, 1.0)
        coordinates = _original(np.arange(out, dtype=np.float64), transform, scale, size, out,
                                bounds)
        inside = ((coordinates >= 0) & (coordinates <= size - 1)) \
            if transform == "tf_crop_and_resize" else None
        value = _along(state, node, value, axis, taps(mode, coordinates, size, attrs), rank,
                       inside, float(node.attr("extrapolation_value", 0.0)))
    return [value]
