"""ONNX's ConvTranspose as a convolution: the input spread out by the
strides (zeros between its pixels), padded by the kernel's extent less the
pads, convolved with stride 1 with the kernel flipped and its input and
output channels exchanged within each group (the adjoint of a strided
convolution, as deep-learning compilers lower it)."""
from __future__ import annotations

import numpy as np

from .indexing import view
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _fixed(node: OnnxNode, value: Value, what: str) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in value.type.shape[1:]):
        raise Unsupported(f"ConvTranspose of {what} of symbolic shape {value.type}",
                          "give it fixed channels and sizes")
    return value.type.shape


def _geometry(node: OnnxNode, sizes, kernel) -> tuple[list[int], list[int]]:
    """(pads at the start, output sizes) per spatial axis, as onnx's
    reference resolves pads, auto_pad, output_padding and output_shape."""
    rank = len(sizes)
    strides = list(node.attr("strides", [1] * rank))
    dilations = list(node.attr("dilations", [1] * rank))
    extra = list(node.attr("output_padding", [0] * rank))
    full = [strides[i] * (sizes[i] - 1) + extra[i] + (kernel[i] - 1) * dilations[i] + 1
            for i in range(rank)]
    auto_pad = node.text("auto_pad", "NOTSET")
    wanted = node.attr("output_shape")
    wanted = list(wanted)[-rank:] if wanted else None
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and node.attr("pads") is None:
        out = wanted or [sizes[i] * strides[i] for i in range(rank)]
        total = [full[i] - out[i] for i in range(rank)]
        upper = auto_pad == "SAME_UPPER"
        begin = [t // 2 if upper else t - t // 2 for t in total]
        return begin, out
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        node.reject("auto_pad", auto_pad, "NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    pads = list(node.attr("pads", [0] * 2 * rank))
    out = wanted or [full[i] - pads[i] - pads[rank + i] for i in range(rank)]
    return pads[:rank], out


def _spread(state: GraphState, node: OnnxNode, x: Value, strides) -> Value:
    """``x`` with ``stride - 1`` zeros between its pixels along H and W."""
    n, c, h, w = x.type.shape
    sh, sw = strides
    if (sh, sw) == (1, 1):
        return x
    cells = view(state, node, x, (n, c, h, 1, w, 1))
    padded = state.step(node, "pad", {"x": cells},
                        {"pads": (0, 0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1)})
    spread = view(state, node, padded, (n, c, h * sh, w * sw))
    return state.step(node, "slice", {"x": spread}, {
        "starts": (0, 0), "ends": ((h - 1) * sh + 1, (w - 1) * sw + 1), "axes": (2, 3)})


def _adjoint_kernel(state: GraphState, node: OnnxNode, w: Value, groups: int) -> Value:
    """w [Cin, Cout/g, kh, kw] as a convolution's [Cout, Cin/g, kh, kw],
    flipped in space."""
    cin, per_group, kh, kw = w.type.shape
    if isinstance(w, ConstValue):
        blocks = w.array.reshape(groups, cin // groups, per_group, kh, kw)
        swapped = blocks.transpose(0, 2, 1, 3, 4).reshape(groups * per_group, cin // groups, kh, kw)
        return ConstValue(np.ascontiguousarray(swapped[:, :, ::-1, ::-1]))
    blocks = view(state, node, w, (groups, cin // groups, per_group, kh, kw))
    swapped = state.step(node, "transpose", {"x": blocks}, {"perm": (0, 2, 1, 3, 4)})
    kernel = view(state, node, swapped, (groups * per_group, cin // groups, kh, kw))
    for axis, size in ((2, kh), (3, kw)):
        reverse = ConstValue(np.arange(size - 1, -1, -1, dtype=np.int64))
        kernel = state.step(node, "gather", {"x": kernel, "indices": reverse}, {"axis": axis})
    return kernel


def conv_transpose(state: GraphState, node: OnnxNode) -> list[Value]:
    x, w, b = (node.input(state, i) for i in range(3))
    if len(x.type.shape) != 4:
        raise Unsupported("ConvTranspose is 1-D or 2-D here", "use 3-D or 4-D inputs")
    _, _, h, width = _fixed(node, x, "an input")
    _, _, kh, kw = _fixed(node, w, "a kernel")
    groups = node.attr("group", 1)
    dilations = tuple(node.attr("dilations", (1, 1)))
    begin, out = _geometry(node, (h, width), (kh, kw))
    spread = _spread(state, node, x, tuple(node.attr("strides", (1, 1))))
    lengths = spread.type.shape[2:]
    before = [dilations[i] * ((kh, kw)[i] - 1) - begin[i] for i in range(2)]
    after = [out[i] - lengths[i] - before[i] + dilations[i] * ((kh, kw)[i] - 1) for i in range(2)]
    if min(before + after) < 0:  # pads beyond the kernel's extent crop the input
        starts = [max(0, -p) for p in before]
        ends = [lengths[i] - max(0, -after[i]) for i in range(2)]
        spread = state.step(node, "slice", {"x": spread}, {
            "starts": tuple(starts), "ends": tuple(ends), "axes": (2, 3)})
        before, after = [max(0, p) for p in before], [max(0, p) for p in after]
    inputs = {"x": spread, "w": _adjoint_kernel(state, node, w, groups)}
    if b is not None:
        inputs["b"] = b
    attrs = {"padding": (before[0], before[1], after[0], after[1]), "dilation": dilations,
             "groups": groups}
    return [state.step(node, "conv2d", inputs, attrs)]
