"""ONNX's operators that move blocks of pixels between the spatial axes
and the channels: SpaceToDepth and DepthToSpace, as a reshape, a
transpose and a reshape."""
from __future__ import annotations

from .indexing import view
from .values import GraphState, OnnxNode, Unsupported, Value


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


LAYOUT_CONVERTERS = {"SpaceToDepth": space_to_depth, "DepthToSpace": depth_to_space}
