"""ONNX's operators that rearrange a tensor's layout: SpaceToDepth and
DepthToSpace (blocks of pixels moved between the spatial axes and the
channels: a reshape, a transpose and a reshape), CenterCropPad (a slice
and a pad) and ReverseSequence (a gather along the time axis)."""
from __future__ import annotations

import numpy as np

from ...ir.types import I64
from .indexing import view
from .pointwise import binary, cast, scalar, select
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _sizes(node: OnnxNode, x: Value) -> tuple[int, int, int, int, int]:
    block = node.attr("blocksize")
    if len(x.type.shape) != 4:
        raise Unsupported(f"{node.op_type} of a rank-{len(x.type.shape)} input",
                          "give it an NCHW input")
    n, c, h, w = x.type.shape
    if not all(isinstance(d, int) for d in (c, h, w)):
        raise Unsupported(f"{node.op_type} of an input of symbolic shape {x.type}",
                          "give the channels and the image fixed sizes")
    return n, c, h, w, block


def _moved(state: GraphState, node: OnnxNode, x: Value, split, perm, joined) -> Value:
    moved = state.step(node, "transpose", {"x": view(state, node, x, split)}, {"perm": perm})
    return view(state, node, moved, joined)


def space_to_depth(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    n, c, h, w, b = _sizes(node, x)
    if h % b or w % b:
        raise Unsupported(f"SpaceToDepth: blocks of {b} in an image of {h} x {w}",
                          "give an image whose sides are multiples of the block size")
    perm = {"DCR": (0, 3, 5, 1, 2, 4), "CRD": (0, 1, 3, 5, 2, 4)}.get(node.text("mode", "DCR"))
    if perm is None:
        node.reject("mode", node.text("mode", "DCR"), "mode DCR or CRD")
    return [_moved(state, node, x, (n, c, h // b, b, w // b, b), perm,
                   (n, c * b * b, h // b, w // b))]


def depth_to_space(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    n, c, h, w, b = _sizes(node, x)
    if c % (b * b):
        raise Unsupported(f"DepthToSpace: {c} channels in blocks of {b} x {b}",
                          "give a channel count that is a multiple of blocksize squared")
    depth = c // (b * b)
    mode = node.text("mode", "DCR")
    if mode == "DCR":
        split, perm = (n, b, b, depth, h, w), (0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        split, perm = (n, depth, b, b, h, w), (0, 1, 4, 2, 5, 3)
    else:
        node.reject("mode", mode, "mode DCR or CRD")
    return [_moved(state, node, x, split, perm, (n, depth, h * b, w * b))]


def center_crop_pad(state: GraphState, node: OnnxNode) -> list[Value]:
    """CenterCropPad: each of ``axes`` cropped or zero-padded to its new
    size around the centre (the extra element, if odd, at the end)."""
    x = node.input(state, 0)
    rank = len(x.type.shape)
    sizes = [int(s) for s in np.asarray(state.constant(node.inputs[1], "CenterCropPad's shape"))]
    axes = [a % rank for a in node.attr("axes", range(rank))]
    starts, ends, crop_axes = [], [], []
    pads = [0] * (2 * rank)
    for axis, size in zip(axes, sizes):
        dim = x.type.shape[axis]
        if not isinstance(dim, int):
            raise Unsupported(f"CenterCropPad of axis {axis}, of symbolic size {dim}",
                              "give the cropped axes fixed sizes")
        if size < dim:
            crop_axes.append(axis)
            starts.append((dim - size) // 2)
            ends.append((dim - size) // 2 + size)
        elif size > dim:
            pads[axis] = (size - dim) // 2
            pads[rank + axis] = size - dim - (size - dim) // 2
    if crop_axes:
        x = state.step(node, "slice", {"x": x}, {"starts": tuple(starts), "ends": tuple(ends),
                                                 "axes": tuple(crop_axes)})
    if any(pads):
        x = state.step(node, "pad", {"x": x}, {"pads": tuple(pads)})
    return [x]


def reverse_sequence(state: GraphState, node: OnnxNode) -> list[Value]:
    """ReverseSequence: the first ``sequence_lens[b]`` steps of each batch
    entry reversed along ``time_axis``, the rest kept."""
    x, lengths = node.input(state, 0), node.input(state, 1)
    shape = x.type.shape
    batch, time = node.attr("batch_axis", 1), node.attr("time_axis", 0)
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported(f"ReverseSequence of {x.type}", "give the input fixed sizes")
    along = [-1 if a == batch else 1 for a in range(len(shape))]
    length = state.step(node, "reshape", {"x": cast(state, node, lengths, I64)},
                        {"shape": tuple(along)})
    steps = ConstValue(np.arange(shape[time], dtype=np.int64).reshape(
        [-1 if a == time else 1 for a in range(len(shape))]))
    reversed_ = binary(state, node, "sub", binary(state, node, "sub", length, scalar(1, length)),
                       steps)
    source = select(state, node, binary(state, node, "less", steps, length), reversed_, steps)
    source = state.step(node, "expand", {"x": source}, {"shape": tuple(shape)})
    return [state.step(node, "gather_elements", {"x": x, "indices": source}, {"axis": time})]


LAYOUT_CONVERTERS = {"SpaceToDepth": space_to_depth, "DepthToSpace": depth_to_space,
                     "CenterCropPad": center_crop_pad, "ReverseSequence": reverse_sequence}
